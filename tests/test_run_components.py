"""Runs bear on components (claimsdb/importers/matching.py, docs/coverage.md): an imported
run's framework and each scenario's backend are matched to components by Package URL, then
by name or alias; unmatched names are listed in the report and never guessed; runs stay lab
evidence."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.models import (
    Assessment,
    Figure,
    ImportReport,
    ReproductionScenario,
    RunComponent,
)
from claimsdb.records import record_document
from claimsdb.services import component_create, component_withdraw

from .support import signed_in, token_client

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "repro"
SAMPLE = FIXTURES / "valid" / "backend-versions.json"
MIXED = FIXTURES / "valid" / "backend-versions-mixed.json"


def _import(user, path: Path | None = None, document: dict[str, Any] | None = None, **options):
    importer = ResultsImporter(user=user, **options)
    if document is not None:
        data = json.dumps(document).encode()
        return importer.import_file(io.BytesIO(data), filename="run.json")
    assert path is not None
    return importer.import_path(path)


def _relations(run_id: str) -> list[tuple[str, str, str, str, str | None, str]]:
    return sorted(
        (
            r.scenario.scenario_id,
            r.role,
            r.name,
            r.version,
            r.component.key if r.component else None,
            r.matched_by,
        )
        for r in RunComponent.objects.filter(run__run_id=run_id).select_related(
            "scenario", "component"
        )
    )


def _component(key: str, name: str, aliases: list[str], purl: str = "") -> dict[str, Any]:
    return {
        "format": "claimsdb.component/1",
        "key": key,
        "name": name,
        "kind": "transfer_backend",
        "purl": purl,
        "version_scheme": "generic",
        "homepage": "",
        "aliases": aliases,
        "relations": [],
        "status": "active",
    }


def test_known_backends_match_by_package_url_and_by_alias(seeded, analyst):
    report = _import(analyst, SAMPLE)

    assert report.outcome == "imported", report.problems
    assert report.unmatched == []
    assert _relations(report.run_id) == [
        ("mooncake-abort_ack-lifo", "backend", "mooncake", "v0.3.7", "CMP-MOONCAKE", "purl"),
        ("mooncake-abort_ack-lifo", "framework", "sglang", "0.5.4", "CMP-SGLANG", "name"),
        ("mooncake-none-lifo", "backend", "mooncake", "v0.3.7", "CMP-MOONCAKE", "purl"),
        ("mooncake-none-lifo", "framework", "sglang", "0.5.4", "CMP-SGLANG", "name"),
        ("nixl-none-fifo", "backend", "nixl", "0.7.1", "CMP-NIXL", "name"),
        ("nixl-none-fifo", "framework", "sglang", "0.5.4", "CMP-SGLANG", "name"),
    ]
    by_name = {(m["role"], m["name"]): m for m in report.components}
    assert by_name["backend", "mooncake"]["scenarios"] == [
        "mooncake-none-lifo",
        "mooncake-abort_ack-lifo",
    ]
    assert by_name["framework", "sglang"]["path"] == "environment.framework.name"
    # the stored report says the same as the returned one
    row = ImportReport.objects.get(pk=report.id)
    assert row.report["components"] == report.components
    assert row.report["unmatched"] == []


def test_unknown_backends_are_listed_never_guessed(seeded, analyst):
    report = _import(analyst, MIXED)

    assert report.outcome == "imported", report.problems
    assert [(m["name"], m["path"], m["scenarios"]) for m in report.unmatched] == [
        ("other:ucx", "scenarios[3].backend", ["ucx-generation_token-fifo"])
    ]
    assert "'ucx'" in report.unmatched[0]["reason"]
    assert "pkg:github/openucx/ucx@1.19.0" in report.unmatched[0]["reason"]
    relations = _relations(report.run_id)
    assert ("ucx-generation_token-fifo", "backend", "other:ucx", "1.19.0", None, "") in relations
    # two builds of one backend are two matches of one component, each with its version
    mooncake = [m for m in report.components if m["name"] == "mooncake"]
    assert [(m["version"], m["component"]) for m in mooncake] == [
        ("0.3.6", "CMP-MOONCAKE"),
        ("0.3.7", "CMP-MOONCAKE"),
    ]
    # a backend without a stated version still bears on its component
    assert ("nixl-none-fifo", "backend", "nixl", "", "CMP-NIXL", "name") in relations


def test_an_other_backend_matches_a_component_by_its_alias(seeded, analyst):
    component_create(
        user=analyst,
        document=_component("CMP-UCX", "Unified Communication X", ["ucx"]),
        summary="UCX",
    )
    report = _import(analyst, MIXED)

    assert report.unmatched == []
    assert (
        "ucx-generation_token-fifo",
        "backend",
        "other:ucx",
        "1.19.0",
        "CMP-UCX",
        "name",
    ) in _relations(report.run_id)


def test_a_name_two_components_bear_is_not_guessed(seeded, analyst):
    component_create(
        user=analyst,
        document=_component("CMP-NIXL-FORK", "NIXL fork", ["nixl"]),
        summary="A fork that the harness also calls nixl",
    )
    report = _import(analyst, SAMPLE)

    assert [m["name"] for m in report.unmatched] == ["nixl"]
    assert "CMP-NIXL, CMP-NIXL-FORK" in report.unmatched[0]["reason"]
    nixl = RunComponent.objects.get(scenario__scenario_id="nixl-none-fifo", role="backend")
    assert nixl.component is None


def test_a_package_url_wins_over_a_name(seeded, analyst):
    """The harness calls it mooncake, but its Package URL names another component: the
    Package URL is exact, the name is not."""
    component_create(
        user=analyst,
        document=_component(
            "CMP-MOONCAKE-TE", "Mooncake transfer engine", [], "pkg:pypi/mooncake-transfer-engine"
        ),
        summary="The PyPI package",
    )
    document = json.loads(SAMPLE.read_text())
    document["environment"]["backends"][0]["purl"] = "pkg:pypi/mooncake-transfer-engine@v0.3.7"
    report = _import(analyst, document=document)

    mooncake = next(m for m in report.components if m["name"] == "mooncake")
    assert (mooncake["component"], mooncake["matched_by"]) == ("CMP-MOONCAKE-TE", "purl")


def test_a_withdrawn_component_matches_nothing(seeded, analyst, reviewer):
    component_create(
        user=analyst,
        document=_component("CMP-UCX", "Unified Communication X", ["ucx"]),
        summary="UCX",
    )
    component_withdraw(user=analyst, key="CMP-UCX", summary="Withdrawn for the test")
    report = _import(analyst, MIXED)

    assert [m["name"] for m in report.unmatched] == ["other:ucx"]


def test_a_dry_run_reports_the_matches_and_writes_none(seeded, analyst):
    report = _import(analyst, MIXED, dry_run=True)

    assert report.outcome == "would_import"
    assert [m["name"] for m in report.unmatched] == ["other:ucx"]
    assert report.components
    assert not RunComponent.objects.exists()


def test_a_replacement_replaces_the_relations(seeded, analyst):
    first = _import(analyst, SAMPLE)
    document = json.loads(SAMPLE.read_text())
    document["environment"]["backends"][1]["version"] = "0.7.2"
    document["environment"]["backends"][1]["purl"] = "pkg:pypi/nixl@0.7.2"
    second = _import(analyst, document=document, replace=True)

    assert second.outcome == "replaced"
    versions = {
        (r.role, r.version)
        for r in RunComponent.objects.filter(run__run_id=first.run_id, component__key="CMP-NIXL")
    }
    assert versions == {("backend", "0.7.2")}
    assert RunComponent.objects.filter(run__run_id=first.run_id).count() == 6


def test_a_format_1_file_relates_its_backends_without_versions(seeded, analyst):
    report = _import(analyst, FIXTURES / "valid" / "valid-no-trials.json")

    assert report.unmatched == []
    relations = _relations(report.run_id)
    backends = [r for r in relations if r[1] == "backend"]
    assert [(name, version, key) for _, _, name, version, key, _ in backends] == [
        ("mooncake", "", "CMP-MOONCAKE"),
        ("mori", "", "CMP-MORI"),
        ("nixl", "", "CMP-NIXL"),
    ]


def test_matching_takes_a_fixed_number_of_queries(seeded, analyst, django_assert_max_num_queries):
    """Two queries to match, whatever the number of scenarios and names."""
    from claimsdb.importers.matching import match_run
    from claimsdb.importers.repro import parse_results

    document = json.loads(MIXED.read_text())
    for i in range(40):
        scenario = copy.deepcopy(document["scenarios"][0])
        scenario.update(id=f"extra-{i}", backend=f"other:backend-{i}", backend_version=str(i))
        document["scenarios"].append(scenario)
    parsed, problems = parse_results(io.BytesIO(json.dumps(document).encode()))
    assert problems == []

    with django_assert_max_num_queries(2):
        matches = match_run(parsed)
    assert len([m for m in matches if not m.component]) == 41


def test_runs_remain_lab_evidence(seeded, analyst):
    """Relating a run to components writes no figure, grades nothing and changes no
    affected entry: the case document changes only by the run's summary."""
    before = record_document("case", "CP22-003")
    figures, assessments = Figure.objects.count(), Assessment.objects.count()

    report = _import(analyst, SAMPLE)

    after = record_document("case", "CP22-003")
    assert report.outcome == "imported"
    assert (Figure.objects.count(), Assessment.objects.count()) == (figures, assessments)
    assert {k: v for k, v in after.items() if k != "reproduction_runs"} == {
        k: v for k, v in before.items() if k != "reproduction_runs"
    }
    assert after.get("affected") == before.get("affected")
    assert ReproductionScenario.objects.filter(run__run_id=report.run_id).count() == 3


def test_reimporting_the_same_file_adds_no_relation(seeded, analyst):
    first = _import(analyst, SAMPLE)
    count = RunComponent.objects.count()
    again = _import(analyst, SAMPLE)

    assert (first.outcome, again.outcome) == ("imported", "unchanged")
    assert RunComponent.objects.count() == count


def test_the_command_lists_the_unmatched_names(seeded, analyst):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("import_repro_results", str(MIXED), "--user", "analyst", stdout=out)

    text = out.getvalue()
    assert "1 name(s) matched no component:" in text
    assert "scenarios[3].backend: backend other:ucx 1.19.0: no active component" in text


# --- the new format's refusals and the report, through the API and the pages ---------------

REFUSED_1_1 = [
    FIXTURES / "invalid" / name
    for name in ("backend-purl.json", "backend-builds.json", "backend-versions-undeclared.json")
]


def _sidecar_pairs(path: Path) -> set[tuple[str, str]]:
    sidecar = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    return {(p["code"], p["path"]) for p in sidecar["problems"]}


def test_the_api_refuses_a_bad_1_1_file_with_every_code_and_path(seeded, analyst):
    client = token_client(analyst)
    for path in REFUSED_1_1:
        response = client.post(
            "/api/v1/imports/", data=path.read_bytes(), content_type="application/json"
        )
        assert response.status_code == 400, path
        body = response.json()
        assert {(e["code"], e["path"]) for e in body["errors"]} == _sidecar_pairs(path)
    assert not RunComponent.objects.exists()
    assert not ReproductionScenario.objects.exists()


def test_the_upload_page_refuses_them_and_shows_the_unmatched_names(seeded, analyst):
    client = signed_in(analyst)
    for path in REFUSED_1_1:
        with path.open("rb") as handle:
            response = client.post("/imports/", {"file": handle})
        page = client.get(response["Location"]).content.decode()
        for code, where in _sidecar_pairs(path):
            assert f'<code>{where}</code></td><td><code class="code">{code}</code>' in page
    assert not RunComponent.objects.exists()

    with MIXED.open("rb") as handle:
        response = client.post("/imports/", {"file": handle})
    page = client.get(response["Location"]).content.decode()
    assert "1 name matched no component, and none was guessed" in page
    assert "<code>other:ucx</code>" in page and "<code>scenarios[3].backend</code>" in page
    assert '<span class="key">CMP-MOONCAKE</span> <span class="muted">by name</span>' in page
    api = token_client(analyst).get(f"/api/v1/imports/{ImportReport.objects.first().pk}/")
    assert [m["name"] for m in api.json()["unmatched"]] == ["other:ucx"]


def test_match_runs_relates_stored_runs_to_components_added_since(
    seeded, analyst, django_assert_max_num_queries
):
    from django.core.management import call_command

    report = _import(analyst, MIXED)
    ucx = ("ucx-generation_token-fifo", "backend", "other:ucx", "1.19.0")
    assert (*ucx, None, "") in _relations(report.run_id)
    before = _relations(report.run_id)
    # nothing changed: nothing to do, and a batch costs a fixed number of queries
    with django_assert_max_num_queries(4):
        out = io.StringIO()
        call_command("match_runs", "--batch-size", "100", stdout=out)
    assert out.getvalue().strip().endswith("changed 0 to a component, 0 to none")
    component_create(
        user=analyst,
        document=_component("CMP-UCX", "Unified Communication X", ["ucx"]),
        summary="UCX, added after the run was imported",
    )
    out = io.StringIO()
    call_command("match_runs", "--dry-run", "--batch-size", "3", stdout=out)
    assert "would change 1 to a component, 0 to none" in out.getvalue()
    assert _relations(report.run_id) == before  # a dry run writes nothing
    out = io.StringIO()
    call_command("match_runs", "--batch-size", "3", stdout=out)
    assert (
        f"run {report.run_id}, scenario ucx-generation_token-fifo, backend 'other:ucx': now CMP-UCX"
    ) in out.getvalue()
    after = _relations(report.run_id)
    assert (*ucx, "CMP-UCX", "name") in after
    assert [r for r in after if r[:4] != ucx] == [r for r in before if r[:4] != ucx]
    # the import report still says what matched when the run was imported
    stored = ImportReport.objects.get(pk=report.id).report
    assert [m["name"] for m in stored["unmatched"]] == ["other:ucx"]
    # a component withdrawn lets its runs go
    component_withdraw(user=analyst, key="CMP-UCX", summary="Withdrawn")
    out = io.StringIO()
    call_command("match_runs", stdout=out)
    assert "changed 0 to a component, 1 to none" in out.getvalue()
    assert (*ucx, None, "") in _relations(report.run_id)
