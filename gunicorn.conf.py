"""gunicorn's settings, read from the working directory by every ``gunicorn`` started here
(Dockerfile, docker-compose.yml): a web process is replaced after about
``WEB_MAX_REQUESTS`` requests (plus up to ``WEB_MAX_REQUESTS_JITTER``, so they do not all
restart at once), giving back memory a large request took. ``0`` turns it off."""

import os


def _count(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip() or str(default)
    if not text.isdigit():
        raise SystemExit(f"{name}: expected a whole number of requests (0 or more), got {text!r}")
    return int(text)


max_requests = _count("WEB_MAX_REQUESTS", 1000)
max_requests_jitter = _count("WEB_MAX_REQUESTS_JITTER", 100)
