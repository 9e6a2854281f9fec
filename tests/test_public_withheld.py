"""A record that names what was never released is not published until it is: a scope rule
naming a never-released case (or a figure of one) has no entry in any release until the
case is public, so no public page, API endpoint, feed, release bundle, search or export
shows the rule, the case's key or title (docs/releases.md)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client

from claimsdb import public
from claimsdb.records import record_document
from claimsdb.services import case_update, record_create
from claimsdb.services.releases import release_plan, release_publish

from .public_walk import Route, route_urls, walk_routes
from .support import FORBIDDEN_FIGURE, new_case, token_client

SECRET_CASE = "HX-201"
SECRET_TITLE = "Operator incident Zq7 never released"
SECRET_OWNER = "HX-202"  # a never-released case owning the figure of the second rule
SECRET_FIGURE = "FIG-HX-202-42"
RULE = "RULE-FIG-CP22-002-NOT-HX-201"
FIGURE_RULE = "RULE-FIG-HX-202-42-NOT-CP22-003"
REASON = "The 42 production sessions belong to the operator incident (Kq9 reason)"
MARKERS = [SECRET_CASE, SECRET_TITLE, SECRET_OWNER, SECRET_FIGURE, RULE, FIGURE_RULE, "Kq9"]


def rule(key: str, case: str, figure: str) -> dict:
    return {
        "format": "claimsdb.rule/1",
        "key": key,
        "kind": "non_attribution",
        "case": case,
        "figure": figure,
        "reason": REASON,
        "status": "active",
    }


@pytest.fixture
def withheld(seeded, analyst, reviewer):
    """Release 1 of the seed; then two draft cases never released (one owning a figure)
    and two active rules naming them; then release 2, which must leave both rules out."""
    release_publish(user=reviewer, notes="Release 1")
    record_create(
        user=analyst,
        kind="case",
        document=new_case(SECRET_CASE, title=SECRET_TITLE),
        summary="Draft",
    )
    claim = {
        "id": "CLM-HX-202-A",
        "statement": "Forty-two sessions.",
        "status": "unverified",
        "status_note": "",
        "basis": "analyst_inference",
        "origin": "human",
        "evidence": [],
    }
    figure = {
        "id": SECRET_FIGURE,
        "value": 42,
        "unit": "sessions",
        "measure": "count",
        "scope": "production",
        "description": "",
        "claims": ["CLM-HX-202-A"],
    }
    owner = new_case(SECRET_OWNER, title=SECRET_TITLE, claims=[claim], figures=[figure])
    record_create(user=analyst, kind="case", document=owner, summary="Draft")
    for key, case, named in [
        (RULE, SECRET_CASE, FORBIDDEN_FIGURE),
        (FIGURE_RULE, "CP22-003", SECRET_FIGURE),
    ]:
        record_create(user=reviewer, kind="rule", document=rule(key, case, named), summary="Rule")
    # something public changes too, so that release 2 is made
    document = record_document("case", "CP22-003")
    document["summary"] += " Revised for release 2."
    case_update(user=reviewer, key="CP22-003", document=document, summary="Revise")
    return release_publish(user=reviewer, notes="Release 2")


# --- every public URL family, walked ----------------------------------------------------

FAMILIES = {"cases": "case", "sources": "source", "rules": "rule", "methods": "method"}
KEYS = {
    "case": ["CP22-003", SECRET_CASE, SECRET_OWNER],
    "source": ["SRC-SGLANG-KV-TRANSFER-SAFETY"],
    "rule": [RULE, FIGURE_RULE, "RULE-CP22-002-RESPONSES-NOT-CP22-003"],
    "method": ["diggingbeagle.assessment/1"],
}


def family(route: Route) -> str:
    return FAMILIES.get(route.route.removeprefix("api/v1/").split("/", 1)[0], "case")


def table() -> dict:
    revisions = list(range(1, 20))
    return {
        "key": lambda route: KEYS[family(route)],
        "number": lambda route: [1, 2, 3] if "releases/" in route.route else revisions,
        "a": [1, 5],
        "b": [5, 18],
        "claim_id": ["CLM-CP22-003-A", "CLM-HX-202-A"],
        "pk": [1],
        "run_id": ["RUN-UNKNOWN"],
        "kind": ["source", "figure", "case"],  # the pickers' suggestions
    }


def public_urls() -> list[str]:
    urls = []
    for route in walk_routes(exclude=("admin/",)):
        for url in route_urls(route, table()):
            urls += [url, url + "?q=operator&format=json", url + "?q=sessions"]
    return urls


def content(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8", "replace")


def assert_nothing_revealed(client, urls: list[str]) -> int:
    seen = 0
    for url in urls:
        response = client.get(url)
        assert response.status_code < 500, (url, response.status_code)
        named = [marker for marker in MARKERS if marker in url]
        # a URL naming the withheld records finds nothing (its 404 may repeat the URL)
        assert not (named and response.status_code == 200), (url, response.status_code)
        text = content(response)
        for marker in MARKERS:
            assert marker in named or marker not in text, f"{url} reveals {marker!r}"
        seen += 1
    return seen


def test_no_public_url_reveals_a_rule_naming_a_never_released_case(withheld):
    assert public.released_revision("rule", RULE) is None
    assert public.released_revision("rule", FIGURE_RULE) is None
    urls = public_urls()
    assert assert_nothing_revealed(Client(), urls) > 300
    assert assert_nothing_revealed(token_client(None), [u for u in urls if "/api/" in u])


def test_the_release_bundle_and_the_export_leave_the_rule_out(withheld, tmp_path):
    path = tmp_path / "release.json"
    call_command("export_records", "--release", str(withheld.number), "--out", str(path))
    text = path.read_text(encoding="utf-8")
    bundle = json.loads(text)
    keys = {
        record["key"]
        for records in bundle.values()
        if isinstance(records, list)
        for record in records
    }
    assert "RULE-CP22-002-RESPONSES-NOT-CP22-003" in keys
    assert not keys & {RULE, FIGURE_RULE, SECRET_CASE, SECRET_OWNER}
    for marker in MARKERS:
        assert marker not in text


def test_the_rule_is_published_with_the_case_it_names(withheld, reviewer):
    document = record_document("case", SECRET_CASE)
    document["status"] = "ready"
    case_update(user=reviewer, key=SECRET_CASE, document=document, summary="Ready")
    plan = release_plan()
    assert {(entry.kind, entry.key, entry.change) for entry in plan.changed} >= {
        ("case", SECRET_CASE, "new"),
        ("rule", RULE, "new"),
    }
    assert FIGURE_RULE not in {entry.key for entry in plan.changed}  # its figure's case waits
    release_publish(user=reviewer, notes="Release 3")
    assert public.released_revision("rule", RULE) is not None
    assert public.released_revision("rule", FIGURE_RULE) is None
    page = Client().get(f"/rules/{RULE}/")
    assert page.status_code == 200 and "Kq9" in page.content.decode()
