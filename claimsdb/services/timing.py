"""Where a write's time goes: its whole time and the time it held the ledger lock.

When the setting ``WRITE_TIMING_LOG`` names a file (the environment's
``CLAIMSDB_WRITE_TIMING``), each write appends one line to it once it has committed or
been refused: ``<seconds in write_records> <seconds holding the ledger lock>``. The lock
is held from the moment ``lock_head`` returns to the end of the transaction (its commit
or its rollback), so this is the time other writers may wait for it. The benchmark
(bench/scale.py) reads the file; nothing is logged otherwise.
"""

from __future__ import annotations

import os
import time

from django.conf import settings


class WriteTimer:
    """The times of one call of ``write_records``, over all its attempts."""

    def __init__(self) -> None:
        self.path = settings.WRITE_TIMING_LOG
        self.start = time.perf_counter()
        self.held = 0.0
        self._locked: float | None = None

    def locked(self) -> None:
        """The ledger lock is now held (until ``released``)."""
        if self.path:
            self._locked = time.perf_counter()

    def released(self) -> None:
        """The transaction that held the lock has ended."""
        if self._locked is not None:
            self.held += time.perf_counter() - self._locked
            self._locked = None

    def done(self) -> None:
        if not self.path:
            return
        line = f"{time.perf_counter() - self.start:.6f} {self.held:.6f}\n".encode()
        # one short write with O_APPEND: lines from many processes do not interleave
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)
