"""GET /healthz: can this process reach the database and the task broker?

For load balancers, orchestrators and docker-compose's healthcheck: 200
``{"database": "ok", "broker": "ok"}`` or 503 with ``"failed"`` next to what is down (the
reason goes to the log, not to the anonymous caller). Served by a middleware placed first,
so it answers before host validation (a probe's Host header is an IP) and HTTPS redirects.
"""

import logging

from django.conf import settings
from django.db import connection
from django.http import HttpResponseNotAllowed, JsonResponse
from kombu import Connection

log = logging.getLogger(__name__)

PATH = "/healthz"


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_broker() -> None:
    timeout = settings.HEALTH_BROKER_TIMEOUT_S
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=timeout,
                    transport_options=getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None)) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)


def health(request):
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    body, healthy = {}, True
    for name, check in (("database", check_database), ("broker", check_broker)):
        try:
            check()
        except Exception as exc:
            log.warning("health check: %s failed: %s: %s", name, type(exc).__name__, exc)
            body[name], healthy = "failed", False
        else:
            body[name] = "ok"
    response = JsonResponse(body, status=200 if healthy else 503)
    response["Cache-Control"] = "no-store"
    return response


class HealthCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info == PATH:
            return health(request)
        return self.get_response(request)
