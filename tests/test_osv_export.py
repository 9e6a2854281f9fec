"""The OSV export of a release (claimsdb/exports/osv.py, docs/coverage.md): every document
validates against the OSV 1.6 schema written from the specification (tests/osv_schema.py),
the API and the command give the same bytes, and a release is read a batch at a time."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claimsdb.exports.osv import release_osv_documents
from claimsdb.models import Release
from claimsdb.records import record_document
from claimsdb.services import case_create, case_update, case_withdraw

from .osv_schema import OSV_SCHEMA
from .support import new_case, publish, token_client

VALIDATOR = jsonschema.Draft202012Validator(OSV_SCHEMA)
BACKENDS = ("CMP-MOONCAKE", "CMP-NIXL", "CMP-MORI")


def _entry(component: str, status: str = "affected", claim: str = "CLM-CP22-003-B", **more):
    return {
        "component": component,
        "status": status,
        "ranges": [],
        "versions": [],
        "claims": [claim],
        "note": "",
        **more,
    }


def _seed_affected(user) -> None:
    """CP22-003's affected backends as the seed states them (added if the seed lacks them)."""
    document = record_document("case", "CP22-003")
    assert document is not None
    if not document.get("affected"):
        document["affected"] = [_entry(key) for key in BACKENDS]
        case_update(user=user, key="CP22-003", document=document, summary="Affected backends")


def _add_sglang(user, **entry: Any) -> None:
    document = record_document("case", "CP22-003")
    assert document is not None
    document["affected"] = [e for e in document["affected"] if e["component"] != "CMP-SGLANG"]
    document["affected"].append(_entry("CMP-SGLANG", **entry))
    case_update(user=user, key="CP22-003", document=document, summary="SGLang's versions")


def _osv(number: int) -> list[dict[str, Any]]:
    response = token_client().get(f"/api/v1/releases/{number}/osv/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    documents = json.loads(b"".join(response.streaming_content))
    for document in documents:
        VALIDATOR.validate(document)
    return documents


def _supported_case(key: str, source: str = "SRC-SGLANG-PR-27372") -> dict[str, Any]:
    claim = f"CLM-{key}-A"
    return new_case(
        key,
        title=f"Case {key}",
        status="ready",
        summary="A case about SGLang.",
        claims=[
            {
                "id": claim,
                "statement": "SGLang is affected.",
                "status": "supported",
                "basis": "reported_finding",
                "origin": "human",
                "status_note": "",
                "evidence": [{"source": source, "relation": "supports", "locator": "§1"}],
            }
        ],
        affected=[
            _entry(
                "CMP-SGLANG",
                claim=claim,
                ranges=[{"events": [{"introduced": "0.4.0"}, {"fixed": "0.5.5"}]}],
            )
        ],
    )


def test_the_seed_exports_cp22_003_with_no_versions(seeded, analyst, reviewer):
    _seed_affected(analyst)
    release = publish(reviewer, notes="Affected backends")

    documents = _osv(release.number)

    assert [d["id"] for d in documents] == ["CLAIMSDB-CP22-003"]
    (osv,) = documents
    assert osv["schema_version"] == "1.6.0"
    assert osv["summary"] == record_document("case", "CP22-003")["title"]
    assert osv["related"] == ["CLAIMSDB-CP22-002"]
    assert "withdrawn" not in osv
    # Mooncake and NIXL have GitHub Package URLs, which OSV has no ecosystem for: entries
    # without a package, the Package URL and the evidence kept; MORI has no Package URL
    by_component = {a["database_specific"]["component"]: a for a in osv["affected"]}
    assert sorted(by_component) == ["CMP-MOONCAKE", "CMP-NIXL"]
    mooncake = by_component["CMP-MOONCAKE"]
    assert "package" not in mooncake and "ranges" not in mooncake and "versions" not in mooncake
    assert mooncake["database_specific"]["purl"] == "pkg:github/kvcache-ai/mooncake"
    assert mooncake["database_specific"]["claims"] == ["CLM-CP22-003-B"]
    # the one source it cites, the primary disclosure, has no URL: no reference to give
    assert "references" not in osv
    assert osv["published"] <= osv["modified"]


def test_a_pypi_component_exports_its_package_and_ranges(seeded, analyst, reviewer):
    _seed_affected(analyst)
    _add_sglang(
        analyst,
        ranges=[{"events": [{"introduced": "0.4.0"}, {"fixed": "0.5.5"}]}],
        versions=["0.5.4"],
        note="the SGLang side",
    )
    release = publish(reviewer, notes="SGLang")

    (osv,) = _osv(release.number)
    sglang = next(a for a in osv["affected"] if "package" in a)
    assert sglang["package"] == {"ecosystem": "PyPI", "name": "sglang", "purl": "pkg:pypi/sglang"}
    assert sglang["ranges"] == [
        {"type": "ECOSYSTEM", "events": [{"introduced": "0.4.0"}, {"fixed": "0.5.5"}]}
    ]
    assert sglang["versions"] == ["0.5.4"]
    assert sglang["database_specific"]["note"] == "the SGLang side"


def test_statuses_osv_has_no_entry_for_are_kept_aside(seeded, analyst, reviewer):
    _seed_affected(analyst)
    _add_sglang(analyst, status="not_affected")
    release = publish(reviewer, notes="SGLang not affected")

    (osv,) = _osv(release.number)
    assert "CMP-SGLANG" not in {a["database_specific"]["component"] for a in osv["affected"]}
    assert osv["database_specific"]["other_statuses"][0]["status"] == "not_affected"


def test_a_case_without_a_component_with_a_package_url_is_not_exported(seeded, analyst, reviewer):
    document = record_document("case", "CP22-003")
    document["affected"] = [_entry("CMP-MORI")]
    case_update(user=analyst, key="CP22-003", document=document, summary="MORI only")
    release = publish(reviewer, notes="MORI")

    assert _osv(release.number) == []


def test_a_withdrawn_case_says_when(seeded, analyst, reviewer):
    case_create(user=reviewer, document=_supported_case("CP99-001"), summary="A case")
    first = publish(reviewer, notes="CP99-001")
    case_withdraw(user=reviewer, key="CP99-001", summary="Withdrawn: a duplicate")
    second = publish(reviewer, notes="Withdrawn")

    (before,) = [d for d in _osv(first.number) if d["id"] == "CLAIMSDB-CP99-001"]
    (after,) = [d for d in _osv(second.number) if d["id"] == "CLAIMSDB-CP99-001"]
    assert "withdrawn" not in before
    assert after["withdrawn"] == after["modified"]
    assert after["published"] == before["published"] < after["modified"]
    # an older release exports as it was
    assert _osv(first.number) == [d for d in _osv(first.number)]


def test_the_command_writes_the_same_bytes_as_the_api(seeded, analyst, reviewer, tmp_path):
    _seed_affected(analyst)
    case_create(user=reviewer, document=_supported_case("CP99-001"), summary="A case")
    release = publish(reviewer, notes="Two cases")

    out = io.StringIO()
    call_command("export_records", "--release", str(release.number), "--format", "osv", stdout=out)
    response = token_client().get(f"/api/v1/releases/{release.number}/osv/")
    assert out.getvalue().encode() == b"".join(response.streaming_content)
    assert response["ETag"] == f'"release-{release.number}-osv"'
    assert (
        token_client()
        .get(f"/api/v1/releases/{release.number}/osv/", HTTP_IF_NONE_MATCH=response["ETag"])
        .status_code
        == 304
    )

    path = tmp_path / "osv.json"
    call_command(
        "export_records", "--release", str(release.number), "--format", "osv", "--out", str(path)
    )
    assert path.read_text(encoding="utf-8") == out.getvalue()
    documents = json.loads(path.read_text())
    assert [d["id"] for d in documents] == ["CLAIMSDB-CP22-003", "CLAIMSDB-CP99-001"]
    # the sources a case cites, with their URL and a type from their kind
    assert documents[1]["references"] == [
        {"type": "FIX", "url": "https://github.com/sgl-project/sglang/pull/27372"}
    ]


def test_the_command_refuses_without_a_release(seeded):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--release"):
        call_command("export_records", "--format", "osv", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no release 9"):
        call_command("export_records", "--release", "9", "--format", "osv", stdout=io.StringIO())
    assert token_client().get("/api/v1/releases/9/osv/").status_code == 404


def test_a_release_is_read_a_batch_at_a_time(seeded, analyst, reviewer):
    """The queries follow the number of batches, not the number of cases."""
    _seed_affected(analyst)
    for n in range(1, 7):
        case_create(user=reviewer, document=_supported_case(f"CP99-{n:03d}"), summary="A case")
    release = publish(reviewer, notes="Six cases")

    def queries(batch_size: int) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            documents = list(release_osv_documents(release, batch_size=batch_size))
        return len(captured.captured_queries), len(documents)

    one_batch, count = queries(100)
    three_batches, same = queries(3)  # CP22-002, CP22-003 and six cases: 8 cases, 3 batches
    assert count == same == 7  # CP22-003 and the six
    assert one_batch <= 6  # the collation, then five a batch
    assert three_batches <= 3 * one_batch


def test_every_document_of_a_mixed_release_validates(seeded, analyst, reviewer):
    """Ranges with last_affected and limit, explicit versions, several components."""
    _seed_affected(analyst)
    _add_sglang(
        analyst,
        ranges=[
            {"events": [{"introduced": "0"}, {"last_affected": "0.5.4"}]},
        ],
        versions=["0.5.4"],
    )
    for n in range(1, 4):
        document = _supported_case(f"CP99-{n:03d}")
        document["affected"][0]["ranges"] = [
            {"events": [{"introduced": "0.4.0"}, {"fixed": "0.5.5"}, {"limit": "0.6.0"}]}
        ]
        case_create(user=reviewer, document=copy.deepcopy(document), summary="A case")
    release = publish(reviewer, notes="Mixed")

    documents = _osv(release.number)
    assert len(documents) == 4
    assert Release.objects.count() == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("modified"),
        lambda d: d.update(modified="2026-12-04T10:00:00+01:00"),
        lambda d: d.update(id="CLAIMSDB CP22 003"),
        lambda d: d["affected"][0].pop("package"),
        lambda d: d["affected"][0]["package"].update(ecosystem="PyPy"),
        lambda d: d["affected"][0]["package"].update(purl="pkg:pypi/sglang@0.5.4"),
        lambda d: d["affected"][0]["ranges"][0]["events"].append({"last_affected": "0.5.6"}),
        lambda d: d["affected"][0]["ranges"][0]["events"].pop(0),
        lambda d: d["affected"][0]["ranges"][0]["events"][0].update(fixed="1"),
        lambda d: d["affected"][0]["ranges"][0].update(type="GIT"),
        lambda d: d.update(references=[{"type": "BLOG", "url": "https://example.org/"}]),
        lambda d: d.update(summary="two\nlines"),
    ],
)
def test_the_schema_refuses_what_the_specification_forbids(change):
    """The schema checks can fail: each change breaks one rule of the specification."""
    document = {
        "schema_version": "1.6.0",
        "id": "CLAIMSDB-CP22-003",
        "modified": "2026-12-04T10:00:00Z",
        "summary": "one line",
        "affected": [
            {
                "package": {"ecosystem": "PyPI", "name": "sglang", "purl": "pkg:pypi/sglang"},
                "ranges": [
                    {"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "0.5.5"}]}
                ],
            }
        ],
    }
    VALIDATOR.validate(document)
    change(document)
    assert not VALIDATOR.is_valid(document)
