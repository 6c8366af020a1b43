"""Celery tasks: thin wrappers that take primary keys; the Run row is the truth."""

from celery import Task, shared_task
from celery.worker.request import Request

from tierlab.scenarios import services


class RunRequest(Request):
    """A run's request in the worker's main process.

    At the hard time limit the pool kills the process running the task, so the task body
    never learns it; this records it on the Run row (the message is then acknowledged).
    A pool process that dies otherwise (SIGKILL, out of memory) makes Celery requeue the
    message (``reject_on_worker_lost``): the run is redelivered, see ``execute_run``.
    """

    def on_timeout(self, soft, timeout):
        super().on_timeout(soft, timeout)
        if not soft:
            services.fail_after_hard_limit(self.args[0], timeout)


class RunTask(Task):
    Request = RunRequest


@shared_task(bind=True, base=RunTask, name="tierlab.run_scenario", acks_late=True,
             reject_on_worker_lost=True, ignore_result=True)
def run_scenario(self, run_id: int) -> None:
    """Evaluate Run ``run_id`` and store its result or failure on the row."""
    services.execute_run(run_id, task_id=self.request.id or "", worker=self.request.hostname or "")
