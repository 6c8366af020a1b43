"""Helpers for the dashboard's tests: scenarios that differ in one field, runs and sweep
chunks executed in this process (the worker tests use a real one)."""

import copy

from tierlab.dashboard import sweeps
from tierlab.dashboard.models import SweepChunk
from tierlab.scenarios import services
from tierlab.scenarios.models import Run, Scenario

# Llama-2-7B on one node of 8 H100: small and quick to evaluate.
BASE = {"model": {"preset": "llama2-7b"}, "cluster": {"node": "dgx-h100", "num_nodes": 1},
        "training": {"micro_batch_size": 1, "global_batch_size": 8, "seq_len": 2048,
                     "recompute": "full", "flash_attention": True},
        "strategy": {"kind": "zero3"}}


def spec(**changes) -> dict:
    """BASE with dotted-path changes: ``spec(**{"strategy.kind": "zero2"})``."""
    s = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = s
        *head, last = path.split(".")
        for key in head:
            node = node.setdefault(key, {})
        node[last] = value
    return s


def strategies(owner, kinds=("zero2", "zero3", "fsdp_full_shard")) -> list[Scenario]:
    return [Scenario.objects.create(owner=owner, name=f"7B {k}", spec=spec(**{"strategy.kind": k}))
            for k in kinds]


def run_queued_runs() -> None:
    for run in Run.objects.filter(status=Run.Status.QUEUED):
        services.execute_run(run.pk)


def run_chunks(sweep=None) -> None:
    chunks = SweepChunk.objects.filter(status=SweepChunk.Status.QUEUED)
    if sweep is not None:
        chunks = chunks.filter(sweep=sweep)
    for chunk in chunks.order_by("start"):
        sweeps.execute_chunk(chunk.pk)
