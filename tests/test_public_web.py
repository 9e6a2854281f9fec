"""The public view of the web UI: anonymous visitors (and signed-in users without a role) see
released revisions only, on every page — nothing of drafts, unreleased claims, unreleased
revisions or the working state (docs/releases.md)."""

from __future__ import annotations

import copy
import re

import pytest
from django.test import Client

from claimsdb import public
from claimsdb.models import Release
from claimsdb.records import record_document
from claimsdb.services import (
    case_update,
    claim_add,
    component_create,
    component_update,
    method_create,
    record_create,
    rule_update,
    source_update,
)

from .public_walk import Route, route_urls, walk_routes
from .support import case_doc, create_source, latest, publish, signed_in, text_of

pytestmark = pytest.mark.django_db

MARKER = "DRAFT-MARKER-7f3a"  # written into drafts only, after release 1
DRAFT_WORD = "quokka"  # beside the marker in every draft text: a search for it finds drafts
CASE = "CP22-003"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"  # cited by CP22-003
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"  # bounds CP22-003
METHOD = "diggingbeagle.assessment/1"
RELEASED_CLAIM = "CLM-CP22-003-A"
DRAFT_CLAIM = "CLM-CP22-003-Z"
DRAFT_CASE = "CP99-001"  # never released
DRAFT_SOURCE = "SRC-QUOKKA-DRAFT"  # never released
DRAFT_METHOD = "quokka.assessment/1"  # never released
COMPONENT = "CMP-NIXL"  # named by CP22-003
DRAFT_COMPONENT = "CMP-QUOKKA"  # never released
RELEASED_TITLE = "SGLang asynchronous RDMA transfers could overwrite a newly assigned user cache"
IMMUTABLE = "public, max-age=31536000, immutable"


def draft_text(what: str) -> str:
    return f"{MARKER} {DRAFT_WORD} {what}"


def edit(user, kind: str, key: str, **fields) -> int:
    document = record_document(kind, key)
    document.update(fields)
    update = {
        "case": case_update,
        "source": source_update,
        "rule": rule_update,
        "component": component_update,
    }[kind]
    return update(user=user, key=key, document=document, summary="Draft edit").revision.number


@pytest.fixture
def drafted(seeded, seed_bundle, analyst, reviewer):
    """Release 1 of the seed, then drafts carrying MARKER in every kind of record: CP22-003's
    title and summary and a new claim, a source's title, a rule's reason, and records that
    were never released (a case, a source, a method). Returns the revision numbers: the
    released one and the draft one of each record."""
    publish(reviewer, notes="Release 1 of the seed")
    released = {
        kind: public.released_revision(kind, key).number
        for kind, key in [
            ("case", CASE),
            ("source", SOURCE),
            ("rule", RULE),
            ("method", METHOD),
            ("component", COMPONENT),
        ]
    }
    edit(analyst, "case", CASE, title=draft_text("title"), summary=draft_text("summary"))
    claim_add(
        user=analyst,
        case_key=CASE,
        summary="Draft claim",
        claim={
            "id": DRAFT_CLAIM,
            "statement": draft_text("claim"),
            "status": "unverified",
            "status_note": "",
            "basis": "analyst_inference",
            "origin": "human",
            "evidence": [{"source": SOURCE, "relation": "context", "locator": draft_text("at")}],
        },
    )
    edit(analyst, "source", SOURCE, title=draft_text("source"))
    edit(reviewer, "rule", RULE, reason=draft_text("reason"))
    document = case_doc(seed_bundle, CASE)
    document.update(
        key=DRAFT_CASE,
        status="draft",
        title=draft_text("case"),
        claims=[],
        assessments=[],
        figures=[],
        attributions=[],
        relations=[],
        affected=[],
    )
    record_create(kind="case", user=analyst, document=document, summary="Draft case")
    create_source(analyst, DRAFT_SOURCE, title=draft_text("new source"))
    method = copy.deepcopy(record_document("method", METHOD))
    method.update(key=DRAFT_METHOD, title=draft_text("method"))
    method_create(user=reviewer, document=method, summary="Draft method")
    edit(analyst, "component", COMPONENT, name=draft_text("component"), aliases=[MARKER])
    component = {**record_document("component", COMPONENT), "key": DRAFT_COMPONENT}
    component_create(
        user=analyst, document={**component, "name": draft_text("new")}, summary="Draft"
    )
    drafts = {
        "case": latest("case", CASE),
        "source": latest("source", SOURCE),
        "rule": latest("rule", RULE),
        "method": latest("method", DRAFT_METHOD),
        "component": latest("component", COMPONENT),
    }
    return {"released": released, "draft": drafts}


# --- every page, walked from the URL configuration ----------------------------------------

KINDS = {
    "cases": "case",
    "sources": "source",
    "rules": "rule",
    "methods": "method",
    "components": "component",
}


def kind_of(route: Route) -> str:
    return KINDS[route.route.split("/", 1)[0]]


def parameter_table(numbers: dict) -> dict:
    """The values each URL parameter is tried with, by parameter name: for a record, one
    that was released (and has drafts since) and one never released; for a revision, the
    released one and a draft one."""
    keys = {
        "case": [CASE, DRAFT_CASE],
        "source": [SOURCE, DRAFT_SOURCE],
        "rule": [RULE],
        "method": [METHOD, DRAFT_METHOD],
        "component": [COMPONENT, DRAFT_COMPONENT],
    }

    def revisions(route: Route) -> list[int]:
        kind = kind_of(route)
        return [numbers["released"][kind], numbers["draft"][kind]]

    def number(route: Route) -> list[int]:
        if route.route.startswith("releases/"):
            return [1, 2]  # release 2 does not exist
        if "/assessments/" in route.route:
            return [1]
        return revisions(route)

    return {
        # the review pages name a record by kind and key: every kind's draft and released
        "key": lambda route: (
            [key for kind in sorted(keys) for key in keys[kind]]
            if route.route.startswith("review/")
            else keys[kind_of(route)]
        ),
        "number": number,
        "a": revisions,
        "b": revisions,
        "claim_id": [RELEASED_CLAIM, DRAFT_CLAIM],
        "pk": [1],
        "delivery": [1],  # a webhook delivery (reviewers only)
        # a review feed's secret address: a wrong secret is no feed (reviewers' own only)
        "user_id": [1],
        "token": ["0" * 40],
        "comment_id": [1],  # a review comment (reviewers and its change's author only)
        "kind": ["source", "figure", "case", "component"],
    }


def query_string(numbers: dict) -> str:
    """Every page is fetched once more with the parameters any page reads: a search for the
    drafts' word, a draft revision to cite, filters…"""
    draft = numbers["draft"]["case"]
    released = numbers["released"]["case"]
    return (
        f"?q={DRAFT_WORD}&revision={draft}&status=draft&tag=rdma&kind=other"
        f"&a={released}&b={draft}&from={DRAFT_METHOD}&page=2"
    )


def web_urls(numbers: dict) -> list[str]:
    table = parameter_table(numbers)
    urls = []
    for route in walk_routes(exclude=("admin/", "api/")):
        for url in route_urls(route, table):
            urls += [url, url + query_string(numbers)]
    return urls


def fetch_as_the_public(client: Client, url: str, allowed: set[int]):
    """GET ``url``; a redirect elsewhere than to sign in is followed (and checked) too."""
    response = client.get(url)
    assert response.status_code in allowed, (url, response.status_code)
    if response.status_code in (301, 302):
        location = response["Location"]
        if not location.startswith("/accounts/login/"):
            return [response, *fetch_as_the_public(client, location, allowed)]
    return [response]


def assert_public_everywhere(client: Client, numbers: dict, allowed: set[int]) -> int:
    pages = 0
    for url in web_urls(numbers):
        for response in fetch_as_the_public(client, url, allowed):
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert MARKER.encode() not in body, f"{url} shows draft text"
            pages += 1
    return pages


def test_anonymous_visitors_see_no_draft_on_any_page(drafted, client):
    pages = assert_public_everywhere(client, drafted, {200, 301, 302, 304, 404, 405})
    assert pages > 200
    # and what they see is the release
    html = client.get(f"/cases/{CASE}/").content.decode()
    assert RELEASED_TITLE in html


def test_users_without_a_role_see_no_draft_on_any_page(drafted, nobody):
    client = signed_in(nobody)
    assert_public_everywhere(client, drafted, {200, 301, 302, 304, 403, 404, 405})
    assert RELEASED_TITLE in client.get(f"/cases/{CASE}/").content.decode()


def test_the_walk_covers_every_family_of_pages():
    routes = {route.route for route in walk_routes(exclude=("admin/", "api/"))}
    for expected in [
        "",
        "cases/",
        "cases/<str:key>/",
        "cases/<str:key>/record.json",
        "cases/<str:key>/history/",
        "cases/<str:key>/revisions/<int:number>/",
        "cases/<str:key>/diff/<int:a>/<int:b>/",
        "cases/<str:key>/cite.bib",
        "sources/<str:key>/",
        "rules/<str:key>/",
        "methods/<path:key>/",
        "releases/<int:number>/",
        "imports/",
    ]:
        assert expected in routes, expected
    assert not [route for route in routes if route.startswith(("admin/", "api/"))]


def test_a_parameter_missing_from_the_table_fails_the_walk():
    route = next(r for r in walk_routes(("cases/",)) if "claim_id" in r.parameters)
    with pytest.raises(pytest.fail.Exception, match="add one"):
        route_urls(route, {"key": [CASE]})


# --- what the public sees -------------------------------------------------------------------


def test_anonymous_record_page_is_the_released_revision(drafted, client):
    released = drafted["released"]["case"]
    response = client.get(f"/cases/{CASE}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert RELEASED_TITLE in html
    assert DRAFT_CLAIM not in html
    # the source and the rule as release 1 published them
    assert "SGLang disaggregated-prefill KV-cache transfer safety research" in html
    assert "did not produce them" in html
    assert "Cache-Control" not in response  # the next release changes this page
    document = client.get(f"/cases/{CASE}/record.json")
    assert document.json()["title"] == RELEASED_TITLE
    assert document["ETag"] == f'"{released}"'


def test_records_never_released_are_not_found_and_editing_asks_to_sign_in(drafted, client):
    for url in [
        f"/cases/{DRAFT_CASE}/",
        f"/cases/{DRAFT_CASE}/record.json",
        f"/cases/{DRAFT_CASE}/history/",
        f"/sources/{DRAFT_SOURCE}/",
        f"/methods/{DRAFT_METHOD}/",
        f"/cases/{CASE}/revisions/{drafted['draft']['case']}/",
        f"/cases/{CASE}/revisions/{drafted['draft']['case']}/record.json",
        f"/cases/{CASE}/diff/{drafted['released']['case']}/{drafted['draft']['case']}/",
    ]:
        assert client.get(url).status_code == 404, url
    response = client.get(f"/cases/{CASE}/edit/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/cases/{CASE}/edit/"


def test_lists_and_search_show_released_records(drafted, client):
    html = client.get("/cases/").content.decode()
    assert RELEASED_TITLE in html and DRAFT_CASE not in html
    assert f"revision {drafted['released']['case']}" in html
    assert 'name="status"' not in html  # every released case is ready
    assert RELEASED_TITLE in client.get("/cases/?tag=rdma").content.decode()
    assert RELEASED_TITLE not in client.get("/cases/?a.setting=lab_only").content.decode()
    chosen = client.get("/cases/?a.setting=research_demonstration").content.decode()
    assert RELEASED_TITLE in chosen
    sources = client.get("/sources/").content.decode()
    assert "SGLang disaggregated-prefill KV-cache transfer safety research" in sources
    assert DRAFT_SOURCE not in sources
    assert "cited by 4 evidence links" in sources  # the draft claim adds a fifth
    assert RULE in client.get("/rules/").content.decode()
    methods = client.get("/methods/").content.decode()
    assert METHOD in methods and DRAFT_METHOD not in methods

    html = client.get("/", {"q": "RDMA"}).content.decode()
    assert f'href="/cases/{CASE}/"' in html and RELEASED_TITLE in text_of(html)
    assert f'href="/cases/{CASE}/#{RELEASED_CLAIM}"' in html
    assert "Nothing matches" in client.get("/", {"q": DRAFT_WORD}).content.decode()
    start = client.get("/").content.decode()
    assert "Recent releases" in start and 'href="/releases/1/"' in start
    assert "Recent revisions" not in start


def test_source_page_lists_released_claims_only(drafted, client, viewer):
    html = client.get(f"/sources/{SOURCE}/").content.decode()
    assert RELEASED_CLAIM in html and DRAFT_CLAIM not in html
    assert f'href="/sources/{SOURCE}/revisions/{drafted["released"]["source"]}/"' in html
    assert DRAFT_CLAIM in signed_in(viewer).get(f"/sources/{SOURCE}/").content.decode()


def test_signed_in_viewers_read_the_drafts(drafted, viewer):
    client = signed_in(viewer)
    html = client.get(f"/cases/{CASE}/").content.decode()
    assert draft_text("title") in html and draft_text("claim") in html
    assert draft_text("source") in html and draft_text("reason") in html
    assert client.get(f"/cases/{DRAFT_CASE}/").status_code == 200
    assert draft_text("title") in client.get("/cases/").content.decode()
    assert "Recent revisions" in client.get("/").content.decode()
    response = client.get(f"/cases/{CASE}/revisions/{drafted['draft']['case']}/")
    assert response.status_code == 200
    assert "Cache-Control" not in response


def test_users_without_a_role_read_the_released_view(drafted, nobody):
    client = signed_in(nobody)
    html = client.get(f"/cases/{CASE}/").content.decode()
    assert RELEASED_TITLE in html and MARKER not in html
    assert client.get(f"/cases/{DRAFT_CASE}/").status_code == 404
    assert client.get(f"/cases/{CASE}/edit/").status_code == 403
    assert client.get(f"/cases/{CASE}/revisions/{drafted['draft']['case']}/").status_code == 404
    # their copy carries their name: it is not marked cacheable
    response = client.get(f"/cases/{CASE}/revisions/{drafted['released']['case']}/")
    assert response.status_code == 200 and "Cache-Control" not in response


def test_the_nav_links_to_releases_for_everyone(drafted, client, viewer, nobody):
    for reader in (client, signed_in(viewer), signed_in(nobody)):
        html = reader.get("/").content.decode()
        assert 'href="/releases/"' in html
        assert 'href="/cases/"' in html


# --- released revisions are cacheable for ever ----------------------------------------------


def test_released_revision_pages_are_immutable_for_anonymous_visitors(drafted, client):
    for kind, path, key in [
        ("case", "cases", CASE),
        ("source", "sources", SOURCE),
        ("rule", "rules", RULE),
        ("method", "methods", METHOD),
    ]:
        number = drafted["released"][kind]
        response = client.get(f"/{path}/{key}/revisions/{number}/")
        assert response.status_code == 200, kind
        assert response["Cache-Control"] == IMMUTABLE, kind
        assert response["ETag"] == f'"{number}"'
        assert "Cookie" in response["Vary"]
        html = response.content.decode()
        assert MARKER not in html
        assert "release 1" in html
        assert 'name="csrfmiddlewaretoken"' not in html  # no revert form
    number = drafted["released"]["case"]
    json_response = client.get(f"/cases/{CASE}/revisions/{number}/record.json")
    assert json_response["Cache-Control"] == IMMUTABLE
    assert json_response.json()["title"] == RELEASED_TITLE


def test_working_pages_carry_no_cache_headers(drafted, client, viewer):
    for url in ["/", "/cases/", f"/cases/{CASE}/", f"/cases/{CASE}/history/", "/sources/"]:
        assert "immutable" not in client.get(url).get("Cache-Control", ""), url
    viewer_client = signed_in(viewer)
    for number in (drafted["released"]["case"], drafted["draft"]["case"]):
        response = viewer_client.get(f"/cases/{CASE}/revisions/{number}/")
        assert response.status_code == 200
        assert "Cache-Control" not in response


def test_if_none_match_gives_304_for_a_released_revision(drafted, client, viewer):
    number = drafted["released"]["case"]
    url = f"/cases/{CASE}/revisions/{number}/"
    response = client.get(url, HTTP_IF_NONE_MATCH=f'"{number}"')
    assert response.status_code == 304
    assert response["ETag"] == f'"{number}"'
    assert response.content == b""
    assert client.get(url, HTTP_IF_NONE_MATCH='"1"').status_code == 200
    assert client.get(f"{url}record.json", HTTP_IF_NONE_MATCH=f'"{number}"').status_code == 304
    # never for a revision the public may not see, nor for signed-in readers
    draft = drafted["draft"]["case"]
    draft_url = f"/cases/{CASE}/revisions/{draft}/"
    assert client.get(draft_url, HTTP_IF_NONE_MATCH=f'"{draft}"').status_code == 404
    assert signed_in(viewer).get(url, HTTP_IF_NONE_MATCH=f'"{number}"').status_code == 200
    # nor for the revision of another record
    other = drafted["released"]["source"]
    other_url = f"/cases/{CASE}/revisions/{other}/"
    assert client.get(other_url, HTTP_IF_NONE_MATCH=f'"{other}"').status_code == 404


# --- history, diffs and citation -------------------------------------------------------------


@pytest.fixture
def two_releases(seeded, analyst, reviewer):
    """CP22-003 created (release 1), edited twice (release 2 publishes the second edit),
    then edited once more, unreleased."""
    created = latest("case", CASE)
    publish(reviewer, notes="1")
    intermediate = edit(analyst, "case", CASE, title="First edit")
    updated = edit(analyst, "case", CASE, title="Second edit")
    publish(reviewer, notes="2")
    unreleased = edit(analyst, "case", CASE, title=draft_text("title"))
    return created, intermediate, updated, unreleased


def history_section(html: str) -> str:
    return html.split('id="history"', 1)[1].split("</section>\n</article>", 1)[0]


def history_lines(html: str) -> list[str]:
    items = history_section(html).split('<li class="revision-line">')[1:]
    return [" ".join(re.sub(r"<[^>]+>", " ", item.split("</li>", 1)[0]).split()) for item in items]


def release_headings(html: str) -> list[str]:
    headings = re.findall(r'<h\d class="release-heading">(.*?)</h\d>', html, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", h).split()) for h in headings]


def test_record_page_lists_material_revisions_with_their_release(two_releases, client, viewer):
    created, intermediate, updated, unreleased = two_releases
    html = client.get(f"/cases/{CASE}/").content.decode()
    lines = history_lines(html)
    # what each revision changed, under the release that made it public; no author
    assert [line.split(" recorded ", 1)[0] for line in lines] == [
        f"Revision {updated} · update · Draft edit Changed: title",
        f"Revision {intermediate} · update · Draft edit Changed: title",
        f"Revision {created} · create · Seed",
    ]
    assert "Canonical change recorded" not in html
    # each released revision says who reviewed it (docs/review.md), after when it was made
    reviewed = r" reviewed by approver, [A-Z][a-z]{2} \d{1,2}, \d{4}$"
    assert re.search(reviewed, lines[0]) and re.search(reviewed, lines[2])
    lines = [re.sub(reviewed, "", line) for line in lines]
    assert re.search(r"recorded [A-Z][a-z]{2} \d{1,2}, \d{4}$", lines[0])
    assert lines[2].endswith("· record dated Oct 28, 2026")  # the seed's own date
    published = {r.number: r.published_at.strftime("%b %-d, %Y") for r in Release.objects.all()}
    assert release_headings(history_section(html)) == [
        f"Release 2 · published {published[2]}",
        f"Release 1 · published {published[1]}",
    ]
    section = history_section(html)
    assert section.index("Release 2") < section.index(f"Revision {intermediate}")
    assert section.index(f"Revision {intermediate}") < section.index("Release 1")
    assert 'href="/releases/2/"' in section and 'href="/releases/1/"' in section
    # only the published revisions are linked
    assert f'href="/cases/{CASE}/revisions/{updated}/"' in html
    assert f'href="/cases/{CASE}/revisions/{created}/"' in html
    assert f'href="/cases/{CASE}/revisions/{intermediate}/"' not in html
    assert f"Revision {unreleased}" not in html
    assert client.get(f"/cases/{CASE}/revisions/{intermediate}/").status_code == 404

    viewer_html = signed_in(viewer).get(f"/cases/{CASE}/").content.decode()
    first = history_lines(viewer_html)[0]
    assert first.startswith(f"Revision {unreleased} · update · Draft edit · by analyst")
    assert first.endswith("· not yet released")
    assert "· updated in release 2" in history_lines(viewer_html)[1]
    assert f'href="/cases/{CASE}/revisions/{intermediate}/"' in viewer_html


def test_public_history_and_diffs_between_released_revisions(two_releases, client):
    created, intermediate, updated, unreleased = two_releases
    html = client.get(f"/cases/{CASE}/history/").content.decode()
    assert f'href="/cases/{CASE}/diff/{created}/{updated}/"' in html
    assert f"Revision {intermediate}" in html
    assert f'href="/cases/{CASE}/revisions/{intermediate}/"' not in html
    assert f"Revision {unreleased}" not in html and MARKER not in html
    assert "reviewer" not in html and "analyst" not in html  # authors are for signed-in readers
    diff = client.get(f"/cases/{CASE}/diff/{created}/{updated}/")
    assert diff.status_code == 200
    assert "Second edit" in diff.content.decode()
    assert client.get(f"/cases/{CASE}/diff/{created}/{intermediate}/").status_code == 404
    assert client.get(f"/cases/{CASE}/diff/{updated}/{unreleased}/").status_code == 404
    response = client.get(f"/cases/{CASE}/diff/", {"a": updated, "b": created})
    assert response["Location"] == f"/cases/{CASE}/diff/{created}/{updated}/"


def test_record_page_says_how_to_cite_it(two_releases, client, viewer):
    _created, _intermediate, updated, unreleased = two_releases
    html = client.get(f"/cases/{CASE}/").content.decode()
    section = html.split('id="sources"', 1)[1].split("</section>", 1)[0]
    assert "Cite this record" in section
    assert f"claimsdb. {CASE}: Second edit. Revision {updated}, release 2, " in section
    assert f"http://testserver/cases/{CASE}/revisions/{updated}/" in section
    assert f'href="/cases/{CASE}/cite.bib?revision={updated}"' in section
    assert f'href="/cases/{CASE}/cite.json?revision={updated}"' in section
    assert 'href="/releases/2/"' in section
    bib = client.get(f"/cases/{CASE}/cite.bib?revision={updated}")
    assert bib.status_code == 200 and f"claimsdb-{CASE}-r{updated}" in bib.content.decode()

    viewer_section = signed_in(viewer).get(f"/cases/{CASE}/").content.decode()
    assert f"Revision {unreleased}, not yet released" in viewer_section
    assert f'href="/cases/{CASE}/cite.bib?revision={unreleased}"' in viewer_section


def test_a_released_revision_page_cites_itself_and_never_mentions_later_ones(two_releases, client):
    created, _intermediate, updated, _unreleased = two_releases
    html = client.get(f"/cases/{CASE}/revisions/{created}/").content.decode()
    assert f"Revision {created}, release 1" in html
    assert f'href="/cases/{CASE}/cite.bib?revision={created}"' in html
    banner = html.split('class="as-of"', 1)[1].split("</aside>", 1)[0]
    assert "release 1" in banner and "release 2" not in banner
    assert f"revision {updated}" not in html.lower() and "latest is" not in html
