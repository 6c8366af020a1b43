"""Celery tasks of the dashboard: thin wrappers that take primary keys; the rows are the truth."""

from celery import Task, shared_task
from celery.worker.request import Request

from tierlab.dashboard import sweeps


class ChunkRequest(Request):
    """A chunk's request in the worker's main process: at the hard time limit the pool kills
    the process running it, so this records it on the chunk (as ``RunRequest`` does for runs)."""

    def on_timeout(self, soft, timeout):
        super().on_timeout(soft, timeout)
        if not soft:
            sweeps.fail_chunk_after_hard_limit(self.args[0], timeout)


class ChunkTask(Task):
    Request = ChunkRequest


@shared_task(bind=True, base=ChunkTask, name="tierlab.run_sweep_chunk", acks_late=True,
             reject_on_worker_lost=True, ignore_result=True)
def run_sweep_chunk(self, chunk_id: int) -> None:
    """Evaluate the points of SweepChunk ``chunk_id`` and store them on the row."""
    sweeps.execute_chunk(chunk_id, task_id=self.request.id or "", worker=self.request.hostname or "")
