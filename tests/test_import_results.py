"""The reproduction-results importer against the database (claimsdb.importers.repro_results).

Driven by the sample folders of fixtures/repro/: every file of ``valid/`` imports, every
file of ``invalid/`` is refused with exactly its sidecar's (code, path) pairs and writes
nothing, and every case of ``db/`` (sidecar: what to import first, the options, the outcome
and the problems) does what its sidecar says. Adding a case is adding a file and a sidecar.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection

from claimsdb.importers import repro_results, storage
from claimsdb.importers.repro import parse_results, trial_rows
from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.importers.synthetic import write_results_file
from claimsdb.models import (
    Figure,
    ImportReport,
    LedgerHead,
    ReproductionRun,
    ReproductionScenario,
    Revision,
    TrialRow,
)
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, case_update
from claimsdb.services.permissions import ROLES

from .support import case_doc, make_user

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "repro"
VALID_SMALL = FIXTURES / "valid" / "valid-small.json"


def _samples(folder: str) -> list[Path]:
    return sorted(
        p for p in (FIXTURES / folder).glob("*.json") if not p.name.endswith(".expected.json")
    )


def _sidecar(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))


def _pairs(problems) -> set[tuple[str, str]]:
    return {(p.code, p.path) for p in problems}


def _state() -> dict[str, Any]:
    """Everything an import may write, but its report."""
    return {
        "runs": sorted(
            (r.run_id, r.file_sha256, r.case.key)
            for r in ReproductionRun.objects.select_related("case")
        ),
        "scenarios": ReproductionScenario.objects.count(),
        "trial_rows": TrialRow.objects.count(),
        "revisions": Revision.objects.count(),
        "head": LedgerHead.objects.get(pk=1).number,
        "figures": Figure.objects.count(),
        "cases": {k: record_document("case", k) for k in ("CP22-002", "CP22-003")},
    }


def _summary(path: Path, sha256: str) -> dict[str, Any]:
    with path.open("rb") as stream:
        run, problems = parse_results(stream)
    assert not problems
    return {**run.header, "sha256": sha256}


def content_sha(path: Path) -> str:
    """A file's identity as docs/importing.md defines it: its canonical JSON's SHA-256."""
    document = json.loads(path.read_text(encoding="utf-8"))
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _import(user, path: Path, **options) -> repro_results.Report:
    return ResultsImporter(user=user, **options).import_path(path)


def _assert_imported(report, path: Path) -> None:
    """The run, its scenarios and rows are stored, and the case document lists its summary."""
    run = ReproductionRun.objects.get(run_id=report.run_id)
    assert run.file_sha256 == report.sha256
    assert run.case.key == report.case
    assert run.summary == _summary(path, report.sha256)
    assert "trials" not in run.summary
    assert run.scenarios.count() == report.scenarios
    assert TrialRow.objects.filter(scenario__run=run).count() == report.trial_rows
    with path.open("rb") as stream:
        parsed, _ = parse_results(stream)
    builds = {
        s.id: (s.backend_version, s.backend_commit, s.backend_purl)
        for s in parsed.scenario_summaries
    }
    for scenario in run.scenarios.all():
        assert scenario.stored_rows in (0, scenario.trials)
        assert builds[scenario.scenario_id] == (
            scenario.backend_version,
            scenario.backend_commit,
            scenario.backend_purl,
        )
    document = record_document("case", report.case)
    assert run.summary in document["reproduction_runs"]
    revision = Revision.objects.get(number=report.revision)
    assert (revision.record_kind, revision.record_key, revision.action) == (
        "case",
        report.case,
        "import",
    )
    stored = ImportReport.objects.get(pk=report.id)
    assert stored.revision_number == report.revision
    assert stored.outcome == report.outcome


# --- the sample folders -------------------------------------------------------------------


@pytest.mark.parametrize("path", _samples("valid"), ids=lambda p: p.stem)
def test_valid_sample_imports(path, seeded, analyst):
    expected = _sidecar(path)
    before = _state()

    report = _import(analyst, path)

    assert report.outcome == repro_results.IMPORTED, report.problems
    assert report.problems == []
    assert report.scenarios == expected["scenarios"]
    assert report.trial_rows == sum(expected["trial_counts"].values())
    _assert_imported(report, path)
    after = _state()
    assert after["revisions"] == before["revisions"] + 1  # one import revision
    assert after["figures"] == before["figures"]  # imported counters never become figures


@pytest.mark.parametrize("path", _samples("invalid"), ids=lambda p: p.stem)
def test_invalid_sample_is_refused_with_exactly_its_problems(path, db, analyst):
    # No seed needed: a format problem stops the import before the case is looked up (and
    # were a file to get past the parser, import.case_unknown would fail the comparison).
    expected = {(p["code"], p["path"]) for p in _sidecar(path)["problems"]}
    before = _state()
    reports = ImportReport.objects.count()

    report = _import(analyst, path)

    assert report.outcome == repro_results.REFUSED
    assert _pairs(report.problems) == expected
    assert _state() == before  # nothing written
    assert ImportReport.objects.count() == reports + 1  # but the attempt is on record
    stored = ImportReport.objects.get(pk=report.id)
    assert stored.outcome == "refused"
    assert {(p["code"], p["path"]) for p in stored.report["problems"]} == expected


@pytest.mark.parametrize("path", _samples("db"), ids=lambda p: p.stem)
def test_database_sample_does_what_its_sidecar_says(path, seeded, analyst):
    expected = _sidecar(path)
    for earlier in expected.get("before", []):
        first = _import(analyst, (path.parent / earlier["file"]).resolve())
        assert first.outcome == repro_results.IMPORTED, first.problems
    before = _state()

    report = _import(
        analyst,
        path,
        replace=expected.get("replace", False),
        dry_run=expected.get("dry_run", False),
    )

    assert report.outcome == expected["outcome"], report.problems
    assert _pairs(report.problems) == {(p["code"], p["path"]) for p in expected["problems"]}
    after = _state()
    if report.outcome in repro_results.WRITTEN:
        _assert_imported(report, path)
        assert after["revisions"] > before["revisions"]
    else:
        assert after == before
        assert report.revision is None


@pytest.mark.parametrize("path", _samples("valid"), ids=lambda p: p.stem)
def test_the_second_pass_stores_exactly_the_rows(path):
    """The rows as ``storage`` inserts them: the file's rows in order, latency a float."""
    document = json.loads(path.read_text())
    names = {s["id"] for s in document["scenarios"]}
    pks = {name: pk for pk, name in enumerate(sorted(names), start=1)}
    flags = storage.ROW_COLUMNS[2:8]
    expected = []
    for row in document.get("trials", []):
        latency = row.get("latency_us")
        extra = {k: v for k, v in row.items() if k.startswith("x-")}
        expected.append(
            (
                pks[row["scenario"]],
                row["n"],
                *(row[flag] for flag in flags),
                None if latency is None else float(latency),
                json.dumps(extra, ensure_ascii=False) if extra else None,
            )
        )

    with path.open("rb") as stream:
        rows = list(storage.stored_rows(trial_rows(stream), pks))

    assert rows == expected
    assert all(type(row[1]) is int and all(type(f) is bool for f in row[2:8]) for row in rows)
    assert all(row[8] is None or type(row[8]) is float for row in rows)


def test_database_samples_are_valid_files():
    """Their only problems are the database's: the pure parser accepts every one."""
    for path in _samples("db"):
        with path.open("rb") as stream:
            run, problems = parse_results(stream)
        assert run is not None and problems == [], path.name


def test_every_sample_has_a_sidecar():
    for folder in ("valid", "invalid", "db"):
        for path in _samples(folder):
            assert path.with_name(path.stem + ".expected.json").exists(), path


# --- idempotency and replacement ----------------------------------------------------------


def test_the_same_file_twice_writes_nothing_the_second_time(seeded, analyst):
    first = _import(analyst, VALID_SMALL)
    before = _state()

    again = _import(analyst, VALID_SMALL)

    assert again.outcome == repro_results.UNCHANGED
    assert "already imported" in again.message.lower()
    assert again.revision is None
    assert _state() == before
    assert again.sha256 == first.sha256


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(lambda d: json.dumps(d, indent=4), id="indented"),
        pytest.param(lambda d: json.dumps(d, separators=(",", ":")), id="compact"),
        pytest.param(
            lambda d: json.dumps(dict(reversed(list(d.items()))), ensure_ascii=True),
            id="keys-reversed-ascii",
        ),
    ],
)
def test_the_same_content_reserialised_is_the_same_file(seeded, analyst, tmp_path, rewrite):
    first = _import(analyst, VALID_SMALL)
    assert first.outcome == repro_results.IMPORTED
    assert first.sha256 == content_sha(VALID_SMALL)
    assert first.file_sha256 == hashlib.sha256(VALID_SMALL.read_bytes()).hexdigest()
    before = _state()
    again_path = tmp_path / "again.json"
    again_path.write_text(rewrite(json.loads(VALID_SMALL.read_text(encoding="utf-8"))))

    again = _import(analyst, again_path)

    assert again.outcome == repro_results.UNCHANGED, again.problems
    assert again.sha256 == first.sha256 and again.file_sha256 != first.file_sha256
    assert _state() == before


def test_a_file_that_is_not_json_is_named_by_its_bytes(db, analyst, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_bytes(b'{"format": "repro-results/1", ')
    report = _import(analyst, broken)
    assert report.refused
    assert report.sha256 == report.file_sha256 == hashlib.sha256(broken.read_bytes()).hexdigest()


def test_the_content_digest_streams_what_json_loads_reads():
    from claimsdb.importers.repro.content_hash import content_sha256

    for path in _samples("valid") + _samples("db"):
        with path.open("rb") as stream:
            assert content_sha256(stream) == content_sha(path), path.name
    assert content_sha256(io.BytesIO(b"[1, 2]")) is None
    assert content_sha256(io.BytesIO(rb'{"a": [1, {"b": 2.50, "a": null}], "0": "\u00e9"}')) == (
        hashlib.sha256('{"0":"é","a":[1,{"a":null,"b":2.5}]}'.encode()).hexdigest()
    )


def test_replacement_replaces_rows_and_records_a_revision(seeded, analyst):
    _import(analyst, VALID_SMALL)
    replacement = FIXTURES / "db" / "replacement.json"

    refused = _import(analyst, replacement)
    assert refused.conflict and refused.codes == ["import.run_conflict"]

    report = _import(analyst, replacement, replace=True)

    assert report.outcome == repro_results.REPLACED
    _assert_imported(report, replacement)
    assert report.replaced_sha256 == content_sha(VALID_SMALL)
    run = ReproductionRun.objects.get(run_id=report.run_id)
    assert TrialRow.objects.filter(scenario__run=run).count() == report.trial_rows == 9
    assert TrialRow.objects.count() == 9  # the 80 rows of the replaced file are gone
    revision = Revision.objects.get(number=report.revision)
    assert revision.summary.startswith("Replaced run pd-abort-h200x2-20261021-0007")
    runs = record_document("case", "CP22-003")["reproduction_runs"]
    assert [r["sha256"] for r in runs] == [report.sha256]


def test_replacement_into_another_case_revises_both(seeded, analyst):
    _import(analyst, VALID_SMALL)
    moved = FIXTURES / "db" / "replacement-moves-case.json"

    report = _import(analyst, moved, replace=True)

    assert report.outcome == repro_results.REPLACED
    assert report.case == "CP22-002"
    assert len(report.other_revisions) == 1
    assert record_document("case", "CP22-003")["reproduction_runs"] == []
    assert len(record_document("case", "CP22-002")["reproduction_runs"]) == 1
    old = Revision.objects.get(number=report.other_revisions[0])
    assert (old.record_key, old.action) == ("CP22-003", "import")
    call_command("verify_history", stdout=io.StringIO())  # chain and live state agree


def test_custom_summary(seeded, analyst):
    report = _import(analyst, VALID_SMALL, summary="H200 rerun after the driver update")
    assert Revision.objects.get(number=report.revision).summary == (
        "H200 rerun after the driver update"
    )


def test_default_summary_names_the_run(seeded, analyst):
    report = _import(analyst, VALID_SMALL)
    assert Revision.objects.get(number=report.revision).summary == (
        "Imported pd-abort-h200x2-20261021-0007"
    )


def test_a_run_restored_from_a_document_gets_its_rows_back(db, reviewer, analyst, seed_bundle):
    """A case document restored without trial rows; importing the file stores them."""
    sha = hashlib.sha256(VALID_SMALL.read_bytes()).hexdigest()
    bundle = copy.deepcopy(seed_bundle)
    case = next(c for c in bundle["cases"] if c["key"] == "CP22-003")
    case["reproduction_runs"] = [_summary(VALID_SMALL, sha)]
    bundle_load(user=reviewer, bundle=bundle, summary="Restore")
    assert ReproductionRun.objects.get().scenarios.count() == 0
    before = Revision.objects.count()

    report = _import(analyst, VALID_SMALL)

    assert report.outcome == repro_results.RESTORED
    assert TrialRow.objects.count() == 80
    assert Revision.objects.count() == before  # the document did not change
    assert _import(analyst, VALID_SMALL).outcome == repro_results.UNCHANGED


# --- what a refusal writes, and who may import --------------------------------------------


@pytest.mark.parametrize("role_fixture", ["viewer", "nobody"])
def test_only_analysts_and_reviewers_import(role_fixture, seeded, request):
    user = request.getfixturevalue(role_fixture)
    before = _state()

    report = _import(user, VALID_SMALL)

    assert report.refused and report.codes == ["permission.denied"]
    assert _state() == before


def test_reviewers_import(seeded, reviewer):
    assert _import(reviewer, VALID_SMALL).outcome == repro_results.IMPORTED


class _ChangingStream(io.BytesIO):
    """A file that is rewritten between the importer's two reads."""

    def __init__(self, first: bytes, second: bytes):
        super().__init__(first)
        self.second: bytes | None = second
        self.read_through = False

    def read(self, size=-1):
        chunk = super().read(size)
        self.read_through = self.read_through or not chunk
        return chunk

    def seek(self, offset, whence=0):
        if self.read_through and self.second is not None and (offset, whence) == (0, 0):
            second, self.second = self.second, None
            super().seek(0)
            self.truncate()
            self.write(second)
        return super().seek(offset, whence)


def test_a_file_changed_between_the_two_reads_is_refused(seeded, analyst):
    original = VALID_SMALL.read_bytes()
    changed = original.replace(b'"latency_us": 1216.5', b'"latency_us": 1216.6')
    assert changed != original
    before = _state()

    report = ResultsImporter(user=analyst).import_file(
        _ChangingStream(original, changed), filename="changing.json"
    )

    assert report.codes == ["import.file_changed"]
    assert _state() == before


class _Pipe(io.RawIOBase):
    """A stream that cannot seek, like standard input."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def test_an_unseekable_stream_is_spooled(seeded, analyst):
    report = ResultsImporter(user=analyst).import_file(
        io.BufferedReader(_Pipe(VALID_SMALL.read_bytes())), filename="<stdin>"
    )
    assert report.outcome == repro_results.IMPORTED
    assert TrialRow.objects.count() == 80


def test_dry_run_checks_the_case_rules_but_writes_nothing(seeded, analyst):
    before = _state()
    report = _import(analyst, VALID_SMALL, dry_run=True)
    assert report.outcome == repro_results.WOULD_IMPORT
    assert _state() == before
    assert ImportReport.objects.get(pk=report.id).dry_run


# --- scope: lab observations stay lab observations ----------------------------------------


def test_imported_counters_never_become_an_impact_basis(seeded, analyst):
    _import(analyst, VALID_SMALL)
    assert not Figure.objects.filter(case__key="CP22-003").exists()
    document = record_document("case", "CP22-003")
    assessment = document["assessments"][-1]
    assessment["impact"] = 2
    assessment["impact_ungraded_reason"] = ""
    assessment["evidence_basis"]["claims"] = sorted(
        {*assessment["evidence_basis"]["claims"], "CLM-CP22-003-B"}
    )

    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="Grade it")

    assert {"assessment.impact_basis", "scope.lab_not_impact"} & set(refused.value.codes)


def test_production_results_are_refused(seeded, analyst):
    report = _import(analyst, FIXTURES / "invalid" / "setting-production.json")
    assert ("repro.setting_not_lab", "setting") in _pairs(report.problems)
    assert not ReproductionRun.objects.exists()


def test_an_edit_still_cannot_drop_an_imported_run(seeded, analyst):
    _import(analyst, VALID_SMALL)
    document = case_doc(seeded, "CP22-003")  # the seed's document: without the run
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="Drop the run")
    assert "case.reproduction_runs_readonly" in refused.value.codes


# --- scale --------------------------------------------------------------------------------


def _peak_of_import(user, path: Path) -> int:
    tracemalloc.start()
    try:
        report = _import(user, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.outcome == repro_results.IMPORTED, report.problems
    return peak


@pytest.mark.slow
def test_memory_does_not_grow_with_the_number_of_trial_rows(seeded, analyst, tmp_path):
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    # two and twenty batches of trial rows (claimsdb.importers.storage.BATCH_SIZE)
    write_results_file(small, rows=10_000, run_id="scale-small")
    write_results_file(large, rows=100_000, run_id="scale-large")
    _import(analyst, FIXTURES / "valid" / "valid-no-trials.json")  # warm caches up

    small_peak = _peak_of_import(analyst, small)
    large_peak = _peak_of_import(analyst, large)

    assert TrialRow.objects.count() == 110_000
    assert large_peak <= 1.5 * small_peak + 256 * 1024, (small_peak, large_peak)


# --- concurrency (PostgreSQL) -------------------------------------------------------------


@pytest.mark.postgres(reason="SQLite serialises whole transactions anyway")
def test_two_processes_importing_the_same_file_store_it_once(
    roles_kept, transactional_db, seed_bundle
):
    # The threads need committed data: this test commits, and the database is flushed
    # afterwards (an earlier flush may have removed the role groups too).
    for role in ROLES:
        Group.objects.get_or_create(name=role)
    bundle_load(user=make_user("reviewer", "reviewer"), bundle=seed_bundle, summary="Seed")
    analyst = make_user("analyst", "analyst")
    start = threading.Barrier(2)
    reports: list[repro_results.Report] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            reports.append(_import(analyst, VALID_SMALL))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    assert sorted(r.outcome for r in reports) == ["imported", "unchanged"]
    assert ReproductionRun.objects.count() == 1
    assert TrialRow.objects.count() == 80
    assert Revision.objects.filter(action="import").count() == 1
