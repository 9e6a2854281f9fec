"""A results file's header (everything but its trial rows), described in the vocabulary the
record formats are written in (``claimsdb.fieldspec.Field``, records/schema.py), with the
checks across its fields.

``RUN`` is the whole header as docs/repro-results-1.md defines it; ``field_check.check`` walks
it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from claimsdb import choices, limits
from claimsdb.codes import ReproCode
from claimsdb.fieldspec import Field

from . import field_check
from .format import (
    BACKEND_PATTERN,
    BACKENDS,
    COMMIT_PATTERN,
    COUNTER_ORDER,
    COUNTERS,
    FREE_LIST_ORDERS,
    MITIGATIONS,
    NON_BLANK_PATTERN,
    OUTCOMES,
    RUN_ID_PATTERN,
    SCENARIO_ID_PATTERN,
    SHA256_PATTERN,
    is_count,
    parse_timestamp,
)
from .messages import show
from .problems import ProblemLog

# --- checks across fields ---------------------------------------------------------------------


def scenario_consistency(scenario: dict[str, Any], path: str, log: ProblemLog) -> None:
    for smaller, larger in COUNTER_ORDER:
        low, high = scenario.get(smaller), scenario.get(larger)
        if is_count(low) and is_count(high) and low > high:
            log.add(
                ReproCode.COUNTER_INCONSISTENT,
                f"{path}.{smaller}",
                f"{smaller} is {low}, more than {larger} ({high}).",
            )
    outcome = scenario.get("outcome")
    mismatches, wrong = scenario.get("checksum_mismatches"), scenario.get("wrong_outputs")
    if not (is_count(mismatches) and is_count(wrong)):
        return
    stale = mismatches + wrong
    if outcome == "reproduced" and stale == 0:
        log.add(
            ReproCode.OUTCOME_INCONSISTENT,
            f"{path}.outcome",
            'outcome is "reproduced", but checksum_mismatches and wrong_outputs are 0.',
        )
    elif outcome == "not_reproduced" and stale > 0:
        log.add(
            ReproCode.OUTCOME_INCONSISTENT,
            f"{path}.outcome",
            f'outcome is "not_reproduced", but checksum_mismatches + wrong_outputs is {stale}.',
        )


def scenarios_within_limits(scenarios: list[Any], path: str, log: ProblemLog) -> None:
    _unique_scenario_ids(scenarios, path, log)
    total = sum(s["trials"] for s in scenarios if isinstance(s, dict) and is_count(s.get("trials")))
    if total > limits.TRIAL_ROWS_MAX:
        log.add(
            ReproCode.TOO_MANY_TRIALS,
            path,
            f"The scenarios' trials add up to {total}; one run may have at most "
            f"{limits.TRIAL_ROWS_MAX} (docs/limits.md).",
        )


def _unique_scenario_ids(scenarios: list[Any], path: str, log: ProblemLog) -> None:
    first: dict[str, int] = {}
    for i, scenario in enumerate(scenarios):
        if not isinstance(scenario, dict) or type(scenario.get("id")) is not str:
            continue
        name = scenario["id"]
        if name in first:
            log.add(
                ReproCode.DUPLICATE_SCENARIO,
                f"{path}[{i}].id",
                f"Scenario id {show(name)} is already used by {path}[{first[name]}].",
            )
        else:
            first[name] = i


def time_order(run: dict[str, Any], path: str, log: ProblemLog) -> None:
    started = parse_timestamp(run.get("started_at"))
    finished = parse_timestamp(run.get("finished_at"))
    if started is not None and finished is not None and started > finished:
        log.add(
            ReproCode.TIME_ORDER,
            "finished_at",
            f"finished_at ({run['finished_at']}) is before started_at ({run['started_at']}).",
        )


# --- the fields -------------------------------------------------------------------------------

CrossCheck = Callable[[Any, str, ProblemLog], None]


def _object(description: str, cross_check: CrossCheck | None = None, **members: Field) -> Field:
    return Field("object", fields=members, description=description, cross_check=cross_check)


def _list(
    item: Field, *, min_items: int = 0, unique: str = "", cross_check: CrossCheck | None = None
) -> Field:
    return Field(
        "list",
        item=item,
        min_items=min_items,
        unique=unique,
        cross_check=cross_check,
        code=ReproCode.INVALID,
    )


def _pattern(regex: str, description: str, max_length: int | None = None) -> Field:
    return Field(
        "pattern",
        pattern=regex,
        description=description,
        max_length=max_length,
        code=ReproCode.INVALID,
    )


def _one_of(values: tuple[str, ...]) -> Field:
    return Field("enum", values=values, code=ReproCode.INVALID)


def _optional(spec: Field) -> Field:
    return replace(spec, optional=True)


TEXT = Field("str")
COUNT = Field("int", minimum=0, code=ReproCode.INVALID)
AMOUNT = Field("number", minimum=0, code=ReproCode.INVALID)
TIMESTAMP = Field(
    "timestamp",
    description="an RFC 3339 timestamp with a zone, e.g. 2026-10-21T09:14:03Z",
    code=ReproCode.INVALID,
)
COMMIT = _pattern(COMMIT_PATTERN, "a hexadecimal commit id (4 to 64 hex digits)")
SHA256 = _pattern(SHA256_PATTERN, "a SHA-256 of 64 hex digits")

HARNESS = _object(
    "the harness",
    name=_pattern(NON_BLANK_PATTERN, "a non-empty name"),
    version=_pattern(NON_BLANK_PATTERN, "a non-empty version"),
    commit=_optional(COMMIT),
    config_sha256=_optional(SHA256),
)
GPU = _object(
    "a GPU",
    model=_pattern(NON_BLANK_PATTERN, "a non-empty model name"),
    memory_gib=_optional(AMOUNT),
    role=_optional(TEXT),
)
FRAMEWORK = _object(
    "the framework",
    name=_optional(TEXT),
    version=_optional(TEXT),
    commit=_optional(COMMIT),
)
ENVIRONMENT = _object(
    "the environment",
    host=_optional(TEXT),
    gpus=_list(GPU, min_items=1),
    driver=_optional(TEXT),
    cuda=_optional(TEXT),
    framework=_optional(FRAMEWORK),
)
SCENARIO = _object(
    "a scenario",
    cross_check=scenario_consistency,
    id=_pattern(
        SCENARIO_ID_PATTERN,
        "lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, at "
        "most 64 characters",
    ),
    backend=_pattern(BACKEND_PATTERN, ", ".join(BACKENDS) + " or other:<name>"),
    mitigations=_list(_one_of(MITIGATIONS), unique="mitigation"),
    free_list_order=_one_of(FREE_LIST_ORDERS),
    write_delay_us=COUNT,
    seed=COUNT,
    **{counter: COUNT for counter in COUNTERS},
    outcome=_one_of(OUTCOMES),
)
ARTIFACT = _object(
    "an artifact",
    name=_pattern(NON_BLANK_PATTERN, "a non-empty name"),
    sha256=SHA256,
    bytes=_optional(COUNT),
)
RUN = _object(
    "a results file",
    cross_check=time_order,
    format=TEXT,
    run_id=_pattern(
        RUN_ID_PATTERN,
        "letters, digits, '.', '_' or '-', starting with a letter or digit, at most 120 characters",
    ),
    case=_pattern(
        choices.CASE_KEY_PATTERN,
        "a case key such as CP22-003 (upper-case letters and digits in groups joined by '-', "
        "at most 40 characters)",
        choices.KEY_MAX_LENGTH,
    ),
    claims=_list(_pattern(choices.CLAIM_ID_PATTERN, "a claim id such as CLM-CP22-003-B")),
    setting=Field(
        "enum",
        values=("lab",),
        description="imported results are lab observations of a reproduction and never "
        "become production figures",
        code=ReproCode.SETTING_NOT_LAB,
    ),
    harness=HARNESS,
    started_at=TIMESTAMP,
    finished_at=TIMESTAMP,
    environment=ENVIRONMENT,
    scenarios=_list(SCENARIO, min_items=1, cross_check=scenarios_within_limits),
    artifacts=_optional(_list(ARTIFACT)),
    notes=_optional(TEXT),
)


def check_header(header: dict[str, Any], log: ProblemLog) -> None:
    field_check.check(RUN, header, "", log)
