"""Release pages, the feed, citation downloads and the release API."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command

from claimsdb import public
from claimsdb.models import Release, ReleaseEntry
from claimsdb.services import source_create
from claimsdb.services.releases import release_publish

from .support import (
    api_client,
    braces_balanced,
    edit_case,
    field_block,
    get_queries,
    latest,
    parse_bibtex,
    signed_in,
    source_document,
)

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture
def released(seeded, reviewer) -> Release:
    return release_publish(user=reviewer, notes="First public release\nof the seed.")


# --- pages ---------------------------------------------------------------------------------


def test_anonymous_reads_the_release_list(released, client):
    response = client.get("/releases/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/releases/1/"' in html
    assert "First public release" in html
    assert "Publish a release" not in html
    assert "<script" not in html and "style=" not in html


def test_release_list_shows_the_publish_link_to_reviewers(released, reviewer):
    assert "/releases/new/" in signed_in(reviewer).get("/releases/").content.decode()


def test_anonymous_reads_what_a_release_changed(released, analyst, reviewer, client):
    first = latest("case", "CP22-003")
    second = edit_case(analyst, "CP22-003", title="A clearer title")
    release_publish(user=reviewer, notes="Second")
    response = client.get("/releases/2/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'href="/cases/CP22-003/revisions/{second}/"' in html
    assert f'href="/cases/CP22-003/diff/{first}/{second}/"' in html
    assert "A clearer title" in html
    assert "updated" in html
    assert 'href="/api/v1/releases/2/bundle.json"' in html
    assert "reviewer" not in html  # the publisher's name is for signed-in readers
    assert "<details>" in html  # unchanged records, folded, readable without JavaScript
    html = client.get("/releases/1/").content.decode()
    assert f'href="/cases/CP22-003/revisions/{first}/"' in html
    assert "/diff/" not in html  # nothing to compare a new record with
    assert client.get("/releases/3/").status_code == 404


def test_release_pages_query_counts_are_flat(released, analyst, reviewer, client):
    def count(path: str) -> int:
        return get_queries(client, path)

    list_before = count("/releases/")
    for index in range(5):
        source_create(
            user=analyst,
            document=source_document(f"SRC-MORE-{index}", title=f"More {index}"),
            summary="More",
        )
        release_publish(user=reviewer, notes=f"Release {index + 2}")
    assert count("/releases/") == list_before
    # release 2 and release 6 both list changed and unchanged records, 6 more of them
    assert count("/releases/6/") == count("/releases/2/")


def test_the_feed_is_atom_and_links_each_release(released, reviewer, analyst, client):
    edit_case(analyst, "CP22-003", title="Changed")
    release_publish(user=reviewer, notes="Second")
    response = client.get("/releases/feed.atom")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    entries = feed.findall(f"{ATOM}entry")
    assert [e.findtext(f"{ATOM}title") for e in entries] == ["Release 2", "Release 1"]
    links = [e.find(f"{ATOM}link").get("href") for e in entries]
    assert links == ["http://testserver/releases/2/", "http://testserver/releases/1/"]
    assert "1 updated" in entries[0].findtext(f"{ATOM}summary")


def test_publish_page_needs_a_reviewer(seeded, analyst, client):
    response = client.get("/releases/new/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.post("/releases/new/", {"notes": "x"}).status_code == 302
    analyst_client = signed_in(analyst)
    assert analyst_client.get("/releases/new/").status_code == 403
    assert analyst_client.post("/releases/new/", {"notes": "x"}).status_code == 403
    assert Release.objects.count() == 0 and ReleaseEntry.objects.count() == 0


def test_reviewer_publishes_from_the_page_with_csrf(seeded, reviewer):
    client = signed_in(reviewer, enforce_csrf_checks=True)
    page = client.get("/releases/new/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Publish release 1" in html and "CP22-003" in html
    assert client.post("/releases/new/", {"notes": "No token"}).status_code == 403
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    refused = client.post("/releases/new/", {"notes": "  ", "csrfmiddlewaretoken": token})
    assert refused.status_code == 400
    assert "a release needs notes" in field_block(refused.content.decode(), "notes")
    assert Release.objects.count() == 0
    response = client.post(
        "/releases/new/", {"notes": "Published from the page", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302 and response["Location"] == "/releases/1/"
    assert Release.objects.get().notes == "Published from the page"
    again = client.post("/releases/new/", {"notes": "Again", "csrfmiddlewaretoken": token})
    assert again.status_code == 400
    assert "release.nothing_changed" in again.content.decode()


# --- citation downloads --------------------------------------------------------------------


def test_cite_downloads_for_anonymous_follow_the_release(released, analyst, client):
    number = latest("case", "CP22-003")
    edit_case(analyst, "CP22-003", title="Draft title", status="draft")
    response = client.get("/cases/CP22-003/cite.bib")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-bibtex")
    assert response["Content-Disposition"] == (
        f'attachment; filename="claimsdb-CP22-003-r{number}.bib"'
    )
    bib = response.content.decode()
    assert bib.startswith(f"@misc{{claimsdb-CP22-003-r{number},")
    assert braces_balanced(bib)
    key, entry = parse_bibtex(bib)
    assert key == f"claimsdb-CP22-003-r{number}"
    assert "SGLang asynchronous RDMA" in entry.fields["title"]
    assert "Draft title" not in bib and "release 1" in bib
    assert f"http://testserver/cases/CP22-003/revisions/{number}/" in bib

    response = client.get("/cases/CP22-003/cite.json")
    assert response["Content-Type"].startswith("application/vnd.citationstyles.csl+json")
    assert response["Content-Disposition"].startswith("attachment;")
    (item,) = json.loads(response.content)
    assert {"type", "title", "URL", "issued"} <= set(item)
    assert item["URL"] == f"http://testserver/cases/CP22-003/revisions/{number}/"
    assert "Cache-Control" not in response  # the latest release may change


def test_cite_downloads_for_viewers_cite_the_working_revision(released, analyst, viewer):
    working = edit_case(analyst, "CP22-003", title="Draft title", status="draft")
    client = signed_in(viewer)
    bib = client.get("/cases/CP22-003/cite.bib").content.decode()
    assert f"claimsdb-CP22-003-r{working}" in bib
    assert "Draft title" in bib and "not yet released" in bib
    response = client.get(f"/cases/CP22-003/cite.json?revision={working}")
    assert response.status_code == 200
    assert "Cache-Control" not in response


def test_cite_a_specific_released_revision(released, analyst, client):
    number = latest("case", "CP22-003")
    working = edit_case(analyst, "CP22-003", title="Draft title")
    response = client.get(f"/cases/CP22-003/cite.json?revision={number}")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert client.get(f"/cases/CP22-003/cite.json?revision={working}").status_code == 404
    assert client.get("/cases/CP22-003/cite.json?revision=abc").status_code == 404
    assert client.get("/cases/CP22-003/cite.bib?revision=1").status_code == 404  # not this case


def test_cite_downloads_before_any_release(seeded, client, viewer):
    assert client.get("/cases/CP22-003/cite.bib").status_code == 404
    assert signed_in(viewer).get("/cases/CP22-003/cite.bib").status_code == 200
    assert signed_in(viewer).get("/cases/CP22-999/cite.bib").status_code == 404


# --- the API -------------------------------------------------------------------------------


def test_anonymous_reads_releases_over_the_api(released, analyst, reviewer):
    client = api_client()
    response = client.get("/api/v1/releases/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    (item,) = body["results"]
    assert item["number"] == 1
    assert item["counts"] == {"new": 18, "updated": 0, "withdrawn": 0, "unchanged": 0}
    assert item["published_at"].endswith("Z")
    assert item["url"] == "http://testserver/api/v1/releases/1/"

    detail = client.get("/api/v1/releases/1/").json()
    case = next(e for e in detail["entries"] if e["key"] == "CP22-003")
    assert case == {
        "kind": "case",
        "key": "CP22-003",
        "change": "new",
        "revision": latest("case", "CP22-003"),
        "previous_revision": None,
        "page": f"http://testserver/cases/CP22-003/revisions/{latest('case', 'CP22-003')}/",
    }
    assert [e["kind"] for e in detail["entries"]][:2] == ["case", "case"]
    missing = client.get("/api/v1/releases/9/")
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["code"] == "release.not_found"


def test_the_bundle_endpoint_is_the_export(released, analyst, tmp_path):
    out = tmp_path / "release-1.json"
    call_command("export_records", release=1, out=str(out))
    edit_case(analyst, "CP22-003", title="Later")
    response = api_client().get("/api/v1/releases/1/bundle.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.streaming and b"".join(response.streaming_content) == out.read_bytes()
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    again = api_client().get("/api/v1/releases/1/bundle.json", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    assert api_client().get("/api/v1/releases/2/bundle.json").status_code == 404


def test_publishing_over_the_api_needs_a_reviewer(seeded, viewer, analyst):
    anonymous = api_client().post("/api/v1/releases/", {"notes": "x"}, format="json")
    assert anonymous.status_code == 401
    for user in (viewer, analyst):
        response = api_client(user).post("/api/v1/releases/", {"notes": "x"}, format="json")
        assert response.status_code == 403
        assert response.json()["errors"][0]["code"] == "permission.denied"
    assert Release.objects.count() == 0 and ReleaseEntry.objects.count() == 0


def test_reviewer_publishes_over_the_api(seeded, reviewer):
    client = api_client(reviewer)
    refused = client.post("/api/v1/releases/", {"notes": ""}, format="json")
    assert refused.status_code == 400
    assert [e["code"] for e in refused.json()["errors"]] == ["release.notes_required"]
    bad = client.post("/api/v1/releases/", {"notes": 3, "extra": 1}, format="json")
    assert bad.status_code == 400
    response = client.post("/api/v1/releases/", {"notes": "Over the API"}, format="json")
    assert response.status_code == 201
    assert response["Location"] == "http://testserver/api/v1/releases/1/"
    body = response.json()
    assert body["number"] == 1 and len(body["entries"]) == 18
    assert public.latest_release().notes == "Over the API"
    again = client.post("/api/v1/releases/", {"notes": "Again"}, format="json")
    assert again.status_code == 400
    assert again.json()["errors"][0]["code"] == "release.nothing_changed"
    assert Release.objects.count() == 1
