"""REST API of share links: your links (create, revoke), what a link shows (no account
needed) and a fork of it into your account."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from simulation import ScenarioError
from tierlab.api import reject_body
from tierlab.dashboard import comparisons, sharing
from tierlab.dashboard.api.common import Gone, bad_request, schema_only
from tierlab.dashboard.api.sweeps import points_selection
from tierlab.dashboard.comparisons import InputError
from tierlab.dashboard.models import ShareLink
from tierlab.dashboard.serializers.sharing import (ForkSerializer, ShareCreateSerializer,
                                                   ShareLinkSerializer, SharedSerializer)
from tierlab.scenarios.api import Pages


class ShareLinkViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your share links. POST `{scenario: id}` (or `comparison`, `sweep`) makes a new
    read-only link; POST revoke/ ends it. Filter with `?scenario=`, `?comparison=`, `?sweep=`."""

    serializer_class = ShareLinkSerializer
    pagination_class = Pages

    def get_queryset(self):
        if schema_only(self):
            return ShareLink.objects.none()
        qs = ShareLink.objects.filter(owner=self.request.user).select_related("scenario", "comparison", "sweep",
                                                                              "plan")
        for kind in ShareLink.KINDS:
            value = self.request.query_params.get(kind)
            if value is not None:
                try:
                    qs = qs.filter(**{f"{kind}_id": comparisons.parse_id(value, kind)})
                except InputError as exc:
                    raise bad_request(exc) from None
        return qs

    @extend_schema(parameters=[OpenApiParameter(k, int, description=f"only links to this {k}")
                               for k in ShareLink.KINDS])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ShareCreateSerializer, responses={201: ShareLinkSerializer})
    def create(self, request, *args, **kwargs):
        serializer = ShareCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            link = sharing.create_share(request.user, serializer.validated_data["kind"],
                                        serializer.validated_data["id"])
        except InputError as exc:
            raise bad_request(exc) from None
        return Response(ShareLinkSerializer(link, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ShareLinkSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        """End the link (no body, or `{}`): from now on it answers 410 Gone. Revoking twice
        is harmless."""
        link = self.get_object()
        reject_body(request)
        link.revoke()
        return Response(ShareLinkSerializer(link, context={"request": request}).data)


SHARED_POINTS_PARAMETER = OpenApiParameter(
    "points", OpenApiTypes.STR, OpenApiParameter.QUERY, required=False,
    description="A sweep's link: which points `data` carries, as on `/api/v1/sweeps/{id}/`: `all` (the "
                "default), `none` (the light form the shared page polls) or `start:stop`; other kinds "
                "ignore it.")


def open_shared(token: str) -> ShareLink:
    """The active link, or 404 (no such token) / 410 (revoked)."""
    try:
        return sharing.open_link(token)
    except ShareLink.DoesNotExist:
        raise exceptions.NotFound("No share link with this token.") from None
    except sharing.Revoked:
        raise Gone() from None


class SharedView(APIView):
    """What a share link shows, read-only, to anyone who has the token (no login)."""

    permission_classes = [permissions.AllowAny]
    throttle_scopes = {"GET": "shared"}              # tierlab.throttling

    @extend_schema(parameters=[SHARED_POINTS_PARAMETER], responses={200: SharedSerializer})   # 404 and 410: tierlab.schema
    def get(self, request, token):
        selection = points_selection(request.query_params.get("points"))
        return Response(SharedSerializer(sharing.shared_payload(open_shared(token), selection)).data)


class ForkView(APIView):
    """Copy what a share link shows into your account (login required; no body, or `{}`):
    201 `{kind, id, url}`."""

    @extend_schema(request=None, responses={201: ForkSerializer})
    def post(self, request, token):
        link = open_shared(token)
        reject_body(request)
        try:
            obj = sharing.fork(link, request.user)
        except (InputError, ScenarioError) as exc:
            raise bad_request(exc) from None
        return Response({"kind": link.kind, "id": obj.pk, "url": obj.get_absolute_url()},
                        status=status.HTTP_201_CREATED)
