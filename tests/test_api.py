"""The REST API: documents and ETags, writes through the services, claims, revisions, and
the one error shape — every refusal with its code and path, and nothing written."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.test import APIClient

from claimsdb.api.errors import exception_handler
from claimsdb.models import Revision
from claimsdb.records import record_document
from claimsdb.services import case_update, record_create

from . import support
from .concurrent_writes import limits_set_by, meddle
from .support import body, case_doc, latest, source_document, state, token_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

API = "/api/v1"
CASE = f"{API}/cases/CP22-003/"
FIGURE = "FIG-CP22-002-RESPONSES"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
METHOD = "diggingbeagle.assessment/1"


@pytest.fixture
def seeded(module_seed, db):
    """Overrides conftest's: the module's one seed, not loaded again for every test."""
    return copy.deepcopy(module_seed)


@pytest.fixture
def analyst_client(seeded, analyst) -> APIClient:
    """Overrides conftest's browser session: the analyst's token."""
    return token_client(analyst)


@pytest.fixture
def reviewer_client(seeded, reviewer) -> APIClient:
    """Overrides conftest's browser session: the reviewer's token."""
    return token_client(reviewer)


def problems(response) -> list[tuple[str, str]]:
    data = body(response)
    assert set(data) == {"status", "title", "errors"}
    assert data["status"] == response.status_code
    return [(e["code"], e["path"]) for e in data["errors"]]


def etag(kind: str = "case", key: str = "CP22-003") -> str:
    return f'"{latest(kind, key)}"'


def write(client, method, url, data=None, *, summary="API test", if_match=None, **extra):
    query = {} if summary is None else {"summary": summary}
    query.update(extra.pop("query", {}))
    headers = {"HTTP_IF_MATCH": if_match} if if_match else {}
    if query:
        url = f"{url}?" + "&".join(f"{k}={v}" for k, v in query.items())
    content_type = extra.pop("content_type", "application/json")
    payload = json.dumps(data) if data is not None and not isinstance(data, bytes) else data
    return client.generic(method, url, payload or b"", content_type=content_type, **headers)


# --- authentication ----------------------------------------------------------------------


def test_token_then_token_authenticated_read(seeded, analyst):
    response = APIClient().post(
        f"{API}/auth/token/", {"username": "analyst", "password": "pw-analyst"}, format="json"
    )
    assert response.status_code == 200
    token = body(response)["token"]
    assert token == Token.objects.get(user=analyst).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(CASE).status_code == 200


def test_token_refused_for_wrong_password_and_missing_field(seeded, analyst):
    wrong = APIClient().post(
        f"{API}/auth/token/", {"username": "analyst", "password": "nope"}, format="json"
    )
    assert wrong.status_code == 400
    assert problems(wrong) == [("signin.failed", "")]
    missing = APIClient().post(f"{API}/auth/token/", {"username": "analyst"}, format="json")
    assert problems(missing) == [("request.required", "password")]


def test_token_attempts_are_throttled(seeded, settings):
    settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS = 2
    for _ in range(2):
        APIClient().post(f"{API}/auth/token/", {"username": "x", "password": "y"}, format="json")
    response = APIClient().post(
        f"{API}/auth/token/", {"username": "x", "password": "y"}, format="json"
    )
    assert response.status_code == 429
    assert problems(response) == [("signin.throttled", "")]
    assert int(response["Retry-After"]) > 0


def test_bad_token_is_401_in_the_error_shape(seeded):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get(CASE)
    assert response.status_code == 401
    assert problems(response) == [("authentication.failed", "")]
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("role", ["viewer", "analyst"])
def test_session_login_reads_and_the_browsable_api_renders(seeded, role, request):
    request.getfixturevalue(role)
    client = APIClient()
    assert client.login(username=role, password=f"pw-{role}")
    assert client.get(CASE).status_code == 200
    page = client.get(CASE, HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert b"CP22-003" in page.content
    listing = client.get(f"{API}/cases/", HTTP_ACCEPT="text/html")
    assert listing.status_code == 200
    claim = client.get(f"{API}/claims/CLM-CP22-003-A/", HTTP_ACCEPT="text/html")
    assert claim.status_code == 200


def test_session_writes_need_the_csrf_token(seeded, analyst):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="analyst", password="pw-analyst")
    before = state()
    response = write(client, "PATCH", CASE, {"title": "x"})
    assert response.status_code == 403
    assert problems(response)[0][0] == "permission.denied"
    assert state() == before


# --- reading documents -------------------------------------------------------------------


def test_get_case_is_the_canonical_document_with_its_revision_as_etag(analyst_client):
    response = analyst_client.get(CASE)
    assert response.status_code == 200
    assert body(response) == record_document("case", "CP22-003")
    assert response["ETag"] == etag()
    assert response["Content-Type"] == "application/json"
    # sorted keys, as docs/record-format.md serializes documents
    assert list(body(response)) == sorted(body(response))


@pytest.mark.parametrize("sent", ["{etag}", "W/{etag}", '"1", {etag}', "*"])
def test_if_none_match_gives_304(analyst_client, sent):
    current = etag()
    response = analyst_client.get(CASE, HTTP_IF_NONE_MATCH=sent.format(etag=current))
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == current


def test_if_none_match_with_an_older_etag_gives_the_document(analyst_client):
    response = analyst_client.get(CASE, HTTP_IF_NONE_MATCH='"1"')
    assert response.status_code == 200
    assert body(response)["key"] == "CP22-003"


def test_unknown_record_is_404_record_not_found(analyst_client):
    response = analyst_client.get(f"{API}/cases/CP22-999/")
    assert response.status_code == 404
    assert problems(response) == [("record.not_found", "")]
    odd = analyst_client.get(f"{API}/cases/a%2Fb%0Ac/")
    assert odd.status_code == 404
    assert problems(odd) == [("record.not_found", "")]


@pytest.mark.parametrize("path", [f"{METHOD}/", "diggingbeagle.assessment%2F1/"])
def test_method_keys_contain_a_slash(analyst_client, path):
    response = analyst_client.get(f"{API}/methods/{path}")
    assert response.status_code == 200
    assert body(response)["key"] == METHOD
    assert response["ETag"] == etag("method", METHOD)


@pytest.mark.parametrize(
    ("kind", "key"),
    [("source", SOURCE), ("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003"), ("method", METHOD)],
)
def test_other_records_read_the_same_way(analyst_client, kind, key):
    response = analyst_client.get(f"{API}/{kind}s/{key}/")
    assert body(response) == record_document(kind, key)
    assert response["ETag"] == etag(kind, key)


# --- lists ---------------------------------------------------------------------------------


def keys(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["key"] for item in body(response)["results"]]


def test_case_list_is_paginated_with_documents_and_revisions(analyst_client):
    response = analyst_client.get(f"{API}/cases/")
    data = body(response)
    assert data["count"] == 2
    assert [i["key"] for i in data["results"]] == ["CP22-002", "CP22-003"]
    item = data["results"][1]
    assert item["document"] == record_document("case", "CP22-003")
    assert item["revision"] == latest("case", "CP22-003")
    first = body(analyst_client.get(f"{API}/cases/?page_size=1"))
    assert first["count"] == 2
    assert [i["key"] for i in first["results"]] == ["CP22-002"]
    second = body(analyst_client.get(first["next"]))
    assert [i["key"] for i in second["results"]] == ["CP22-003"]
    assert second["next"] is None


def test_case_list_ordering(analyst_client):
    assert keys(analyst_client.get(f"{API}/cases/?ordering=-key")) == ["CP22-003", "CP22-002"]
    by_revision = keys(analyst_client.get(f"{API}/cases/?ordering=-revision"))
    assert sorted(by_revision, key=lambda k: -latest("case", k)) == by_revision


def test_invalid_page_is_404_in_the_error_shape(analyst_client):
    response = analyst_client.get(f"{API}/cases/?page=9")
    assert response.status_code == 404
    assert problems(response) == [("request.not_found", "")]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=ready", ["CP22-002", "CP22-003"]),
        ("status=draft", []),
        ("tag=rdma", ["CP22-003"]),
        ("tag=kv-cache&tag=glm-5.3", ["CP22-002"]),
        ("tag=kv-cache", ["CP22-002", "CP22-003"]),
        ("related_to=CP22-003", ["CP22-002"]),
        ("related_to=CP22-002", ["CP22-003"]),
        ("q=two-H200", ["CP22-003"]),  # in a claim statement
        ("q=cloudflare", ["CP22-002", "CP22-003"]),
        ("q=GLM-5.3", ["CP22-002", "CP22-003"]),
        ("evidence_grade=B", ["CP22-003"]),
        ("evidence_grade=C", []),
        ("evidence_grade=B&setting=research_demonstration", ["CP22-003"]),
        ("evidence_grade=B&setting=production_incident", []),
        ("not_a_dimension=B", ["CP22-002", "CP22-003"]),
    ],
)
def test_case_list_filters(analyst_client, query, expected):
    assert keys(analyst_client.get(f"{API}/cases/?{query}")) == expected


def test_dimension_filters_match_the_current_assessment_unless_any_is_asked(
    analyst_client, seeded, analyst
):
    document = case_doc(seeded, "CP22-003")
    newer = copy.deepcopy(document["assessments"][0])
    newer["assessed_on"] = "2026-11-30"
    newer["values"]["evidence_grade"] = "C"
    document["assessments"].append(newer)
    case_update(user=analyst, key="CP22-003", document=document, summary="Regraded")
    assert keys(analyst_client.get(f"{API}/cases/?evidence_grade=B")) == []
    assert keys(analyst_client.get(f"{API}/cases/?evidence_grade=C")) == ["CP22-003"]
    assert keys(analyst_client.get(f"{API}/cases/?evidence_grade=B&assessment=any")) == ["CP22-003"]


def test_invalid_filter_value_is_400_naming_the_parameter(analyst_client):
    response = analyst_client.get(f"{API}/cases/?status=done")
    assert response.status_code == 400
    assert problems(response) == [("request.invalid_choice", "status")]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sources/?kind=primary_disclosure", [SOURCE]),
        ("sources/?kind=dataset", []),
        ("sources/?q=NIXL%20backend", ["SRC-SGLANG-PR-35360"]),
        ("rules/?case=CP22-003", ["RULE-CP22-002-RESPONSES-NOT-CP22-003"]),
        ("rules/?figure=FIG-CP22-002-RESPONSES", ["RULE-CP22-002-RESPONSES-NOT-CP22-003"]),
        ("rules/?case=CP22-002", []),
        ("rules/?status=withdrawn", []),
        ("methods/?status=active", [METHOD]),
    ],
)
def test_other_list_filters(analyst_client, url, expected):
    assert keys(analyst_client.get(f"{API}/{url}")) == expected


# --- writing records ----------------------------------------------------------------------


def new_case(key: str = "CP22-010") -> dict:
    return support.new_case(key, title="A new case", tags=["kv-cache"])


def test_post_creates_a_record_with_one_revision(analyst_client, analyst):
    response = write(analyst_client, "POST", f"{API}/cases/", new_case(), summary="New case")
    assert response.status_code == 201
    revision = Revision.objects.get(record_key="CP22-010")
    assert response["ETag"] == f'"{revision.number}"'
    assert response["Location"] == "http://testserver/api/v1/cases/CP22-010/"
    assert body(response) == record_document("case", "CP22-010")
    assert (revision.action, revision.summary, revision.material, revision.author) == (
        "create",
        "New case",
        True,
        analyst,
    )


def test_post_existing_key_is_409_record_exists(analyst_client, seeded):
    before = state()
    response = write(analyst_client, "POST", f"{API}/cases/", case_doc(seeded, "CP22-003"))
    assert response.status_code == 409
    assert problems(response) == [("record.exists", "key")]
    assert state() == before


def test_material_flag_and_summary_are_query_parameters(analyst_client):
    response = write(
        analyst_client,
        "PATCH",
        CASE,
        {"title": "Typo fixed"},
        summary="Typo",
        query={"material": "false"},
    )
    assert response.status_code == 200
    revision = Revision.objects.latest("number")
    assert (revision.summary, revision.material) == ("Typo", False)


def test_missing_summary_is_refused(analyst_client):
    before = state()
    response = write(analyst_client, "PATCH", CASE, {"title": "x"}, summary=None)
    assert response.status_code == 400
    assert problems(response) == [("revision.summary_required", "summary")]
    blank = write(analyst_client, "PATCH", CASE, {"title": "x"}, summary="%20%20")
    assert problems(blank) == [("revision.summary_required", "summary")]
    assert state() == before


def test_invalid_material_flag_is_refused(analyst_client):
    before = state()
    response = write(analyst_client, "PATCH", CASE, {"title": "x"}, query={"material": "maybe"})
    assert response.status_code == 400
    assert problems(response) == [("revision.material_invalid", "material")]
    assert state() == before


def test_put_replaces_with_if_match_and_returns_the_new_etag(analyst_client):
    document = body(analyst_client.get(CASE))
    document["title"] = "Retitled"
    response = write(analyst_client, "PUT", CASE, document, if_match=etag())
    assert response.status_code == 200
    assert body(response)["title"] == "Retitled"
    revision = Revision.objects.latest("number")
    assert (revision.record_key, revision.action) == ("CP22-003", "update")
    assert response["ETag"] == f'"{revision.number}"'
    assert record_document("case", "CP22-003")["title"] == "Retitled"


def test_put_without_if_match_is_428(analyst_client):
    before = state()
    response = write(analyst_client, "PUT", CASE, body(analyst_client.get(CASE)))
    assert response.status_code == 428
    assert problems(response) == [("revision.precondition_required", "If-Match")]
    assert state() == before


@pytest.mark.parametrize("sent", ['"1"', 'W/"{n}"', '"abc"'])
def test_put_with_a_stale_or_weak_etag_is_412(analyst_client, sent):
    document = body(analyst_client.get(CASE))
    document["title"] = "Lost"
    before = state()
    response = write(
        analyst_client, "PUT", CASE, document, if_match=sent.format(n=latest("case", "CP22-003"))
    )
    assert response.status_code == 412
    assert problems(response) == [("revision.stale", "")]
    assert state() == before


def test_malformed_if_match_is_400(analyst_client):
    before = state()
    response = write(analyst_client, "PUT", CASE, body(analyst_client.get(CASE)), if_match="14")
    assert response.status_code == 400
    assert problems(response) == [("revision.precondition_invalid", "If-Match")]
    assert state() == before


def test_if_match_star_and_lists(analyst_client):
    document = body(analyst_client.get(CASE))
    document["title"] = "Star"
    assert write(analyst_client, "PUT", CASE, document, if_match="*").status_code == 200
    document["title"] = "Listed"
    listed = write(analyst_client, "PUT", CASE, document, if_match=f'"1", {etag()}')
    assert listed.status_code == 200


def test_lost_update_first_put_wins_second_gets_412(seeded, analyst, reviewer):
    alice, bob = token_client(analyst), token_client(reviewer)
    first, second = alice.get(CASE), bob.get(CASE)
    assert first["ETag"] == second["ETag"]
    mine, theirs = body(first), body(second)
    mine["title"] = "Alice's title"
    theirs["summary"] = "Bob's summary"
    assert write(alice, "PUT", CASE, mine, if_match=first["ETag"]).status_code == 200
    before = state()
    response = write(bob, "PUT", CASE, theirs, if_match=second["ETag"])
    assert response.status_code == 412
    assert problems(response) == [("revision.stale", "")]
    assert state() == before
    assert record_document("case", "CP22-003")["title"] == "Alice's title"


@pytest.mark.parametrize(
    ("kind", "key"),
    [("case", "CP22-003"), ("source", SOURCE), ("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")],
)
def test_round_trip_get_then_put_unchanged_makes_no_revision(reviewer_client, kind, key):
    url = f"{API}/{kind}s/{key}/"
    got = reviewer_client.get(url)
    before = state()
    response = write(reviewer_client, "PUT", url, body(got), if_match=got["ETag"])
    assert response.status_code == 200
    assert response["ETag"] == got["ETag"]
    assert body(response) == body(got)
    assert state() == before


def test_put_with_another_key_is_refused(analyst_client):
    document = body(analyst_client.get(CASE))
    document["key"] = "CP22-004"
    response = write(analyst_client, "PUT", CASE, document, if_match=etag())
    assert problems(response) == [("record.key_mismatch", "key")]


def test_put_unknown_record_is_404(analyst_client):
    document = new_case("CP22-404")
    response = write(analyst_client, "PUT", f"{API}/cases/CP22-404/", document, if_match='"3"')
    assert response.status_code == 404
    assert problems(response) == [("record.not_found", "")]


@pytest.mark.parametrize("content_type", ["application/merge-patch+json", "application/json"])
def test_patch_is_a_json_merge_patch(analyst_client, content_type):
    response = write(
        analyst_client,
        "PATCH",
        CASE,
        {"title": "Patched", "tags": ["rdma"]},
        content_type=content_type,
    )
    assert response.status_code == 200
    document = record_document("case", "CP22-003")
    assert (document["title"], document["tags"]) == ("Patched", ["rdma"])
    assert len(document["claims"]) == 3
    assert response["ETag"] == etag()


def test_patch_null_removes_a_field_which_the_format_refuses(analyst_client):
    before = state()
    response = write(analyst_client, "PATCH", CASE, {"title": None})
    assert problems(response) == [("document.missing_field", "title")]
    assert state() == before


def test_patch_honours_if_match(analyst_client):
    before = state()
    response = write(analyst_client, "PATCH", CASE, {"title": "x"}, if_match='"1"')
    assert response.status_code == 412
    assert state() == before
    current = write(analyst_client, "PATCH", CASE, {"title": "x"}, if_match=etag())
    assert current.status_code == 200


def test_a_write_landing_between_the_read_and_the_write_of_a_patch_is_kept(
    analyst_client, reviewer, monkeypatch
):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    response = write(analyst_client, "PATCH", CASE, {"title": "Mine"})
    assert response.status_code == 200
    assert len(reads) == 2  # refused as stale once, then applied to their revision
    assert (body(response)["title"], body(response)["limits"]) == ("Mine", "Theirs 1")
    assert response["ETag"] == etag()


def test_a_patch_with_if_match_is_refused_when_a_write_lands_in_between(
    analyst_client, reviewer, monkeypatch
):
    based_on = etag()
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    response = write(analyst_client, "PATCH", CASE, {"title": "Mine"}, if_match=based_on)
    assert response.status_code == 412
    assert problems(response) == [("revision.stale", "")]
    assert len(reads) == 1
    document = record_document("case", "CP22-003")
    assert document["title"] != "Mine" and document["limits"] == "Theirs 1"


def test_patch_that_changes_nothing_keeps_the_etag(analyst_client):
    current = etag()
    response = write(analyst_client, "PATCH", CASE, {})
    assert response.status_code == 200
    assert response["ETag"] == current


def test_delete_withdraws_and_erases_nothing(analyst_client):
    response = write(analyst_client, "DELETE", CASE)
    assert response.status_code == 200
    assert body(response)["status"] == "withdrawn"
    revision = Revision.objects.latest("number")
    assert (revision.record_key, revision.action) == ("CP22-003", "withdraw")
    assert response["ETag"] == f'"{revision.number}"'
    still = analyst_client.get(CASE)
    assert body(still)["status"] == "withdrawn"
    assert len(body(still)["claims"]) == 3
    again = write(analyst_client, "DELETE", CASE)
    assert again.status_code == 200
    assert again["ETag"] == response["ETag"]


def test_delete_honours_if_match(analyst_client):
    before = state()
    response = write(analyst_client, "DELETE", CASE, if_match='"1"')
    assert response.status_code == 412
    assert state() == before


# --- every rule code, with its path, and nothing written --------------------------------


@dataclass
class Refusal:
    """A write through the API that a rule refuses, and the (code, path) it must report."""

    name: str
    method: str
    url: str
    data: Callable[[dict], object]  # seed bundle -> body
    code: str
    path: str
    status: int = 400
    setup: Callable | None = None
    if_match: bool = True
    extra: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return self.name


def mutated(key: str, mutate: Callable[[dict], None]) -> Callable[[dict], dict]:
    def build(seed: dict) -> dict:
        document = case_doc(seed, key)
        mutate(document)
        return document

    return build


def figure(figure_id="FIG-CP22-003-X", claims=("CLM-CP22-003-B",), scope="production") -> dict:
    return {
        "id": figure_id,
        "value": 37,
        "unit": "responses",
        "measure": "affected_responses",
        "scope": scope,
        "description": "",
        "claims": list(claims),
    }


def set_path(document: dict, path: list, value) -> None:
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value


def put_case(name, mutate, code, path, key="CP22-003", **kwargs) -> Refusal:
    return Refusal(name, "PUT", f"{API}/cases/{key}/", mutated(key, mutate), code, path, **kwargs)


def claim(claim_id="CLM-CP22-003-D", **fields) -> dict:
    return {
        "id": claim_id,
        "statement": "A further claim.",
        "status": "unverified",
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": [],
        **fields,
    }


def add_own_figure(seed, user):
    document = case_doc(seed, "CP22-003")
    document["figures"].append(figure())
    case_update(user=user, key="CP22-003", document=document, summary="Own figure")


rule_document = functools.partial(
    support.rule_document, key="RULE-NEW", figure=FIGURE, case="CP22-003"
)


def method_document(seed) -> dict:
    document = copy.deepcopy(seed["methods"][0])
    document["key"] = "claimsdb.test/1"
    return document


REFUSALS = [
    # the seed's scoping rule, through PUT and PATCH
    put_case(
        "PUT: the 155 responses attributed to CP22-003",
        lambda d: d["attributions"].append({"figure": FIGURE, "role": "impact_basis", "note": ""}),
        "scope.non_attribution",
        "attributions[0].figure",
    ),
    Refusal(
        "PATCH: the 155 responses attributed to CP22-003",
        "PATCH",
        CASE,
        lambda seed: {"attributions": [{"figure": FIGURE, "role": "context", "note": ""}]},
        "scope.non_attribution",
        "attributions[0].figure",
        if_match=False,
    ),
    # the document's structure
    put_case("missing field", lambda d: d.pop("title"), "document.missing_field", "title"),
    put_case("unknown field", lambda d: d.update(colour="red"), "document.unknown_field", "colour"),
    put_case("wrong type", lambda d: d.update(tags="rdma"), "document.type", "tags"),
    put_case(
        "unknown status", lambda d: d.update(status="done"), "document.invalid_value", "status"
    ),
    put_case(
        "unknown format",
        lambda d: d.update(format="claimsdb.case/2"),
        "document.format",
        "format",
    ),
    put_case("another key", lambda d: d.update(key="CP22-004"), "record.key_mismatch", "key"),
    Refusal(
        "POST: a malformed key",
        "POST",
        f"{API}/cases/",
        lambda seed: {**new_case(), "key": "cp 22"},
        "record.key_format",
        "key",
        if_match=False,
    ),
    Refusal(
        "POST: an existing key",
        "POST",
        f"{API}/cases/",
        lambda seed: case_doc(seed, "CP22-002"),
        "record.exists",
        "key",
        status=409,
        if_match=False,
    ),
    Refusal(
        "PUT: not JSON",
        "PUT",
        CASE,
        lambda seed: b'{"format": "claimsdb.case/1",',
        "document.malformed",
        "",
    ),
    Refusal(
        "PUT: NaN is not JSON",
        "PUT",
        CASE,
        lambda seed: b'{"value": NaN}',
        "document.malformed",
        "",
    ),
    Refusal("PUT: not an object", "PUT", CASE, lambda seed: [1, 2], "document.type", ""),
    # claims
    put_case(
        "claim ID format",
        lambda d: d["claims"].append(claim("CLM-lower")),
        "claim.id_format",
        "claims[3].id",
    ),
    put_case(
        "claim ID of another case",
        lambda d: d["claims"].append(claim("CLM-CP22-002-A")),
        "claim.id_taken",
        "claims[3].id",
    ),
    put_case(
        "claim ID twice",
        lambda d: d["claims"].append(copy.deepcopy(d["claims"][0])),
        "claim.id_duplicate",
        "claims[3].id",
    ),
    put_case(
        "supported without a supporting link",
        lambda d: d["claims"][0].update(evidence=[]),
        "claim.evidence_required",
        "claims[0].evidence",
    ),
    put_case(
        "evidence from an unknown source",
        lambda d: d["claims"][0]["evidence"][0].update(source="SRC-NOPE"),
        "evidence.source_unknown",
        "claims[0].evidence[0].source",
    ),
    # assessments
    put_case(
        "unknown method",
        lambda d: d["assessments"][0].update(method="nope/1"),
        "assessment.method_unknown",
        "assessments[0].method",
    ),
    put_case(
        "value missing",
        lambda d: d["assessments"][0]["values"].pop("setting"),
        "assessment.value_missing",
        "assessments[0].values.setting",
    ),
    put_case(
        "value outside the vocabulary",
        lambda d: d["assessments"][0]["values"].update(setting="moon"),
        "assessment.value_unknown",
        "assessments[0].values.setting",
    ),
    put_case(
        "ungraded without a reason",
        lambda d: d["assessments"][0].update(impact_ungraded_reason=""),
        "assessment.impact_reason",
        "assessments[0].impact_ungraded_reason",
    ),
    put_case(
        "impact off the scale",
        lambda d: d["assessments"][0].update(impact=9, impact_ungraded_reason=""),
        "assessment.impact_range",
        "assessments[0].impact",
    ),
    put_case(
        "graded impact without a production figure",
        lambda d: d["assessments"][0].update(impact=2, impact_ungraded_reason=""),
        "assessment.impact_basis",
        "assessments[0].impact",
    ),
    put_case(
        "basis names another case's claim",
        lambda d: d["assessments"][0]["evidence_basis"]["claims"].append("CLM-CP22-002-A"),
        "assessment.basis_foreign",
        "assessments[0].evidence_basis.claims[0]",
    ),
    put_case(
        "graded impact resting on a lab figure",
        lambda d: (
            d["figures"].append(figure(scope="lab")),
            d["assessments"][0].update(impact=2, impact_ungraded_reason=""),
        ),
        "scope.lab_not_impact",
        "assessments[0].impact",
    ),
    # figures and attributions
    put_case(
        "figure ID format",
        lambda d: d["figures"].append(figure("FIG-lower")),
        "figure.id_format",
        "figures[0].id",
    ),
    put_case(
        "figure ID twice",
        lambda d: d["figures"].extend([figure(), figure()]),
        "figure.id_duplicate",
        "figures[1].id",
    ),
    put_case(
        "another case's figure",
        lambda d: d["figures"].append(figure(FIGURE)),
        "figure.id_taken",
        "figures[0].id",
    ),
    put_case(
        "figure supported by an unknown claim",
        lambda d: d["figures"].append(figure(claims=["CLM-NOPE"])),
        "figure.claim_unknown",
        "figures[0].claims[0]",
    ),
    put_case(
        "removing a figure a rule names",
        lambda d: d.update(figures=[]),
        "figure.in_use",
        "figures",
        key="CP22-002",
    ),
    put_case(
        "attributing an unknown figure",
        lambda d: d["attributions"].append({"figure": "FIG-NOPE", "role": "context", "note": ""}),
        "attribution.figure_unknown",
        "attributions[0].figure",
    ),
    put_case(
        "attributing a figure of another event",
        lambda d: d["attributions"].append(
            {"figure": "FIG-CP22-003-X", "role": "context", "note": ""}
        ),
        "scope.cross_case_figure",
        "attributions[0].figure",
        key="CP22-002",
        setup=add_own_figure,
    ),
    # relations and runs
    put_case(
        "same event and related but distinct",
        lambda d: d["relations"].append({"case": "CP22-002", "kind": "same_event", "note": ""}),
        "scope.relation_conflict",
        "relations[1]",
    ),
    put_case(
        "relation to an unknown case",
        lambda d: d["relations"].append({"case": "CP99-999", "kind": "variant_of", "note": ""}),
        "relation.case_unknown",
        "relations[1].case",
    ),
    put_case(
        "relation listed twice",
        lambda d: d["relations"].append(copy.deepcopy(d["relations"][0])),
        "relation.duplicate",
        "relations[1]",
    ),
    put_case(
        "editing imported runs",
        lambda d: d["reproduction_runs"].append({"run_id": "run-1"}),
        "case.reproduction_runs_readonly",
        "reproduction_runs",
    ),
    # sources, rules and methods
    Refusal(
        "POST source: unknown kind",
        "POST",
        f"{API}/sources/",
        lambda seed: source_document(kind="rumour"),
        "document.invalid_value",
        "kind",
        if_match=False,
    ),
    Refusal(
        "POST rule: unknown figure",
        "POST",
        f"{API}/rules/",
        lambda seed: rule_document(figure="FIG-NOPE"),
        "rule.figure_unknown",
        "figure",
        if_match=False,
    ),
    Refusal(
        "POST rule: unknown case",
        "POST",
        f"{API}/rules/",
        lambda seed: rule_document(case="CP99-999"),
        "rule.case_unknown",
        "case",
        if_match=False,
    ),
    Refusal(
        "POST rule: forbidding a figure its own case",
        "POST",
        f"{API}/rules/",
        lambda seed: rule_document(case="CP22-002"),
        "scope.rule_conflict",
        "case",
        if_match=False,
    ),
    Refusal(
        "POST method: a dimension twice",
        "POST",
        f"{API}/methods/",
        lambda seed: {
            **method_document(seed),
            "dimensions": method_document(seed)["dimensions"][:1] * 2,
        },
        "method.invalid",
        "dimensions[1].key",
        if_match=False,
    ),
    Refusal(
        "PUT method: changing a method in use",
        "PUT",
        f"{API}/methods/{METHOD}/",
        lambda seed: {**seed["methods"][0], "title": "Renamed"},
        "method.in_use",
        "",
    ),
    # the claims sub-resource: paths point into the claim sent
    Refusal(
        "POST claim: supported without a supporting link",
        "POST",
        f"{CASE}claims/",
        lambda seed: claim(status="supported"),
        "claim.evidence_required",
        "evidence",
        if_match=False,
    ),
    Refusal(
        "POST claim: an ID of another case",
        "POST",
        f"{CASE}claims/",
        lambda seed: claim("CLM-CP22-002-A"),
        "claim.id_taken",
        "id",
        if_match=False,
    ),
    Refusal(
        "POST claim: a malformed ID",
        "POST",
        f"{CASE}claims/",
        lambda seed: claim("claim d"),
        "claim.id_format",
        "id",
        if_match=False,
    ),
    Refusal(
        "POST claim: a missing field",
        "POST",
        f"{CASE}claims/",
        lambda seed: {k: v for k, v in claim().items() if k != "basis"},
        "document.missing_field",
        "basis",
        if_match=False,
    ),
    Refusal(
        "PUT claim: refuted without a contradicting link",
        "PUT",
        f"{API}/claims/CLM-CP22-003-A/",
        lambda seed: {**case_doc(seed, "CP22-003")["claims"][0], "status": "refuted"},
        "claim.evidence_required",
        "evidence",
    ),
    Refusal(
        "PATCH claim: evidence from an unknown source",
        "PATCH",
        f"{API}/claims/CLM-CP22-003-A/",
        lambda seed: {"evidence": [{"source": "SRC-NOPE", "relation": "supports", "locator": ""}]},
        "evidence.source_unknown",
        "evidence[0].source",
        if_match=False,
    ),
    Refusal(
        "PUT claim: another ID",
        "PUT",
        f"{API}/claims/CLM-CP22-003-A/",
        lambda seed: claim("CLM-CP22-003-Z"),
        "record.key_mismatch",
        "id",
    ),
]


@pytest.mark.parametrize("refusal", REFUSALS, ids=repr)
def test_every_rule_code_is_reported_with_its_path_and_nothing_is_written(
    seeded, reviewer, refusal
):
    if refusal.setup:
        refusal.setup(seeded, reviewer)
    client = token_client(reviewer)
    before = state()
    if_match = None
    if refusal.if_match:
        key = refusal.url.rstrip("/").split("/")[-1]
        if "/claims/" in refusal.url:
            if_match = etag()
        elif "/methods/" in refusal.url:
            if_match = etag("method", METHOD)
        else:
            if_match = etag("case", key)
    response = write(client, refusal.method, refusal.url, refusal.data(seeded), if_match=if_match)
    assert response.status_code == refusal.status, response.content
    assert (refusal.code, refusal.path) in problems(response)
    assert state() == before


def test_a_refusal_lists_every_problem(reviewer_client, seeded):
    document = case_doc(seeded, "CP22-003")
    document["attributions"].append({"figure": FIGURE, "role": "context", "note": ""})
    document["claims"][0]["evidence"] = []
    document["status"] = "done"
    response = write(reviewer_client, "PUT", CASE, document, if_match=etag())
    assert set(problems(response)) >= {
        ("document.invalid_value", "status"),
    }
    document["status"] = "ready"
    response = write(reviewer_client, "PUT", CASE, document, if_match=etag())
    assert set(problems(response)) >= {("claim.evidence_required", "claims[0].evidence")}


# --- claims -------------------------------------------------------------------------------


def test_claims_list_with_the_case_etag(analyst_client):
    response = analyst_client.get(f"{CASE}claims/")
    assert [c["id"] for c in body(response)] == [
        "CLM-CP22-003-A",
        "CLM-CP22-003-B",
        "CLM-ENRICH-20261028-014",
    ]
    assert response["ETag"] == etag()
    cached = analyst_client.get(f"{CASE}claims/", HTTP_IF_NONE_MATCH=etag())
    assert cached.status_code == 304


def test_add_a_claim_is_one_revision_of_its_case(analyst_client):
    response = write(
        analyst_client, "POST", f"{CASE}claims/", claim(), summary="Claim D", query={"position": 0}
    )
    assert response.status_code == 201
    assert body(response) == claim()
    assert response["Location"] == "http://testserver/api/v1/claims/CLM-CP22-003-D/"
    revision = Revision.objects.latest("number")
    assert (revision.record_kind, revision.record_key, revision.summary) == (
        "case",
        "CP22-003",
        "Claim D",
    )
    assert response["ETag"] == f'"{revision.number}"'
    assert record_document("case", "CP22-003")["claims"][0]["id"] == "CLM-CP22-003-D"


def test_read_a_claim_names_its_case(analyst_client):
    response = analyst_client.get(f"{API}/claims/CLM-CP22-003-B/")
    assert body(response) == record_document("case", "CP22-003")["claims"][1]
    assert response["ETag"] == etag()
    assert response["Link"] == '<http://testserver/api/v1/cases/CP22-003/>; rel="up"'
    missing = analyst_client.get(f"{API}/claims/CLM-NOPE/")
    assert missing.status_code == 404
    assert problems(missing) == [("record.not_found", "")]


def test_replace_a_claim_needs_if_match(analyst_client):
    url = f"{API}/claims/CLM-CP22-003-B/"
    current = body(analyst_client.get(url))
    current["statement"] = "Restated."
    before = state()
    assert write(analyst_client, "PUT", url, current).status_code == 428
    assert write(analyst_client, "PUT", url, current, if_match='"1"').status_code == 412
    assert state() == before
    response = write(analyst_client, "PUT", url, current, if_match=etag())
    assert response.status_code == 200
    assert body(response)["statement"] == "Restated."
    assert record_document("case", "CP22-003")["claims"][1]["statement"] == "Restated."
    assert response["ETag"] == etag()


def test_patch_a_claim(analyst_client):
    url = f"{API}/claims/CLM-CP22-003-B/"
    response = write(analyst_client, "PATCH", url, {"status_note": "Checked."})
    assert response.status_code == 200
    assert body(response)["status_note"] == "Checked."
    assert body(response)["statement"].startswith("The authors reproduced")


def test_withdraw_a_claim_keeps_it_in_its_case(analyst_client):
    url = f"{API}/claims/CLM-CP22-003-A/"
    response = write(analyst_client, "DELETE", url)
    assert response.status_code == 200
    assert body(response)["status"] == "withdrawn"
    assert body(analyst_client.get(url))["status"] == "withdrawn"
    revision = Revision.objects.latest("number")
    assert (revision.record_key, revision.action) == ("CP22-003", "update")


def test_claim_position_must_be_a_number(analyst_client):
    before = state()
    response = write(analyst_client, "POST", f"{CASE}claims/", claim(), query={"position": "x"})
    assert problems(response) == [("request.invalid", "position")]
    assert state() == before


def test_adding_a_claim_to_an_unknown_case_is_404(analyst_client):
    response = write(analyst_client, "POST", f"{API}/cases/CP22-999/claims/", claim())
    assert response.status_code == 404


# --- revisions ----------------------------------------------------------------------------


def test_revision_log_ascending_and_since(analyst_client):
    data = body(analyst_client.get(f"{API}/revisions/"))
    numbers = [r["number"] for r in data["results"]]
    assert numbers == sorted(numbers)
    assert data["count"] == Revision.objects.count()
    first = data["results"][0]
    assert set(first) == {
        "number",
        "record_kind",
        "record_key",
        "action",
        "material",
        "summary",
        "author",
        "created_at",
        "snapshot_sha256",
        "previous_hash",
        "chain_hash",
        "approval",  # who approved it, when (docs/review.md): null while it waits
    }
    assert first["created_at"].endswith("Z")
    since = body(analyst_client.get(f"{API}/revisions/?since={numbers[-3]}"))
    assert [r["number"] for r in since["results"]] == numbers[-2:]
    newest = body(analyst_client.get(f"{API}/revisions/?ordering=-number&page_size=1"))
    assert newest["results"][0]["number"] == numbers[-1]


def test_revision_log_filters(analyst_client, analyst):
    write(analyst_client, "PATCH", CASE, {"title": "Editorial"}, query={"material": "false"})
    by_record = body(analyst_client.get(f"{API}/revisions/?record=case:CP22-003"))
    assert {(r["record_kind"], r["record_key"]) for r in by_record["results"]} == {
        ("case", "CP22-003")
    }
    assert by_record["count"] == 2
    bare = body(analyst_client.get(f"{API}/revisions/?record={METHOD}"))
    assert [r["record_key"] for r in bare["results"]] == [METHOD]
    qualified = body(analyst_client.get(f"{API}/revisions/?record=method:{METHOD}"))
    assert qualified["count"] == 1
    mine = body(analyst_client.get(f"{API}/revisions/?author=analyst"))
    assert [r["summary"] for r in mine["results"]] == ["API test"]
    editorial = body(analyst_client.get(f"{API}/revisions/?material=false"))
    assert [r["author"] for r in editorial["results"]] == ["analyst"]
    assert body(analyst_client.get(f"{API}/revisions/?kind=rule"))["count"] == 1
    bad = analyst_client.get(f"{API}/revisions/?since=x")
    assert problems(bad) == [("request.invalid", "since")]


def test_one_revision_with_its_snapshot(analyst_client):
    number = latest("case", "CP22-003")
    write(analyst_client, "PATCH", CASE, {"title": "Later"})
    response = analyst_client.get(f"{API}/revisions/{number}/")
    data = body(response)
    assert data["number"] == number
    assert data["snapshot"]["title"] == (
        "SGLang asynchronous RDMA transfers could overwrite a newly assigned user cache"
    )
    assert data["snapshot"]["format"] == "claimsdb.case/1"
    for missing in ("999999", "abc", "-1"):
        response = analyst_client.get(f"{API}/revisions/{missing}/")
        assert response.status_code == 404
        assert problems(response) == [("record.not_found", "")]


def test_case_history_and_diff(analyst_client):
    first = latest("case", "CP22-003")
    write(analyst_client, "PATCH", CASE, {"title": "Retitled"})
    history = body(analyst_client.get(f"{CASE}revisions/"))
    numbers = [r["number"] for r in history["results"]]
    assert numbers == [first, latest("case", "CP22-003")]
    diff = body(analyst_client.get(f"{CASE}diff/?from={first}&to={numbers[-1]}"))
    assert diff["changes"] == [
        {
            "path": "title",
            "op": "changed",
            "old": "SGLang asynchronous RDMA transfers could overwrite a newly assigned user cache",
            "new": "Retitled",
        }
    ]
    default_to = body(analyst_client.get(f"{CASE}diff/?from={first}"))
    assert default_to["to"] == numbers[-1]
    assert analyst_client.get(f"{API}/cases/CP22-999/revisions/").status_code == 404


def test_diff_needs_revisions_of_that_case(analyst_client):
    other = latest("case", "CP22-002")
    response = analyst_client.get(f"{CASE}diff/?from={other}")
    assert response.status_code == 400
    assert problems(response) == [("revision.not_of_record", "from")]
    missing = analyst_client.get(f"{CASE}diff/")
    assert problems(missing) == [("request.invalid", "from")]


def test_revert_restores_an_earlier_revision(reviewer_client):
    original = latest("case", "CP22-003")
    write(reviewer_client, "PATCH", CASE, {"title": "Vandalised"})
    response = write(
        reviewer_client, "POST", f"{CASE}revert/", {"revision": original}, summary="Undo"
    )
    assert response.status_code == 200
    revision = Revision.objects.latest("number")
    assert (revision.action, revision.summary, revision.record_key) == (
        "revert",
        "Undo",
        "CP22-003",
    )
    assert response["ETag"] == f'"{revision.number}"'
    assert body(response)["title"].startswith("SGLang asynchronous")


def test_revert_refuses_a_revision_of_another_record(reviewer_client):
    before = state()
    other = latest("case", "CP22-002")
    response = write(reviewer_client, "POST", f"{CASE}revert/", {"revision": other})
    assert problems(response) == [("revision.not_of_record", "revision")]
    missing = write(reviewer_client, "POST", f"{CASE}revert/", {})
    assert problems(missing) == [("request.required", "revision")]
    assert state() == before


def test_revert_honours_if_match(reviewer_client):
    original = latest("case", "CP22-003")
    write(reviewer_client, "PATCH", CASE, {"title": "Changed"})
    before = state()
    response = write(
        reviewer_client, "POST", f"{CASE}revert/", {"revision": original}, if_match=f'"{original}"'
    )
    assert response.status_code == 412
    assert state() == before


# --- DRF's own errors, in the same shape ---------------------------------------------------


def test_method_not_allowed(analyst_client):
    response = write(analyst_client, "PUT", f"{API}/cases/", {})
    assert response.status_code == 405
    assert problems(response) == [("request.method_not_allowed", "")]


def test_unsupported_media_type(analyst_client):
    before = state()
    response = write(analyst_client, "PATCH", CASE, b"title=x", content_type="text/plain")
    assert response.status_code == 415
    assert problems(response) == [("request.unsupported_media_type", "")]
    assert state() == before


def test_not_acceptable(analyst_client):
    response = analyst_client.get(CASE, HTTP_ACCEPT="application/xml")
    assert response.status_code == 406
    assert problems(response) == [("request.not_acceptable", "")]


def test_handler_flattens_nested_validation_errors():
    error = ValidationError({"claims": [{}, {"id": ["bad id"]}], "non_field_errors": ["whole"]})
    response = exception_handler(error, {})
    assert response.status_code == 400
    assert response.data["errors"] == [
        {"code": "request.invalid", "message": "bad id", "path": "claims[1].id"},
        {"code": "request.invalid", "message": "whole", "path": ""},
    ]
    throttled = exception_handler(Throttled(wait=7), {})
    assert throttled.status_code == 429
    assert throttled["Retry-After"] == "7"
    assert throttled.data["errors"][0]["code"] == "request.throttled"


def test_unexpected_errors_are_500_in_the_error_shape(analyst_client, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("claimsdb.api.views.record_patch", broken)
    response = write(analyst_client, "PATCH", CASE, {"title": "x"})
    assert response.status_code == 500
    assert problems(response) == [("server.error", "")]


def test_created_records_get_their_own_revisions(reviewer_client, seeded):
    source = write(reviewer_client, "POST", f"{API}/sources/", source_document())
    assert source.status_code == 201
    rule = write(reviewer_client, "POST", f"{API}/rules/", rule_document())
    assert rule.status_code == 201
    method = write(reviewer_client, "POST", f"{API}/methods/", method_document(seeded))
    assert method.status_code == 201
    assert method["Location"].endswith("/api/v1/methods/claimsdb.test/1/")
    assert reviewer_client.get(f"{API}/methods/claimsdb.test/1/").status_code == 200
    for kind, key in (("source", "SRC-NEW"), ("rule", "RULE-NEW"), ("method", "claimsdb.test/1")):
        assert Revision.objects.filter(record_kind=kind, record_key=key, action="create").exists()


def test_record_create_service_is_the_one_write_path(analyst, seeded):
    """The API adds nothing of its own to a record: a document created through the
    services reads back through the API unchanged."""
    record_create(user=analyst, kind="case", document=new_case("CP22-011"), summary="svc")
    response = token_client(analyst).get(f"{API}/cases/CP22-011/")
    assert body(response) == record_document("case", "CP22-011")


def test_nul_characters_never_reach_the_database(analyst_client):
    """PostgreSQL refuses NUL in text: the API refuses it first, on every database."""
    before = state()
    listing = analyst_client.get(f"{API}/cases/?q=a%00b")
    assert listing.status_code == 400
    assert problems(listing) == [("input.invalid_text", "q")]
    record = analyst_client.get(f"{API}/cases/CP22%00003/")
    assert record.status_code == 400
    assert problems(record) == [("input.invalid_text", "")]
    summary = write(analyst_client, "PATCH", CASE, {"title": "x"}, summary="a%00b")
    assert problems(summary) == [("input.invalid_text", "summary")]
    document = write(analyst_client, "PATCH", CASE, {"title": "a\u0000b"})
    assert problems(document) == [("input.invalid_text", "title")]
    assert state() == before


def test_nothing_is_public_before_the_first_release(seeded):
    """Readers without a role read the released record: before any release, nothing."""
    client = APIClient()
    assert body(client.get(f"{API}/cases/"))["count"] == 0
    assert body(client.get(f"{API}/sources/"))["count"] == 0
    assert body(client.get(f"{API}/revisions/"))["count"] == 0
    assert client.get(CASE).status_code == 404
    assert client.get(f"{API}/cases/CP22-003/claims/").status_code == 404
    assert client.get(f"{API}/claims/CLM-CP22-003-A/").status_code == 404
    assert client.get(f"{API}/revisions/1/").status_code == 404
    assert client.get(f"{API}/cases/CP22-003/revisions/").status_code == 404
    assert client.get(f"{API}/cases/CP22-003/diff/?from=1").status_code == 404
