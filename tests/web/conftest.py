"""Fixtures for tests that start real processes (tests/processes.py)."""

import uuid

import pytest


@pytest.fixture
def queue(settings):
    """A queue of this test's own; runs created here are sent to it."""
    name = f"tierlab-test-{uuid.uuid4().hex[:8]}"
    settings.TIERLAB_RUN_QUEUE = name
    return name


@pytest.fixture
def procs():
    """Processes a test started: stopped at its end, their logs printed (pytest shows them
    when the test failed)."""
    started = []
    yield started
    for proc in reversed(started):
        proc.stop()
        print(f"\n----- {proc.name} log -----\n{proc.log()[-8000:]}")
