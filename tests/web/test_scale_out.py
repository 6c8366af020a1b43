"""Scale-out: two worker processes on one database and one broker share a multi-run job.

Each worker takes one run at a time (``-c 1``, prefetch 1) and a run takes a second
(``TIERLAB_TEST_TASK_SLEEP_S``), so with six runs queued both must take part; each run
records the worker that ran it (``Run.worker``, ``name@host``).
"""

import pytest

from tests.processes import new_run, spec_variant, start_worker, wait_status, worker_env

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_two_workers_share_the_runs(owner, example_spec, queue, procs, tmp_path):
    env = worker_env(queue, TIERLAB_TEST_TASK_SLEEP_S=1)
    workers = [start_worker(tmp_path, queue, name, env=env) for name in ("alpha", "beta")]
    procs.extend(workers)

    runs = [new_run(owner, spec_variant(example_spec, i), name=f"part {i}") for i in range(6)]
    done = [wait_status(run.pk, {"succeeded", "failed"}, timeout=60) for run in runs]

    assert [run.status for run in done] == ["succeeded"] * 6, [run.error for run in done]
    by_worker = {w.hostname: sum(run.worker == w.hostname for run in done) for w in workers}
    assert all(by_worker.values()), f"a worker took no run: {by_worker}"
    assert sum(by_worker.values()) == 6
