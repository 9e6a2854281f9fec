"""What the trial rows of each scenario add up to, and whether that agrees with the
scenario: the part of a file checked without keeping its rows.

A row counts in its scenario's tally (six flag sums and a bit set of the trial numbers
seen), then is forgotten; memory does not grow with the number of rows. Rows read before
the file's `scenarios` list are tallied under their scenario's name and checked once the
list has been read.
"""

from __future__ import annotations

import heapq
from typing import Any

from claimsdb.codes import ReproCode

from . import messages
from .format import TRIAL_FLAGS, is_count
from .messages import show
from .problems import MAX_ROW_PROBLEMS, ProblemLog

# Scenario names are remembered for rows read before the file's `scenarios` list; this bounds
# that memory when a broken file names a different scenario in every row.
MAX_PENDING_SCENARIOS = 10_000


class Tally:
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


class Tallies:
    """The tally of every scenario the rows name, and the checks of rows against scenarios."""

    def __init__(self, log: ProblemLog) -> None:
        self.log = log
        self.by_name: dict[str, Tally] = {}
        self.pending = 0
        # scenario id -> its `trials` (None if unusable), when `scenarios` came before `trials`
        self.index: dict[str, int | None] | None = None

    def know_scenarios(self, scenarios: Any) -> None:
        """The file's `scenarios`, read before its trial rows: rows are checked as they come."""
        if not isinstance(scenarios, list):
            return
        index: dict[str, int | None] = {}
        for scenario in scenarios:
            if isinstance(scenario, dict) and type(scenario.get("id")) is str:
                trials = scenario.get("trials")
                index.setdefault(scenario["id"], trials if is_count(trials) else None)
        self.index = index

    def rows_of(self, name: str) -> int:
        tally = self.by_name.get(name)
        return tally.rows if tally else 0

    # while reading the rows

    def count_row(self, name: str, k: int) -> Tally | None:
        """The tally that row k counts in; None if its scenario is unknown (and reported)."""
        tally = self.by_name.get(name)
        if tally is None:
            tally = self._new_tally(name, k)
            if tally is None:
                return None
        tally.rows += 1
        if tally.deferred and len(tally.first_rows) <= MAX_ROW_PROBLEMS:
            tally.first_rows.append(k)
        return tally

    def _new_tally(self, name: str, k: int) -> Tally | None:
        """A tally for a scenario first named by row k; None (and a problem) if there is none."""
        if self.index is not None:
            if name not in self.index:
                self.log.row(
                    ReproCode.TRIAL_UNKNOWN_SCENARIO,
                    f"trials[{k}].scenario",
                    messages.unknown_scenario(k, name),
                )
                return None
            tally = Tally(self.index[name], deferred=False)
        elif self.pending >= MAX_PENDING_SCENARIOS:
            message = (
                f"{messages.unknown_scenario(k, name)} More than {MAX_PENDING_SCENARIOS} "
                "different scenarios are named before the file's scenarios list."
            )
            self.log.row(ReproCode.TRIAL_UNKNOWN_SCENARIO, f"trials[{k}].scenario", message)
            return None
        else:
            self.pending += 1
            tally = Tally(None, deferred=True)
        self.by_name[name] = tally
        return tally

    def note_number(self, tally: Tally, n: int, k: int) -> None:
        if n < 1 or (tally.limit is not None and n > tally.limit):
            self.log.row(
                ReproCode.INVALID, f"trials[{k}].n", messages.number_range(k, n, tally.limit)
            )
            return
        if tally.deferred:
            tally.remember_largest(n, k)
        if not tally.mark(n):
            self.log.row(
                ReproCode.TRIAL_REPEATED,
                f"trials[{k}].n",
                f"Trial row {k} repeats trial number {n} of its scenario.",
            )

    # after the pass

    def check_against(self, scenarios: Any) -> None:
        """Check the rows against the file's scenarios, now that both have been read."""
        if not isinstance(scenarios, list):
            return
        known: set[str] = set()
        for i, scenario in enumerate(scenarios):
            if not isinstance(scenario, dict):
                continue
            name = scenario.get("id")
            if type(name) is not str or name in known:
                continue
            known.add(name)
            self._check_scenario_rows(f"scenarios[{i}]", scenario, self.by_name.get(name))
        for name, tally in self.by_name.items():
            if name not in known:
                self._report_unknown_rows(name, tally)

    def _check_scenario_rows(
        self, path: str, scenario: dict[str, Any], tally: Tally | None
    ) -> None:
        trials = scenario.get("trials")
        rows = tally.rows if tally else 0
        if is_count(trials):
            if tally and tally.deferred:
                self._report_numbers_beyond(tally, trials)
            if rows != trials:
                self.log.add(
                    ReproCode.TRIAL_COUNT,
                    f"{path}.trials",
                    f"The file has {rows} trial rows for scenario "
                    f"{show(scenario['id'])}, but its trials is {trials}.",
                )
        if tally is None:  # no rows at all: the count above says it all
            return
        for index, (flag, counter) in enumerate(TRIAL_FLAGS):
            stated = scenario.get(counter)
            if not is_count(stated) or index in tally.bad_flags:
                continue
            if tally.sums[index] != stated:
                self.log.add(
                    ReproCode.TRIAL_COUNTER_MISMATCH,
                    f"{path}.{counter}",
                    f"{tally.sums[index]} trial rows of scenario "
                    f"{show(scenario['id'])} have {flag} true, but its {counter} "
                    f"is {stated}.",
                )

    def _report_numbers_beyond(self, tally: Tally, trials: int) -> None:
        beyond = sorted((k, n) for n, k in tally.largest if n > trials)
        for k, n in beyond:
            self.log.row(ReproCode.INVALID, f"trials[{k}].n", messages.number_range(k, n, trials))
        if len(tally.largest) > MAX_ROW_PROBLEMS and tally.largest[0][0] > trials:
            self.log.rows_left_out += 1  # there may be more such rows than were remembered

    def _report_unknown_rows(self, name: str, tally: Tally) -> None:
        for k in tally.first_rows[:MAX_ROW_PROBLEMS]:
            self.log.row(
                ReproCode.TRIAL_UNKNOWN_SCENARIO,
                f"trials[{k}].scenario",
                messages.unknown_scenario(k, name),
            )
        self.log.rows_left_out += max(0, tally.rows - len(tally.first_rows[:MAX_ROW_PROBLEMS]))
