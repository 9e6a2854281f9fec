"""Who sets a case ready, the release preview, the notes refusal, citing an unreleased
revision, and the Atom feeds of releases and of a case."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claimsdb.models import Release
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, case_create
from claimsdb.services.releases import release_plan

from .support import (
    api_client,
    approve_all,
    edit_case,
    field_block,
    get_queries,
    latest,
    new_case,
    publish,
    queries_of,
    signed_in,
    text_of,
)

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
CASE = "CP22-003"


# --- only a reviewer sets ready ------------------------------------------------------------


def test_an_analyst_cannot_set_ready_through_the_services(seeded, analyst, reviewer):
    edit_case(analyst, "CP22-002", status="draft")
    before = latest("case", "CP22-002")
    with pytest.raises(RuleViolations) as refused:
        edit_case(analyst, "CP22-002", status="ready")
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("status.ready_needs_reviewer", "status")
    ]
    assert latest("case", "CP22-002") == before
    assert record_document("case", "CP22-002")["status"] == "draft"
    # the proposal is in_review; the reviewer sets ready
    edit_case(analyst, "CP22-002", status="in_review")
    edit_case(reviewer, "CP22-002", status="ready")
    assert record_document("case", "CP22-002")["status"] == "ready"


def test_an_analyst_may_move_a_ready_case_back_and_edit_one_that_stays_ready(seeded, analyst):
    edit_case(analyst, CASE, title="Edited while ready")
    assert record_document("case", CASE)["status"] == "ready"
    edit_case(analyst, CASE, status="in_review")
    assert record_document("case", CASE)["status"] == "in_review"


def test_an_analyst_cannot_create_a_ready_case(seeded, analyst, reviewer):
    with pytest.raises(RuleViolations) as refused:
        case_create(user=analyst, document=new_case(status="ready"), summary="New")
    assert refused.value.codes == ["status.ready_needs_reviewer"]
    case_create(user=reviewer, document=new_case(status="ready"), summary="New")


def test_a_bundle_by_an_analyst_cannot_set_ready(seeded, analyst, reviewer):
    bundle = {
        "format": "claimsdb.bundle/1",
        "methods": [],
        "sources": [],
        "cases": [new_case("CP99-001"), new_case("CP99-002", status="ready")],
        "rules": [],
    }
    with pytest.raises(RuleViolations) as refused:
        bundle_load(user=analyst, bundle=copy.deepcopy(bundle), summary="Load")
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("status.ready_needs_reviewer", "cases[1].status")
    ]
    assert record_document("case", "CP99-001") is None
    assert len(bundle_load(user=reviewer, bundle=bundle, summary="Load")) == 2


def test_load_records_as_an_analyst_is_refused_and_as_a_reviewer_loads(
    db, analyst, reviewer, tmp_path, capsys
):
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(
            {
                "format": "claimsdb.bundle/1",
                **{name: [] for name in ("methods", "sources", "rules")},
                "cases": [new_case(status="ready")],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match="refused"):
        call_command("load_records", str(path), user="analyst", summary="Load")
    assert "cases[0].status: status.ready_needs_reviewer" in capsys.readouterr().err
    assert record_document("case", "CP99-001") is None
    call_command("load_records", str(path), user="reviewer", summary="Load")
    assert record_document("case", "CP99-001")["status"] == "ready"


def test_setup_demo_loads_the_seed_with_its_ready_cases(settings, db, tmp_path, monkeypatch):
    from claimsdb.management.commands import setup_demo

    settings.DEBUG = True
    monkeypatch.setattr(setup_demo, "PASSWORD_FILE", tmp_path / "demo-password")
    call_command("setup_demo")
    assert record_document("case", CASE)["status"] == "ready"
    assert Release.objects.get().entries.filter(record_key=CASE, change="new").exists()


def test_the_api_refuses_ready_from_an_analyst(seeded, analyst, reviewer):
    edit_case(reviewer, "CP22-002", status="draft")
    url = "/api/v1/cases/CP22-002/?summary=Ready"
    document = record_document("case", "CP22-002")
    document["status"] = "ready"
    etag = f'"{latest("case", "CP22-002")}"'
    response = api_client(analyst).put(url, document, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 400
    assert [(e["code"], e["path"]) for e in response.json()["errors"]] == [
        ("status.ready_needs_reviewer", "status")
    ]
    patch = api_client(analyst).patch(url, {"status": "ready"}, format="json")
    assert patch.status_code == 400
    assert [e["code"] for e in patch.json()["errors"]] == ["status.ready_needs_reviewer"]
    ok = api_client(reviewer).put(url, document, format="json", HTTP_IF_MATCH=etag)
    assert ok.status_code == 200, ok.content
    assert record_document("case", "CP22-002")["status"] == "ready"


def test_the_edit_form_offers_ready_to_reviewers_only(seeded, analyst, reviewer):
    edit_case(reviewer, "CP22-002", status="draft")
    url = "/cases/CP22-002/edit/"
    analyst_form = signed_in(analyst).get(url).content.decode()
    option = re.search(r'<option value="ready"[^>]*>([^<]*)<', analyst_form)
    assert "disabled" in option.group(0) and option.group(1) == "ready (set by a reviewer)"
    reviewer_form = signed_in(reviewer).get(url).content.decode()
    option = re.search(r'<option value="ready"[^>]*>', reviewer_form)
    assert "disabled" not in option.group(0)
    # a ready case keeps its status for the analyst who edits it
    ready_form = signed_in(analyst).get(f"/cases/{CASE}/edit/").content.decode()
    assert "disabled" not in re.search(r'<option value="ready"[^>]*>', ready_form).group(0)


def form_data(document: dict, **changes) -> dict:
    data = {
        f"case-{name}": document[name]
        for name in ("title", "status", "summary", "scope_note", "basis", "limits", "account")
    }
    data["case-tags"] = ", ".join(document["tags"])
    data.update({"summary": "Propose", "material": "on"})
    data.update(changes)
    return data


def test_the_edit_form_refuses_ready_from_an_analyst_at_the_status_field(seeded, analyst, reviewer):
    edit_case(reviewer, "CP22-002", status="draft")
    before = latest("case", "CP22-002")
    document = record_document("case", "CP22-002")
    client = signed_in(analyst)
    data = form_data(document, **{"case-status": "ready", "case-title": "My new title"})
    data["base_revision"] = str(before)
    response = client.post("/cases/CP22-002/edit/", data)
    assert response.status_code == 422
    html = response.content.decode()
    assert "only a reviewer may set case CP22-002 to ready" in field_block(html, "case-status")
    assert 'value="My new title"' in html  # the input is kept
    assert latest("case", "CP22-002") == before
    data["case-status"] = "in_review"
    assert client.post("/cases/CP22-002/edit/", data).status_code == 302
    assert record_document("case", "CP22-002")["status"] == "in_review"


# --- the release preview and its notes -------------------------------------------------------


@pytest.fixture
def released(seeded, reviewer) -> Release:
    return publish(reviewer, notes="First release")


def test_the_preview_lists_titles_and_diff_links_as_the_release_page_does(
    released, analyst, reviewer
):
    before = latest("case", CASE)
    edit_case(analyst, CASE, title="A retitled case")
    after = latest("case", CASE)
    approve_all()
    client = signed_in(reviewer)
    preview = client.get("/releases/new/").content.decode()
    assert "CP22-003</a> — <bdi>A retitled case</bdi>" in preview
    diff = f'href="/cases/{CASE}/diff/{before}/{after}/"'
    assert diff in preview
    assert "1 changed record" in text_of(preview)
    publish(reviewer, notes="Second")
    page = client.get("/releases/2/").content.decode()
    assert "CP22-003</a> — <bdi>A retitled case</bdi>" in page and diff in page


def test_the_preview_pages_a_long_list(seeded, reviewer):
    bundle_load(
        user=reviewer,
        bundle={
            "format": "claimsdb.bundle/1",
            **{name: [] for name in ("methods", "sources", "rules")},
            "cases": [new_case(f"CP99-{n:03d}", status="ready") for n in range(60)],
        },
        summary="Many",
    )
    approve_all()
    changed = release_plan(preview=0).changed_count
    assert changed > 50
    client = signed_in(reviewer)
    first = text_of(client.get("/releases/new/").content.decode())
    assert f"{changed} changed records · page 1 of 2" in first
    second = client.get("/releases/new/?page=2").content.decode()
    # entries are listed by kind then key: the last page ends with the sources
    keys = re.findall(r'<th scope="row"><a href="/[a-z]+/(.+?)/revisions/', second)
    assert len(keys) == changed - 50
    every = [e.key for e in release_plan(preview=changed).changed]
    assert keys == every[50:]
    # a page past the end shows the last one
    assert keys == re.findall(
        r'<th scope="row"><a href="/[a-z]+/(.+?)/revisions/',
        client.get("/releases/new/?page=9").content.decode(),
    )


def test_empty_notes_are_refused_at_the_notes_field(released, analyst, reviewer):
    edit_case(analyst, CASE, title="Retitled")
    response = signed_in(reviewer).post("/releases/new/", {"notes": "   "})
    assert response.status_code == 400
    html = response.content.decode()
    assert "a release needs notes" in field_block(html, "notes")
    assert "has-error" in re.search(r'<div class="([^"]*)" id="field-notes">', html).group(1)
    assert Release.objects.count() == 1


# --- citing an unreleased revision -----------------------------------------------------------


def cite_box(html: str) -> str:
    text = text_of(re.search(r'<div class="cite">(.*?)</div>', html, re.S).group(1))
    return re.sub(r"\s+([,.:;)])", r"\1", text)


def test_citing_an_unreleased_revision_says_the_link_is_not_public_yet(released, analyst, viewer):
    published = latest("case", CASE)
    edit_case(analyst, CASE, title="Retitled")
    box = cite_box(signed_in(viewer).get(f"/cases/{CASE}/").content.decode())
    assert "not in a release yet" in box
    assert "works only for signed-in users" in box
    assert f"The public sees revision {published}, published in release 1" in box
    revision_page = signed_in(viewer).get(f"/cases/{CASE}/revisions/{latest('case', CASE)}/")
    assert "not in a release yet" in cite_box(revision_page.content.decode())
    # the released revision's own citation says nothing of the sort
    released_page = signed_in(viewer).get(f"/cases/{CASE}/revisions/{published}/")
    assert "not in a release yet" not in cite_box(released_page.content.decode())


def test_citing_a_case_never_released(seeded, analyst):
    case_create(user=analyst, document=new_case(), summary="New")
    box = cite_box(signed_in(analyst).get("/cases/CP99-001/").content.decode())
    assert "not in a release yet" in box and "No release has published this record yet" in box


# --- feeds -------------------------------------------------------------------------------


def feed(client, url: str) -> ET.Element:
    response = client.get(url)
    assert response.status_code == 200, url
    assert response["Content-Type"].startswith("application/atom+xml")
    return ET.fromstring(response.content)


def test_the_releases_feed_lists_the_records_each_release_changed(
    released, analyst, reviewer, client
):
    edit_case(analyst, CASE, title="A retitled case")
    publish(reviewer, notes="Second")
    entries = feed(client, "/releases/feed.atom").findall(f"{ATOM}entry")
    second = entries[0].findtext(f"{ATOM}summary")
    revision = latest("case", CASE)
    assert (
        f'updated: <a href="http://testserver/cases/{CASE}/revisions/{revision}/">'
        f"case {CASE} — A retitled case</a>"
    ) in second
    first = entries[1].findtext(f"{ATOM}summary")
    assert "new: <a" in first and f"case {CASE} —" in first and "source SRC-" in first
    categories = [c.get("term") for c in entries[0].findall(f"{ATOM}category")]
    assert categories == ["updated"]


def test_the_releases_feed_runs_the_same_queries_however_many_releases(
    released, analyst, reviewer, client
):
    def count() -> int:
        return queries_of(lambda: client.get("/releases/feed.atom"))

    few = count()
    for n in range(3):
        edit_case(analyst, CASE, title=f"Title {n}")
        publish(reviewer, notes=f"Release {n}")
    assert count() == few


def test_a_case_feed_lists_the_releases_that_changed_the_case(released, analyst, reviewer, client):
    first = latest("case", CASE)
    edit_case(analyst, CASE, title="A retitled case")
    edit_case(analyst, "CP22-002", title="Another case changed")
    publish(reviewer, notes="Second")
    edit_case(analyst, "CP22-002", title="Only the other case")
    publish(reviewer, notes="Third")
    edit_case(analyst, CASE, title="Unreleased title")
    root = feed(client, f"/cases/{CASE}/feed.atom")
    entries = root.findall(f"{ATOM}entry")
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    assert titles == [f"Release 2: case {CASE} updated", f"Release 1: case {CASE} new"]
    summary = entries[0].findtext(f"{ATOM}summary")
    assert "A retitled case" in summary and "Unreleased title" not in summary
    assert f"http://testserver/cases/{CASE}/diff/{first}/" in summary
    assert (
        entries[0]
        .find(f"{ATOM}link")
        .get("href")
        .startswith(f"http://testserver/cases/{CASE}/revisions/")
    )
    assert "Unreleased title" not in root.findtext(f"{ATOM}title")


def test_a_case_feed_runs_the_same_queries_however_many_releases(
    released, analyst, reviewer, client
):
    def count() -> int:
        return get_queries(client, f"/cases/{CASE}/feed.atom")

    few = count()
    for n in range(3):
        edit_case(analyst, CASE, title=f"Title {n}")
        publish(reviewer, notes=f"Release {n}")
    assert count() == few


def test_a_case_feed_of_an_unreleased_case_is_a_404(seeded, analyst, client):
    assert client.get(f"/cases/{CASE}/feed.atom").status_code == 404
    assert client.get("/cases/CP99-404/feed.atom").status_code == 404


def test_pages_link_their_feeds_in_the_head(released, analyst, viewer, client):
    def head(html: str) -> str:
        return html.split("</head>")[0]

    releases_link = (
        '<link rel="alternate" type="application/atom+xml" title="claimsdb releases" '
        'href="/releases/feed.atom">'
    )
    case_link = (
        f'type="application/atom+xml" title="Releases of case {CASE}" '
        f'href="/cases/{CASE}/feed.atom"'
    )
    for url in ("/", "/sources/", "/releases/"):
        assert releases_link in head(client.get(url).content.decode())
    assert case_link in head(client.get(f"/cases/{CASE}/").content.decode())
    revision = latest("case", CASE)
    assert case_link in head(client.get(f"/cases/{CASE}/revisions/{revision}/").content.decode())
    case_create(user=analyst, document=new_case(), summary="New")
    unreleased = signed_in(viewer).get("/cases/CP99-001/").content.decode()
    assert "/cases/CP99-001/feed.atom" not in unreleased
