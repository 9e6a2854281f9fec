"""Pure streaming parser and validator for `repro-results/1` files.

File in, unsaved values out: nothing here touches the database. `parse_results` checks a whole
file in one streaming pass and returns every problem it finds, each with a stable code and the
JSON path it concerns; `iter_trial_rows` is the second pass that feeds the trial rows of an
accepted file to bulk insertion. The format is fixed by docs/repro-results-1.md.

Whether `case` and `claims` exist, and whether `run_id` was imported before, is for the
database-side importer to decide.
"""

from __future__ import annotations

import ast
import heapq
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, BinaryIO, NamedTuple

import ijson

from claimsdb import limits

FORMAT = "repro-results/1"
SUPPORTED_FORMATS = ("repro-results/1",)

MALFORMED = "repro.malformed"
FORMAT_UNSUPPORTED = "repro.format_unsupported"
MISSING = "repro.missing"
UNKNOWN_KEY = "repro.unknown_key"
TYPE = "repro.type"
INVALID = "repro.invalid"
TIME_ORDER = "repro.time_order"
SETTING_NOT_LAB = "repro.setting_not_lab"
DUPLICATE_SCENARIO = "repro.duplicate_scenario"
COUNTER_INCONSISTENT = "repro.counter_inconsistent"
OUTCOME_INCONSISTENT = "repro.outcome_inconsistent"
TRIAL_UNKNOWN_SCENARIO = "repro.trial_unknown_scenario"
TRIAL_REPEATED = "repro.trial_repeated"
TRIAL_COUNT = "repro.trial_count"
TRIAL_COUNTER_MISMATCH = "repro.trial_counter_mismatch"
TOO_MANY_PROBLEMS = "repro.too_many_problems"
TOO_LARGE = "repro.too_large"
TOO_MANY_TRIALS = "repro.too_many_trials"

# Enough to show what is wrong with a broken file without burying the report.
MAX_ROW_PROBLEMS = 100
MAX_OTHER_PROBLEMS = 100
MAX_DEPTH = 256
# Scenario names are remembered for rows read before the file's `scenarios` list; this bounds
# that memory when a broken file names a different scenario in every row.
MAX_PENDING_SCENARIOS = 10_000
_BUF_SIZE = 256 * 1024

BACKENDS = ("mooncake", "nixl", "mori")
MITIGATIONS = ("abort_ack", "deferred_release", "generation_token", "kv_checksum")
FREE_LIST_ORDERS = ("fifo", "lifo")
OUTCOMES = ("reproduced", "not_reproduced", "inconclusive", "error")
COUNTERS = (
    "trials",
    "aborts_injected",
    "aborts_mid_transfer",
    "reuse_while_in_flight",
    "late_writes_landed",
    "checksum_mismatches",
    "wrong_outputs",
    "timeout_forced_releases",
    "stale_generation_dropped",
    "held_slots_peak",
    "rejected_backpressure",
)
# (smaller, larger): each scenario must have smaller <= larger.
COUNTER_ORDER = (
    ("aborts_injected", "trials"),
    ("aborts_mid_transfer", "aborts_injected"),
    ("reuse_while_in_flight", "aborts_mid_transfer"),
    ("late_writes_landed", "aborts_mid_transfer"),
    ("checksum_mismatches", "trials"),
    ("wrong_outputs", "trials"),
)
# Trial-row flag -> the scenario counter its true values add up to.
TRIAL_FLAGS = (
    ("aborted", "aborts_injected"),
    ("mid_transfer", "aborts_mid_transfer"),
    ("reused_in_flight", "reuse_while_in_flight"),
    ("late_write", "late_writes_landed"),
    ("checksum_mismatch", "checksum_mismatches"),
    ("wrong_output", "wrong_outputs"),
)
_FLAG_NAMES = tuple(flag for flag, _ in TRIAL_FLAGS)
_ROW_REQUIRED = ("scenario", "n", *_FLAG_NAMES)
_ROW_KEYS = frozenset((*_ROW_REQUIRED, "latency_us"))

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}")
_CASE = re.compile(r"(?=.{1,40}\Z)[A-Z0-9]+(?:-[A-Z0-9]+)*")
_CLAIM = re.compile(r"CLM-[A-Z0-9]+(?:-[A-Z0-9]+)*")
_SCENARIO_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_COMMIT = re.compile(r"[0-9a-fA-F]{4,64}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_OTHER_BACKEND = re.compile(r"other:[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_TIMESTAMP = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[Tt](?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)


@dataclass(frozen=True)
class Problem:
    """One reason to refuse a file: a stable `code`, a sentence, and the JSON path it concerns."""

    code: str
    message: str
    path: str


@dataclass
class ScenarioSummary:
    """One scenario of a run, as the file states it; `x-` keys kept verbatim in `extra`."""

    id: str
    backend: str
    mitigations: list[str]
    free_list_order: str
    write_delay_us: int
    seed: int
    trials: int
    aborts_injected: int
    aborts_mid_transfer: int
    reuse_while_in_flight: int
    late_writes_landed: int
    checksum_mismatches: int
    wrong_outputs: int
    timeout_forced_releases: int
    stale_generation_dropped: int
    held_slots_peak: int
    rejected_backpressure: int
    outcome: str
    extra: dict[str, Any]

    @classmethod
    def from_dict(cls, scenario: dict[str, Any]) -> ScenarioSummary:
        """Build from a scenario object of a file that `parse_results` accepted."""
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {key: scenario[key] for key in known}
        values["mitigations"] = list(scenario["mitigations"])
        extra = {key: value for key, value in scenario.items() if key.startswith("x-")}
        return cls(**values, extra=extra)

    @property
    def mitigated(self) -> bool:
        return bool(self.mitigations)


@dataclass
class ParsedRun:
    """What one pass over a results file learned, without its trial rows.

    `header` is the file minus `trials`. Returned whenever the file is a readable
    `repro-results/1` object, so that a report can name the run; store it only when
    `parse_results` returned no problems alongside it.
    """

    header: dict[str, Any]
    run_id: str
    case: str
    claims: list[str]
    scenarios: list[dict[str, Any]]
    trial_counts: dict[str, int]
    has_trials: bool

    @property
    def scenario_summaries(self) -> list[ScenarioSummary]:
        return [ScenarioSummary.from_dict(scenario) for scenario in self.scenarios]

    @property
    def started_at(self) -> datetime | None:
        return _parse_timestamp(self.header.get("started_at"))

    @property
    def finished_at(self) -> datetime | None:
        return _parse_timestamp(self.header.get("finished_at"))


class TrialRow(NamedTuple):
    """One trial of a scenario, ready for bulk insertion."""

    scenario: str
    n: int
    aborted: bool
    mid_transfer: bool
    reused_in_flight: bool
    late_write: bool
    checksum_mismatch: bool
    wrong_output: bool
    latency_us: float | None
    extra: dict[str, Any]


def parse_results(stream: BinaryIO) -> tuple[ParsedRun | None, list[Problem]]:
    """Check a whole results file in one streaming pass.

    Returns the run (None when the file is not readable as a `repro-results/1` object) and
    every problem found. Memory stays flat in the number of trial rows: rows are tallied per
    scenario into counters and a bit set of the trial numbers seen, never kept.
    """
    report = _Report()
    scan = _Scan(report)
    source = _CountingReader(stream)
    try:
        scan.read_file(ijson.basic_parse(source, buf_size=_BUF_SIZE, use_float=True))
    except _NotAnObject as error:
        return None, [Problem(MALFORMED, error.message, "")]
    except _TooDeep as error:
        return None, [Problem(MALFORMED, error.message, error.path)]
    except _TooLarge as error:
        return None, [Problem(error.code, error.message, error.path)]
    except ijson.JSONError as error:
        return None, [Problem(MALFORMED, _json_error_message(error, source), scan.where)]
    header = scan.header
    if "format" in header and header["format"] not in SUPPORTED_FORMATS:
        return None, [_format_problem(header["format"])]
    _check_header(header, report)
    scan.finish()
    return _parsed_run(scan), report.problems()


def iter_trial_rows(stream: BinaryIO) -> Iterator[TrialRow]:
    """Yield the trial rows of a file that `parse_results` accepted, in file order."""
    for row in ijson.items(stream, "trials.item", buf_size=_BUF_SIZE, use_float=True):
        latency = row.get("latency_us")
        known = 9 if "latency_us" in row else 8
        extra = {k: v for k, v in row.items() if k.startswith("x-")} if len(row) > known else {}
        yield TrialRow(
            row["scenario"],
            row["n"],
            row["aborted"],
            row["mid_transfer"],
            row["reused_in_flight"],
            row["late_write"],
            row["checksum_mismatch"],
            row["wrong_output"],
            None if latency is None else float(latency),
            extra,
        )


# --- the report -------------------------------------------------------------------------------


class _Report:
    """Collects problems, keeping a broken file's report readable."""

    def __init__(self) -> None:
        self.other: list[Problem] = []
        self.rows: list[Problem] = []
        self.other_left_out = 0
        self.rows_left_out = 0

    def add(self, code: str, path: str, message: str) -> None:
        if len(self.other) < MAX_OTHER_PROBLEMS:
            self.other.append(Problem(code, message, path))
        else:
            self.other_left_out += 1

    def row(self, code: str, path: str, message: str) -> None:
        if len(self.rows) < MAX_ROW_PROBLEMS:
            self.rows.append(Problem(code, message, path))
        else:
            self.rows_left_out += 1

    def wrong_type(self, path: str, value: Any, expected: str) -> None:
        self.add(TYPE, path, f"{_label(path)} must be {expected}, not {_show(value)}.")

    def problems(self) -> list[Problem]:
        problems = self.other + self.rows
        if self.other_left_out:
            problems.append(_too_many("", self.other_left_out, "outside the trial rows"))
        if self.rows_left_out:
            problems.append(_too_many("trials", self.rows_left_out, "in the trial rows"))
        return problems


def _too_many(path: str, left_out: int, where: str) -> Problem:
    message = f"{left_out} more problems {where} are not listed; fix the ones above first."
    return Problem(TOO_MANY_PROBLEMS, message, path)


# --- the streaming pass -----------------------------------------------------------------------


class _NotAnObject(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _TooLarge(Exception):
    """Input beyond one of the limits of docs/limits.md: reading stops there."""

    def __init__(self, path: str, message: str, code: str = TOO_LARGE) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.code = code


class _TooDeep(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path
        self.message = f"The JSON is nested deeper than {MAX_DEPTH} levels at {_label(path)}."


class _CountingReader:
    """Wraps the stream to tell how far the parser got and whether anything but space came."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.offset = 0
        self.saw_content = False

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        self.offset += len(chunk)
        if self.offset > limits.UPLOAD_MAX_BYTES:
            raise _TooLarge(
                "",
                f"The file is larger than {limits.UPLOAD_MAX_BYTES} bytes, the most a results "
                "file may be (docs/limits.md).",
            )
        if not self.saw_content and chunk.strip():
            self.saw_content = True
        return chunk


class _Tally:
    """What the rows of one scenario add up to; memory does not grow with their number."""

    __slots__ = (
        "rows",
        "sums",
        "bad_flags",
        "limit",
        "deferred",
        "seen",
        "far",
        "first_rows",
        "largest",
    )

    def __init__(self, limit: int | None, deferred: bool) -> None:
        self.rows = 0
        self.sums = [0, 0, 0, 0, 0, 0]
        self.bad_flags: set[int] = set()
        self.limit = limit  # the scenario's `trials`, when known while reading the rows
        self.deferred = deferred  # rows read before the file's `scenarios`
        self.seen = bytearray(128)  # bit n set: a row with trial number n was read
        self.far: set[int] = set()  # trial numbers far beyond the rows read so far
        self.first_rows: list[int] = []  # deferred only: where to point if the name is unknown
        self.largest: list[tuple[int, int]] = []  # deferred only: heap of (n, row) by largest n

    def mark(self, n: int) -> bool:
        """Record trial number n; False if it was recorded before."""
        byte = n >> 3
        seen = self.seen
        if byte >= len(seen):
            # Grow the bit set with the rows read, so that a stray huge n cannot claim memory.
            if byte > 8 * self.rows + 131072:
                if n in self.far:
                    return False
                self.far.add(n)
                return True
            seen.extend(bytes(max(byte + 1, 2 * len(seen)) - len(seen)))
        bit = 1 << (n & 7)
        if seen[byte] & bit or (self.far and n in self.far):
            return False
        seen[byte] |= bit
        return True

    def remember_largest(self, n: int, row: int) -> None:
        if len(self.largest) <= MAX_ROW_PROBLEMS:
            heapq.heappush(self.largest, (n, row))
        elif n > self.largest[0][0]:
            heapq.heapreplace(self.largest, (n, row))


class _Scan:
    """One pass over the parser's events: builds the header, tallies the trial rows."""

    def __init__(self, report: _Report) -> None:
        self.report = report
        self.header: dict[str, Any] = {}
        self.where = ""
        self.rows_read = 0
        self.trials_seen = False
        self.tallies: dict[str, _Tally] = {}
        self.pending = 0
        # characters of the header's strings and keys: the header is held in memory
        self.header_chars = 0
        # scenario id -> its `trials` (None if unusable), when `scenarios` came before `trials`
        self.index: dict[str, int | None] | None = None

    # top level

    def read_file(self, events: Iterator[tuple[str, Any]]) -> None:
        event, value = next(events)
        if event != "start_map":
            kind = "a list" if event == "start_array" else _show(value)
            raise _NotAnObject(
                f"The file holds {kind}, but a results file must be one JSON object."
            )
        for event, key in events:
            if event == "end_map":
                break
            self.where = key
            event, value = next(events)
            if key in self.header or (key == "trials" and self.trials_seen):
                self.report.add(MALFORMED, key, f"The key {_show(key)} appears twice.")
                self._skip(events, event)
            elif key == "trials":
                self._read_trials(events, event, value)
            else:
                self._note_text(key, key, header=True)
                self.header[key] = self._build(events, event, value, key, header=True)
                if key == "scenarios" and not self.trials_seen:
                    self.index = _scenario_index(self.header[key])
        self.where = ""
        for _ in events:  # lets the parser notice anything after the object
            pass

    def _read_trials(self, events: Iterator[tuple[str, Any]], event: str, value: Any) -> None:
        self.trials_seen = True
        if event != "start_array":
            value = self._build(events, event, value, "trials")
            self.report.wrong_type("trials", value, "a list of trial rows")
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
            self.report.add(
                TOO_LARGE,
                path,
                f"{_capital(_label(path))} is {len(value)} characters long; at most "
                f"{limits.RESULTS_TEXT_MAX_CHARS} are allowed (docs/limits.md).",
            )
        if header:
            self.header_chars += len(value)
            if self.header_chars > limits.RESULTS_HEADER_MAX_CHARS:
                raise _TooLarge(
                    path,
                    "The file's fields outside its trial rows hold more than "
                    f"{limits.RESULTS_HEADER_MAX_CHARS} characters of text (docs/limits.md).",
                )

    def _build(
        self,
        events: Iterator[tuple[str, Any]],
        event: str,
        value: Any,
        path: str,
        header: bool = False,
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
                self.where = _join(paths[-1], value)
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
                child_path = _join(paths[-1], key)
                if key in parent:
                    self.report.add(MALFORMED, child_path, f"The key {_show(key)} appears twice.")
                parent[key] = child
            else:
                child_path = f"{paths[-1]}[{len(parent)}]"
                parent.append(child)
            if type(child) is str:
                self._note_text(child, child_path, header=header)
            if event == "start_map" or event == "start_array":
                if len(stack) >= MAX_DEPTH:
                    raise _TooDeep(child_path)
                stack.append(child)
                paths.append(child_path)
                keys.append(None)
                self.where = child_path
        return root

    def _skip(self, events: Iterator[tuple[str, Any]], event: str) -> None:
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

    def _read_rows(self, events: Iterator[tuple[str, Any]]) -> None:
        check_row = self._check_row
        build = self._build
        report = self.report
        k = -1
        for event, value in events:
            if event == "end_array":
                break
            k += 1
            self.rows_read = k
            if k >= limits.TRIAL_ROWS_MAX:
                raise _TooLarge(
                    f"trials[{k}]",
                    f"The file has more than {limits.TRIAL_ROWS_MAX} trial rows, the most one "
                    "run may have (docs/limits.md).",
                    TOO_MANY_TRIALS,
                )
            if event != "start_map":
                value = build(events, event, value, f"trials[{k}]")
                report.row(TYPE, f"trials[{k}]", f"Trial row {k} is {_show(value)}, not an object.")
                continue
            row: dict[str, Any] = {}
            key = None
            for event, value in events:
                if event == "map_key":
                    key = value
                    continue
                if event == "end_map":
                    break
                if event == "start_map" or event == "start_array":
                    value = build(events, event, value, f"trials[{k}].{key}")
                if key in row:
                    report.row(
                        MALFORMED, f"trials[{k}].{key}", f"The key {_show(key)} appears twice."
                    )
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
        tally = self._count_row(name, k)
        if tally is None:
            return
        sums = tally.sums
        sums[0] += a
        sums[1] += m
        sums[2] += r
        sums[3] += lw
        sums[4] += c
        sums[5] += w
        self._note_number(tally, n, k)

    def _check_row_slowly(self, row: dict[str, Any], k: int) -> None:
        report = self.report
        prefix = f"trials[{k}]"
        for key in row:
            if key not in _ROW_KEYS and not key.startswith("x-"):
                report.row(UNKNOWN_KEY, f"{prefix}.{key}", _unknown_key_message(key, "a trial row"))
            elif type(row[key]) is str and len(row[key]) > limits.RESULTS_TEXT_MAX_CHARS:
                report.row(
                    TOO_LARGE,
                    f"{prefix}.{key}",
                    f"{prefix}.{key} is {len(row[key])} characters long; at most "
                    f"{limits.RESULTS_TEXT_MAX_CHARS} are allowed (docs/limits.md).",
                )
        for key in _ROW_REQUIRED:
            if key not in row:
                report.row(MISSING, f"{prefix}.{key}", f"Trial row {k} has no {key}.")
        name = row.get("scenario")
        if "scenario" in row and type(name) is not str:
            report.row(
                TYPE,
                f"{prefix}.scenario",
                f"{prefix}.scenario must be a scenario id, not {_show(name)}.",
            )
        n = row.get("n")
        if "n" in row and type(n) is not int:
            report.row(TYPE, f"{prefix}.n", f"{prefix}.n must be a whole number, not {_show(n)}.")
        for flag in _FLAG_NAMES:
            if flag in row and type(row[flag]) is not bool:
                report.row(
                    TYPE,
                    f"{prefix}.{flag}",
                    f"{prefix}.{flag} must be true or false, not {_show(row[flag])}.",
                )
        if "latency_us" in row:
            _check_latency(row["latency_us"], f"{prefix}.latency_us", report)
        tally = self._count_row(name, k) if type(name) is str else None
        if tally is None:
            return
        for index, flag in enumerate(_FLAG_NAMES):
            value = row.get(flag)
            if type(value) is bool:
                tally.sums[index] += value
            else:
                tally.bad_flags.add(index)
        if type(n) is int:
            self._note_number(tally, n, k)

    def _count_row(self, name: str, k: int) -> _Tally | None:
        """The tally that row k counts in; None if its scenario is unknown (and reported)."""
        tally = self.tallies.get(name)
        if tally is None:
            tally = self._new_tally(name, k)
            if tally is None:
                return None
        tally.rows += 1
        if tally.deferred and len(tally.first_rows) <= MAX_ROW_PROBLEMS:
            tally.first_rows.append(k)
        return tally

    def _new_tally(self, name: str, k: int) -> _Tally | None:
        """A tally for a scenario first named by row k; None (and a problem) if there is none."""
        if self.index is not None:
            if name not in self.index:
                self.report.row(
                    TRIAL_UNKNOWN_SCENARIO,
                    f"trials[{k}].scenario",
                    _unknown_scenario_message(k, name),
                )
                return None
            tally = _Tally(self.index[name], deferred=False)
        elif self.pending >= MAX_PENDING_SCENARIOS:
            message = (
                f"{_unknown_scenario_message(k, name)} More than {MAX_PENDING_SCENARIOS} "
                "different scenarios are named before the file's scenarios list."
            )
            self.report.row(TRIAL_UNKNOWN_SCENARIO, f"trials[{k}].scenario", message)
            return None
        else:
            self.pending += 1
            tally = _Tally(None, deferred=True)
        self.tallies[name] = tally
        return tally

    def _note_number(self, tally: _Tally, n: int, k: int) -> None:
        if n < 1 or (tally.limit is not None and n > tally.limit):
            self.report.row(INVALID, f"trials[{k}].n", _number_range_message(k, n, tally.limit))
            return
        if tally.deferred:
            tally.remember_largest(n, k)
        if not tally.mark(n):
            self.report.row(
                TRIAL_REPEATED,
                f"trials[{k}].n",
                f"Trial row {k} repeats trial number {n} of its scenario.",
            )

    # after the pass

    def finish(self) -> None:
        """Check the rows against the scenarios, now that both have been read."""
        scenarios = self.header.get("scenarios")
        if not isinstance(scenarios, list) or self.rows_read == 0:
            return
        known: set[str] = set()
        for i, scenario in enumerate(scenarios):
            if not isinstance(scenario, dict):
                continue
            name = scenario.get("id")
            if type(name) is not str or name in known:
                continue
            known.add(name)
            self._check_scenario_rows(f"scenarios[{i}]", scenario, self.tallies.get(name))
        for name, tally in self.tallies.items():
            if name not in known:
                self._report_unknown_rows(name, tally)

    def _check_scenario_rows(
        self, path: str, scenario: dict[str, Any], tally: _Tally | None
    ) -> None:
        trials = scenario.get("trials")
        rows = tally.rows if tally else 0
        if _is_count(trials):
            if tally and tally.deferred:
                self._report_numbers_beyond(tally, trials)
            if rows != trials:
                self.report.add(
                    TRIAL_COUNT,
                    f"{path}.trials",
                    f"The file has {rows} trial rows for scenario "
                    f"{_show(scenario['id'])}, but its trials is {trials}.",
                )
        if tally is None:  # no rows at all: the count above says it all
            return
        for index, (flag, counter) in enumerate(TRIAL_FLAGS):
            stated = scenario.get(counter)
            if not _is_count(stated) or index in tally.bad_flags:
                continue
            if tally.sums[index] != stated:
                self.report.add(
                    TRIAL_COUNTER_MISMATCH,
                    f"{path}.{counter}",
                    f"{tally.sums[index]} trial rows of scenario "
                    f"{_show(scenario['id'])} have {flag} true, but its {counter} "
                    f"is {stated}.",
                )

    def _report_numbers_beyond(self, tally: _Tally, trials: int) -> None:
        beyond = sorted((k, n) for n, k in tally.largest if n > trials)
        for k, n in beyond:
            self.report.row(INVALID, f"trials[{k}].n", _number_range_message(k, n, trials))
        if len(tally.largest) > MAX_ROW_PROBLEMS and tally.largest[0][0] > trials:
            self.report.rows_left_out += 1  # there may be more such rows than were remembered

    def _report_unknown_rows(self, name: str, tally: _Tally) -> None:
        for k in tally.first_rows[:MAX_ROW_PROBLEMS]:
            self.report.row(
                TRIAL_UNKNOWN_SCENARIO, f"trials[{k}].scenario", _unknown_scenario_message(k, name)
            )
        self.report.rows_left_out += max(0, tally.rows - len(tally.first_rows[:MAX_ROW_PROBLEMS]))


def _scenario_index(scenarios: Any) -> dict[str, int | None] | None:
    if not isinstance(scenarios, list):
        return None
    index: dict[str, int | None] = {}
    for scenario in scenarios:
        if isinstance(scenario, dict) and type(scenario.get("id")) is str:
            trials = scenario.get("trials")
            index.setdefault(scenario["id"], trials if _is_count(trials) else None)
    return index


def _parsed_run(scan: _Scan) -> ParsedRun:
    header = scan.header
    scenarios = header.get("scenarios")
    scenarios = [s for s in scenarios if isinstance(s, dict)] if isinstance(scenarios, list) else []
    trial_counts: dict[str, int] = {}
    for scenario in scenarios:
        name = scenario.get("id")
        if type(name) is str and name not in trial_counts:
            tally = scan.tallies.get(name)
            trial_counts[name] = tally.rows if tally else 0
    claims = header.get("claims")
    claims = (
        list(dict.fromkeys(c for c in claims if type(c) is str)) if isinstance(claims, list) else []
    )
    return ParsedRun(
        header=header,
        run_id=_text_or_empty(header.get("run_id")),
        case=_text_or_empty(header.get("case")),
        claims=claims,
        scenarios=scenarios,
        trial_counts=trial_counts,
        has_trials=scan.rows_read > 0,
    )


# --- the header rules -------------------------------------------------------------------------

Check = Callable[[Any, str, _Report], None]


@dataclass(frozen=True)
class _Field:
    check: Check
    required: bool = True


def _object(what: str, spec: dict[str, _Field], then: Check | None = None) -> Check:
    """An object with exactly these fields (plus `x-` extensions)."""

    def check(value: Any, path: str, report: _Report) -> None:
        if not isinstance(value, dict):
            report.wrong_type(path, value, f"an object ({what})")
            return
        for key in value:
            if key not in spec and not key.startswith("x-"):
                report.add(UNKNOWN_KEY, _join(path, key), _unknown_key_message(key, what))
        for key, field in spec.items():
            if key in value:
                field.check(value[key], _join(path, key), report)
            elif field.required:
                report.add(MISSING, _join(path, key), f"{_capital(_label(path))} has no {key}.")
        if then is not None:
            then(value, path, report)

    return check


def _list(item: Check, *, at_least: int = 0, then: Check | None = None) -> Check:
    def check(value: Any, path: str, report: _Report) -> None:
        if not isinstance(value, list):
            report.wrong_type(path, value, "a list")
            return
        if len(value) < at_least:
            report.add(INVALID, path, f"{_label(path)} must hold at least {at_least} entry.")
        for i, entry in enumerate(value):
            item(entry, f"{path}[{i}]", report)
        if then is not None:
            then(value, path, report)

    return check


def _text(accept: Callable[[str], bool] | None = None, rule: str = "") -> Check:
    def check(value: Any, path: str, report: _Report) -> None:
        if not isinstance(value, str):
            report.wrong_type(path, value, "a string")
        elif accept is not None and not accept(value):
            report.add(INVALID, path, f"{_label(path)} is {_show(value)}; it must be {rule}.")

    return check


def _has_text(value: str) -> bool:
    return bool(value.strip())


def _matching(pattern: re.Pattern[str], rule: str) -> Check:
    return _text(lambda value: pattern.fullmatch(value) is not None, rule)


def _one_of(choices: tuple[str, ...]) -> Check:
    return _text(lambda value: value in choices, "one of " + ", ".join(choices))


def _count(value: Any, path: str, report: _Report) -> None:
    if type(value) is not int:
        report.wrong_type(path, value, "a whole number (0 or more)")
    elif value < 0:
        report.add(INVALID, path, f"{_label(path)} is {value}; it must be 0 or more.")


def _amount(value: Any, path: str, report: _Report) -> None:
    if type(value) is not int and type(value) is not float:
        report.wrong_type(path, value, "a number")
    elif value < 0:
        report.add(INVALID, path, f"{_label(path)} is {value}; it must be 0 or more.")


def _check_latency(value: Any, path: str, report: _Report) -> None:
    if type(value) is not int and type(value) is not float:
        report.row(TYPE, path, f"{path} must be a number of microseconds, not {_show(value)}.")
    elif value < 0:
        report.row(INVALID, path, f"{path} is {value}; it must be 0 or more.")


def _timestamp(value: Any, path: str, report: _Report) -> None:
    if not isinstance(value, str):
        report.wrong_type(path, value, "an RFC 3339 timestamp string")
    elif _parse_timestamp(value) is None:
        report.add(
            INVALID,
            path,
            f"{_label(path)} is {_show(value)}; it must be an RFC 3339 "
            "timestamp with a zone, e.g. 2026-10-21T09:14:03Z.",
        )


def _setting(value: Any, path: str, report: _Report) -> None:
    if not isinstance(value, str):
        report.wrong_type(path, value, 'the string "lab"')
    elif value != "lab":
        report.add(
            SETTING_NOT_LAB,
            path,
            f'setting is {_show(value)}, but it must be "lab": imported results are lab '
            "observations of a reproduction and never become production figures.",
        )


def _backend(value: Any, path: str, report: _Report) -> None:
    if not isinstance(value, str):
        report.wrong_type(path, value, "a string")
    elif value not in BACKENDS and not _OTHER_BACKEND.fullmatch(value):
        report.add(
            INVALID,
            path,
            f"{_label(path)} is {_show(value)}; it must be mooncake, nixl, mori or other:<name>.",
        )


def _mitigations(value: Any, path: str, report: _Report) -> None:
    if not isinstance(value, list):
        report.wrong_type(path, value, "a list")
        return
    seen: set[str] = set()
    for j, mitigation in enumerate(value):
        item = f"{path}[{j}]"
        if not isinstance(mitigation, str):
            report.wrong_type(item, mitigation, "a string")
        elif mitigation not in MITIGATIONS:
            report.add(
                INVALID,
                item,
                f"{_label(item)} is {_show(mitigation)}; it must be one of "
                + ", ".join(MITIGATIONS)
                + ".",
            )
        elif mitigation in seen:
            report.add(
                INVALID,
                item,
                f"The mitigation {_show(mitigation)} is listed twice; mitigations are a set.",
            )
        else:
            seen.add(mitigation)


def _scenario_consistency(scenario: dict[str, Any], path: str, report: _Report) -> None:
    for smaller, larger in COUNTER_ORDER:
        low, high = scenario.get(smaller), scenario.get(larger)
        if _is_count(low) and _is_count(high) and low > high:
            report.add(
                COUNTER_INCONSISTENT,
                f"{path}.{smaller}",
                f"{smaller} is {low}, more than {larger} ({high}).",
            )
    outcome = scenario.get("outcome")
    mismatches, wrong = scenario.get("checksum_mismatches"), scenario.get("wrong_outputs")
    if not (_is_count(mismatches) and _is_count(wrong)):
        return
    stale = mismatches + wrong
    if outcome == "reproduced" and stale == 0:
        report.add(
            OUTCOME_INCONSISTENT,
            f"{path}.outcome",
            'outcome is "reproduced", but checksum_mismatches and wrong_outputs are 0.',
        )
    elif outcome == "not_reproduced" and stale > 0:
        report.add(
            OUTCOME_INCONSISTENT,
            f"{path}.outcome",
            f'outcome is "not_reproduced", but checksum_mismatches + wrong_outputs is {stale}.',
        )


def _scenarios_within_limits(scenarios: list[Any], path: str, report: _Report) -> None:
    _unique_scenario_ids(scenarios, path, report)
    total = sum(
        s["trials"] for s in scenarios if isinstance(s, dict) and _is_count(s.get("trials"))
    )
    if total > limits.TRIAL_ROWS_MAX:
        report.add(
            TOO_MANY_TRIALS,
            path,
            f"The scenarios' trials add up to {total}; one run may have at most "
            f"{limits.TRIAL_ROWS_MAX} (docs/limits.md).",
        )


def _unique_scenario_ids(scenarios: list[Any], path: str, report: _Report) -> None:
    first: dict[str, int] = {}
    for i, scenario in enumerate(scenarios):
        if not isinstance(scenario, dict) or type(scenario.get("id")) is not str:
            continue
        name = scenario["id"]
        if name in first:
            report.add(
                DUPLICATE_SCENARIO,
                f"{path}[{i}].id",
                f"Scenario id {_show(name)} is already used by {path}[{first[name]}].",
            )
        else:
            first[name] = i


def _time_order(run: dict[str, Any], path: str, report: _Report) -> None:
    started = _parse_timestamp(run.get("started_at"))
    finished = _parse_timestamp(run.get("finished_at"))
    if started is not None and finished is not None and started > finished:
        report.add(
            TIME_ORDER,
            "finished_at",
            f"finished_at ({run['finished_at']}) is before started_at ({run['started_at']}).",
        )


_HARNESS = _object(
    "the harness",
    {
        "name": _Field(_text(_has_text, "a non-empty name")),
        "version": _Field(_text(_has_text, "a non-empty version")),
        "commit": _Field(_matching(_COMMIT, "a hexadecimal commit id (4 to 64 hex digits)"), False),
        "config_sha256": _Field(_matching(_SHA256, "a SHA-256 of 64 hex digits"), False),
    },
)
_GPU = _object(
    "a GPU",
    {
        "model": _Field(_text(_has_text, "a non-empty model name")),
        "memory_gib": _Field(_amount, False),
        "role": _Field(_text(), False),
    },
)
_FRAMEWORK = _object(
    "the framework",
    {
        "name": _Field(_text(), False),
        "version": _Field(_text(), False),
        "commit": _Field(_matching(_COMMIT, "a hexadecimal commit id (4 to 64 hex digits)"), False),
    },
)
_ENVIRONMENT = _object(
    "the environment",
    {
        "host": _Field(_text(), False),
        "gpus": _Field(_list(_GPU, at_least=1)),
        "driver": _Field(_text(), False),
        "cuda": _Field(_text(), False),
        "framework": _Field(_FRAMEWORK, False),
    },
)
_SCENARIO = _object(
    "a scenario",
    {
        "id": _Field(
            _matching(
                _SCENARIO_ID,
                "lower-case letters, digits, '.', '_' or '-', "
                "starting with a letter or digit, at most 64 characters",
            )
        ),
        "backend": _Field(_backend),
        "mitigations": _Field(_mitigations),
        "free_list_order": _Field(_one_of(FREE_LIST_ORDERS)),
        "write_delay_us": _Field(_count),
        "seed": _Field(_count),
        **{counter: _Field(_count) for counter in COUNTERS},
        "outcome": _Field(_one_of(OUTCOMES)),
    },
    then=_scenario_consistency,
)
_ARTIFACT = _object(
    "an artifact",
    {
        "name": _Field(_text(_has_text, "a non-empty name")),
        "sha256": _Field(_matching(_SHA256, "a SHA-256 of 64 hex digits")),
        "bytes": _Field(_count, False),
    },
)
_RUN = _object(
    "a results file",
    {
        "format": _Field(_text()),
        "run_id": _Field(
            _matching(
                _RUN_ID,
                "letters, digits, '.', '_' or '-', starting with a "
                "letter or digit, at most 120 characters",
            )
        ),
        "case": _Field(
            _matching(
                _CASE,
                "a case key such as CP22-003 (upper-case letters and "
                "digits in groups joined by '-', at most 40 characters)",
            )
        ),
        "claims": _Field(_list(_matching(_CLAIM, "a claim id such as CLM-CP22-003-B"))),
        "setting": _Field(_setting),
        "harness": _Field(_HARNESS),
        "started_at": _Field(_timestamp),
        "finished_at": _Field(_timestamp),
        "environment": _Field(_ENVIRONMENT),
        "scenarios": _Field(_list(_SCENARIO, at_least=1, then=_scenarios_within_limits)),
        "artifacts": _Field(_list(_ARTIFACT), False),
        "notes": _Field(_text(), False),
    },
    then=_time_order,
)


def _check_header(header: dict[str, Any], report: _Report) -> None:
    _RUN(header, "", report)


# --- small helpers ----------------------------------------------------------------------------


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _parse_timestamp(value: Any) -> datetime | None:
    """An aware datetime for an RFC 3339 timestamp with a zone, else None."""
    if not isinstance(value, str):
        return None
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        return None
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    zone = "+00:00" if match["zone"] in ("Z", "z") else match["zone"]
    try:
        return datetime.fromisoformat(f"{match['date']}T{match['time']}.{fraction}{zone}")
    except ValueError:
        return None


def _format_problem(value: Any) -> Problem:
    readable = ", ".join(SUPPORTED_FORMATS)
    return Problem(
        FORMAT_UNSUPPORTED,
        f"The file's format is {_show(value)}; this importer reads only {readable}.",
        "format",
    )


def _json_error_message(error: Exception, source: _CountingReader) -> str:
    if not source.saw_content:
        return "The file is empty."
    text = str(error)
    if text.startswith(("b'", 'b"')):  # some yajl messages arrive as the repr of bytes
        text = ast.literal_eval(text).decode("utf-8", "replace")
    lines = text.strip().splitlines() or [""]
    reason = lines[0].split(":", 1)[-1].strip().rstrip(".")
    if "premature EOF" in reason:
        return f"The JSON ends early (truncated?) after {source.offset} bytes."
    near = lines[1].strip() if len(lines) > 1 else ""
    where = f"within the first {source.offset} bytes" + (f", near {near[:60]!r}" if near else "")
    if reason == "trailing garbage":
        return f"There is more data after the JSON object ({where})."
    return f"The file is not valid JSON: {reason} ({where})."


def _unknown_key_message(key: str, what: str) -> str:
    return (
        f"{_show(key)} is not a field of {what} in {FORMAT}; only keys beginning with x- may "
        "be added."
    )


def _unknown_scenario_message(k: int, name: str) -> str:
    return f"Trial row {k} names scenario {_show(name)}, which is not in the file's scenarios."


def _number_range_message(k: int, n: int, trials: int | None) -> str:
    upper = "its scenario's trials" if trials is None else str(trials)
    return f"Trial row {k} has trial number n = {n}; it must run from 1 to {upper}."


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _label(path: str) -> str:
    return path or "the file"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _show(value: Any) -> str:
    """A value as it reads in JSON, shortened."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 80 else shown[:77] + '..."'
