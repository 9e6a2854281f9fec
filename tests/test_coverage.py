"""The coverage matrix (claimsdb/selectors/coverage.py, docs/coverage.md): on CP22-003, as
the seed states it (nothing tested yet), after the sample results file with backend
versions, with ranges and fixes stated, and at many runs (query counts fixed, no trial row
read)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.importers.stats import Rate
from claimsdb.models import TrialRow
from claimsdb.records import record_document
from claimsdb.selectors.coverage import case_coverage
from claimsdb.services import case_update

from .support import publish, signed_in, token_client

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "repro"
SAMPLE = FIXTURES / "valid" / "backend-versions.json"
BACKENDS = ("CMP-MOONCAKE", "CMP-NIXL", "CMP-MORI")


def _seed_affected(user) -> dict[str, Any]:
    """CP22-003 with the affected entries the seed's record supports: the three backends
    affected on CLM-CP22-003-B, no versions (written here if the seed does not hold them)."""
    document = record_document("case", "CP22-003")
    assert document is not None
    if not document.get("affected"):
        document["affected"] = [
            {
                "component": key,
                "status": "affected",
                "ranges": [],
                "versions": [],
                "claims": ["CLM-CP22-003-B"],
                "note": "",
            }
            for key in BACKENDS
        ]
        case_update(user=user, key="CP22-003", document=document, summary="Affected backends")
    return record_document("case", "CP22-003") or {}


def _set_entry(user, key: str, **fields: Any) -> None:
    document = record_document("case", "CP22-003")
    assert document is not None
    for entry in document["affected"]:
        if entry["component"] == key:
            entry.update(fields)
    case_update(user=user, key="CP22-003", document=document, summary=f"Versions of {key}")


def _import(user, document: dict[str, Any] | None = None, path: Path = SAMPLE):
    importer = ResultsImporter(user=user)
    if document is None:
        return importer.import_path(path)
    return importer.import_file(io.BytesIO(json.dumps(document).encode()), filename="run.json")


def _row(coverage, key: str):
    return next(row for row in coverage.rows if row.component == key)


def _coverage():
    return case_coverage(record_document("case", "CP22-003"))


def test_the_seed_shows_its_unknown_nothing_tested(seeded, analyst):
    document = record_document("case", "CP22-003")
    assert document is not None and document["affected"], "the seed states the backends"
    coverage = case_coverage(document)

    order = [entry["component"] for entry in document["affected"]]
    assert sorted(order) == sorted(BACKENDS)
    assert [row.component for row in coverage.rows] == order
    assert not coverage.tested_anything
    names = {"CMP-MOONCAKE": "Mooncake", "CMP-NIXL": "NIXL", "CMP-MORI": "MORI"}
    assert coverage.gaps == [f"{names[key]}: no runs" for key in order]
    for row in coverage.rows:
        assert [(s.status, s.claims, s.versions_text) for s in row.stated] == [
            ("affected", ["CLM-CP22-003-B"], "no versions given")
        ]


def test_the_sample_file_fills_in_part_of_it(seeded, analyst):
    _seed_affected(analyst)
    report = _import(analyst)
    assert report.outcome == "imported", report.problems

    coverage = _coverage()
    mooncake, nixl, mori = (_row(coverage, key) for key in BACKENDS)
    assert [(g.version, g.mitigations, g.runs, g.runs_reproduced) for g in mooncake.tested] == [
        ("v0.3.7", [], 1, 1),
        ("v0.3.7", ["abort_ack"], 1, 0),
    ]
    unmitigated, mitigated = mooncake.tested
    assert unmitigated.stale_read == Rate.of(152, 5000)
    assert (mitigated.not_reproduced, mitigated.runs_not_reproduced) == (1, 1)
    assert unmitigated.standing == "the record gives no versions"
    assert [(g.version, g.reproduced) for g in nixl.tested] == [("0.7.1", 1)]
    assert mori.tested == []
    assert coverage.gaps == ["MORI: no runs"]
    # the framework is not a row: the case states nothing about SGLang
    assert "CMP-SGLANG" not in {row.component for row in coverage.rows}


def test_ranges_and_fixes_are_read_in_the_component_scheme(seeded, analyst):
    _seed_affected(analyst)
    _set_entry(
        analyst, "CMP-MOONCAKE", ranges=[{"events": [{"introduced": "0"}, {"fixed": "v0.3.8"}]}]
    )
    _import(analyst)

    mooncake = _row(_coverage(), "CMP-MOONCAKE")
    assert mooncake.stated[0].ranges_text == ["all versions, < v0.3.8 (fixed in v0.3.8)"]
    assert {g.standing for g in mooncake.tested} == {"in a range stated affected"}
    assert mooncake.gaps == ["Mooncake ≥ v0.3.8: stated fixed, not tested"]

    # a run of the fixed version that still reproduces is said so
    document = json.loads(SAMPLE.read_text())
    document["run_id"] = "pd-abort-h200x2-20261106-0001"
    document["environment"]["backends"][0].update(
        version="v0.3.9", purl="pkg:github/kvcache-ai/mooncake@v0.3.9"
    )
    _import(analyst, document)
    mooncake = _row(_coverage(), "CMP-MOONCAKE")
    assert [g.standing for g in mooncake.tested if g.version == "v0.3.9"] == [
        "at or after the stated fix (v0.3.8)"
    ] * 2
    assert mooncake.gaps == [
        "Mooncake v0.3.9: stated fixed (in v0.3.8), but reproduced in 1 scenario"
    ]


def test_stated_affected_never_reproduced(seeded, analyst):
    _seed_affected(analyst)
    document = json.loads(SAMPLE.read_text())
    nixl = document["scenarios"][2]
    nixl.update(checksum_mismatches=0, wrong_outputs=0, reuse_while_in_flight=0,
                late_writes_landed=0, outcome="not_reproduced")  # fmt: skip
    _import(analyst, document)

    row = _row(_coverage(), "CMP-NIXL")
    assert row.gaps == ["NIXL: stated affected, never reproduced (1 run)"]
    assert [(g.runs_reproduced, g.runs_not_reproduced) for g in row.tested] == [(0, 1)]


def test_runs_without_versions_are_counted_and_said_so(seeded, analyst):
    _seed_affected(analyst)
    _import(analyst, path=FIXTURES / "valid" / "valid-no-trials.json")

    coverage = _coverage()
    mori = _row(coverage, "CMP-MORI")
    assert [(g.version, g.mitigations, g.not_reproduced) for g in mori.tested] == [
        ("", ["generation_token"], 1)
    ]
    assert mori.tested[0].standing == "version not stated by the run"
    assert mori.gaps == [
        "MORI: stated affected, never reproduced (1 run)",
        "MORI: tested only at versions the runs do not state (1 run)",
    ]


def test_backends_the_record_does_not_state_are_rows_too(seeded, analyst):
    _seed_affected(analyst)
    _import(analyst, path=FIXTURES / "valid" / "backend-versions-mixed.json")

    coverage = _coverage()
    ucx = next(row for row in coverage.rows if row.label == "other:ucx")
    assert ucx.component == ""
    assert ucx.gaps == ["other:ucx: tested in 1 run, but matches no component"]
    assert coverage.rows[-1] is ucx  # stated components first, unmatched names last
    mooncake = _row(coverage, "CMP-MOONCAKE")
    assert [g.version for g in mooncake.tested] == ["0.3.6", "0.3.7"]


def test_the_matrix_reads_no_trial_row_and_its_queries_do_not_grow(seeded, analyst):
    _seed_affected(analyst)
    base = json.loads((FIXTURES / "valid" / "valid-small.json").read_text())
    assert base["trials"]
    base["format"] = "repro-results/1.1"
    base["environment"]["backends"] = [{"backend": "mooncake", "version": "v0.3.7"}]

    def import_runs(first: int, count: int) -> None:
        for n in range(first, first + count):
            document = copy.deepcopy(base)
            document["run_id"] = f"bench-{n:04d}"
            document["environment"]["backends"][0]["version"] = f"v0.3.{n % 4}"
            assert _import(analyst, document).outcome == "imported"

    import_runs(0, 2)
    document = record_document("case", "CP22-003")
    with CaptureQueriesContext(connection) as few:
        small = case_coverage(document)
    import_runs(2, 10)
    document = record_document("case", "CP22-003")
    with CaptureQueriesContext(connection) as many:
        large = case_coverage(document)

    assert len(many.captured_queries) == len(few.captured_queries) == 3
    table = TrialRow._meta.db_table
    assert not any(table in q["sql"] for q in many.captured_queries)
    assert TrialRow.objects.exists()
    assert _row(small, "CMP-MOONCAKE").runs == 2
    assert _row(large, "CMP-MOONCAKE").runs == 12
    assert sum(g.runs for g in _row(large, "CMP-MOONCAKE").tested) == 24  # 12 runs × 2 sets


def test_the_case_page_shows_the_matrix(seeded, analyst, django_assert_max_num_queries):
    _seed_affected(analyst)
    client = signed_in(analyst)

    page = client.get("/cases/CP22-003/").content.decode()
    assert 'id="coverage"' in page
    assert "Nothing has been tested yet." in page
    assert "MORI: no runs" in page

    _import(analyst)
    page = client.get("/cases/CP22-003/").content.decode()
    assert "Nothing has been tested yet." not in page
    assert "<code>v0.3.7</code>" in page
    assert "abort_ack" in page
    assert "coverage.css" in page


def test_the_case_page_queries_do_not_grow_with_runs(seeded, analyst):
    _seed_affected(analyst)
    client = signed_in(analyst)
    document = json.loads(SAMPLE.read_text())

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/cases/CP22-003/").status_code == 200
        return len(queries.captured_queries)

    document["run_id"] = "page-0"
    _import(analyst, document)
    one = page_queries()
    for n in range(1, 6):
        document["run_id"] = f"page-{n}"
        _import(analyst, document)
    assert page_queries() == one


def test_the_api_answers_as_the_caller_sees_the_case(seeded, analyst, reviewer):
    _seed_affected(analyst)
    _import(analyst)

    body = token_client(analyst).get("/api/v1/cases/CP22-003/coverage/").json()
    assert body["case"] == "CP22-003" and body["runs"] == 1
    assert body["gaps"] == ["MORI: no runs"]
    mooncake = next(c for c in body["components"] if c["component"] == "CMP-MOONCAKE")
    assert mooncake["stated"][0]["claims"] == ["CLM-CP22-003-B"]
    assert mooncake["tested"][0]["stale_read_rate"]["events"] == 152
    assert mooncake["tested"][0]["runs_reproduced"] == 1

    # the public reads the released case only: none yet, then the release's
    anonymous = token_client()
    assert anonymous.get("/api/v1/cases/CP22-003/coverage/").status_code == 404
    publish(reviewer, notes="The record with its affected backends")
    public = anonymous.get("/api/v1/cases/CP22-003/coverage/").json()
    assert public["components"] == body["components"]
    assert token_client(analyst).get("/api/v1/cases/NOPE-1/coverage/").status_code == 404


# --- a component's runs -------------------------------------------------------------------


def test_a_component_lists_the_runs_on_it_by_case_and_version(seeded, analyst):
    from claimsdb.models import Component
    from claimsdb.selectors.coverage import component_runs

    _import(analyst)
    document = json.loads(SAMPLE.read_text())
    document["run_id"] = "pd-abort-h200x2-20261106-0002"
    document["environment"]["backends"][0].update(
        version="v0.3.6", purl="pkg:github/kvcache-ai/mooncake@v0.3.6"
    )
    _import(analyst, document)

    mooncake = Component.objects.get(key="CMP-MOONCAKE")
    with CaptureQueriesContext(connection) as captured:
        runs = component_runs(mooncake, released=False)
    assert len(captured.captured_queries) == 2
    assert runs.runs == 2
    assert runs.versions == ["v0.3.6", "v0.3.7"]  # in the component's scheme
    assert [(r.case, r.version, r.runs, r.scenarios, r.runs_reproduced) for r in runs.rows] == [
        ("CP22-003", "v0.3.6", 1, 2, 1),
        ("CP22-003", "v0.3.7", 1, 2, 1),
    ]
    assert runs.rows[0].stale_read == Rate.of(152, 10000)
    sglang = component_runs(Component.objects.get(key="CMP-SGLANG"), released=False)
    assert [(r.role, r.version, r.scenarios) for r in sglang.rows] == [("framework", "0.5.4", 6)]


def test_the_public_sees_only_the_runs_of_released_cases(seeded, analyst, reviewer):
    publish(reviewer, notes="Before the run")
    _import(analyst)

    anonymous = token_client()
    body = anonymous.get("/api/v1/components/CMP-MOONCAKE/runs/").json()
    assert (body["runs"], body["by_case_and_version"]) == (0, [])
    working = token_client(analyst).get("/api/v1/components/CMP-MOONCAKE/runs/").json()
    assert working["runs"] == 1 and working["versions_tested"] == ["v0.3.7"]

    publish(reviewer, notes="The run")
    body = anonymous.get("/api/v1/components/CMP-MOONCAKE/runs/").json()
    assert body == working
    assert anonymous.get("/api/v1/components/CMP-NOPE/runs/").status_code == 404


def test_the_component_page_shows_the_runs_on_it(seeded, analyst):
    client = signed_in(analyst)
    page = client.get("/components/CMP-MOONCAKE/").content.decode()
    assert "No imported run has run it." in page

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/components/CMP-MOONCAKE/").status_code == 200
        return len(queries.captured_queries)

    document = json.loads(SAMPLE.read_text())
    document["run_id"] = "component-page-0"
    _import(analyst, document)
    one = page_queries()
    page = client.get("/components/CMP-MOONCAKE/").content.decode()
    assert "<code>v0.3.7</code>" in page
    assert 'href="/cases/CP22-003/#coverage"' in page
    for n in range(1, 5):
        document["run_id"] = f"component-page-{n}"
        document["environment"]["backends"][0] = {"backend": "mooncake", "version": f"v0.3.{n}"}
        assert _import(analyst, document).outcome == "imported"
    assert page_queries() == one
    assert (
        "5 imported reproduction runs ran it"
        in client.get("/components/CMP-MOONCAKE/").content.decode()
    )
