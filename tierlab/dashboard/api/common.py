"""What the dashboard's API views share: the 400/403 from a service's error, 410 Gone, the
schema-generation check and the download response types."""

from drf_spectacular.types import OpenApiTypes
from rest_framework import exceptions, status
from rest_framework.exceptions import ValidationError

from tierlab.api import ActiveLimitReached
from tierlab.dashboard.comparisons import NotYours
from tierlab.jobs import TooManyActive


def bad_request(exc) -> exceptions.APIException:
    """A 400 ``{field: [message], ...}`` from an InputError or a ScenarioError(s); a 403
    ``{"detail": "<field>: <message>"}`` from NotYours (a teammate's object, read-only)."""
    if isinstance(exc, TooManyActive):                       # a 409 naming the active jobs
        return ActiveLimitReached(exc)
    if isinstance(exc, NotYours):
        return exceptions.PermissionDenied(f"{exc.field}: {exc.message}")
    detail: dict = {}
    for e in getattr(exc, "errors", None) or [exc]:          # every field of a ScenarioErrors
        detail.setdefault(e.field or "body", []).append(e.message)
    return ValidationError(detail)


class Gone(exceptions.APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "This share link was revoked by its owner."
    default_code = "revoked"


def schema_only(view) -> bool:
    """True on the stand-in view drf-spectacular makes to build the schema (no user, no rows)."""
    return getattr(view, "swagger_fake_view", False)   # schema generation


FILE = {(200, "application/json"): OpenApiTypes.OBJECT}


CSV = {(200, "text/csv"): OpenApiTypes.STR}


PYTHON = {(200, "text/x-python"): OpenApiTypes.STR}


TEXT = {(200, "text/plain"): OpenApiTypes.STR}
