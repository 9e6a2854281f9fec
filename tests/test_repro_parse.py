"""The pure `repro-results/1` parser: driven by the sample files in fixtures/repro/.

No database and no Django. tests/conftest.py imports Django, so to run these without working
settings: `python -m pytest tests/test_repro_parse.py -p no:django --noconftest`.
"""

from __future__ import annotations

import copy
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimsdb.fieldspec import Field
from claimsdb.importers.repro import (
    FORMAT,
    MAX_ROW_PROBLEMS,
    SUPPORTED_FORMATS,
    Problem,
    ScenarioSummary,
    parse_results,
    trial_rows,
)
from claimsdb.importers.repro.header import RUN, RUN_1_1

pytestmark = []

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "repro"


def _is_sidecar(path: Path) -> bool:
    return path.name.endswith(".expected.json")


def _samples(folder: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / folder).glob("*.json") if not _is_sidecar(p))


def _sidecar(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.name[: -len(".json")] + ".expected.json").read_text())


def _parse_file(path: Path) -> tuple[Any, list[Problem]]:
    with path.open("rb") as stream:
        return parse_results(stream)


def _parse_bytes(data: bytes) -> tuple[Any, list[Problem]]:
    return parse_results(io.BytesIO(data))


def _pairs(problems: list[Problem]) -> set[tuple[str, str]]:
    return {(p.code, p.path) for p in problems}


# --- the sample folders -----------------------------------------------------------------------


def test_every_sample_has_its_sidecar():
    for folder in ("valid", "invalid"):
        samples = _samples(folder)
        assert samples, folder
        sidecars = {p.name for p in (FIXTURES / folder).glob("*.expected.json")}
        assert sidecars == {p.name[: -len(".json")] + ".expected.json" for p in samples}


@pytest.mark.parametrize("path", _samples("invalid"), ids=lambda p: p.stem)
def test_invalid_sample_is_refused_with_exactly_its_problems(path: Path):
    run, problems = _parse_file(path)

    expected = {(p["code"], p["path"]) for p in _sidecar(path)["problems"]}
    assert _pairs(problems) == expected
    assert len(problems) == len(_pairs(problems)), "a problem is reported twice"
    assert all(p.message and p.message[-1] == "." for p in problems)


@pytest.mark.parametrize("path", _samples("valid"), ids=lambda p: p.stem)
def test_valid_sample_is_accepted_with_its_summary(path: Path):
    run, problems = _parse_file(path)

    expected = _sidecar(path)
    assert problems == []
    assert len(run.scenarios) == expected["scenarios"]
    assert run.trial_counts == expected["trial_counts"]
    assert run.has_trials is expected["has_trials"]
    document = json.loads(path.read_text())
    assert run.header == {k: v for k, v in document.items() if k != "trials"}
    assert run.run_id == document["run_id"]
    assert run.case == document["case"]
    assert run.claims == document["claims"]
    assert [s.id for s in run.scenario_summaries] == list(run.trial_counts)
    builds = {
        s.id: {"version": s.backend_version, "commit": s.backend_commit, "purl": s.backend_purl}
        for s in run.scenario_summaries
    }
    if document["format"] == FORMAT:
        assert all(build == {"version": "", "commit": "", "purl": ""} for build in builds.values())
    else:
        assert builds == expected["backend_builds"]


# --- the header's fields --------------------------------------------------------------------


def _specs(spec: Field) -> list[Field]:
    children = [spec.item] if spec.item is not None else list(spec.fields.values())
    return [spec, *(inner for child in children for inner in _specs(child))]


def test_every_header_field_reports_a_repro_code():
    # a field left with the records' default code would report document.invalid_value
    for run in (RUN, RUN_1_1):
        checked = [spec for spec in _specs(run) if spec.kind not in ("object", "str")]
        assert checked and all(spec.code.startswith("repro.") for spec in checked)


_DROP = object()
# (where, what) -> every problem, word for word: the header's messages, which clients show
HEADER_MESSAGES = [
    (
        ("harness",),
        [],
        [("repro.type", "harness", "harness must be an object (the harness), not a list.")],
    ),
    (
        ("harness", "name"),
        "  ",
        [("repro.invalid", "harness.name", 'harness.name is "  "; it must be a non-empty name.')],
    ),
    (
        ("harness", "version"),
        _DROP,
        [("repro.missing", "harness.version", "Harness has no version.")],
    ),
    (
        ("environment", "gpus", 0, "vram"),
        80,
        [
            (
                "repro.unknown_key",
                "environment.gpus[0].vram",
                '"vram" is not a field of a GPU in repro-results/1; only keys beginning with x- '
                "may be added.",
            )
        ],
    ),
    (
        ("environment", "gpus"),
        [],
        [("repro.invalid", "environment.gpus", "environment.gpus must hold at least 1 entry.")],
    ),
    (
        ("environment", "gpus", 0, "memory_gib"),
        -1.5,
        [
            (
                "repro.invalid",
                "environment.gpus[0].memory_gib",
                "environment.gpus[0].memory_gib is -1.5; it must be 0 or more.",
            )
        ],
    ),
    (
        ("harness", "commit"),
        "xyz",
        [
            (
                "repro.invalid",
                "harness.commit",
                'harness.commit is "xyz"; it must be a hexadecimal commit id (4 to 64 hex digits).',
            )
        ],
    ),
    (
        ("case",),
        "A" * 41,
        [
            (
                "repro.invalid",
                "case",
                f'case is "{"A" * 41}"; it must be a case key such as CP22-003 (upper-case letters '
                "and digits in groups joined by '-', at most 40 characters).",
            )
        ],
    ),
    (
        ("claims", 0),
        "CLM-cp",
        [
            (
                "repro.invalid",
                "claims[0]",
                'claims[0] is "CLM-cp"; it must be a claim id such as CLM-CP22-003-B.',
            )
        ],
    ),
    (
        ("setting",),
        "production",
        [
            (
                "repro.setting_not_lab",
                "setting",
                'setting is "production", but it must be "lab": imported results are lab '
                "observations of a reproduction and never become production figures.",
            )
        ],
    ),
    (("setting",), 1, [("repro.type", "setting", 'setting must be the string "lab", not 1.')]),
    (
        ("scenarios", 1, "mitigations"),
        ["abort_ack", "abort_ack", "magic"],
        [
            (
                "repro.invalid",
                "scenarios[1].mitigations[1]",
                'The mitigation "abort_ack" is listed twice; mitigations are a set.',
            ),
            (
                "repro.invalid",
                "scenarios[1].mitigations[2]",
                'scenarios[1].mitigations[2] is "magic"; it must be one of abort_ack, '
                "deferred_release, generation_token, kv_checksum.",
            ),
        ],
    ),
    (
        ("scenarios", 0, "backend"),
        "other:",
        [
            (
                "repro.invalid",
                "scenarios[0].backend",
                'scenarios[0].backend is "other:"; it must be mooncake, nixl, mori or '
                "other:<name>.",
            )
        ],
    ),
    (
        ("scenarios", 0, "free_list_order"),
        "random",
        [
            (
                "repro.invalid",
                "scenarios[0].free_list_order",
                'scenarios[0].free_list_order is "random"; it must be one of fifo, lifo.',
            )
        ],
    ),
    (
        ("scenarios", 0, "seed"),
        1.0,
        [
            (
                "repro.type",
                "scenarios[0].seed",
                "scenarios[0].seed must be a whole number (0 or more), not 1.0.",
            )
        ],
    ),
    (
        ("scenarios", 0, "seed"),
        -2,
        [("repro.invalid", "scenarios[0].seed", "scenarios[0].seed is -2; it must be 0 or more.")],
    ),
    (
        ("started_at",),
        "2026-13-01T00:00:00Z",
        [
            (
                "repro.invalid",
                "started_at",
                'started_at is "2026-13-01T00:00:00Z"; it must be an RFC 3339 timestamp with a '
                "zone, e.g. 2026-10-21T09:14:03Z.",
            )
        ],
    ),
    (
        ("started_at",),
        5,
        [("repro.type", "started_at", "started_at must be an RFC 3339 timestamp string, not 5.")],
    ),
    (("notes",), None, [("repro.type", "notes", "notes must be a string, not null.")]),
    (
        ("Notes",),
        "x",
        [
            (
                "repro.unknown_key",
                "Notes",
                '"Notes" is not a field of a results file in repro-results/1; only keys beginning '
                "with x- may be added.",
            )
        ],
    ),
]


@pytest.mark.parametrize(("where", "value", "expected"), HEADER_MESSAGES)
def test_header_problems_read_word_for_word(where: tuple, value: Any, expected: list):
    document = _document("valid-small")
    parent = _container(document, where[:-1])
    if value is _DROP:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value

    run, problems = _parse_bytes(json.dumps(document).encode())

    assert [(p.code, p.path, p.message) for p in problems] == expected


# --- the run summary --------------------------------------------------------------------------


def test_summary_keeps_extensions_verbatim():
    run, problems = _parse_file(FIXTURES / "valid" / "trials-first-with-extensions.json")

    assert problems == []
    assert run.header["x-operator"] == {"name": "lab bot", "shifts": [1, 2]}
    assert run.header["environment"]["framework"]["x-patch"] is None
    summary = run.scenario_summaries[0]
    assert summary.extra == {"x-notes": ["first", {"k": 1.5}]}
    assert summary.mitigated is False
    assert run.scenario_summaries[1].mitigations == [
        "deferred_release",
        "abort_ack",
        "kv_checksum",
    ]
    assert run.started_at is not None and run.finished_at is not None
    assert run.started_at.utcoffset() is not None
    assert run.started_at < run.finished_at  # 11:14:03+02:00 is 09:14:03Z


def test_scenario_summary_from_dict_reads_every_field():
    document = json.loads((FIXTURES / "valid" / "valid-no-trials.json").read_text())
    scenario = dict(document["scenarios"][2], **{"x-rig": "b"})

    summary = ScenarioSummary.from_dict(scenario)

    assert summary.id == "mori-generation_token-fifo"
    assert summary.held_slots_peak == 62
    assert summary.mitigations == ["generation_token"]
    assert summary.extra == {"x-rig": "b"}


# --- the trial rows ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", _samples("valid"), ids=lambda p: p.stem)
def test_trial_rows_yields_exactly_the_rows(path: Path):
    document = json.loads(path.read_text())
    flags = (
        "aborted",
        "mid_transfer",
        "reused_in_flight",
        "late_write",
        "checksum_mismatch",
        "wrong_output",
    )

    with path.open("rb") as stream:
        rows = list(trial_rows(stream))

    assert rows == document.get("trials", [])
    assert all(type(row["n"]) is int for row in rows)
    assert all(type(row[flag]) is bool for row in rows for flag in flags)
    assert all(type(row.get("latency_us", 0.0)) in (int, float) for row in rows)


def test_trial_rows_keeps_row_extensions_and_missing_latency():
    with (FIXTURES / "valid" / "trials-first-with-extensions.json").open("rb") as stream:
        rows = list(trial_rows(stream))

    assert rows[0]["x-gpu"] == 1
    assert "latency_us" not in rows[1]
    assert rows[2]["latency_us"] == 0.0


# --- messages an analyst reads ----------------------------------------------------------------


def test_empty_file_says_so():
    assert _parse_bytes(b"") == (None, [Problem("repro.malformed", "The file is empty.", "")])


def test_truncated_file_says_where():
    (problem,) = _parse_file(FIXTURES / "invalid" / "truncated-in-trials.json")[1]
    assert "truncated" in problem.message
    assert "bytes" in problem.message


def test_unsupported_format_lists_the_readable_formats():
    (problem,) = _parse_file(FIXTURES / "invalid" / "format-version.json")[1]
    assert "repro-results/2" in problem.message
    assert all(name in problem.message for name in SUPPORTED_FORMATS)
    assert FORMAT in SUPPORTED_FORMATS


def test_setting_message_says_lab_results_never_become_production_figures():
    (problem,) = _parse_file(FIXTURES / "invalid" / "setting-production.json")[1]
    assert '"production"' in problem.message
    assert "never become production figures" in problem.message


def test_counter_mismatch_message_gives_both_numbers():
    (problem,) = _parse_file(FIXTURES / "invalid" / "sample-counter-mismatch.json")[1]
    assert "7" in problem.message and "8" in problem.message


# --- robustness -------------------------------------------------------------------------------


def _document(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "valid" / f"{name}.json").read_text())


def test_broken_rows_are_reported_up_to_a_cap():
    document = _document("valid-small")
    for row in document["trials"]:
        row["n"] = 0
    document["trials"] *= 3

    run, problems = _parse_bytes(json.dumps(document).encode())

    row_problems = [p for p in problems if p.path.startswith("trials[")]
    assert len(row_problems) == MAX_ROW_PROBLEMS
    (summary,) = [p for p in problems if p.code == "repro.too_many_problems"]
    assert summary.path == "trials"
    assert str(len(document["trials"]) - MAX_ROW_PROBLEMS) in summary.message


def test_deep_nesting_is_refused_not_crashed():
    data = b'{"x-deep": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    run, problems = _parse_bytes(data)
    assert run is None
    assert [p.code for p in problems] == ["repro.malformed"]


def test_a_huge_trial_number_does_not_claim_memory():
    document = _document("valid-small")
    document["scenarios"][0]["trials"] = 10**15
    document["trials"][0]["n"] = 10**15 - 1
    document["trials"][1]["n"] = 10**15 - 1
    tracemalloc.start()
    try:
        run, problems = _parse_bytes(json.dumps(document).encode())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ("repro.trial_repeated", "trials[1].n") in _pairs(problems)
    assert peak < 8 * 1024 * 1024


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes):
    run, problems = _parse_bytes(data)
    assert problems and all(p.code.startswith("repro.") for p in problems)


# Which keys each kind of object must have (the format page), to drop one of them.
_REQUIRED = {
    "file": {
        "format",
        "run_id",
        "case",
        "claims",
        "setting",
        "harness",
        "started_at",
        "finished_at",
        "environment",
        "scenarios",
    },
    "harness": {"name", "version"},
    "environment": {"gpus"},
    "gpu": {"model"},
    "framework": set(),
    "scenario": {
        "id",
        "backend",
        "mitigations",
        "free_list_order",
        "write_delay_us",
        "seed",
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
        "outcome",
    },
    "trial": {
        "scenario",
        "n",
        "aborted",
        "mid_transfer",
        "reused_in_flight",
        "late_write",
        "checksum_mismatch",
        "wrong_output",
    },
    "artifact": {"name", "sha256"},
}
_KNOWN_KEYS = set().union(*_REQUIRED.values()) | {
    "trials",
    "artifacts",
    "notes",
    "commit",
    "config_sha256",
    "host",
    "driver",
    "cuda",
    "framework",
    "memory_gib",
    "role",
    "latency_us",
    "bytes",
}


def _kind(steps: tuple[Any, ...]) -> str:
    names = tuple(step for step in steps if isinstance(step, str))
    return {
        (): "file",
        ("harness",): "harness",
        ("environment",): "environment",
        ("environment", "gpus"): "gpu",
        ("environment", "framework"): "framework",
        ("scenarios",): "scenario",
        ("trials",): "trial",
        ("artifacts",): "artifact",
    }[names]


def _path(steps: tuple[Any, ...]) -> str:
    path = ""
    for step in steps:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else step)
    return path


def _places(value: Any, steps: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and list entry of the document outside `x-` extensions."""
    places = []
    entries = value.items() if isinstance(value, dict) else enumerate(value)
    for step, child in entries:
        if isinstance(step, str) and step.startswith("x-"):
            continue
        places.append((*steps, step))
        if isinstance(child, (dict, list)):
            places.extend(_places(child, (*steps, step)))
    return places


def _other_type(value: Any) -> Any:
    if isinstance(value, dict):
        return []
    if isinstance(value, list):
        return {}
    if isinstance(value, str):
        return 12345
    if isinstance(value, bool):
        return "yes"
    return "text"


def _container(document: dict[str, Any], steps: tuple[Any, ...]) -> Any:
    for step in steps:
        document = document[step]
    return document


_BASES = {name: _document(name) for name in ("valid-small", "valid-no-trials")}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(_BASES)), st.sampled_from(["drop", "retype", "add"]), st.data())
def test_a_mutated_valid_document_is_refused_without_raising(base: str, mutation: str, data):
    document = copy.deepcopy(_BASES[base])
    places = _places(document)
    if mutation == "drop":
        places = [p for p in places if isinstance(p[-1], str) and p[-1] in _REQUIRED[_kind(p[:-1])]]
    elif mutation == "add":
        places = [p for p in [(), *places] if isinstance(_container(document, p), dict)]
    steps = data.draw(st.sampled_from(places))
    if mutation == "drop":
        del _container(document, steps[:-1])[steps[-1]]
        expected = {("repro.missing", _path(steps))}
    elif mutation == "retype":
        parent = _container(document, steps[:-1])
        parent[steps[-1]] = _other_type(parent[steps[-1]])
        code = "repro.format_unsupported" if steps == ("format",) else "repro.type"
        expected = {(code, _path(steps))}
    else:
        key = data.draw(
            st.text(min_size=1, max_size=12).filter(
                lambda k: not k.startswith("x-") and k not in _KNOWN_KEYS
            )
        )
        scalar = st.none() | st.integers(-(2**53), 2**53) | st.text()
        _container(document, steps)[key] = data.draw(scalar)
        expected = {("repro.unknown_key", _path((*steps, key)))}

    run, problems = _parse_bytes(json.dumps(document).encode())

    assert problems, "a mutated document was accepted"
    assert all(isinstance(p.code, str) and p.code.startswith("repro.") for p in problems)
    assert expected <= _pairs(problems)


# --- memory and layout ------------------------------------------------------------------------

_FLAG_PERIODS = {
    "aborted": 2,
    "mid_transfer": 4,
    "reused_in_flight": 8,
    "late_write": 12,
    "checksum_mismatch": 16,
    "wrong_output": 32,
}
_COUNTER_OF = {
    "aborted": "aborts_injected",
    "mid_transfer": "aborts_mid_transfer",
    "reused_in_flight": "reuse_while_in_flight",
    "late_write": "late_writes_landed",
    "checksum_mismatch": "checksum_mismatches",
    "wrong_output": "wrong_outputs",
}


def _write_large_run(path: Path, rows: int, trials_first: bool = False) -> None:
    """A consistent run of one scenario with `rows` trial rows, written row by row."""
    header = _document("valid-no-trials")
    scenario = header["scenarios"][0]
    header["scenarios"] = [scenario]
    scenario["trials"] = rows
    for flag, period in _FLAG_PERIODS.items():
        scenario[_COUNTER_OF[flag]] = rows // period
    template = (
        '{"scenario": "'
        + scenario["id"]
        + '", "n": %d, '
        + ", ".join(f'"{flag}": %s' for flag in _FLAG_PERIODS)
        + ', "latency_us": %d.5}'
    )
    head = json.dumps(header)[1:-1]
    with path.open("w") as out:
        out.write("{" if trials_first else "{" + head + ", ")
        out.write('"trials": [\n')
        for n in range(1, rows + 1):
            flags = ("true" if n % period == 0 else "false" for period in _FLAG_PERIODS.values())
            out.write(("" if n == 1 else ",\n") + template % (n, *flags, 900 + n % 600))
        out.write("\n]" + (", " + head + "}" if trials_first else "}") + "\n")


def _peak_while_parsing(path: Path) -> int:
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            run, problems = parse_results(stream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == []
    assert run.trial_counts == {run.scenarios[0]["id"]: run.scenarios[0]["trials"]}
    return peak


@pytest.mark.slow
def test_memory_does_not_grow_with_the_trial_rows(tmp_path: Path):
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    _write_large_run(small, 20_000)
    _write_large_run(large, 200_000)

    small_peak = _peak_while_parsing(small)
    large_peak = _peak_while_parsing(large)

    assert large_peak < 1.5 * small_peak + 256 * 1024, (small_peak, large_peak)


def test_trial_rows_before_the_scenarios_are_checked_the_same(tmp_path: Path):
    path = tmp_path / "trials-first.json"
    _write_large_run(path, 5_000, trials_first=True)
    run, problems = _parse_file(path)
    assert problems == []
    assert run.has_trials and run.trial_counts == {"mooncake-none-lifo": 5_000}
    with path.open("rb") as stream:
        assert sum(1 for _ in trial_rows(stream)) == 5_000
