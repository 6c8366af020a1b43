"""Celery tasks: thin wrappers that take primary keys; the Run row is the truth."""

from celery import shared_task

from tierlab.jobs import hard_limit_task_base
from tierlab.scenarios import services


# At the hard time limit the pool kills the process running the task, so the task body
# never learns it; the base records it on the Run row (the message is then acknowledged).
# A pool process that dies otherwise (SIGKILL, out of memory) makes Celery requeue the
# message (``reject_on_worker_lost``): the run is redelivered, see ``execute_run``.
RunTask = hard_limit_task_base(services.fail_after_hard_limit, "Run")
RunRequest = RunTask.Request


@shared_task(bind=True, base=RunTask, name="tierlab.run_scenario", acks_late=True,
             reject_on_worker_lost=True, ignore_result=True)
def run_scenario(self, run_id: int) -> None:
    """Evaluate Run ``run_id`` and store its result or failure on the row."""
    services.execute_run(run_id, task_id=self.request.id or "", worker=self.request.hostname or "")
