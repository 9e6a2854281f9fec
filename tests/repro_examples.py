"""The shared sample results files (../shared/formats/examples/) and what their README says
each must do. fixtures/repro/ holds byte-for-byte copies, so the tests need nothing outside
the repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "repro"
VALID_SMALL = FIXTURES / "valid" / "valid-small.json"
SHARED_EXAMPLES = ROOT.parent / "shared" / "formats" / "examples"


@dataclass(frozen=True)
class Example:
    name: str  # the file's name in the shared examples folder
    path: Path  # its copy in fixtures/repro/
    accepted: bool
    run_id: str
    scenarios: int
    trial_rows: int
    problems: tuple[tuple[str, str], ...] = ()


EXAMPLES = (
    # accepted: 2 scenarios with 40 trial rows each, one reproduced, one not (deferred release)
    Example(
        "valid-small.json",
        FIXTURES / "valid" / "valid-small.json",
        True,
        "pd-abort-h200x2-20261021-0007",
        2,
        80,
    ),
    # accepted: 3 scenarios, counters only, no trial rows
    Example(
        "valid-no-trials.json",
        FIXTURES / "valid" / "valid-no-trials.json",
        True,
        "pd-abort-h200x2-20261022-0001",
        3,
        0,
    ),
    # refused: scenarios[0].late_writes_landed disagrees with the trial rows
    Example(
        "invalid-counter-mismatch.json",
        FIXTURES / "invalid" / "sample-counter-mismatch.json",
        False,
        "pd-abort-h200x2-20261021-0008",
        2,
        80,
        (("repro.trial_counter_mismatch", "scenarios[0].late_writes_landed"),),
    ),
    # refused: setting is not lab, and production_responses is an unknown key
    Example(
        "invalid-production-figure.json",
        FIXTURES / "invalid" / "sample-production-figure.json",
        False,
        "pd-abort-h200x2-20261022-0002",
        3,
        0,
        (
            ("repro.setting_not_lab", "setting"),
            ("repro.unknown_key", "production_responses"),
        ),
    ),
)
