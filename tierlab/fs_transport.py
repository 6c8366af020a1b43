"""The filesystem broker of the SQLite mode (``filesystem://``), with a worker loop that
sees a shutdown within one poll.

Celery's worker loop for a transport without an event loop (kombu's filesystem transport
polls its folders) asks ``drain_events(timeout=2.0)`` and looks at a requested shutdown only
when that returns: kombu's virtual transport sleeps its polling interval until the 2 s are
up. With the pool's join after it, an idle worker took 4.3-6.6 s to stop on SIGTERM, past
the 5 s honcho waits on Ctrl-C of ``scripts/start`` before a SIGKILL. This transport waits
at most one polling interval per call (the loop calls again at once, so nothing else
changes); ``tierlab.celery`` puts it under the ``filesystem`` scheme.
"""

from kombu.transport import filesystem


class Transport(filesystem.Transport):
    def drain_events(self, connection, timeout=None):
        interval = self.polling_interval
        if timeout is not None and interval:
            timeout = min(timeout, interval)
        return super().drain_events(connection, timeout=timeout)
