"""What the claimsdb commands share."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser, OutputWrapper
from django.db import connection, transaction

from claimsdb.records.stream import BATCH_SIZE, NO_PROGRESS, Progress


def acting_user(username: str):
    """The user a command acts as (``--user``): every change has an author."""
    if not username:
        raise CommandError("--user is required: every change is recorded with its author")
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist as exc:
        raise CommandError(f"no user named {username!r}") from exc


# --- reading everything ---------------------------------------------------------------------


def add_streaming_arguments(parser: CommandParser) -> None:
    """``--batch-size`` and ``--progress``, the flags of every command that reads all records."""
    parser.add_argument(
        "--batch-size",
        type=int,
        default=BATCH_SIZE,
        metavar="N",
        help=f"records read per query batch (default {BATCH_SIZE}); memory follows it",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on standard error (default: when it is a terminal)",
    )


def batch_size(options: dict) -> int:
    if options["batch_size"] < 1:
        raise CommandError("--batch-size must be at least 1")
    return options["batch_size"]


def progress_for(stream: OutputWrapper, options: dict) -> Progress:
    """A progress line on ``stream`` if asked for, or by default if it is a terminal;
    otherwise nothing (pipes, files and tests see only the command's own output)."""
    show = options.get("progress")
    if show is None:
        show = stream.isatty()
    return ProgressLine(stream) if show else NO_PROGRESS


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Read everything as of one moment, however many queries it takes.

    On PostgreSQL a read-only REPEATABLE READ transaction: every batch sees the database as
    the first one did, so a write made while a command runs cannot tear its reading (a
    record half old, half new, or a revision without its record). Writers are not blocked.
    SQLite transactions here begin IMMEDIATE, taking the write lock: holding one for a long
    read would stop every writer, so there each batch reads the database as it is then.
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield  # (inside a transaction already, that transaction decides)
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


class TerminalLine:
    """One line of a terminal, redrawn in place at most 10 times a second."""

    INTERVAL = 0.1

    def __init__(self, stream: OutputWrapper, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self._last = 0.0
        self._width = 0  # of the text on the line now, to blank it out

    def due(self, *, final: bool = False) -> bool:
        """Whether a redraw is worth it now (always when ``final``)."""
        now = self.clock()
        if not final and now - self._last < self.INTERVAL:
            return False
        self._last = now
        return True

    def show(self, text: str) -> None:
        self._write("\r" + text.ljust(self._width))
        self._width = len(text)

    def clear(self) -> None:
        if self._width:
            self._write("\r" + " " * self._width + "\r")
        self._width = 0
        self._last = 0.0

    def _write(self, text: str) -> None:
        # as is: no newline, and no error colour on a terminal
        self.stream.write(text, style_func=lambda message: message, ending="")
        self.stream.flush()


class ProgressLine:
    """``cases 12,500 of 100,000 (12%) 2,140/s``: how far a command that reads every
    record has got, on one terminal line, cleared when each phase ends."""

    def __init__(self, stream: OutputWrapper, clock: Callable[[], float] = time.monotonic) -> None:
        self.line = TerminalLine(stream, clock)
        self.clock = clock
        self.label = ""
        self.total = 0
        self.done = 0
        self.started = 0.0

    def begin(self, label: str, total: Callable[[], int]) -> None:
        self.label, self.total, self.done = label, total(), 0
        self.started = self.clock()
        self._draw(final=True)

    def advance(self, count: int) -> None:
        self.done += count
        self._draw(final=self.done >= self.total)

    def pause(self) -> None:
        self.line.clear()

    def end(self) -> None:
        self.line.clear()

    def _draw(self, *, final: bool) -> None:
        if not self.line.due(final=final):
            return
        text = f"{self.label} {self.done:,} of {self.total:,}"
        if self.total:
            text += f" ({min(100, self.done * 100 // self.total)}%)"
        elapsed = self.clock() - self.started
        if self.done and elapsed > 0:
            text += f" {self.done / elapsed:,.0f}/s"
        self.line.show(text)
