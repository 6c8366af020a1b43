"""Celery tasks of the dashboard: thin wrappers that take primary keys; the rows are the truth."""

from celery import shared_task

from tierlab.dashboard import sweeps


@shared_task(bind=True, name="tierlab.run_sweep_chunk", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def run_sweep_chunk(self, chunk_id: int) -> None:
    """Evaluate the points of SweepChunk ``chunk_id`` and store them on the row."""
    sweeps.execute_chunk(chunk_id, task_id=self.request.id or "")
