"""Renaming and deleting what a user saved (scenarios, comparisons, sweeps, plans): PATCH
``{"name": "..."}`` and DELETE on their viewsets, for the owner only (``tierlab.access``:
a teammate gets 403, anyone else 404; a share link is read-only and has neither).

Only the name changes: a scenario's body and every result are kept as they are (a run's
result is reused by identical input, keyed on its hash), so PATCH takes ``name`` alone and
any other key is a 400 naming it, as POST refuses unknown keys. PUT stays 405.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from tierlab.api import RejectUnknownFields, StrictCharField

NAME_MAX_LENGTH = 200      # the models' name columns (CharField(max_length=200))


class InUse(Exception):
    """A delete that would break other saved objects: ``detail`` says which and what to do;
    ``listed`` (``{"comparisons": [{id, name}]}``) names those the user may see. A 409."""

    def __init__(self, detail: str, listed: dict[str, list[dict]]):
        super().__init__(detail)
        self.detail, self.listed = detail, listed


class RenameSerializer(RejectUnknownFields, serializers.Serializer):
    name = StrictCharField(max_length=NAME_MAX_LENGTH, help_text=(
        "The new name: 1 to 200 characters (spaces around it are dropped); no Unicode "
        "bidirectional controls."))


def rename_schema(detail_serializer, what: str):
    """The schema of a viewset's PATCH (``extend_schema_view(partial_update=...)``)."""
    return extend_schema(request=RenameSerializer, responses={200: detail_serializer},
                         description=f"Rename the {what} (its owner): `{{\"name\": \"...\"}}`, the "
                                     "only field that changes; any other key is a 400 naming it.")


def delete_schema(what: str, description: str, in_use: str | None = None):
    """The schema of a viewset's DELETE: 204, and 409 when ``in_use`` says what refuses it."""
    responses = {204: None}
    if in_use:
        responses[409] = OpenApiResponse(OpenApiTypes.OBJECT, description=in_use)
    return extend_schema(responses=responses, description=f"Delete the {what} (its owner). {description}")


class RenameDeleteMixin:
    """PATCH (rename) and DELETE of a DRF viewset. ``delete_object(obj)`` deletes (a service; it may
    raise InUse); ``renamed(obj)`` is the 200's body."""

    def delete_object(self, obj) -> None:
        raise NotImplementedError

    def renamed(self, obj) -> dict:
        return self.get_serializer(obj).data

    def partial_update(self, request, *args, **kwargs):
        obj = self.get_object()          # 404 unless visible, 403 unless its owner's
        serializer = RenameSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        obj.name = serializer.validated_data["name"]
        obj.save(update_fields=["name"])
        return Response(self.renamed(obj))

    def destroy(self, request, *args, **kwargs):
        obj = self.get_object()
        try:
            self.delete_object(obj)
        except InUse as exc:
            return Response({"detail": exc.detail, **exc.listed}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)
