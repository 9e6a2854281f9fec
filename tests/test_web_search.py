"""Finding things: search on the start page, filters on the case list."""

from __future__ import annotations

from claimsdb.records import record_document
from claimsdb.services import record_update

from .test_web_support import signed_in, text_of


def test_search_finds_cases_claims_and_sources(seeded, viewer):
    client = signed_in(viewer)
    html = client.get("/", {"q": "aborted request"}).content.decode()
    assert 'href="/cases/CP22-003/"' in html
    html = client.get("/", {"q": "Mooncake"}).content.decode()
    assert "CLM-CP22-003-B" in html
    html = client.get("/", {"q": "checksum"}).content.decode()
    assert 'href="/sources/SRC-SGLANG-PR-39229/"' in html
    html = client.get("/", {"q": "CLM-CP22-002-A"}).content.decode()
    assert "CLM-CP22-002-A" in text_of(html.split('id="h-results"', 1)[1])
    html = client.get("/", {"q": "zebra quokka"}).content.decode()
    assert "Nothing matches" in html


def test_case_list_filters_by_status_tag_and_current_assessment(seeded, viewer, reviewer):
    client = signed_in(viewer)

    def keys(**params):
        html = client.get("/cases/", params).content.decode()
        return [k for k in ("CP22-002", "CP22-003") if f'href="/cases/{k}/"' in html]

    assert keys() == ["CP22-002", "CP22-003"]
    assert keys(tag="rdma") == ["CP22-003"]
    assert keys(tag="production-incident") == ["CP22-002"]
    assert keys(status="draft") == []
    assert keys(**{"a.setting": "research_demonstration"}) == ["CP22-003"]
    assert keys(**{"a.setting": "production_incident"}) == []
    assert keys(**{"a.setting": "nonsense"}) == ["CP22-002", "CP22-003"]  # ignored
    # only the current (newest) assessment counts
    document = record_document("case", "CP22-003")
    newer = dict(document["assessments"][0], assessed_on="2026-12-01")
    newer["values"] = dict(newer["values"], setting="lab_only")
    document["assessments"].append(newer)
    record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary="new")
    assert keys(**{"a.setting": "research_demonstration"}) == []
    assert keys(**{"a.setting": "lab_only", "tag": "rdma", "status": "ready"}) == ["CP22-003"]


def test_case_list_shows_profile_labels(seeded, viewer):
    html = signed_in(viewer).get("/cases/").content.decode()
    assert "Setting: research demonstration" in html
    assert "impact ungraded" in html
