"""The size limits (docs/limits.md): every write path refuses input beyond them with a stable
code and writes nothing; control characters are refused in keys, identifiers and file
names."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from claimsdb import limits
from claimsdb.importers import repro
from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.models import ImportReport, Revision
from claimsdb.records import RuleViolations
from claimsdb.services import bundle_load, case_create

from .repro_examples import VALID_SMALL
from .support import api_client, new_case, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(seeded, reviewer) -> APIClient:
    return token_client(reviewer)


def refused(call) -> list[tuple[str, str]]:
    with pytest.raises(RuleViolations) as caught:
        call()
    return [(v.code, v.path) for v in caught.value.violations]


# --- record documents ---------------------------------------------------------------------


def test_a_body_larger_than_a_document_is_413_in_the_error_shape(api):
    before = Revision.objects.count()
    body = json.dumps(new_case("CP22-003", summary="x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
    for method in ("put", "patch"):
        response = getattr(api, method)(
            "/api/v1/cases/CP22-003/?summary=big",
            body,
            content_type="application/json" if method == "put" else "application/merge-patch+json",
            HTTP_IF_MATCH="*",
        )
        assert response.status_code == 413, response.content
        payload = response.json()
        assert payload["status"] == 413
        assert [e["code"] for e in payload["errors"]] == ["request.too_large"]
    response = api.post("/api/v1/cases/?summary=big", body, content_type="application/json")
    assert response.status_code == 413
    assert Revision.objects.count() == before


def test_a_text_field_beyond_its_limit_is_refused_with_its_path(reviewer):
    document = new_case(summary="x" * (limits.TEXT_MAX_CHARS + 1))
    assert refused(lambda: case_create(user=reviewer, document=document, summary="s")) == [
        ("document.invalid_value", "summary")
    ]
    document = new_case(summary="x" * limits.TEXT_MAX_CHARS)
    case_create(user=reviewer, document=document, summary="s")


def test_the_schema_declares_the_text_limit(api):
    schema = json.loads(api.get("/api/v1/schema/?format=json").content)
    case = schema["components"]["schemas"]["CaseDocument"]["properties"]
    assert case["summary"]["maxLength"] == limits.TEXT_MAX_CHARS
    assert case["title"]["maxLength"] == 500


def test_a_document_beyond_its_limit_is_refused_in_a_bundle(reviewer, monkeypatch):
    monkeypatch.setattr("claimsdb.records.documents.DOCUMENT_MAX_BYTES", 2000)
    document = new_case(account="y" * 2000)
    bundle = {"format": "claimsdb.bundle/1", "methods": [], "sources": [], "rules": []}
    bundle["cases"] = [document]
    assert refused(lambda: bundle_load(user=reviewer, bundle=bundle, summary="s")) == [
        ("document.too_large", "cases[0]")
    ]


@pytest.mark.parametrize(
    ("field", "value", "code", "path"),
    [
        ("summary", "NUL\x00", "document.invalid_value", "summary"),
        ("tags", ["ok", "nul\x00"], "document.invalid_value", "tags[1]"),
        ("key", "CP99-001\n", "record.key_format", "key"),
        ("key", "CP99-\x1b001", "record.key_format", "key"),
    ],
)
def test_nul_and_control_characters_in_keys_are_refused(reviewer, field, value, code, path):
    document = new_case(**{field: value})
    codes = refused(lambda: case_create(user=reviewer, document=document, summary="s"))
    assert codes == [(code, path)]


def test_prose_keeps_tabs_and_newlines(reviewer):
    case_create(user=reviewer, document=new_case(account="a\n\tb\r\n\x07"), summary="s")


def test_control_characters_are_refused_in_object_keys(seeded, reviewer):
    document = copy.deepcopy(next(c for c in seeded["cases"] if c["assessments"]))
    values = document["assessments"][0]["values"]
    values["bad\x00key"] = "x"
    codes = refused(
        lambda: bundle_load(
            user=reviewer,
            bundle={
                "format": "claimsdb.bundle/1",
                "methods": [],
                "sources": [],
                "rules": [],
                "cases": [document],
            },
            summary="s",
        )
    )
    assert ("document.invalid_key", "cases[0].assessments[0].values.bad\x00key") in codes


# --- results files ------------------------------------------------------------------------


def results(**changes) -> dict:
    data = json.loads(VALID_SMALL.read_text(encoding="utf-8"))
    data.update(changes)
    return data


def import_bytes(user, data: bytes, filename: str = "results.json"):
    return ResultsImporter(user=user).import_file(io.BytesIO(data), filename=filename)


def test_results_notes_beyond_the_limit_are_refused(seeded, analyst):
    text = "n" * (limits.RESULTS_TEXT_MAX_CHARS + 1)
    report = import_bytes(analyst, json.dumps(results(notes=text)).encode())
    assert [(p.code, p.path) for p in report.problems] == [("repro.too_large", "notes")]
    assert report.outcome == "refused"
    report = import_bytes(analyst, json.dumps(results(**{"x-big": {"a": [text]}})).encode())
    assert [(p.code, p.path) for p in report.problems] == [("repro.too_large", "x-big.a[0]")]


def test_a_header_beyond_the_limit_stops_the_reading(seeded, analyst, monkeypatch):
    monkeypatch.setattr(limits, "RESULTS_HEADER_MAX_CHARS", 3000)
    data = results(**{f"x-{i}": "z" * 1000 for i in range(5)})
    report = import_bytes(analyst, json.dumps(data).encode())
    assert [p.code for p in report.problems] == ["repro.too_large"]


def test_a_file_beyond_the_upload_limit_is_refused(seeded, analyst, monkeypatch):
    data = VALID_SMALL.read_bytes()
    monkeypatch.setattr(limits, "UPLOAD_MAX_BYTES", len(data) - 10)
    report = import_bytes(analyst, data)
    assert [p.code for p in report.problems] == ["repro.too_large"]
    assert "bytes" in report.problems[0].message


def test_trial_rows_beyond_the_limit_are_refused(seeded, analyst, monkeypatch):
    monkeypatch.setattr(limits, "TRIAL_ROWS_MAX", 50)  # the file has 80 rows, 40 per scenario
    report = import_bytes(analyst, VALID_SMALL.read_bytes())
    assert [(p.code, p.path) for p in report.problems] == [("repro.too_many_trials", "trials[50]")]
    monkeypatch.setattr(limits, "TRIAL_ROWS_MAX", 1)  # counters only, no rows: their sum
    with VALID_SMALL.with_name("valid-no-trials.json").open("rb") as stream:
        _, problems = repro.parse_results(stream)
    assert ("repro.too_many_trials", "scenarios") in [(p.code, p.path) for p in problems]


def test_a_filename_with_control_characters_is_refused(seeded, analyst):
    report = import_bytes(analyst, VALID_SMALL.read_bytes(), filename="run\x00\x1b.json")
    assert [(p.code, p.path) for p in report.problems] == [("import.filename_invalid", "filename")]
    stored = ImportReport.objects.get(pk=report.id)
    assert "\x00" not in stored.filename and stored.outcome == "refused"


def test_an_upload_declared_beyond_the_limit_is_413_before_it_is_read(seeded, analyst, monkeypatch):
    monkeypatch.setattr("claimsdb.web.request_limits.UPLOAD_MAX_BYTES", 100)
    response = api_client(analyst).post(
        "/api/v1/imports/", VALID_SMALL.read_bytes(), content_type="application/json"
    )
    assert response.status_code == 413
    assert [e["code"] for e in response.json()["errors"]] == ["request.too_large"]
    assert ImportReport.objects.count() == 0
