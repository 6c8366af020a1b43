"""Celery tasks: thin wrappers that take primary keys; the Run row is the truth."""

from celery import shared_task

from tierlab.scenarios import services


@shared_task(bind=True, name="tierlab.run_scenario", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def run_scenario(self, run_id: int) -> None:
    """Evaluate Run ``run_id`` and store its result or failure on the row."""
    services.execute_run(run_id, task_id=self.request.id or "")
