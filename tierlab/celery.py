"""The Celery app: configured from Django settings (``CELERY_*``), tasks autodiscovered."""

import logging
import os

from celery import Celery
from celery.signals import worker_init, worker_ready
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tierlab.settings")
# filesystem:// (the SQLite mode's broker): kombu's, stopping within one poll (tierlab.fs_transport)
TRANSPORT_ALIASES["filesystem"] = "tierlab.fs_transport:Transport"

app = Celery("tierlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

log = logging.getLogger(__name__)


_started_at = None    # when this worker process started, before it took any message


@worker_init.connect
def remember_start(**kwargs):
    global _started_at
    from django.utils import timezone

    _started_at = timezone.now()


@worker_ready.connect
def recover_work_of_an_earlier_process(sender, **kwargs):
    """Work left ``running`` under this worker's name was being run by an earlier process of
    it that stopped (Ctrl-C of ``scripts/start``, a container restart) without handing its
    message back (the filesystem broker restores it only at the end of a warm shutdown;
    Redis only after the visibility timeout): queue it again now, not minutes later."""
    from tierlab.dashboard import plans, sweeps
    from tierlab.scenarios import services

    hostname = getattr(sender, "hostname", "")
    if not hostname:
        return
    try:
        n = (services.recover_runs_of(hostname, started_before=_started_at)
             + sweeps.recover_chunks_of(hostname, started_before=_started_at)
             + plans.recover_chunks_of(hostname, started_before=_started_at))
    except Exception:   # a database down at start must not stop the worker
        log.exception("could not look for work left running by %s", hostname)
        return
    finally:
        from django.db import connections

        connections.close_all()     # pool processes forked later must not share it
    if n:
        log.warning("%s: %d run(s), sweep or plan chunk(s) left running by an earlier process were queued again",
                    hostname, n)
