"""A record that names what was never released is not published until it is: a scope rule
naming a never-released case (or a figure of one) has no entry in any release until the
case is public, and a case whose new revision names one (a relation, an attribution of its
figure) keeps the revision the public saw, so no public page, API endpoint, feed, release
bundle, search or export shows the case's key or title (docs/releases.md)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client

from claimsdb import public
from claimsdb.models import ReleaseEntry
from claimsdb.records import record_document
from claimsdb.services import case_update, record_create

from .public_walk import Route, route_urls, walk_routes
from .support import FORBIDDEN_FIGURE, approved_plan, new_case, publish, signed_in, token_client

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
    publish(reviewer, notes="Release 1")
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
    return publish(reviewer, notes="Release 2")


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
        "delivery": [1],
        # a review feed's secret address: a wrong secret is no feed (reviewers' own only)
        "user_id": [1],
        "token": ["0" * 40],
        "comment_id": [1],  # a review comment (reviewers and its change's author only)
        "run_id": ["RUN-UNKNOWN"],
        "kind": ["source", "figure", "case"],  # the pickers' suggestions
    }


def public_urls(table=table) -> list[str]:
    urls = []
    for route in walk_routes(exclude=("admin/",)):
        for url in route_urls(route, table()):
            urls += [url, url + "?q=operator&format=json", url + "?q=sessions"]
    return urls


def content(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8", "replace")


def assert_nothing_revealed(client, urls: list[str], markers=MARKERS) -> int:
    seen = 0
    for url in urls:
        response = client.get(url)
        assert response.status_code < 500, (url, response.status_code)
        named = [marker for marker in markers if marker in url]
        # a URL naming the withheld records finds nothing (its 404 may repeat the URL)
        assert not (named and response.status_code == 200), (url, response.status_code)
        text = content(response)
        for marker in markers:
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
    plan = approved_plan()
    assert {(entry.kind, entry.key, entry.change) for entry in plan.changed} >= {
        ("case", SECRET_CASE, "new"),
        ("rule", RULE, "new"),
    }
    assert FIGURE_RULE not in {entry.key for entry in plan.changed}  # its figure's case waits
    publish(reviewer, notes="Release 3")
    assert public.released_revision("rule", RULE) is not None
    assert public.released_revision("rule", FIGURE_RULE) is None
    page = Client().get(f"/rules/{RULE}/")
    assert page.status_code == 200 and "Kq9" in page.content.decode()


# --- a case whose new revision names a never-released case -------------------------------

HIDDEN = "HX-301"  # never released
HIDDEN_TITLE = "Storage incident Vw3 never released"
HIDDEN_FIGURE = "FIG-HX-301-7"
HIDDEN_MARKERS = [HIDDEN, HIDDEN_TITLE, HIDDEN_FIGURE, "Vw3"]


def hidden_case(key: str = HIDDEN, status: str = "draft", title: str = HIDDEN_TITLE) -> dict:
    """A case with one figure (``FIG-<key>-7``) and the claim it rests on."""
    claim = {
        "id": f"CLM-{key}-A",
        "statement": "Seven volumes.",
        "status": "unverified",
        "status_note": "",
        "basis": "analyst_inference",
        "origin": "human",
        "evidence": [],
    }
    figure = {
        "id": f"FIG-{key}-7",
        "value": 7,
        "unit": "volumes",
        "measure": "count",
        "scope": "production",
        "description": "",
        "claims": [claim["id"]],
    }
    return new_case(key, title=title, status=status, claims=[claim], figures=[figure])


def edit(user, key: str, change=None, status: str = "ready") -> None:
    document = record_document("case", key)
    if change is not None:
        change(document)
    document["status"] = status
    case_update(user=user, key=key, document=document, summary="Edit")


def relate(case: str, kind: str = "follow_up_of"):
    def change(document: dict) -> None:
        document["relations"].append({"case": case, "kind": kind, "note": ""})
        document["summary"] += " Follows up another incident."

    return change


def revise(document: dict) -> None:
    document["summary"] += " Revised."


def entry(release, key: str, kind: str = "case") -> ReleaseEntry | None:
    return ReleaseEntry.objects.filter(release=release, record_kind=kind, record_key=key).first()


@pytest.fixture
def related(seeded, analyst, reviewer):
    """Release 1 of the seed; then a never-released draft case, and a new revision of a
    released case (ready) relating to it; then release 2, which must hold that revision."""
    first = publish(reviewer, notes="Release 1")
    record_create(user=analyst, kind="case", document=hidden_case(), summary="Draft")
    edit(reviewer, "CP22-003", relate(HIDDEN))
    edit(reviewer, "CP22-002", revise)  # something public changes, so that release 2 is made
    return first, publish(reviewer, notes="Release 2")


def hidden_table() -> dict:
    values = table()
    keys = values["key"]
    values["key"] = lambda route: ["CP22-003", HIDDEN] if family(route) == "case" else keys(route)
    values["claim_id"] = ["CLM-CP22-003-A", f"CLM-{HIDDEN}-A"]
    return values


def test_a_released_case_keeps_its_revision_while_its_new_one_names_an_unreleased_case(
    related,
):
    first, second = related
    kept = entry(second, "CP22-003")
    assert kept.change == "unchanged" and kept.revision_id == entry(first, "CP22-003").revision_id
    assert entry(second, "CP22-002").change == "updated"
    assert entry(second, HIDDEN) is None
    assert HIDDEN not in json.dumps(public.released_document("case", "CP22-003"))
    urls = public_urls(hidden_table)
    assert assert_nothing_revealed(Client(), urls, HIDDEN_MARKERS) > 300
    api = [url for url in urls if "/api/" in url]
    assert assert_nothing_revealed(token_client(None), api, HIDDEN_MARKERS)


def test_the_release_bundle_leaves_out_a_name_of_an_unreleased_case(related, tmp_path):
    path = tmp_path / "release.json"
    call_command("export_records", "--release", str(related[1].number), "--out", str(path))
    text = path.read_text(encoding="utf-8")
    assert "CP22-003" in text
    for marker in HIDDEN_MARKERS:
        assert marker not in text


def test_the_preview_says_what_waits_and_why(related, reviewer, capsys):
    edit(reviewer, "CP22-002", revise)
    plan = approved_plan()
    assert [(w.kind, w.key, w.case, w.kept) for w in plan.waiting] == [
        ("case", "CP22-003", HIDDEN, True)
    ]
    assert plan.waiting_count == 1
    page = signed_in(reviewer).get("/releases/new/").content.decode()
    assert "What waits" in page
    assert f"<code>CP22-003</code>: its new revision waits for {HIDDEN}, which it names" in page
    call_command("publish_release", dry_run=True)
    printed = capsys.readouterr().out
    assert f"  waits: case CP22-003: its new revision waits for {HIDDEN}, which it names" in printed
    edit(reviewer, HIDDEN)
    assert approved_plan().waiting == []
    assert "What waits" not in signed_in(reviewer).get("/releases/new/").content.decode()


def test_the_new_revision_is_published_with_the_case_it_names(related, reviewer):
    edit(reviewer, HIDDEN)
    plan = approved_plan()
    assert {(e.kind, e.key, e.change) for e in plan.changed} >= {
        ("case", HIDDEN, "new"),
        ("case", "CP22-003", "updated"),
    }
    third = publish(reviewer, notes="Release 3")
    assert entry(third, "CP22-003").change == "updated"
    relations = public.released_document("case", "CP22-003")["relations"]
    assert {"case": HIDDEN, "kind": "follow_up_of", "note": ""} in relations
    assert Client().get(f"/cases/{HIDDEN}/").status_code == 200


def test_an_attribution_waits_for_its_figure_to_be_public(seeded, analyst, reviewer):
    """The figure's case is public, but the figure is only in its unreleased revision."""
    record_create(
        user=reviewer, kind="case", document=new_case(HIDDEN, status="ready"), summary="Ready"
    )
    publish(reviewer, notes="Release 1")
    document = hidden_case(status="draft", title=f"Case {HIDDEN}")
    document["relations"] = record_document("case", HIDDEN)["relations"]
    case_update(user=analyst, key=HIDDEN, document=document, summary="Figure")

    def attribute_hidden(document: dict) -> None:
        relate(HIDDEN, "same_event")(document)
        document["attributions"].append(
            {"figure": HIDDEN_FIGURE, "role": "impact_basis", "note": ""}
        )

    edit(reviewer, "CP22-003", attribute_hidden)
    edit(reviewer, "CP22-002", revise)
    second = publish(reviewer, notes="Release 2")
    assert entry(second, "CP22-003").change == "unchanged"
    assert HIDDEN_FIGURE not in json.dumps(public.released_document("case", "CP22-003"))
    assert Client().get(f"/cases/{HIDDEN}/").status_code == 200
    assert HIDDEN_FIGURE not in Client().get("/cases/CP22-003/").content.decode()

    edit(reviewer, HIDDEN)  # the figure's case is published with its figure
    third = publish(reviewer, notes="Release 3")
    assert entry(third, HIDDEN).change == "updated"
    assert entry(third, "CP22-003").change == "updated"
    attributions = public.released_document("case", "CP22-003")["attributions"]
    assert [a["figure"] for a in attributions] == [HIDDEN_FIGURE]


def test_a_case_naming_a_case_that_waits_waits_too(seeded, analyst, reviewer):
    """C names A, A names B: B is never released, so A waits, and so does C's new revision
    and a rule naming A; all are published with B."""
    first = publish(reviewer, notes="Release 1")
    middle = "HX-302"
    record_create(user=analyst, kind="case", document=hidden_case(), summary="Draft")
    record_create(
        user=reviewer,
        kind="case",
        document=new_case(
            middle, status="ready", relations=[{"case": HIDDEN, "kind": "follow_up_of", "note": ""}]
        ),
        summary="Ready",
    )
    edit(reviewer, "CP22-003", relate(middle))
    chained_rule = "RULE-FIG-CP22-002-RESPONSES-NOT-HX-302"
    record_create(
        user=reviewer,
        kind="rule",
        document=rule(chained_rule, middle, FORBIDDEN_FIGURE),
        summary="Rule",
    )
    edit(reviewer, "CP22-002", revise)
    waiting = {(w.kind, w.key, w.case, w.kept) for w in approved_plan().waiting}
    assert waiting == {
        ("case", middle, HIDDEN, False),
        ("case", "CP22-003", middle, True),
        ("rule", chained_rule, middle, False),
    }
    second = publish(reviewer, notes="Release 2")
    assert entry(second, HIDDEN) is None and entry(second, middle) is None
    assert entry(second, chained_rule, "rule") is None
    assert entry(second, "CP22-003").revision_id == entry(first, "CP22-003").revision_id
    assert middle not in json.dumps(public.released_document("case", "CP22-003"))

    edit(reviewer, HIDDEN)
    third = publish(reviewer, notes="Release 3")
    assert entry(third, HIDDEN).change == "new"
    assert entry(third, middle).change == "new"
    assert entry(third, "CP22-003").change == "updated"
    assert entry(third, chained_rule, "rule").change == "new"


def test_cases_naming_one_another_are_published_together(seeded, reviewer):
    publish(reviewer, notes="Release 1")
    for key in (HIDDEN, "HX-302"):
        record_create(
            user=reviewer, kind="case", document=new_case(key, status="ready"), summary="New"
        )
    edit(reviewer, HIDDEN, relate("HX-302", "same_event"))
    second = publish(reviewer, notes="Release 2")
    assert entry(second, HIDDEN).change == "new" and entry(second, "HX-302").change == "new"
