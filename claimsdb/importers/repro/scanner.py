"""One pass over a results file's JSON events: the header built in memory, the trial rows
checked and tallied one at a time and forgotten.

The header (everything but `trials`) is small and bounded by docs/limits.md; the rows may
number millions, so `_check_row` is the hot path: a row of the usual shape is checked by a
few type tests and counted, and only an unusual row goes to `_check_row_slowly`, which says
what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import ijson

from claimsdb import limits
from claimsdb.codes import ReproCode

from . import messages
from .format import FLAG_NAMES, ROW_KEYS, ROW_REQUIRED
from .messages import capital, join, label, show
from .problems import ProblemLog
from .tally import Tallies, Tally

MAX_DEPTH = 256


class NotAnObject(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TooLarge(Exception):
    """Input beyond one of the limits of docs/limits.md: reading stops there."""

    def __init__(self, path: str, message: str, code: str = ReproCode.TOO_LARGE) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.code = code


class TooDeep(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path
        self.message = f"The JSON is nested deeper than {MAX_DEPTH} levels at {label(path)}."


class Readable(Protocol):
    """What the parser reads from: a binary file, or a wrapper such as the importer's, which
    hashes what passes through."""

    def read(self, size: int = -1, /) -> bytes: ...


class CountingReader:
    """Wraps the stream to tell how far the parser got and whether anything but space came."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self.offset = 0
        self.saw_content = False

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        self.offset += len(chunk)
        if self.offset > limits.UPLOAD_MAX_BYTES:
            raise TooLarge(
                "",
                f"The file is larger than {limits.UPLOAD_MAX_BYTES} bytes, the most a results "
                "file may be (docs/limits.md).",
            )
        if not self.saw_content and chunk.strip():
            self.saw_content = True
        return chunk


Events = Iterator[tuple[str, Any]]


class Scan:
    """One pass over the parser's events: builds the header, tallies the trial rows."""

    def __init__(self, log: ProblemLog) -> None:
        self.log = log
        self.header: dict[str, Any] = {}
        self.where = ""
        self.rows_read = 0
        self.trials_seen = False
        self.tallies = Tallies(log)
        # characters of the header's strings and keys: the header is held in memory
        self.header_chars = 0

    # top level

    def read_file(self, events: Events) -> None:
        event, value = next(events)
        if event != "start_map":
            kind = "a list" if event == "start_array" else show(value)
            raise NotAnObject(f"The file holds {kind}, but a results file must be one JSON object.")
        for event, key in events:
            if event == "end_map":
                break
            self.where = key
            event, value = next(events)
            if key in self.header or (key == "trials" and self.trials_seen):
                self.log.add(ReproCode.MALFORMED, key, messages.duplicate_key(key))
                self._skip(events, event)
            elif key == "trials":
                self._read_trials(events, event, value)
            else:
                self._note_text(key, key, header=True)
                self.header[key] = self._build(events, event, value, key, header=True)
                if key == "scenarios" and not self.trials_seen:
                    self.tallies.know_scenarios(self.header[key])
        self.where = ""
        for _ in events:  # lets the parser notice anything after the object
            pass

    def finish(self) -> None:
        """Check the rows against the scenarios, now that both have been read."""
        if self.rows_read:
            self.tallies.check_against(self.header.get("scenarios"))

    def _read_trials(self, events: Events, event: str, value: Any) -> None:
        self.trials_seen = True
        if event != "start_array":
            value = self._build(events, event, value, "trials")
            self.log.wrong_type("trials", value, "a list of trial rows")
            return
        try:
            self._read_rows(events)
        except ijson.JSONError:
            self.where = f"trials[{self.rows_read}]"
            raise

    # values outside the trial rows

    def _note_text(self, value: Any, path: str, *, header: bool) -> None:
        """Refuse a string beyond the limits (docs/limits.md) as soon as it is read."""
        if type(value) is not str:
            return
        if len(value) > limits.RESULTS_TEXT_MAX_CHARS:
            self.log.add(
                ReproCode.TOO_LARGE,
                path,
                f"{capital(label(path))} is {len(value)} characters long; at most "
                f"{limits.RESULTS_TEXT_MAX_CHARS} are allowed (docs/limits.md).",
            )
        if header:
            self.header_chars += len(value)
            if self.header_chars > limits.RESULTS_HEADER_MAX_CHARS:
                raise TooLarge(
                    path,
                    "The file's fields outside its trial rows hold more than "
                    f"{limits.RESULTS_HEADER_MAX_CHARS} characters of text (docs/limits.md).",
                )

    def _build(
        self, events: Events, event: str, value: Any, path: str, header: bool = False
    ) -> Any:
        """The value starting with this event, with its nested content read from `events`."""
        if event == "start_map":
            root: Any = {}
        elif event == "start_array":
            root = []
        else:
            self._note_text(value, path, header=header)
            return value
        stack = [root]
        paths = [path]
        keys: list[Any] = [None]
        for event, value in events:
            if event == "map_key":
                keys[-1] = value
                self.where = join(paths[-1], value)
                self._note_text(value, self.where, header=header)
                continue
            if event == "end_map" or event == "end_array":
                stack.pop()
                paths.pop()
                keys.pop()
                if not stack:
                    return root
                continue
            if event == "start_map":
                child: Any = {}
            elif event == "start_array":
                child = []
            else:
                child = value
            parent = stack[-1]
            if type(parent) is dict:
                key = keys[-1]
                child_path = join(paths[-1], key)
                if key in parent:
                    self.log.add(ReproCode.MALFORMED, child_path, messages.duplicate_key(key))
                parent[key] = child
            else:
                child_path = f"{paths[-1]}[{len(parent)}]"
                parent.append(child)
            if type(child) is str:
                self._note_text(child, child_path, header=header)
            if event == "start_map" or event == "start_array":
                if len(stack) >= MAX_DEPTH:
                    raise TooDeep(child_path)
                stack.append(child)
                paths.append(child_path)
                keys.append(None)
                self.where = child_path
        return root

    def _skip(self, events: Events, event: str) -> None:
        if event != "start_map" and event != "start_array":
            return
        depth = 1
        for event, _ in events:
            if event == "start_map" or event == "start_array":
                depth += 1
            elif event == "end_map" or event == "end_array":
                depth -= 1
                if not depth:
                    return

    # the trial rows: the hot path, millions of times

    def _read_rows(self, events: Events) -> None:
        check_row = self._check_row
        build = self._build
        log = self.log
        k = -1
        for event, value in events:
            if event == "end_array":
                break
            k += 1
            self.rows_read = k
            if k >= limits.TRIAL_ROWS_MAX:
                raise TooLarge(
                    f"trials[{k}]",
                    f"The file has more than {limits.TRIAL_ROWS_MAX} trial rows, the most one "
                    "run may have (docs/limits.md).",
                    ReproCode.TOO_MANY_TRIALS,
                )
            if event != "start_map":
                value = build(events, event, value, f"trials[{k}]")
                log.row(
                    ReproCode.TYPE,
                    f"trials[{k}]",
                    f"Trial row {k} is {show(value)}, not an object.",
                )
                continue
            row: dict[str, Any] = {}
            key: Any = None
            for event, value in events:
                if event == "map_key":
                    key = value
                    continue
                if event == "end_map":
                    break
                if event == "start_map" or event == "start_array":
                    value = build(events, event, value, f"trials[{k}].{key}")
                if key in row:
                    log.row(ReproCode.MALFORMED, f"trials[{k}].{key}", messages.duplicate_key(key))
                row[key] = value
            check_row(row, k)
        self.rows_read = k + 1

    def _check_row(self, row: dict[str, Any], k: int) -> None:
        try:
            name = row["scenario"]
            n = row["n"]
            a = row["aborted"]
            m = row["mid_transfer"]
            r = row["reused_in_flight"]
            lw = row["late_write"]
            c = row["checksum_mismatch"]
            w = row["wrong_output"]
        except KeyError:
            self._check_row_slowly(row, k)
            return
        latency = row.get("latency_us", 0)
        if (
            type(name) is not str
            or type(n) is not int
            or (a is not True and a is not False)
            or (m is not True and m is not False)
            or (r is not True and r is not False)
            or (lw is not True and lw is not False)
            or (c is not True and c is not False)
            or (w is not True and w is not False)
            or (type(latency) is not float and type(latency) is not int)
            or latency < 0
            or len(row) > 8 + ("latency_us" in row)
        ):
            self._check_row_slowly(row, k)
            return
        tally = self.tallies.count_row(name, k)
        if tally is None:
            return
        sums = tally.sums
        sums[0] += a
        sums[1] += m
        sums[2] += r
        sums[3] += lw
        sums[4] += c
        sums[5] += w
        self.tallies.note_number(tally, n, k)

    def _check_row_slowly(self, row: dict[str, Any], k: int) -> None:
        log = self.log
        prefix = f"trials[{k}]"
        for key in row:
            if key not in ROW_KEYS and not key.startswith("x-"):
                log.row(
                    ReproCode.UNKNOWN_KEY,
                    f"{prefix}.{key}",
                    messages.unknown_key(key, "a trial row"),
                )
            elif type(row[key]) is str and len(row[key]) > limits.RESULTS_TEXT_MAX_CHARS:
                log.row(
                    ReproCode.TOO_LARGE,
                    f"{prefix}.{key}",
                    f"{prefix}.{key} is {len(row[key])} characters long; at most "
                    f"{limits.RESULTS_TEXT_MAX_CHARS} are allowed (docs/limits.md).",
                )
        for key in ROW_REQUIRED:
            if key not in row:
                log.row(ReproCode.MISSING, f"{prefix}.{key}", f"Trial row {k} has no {key}.")
        name = row.get("scenario")
        if "scenario" in row and type(name) is not str:
            log.row(
                ReproCode.TYPE,
                f"{prefix}.scenario",
                f"{prefix}.scenario must be a scenario id, not {show(name)}.",
            )
        n = row.get("n")
        if "n" in row and type(n) is not int:
            log.row(
                ReproCode.TYPE, f"{prefix}.n", f"{prefix}.n must be a whole number, not {show(n)}."
            )
        for flag in FLAG_NAMES:
            if flag in row and type(row[flag]) is not bool:
                log.row(
                    ReproCode.TYPE,
                    f"{prefix}.{flag}",
                    f"{prefix}.{flag} must be true or false, not {show(row[flag])}.",
                )
        if "latency_us" in row:
            _check_latency(row["latency_us"], f"{prefix}.latency_us", log)
        tally: Tally | None = self.tallies.count_row(name, k) if type(name) is str else None
        if tally is None:
            return
        for index, flag in enumerate(FLAG_NAMES):
            value = row.get(flag)
            if type(value) is bool:
                tally.sums[index] += value
            else:
                tally.bad_flags.add(index)
        if type(n) is int:
            self.tallies.note_number(tally, n, k)


def _check_latency(value: Any, path: str, log: ProblemLog) -> None:
    if type(value) is not int and type(value) is not float:
        log.row(
            ReproCode.TYPE, path, f"{path} must be a number of microseconds, not {show(value)}."
        )
    elif value < 0:
        log.row(ReproCode.INVALID, path, f"{path} is {value}; it must be 0 or more.")
