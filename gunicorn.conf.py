"""gunicorn's settings, read from the working directory by every ``gunicorn`` started here
(Dockerfile, docker-compose.yml): a web process is replaced after about
``WEB_MAX_REQUESTS`` requests (plus up to ``WEB_MAX_REQUESTS_JITTER``, so they do not all
restart at once), or after a request that left it above ``WEB_MAX_MEMORY_KIB`` of resident
memory, giving back memory a large request took. ``0`` turns either off.

The memory check is the Celery pool's (``WORKER_MAX_MEMORY_PER_CHILD_KIB``, billiard/pool.py
``Worker.workloop``): after each task billiard reads ``billiard.compat.mem_rss()`` (the
process's peak resident set, ``getrusage(RUSAGE_SELF).ru_maxrss``, in KiB) and ends the
process when it is over the limit. Here ``post_request`` does the same after each request and
ends the process the way gunicorn's own ``max_requests`` does (gunicorn/workers/sync.py and
gthread.py set ``worker.alive = False``: the request in hand is answered, the arbiter starts
a new process).
"""

import os


def _count(name: str, default: int, unit: str = "requests") -> int:
    text = os.environ.get(name, "").strip() or str(default)
    if not text.isdigit():
        raise SystemExit(f"{name}: expected a whole number of {unit} (0 or more), got {text!r}")
    return int(text)


# A replacement boots Django and the engine again (about a second), and a quick estimate is
# about 1 ms: at 1,000 requests a process was replaced every second or two under load, a
# third of the throughput and a one-second tail (bench/bench_api.py); memory growth is what
# WEB_MAX_MEMORY_KIB bounds.
max_requests = _count("WEB_MAX_REQUESTS", 100_000)
max_requests_jitter = _count("WEB_MAX_REQUESTS_JITTER", 10_000)
web_max_memory_kib = _count("WEB_MAX_MEMORY_KIB", 1_048_576, "KiB")


def post_request(worker, req, environ, resp):
    """Replace this web process once its peak resident memory (KiB) is over
    ``WEB_MAX_MEMORY_KIB``; a no-op when that is 0."""
    if not web_max_memory_kib or not worker.alive:
        return
    from billiard.compat import mem_rss

    used_kib = mem_rss()
    if used_kib > web_max_memory_kib:
        worker.log.info("Autorestarting worker: %d KiB resident is over WEB_MAX_MEMORY_KIB (%d KiB)",
                        used_kib, web_max_memory_kib)
        worker.alive = False
