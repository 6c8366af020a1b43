"""``Idempotency-Key``: a POST that starts work (a run, a sweep, a comparison) is done once.

A client unsure whether its POST arrived (a timeout, a dropped connection) sends it again
with the same header, and gets the first answer instead of a second run:

- same user, same key, same request (method, path and body) within ``TTL``: the first
  response is replayed, its status and ``Location`` with the body of what it made as it is
  now (read again: the run, sweep, comparison or plan, as its GET shows it), plus
  ``Idempotent-Replayed: true``; nothing new is made. The key's row keeps only the status,
  the ``Location`` and the made object's id (``{"id": n}``), never the whole response (a
  run's report is up to ~550 kB); an object deleted since replays as ``{"id": n}``;
- same key with another request: 422 ``{"Idempotency-Key": [...]}``;
- two identical requests at once: the key's row is written in the same transaction as the
  work, under a unique constraint on (user, key); the second waits for the first to commit
  and replays it;
- a request that fails keeps nothing (only 2xx responses are stored): retrying it with the
  same key does it again. A key that is not 1 to 255 visible ASCII characters is a 400.

Usage: ``@idempotent(reread)`` on a view method (after DRF has authenticated the user),
``reread(view, pk)`` giving the response body for the object ``pk`` now (raising
``ObjectDoesNotExist`` when it is gone), and ``IDEMPOTENCY_KEY`` among its documented
parameters.
"""

import functools
import hashlib
import json
import re
from datetime import timedelta

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, status
from rest_framework.response import Response

from tierlab.models import IdempotencyKey

HEADER = "Idempotency-Key"
TTL = timedelta(hours=24)
_VALID = re.compile(r"[\x21-\x7e]{1,255}")

IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER, str, OpenApiParameter.HEADER, required=False, pattern=r"^[!-~]{1,255}$",
    description="Any unique string of yours (e.g. a UUID). Repeating the request with the same key "
                "within 24 h replays the first response (header `Idempotent-Replayed: true`) instead "
                "of doing it again; the same key with a different request is a 422.")


class KeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"

    def __init__(self):
        super().__init__({HEADER: [
            "this key was already used for a different request (another URL or body) in the last "
            f"{TTL.total_seconds() / 3600:g} hours; send a new key with a new request"]})


def request_hash(request) -> str:
    """sha256 of the method, the path and the parsed body (key order and spacing do not matter)."""
    data = request.data
    if hasattr(data, "lists"):          # a QueryDict (form or empty body)
        data = {key: values for key, values in data.lists()}
    canonical = json.dumps({"method": request.method, "path": request.path, "body": data},
                           sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _kept(user, key: str) -> IdempotencyKey | None:
    """The user's unexpired row for ``key``, if any."""
    return IdempotencyKey.objects.filter(user=user, key=key, created_at__gte=timezone.now() - TTL).first()


def _replay(row: IdempotencyKey, digest: str, view, reread) -> Response:
    if row.request_hash != digest:
        raise KeyReused()
    headers = {"Idempotent-Replayed": "true"}
    if row.response_location:
        headers["Location"] = row.response_location
    body = row.response_body
    if isinstance(body, dict) and set(body) == {"id"}:
        try:
            body = reread(view, body["id"])
        except ObjectDoesNotExist:
            pass                          # deleted since: its id is all there is to say
    return Response(body, status=row.response_status, headers=headers)


def _kept_body(data):
    """What the key's row keeps of a response body: the id of what it made."""
    if isinstance(data, dict) and isinstance(data.get("id"), int):
        return {"id": data["id"]}
    return None


def idempotent(reread):
    """Decorate a DRF view method: POSTs with an ``Idempotency-Key`` header are done once;
    ``reread(view, pk)`` is the body a replay answers for the object made (see the module)."""
    return functools.partial(_idempotent, reread=reread)


def _idempotent(handler, reread):
    @functools.wraps(handler)
    def wrapper(view, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if request.method != "POST" or key is None:
            return handler(view, request, *args, **kwargs)
        if not _VALID.fullmatch(key):
            raise exceptions.ValidationError({HEADER: ["must be 1 to 255 visible ASCII characters "
                                                       "(no spaces), e.g. a UUID"]})
        digest = request_hash(request)
        with transaction.atomic():
            row = _kept(request.user, key)
            if row is not None:
                return _replay(row, digest, view, reread)
            # The user's expired keys go (this one too, if it expired: it may be used again).
            IdempotencyKey.objects.filter(user=request.user, created_at__lt=timezone.now() - TTL).delete()
            try:
                with transaction.atomic():
                    row = IdempotencyKey.objects.create(user=request.user, key=key, request_hash=digest,
                                                        response_status=0, response_body={})
            except IntegrityError:
                # The same key, committed by a concurrent request while this one waited.
                row = _kept(request.user, key)
                if row is None:
                    raise
                return _replay(row, digest, view, reread)
            response = handler(view, request, *args, **kwargs)
            if status.is_success(response.status_code):
                row.response_status = response.status_code
                row.response_body = _kept_body(response.data)
                row.response_location = response.headers.get("Location", "")[:500]
                row.save(update_fields=["response_status", "response_body", "response_location"])
            else:
                row.delete()
            return response

    return wrapper
