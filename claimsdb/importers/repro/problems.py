"""A problem of a results file, and the log that collects a file's problems."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claimsdb.codes import ReproCode

from . import messages
from .format import FORMAT

# Enough to show what is wrong with a broken file without burying the report.
MAX_ROW_PROBLEMS = 100
MAX_OTHER_PROBLEMS = 100


@dataclass(frozen=True)
class Problem:
    """One reason to refuse a file: a stable `code`, a sentence, and the JSON path it concerns."""

    code: str
    message: str
    path: str


class ProblemLog:
    """Collects a file's problems, keeping a broken file's report readable: at most
    MAX_OTHER_PROBLEMS outside the trial rows and MAX_ROW_PROBLEMS in them, then a count."""

    def __init__(self, format: str = FORMAT) -> None:
        self.format = format  # the format the file declares, which words its unknown keys
        self.other: list[Problem] = []
        self.rows: list[Problem] = []
        self.other_left_out = 0
        self.rows_left_out = 0
        self.added = 0  # every problem, listed or left out

    def add(self, code: str, path: str, message: str) -> None:
        self.added += 1
        if len(self.other) < MAX_OTHER_PROBLEMS:
            self.other.append(Problem(code, message, path))
        else:
            self.other_left_out += 1

    def row(self, code: str, path: str, message: str) -> None:
        self.added += 1
        if len(self.rows) < MAX_ROW_PROBLEMS:
            self.rows.append(Problem(code, message, path))
        else:
            self.rows_left_out += 1

    def wrong_type(self, path: str, value: Any, expected: str) -> None:
        self.add(ReproCode.TYPE, path, messages.wrong_type(path, value, expected))

    def problems(self) -> list[Problem]:
        problems = self.other + self.rows
        if self.other_left_out:
            problems.append(_too_many("", self.other_left_out, "outside the trial rows"))
        if self.rows_left_out:
            problems.append(_too_many("trials", self.rows_left_out, "in the trial rows"))
        return problems


def _too_many(path: str, left_out: int, where: str) -> Problem:
    return Problem(ReproCode.TOO_MANY_PROBLEMS, messages.too_many(left_out, where), path)
