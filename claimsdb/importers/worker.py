"""The background-job worker that survives its database (``manage.py db_worker``).

django-tasks' database worker loops: claim a job, run it, sleep when there is none. On the
first error of its connection — PostgreSQL restarted, failed over, the network cut — it
exits, and nothing runs the queue until someone starts it again. ``RecoveringWorker``
keeps the loop and adds recovery:

* a lost connection is closed and, after a wait that doubles from the first to the last of
  ``WORKER_RECONNECT_SECONDS`` (0.5 s … 30 s), the loop starts again on a new one, for as
  long as it takes; once it has run well for a while the wait starts small again (a
  ``--batch`` run waits up to the longest wait once, then ends with the error, its
  unfinished jobs still queued);
* the import a lost connection interrupted rolled back (an import is one transaction) and
  its job stopped beating: ``requeue_dead_imports`` — run when the loop (re)starts and
  every quarter of ``IMPORT_DEAD_SECONDS`` by a thread of its own — queues it again once
  its beat is that old.

It also runs the webhooks' pump (``claimsdb.webhooks.jobs.pump``) every
``WEBHOOKS_POLL_SECONDS`` in a thread of its own, which turns new revisions and events into
deliveries and queues the due ones as jobs of this same queue (0 turns it off, for a worker
kept to imports); a ``--batch`` run pumps once before it works the queue.

Errors that are not about the connection (a bug, a broken migration) still end the worker,
with a non-zero status, for its supervisor to report.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django_tasks_db.management.commands.db_worker import Worker

from .jobs import dead_after, requeue_dead_imports

logger = logging.getLogger("claimsdb.worker")

CONNECTION_LOST = (OperationalError, InterfaceError)


def close_connections() -> None:
    """Drop this thread's connections, whatever state they are in: the next query opens
    a new one."""
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except DatabaseError:
            pass


class RecoveringWorker(Worker):
    """``django_tasks_db``'s worker, which waits for its database instead of exiting.

    ``sleep`` and ``clock`` are the waits and the time it goes by (tests give their own);
    ``reap_every`` how often dead imports are looked for (None: a quarter of
    ``IMPORT_DEAD_SECONDS``; 0: only when the loop starts).
    """

    def __init__(
        self,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        reap_every: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.sleep = sleep
        self.clock = clock
        first, last = getattr(settings, "WORKER_RECONNECT_SECONDS", (0.5, 30.0))
        self.first_wait, self.last_wait = float(first), float(last)
        self.reap_every = (
            max(1.0, dead_after().total_seconds() / 4) if reap_every is None else reap_every
        )
        self.reconnects = 0

    def run(self) -> None:
        threads: list[_Every] = []
        if not self.batch and self.reap_every > 0:
            threads.append(_Every(self.reap_every, requeue_dead_imports, "import-reaper"))
        poll = float(getattr(settings, "WEBHOOKS_POLL_SECONDS", 1.0))
        if poll > 0:
            if self.batch:
                _pump_webhooks()
            else:
                threads.append(_Every(poll, _pump_webhooks, "webhook-pump"))
        for thread in threads:
            thread.start()
        try:
            self._run_until_done()
        finally:
            for thread in threads:
                thread.stop()

    def _run_until_done(self) -> None:
        wait = 0.0
        while True:
            started = self.clock()
            try:
                requeue_dead_imports()
                super().run()
                return
            except CONNECTION_LOST as exc:
                if not self.running:
                    raise  # shutting down: nothing to recover
                close_connections()
                if self.clock() - started > self.last_wait:
                    wait = 0.0  # it ran well since the last loss: start small again
                elif self.batch and wait >= self.last_wait:
                    # a --batch run (from cron, a script) has waited the longest wait once:
                    # it ends with the error; what it had not finished stays queued
                    raise
                wait = min(self.last_wait, max(self.first_wait, wait * 2))
                self.reconnects += 1
                logger.warning(
                    "worker %s lost its database (%s: %s); connecting again in %.1f s",
                    self.worker_id,
                    type(exc).__name__,
                    str(exc).strip().splitlines()[0] if str(exc).strip() else "",
                    wait,
                )
                self.startup_delay = False
                self.sleep(wait)


def _pump_webhooks() -> None:
    from claimsdb.webhooks.jobs import pump

    pump()


class _Every:
    """Runs ``work`` every ``every`` seconds in a thread of its own (with its own database
    connection): dead imports come back, and webhooks go out, while the worker is busy."""

    def __init__(self, every: float, work: Callable[[], object], name: str) -> None:
        self.every = every
        self.work = work
        self.name = name
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every):
                try:
                    self.work()
                except DatabaseError as exc:
                    logger.warning("%s: %s", self.name, exc)
                    close_connections()
                except Exception:
                    logger.exception("%s failed; trying again", self.name)
        finally:
            close_connections()
