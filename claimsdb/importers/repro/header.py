"""A results file's header (everything but its trial rows), described in the vocabulary the
record formats are written in (``claimsdb.fieldspec.Field``, records/schema.py), with the
checks across its fields.

``RUN`` is the whole header of a ``repro-results/1`` file as docs/repro-results-1.md defines
it, ``RUN_1_1`` that of a ``repro-results/1.1`` file (the same, plus the backends' versions);
``field_check.check`` walks them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from packageurl import PackageURL

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
    FORMAT_1_1,
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


# --- repro-results/1.1: the backends' versions ------------------------------------------------


def package_url(value: Any, path: str, log: ProblemLog, version: Any = None) -> None:
    """``value`` (at ``path``) is a Package URL; if it names a version, it is ``version``."""
    if not isinstance(value, str) or not value.strip() or len(value) > PURL_MAX_LENGTH:
        return  # its field reported it
    try:
        purl = PackageURL.from_string(value)
    except ValueError as error:
        log.add(
            ReproCode.PURL_INVALID,
            path,
            f"{path} is {show(value)}, which is not a Package URL ({str(error).rstrip('.')}); "
            "it must read like "
            "pkg:github/kvcache-ai/mooncake@v0.3.7.",
        )
        return
    if purl.version and isinstance(version, str) and purl.version != version:
        log.add(
            ReproCode.PURL_VERSION,
            path,
            f"{path} names version {show(purl.version)}, but the version stated beside it is "
            f"{show(version)}; state one version.",
        )


def scenario_backend_purl(scenario: dict[str, Any], path: str, log: ProblemLog) -> None:
    if "backend_purl" in scenario:
        package_url(
            scenario["backend_purl"],
            f"{path}.backend_purl",
            log,
            scenario.get("backend_version"),
        )


def scenario_1_1(scenario: dict[str, Any], path: str, log: ProblemLog) -> None:
    scenario_consistency(scenario, path, log)
    scenario_backend_purl(scenario, path, log)


def backend_entry_purl(entry: dict[str, Any], path: str, log: ProblemLog) -> None:
    if "purl" in entry:
        package_url(entry["purl"], f"{path}.purl", log, entry.get("version"))


def backends_used(run: dict[str, Any], path: str, log: ProblemLog) -> None:
    """Each backend of ``environment.backends`` is named once, and by some scenario."""
    environment = run.get("environment")
    entries = environment.get("backends") if isinstance(environment, dict) else None
    if not isinstance(entries, list):
        return
    scenarios = run.get("scenarios")
    used = {
        s.get("backend")
        for s in (scenarios if isinstance(scenarios, list) else [])
        if isinstance(s, dict)
    }
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        name = entry.get("backend") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not re.fullmatch(BACKEND_PATTERN, name):
            continue  # its field reported it
        where = f"environment.backends[{i}].backend"
        if name in first:
            log.add(
                ReproCode.BACKEND_REPEATED,
                where,
                f"Backend {show(name)} is already described by environment.backends"
                f"[{first[name]}]; a scenario that runs another version states its own "
                "backend_version.",
            )
            continue
        first[name] = i
        if name not in used:
            log.add(
                ReproCode.BACKEND_UNUSED,
                where,
                f"Backend {show(name)} is described in environment.backends, but no scenario "
                "runs it (a misspelt name?).",
            )


def run_1_1(run: dict[str, Any], path: str, log: ProblemLog) -> None:
    time_order(run, path, log)
    backends_used(run, path, log)


# The lengths are those of ReproductionScenario's columns.
BACKEND_VERSION = _pattern(
    NON_BLANK_PATTERN,
    "a non-empty version, as the backend names it, of at most 200 characters",
    200,
)
PURL_MAX_LENGTH = 500
PURL = _pattern(
    NON_BLANK_PATTERN,
    f"a Package URL (pkg:type/namespace/name@version) of at most {PURL_MAX_LENGTH} characters",
    PURL_MAX_LENGTH,
)
BACKEND_BUILD = _object(
    "a backend's build",
    cross_check=backend_entry_purl,
    backend=_pattern(BACKEND_PATTERN, ", ".join(BACKENDS) + " or other:<name>"),
    version=BACKEND_VERSION,
    commit=_optional(COMMIT),
    purl=_optional(PURL),
)
SCENARIO_1_1 = replace(
    SCENARIO,
    cross_check=scenario_1_1,
    fields={
        **SCENARIO.fields,
        "backend_version": _optional(BACKEND_VERSION),
        "backend_commit": _optional(COMMIT),
        "backend_purl": _optional(PURL),
    },
)
ENVIRONMENT_1_1 = replace(
    ENVIRONMENT, fields={**ENVIRONMENT.fields, "backends": _optional(_list(BACKEND_BUILD))}
)
RUN_1_1 = replace(
    RUN,
    cross_check=run_1_1,
    fields={
        **RUN.fields,
        "environment": ENVIRONMENT_1_1,
        "scenarios": replace(RUN.fields["scenarios"], item=SCENARIO_1_1),
    },
)


def check_header(header: dict[str, Any], log: ProblemLog) -> None:
    field_check.check(RUN_1_1 if header.get("format") == FORMAT_1_1 else RUN, header, "", log)
