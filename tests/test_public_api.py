"""The released record over the API (docs/releases.md): anonymous users and users
without a role read only what releases published — on every URL of the API, found by
walking the URL configuration — and write nothing; users with a role read the working
state.

The world: the seed, release 1, an edit of CP22-003 published in release 2, and then draft
edits carrying ``MARKER`` in CP22-003's title and summary, a new claim's statement, a
source's title, a rule's reason, a new case, a new source and every draft revision's
summary. The marker must appear in no response to a reader without a role.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from claimsdb.models import ReleaseEntry, Revision
from claimsdb.records import record_document
from claimsdb.services import (
    case_create,
    case_update,
    claim_add,
    component_create,
    component_update,
    rule_update,
    source_create,
    source_update,
    source_withdraw,
)

from .public_walk import Route, route_urls, walk_routes
from .support import body, latest, publish, state, token_client, user_in_role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

API = "/api/v1"
MARKER = "DRAFT-MARKER-API-91c2"
CASE = "CP22-003"
OTHER_CASE = "CP22-002"
NEW_CASE = "CP22-099"  # created after the releases: never released
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
NEW_SOURCE = "SRC-DRAFT-ONLY"  # created after the releases: never released
COMPONENT = "CMP-MOONCAKE"
NEW_COMPONENT = "CMP-DRAFT-ONLY"  # created after the releases: never released
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
METHOD = "diggingbeagle.assessment/1"
CLAIM = "CLM-CP22-003-A"
NEW_CLAIM = "CLM-CP22-003-Z"  # added after the releases: not in the released document
RELEASE_2_SUMMARY = "Summary as published in release 2."
ALLOWED = {200, 304, 401, 403, 404, 405}
IMMUTABLE = "public, max-age=31536000, immutable"
JSON_ACCEPT = "application/json,*/*;q=0.5"  # the docs pages are HTML only
BROWSER_ACCEPT = "text/html,application/xhtml+xml,*/*;q=0.8"  # the browsable API


@dataclass(frozen=True)
class World:
    released_case: dict  # CP22-003 as release 2 publishes it
    released_source: dict
    released_rule: dict
    other_case_title: str
    summary_in_release_1: str
    case_in_release_1: int  # CP22-003's revision in release 1
    case_in_release_2: int
    other_case_released: int  # CP22-002's revision in both releases
    released: list[int]  # every revision a release points at
    drafts: list[int]  # every revision made after release 2


def head() -> int:
    return Revision.objects.latest("number").number


@pytest.fixture(scope="module")
def world(module_seed, django_db_blocker) -> World:
    """Made once for the module, rolled back with it."""
    with django_db_blocker.unblock():
        seeder = User.objects.get(username="seeder")
        publish(seeder, notes="Release 1")
        in_release_1 = latest("case", CASE)
        document = record_document("case", CASE)
        summary_in_release_1 = document["summary"]
        document["summary"] = RELEASE_2_SUMMARY
        case_update(user=seeder, key=CASE, document=document, summary="For release 2")
        publish(seeder, notes="Release 2")
        in_release_2 = latest("case", CASE)
        other_case_released = latest("case", OTHER_CASE)
        released = sorted(set(ReleaseEntry.objects.values_list("revision__number", flat=True)))
        released_case = record_document("case", CASE)
        released_source = record_document("source", SOURCE)
        released_rule = record_document("rule", RULE)
        other_case_title = record_document("case", OTHER_CASE)["title"]
        last_released = head()

        # the drafts: every text carries the marker, every revision summary too
        why = f"{MARKER} draft edit"
        document = record_document("case", CASE)
        document.update(title=f"{MARKER} title", summary=f"{MARKER} summary")
        case_update(user=seeder, key=CASE, document=document, summary=why)
        claim = {
            "id": NEW_CLAIM,
            "statement": f"{MARKER} statement",
            "status": "unverified",
            "status_note": "",
            "basis": "reported_finding",
            "origin": "human",
            "evidence": [],
        }
        claim_add(user=seeder, case_key=CASE, claim=claim, summary=why)
        source = record_document("source", SOURCE)
        source["title"] = f"{MARKER} source title"
        source_update(user=seeder, key=SOURCE, document=source, summary=why)
        rule = record_document("rule", RULE)
        rule["reason"] = f"{MARKER} reason"
        rule_update(user=seeder, key=RULE, document=rule, summary=why)
        new_case = record_document("case", OTHER_CASE)
        new_case.update(
            key=NEW_CASE,
            status="draft",
            title=f"{MARKER} new case",
            claims=[],
            figures=[],
            attributions=[],
            relations=[],
            assessments=[],
        )
        case_create(user=seeder, document=new_case, summary=why)
        new_source = {**record_document("source", SOURCE), "key": NEW_SOURCE}
        source_create(user=seeder, document=new_source, summary=why)
        component = record_document("component", COMPONENT)
        component_update(
            user=seeder,
            key=COMPONENT,
            document={**component, "name": f"{MARKER} component", "aliases": [MARKER]},
            summary=why,
        )
        component_create(
            user=seeder,
            document={**component, "key": NEW_COMPONENT, "name": f"{MARKER} new component"},
            summary=why,
        )
        drafts = list(range(last_released + 1, head() + 1))
    return World(
        released_case=released_case,
        released_source=released_source,
        released_rule=released_rule,
        other_case_title=other_case_title,
        summary_in_release_1=summary_in_release_1,
        case_in_release_1=in_release_1,
        case_in_release_2=in_release_2,
        other_case_released=other_case_released,
        released=released,
        drafts=drafts,
    )


def client_as(role: str) -> APIClient:
    """A client without credentials (``anonymous``), or with a token of a user in ``role``
    (``nobody``: signed in without a role)."""
    if role == "anonymous":
        return token_client(None)
    return token_client(user_in_role(f"public-api-{role}", None if role == "nobody" else role))


# --- walking every API URL --------------------------------------------------------------

ROUTES = walk_routes([f"{API.lstrip('/')}/"])

KEYS = {
    "cases": [CASE, OTHER_CASE, NEW_CASE],
    "sources": [SOURCE, NEW_SOURCE],
    "rules": [RULE],
    "methods": [METHOD],
    "components": [COMPONENT, NEW_COMPONENT],
    # a record's review comments, under its kind: released and draft ones alike
    "review-queue": [CASE, NEW_CASE, SOURCE, NEW_SOURCE],
}
# URLs for users with a role only (docs/review.md): refused whatever record they name, before
# its existence is looked at, so that a reader without a role learns nothing of the drafts
ROLE_ONLY = {"api:review-queue", "api:review-comments"}
REFUSED = {"anonymous": 401, "nobody": 403}


def keys(route: Route) -> list[str]:
    family = route.route.removeprefix("api/v1/").split("/", 1)[0]
    return KEYS[family]


def numbers(world: World):
    """Revision numbers (released ones and drafts) under revisions/, release numbers under
    releases/ (1 and 2 exist, 3 does not)."""

    def values(route: Route) -> list[int]:
        if route.route.startswith("api/v1/releases/"):
            return [1, 2, 3]
        return [world.case_in_release_1, world.case_in_release_2, *world.drafts]

    return values


def parameter_table(world: World) -> dict:
    """Values for every path parameter of the API, by name. A route with a parameter not
    here fails the walk: add an entry naming test data."""
    return {
        "key": keys,
        "claim_id": [CLAIM, NEW_CLAIM],
        "number": numbers(world),
        "kind": ["case", "source"],  # a record kind (the review queue's comments)
        "pk": [1],  # an import report, a webhook subscription (neither is public)
        "delivery": [1],  # a webhook delivery (reviewers only)
        "run_id": ["RUN-UNKNOWN"],  # an imported run (not public)
    }


def query_strings(world: World, route: Route, url: str) -> list[str]:
    """Query strings to send to a URL (most need none)."""
    if route.name == "api:case-diff" and OTHER_CASE in url:
        return [f"?from={world.other_case_released}"]
    if route.name == "api:case-diff":
        return [
            f"?from={world.case_in_release_1}",
            f"?from={world.case_in_release_1}&to={world.case_in_release_2}",
        ]
    return [""]


def test_the_walk_finds_every_family_of_the_api():
    names = {route.name for route in ROUTES}
    assert {
        "api:case-list",
        "api:case-detail",
        "api:case-claims",
        "api:case-revisions",
        "api:case-diff",
        "api:claim-detail",
        "api:source-list",
        "api:source-detail",
        "api:rule-list",
        "api:rule-detail",
        "api:method-list",
        "api:method-detail",
        "api:component-list",
        "api:component-detail",
        "api:revision-list",
        "api:revision-detail",
    } <= names
    assert all(route.route.startswith("api/v1/") for route in ROUTES)


def expected_status(world: World, route: Route, url: str) -> int | None:
    """The status of a record, claim or revision URL for a reader without a role: 404 for
    what no release published, else 200 (None: another family, any allowed status)."""
    name = route.name
    if name in {"api:case-detail", "api:case-claims", "api:case-revisions", "api:case-diff"}:
        return 404 if NEW_CASE in url else 200
    if name == "api:source-detail":
        return 404 if NEW_SOURCE in url else 200
    if name == "api:component-detail":
        return 404 if NEW_COMPONENT in url else 200
    if name == "api:claim-detail":
        return 404 if NEW_CLAIM in url else 200
    if name == "api:revision-detail":
        number = int(url.rstrip("/").rsplit("/", 1)[1])
        return 404 if number in world.drafts else 200
    if name and name.startswith("api:") and name.endswith(("-list", "-detail")):
        return 200
    return None


def check_released_content(world: World, route: Route, url: str, response, content: bytes) -> None:
    """What the released record's endpoints serve: release 2's documents."""
    name = route.name
    expected = expected_status(world, route, url)
    if expected is not None:
        assert response.status_code == expected, (url, response.status_code)
    if response.status_code != 200 or not response["Content-Type"].startswith("application/json"):
        return  # an error, or the docs' HTML
    data = json.loads(content)  # read already: a streamed response reads once
    if name == "api:case-detail" and CASE in url:
        assert data["title"] == world.released_case["title"]
        assert data["summary"] == RELEASE_2_SUMMARY
        assert response["ETag"] == f'"{world.case_in_release_2}"'
    elif name == "api:case-list":
        titles = {item["key"]: item["document"]["title"] for item in data["results"]}
        assert titles == {CASE: world.released_case["title"], OTHER_CASE: world.other_case_title}
    elif name == "api:case-claims" and CASE in url:
        assert data == world.released_case["claims"]
    elif name == "api:claim-detail":
        assert data == world.released_case["claims"][0]
    elif name == "api:source-detail":
        assert data == world.released_source
    elif name == "api:source-list":
        keys_seen = [item["key"] for item in data["results"]]
        assert NEW_SOURCE not in keys_seen and SOURCE in keys_seen
    elif name == "api:rule-detail":
        assert data == world.released_rule
    elif name == "api:component-detail":
        assert data["name"] == "Mooncake"
    elif name == "api:component-list":
        assert NEW_COMPONENT not in [item["key"] for item in data["results"]]
    elif name == "api:revision-list":
        assert {item["number"] for item in data["results"]} == set(world.released)
    elif name == "api:case-revisions" and CASE in url:
        numbers_seen = [item["number"] for item in data["results"]]
        assert numbers_seen == [world.case_in_release_1, world.case_in_release_2]
    elif name == "api:case-diff" and CASE in url:
        assert data["to"] == world.case_in_release_2


@pytest.mark.parametrize("role", ["anonymous", "nobody"])
@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.route)
def test_every_api_url_shows_only_the_released_record(world, route, role):
    """GET every URL of the API as a reader without a role, in JSON and in the browsable
    API's HTML: an allowed status, never a trace of the drafts, and the released content
    where the released record is served."""
    client = client_as(role)
    before = state()
    for url in route_urls(route, parameter_table(world)):
        for query in query_strings(world, route, url):
            for accept in (JSON_ACCEPT, BROWSER_ACCEPT):
                response = client.get(url + query, HTTP_ACCEPT=accept)
                where = f"{role} GET {url}{query} ({accept})"
                assert response.status_code in ALLOWED, (where, response.status_code)
                if route.name in ROLE_ONLY:
                    assert response.status_code == REFUSED[role], where
                content = b"".join(response) if response.streaming else response.content
                assert MARKER.encode() not in content, where
                if accept == JSON_ACCEPT:
                    check_released_content(world, route, url, response, content)
    assert state() == before


# --- revisions: released ones are immutable ----------------------------------------------


@pytest.mark.parametrize("role", ["anonymous", "nobody"])
def test_a_released_revision_is_cacheable_for_ever(world, role):
    client = client_as(role)
    url = f"{API}/revisions/{world.case_in_release_1}/"
    response = client.get(url)
    assert response.status_code == 200
    assert response["Cache-Control"] == IMMUTABLE
    assert response["ETag"] == f'"{world.case_in_release_1}"'
    assert body(response)["snapshot"]["key"] == CASE

    cached = client.get(url, HTTP_IF_NONE_MATCH=f'"{world.case_in_release_1}"')
    assert cached.status_code == 304
    assert cached.content == b""
    assert cached["ETag"] == f'"{world.case_in_release_1}"'
    assert cached["Cache-Control"] == IMMUTABLE

    # an unreleased revision is not there, not even for a conditional request
    draft = world.drafts[0]
    for headers in ({}, {"HTTP_IF_NONE_MATCH": f'"{draft}"'}):
        refused = client.get(f"{API}/revisions/{draft}/", **headers)
        assert refused.status_code == 404
        assert body(refused)["errors"][0]["code"] == "record.not_found"


def test_the_released_record_answers_if_none_match(world):
    client = APIClient()
    url = f"{API}/cases/{CASE}/"
    etag = f'"{world.case_in_release_2}"'
    assert client.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert client.get(f"{API}/claims/{CLAIM}/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    stale = client.get(url, HTTP_IF_NONE_MATCH=f'"{world.case_in_release_1}"')
    assert stale.status_code == 200
    assert stale["ETag"] == etag
    # the working state's ETag names no revision the public sees
    draft = client.get(url, HTTP_IF_NONE_MATCH=f'"{latest("case", CASE)}"')
    assert draft.status_code == 200
    assert MARKER.encode() not in draft.content


def test_a_diff_is_only_between_released_revisions(world):
    client = APIClient()
    url = f"{API}/cases/{CASE}/diff/"
    diff = body(client.get(f"{url}?from={world.case_in_release_1}"))
    assert diff["changes"] == [
        {
            "path": "summary",
            "op": "changed",
            "old": world.summary_in_release_1,
            "new": RELEASE_2_SUMMARY,
        }
    ]
    draft = world.drafts[0]  # the draft edit of CP22-003
    for query in (f"from={draft}", f"from={world.case_in_release_1}&to={draft}"):
        refused = client.get(f"{url}?{query}")
        assert refused.status_code == 400
        assert body(refused)["errors"][0]["code"] == "revision.not_of_record"
        assert MARKER.encode() not in refused.content


# --- lists: filters apply to the released documents --------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        f"cases/?q={MARKER}",
        f"cases/?q={MARKER.lower()}",
        f"sources/?q={MARKER}",
        f"rules/?q={MARKER}",  # not a filter of rules: ignored, as in the working state
        "cases/?status=draft",
        f"cases/?related_to={NEW_CASE}",
        f"revisions/?record=case:{NEW_CASE}",
        f"revisions/?record={NEW_SOURCE}",
        "revisions/?since={last_released}",
        "revisions/?summary={marker}",
    ],
)
def test_filters_see_only_released_documents(world, query):
    """A filter that matches only draft text or draft revisions finds nothing for the
    public (test_a_viewer_still_reads_the_working_state finds them)."""
    url = f"{API}/" + query.format(last_released=max(world.released), marker=MARKER)
    response = APIClient().get(url)
    assert response.status_code == 200
    assert MARKER.encode() not in response.content
    results = body(response)["results"]
    if query.startswith("rules/"):
        assert [item["document"]["reason"] for item in results] == [world.released_rule["reason"]]
    elif query.startswith("revisions/?summary"):
        assert {item["number"] for item in results} == set(world.released)  # not a filter
    else:
        assert results == []


def test_filters_and_ordering_on_released_documents(world):
    client = APIClient()

    def keys_of(url: str) -> list[str]:
        response = client.get(url)
        assert response.status_code == 200, response.content
        return [item["key"] for item in body(response)["results"]]

    assert keys_of(f"{API}/cases/?{urlencode({'q': world.released_case['title'].upper()})}") == [
        CASE
    ]
    assert keys_of(f"{API}/cases/?{urlencode({'q': RELEASE_2_SUMMARY})}") == [CASE]
    assert keys_of(f"{API}/cases/?q=production-incident") == [OTHER_CASE]  # a tag
    assert keys_of(f"{API}/cases/?tag=kv-cache&tag=rdma") == [CASE]
    assert keys_of(f"{API}/cases/?status=ready&ordering=-key") == [CASE, OTHER_CASE]
    assert keys_of(f"{API}/cases/?related_to={OTHER_CASE}") == [CASE]
    assert keys_of(f"{API}/cases/?related_to={CASE}") == [OTHER_CASE]
    assert keys_of(f"{API}/cases/?evidence_grade=B") == [CASE]
    assert keys_of(f"{API}/cases/?evidence_grade=Z") == []
    assert keys_of(f"{API}/rules/?case={CASE}") == [RULE]
    assert keys_of(f"{API}/rules/?figure=FIG-NONE") == []
    assert keys_of(f"{API}/methods/?status=active") == [METHOD]
    assert keys_of(f"{API}/sources/?kind=upstream_fix&ordering=-key") == sorted(
        (
            item["key"]
            for item in body(client.get(f"{API}/sources/?page_size=200"))["results"]
            if item["document"]["kind"] == "upstream_fix"
        ),
        reverse=True,
    )
    page = body(client.get(f"{API}/sources/?page_size=3&ordering=-title"))
    assert page["count"] >= 10 and len(page["results"]) == 3
    titles = [item["document"]["title"] for item in page["results"]]
    assert titles == sorted(titles, reverse=True)
    # the same 400 as the working state's lists for a value outside a filter's choices
    refused = client.get(f"{API}/cases/?status=done")
    assert refused.status_code == 400
    assert body(refused)["errors"][0]["path"] == "status"


def test_withdrawn_records_are_listed_only_when_asked(world, reviewer):
    source_withdraw(user=reviewer, key="SRC-SGLANG-PR-39229", summary="Withdrawn")
    publish(reviewer, notes="Release 3")
    client = APIClient()
    listed = [item["key"] for item in body(client.get(f"{API}/sources/?page_size=200"))["results"]]
    assert "SRC-SGLANG-PR-39229" not in listed
    withdrawn = body(client.get(f"{API}/sources/?status=withdrawn"))["results"]
    assert [item["key"] for item in withdrawn] == ["SRC-SGLANG-PR-39229"]
    document = body(client.get(f"{API}/sources/SRC-SGLANG-PR-39229/"))
    assert document["status"] == "withdrawn"


# --- writes stay refused ------------------------------------------------------------------


def writes(world: World) -> list[tuple[str, str, object]]:
    claim = {**world.released_case["claims"][0], "statement": "Changed"}
    return [
        ("POST", f"{API}/cases/", {**world.released_case, "key": "CP22-500"}),
        ("PUT", f"{API}/cases/{CASE}/", world.released_case),
        ("PATCH", f"{API}/cases/{CASE}/", {"title": "Changed"}),
        ("DELETE", f"{API}/cases/{CASE}/", None),
        ("POST", f"{API}/cases/{CASE}/claims/", {**claim, "id": "CLM-CP22-003-Y"}),
        ("PUT", f"{API}/claims/{CLAIM}/", claim),
        ("PATCH", f"{API}/claims/{CLAIM}/", {"statement": "Changed"}),
        ("DELETE", f"{API}/claims/{CLAIM}/", None),
        ("POST", f"{API}/cases/{CASE}/revert/", {"revision": world.case_in_release_1}),
        ("PUT", f"{API}/sources/{SOURCE}/", world.released_source),
        ("PATCH", f"{API}/rules/{RULE}/", {"reason": "Changed"}),
        ("DELETE", f"{API}/methods/{METHOD}/", None),
        ("POST", f"{API}/revisions/", {}),
        ("POST", f"{API}/releases/", {"notes": "Sneaky"}),
        (
            "POST",
            f"{API}/review-queue/case/{CASE}/comments/",
            {"revision": head(), "comments": [{"path": "", "text": "Sneaky"}]},
        ),
    ]


@pytest.mark.parametrize(
    "role,status,code",
    [("anonymous", 401, "authentication.required"), ("nobody", 403, "permission.denied")],
)
def test_writes_are_refused_and_change_nothing(world, role, status, code):
    client = client_as(role)
    before = state()
    releases = body(client.get(f"{API}/releases/"))["count"]
    for method, url, data in writes(world):
        payload = json.dumps(data) if data is not None else b""
        response = client.generic(
            method,
            f"{url}?summary=Sneaky",
            payload,
            content_type="application/json",
            HTTP_IF_MATCH="*",
        )
        assert response.status_code == status, (method, url, response.content)
        assert body(response)["errors"][0]["code"] == code
        assert MARKER.encode() not in response.content
    assert state() == before
    assert body(client.get(f"{API}/releases/"))["count"] == releases


# --- users with a role read the working state ---------------------------------------------


def test_a_viewer_still_reads_the_working_state(world):
    client = client_as("viewer")
    case = client.get(f"{API}/cases/{CASE}/")
    assert body(case)["title"] == f"{MARKER} title"
    assert case["ETag"] == f'"{latest("case", CASE)}"'
    claims = [c["id"] for c in body(client.get(f"{API}/cases/{CASE}/claims/"))]
    assert NEW_CLAIM in claims
    assert client.get(f"{API}/claims/{NEW_CLAIM}/").status_code == 200
    assert client.get(f"{API}/cases/{NEW_CASE}/").status_code == 200
    assert body(client.get(f"{API}/cases/?q={MARKER}"))["count"] == 2
    assert body(client.get(f"{API}/sources/?q={MARKER}"))["count"] == 2
    log = body(client.get(f"{API}/revisions/?page_size=200"))
    assert {item["number"] for item in log["results"]} >= set(world.drafts)
    draft = client.get(f"{API}/revisions/{world.drafts[0]}/")
    assert draft.status_code == 200
    assert draft["ETag"] == f'"{world.drafts[0]}"'
    assert "immutable" not in draft.get("Cache-Control", "")  # not public
    released = client.get(f"{API}/revisions/{world.case_in_release_1}/")
    assert released["Cache-Control"] == IMMUTABLE  # the same for everyone, for ever
    diff = client.get(f"{API}/cases/{CASE}/diff/?from={world.case_in_release_2}")
    assert diff.status_code == 200
    assert MARKER.encode() in diff.content


# --- unknown API URLs -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/api/v1/nothing-here/", "/api/v1/nothing/x", "/api/v2/cases/", "/api/"]
)
def test_unknown_api_urls_get_a_json_404_in_the_error_shape(db, url):
    response = APIClient().get(url)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    error = body(response)
    assert error["status"] == 404
    assert error["title"] == "Not found"
    assert [e["code"] for e in error["errors"]] == ["request.not_found"]


def test_unknown_site_urls_still_get_the_html_page(db):
    response = APIClient().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
