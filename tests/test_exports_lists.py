"""The case list (site and API) and the API's other lists, with their filters, as CSV
(docs/exports.md, "A filtered list as CSV"): what each reader sees, filtered as the page
filters, every record and not a page, a fixed number of queries per batch."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
import zipfile

import pytest
from django.core.management import call_command

from claimsdb.exports import lists
from claimsdb.services import bundle_load

from .support import new_case, publish, queries_of, signed_in, token_client

pytestmark = pytest.mark.django_db


def table(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode("utf-8")
    assert "\r\n" not in text
    return list(csv.DictReader(io.StringIO(text)))


def keys(rows: list[dict[str, str]], column: str = "key") -> list[str]:
    return [row[column] for row in rows]


@pytest.fixture
def released(seeded, reviewer):
    publish(reviewer, notes="1")
    # a draft the public does not see
    bundle_load(
        user=reviewer,
        bundle={
            "format": "claimsdb.bundle/1",
            "methods": [],
            "sources": [],
            "rules": [],
            "cases": [new_case("CP99-001", tags=["rdma"], title="+a draft")],
        },
        summary="A draft",
    )


def test_the_public_gets_the_released_cases_filtered_as_the_page(released, client, tmp_path):
    everything = client.get("/cases.csv")
    rows = table(everything)
    assert keys(rows) == ["CP22-002", "CP22-003"]
    assert keys(table(client.get("/cases.csv?tag=rdma"))) == ["CP22-003"]
    assert keys(table(client.get("/cases.csv?a.exploitation=demonstrated"))) == ["CP22-003"]
    assert keys(table(client.get("/cases.csv?a.exploitation=theoretical"))) == []
    # the same table as the release's zip, row for row
    out = tmp_path / "r.zip"
    call_command("export_records", release=1, format="csv", out=str(out), stderr=io.StringIO())
    with zipfile.ZipFile(out) as archive:
        released_table = archive.read("claimsdb-release-1/cases.csv").decode("utf-8")
    assert b"".join(client.get("/cases.csv").streaming_content).decode() == released_table
    # the API gives the same with its own filter names
    api = token_client()
    assert keys(table(api.get("/api/v1/cases.csv?tag=rdma"))) == ["CP22-003"]
    assert keys(table(api.get("/api/v1/cases.csv?exploitation=demonstrated"))) == ["CP22-003"]


def test_readers_of_the_working_state_get_it(released, viewer):
    browser = signed_in(viewer)
    rows = table(browser.get("/cases.csv?tag=rdma"))
    assert keys(rows) == ["CP22-003", "CP99-001"]
    assert rows[1]["title"] == "'+a draft"  # a formula is text
    assert keys(table(browser.get("/cases.csv?status=draft"))) == ["CP99-001"]
    api = token_client(viewer)
    assert keys(table(api.get("/api/v1/cases.csv?status=draft"))) == ["CP99-001"]
    assert keys(table(api.get("/api/v1/cases.csv?q=asynchronous"))) == ["CP22-003"]
    revision = table(api.get("/api/v1/cases.csv?status=draft"))[0]["revision"]
    assert f'"{revision}"' == api.get("/api/v1/cases/CP99-001/")["ETag"]


def test_the_list_page_links_its_filters_to_the_csv(released, client):
    page = client.get("/cases/?tag=rdma").content.decode()
    assert 'href="/cases.csv?tag=rdma"' in page


def test_other_kinds_give_their_table(released, client):
    rows = table(token_client().get("/api/v1/sources.csv?kind=upstream_fix"))
    assert rows and {row["kind"] for row in rows} == {"upstream_fix"}
    assert keys(rows) == sorted(keys(rows))
    methods = table(token_client().get("/api/v1/methods.csv"))
    assert json.loads(methods[0]["dimensions"])[0]["key"] == "setting"


def test_a_bad_filter_is_a_json_error(released):
    response = token_client().get("/api/v1/cases.csv?status=nonsense", HTTP_ACCEPT="text/csv")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["errors"][0]["path"] == "status"


def test_the_csv_lists_refuse_writes(released, reviewer):
    response = token_client(reviewer).post("/api/v1/cases.csv", {}, format="json")
    assert response.status_code == 405


# Queries a batch more costs: the released list one (entries with their snapshots); the
# working state twelve (the case rows with their latest revision, then one per table of
# their contents, records/batched.py, their affected entries among them).
@pytest.mark.parametrize("who, per_batch", [("public", 1), ("viewer", 12)])
@pytest.mark.parametrize("url", ["/api/v1/cases.csv", "/cases.csv"])
def test_queries_per_batch_are_fixed(seeded, reviewer, viewer, monkeypatch, who, per_batch, url):
    monkeypatch.setattr(lists, "LIST_BATCH_SIZE", 2)
    user = viewer if who == "viewer" else None
    client = token_client(user) if url.startswith("/api/") else signed_in(user)
    counts = []
    for added in (2, 4, 6):  # the seed's two, then one batch more each time
        bundle_load(
            user=reviewer,
            bundle={
                "format": "claimsdb.bundle/1",
                "methods": [],
                "sources": [],
                "rules": [],
                "cases": [
                    new_case(f"CP98-{added + n:03d}", status="ready", tags=["x"]) for n in range(2)
                ],
            },
            summary="More cases",
        )
        publish(reviewer, notes=str(added))

        def download():
            return table(client.get(url))

        counts.append(queries_of(download))
        assert len(download()) == added + 2
    one, two, three = counts
    assert two - one == three - two == per_batch, counts


def test_memory_follows_the_batch_not_the_list(seeded, reviewer, viewer, monkeypatch):
    """Downloading a list holds one batch of records, whatever the list's length (the
    response is read and dropped piece by piece, as a server sends it)."""
    monkeypatch.setattr(lists, "LIST_BATCH_SIZE", 10)
    clients = {"public": token_client(), "viewer": token_client(viewer)}

    def add(start: int, count: int) -> None:
        cases = [
            new_case(f"CP97-{n:03d}", status="ready", title=f"Case {n}", summary="x" * 500)
            for n in range(start, start + count)
        ]
        bundle_load(
            user=reviewer,
            bundle={
                "format": "claimsdb.bundle/1",
                "methods": [],
                "sources": [],
                "rules": [],
                "cases": cases,
            },
            summary="More cases",
        )
        publish(reviewer, notes=str(start))

    def peak(client) -> int:
        tracemalloc.start()
        try:
            response = client.get("/api/v1/cases.csv")
            for _ in response.streaming_content:
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    add(0, 20)
    for client in clients.values():
        peak(client)  # imports and caches warmed up
    small = {who: peak(client) for who, client in clients.items()}
    add(20, 60)
    large = {who: peak(client) for who, client in clients.items()}
    for who in small:
        assert large[who] <= 1.5 * small[who], (who, small, large)
