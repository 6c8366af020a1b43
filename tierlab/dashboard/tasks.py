"""Celery tasks of the dashboard: thin wrappers that take primary keys; the rows are the truth."""

from celery import shared_task

from tierlab.jobs import hard_limit_task_base
from tierlab.dashboard import plans, sweeps


# At the hard time limit the pool kills the process running a chunk: the base records it on
# the chunk, as runs' does.
ChunkTask = hard_limit_task_base(sweeps.fail_chunk_after_hard_limit, "Chunk")
ChunkRequest = ChunkTask.Request


@shared_task(bind=True, base=ChunkTask, name="tierlab.run_sweep_chunk", acks_late=True,
             reject_on_worker_lost=True, ignore_result=True)
def run_sweep_chunk(self, chunk_id: int) -> None:
    """Evaluate the points of SweepChunk ``chunk_id`` and store them on the row."""
    sweeps.execute_chunk(chunk_id, task_id=self.request.id or "", worker=self.request.hostname or "")


PlanChunkTask = hard_limit_task_base(plans.fail_chunk_after_hard_limit, "PlanChunk")


@shared_task(bind=True, base=PlanChunkTask, name="tierlab.run_plan_chunk", acks_late=True,
             reject_on_worker_lost=True, ignore_result=True)
def run_plan_chunk(self, chunk_id: int) -> None:
    """Search the candidates of PlanChunk ``chunk_id`` and store the chunk's result."""
    plans.execute_chunk(chunk_id, task_id=self.request.id or "", worker=self.request.hostname or "")
