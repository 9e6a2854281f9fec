"""A release exported as STIX 2.1 and as CSV tables (docs/exports.md): the same bytes for
the same release, on any database, at any batch size; STIX that stix2-validator accepts;
CSV cells a spreadsheet cannot run; memory bounded by the batch, queries fixed per batch."""

from __future__ import annotations

import copy
import csv
import datetime as dt
import io
import json
import os
import re
import tracemalloc
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from stix2validator import ValidationOptions, validate_instance

from claimsdb.exports import stix, tables
from claimsdb.models import Release, Revision
from claimsdb.records import record_document
from claimsdb.records import stream as record_stream
from claimsdb.records.kinds import record_kinds
from claimsdb.services import bundle_load

from .support import ROOT, case_doc, edit_case, new_case, publish, queries_of

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden"
STIX_GOLDEN = GOLDEN / "release-1.stix.json"
CSV_GOLDEN = GOLDEN / "release-1-csv"
EXPORTS_DOC = (ROOT / "docs" / "exports.md").read_text(encoding="utf-8")
# Set to rewrite the golden files from the seed release (then review the diff).
UPDATE = os.environ.get("CLAIMSDB_UPDATE_GOLDEN") == "1"

PINNED = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)


def pin_times() -> None:
    """Give every revision and release a time of its own number: the ledger's times are
    the clock's when written, and the golden files are of one release for ever."""
    for number in Revision.objects.values_list("number", flat=True):
        Revision.objects.filter(number=number).update(
            created_at=PINNED + dt.timedelta(minutes=number, microseconds=number * 1001)
        )
    for number in Release.objects.values_list("number", flat=True):
        Release.objects.filter(number=number).update(
            published_at=PINNED + dt.timedelta(days=number, microseconds=number * 7)
        )


@pytest.fixture
def seed_release(seeded, reviewer) -> Release:
    """Release 1 of the seed, its times pinned."""
    publish(reviewer, notes="The seed: CP22-002 and CP22-003.")
    pin_times()
    return Release.objects.get(number=1)


def export(release: int, form: str, tmp_path: Path, **options) -> bytes:
    out = tmp_path / f"export-{form}-{options.get('batch_size', 0)}"
    quiet = {"stderr": io.StringIO()}
    call_command("export_records", release=release, format=form, out=str(out), **quiet, **options)
    data = out.read_bytes()
    if form == "stix":  # every STIX export the tests make is validated
        errors, warnings = validation(json.loads(data))
        assert errors == []
        assert {re.search(r"\{(\d+)\}", w).group(1) for w in warnings} <= documented_warnings()
    return data


def csv_members(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {
            info.filename.split("/", 1)[1]: archive.read(info).decode("utf-8")
            for info in archive.infolist()
        }


def validation(bundle: dict) -> tuple[list[str], list[str]]:
    result = validate_instance(bundle, ValidationOptions(version="2.1"))
    return [str(e) for e in result.errors], [str(w) for w in result.warnings]


def documented_warnings() -> set[str]:
    """The stix2-validator warning codes docs/exports.md explains (``{103}``…)."""
    section = EXPORTS_DOC.split("### What stix2-validator warns of", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `\{(\d+)\}`", section, flags=re.MULTILINE))


# --- STIX -------------------------------------------------------------------------------


def test_the_seed_release_exports_the_golden_stix_bundle(seed_release, tmp_path, client):
    data = export(1, "stix", tmp_path)
    if UPDATE:
        STIX_GOLDEN.write_bytes(data)
    assert data == STIX_GOLDEN.read_bytes()
    # the download is the same bytes, and so is every batch size
    response = client.get("/api/v1/releases/1/stix/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/stix+json;version=2.1; charset=utf-8"
    assert b"".join(response.streaming_content) == data
    for size in (1, 2, 3):
        assert export(1, "stix", tmp_path, batch_size=size) == data


def test_the_seed_bundle_is_valid_and_every_warning_is_explained(seed_release, tmp_path):
    bundle = json.loads(export(1, "stix", tmp_path))
    errors, warnings = validation(bundle)
    assert errors == []
    codes = {re.search(r"\{(\d+)\}", w).group(1) for w in warnings}
    assert codes and codes <= documented_warnings(), (codes, warnings)


def test_the_bundle_maps_each_part_of_the_record(seed_release, tmp_path, seed_bundle):
    objects = json.loads(export(1, "stix", tmp_path))["objects"]
    by_id = {o["id"]: o for o in objects}
    assert len(by_id) == len(objects)  # no object twice
    types = [o["type"] for o in objects]
    assert types[:3] == ["identity", "extension-definition", "note"]
    ext = stix.EXTENSION_ID
    incident = by_id[stix.incident_id("CP22-003")]
    assert incident["type"] == "incident"
    document = case_doc(seed_bundle, "CP22-003")
    assert incident["name"] == document["title"]
    assert incident["labels"] == document["tags"]
    fields = incident["extensions"][ext]["fields"]
    assert fields["assessments"] == document["assessments"]
    assert fields["scope_note"] == document["scope_note"]
    # the revision the release published, and the times of the ledger
    revision = Revision.objects.filter(record_key="CP22-003").order_by("-number").first()
    assert incident["extensions"][ext]["revision"] == revision.number
    assert incident["modified"] == revision.created_at.isoformat().replace("+00:00", "Z")
    # claims are notes on the incident and the sources they cite, evidence with its locator
    claim = document["claims"][0]
    note = by_id[stix.claim_note_id(claim["id"])]
    link = claim["evidence"][0]
    assert note["content"] == claim["statement"]
    assert note["object_refs"] == [incident["id"], stix.source_report_id(link["source"])]
    reference = next(r for r in note["external_references"] if r["source_name"] == link["source"])
    assert reference["description"] == f"{link['relation']}: {link['locator']}"
    cited = next(s for s in seed_bundle["sources"] if s["key"] == link["source"])
    assert reference.get("url", "") == cited["url"]
    # sources are reports; every seed source is in the bundle
    for source in seed_bundle["sources"]:
        report = by_id[stix.source_report_id(source["key"])]
        assert report["name"] == source["title"]
    # the symmetric relation once, the scope rule a note on the case it protects
    relations = [o for o in objects if o["type"] == "relationship"]
    assert [(r["relationship_type"], r["source_ref"], r["target_ref"]) for r in relations] == [
        ("related-distinct", stix.incident_id("CP22-002"), stix.incident_id("CP22-003"))
    ]
    rule = next(o for o in objects if o.get("abstract", "").startswith("Scope rule"))
    assert rule["object_refs"] == [incident["id"]]
    assert rule["extensions"][ext]["fields"]["figure"] == "FIG-CP22-002-RESPONSES"
    # the case's report gathers its objects; methods travel whole (the generic mapping)
    report = by_id[stix.stix_id("report", "case:CP22-003")]
    assert {incident["id"], note["id"], relations[0]["id"]} <= set(report["object_refs"])
    method = next(o for o in objects if o.get("abstract", "").startswith("assessment method"))
    assert (
        method["extensions"][ext]["fields"]["dimensions"]
        == (seed_bundle["methods"][0]["dimensions"])
    )


def test_a_later_release_keeps_identities_and_revokes_the_withdrawn(
    seed_release, reviewer, tmp_path
):
    """Release 2 withdraws a claim and adds a directed relation and a case that begins
    with what a spreadsheet would run: every object keeps its identifier, what changed
    has a new ``modified``, the withdrawn claim is revoked, and the bundle stays valid."""
    first = {o["id"]: o for o in json.loads(export(1, "stix", tmp_path))["objects"]}
    bundle_load(
        user=reviewer,
        bundle={
            "format": "claimsdb.bundle/1",
            "methods": [],
            "sources": [],
            "rules": [],
            "cases": [
                new_case(
                    "CP99-001",
                    status="ready",
                    title='=HYPERLINK("http://evil.example")',
                    summary="-2+3 and a variant",
                    relations=[{"case": "CP22-003", "kind": "variant_of", "note": ""}],
                    claims=[
                        {
                            "id": "CLM-CP99-001-A",
                            "statement": "@a statement a spreadsheet would run",
                            "status": "unverified",
                            "status_note": "",
                            "basis": "analyst_inference",
                            "origin": "human",
                            "evidence": [
                                {
                                    "source": "SRC-SGLANG-PR-27372",
                                    "relation": "context",
                                    "locator": "the diff",
                                }
                            ],
                        }
                    ],
                )
            ],
        },
        summary="A variant",
    )
    claims = record_document("case", "CP22-003")["claims"]
    claims[2]["status"] = "withdrawn"
    claims[2]["status_note"] = "superseded"
    edit_case(reviewer, "CP22-003", "Withdraw a claim", claims=claims)
    publish(reviewer, notes="2")
    pin_times()
    bundle = json.loads(export(2, "stix", tmp_path))
    errors, warnings = validation(bundle)
    assert errors == []
    assert {re.search(r"\{(\d+)\}", w).group(1) for w in warnings} <= documented_warnings()
    second = {o["id"]: o for o in bundle["objects"]}
    assert set(first) - {stix.stix_id("note", "release:1")} <= set(second)
    withdrawn = second[stix.claim_note_id(claims[2]["id"])]
    assert withdrawn["revoked"] is True
    assert withdrawn["modified"] > first[withdrawn["id"]]["modified"]
    unchanged = stix.incident_id("CP22-002")
    assert second[unchanged] == first[unchanged]
    note = second[stix.claim_note_id("CLM-CP99-001-A")]
    assert note["external_references"][1] == {
        "source_name": "SRC-SGLANG-PR-27372",
        "description": "context: the diff",
        "url": "https://github.com/sgl-project/sglang/pull/27372",
    }
    variant = next(o for o in bundle["objects"] if o.get("relationship_type") == "variant-of")
    assert (variant["source_ref"], variant["target_ref"]) == (
        stix.incident_id("CP99-001"),
        stix.incident_id("CP22-003"),
    )
    # and in CSV, what a spreadsheet would run is text
    members = csv_members(export(2, "csv", tmp_path))
    cases = {row["key"]: row for row in csv.DictReader(io.StringIO(members["cases.csv"]))}
    assert cases["CP99-001"]["title"] == '\'=HYPERLINK("http://evil.example")'
    assert cases["CP99-001"]["summary"] == "'-2+3 and a variant"
    claims_rows = list(csv.DictReader(io.StringIO(members["claims.csv"])))
    assert claims_rows[-1]["statement"] == "'@a statement a spreadsheet would run"
    relations = list(csv.DictReader(io.StringIO(members["relations.csv"])))
    assert {"case": "CP99-001", "other_case": "CP22-003", "kind": "variant_of", "note": ""} in (
        relations
    )


def test_a_kind_without_a_mapping_is_carried_whole(seed_release, tmp_path, monkeypatch):
    """A kind registered without ``stix_mapping`` (nor ``csv_tables``) gets the generic
    mapping: a note carrying its whole document, and a table of its fields."""
    source = record_kinds.get("source")
    monkeypatch.setitem(record_kinds._kinds, "source", replace(source, stix_mapping=""))
    bundle = json.loads(export(1, "stix", tmp_path))
    notes = [o for o in bundle["objects"] if o.get("abstract", "").startswith("source ")]
    assert len(notes) == 10
    fields = notes[0]["extensions"][stix.EXTENSION_ID]["fields"]
    assert fields["key"] == notes[0]["abstract"].split()[-1] and "publisher" in fields
    assert validation(bundle)[0] == []


def test_the_extension_schema_is_served_and_describes_the_extension(seed_release, client, tmp_path):
    response = client.get("/api/v1/stix/extension-schema.json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    objects = json.loads(export(1, "stix", tmp_path))["objects"]
    definition = objects[1]
    assert definition["id"] == stix.EXTENSION_ID
    assert definition["schema"] == "http://127.0.0.1:8000/api/v1/stix/extension-schema.json"
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    for obj in objects:
        for name, extension in obj.get("extensions", {}).items():
            assert name == stix.EXTENSION_ID
            assert list(validator.iter_errors(extension)) == []


def test_downloads_of_a_missing_release_are_json_errors(db, client):
    for path in ("/api/v1/releases/7/stix/", "/api/v1/releases/7/csv/"):
        response = client.get(path, HTTP_ACCEPT="application/stix+json, application/zip")
        assert response.status_code == 404
        assert response["Content-Type"].startswith("application/json")
        assert json.loads(response.content)["errors"][0]["code"] == "release.not_found"


def test_downloads_are_cached_for_ever(seed_release, client):
    for path, tag in (("stix/", '"release-1-stix"'), ("csv/", '"release-1-csv"')):
        response = client.get(f"/api/v1/releases/1/{path}")
        assert response["ETag"] == tag
        assert "immutable" in response["Cache-Control"]
        assert client.get(f"/api/v1/releases/1/{path}", HTTP_IF_NONE_MATCH=tag).status_code == 304
    listed = client.get("/api/v1/releases/1/").json()
    assert listed["stix"].endswith("/api/v1/releases/1/stix/")
    assert listed["csv"].endswith("/api/v1/releases/1/csv/")


def test_the_formats_need_a_release(db, tmp_path):
    with pytest.raises(CommandError, match="--release"):
        call_command("export_records", format="stix", stderr=io.StringIO())
    with pytest.raises(CommandError, match="--out"):
        call_command("export_records", format="csv", release=1, stderr=io.StringIO())
    with pytest.raises(CommandError, match="no release 3"):
        call_command("export_records", format="stix", release=3, stderr=io.StringIO())


# --- CSV --------------------------------------------------------------------------------


def test_the_seed_release_exports_the_golden_csv_tables(seed_release, tmp_path, client):
    data = export(1, "csv", tmp_path)
    members = csv_members(data)
    if UPDATE:
        CSV_GOLDEN.mkdir(exist_ok=True)
        for name, text in members.items():
            (CSV_GOLDEN / name).write_bytes(text.encode("utf-8"))
    golden = {path.name: path.read_bytes().decode("utf-8") for path in CSV_GOLDEN.iterdir()}
    assert members == golden
    assert list(members) == [
        "cases.csv",
        "claims.csv",
        "evidence.csv",
        "assessments.csv",
        "figures.csv",
        "relations.csv",
        "affected.csv",
        "sources.csv",
        "rules.csv",
        "methods.csv",
        "components.csv",
    ]
    # the zip: fixed times and modes; the same bytes at any batch size, and downloaded
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {info.date_time for info in archive.infolist()} == {tables.ZIP_TIME}
        assert {info.external_attr for info in archive.infolist()} == {tables.ZIP_MODE}
    for size in (1, 2):
        assert export(1, "csv", tmp_path, batch_size=size) == data
    response = client.get("/api/v1/releases/1/csv/")
    assert response["Content-Type"] == "application/zip"
    assert b"".join(response.streaming_content) == data
    for text in members.values():
        assert "\r\n" not in text and text.endswith("\n")


def test_cases_carry_their_current_assessment_and_claim_counts(seed_release, tmp_path):
    members = csv_members(export(1, "csv", tmp_path))
    cases = {row["key"]: row for row in csv.DictReader(io.StringIO(members["cases.csv"]))}
    assert cases["CP22-003"]["claims"] == "3"
    assert cases["CP22-003"]["claims_supported"] == "3"
    assert cases["CP22-003"]["value_exploitation"] == "demonstrated"
    assert cases["CP22-003"]["assessment_impact"] == ""
    assert cases["CP22-002"]["assessment_method"] == ""
    evidence = list(csv.DictReader(io.StringIO(members["evidence.csv"])))
    assert evidence[0]["locator"] and evidence[0]["relation"] in {"supports", "context"}


@pytest.mark.parametrize(
    "text, cell",
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("a=1", "a=1"),
        ("", ""),
    ],
)
def test_formula_cells_are_escaped(text, cell):
    assert tables.cell(text, "text") == cell
    assert tables.cell([text, "b"], "list") == tables.safe_cell(f"{text}; b")


def test_numbers_are_not_escaped():
    assert tables.cell(-5, "integer") == "-5"
    assert tables.cell(-1.5, "number") == "-1.5"


def test_every_column_is_in_the_data_dictionary():
    """docs/exports.md lists every column of every table with its type."""
    for name, columns in tables.data_dictionary().items():
        section = EXPORTS_DOC.split(f"### `{name}.csv`", 1)
        assert len(section) == 2, f"docs/exports.md has no section for {name}.csv"
        text = section[1].split("\n### ", 1)[0]
        for column in columns:
            assert f"| `{column.name}` | {column.type} |" in text, (name, column.name)


# --- bounded memory and fixed queries ---------------------------------------------------

BATCH = 10


def synthetic(seed: dict, start: int, count: int) -> list[dict]:
    template = case_doc(seed, "CP22-003")
    cases = []
    for number in range(start, start + count):
        key = f"CPS-{number:05d}"
        document = copy.deepcopy(template)
        document.update(key=key, title=f"Synthetic case {number}", relations=[])
        renamed = {}
        for letter, claim in zip("ABC", document["claims"], strict=False):
            renamed[claim["id"]] = claim["id"] = f"CLM-{key}-{letter}"
        for assessment in document["assessments"]:
            basis = assessment["evidence_basis"]
            basis["claims"] = sorted(renamed[c] for c in basis["claims"])
        for entry in document.get("affected", []):  # its affected entries rest on its claims
            entry["claims"] = [renamed[c] for c in entry["claims"]]
        cases.append(document)
    return cases


def add_cases(user, seed: dict, start: int, count: int) -> None:
    bundle_load(
        user=user,
        bundle={
            "format": "claimsdb.bundle/1",
            "methods": [],
            "sources": [],
            "rules": [],
            "cases": synthetic(seed, start, count),
        },
        summary="Synthetic cases",
    )


def exports(tmp_path: Path) -> dict[str, Callable[[], object]]:
    release = Release.objects.order_by("-number").values_list("number", flat=True).first()
    quiet = {"batch_size": BATCH, "stdout": io.StringIO(), "stderr": io.StringIO()}
    return {
        form: (
            lambda form=form: call_command(
                "export_records",
                release=release,
                format=form,
                out=str(tmp_path / f"out.{form}"),
                **quiet,
            )
        )
        for form in ("stix", "csv")
    }


def peak(command: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        command()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_follows_the_batch_size_not_the_release(seeded, seed_bundle, reviewer, tmp_path):
    small, large = 20, 80
    add_cases(reviewer, seed_bundle, 1, small)
    publish(reviewer, notes="small")
    for command in exports(tmp_path).values():
        command()  # imports and caches warmed up
    small_peaks = {name: peak(command) for name, command in exports(tmp_path).items()}
    add_cases(reviewer, seed_bundle, 1 + small, large - small)
    publish(reviewer, notes="large")
    large_peaks = {name: peak(command) for name, command in exports(tmp_path).items()}
    for name in small_peaks:
        assert large_peaks[name] <= 1.5 * small_peaks[name], (name, small_peaks, large_peaks)


# A batch of cases more costs, in STIX: the entries with their snapshots, the records' first
# revisions, the sources their evidence cites (and one for the released cases their
# symmetric relations name, none here: these cases have no relations); in CSV: the entries
# and first revisions once per case table (six).
PER_BATCH = {"stix": 3, "csv": 2 * len(tables.CASE_TABLES)}


def test_queries_per_batch_are_fixed(seeded, seed_bundle, reviewer, tmp_path):
    counts: dict[str, list[int]] = {name: [] for name in PER_BATCH}
    added = 0
    for batches in (1, 2, 3):
        add_cases(reviewer, seed_bundle, added + 1, batches * BATCH - 2 - added)
        added = batches * BATCH - 2
        publish(reviewer, notes=str(batches))
        for name, command in exports(tmp_path).items():
            counts[name].append(queries_of(command))
    for name, (one, two, three) in counts.items():
        assert two - one == three - two == PER_BATCH[name], (name, counts[name])


# --- PostgreSQL -------------------------------------------------------------------------


@pytest.mark.postgres(reason="collations are PostgreSQL's")
def test_postgresql_exports_the_golden_bytes_under_a_language_collation(
    seed_release, tmp_path, monkeypatch
):
    """The golden files are the SQLite export's: PostgreSQL gives the same bytes, also
    where it orders keys by a language collation."""
    monkeypatch.setattr(record_stream, "orders_bytewise", lambda queryset: False)
    assert export(1, "stix", tmp_path, batch_size=1) == STIX_GOLDEN.read_bytes()
    golden = {path.name: path.read_bytes().decode("utf-8") for path in CSV_GOLDEN.iterdir()}
    assert csv_members(export(1, "csv", tmp_path, batch_size=1)) == golden
