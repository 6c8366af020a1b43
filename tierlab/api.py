"""Project-wide REST API helpers: a JSON parser with limits and the exception handler.

A request body is never a 500: too large is 413, anything malformed (broken JSON, not
UTF-8, nested too deeply, NaN) is 400 under ``body``; a string the database cannot store
(NUL, an unpaired surrogate) or one with a Unicode bidirectional control (U+202E) is a 400
under its field's dotted path (``scenario.model.name``).
"""

import json
import math
import re

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import models
from django.http import JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, pagination, parsers, renderers, serializers, status
from rest_framework.views import exception_handler as drf_exception_handler

from simulation.fields import show
from tierlab.jobs import TooManyActive

# Deeper than any scenario, comparison or sweep; far below Python's recursion limit.
MAX_JSON_DEPTH = 64


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"

    def __init__(self, limit: int, size: int | None = None, setting: str = "DATA_UPLOAD_MAX_MEMORY_SIZE"):
        size_text = f" ({size:,} bytes)" if size else ""
        super().__init__(f"request body too large{size_text}: the limit is {limit:,} bytes ({setting})")


def body_limit(view) -> tuple[int | None, str]:
    """The most bytes a request body to ``view`` may have, and the setting that says so:
    ``DATA_UPLOAD_MAX_MEMORY_SIZE``, or the view's own smaller ``body_limit_setting``
    (the estimate's: a scenario is a few kB, and parsing megabytes of JSON took seconds)."""
    limit, name = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "DATA_UPLOAD_MAX_MEMORY_SIZE"
    own = getattr(view, "body_limit_setting", None)
    if own and (limit is None or getattr(settings, own) < limit):
        limit, name = getattr(settings, own), own
    return limit, name


class ActiveLimitReached(exceptions.APIException):
    """409 from :class:`tierlab.jobs.TooManyActive`: ``{"detail", "limit", "setting",
    "active": [{id, name, status, url}]}``; nothing was queued."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "active_limit"

    def __init__(self, exc):
        super().__init__(exc.message)
        self.payload = {"detail": exc.message, "limit": exc.limit, "setting": exc.setting,
                        "active": exc.active}


def declared_length(request) -> int:
    """The request's Content-Length, 0 when absent or unreadable."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except (TypeError, ValueError):
        return 0


class UnsafeJSON(ValueError):
    """JSON that parses (or nearly) but must not reach the engine or the database.

    ``path`` is where, for a string the database cannot store: the keys and list indexes
    from the top (``["scenario", "model", "name"]``; ``[]`` for the whole document), and
    ``problem`` what is wrong there; both None for a problem of the whole text (depth).
    """

    def __init__(self, message: str, path: list | None = None, problem: str | None = None):
        super().__init__(message)
        self.path, self.problem = path, problem


def _reject(message: str):
    raise UnsafeJSON(message)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        _reject(f"number {text[:40]} is out of range")
    return value


def _no_constant(name: str):
    _reject(f"{name} is not valid JSON")


# Unicode's explicit bidirectional formatting characters (UAX #9, "Unicode Bidirectional
# Algorithm", section 2: embeddings U+202A/U+202B, pop U+202C, overrides U+202D/U+202E,
# isolates U+2066-U+2069): they make a name display in another order than it is stored
# and read ("Trojan Source", CVE-2021-42574), in titles, lists and logs. Right-to-left
# letters (Arabic, Hebrew) are not among them and are kept; so are the implicit marks
# U+200E/U+200F (LRM/RLM), which only set the direction of neutral characters beside them,
# reorder nothing else, and which right-to-left writing needs.
BIDI_CONTROLS = {chr(c): name for c, name in (
    (0x202A, "LEFT-TO-RIGHT EMBEDDING"), (0x202B, "RIGHT-TO-LEFT EMBEDDING"),
    (0x202C, "POP DIRECTIONAL FORMATTING"), (0x202D, "LEFT-TO-RIGHT OVERRIDE"),
    (0x202E, "RIGHT-TO-LEFT OVERRIDE"), (0x2066, "LEFT-TO-RIGHT ISOLATE"),
    (0x2067, "RIGHT-TO-LEFT ISOLATE"), (0x2068, "FIRST STRONG ISOLATE"),
    (0x2069, "POP DIRECTIONAL ISOLATE"))}
_BIDI_RE = re.compile("[" + "".join(BIDI_CONTROLS) + "]")


def _unstorable(text: str) -> str | None:
    """Why ``text`` must not be stored (None when it may be): a NUL, an unpaired surrogate,
    or a bidirectional control (:data:`BIDI_CONTROLS`)."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (\\ud800-\\udfff), which is not text"
    bidi = _BIDI_RE.search(text)
    if bidi:
        ch = bidi.group()
        return (f"contains the Unicode bidirectional control U+{ord(ch):04X} {BIDI_CONTROLS[ch]}, "
                "which makes text display in another order than it reads; remove it "
                "(right-to-left letters such as Arabic or Hebrew are fine)")
    return None


def no_bidi_controls(value) -> None:
    """A form field's validator: Django's ValidationError for text with a bidirectional
    control (:data:`BIDI_CONTROLS`), as the API's JSON bodies refuse it."""
    from django.core.exceptions import ValidationError

    bidi = _BIDI_RE.search(value) if isinstance(value, str) else None
    if bidi:
        ch = bidi.group()
        raise ValidationError(f"Contains the Unicode bidirectional control U+{ord(ch):04X} "
                              f"{BIDI_CONTROLS[ch]}, which makes text display in another order than "
                              "it reads; remove it (right-to-left letters are fine).", code="bidi_control")


# DRF's words for a name too long (CharField's max_length), with the length the form was given
NAME_TOO_LONG = "Ensure this field has no more than %(limit_value)d characters. This one has %(show_value)d."


def name_form_field(**kwargs):
    """A form's ``name``: at most 200 characters (the models' name columns), without bidi
    controls. A longer one is the field's error, worded as the API's 400 says it; the input
    carries no ``maxlength`` attribute, with which a browser cuts a pasted name to 200
    characters silently (the API refuses it)."""
    from django import forms

    class NameField(forms.CharField):
        def widget_attrs(self, widget):
            attrs = super().widget_attrs(widget)
            attrs.pop("maxlength", None)
            return attrs

    return NameField(max_length=200, validators=[no_bidi_controls],
                     error_messages={"max_length": NAME_TOO_LONG},
                     **kwargs)


def _shown_key(key: str) -> str:
    return show(key)[1:-1][:40]      # NUL as \u0000, a surrogate as \ud800; letters as themselves


def json_path(path) -> str:
    """``["scenarios", 1, "name"]`` as ``scenarios.1.name``: a field's dotted path, as the
    400s name fields (``dotted_errors``)."""
    return ".".join(str(part) for part in path)


def check_value(data) -> None:
    """Walk parsed JSON without recursion, in document order: depth, and strings the
    database can store (an UnsafeJSON naming the first bad one's ``path``). Numbers, booleans,
    nulls and empty strings and containers (within the depth) have nothing to check and are
    not visited: a 2.5 MB list of numbers took 1.5 s, now a few hundred ms."""
    stack = [(data, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            problem = _unstorable(value)
            if problem:
                raise UnsafeJSON(f"a string {problem}", list(path), problem)
            continue
        if not isinstance(value, (dict, list)):   # a number, boolean or null body
            continue
        if depth > MAX_JSON_DEPTH:
            _reject(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            for key in value:
                problem = _unstorable(key)
                if problem:
                    raise UnsafeJSON(f"a key {problem}", list(path),
                                     f"the key \"{_shown_key(key)}\" {problem}")
            items = value.items()
        else:
            items = enumerate(value)
        deep = depth + 1 > MAX_JSON_DEPTH        # there even an empty container is refused
        children = [(item, depth + 1, (*path, key)) for key, item in items
                    if isinstance(item, (str, dict, list)) and (item or (deep and not isinstance(item, str)))]
        stack.extend(reversed(children))


def loads(text: str, check: bool = True):
    """``json.loads`` for untrusted text; every problem is a ValueError with a readable message.

    ``check=False`` leaves the depth and string checks (``check_value``) to the caller, which
    can then name the part that failed; nesting too deep for the parser is refused either way.
    """
    try:
        data = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        _reject(f"nested deeper than {MAX_JSON_DEPTH} levels")
    if check:
        check_value(data)
    return data


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, reading at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes, or the view's
    smaller limit (:func:`body_limit`), else 413."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit, setting = body_limit((parser_context or {}).get("view"))
        request = (parser_context or {}).get("request")
        if limit is not None:
            declared = declared_length(request)
            if declared > limit:
                raise RequestTooLarge(limit, declared, setting)
            raw = stream.read(limit + 1)
            if len(raw) > limit:
                raise RequestTooLarge(limit, setting=setting)
        else:
            raw = stream.read()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return loads(raw.decode(encoding))
        except UnicodeDecodeError as exc:
            message = f"the body is not valid {encoding} ({exc.reason} at byte {exc.start})"
        except LookupError:
            message = f"unknown charset {encoding!r}"
        except UnsafeJSON as exc:
            if exc.path and isinstance(exc.path[0], str):     # in a field of an object: name it
                raise exceptions.ValidationError({json_path(exc.path): [exc.problem]}) from None
            message = str(exc)
        except ValueError as exc:     # json's errors, int digit limits
            message = str(exc)
        raise exceptions.ParseError(f"JSON parse error - {message}")


class BrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    """DRF's HTML pages without the inline <style> of Pygments' colours (DRF adds it whenever
    Pygments is installed), which the Content-Security-Policy's style-src 'self' refuses. The
    colours are for code blocks in Markdown docstrings, rendered only with Markdown installed,
    which tierlab does not install."""

    def get_context(self, *args, **kwargs):
        return {**super().get_context(*args, **kwargs), "code_style": None}


def _media_type_text(request) -> str:
    """What a refused body was sent as, for the 415's message."""
    media = (getattr(request, "content_type", "") or "").split(";")[0].strip().lower()
    if not media:
        return "with no Content-Type header"
    if media == "application/x-www-form-urlencoded":
        return (f"as {media}, a form (curl -d without -H 'Content-Type: application/json' "
                "sends one)")
    if media == "multipart/form-data":
        return f"as {media}, a form with files (curl -F sends one)"
    return f"as {media[:80]}"


def exception_handler(exc, context):
    """DRF's handler, with request-body problems reported under the field ``body``.

    Every 400 then has one shape: ``{field: [message, ...]}``; a body over the size limit
    is 413 ``{"body": [...]}``, also when Django's form parsing noticed it first; a body that
    is not JSON (a form, multipart, XML, no Content-Type) is 415 ``{"body": [...]}`` saying
    what it was sent as and to send JSON with ``Content-Type: application/json``.
    """
    if isinstance(exc, RequestDataTooBig):
        limit, setting = body_limit(context.get("view"))
        exc = RequestTooLarge(limit, declared_length(context.get("request")), setting)
    elif isinstance(exc, TooManyActive):
        exc = ActiveLimitReached(exc)
    elif isinstance(exc, SuspiciousOperation):      # too many fields, bad multipart, ...
        exc = exceptions.ParseError(str(exc) or type(exc).__name__)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, (exceptions.ParseError, RequestTooLarge)):
        response.data = {"body": [str(exc.detail)]}
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        response.data = {"body": [f"The API takes JSON bodies only; this one was sent "
                                  f"{_media_type_text(context.get('request'))}. Nothing was saved. "
                                  "Send the body as JSON with the header Content-Type: application/json."]}
    elif isinstance(exc, ActiveLimitReached):
        response.data = exc.payload
    elif isinstance(exc, exceptions.Throttled):      # tierlab.throttling; Retry-After is DRF's
        response.data = {"detail": str(exc.detail), "retry_after_s": exc.wait}
    elif isinstance(exc, exceptions.ValidationError):
        data = response.data
        response.data = dotted_errors(data) if isinstance(data, dict) else {"body": data}
    return response


def engine_error_detail(exc) -> dict:
    """``{field: [message, ...]}`` for an engine ScenarioError: every field of a
    ``ScenarioErrors`` (several bad fields at once), each under its own path as the engine
    names it (``config.hidden_size``, ``measurements.steps[0].step_s``); a whole-input
    error under ``body``."""
    out: dict = {}
    for e in getattr(exc, "errors", None) or [exc]:
        out.setdefault(e.field or "body", []).append(e.message)
    return out


def dotted_errors(detail, prefix: str = "") -> dict:
    """DRF's nested errors (``{"scenarios": {"1": [...]}}``) as ``{"scenarios.1": [...]}``:
    every 400 names its field as one dotted path, as the engine's errors do."""
    out = {}
    items = detail.items() if isinstance(detail, dict) else enumerate(detail)
    for key, value in items:
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            out.update(dotted_errors(value, path))
        elif value:                                      # ListSerializer: [] for a good item
            out[path] = value if isinstance(value, list) else [value]
    return out


class StrictBooleanField(serializers.BooleanField):
    """JSON ``true`` or ``false`` only: DRF's field would also take "yes", "on", 1 and "1"."""

    default_error_messages = {"invalid": "Must be true or false, got {input}.",
                              "null": "Must be true or false, got null."}

    def to_internal_value(self, data):
        if data is True or data is False:
            return data
        self.fail("invalid", input=show(data)[:40])


class StrictCharField(serializers.CharField):
    """A JSON string only: DRF's field would also store a number (5 as "5") or a boolean."""

    default_error_messages = {"not_a_string": "Must be a string (text), got {input}."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string", input=show(data)[:40])
        return super().to_internal_value(data)


def _json_kind(data) -> str:
    if isinstance(data, bool):
        return "a boolean"
    return {str: "a string", float: "a decimal number", list: "a list", dict: "an object",
            type(None): "null"}.get(type(data), type(data).__name__)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: DRF's field would also take "1", " 1", "1.0" and 1.0 as 1 (and
    refuse true without saying what was sent)."""

    what = "an integer"
    default_error_messages = {"not_an_integer": "Must be {what}, got {kind} ({input})."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("not_an_integer", what=self.what, kind=_json_kind(data), input=show(data)[:40])
        return super().to_internal_value(data)


class StrictIdField(StrictIntegerField):
    """The id of a row (a scenario, comparison, ...): a JSON integer, not "1" or 1.0."""

    what = "an integer id"


# A model serializer whose text columns take JSON strings only (StrictCharField). A comment,
# not a docstring: the API schema takes a serializer's docstring as its description.
class StrictTextModelSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping,
                                models.CharField: StrictCharField, models.TextField: StrictCharField}


# A request body's keys outside the serializer's fields are a 400 naming each (DRF drops them
# silently: a typo such as "scenaro" would save a scenario without what was meant). Read-only
# fields a client echoes back from a GET are fields, unless ``writable_only`` (a serializer
# that only creates: the keys the server sets are unknown there, as the create serializers
# of sweeps and comparisons have no such fields). A comment, not a docstring: the API
# schema takes a serializer's docstring as its description.
class RejectUnknownFields:
    writable_only = False

    def to_internal_value(self, data):
        if isinstance(data, dict):
            fields = [name for name, f in self.fields.items()
                      if not (self.writable_only and f.read_only)]
            unknown = sorted(set(data) - set(fields))
            if unknown:
                known = (f"known fields: {', '.join(fields)}" if fields else
                         "this request takes none (send {} or no body)")
                raise serializers.ValidationError({key: [f"unknown field; {known}"] for key in unknown})
        return super().to_internal_value(data)


# The body of a POST that takes none (a scenario's runs/, cancel/ of a run, sweep or plan, a
# plan's compare/, a share link's revoke/, a shared link's fork/): no body, an empty one, or
# {} (what the frontend sends); a key in it is a 400 naming it, "unknown field; this request
# takes none (send {} or no body)". DRF hands every view the parsed body and these ignored it,
# so a client's option ({"force": true}) silently did nothing. A comment, not a docstring: the
# API schema takes a serializer's docstring as its description (these views declare
# request=None, so it is not in the schema at all).
class NoBodySerializer(RejectUnknownFields, serializers.Serializer):
    pass


def reject_body(request) -> None:
    """Raise a 400 naming each key of ``request``'s body (see ``NoBodySerializer``). Called
    after the object is looked up and its permission checked (a teammate still gets 403, a
    stranger 404) and before anything changes."""
    NoBodySerializer(data=request.data).is_valid(raise_exception=True)


class StrictPageNumberPagination(pagination.PageNumberPagination):
    """A ``page_size`` that is not a whole number in range is a 400, and a ``page`` that is
    not a whole number from 1 a 404, as the schema says; not silently page 1."""

    last_page_strings = ()

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            raise exceptions.NotFound(f"Invalid page {raw[:40]!r}: pages are numbered from 1.")
        return int(raw)

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param) if self.page_size_query_param else None
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise exceptions.ValidationError({self.page_size_query_param: [
                f"must be a whole number from 1 to {self.max_page_size}, got {raw[:40]!r}"]})
        return size

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters


# ---------------------------------------------------------------- Django's error pages
# Under /api/ a URL that matches no route (e.g. /api/v1/runs/abc/) or an error outside DRF
# answers JSON like the rest of the API; pages keep Django's templates.
def _api(request) -> bool:
    return request.path.startswith("/api/")


def handler400(request, exception=None):
    if _api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


@csrf_exempt   # a 404 for any method; CSRF's HTML 403 must not answer first
def api_not_found(request, *args, **kwargs):
    """Catch-all for unknown /api/ URLs, so DEBUG's HTML 404 page never answers there."""
    return JsonResponse({"detail": "Not found."}, status=404)


def handler404(request, exception=None):
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def handler500(request):
    if _api(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return defaults.server_error(request)
