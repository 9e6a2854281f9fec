"""Who may do what through the API (docs/api.md, "Roles"): every endpoint for anonymous users,
users without a role, viewers, analysts and reviewers — and a refused write changes
nothing, neither the ledger nor any document. Anonymous users and users without a role
read the released record (tests/test_public_api.py checks what they see in detail)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from claimsdb.models import Revision
from claimsdb.services import case_update, method_create
from claimsdb.services.releases import release_publish

from .support import (
    api_client,
    case_doc,
    latest,
    make_user,
    state,
    token_client,
    user_in_role,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

API = "/api/v1"
CASE = "CP22-003"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
SOURCE = "SRC-SGLANG-PR-39229"
COMPONENT = "CMP-SGLANG"  # named by no case
METHOD = "claimsdb.test/1"
ROLES = ["anonymous", "nobody", "viewer", "analyst", "reviewer"]
RANK = {"viewer": 0, "analyst": 1, "reviewer": 2}
EDITED_TITLE = "Edited title (after release 1)"


@pytest.fixture(scope="module")
def world(module_seed, django_db_blocker):
    """The seed, an unused method (free to change), release 1 of them, and one edit of
    CP22-003 since (to revert; not released), made once for the module (and rolled back
    with it)."""
    with django_db_blocker.unblock():
        seeder = User.objects.get(username="seeder")
        method = copy.deepcopy(module_seed["methods"][0])
        method["key"] = METHOD
        method_create(user=seeder, document=method, summary="Test method")
        release_publish(user=seeder, notes="Release 1")
        document = case_doc(module_seed, CASE)
        document["title"] = EDITED_TITLE
        case_update(user=seeder, key=CASE, document=document, summary="Edit to revert")
    return module_seed


def first(kind: str, key: str) -> int:
    return Revision.objects.filter(record_kind=kind, record_key=key).earliest("number").number


@dataclass
class Endpoint:
    """One operation: how to call it, what it answers when allowed, who is allowed."""

    name: str
    method: str
    url: str | Callable[[], str]
    role: str = "viewer"  # the least role allowed
    ok: int = 200
    data: Callable[[dict], object] | None = None
    if_match: tuple[str, str] | None = None  # (kind, key) whose ETag to send
    public: int | None = None  # the status of a read without a role (the released record)

    def __repr__(self) -> str:
        return self.name

    @property
    def writes(self) -> bool:
        return self.method not in {"GET", "HEAD", "OPTIONS"}


def new_case(seed):
    document = case_doc(seed, CASE)
    document.update(
        key="CP22-010", claims=[], assessments=[], relations=[], attributions=[], affected=[]
    )
    document["status"] = "draft"  # an analyst may not create a ready case
    return document


def new_claim(seed):
    return {
        "id": "CLM-CP22-003-D",
        "statement": "A further claim.",
        "status": "unverified",
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": [],
    }


def retitled(bundle_list: str, key: str, field: str = "title"):
    def build(seed):
        document = copy.deepcopy(next(d for d in seed[bundle_list] if d["key"] == key))
        document[field] = "Changed through the API"
        return document

    return build


def method_document(seed):
    document = copy.deepcopy(seed["methods"][0])
    document["key"] = "claimsdb.other/1"
    return document


def current_case(seed):
    document = case_doc(seed, CASE)
    document["title"] = "Replaced through the API"
    return document


def claim_b(seed):
    claim = case_doc(seed, CASE)["claims"][1]
    claim["statement"] = "Restated through the API."
    return claim


ENDPOINTS = [
    # reading: viewers and above read the working state, anyone else the released record
    Endpoint("list cases", "GET", f"{API}/cases/", public=200),
    Endpoint("read case", "GET", f"{API}/cases/{CASE}/", public=200),
    Endpoint("list claims", "GET", f"{API}/cases/{CASE}/claims/", public=200),
    Endpoint("read claim", "GET", f"{API}/claims/CLM-CP22-003-A/", public=200),
    Endpoint("list sources", "GET", f"{API}/sources/", public=200),
    Endpoint("read source", "GET", f"{API}/sources/{SOURCE}/", public=200),
    Endpoint("list rules", "GET", f"{API}/rules/", public=200),
    Endpoint("read rule", "GET", f"{API}/rules/{RULE}/", public=200),
    Endpoint("list methods", "GET", f"{API}/methods/", public=200),
    Endpoint("read method", "GET", f"{API}/methods/{METHOD}/", public=200),
    Endpoint("list revisions", "GET", f"{API}/revisions/", public=200),
    # the edit made after release 1: not released
    Endpoint(
        "read revision", "GET", lambda: f"{API}/revisions/{latest('case', CASE)}/", public=404
    ),
    Endpoint(
        "read released revision",
        "GET",
        lambda: f"{API}/revisions/{first('case', CASE)}/",
        public=200,
    ),
    Endpoint("case history", "GET", f"{API}/cases/{CASE}/revisions/", public=200),
    Endpoint(
        "case diff",
        "GET",
        lambda: f"{API}/cases/{CASE}/diff/?from={first('case', CASE)}",
        public=200,
    ),
    # cases and claims: analysts
    Endpoint("create case", "POST", f"{API}/cases/", "analyst", 201, new_case),
    Endpoint(
        "replace case", "PUT", f"{API}/cases/{CASE}/", "analyst", 200, current_case, ("case", CASE)
    ),
    Endpoint(
        "patch case", "PATCH", f"{API}/cases/{CASE}/", "analyst", 200, lambda s: {"title": "P"}
    ),
    Endpoint("withdraw case", "DELETE", f"{API}/cases/{CASE}/", "analyst"),
    Endpoint("add claim", "POST", f"{API}/cases/{CASE}/claims/", "analyst", 201, new_claim),
    Endpoint(
        "replace claim",
        "PUT",
        f"{API}/claims/CLM-CP22-003-B/",
        "analyst",
        200,
        claim_b,
        ("case", CASE),
    ),
    Endpoint(
        "patch claim",
        "PATCH",
        f"{API}/claims/CLM-CP22-003-B/",
        "analyst",
        200,
        lambda s: {"status_note": "Checked."},
    ),
    # claim A: B is the evidence of CP22-003's affected components, which it cannot leave
    Endpoint("withdraw claim", "DELETE", f"{API}/claims/CLM-CP22-003-A/", "analyst"),
    # sources: analysts
    Endpoint(
        "create source",
        "POST",
        f"{API}/sources/",
        "analyst",
        201,
        lambda s: {**retitled("sources", SOURCE)(s), "key": "SRC-NEW"},
    ),
    Endpoint(
        "replace source",
        "PUT",
        f"{API}/sources/{SOURCE}/",
        "analyst",
        200,
        retitled("sources", SOURCE),
        ("source", SOURCE),
    ),
    Endpoint(
        "patch source",
        "PATCH",
        f"{API}/sources/{SOURCE}/",
        "analyst",
        200,
        lambda s: {"notes": "n"},
    ),
    Endpoint("withdraw source", "DELETE", f"{API}/sources/{SOURCE}/", "analyst"),
    # components: analysts (one no case names, so that it may be withdrawn)
    Endpoint(
        "create component",
        "POST",
        f"{API}/components/",
        "analyst",
        201,
        lambda s: {**retitled("components", COMPONENT, "name")(s), "key": "CMP-NEW"},
    ),
    Endpoint(
        "replace component",
        "PUT",
        f"{API}/components/{COMPONENT}/",
        "analyst",
        200,
        retitled("components", COMPONENT, "name"),
        ("component", COMPONENT),
    ),
    Endpoint(
        "patch component",
        "PATCH",
        f"{API}/components/{COMPONENT}/",
        "analyst",
        200,
        lambda s: {"aliases": ["sgl"]},
    ),
    Endpoint("withdraw component", "DELETE", f"{API}/components/{COMPONENT}/", "analyst"),
    # rules, methods and reverts: reviewers
    Endpoint(
        "create rule",
        "POST",
        f"{API}/rules/",
        "reviewer",
        201,
        lambda s: {**retitled("rules", RULE, "reason")(s), "key": "RULE-NEW"},
    ),
    Endpoint(
        "replace rule",
        "PUT",
        f"{API}/rules/{RULE}/",
        "reviewer",
        200,
        retitled("rules", RULE, "reason"),
        ("rule", RULE),
    ),
    Endpoint(
        "patch rule", "PATCH", f"{API}/rules/{RULE}/", "reviewer", 200, lambda s: {"reason": "R."}
    ),
    Endpoint("withdraw rule", "DELETE", f"{API}/rules/{RULE}/", "reviewer"),
    Endpoint("create method", "POST", f"{API}/methods/", "reviewer", 201, method_document),
    Endpoint(
        "replace method",
        "PUT",
        f"{API}/methods/{METHOD}/",
        "reviewer",
        200,
        lambda s: {**method_document(s), "key": METHOD, "title": "Changed"},
        ("method", METHOD),
    ),
    Endpoint(
        "patch method",
        "PATCH",
        f"{API}/methods/{METHOD}/",
        "reviewer",
        200,
        lambda s: {"title": "T"},
    ),
    Endpoint("withdraw method", "DELETE", f"{API}/methods/{METHOD}/", "reviewer"),
    Endpoint(
        "revert case",
        "POST",
        f"{API}/cases/{CASE}/revert/",
        "reviewer",
        200,
        lambda s: {"revision": first("case", CASE)},
    ),
]


def allowed(endpoint: Endpoint, role: str) -> bool:
    return role in RANK and RANK[role] >= RANK[endpoint.role]


def expected_status(endpoint: Endpoint, role: str) -> int:
    if endpoint.public is not None and role not in RANK:
        return endpoint.public
    if role == "anonymous":
        return 401
    return endpoint.ok if allowed(endpoint, role) else 403


def call(endpoint: Endpoint, role: str, seed: dict):
    user = None
    if role != "anonymous":
        user = user_in_role(f"{role}-caller", None if role == "nobody" else role)
    client = token_client(user)
    url = endpoint.url() if callable(endpoint.url) else endpoint.url
    headers = {}
    if endpoint.if_match:
        headers["HTTP_IF_MATCH"] = f'"{latest(*endpoint.if_match)}"'
    if endpoint.writes:
        url += "?summary=Permission%20test"
    payload = json.dumps(endpoint.data(seed)) if endpoint.data else b""
    return client.generic(endpoint.method, url, payload, content_type="application/json", **headers)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=repr)
def test_every_endpoint_for_every_role(world, endpoint, role):
    before = state()
    response = call(endpoint, role, world)
    assert response.status_code == expected_status(endpoint, role), response.content
    if response.status_code >= 400:
        error = json.loads(response.content)
        assert error["status"] == response.status_code
        code = error["errors"][0]["code"]
        if response.status_code == 404:
            assert code == "record.not_found"
        else:
            assert code == ("not_authenticated" if role == "anonymous" else "permission.denied")
    if endpoint.writes and not allowed(endpoint, role):
        assert state() == before  # a denied write changes nothing
    elif endpoint.writes:
        numbers = state()[0]
        assert len(numbers) > len(before[0])  # the change was recorded as a revision
        assert response["ETag"] == f'"{numbers[-1]}"'
    else:
        assert state() == before


@pytest.mark.parametrize("url", ["/api/v1/schema/", "/api/v1/docs/", "/api/v1/redoc/"])
@pytest.mark.parametrize("role", ["anonymous", "nobody"])
def test_schema_and_docs_are_public(db, url, role):
    client = api_client(make_user("nobody", None) if role == "nobody" else None)
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("role", ["anonymous", "nobody"])
def test_readers_without_a_role_read_the_released_record(world, role):
    """Every record, claim and revision read answers them from release 1: the edit made
    since is nowhere, and the released title is served."""
    for endpoint in ENDPOINTS:
        if endpoint.writes:
            continue
        response = call(endpoint, role, world)
        assert response.status_code == endpoint.public, endpoint
        assert EDITED_TITLE.encode() not in response.content, endpoint
    released = call(ENDPOINTS[1], role, world)
    assert json.loads(released.content)["title"] == case_doc(world, CASE)["title"]
    assert released["ETag"] == f'"{first("case", CASE)}"'


@pytest.mark.parametrize("role", ["viewer", "analyst", "reviewer"])
def test_readers_with_a_role_read_the_working_state(world, role):
    response = call(ENDPOINTS[1], role, world)
    assert json.loads(response.content)["title"] == EDITED_TITLE
    assert response["ETag"] == f'"{latest("case", CASE)}"'


def test_anonymous_writes_are_refused_with_401_and_the_token_challenge(world):
    for endpoint in ENDPOINTS:
        if not endpoint.writes:
            continue
        response = call(endpoint, "anonymous", world)
        assert response.status_code == 401, endpoint
        assert response["WWW-Authenticate"] == "Token"
        assert json.loads(response.content)["errors"][0]["code"] == "not_authenticated"


def test_the_token_endpoint_serves_users_without_a_role(db):
    make_user("nobody", None)
    response = APIClient().post(
        f"{API}/auth/token/", {"username": "nobody", "password": "pw-nobody"}, format="json"
    )
    assert response.status_code == 200
    token = json.loads(response.content)["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(f"{API}/cases/").status_code == 200  # the released record
    denied = client.post(f"{API}/cases/?summary=x", {}, format="json")
    assert denied.status_code == 403
    assert json.loads(denied.content)["errors"][0]["code"] == "permission.denied"


def test_inactive_users_tokens_stop_working(world, analyst):
    token = Token.objects.create(user=analyst)
    analyst.is_active = False
    analyst.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.get(f"{API}/cases/")
    assert response.status_code == 401
    assert json.loads(response.content)["errors"][0]["code"] == "authentication_failed"


def test_a_role_lost_between_check_and_write_is_refused_inside_the_transaction(
    world, analyst, monkeypatch
):
    """The services check the role again while writing: the view's early check is not the
    only line."""
    monkeypatch.setattr("claimsdb.api.permissions.holds_role", lambda user, role: True)
    client = token_client(analyst)
    before = state()
    response = client.generic(
        "PATCH",
        f"{API}/rules/{RULE}/?summary=x",
        json.dumps({"reason": "Sneaky."}),
        content_type="application/json",
    )
    assert response.status_code == 403
    assert json.loads(response.content)["errors"][0]["code"] == "permission.denied"
    assert state() == before
