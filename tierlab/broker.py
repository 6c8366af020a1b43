"""What the Celery broker holds for a queue: the task ids of the messages still waiting in it
(or delivered to a worker that has not acknowledged them), and taking cancelled jobs'
messages out of it.

Redis (kombu's transport): a queue is a list per priority step (``<queue>``,
``<queue>\\x06\\x163``, ...), messages a worker took and has not acknowledged are the
``unacked`` hash. The filesystem broker (the embedded mode): one ``*.<queue>.msg`` file per
waiting message in the queue folder. Each message is JSON whose headers carry the task id
(``"id": "<uuid>"``, Celery's protocol 2). Other transports cannot be read: None.
"""

import logging
import re
import time
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

_TASK_ID = re.compile(rb'"id": ?"([0-9a-fA-F-]{36})"')
# A busy queue is read at most this often per process (the lost-message check runs on reads).
WAITING_CACHE_S = 10.0
_waiting_memo: dict[str, tuple[float, set[str]]] = {}


def _app():
    from tierlab.celery import app

    return app


def _redis_lists(channel, queue: str) -> list[str]:
    return list(dict.fromkeys(channel._q_for_pri(queue, pri) for pri in channel.priority_steps))


def _filesystem_folder() -> Path | None:
    folder = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get("data_folder_in")
    return Path(folder) if folder else None


def _messages(queue: str, with_unacked: bool):
    """``(kind, where, raw bytes)`` of each message of ``queue``; raises when the broker
    cannot be read, returns None for a transport this cannot read."""
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = _filesystem_folder()
        if folder is None:
            return None
        out = []
        for path in folder.glob(f"*.{queue}.msg"):
            try:
                out.append(("file", path, path.read_bytes()))
            except FileNotFoundError:            # taken by a worker meanwhile
                pass
        return out
    if not url.startswith(("redis://", "rediss://")):
        return None
    with _app().connection_for_write() as conn:
        channel = conn.default_channel
        client = channel.client
        out = [("list", key, raw) for key in _redis_lists(channel, queue) for raw in client.lrange(key, 0, -1)]
        if with_unacked:
            out += [("unacked", None, raw) for raw in client.hvals(channel.unacked_key)]
        return out


def waiting_task_ids(queue: str) -> set[str] | None:
    """Task ids of the messages waiting in ``queue`` (or taken by a worker, not yet
    acknowledged); None when the broker cannot be read. Remembered ``WAITING_CACHE_S``
    seconds per process: the read-time check asks on every list while a queue is busy."""
    now = time.monotonic()
    memo = _waiting_memo.get(queue)
    if memo is not None and now - memo[0] < WAITING_CACHE_S:
        return memo[1]
    try:
        messages = _messages(queue, with_unacked=True)
    except Exception as exc:        # broker down: the caller falls back to the age alone
        log.warning("could not read queue %s from the broker: %s", queue, exc)
        return None
    if messages is None:
        return None
    ids = {m.decode() for _, _, raw in messages for m in _TASK_ID.findall(raw)}
    _waiting_memo[queue] = (now, ids)
    return ids


def forget() -> None:
    """Drop the remembered queue contents (tests; after this process sent or removed some)."""
    _waiting_memo.clear()


def remove_messages(queue: str, task_ids) -> int:
    """Take the waiting messages of ``task_ids`` out of ``queue`` (a cancelled job's chunks:
    they would otherwise stay ahead of other users' work until a worker reached and dropped
    them); how many were removed. A message a worker took meanwhile is left to it (the job
    finds itself cancelled and does nothing). Never raises: a broker it cannot read keeps
    the messages, which workers then drop."""
    wanted = {str(t) for t in task_ids if t}
    if not wanted:
        return 0
    n = 0
    holds = lambda raw: wanted.intersection(m.decode() for m in _TASK_ID.findall(raw))  # noqa: E731
    try:
        url = settings.CELERY_BROKER_URL
        if url.startswith(("redis://", "rediss://")):
            with _app().connection_for_write() as conn:
                channel = conn.default_channel
                client = channel.client
                for key in _redis_lists(channel, queue):
                    for raw in client.lrange(key, 0, -1):
                        if holds(raw):
                            n += client.lrem(key, 1, raw)
        else:
            for _, path, raw in _messages(queue, with_unacked=False) or []:
                if holds(raw):
                    try:
                        path.unlink()
                        n += 1
                    except FileNotFoundError:   # a worker took it meanwhile
                        pass
    except Exception as exc:
        log.warning("could not remove cancelled messages from queue %s: %s", queue, exc)
    forget()
    return n
