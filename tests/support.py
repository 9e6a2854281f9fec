"""What the tests share: the seed and documents, users and the clients they sign in with,
the ledger, query counts, and forms and text read out of pages as a browser would.

Fixtures made of these are in tests/conftest.py. Test modules import helpers from here,
never from one another.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from claimsdb.models import Revision
from claimsdb.records import bundle_document, dumps_compact, record_document
from claimsdb.services import case_update, record_create, record_update, source_create

ROOT = Path(__file__).resolve().parent.parent
SEED_PATH = ROOT / "fixtures" / "seed.json"

# CP22-002's production figure, which the seed's rule forbids attributing to CP22-003.
FORBIDDEN_FIGURE = "FIG-CP22-002-RESPONSES"
FORBIDDING_RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"


# --- the seed and documents ---------------------------------------------------------------


def load_seed_bundle() -> dict:
    return json.loads(SEED_PATH.read_text(encoding="utf-8"))


def case_doc(bundle: dict, key: str) -> dict:
    return copy.deepcopy(next(c for c in bundle["cases"] if c["key"] == key))


def new_case(key: str = "CP99-001", **fields) -> dict:
    """A minimal draft case document, every field present; ``fields`` override."""
    document = {
        "format": "claimsdb.case/1",
        "key": key,
        "title": f"Case {key}",
        "status": "draft",
        **{name: "" for name in ("summary", "scope_note", "account", "basis", "limits")},
        **{
            name: []
            for name in (
                "tags",
                "claims",
                "assessments",
                "controls",
                "unknowns",
                "figures",
                "attributions",
                "relations",
                "reproduction_runs",
            )
        },
    }
    document.update(fields)
    return document


def mirror(cases: list[dict]) -> list[dict]:
    """List each symmetric relation on both cases of a bundle, as documents must."""
    by_key = {c["key"]: c for c in cases}
    for case in cases:
        for relation in case["relations"]:
            other = by_key.get(relation["case"])
            if other is None or relation["kind"] not in {"same_event", "related_distinct"}:
                continue
            back = {"case": case["key"], "kind": relation["kind"], "note": relation["note"]}
            if back not in other["relations"]:
                other["relations"].append(back)
    return cases


def bundle_of(cases=(), rules=()) -> dict:
    """A bundle of copies of ``cases`` (their relations mirrored) and ``rules``."""
    cases = mirror([copy.deepcopy(c) for c in cases])
    return {
        "format": "claimsdb.bundle/1",
        "methods": [],
        "sources": [],
        "cases": list(cases),
        "rules": list(rules),
    }


def attribute(document: dict, role: str = "impact_basis", figure: str = FORBIDDEN_FIGURE) -> dict:
    document["attributions"].append({"figure": figure, "role": role, "note": ""})
    return document


def relate(document: dict, other: str, kind: str) -> dict:
    document["relations"] = [r for r in document["relations"] if r["case"] != other]
    document["relations"].append({"case": other, "kind": kind, "note": ""})
    return document


# --- writes through the services ----------------------------------------------------------


def edit_case(user: User, key: str, summary: str = "Edit", **fields) -> int:
    """Change ``fields`` of case ``key``; the number of the revision written."""
    document = record_document("case", key)
    document.update(fields)
    outcome = case_update(user=user, key=key, document=document, summary=summary)
    return outcome.revision.number


def source_document(key: str = "SRC-NEW", **fields: Any) -> dict[str, Any]:
    """A valid ``claimsdb.source/1`` document: an active source of kind ``other``, its
    optional fields empty; ``fields`` replace any of it."""
    return {
        "format": "claimsdb.source/1",
        "key": key,
        "title": "New",
        "kind": "other",
        "publisher": "",
        "url": "",
        "published_on": None,
        "accessed_on": None,
        "reliability": "",
        "notes": "",
        "status": "active",
        **fields,
    }


def rule_document(
    key: str, figure: str, case: str, status: str = "active", *, reason: str = "Because."
) -> dict[str, Any]:
    """A ``claimsdb.rule/1`` document: ``figure`` may not be attributed to ``case``."""
    return {
        "format": "claimsdb.rule/1",
        "key": key,
        "kind": "non_attribution",
        "status": status,
        "figure": figure,
        "case": case,
        "reason": reason,
    }


def create_source(user: User, key: str, title: str = "A new source") -> int:
    """A new active source; the number of its first revision."""
    document = source_document(key, title=title)
    return source_create(user=user, document=document, summary="New source").revision.number


SOURCES = ["SRC-SGLANG-KV-TRANSFER-SAFETY", "SRC-SGLANG-PR-35049", "SRC-SGLANG-ISSUE-24527"]


def numbered_claim(case_key: str, n: int, links: int) -> dict:
    """Claim ``n`` of a case, supported by ``links`` evidence links to the seed's sources."""
    return {
        "id": f"CLM-{case_key}-N{n}",
        "statement": f"Claim number {n} of {case_key}.",
        "status": "supported",
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": [
            {"source": SOURCES[i % len(SOURCES)], "relation": "supports", "locator": f"part {i}"}
            for i in range(links)
        ],
    }


def make_case(user: User, key: str, claims: int, links: int) -> None:
    """A copy of CP22-003 with ``claims`` claims of ``links`` links each, edited once (two
    revisions)."""
    document = record_document("case", "CP22-003")
    document.update(
        key=key,
        title=f"Case {key}",
        claims=[numbered_claim(key, n, links) for n in range(claims)],
        relations=[],
        figures=[],
        attributions=[],
    )
    for assessment in document["assessments"]:
        assessment["evidence_basis"]["claims"] = [c["id"] for c in document["claims"][:2]]
    for entry in document.get("affected", []):  # the copied entries rest on its own claims
        entry["claims"] = [c["id"] for c in document["claims"][:1]]
        if not entry["claims"]:
            entry["status"] = "under_investigation"
    record_create(kind="case", document=document, user=user, summary=f"{key} for counting")
    document = record_document("case", key)
    document["summary"] = "Edited once, so it has a history of two revisions."
    record_update(kind="case", key=key, document=document, user=user, summary="second")


# --- users and their clients --------------------------------------------------------------


def make_user(username: str, role: str | None) -> User:
    """A user with the password ``pw-<username>``, in ``role`` (None: in no role)."""
    user = User.objects.create_user(username=username, password="pw-" + username)
    if role:
        # transactional tests flush the tables, migration-made groups included
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def user_in_role(username: str, role: str | None) -> User:
    """The user ``username``, made in ``role`` the first time it is asked for."""
    return User.objects.filter(username=username).first() or make_user(username, role)


def token_client(user: User | None = None) -> APIClient:
    """An API client sending ``user``'s token, as a script would (None: anonymous)."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def api_client(user: User | None = None) -> APIClient:
    """An API client taken as ``user`` without credentials: for what a view does once
    authentication is past (None: anonymous)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def signed_in(user: User | None, **options: Any) -> Client:
    """A browser's client with ``user``'s session (None: a visitor); ``options`` go to
    ``Client`` (``enforce_csrf_checks=True``, for one)."""
    client = Client(**options)
    if user is not None:
        client.force_login(user)
    return client


def body(response: HttpResponse) -> Any:
    return json.loads(response.content)


# --- the ledger and the queries a read runs -----------------------------------------------


def latest(kind: str, key: str) -> int:
    """The number of the latest revision of a record."""
    return latest_revision(kind, key).number


def latest_revision(kind: str, key: str) -> Revision:
    return Revision.objects.filter(record_kind=kind, record_key=key).order_by("-number")[0]


def revision_numbers(kind: str, key: str) -> list[int]:
    return list(
        Revision.objects.filter(record_kind=kind, record_key=key)
        .order_by("number")
        .values_list("number", flat=True)
    )


def revision_count() -> int:
    return Revision.objects.count()


def state() -> tuple[list[int], str]:
    """The ledger and every live document: what a refused change must leave as it was."""
    return list(Revision.objects.values_list("number", flat=True)), dumps_compact(bundle_document())


def queries_of(call: Callable[[], object]) -> int:
    """How many queries ``call`` runs."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def get_queries(client: Client, url: str) -> int:
    """How many queries a GET of ``url`` runs; it must answer 200."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.content[:2000])
    return len(captured)


# --- pages: forms, text, and HTML that cannot run -----------------------------------------

CASE, CLAIM = "CP22-003", "CLM-CP22-003-A"
SOURCE, METHOD = "SRC-SGLANG-KV-TRANSFER-SAFETY", "diggingbeagle.assessment/1"
# The seed's edit pages, by the least role that opens them.
ANALYST_PAGES = [
    "/cases/new/",
    f"/cases/{CASE}/edit/",
    f"/cases/{CASE}/claims/",
    f"/cases/{CASE}/claims/new/",
    f"/cases/{CASE}/claims/add/",
    f"/cases/{CASE}/claims/{CLAIM}/edit/",
    f"/cases/{CASE}/claims/{CLAIM}/withdraw/",
    f"/cases/{CASE}/assessments/new/",
    f"/cases/{CASE}/assessments/1/edit/",
    f"/cases/{CASE}/figures/edit/",
    f"/cases/{CASE}/attributions/edit/",
    f"/cases/{CASE}/relations/edit/",
    f"/cases/{CASE}/controls/edit/",
    f"/cases/{CASE}/unknowns/edit/",
    f"/cases/{CASE}/lists/edit/",
    f"/cases/{CASE}/affected/edit/",
    "/sources/new/",
    f"/sources/{SOURCE}/edit/",
    "/components/new/",
    "/components/CMP-MOONCAKE/edit/",
]
REVIEWER_PAGES = [
    "/rules/new/",
    f"/rules/{FORBIDDING_RULE}/edit/",
    "/methods/new/",
    f"/methods/{METHOD}/edit/",
    f"/methods/new/?from={METHOD}",
]
ALL_EDIT_PAGES = ANALYST_PAGES + REVIEWER_PAGES


@dataclass
class PageForm:
    action: str
    method: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[tuple[str, str, str]] = field(default_factory=list)  # name, value, formaction

    def data(self, changes: dict | None = None, **named) -> dict[str, list[str]]:
        """The values a browser would submit, with ``changes`` (name → value, list, or None
        to leave the field out, as an unticked checkbox is left out)."""
        values: dict[str, list[str]] = {}
        for name, value in self.fields:
            values.setdefault(name, []).append(value)
        for name, value in {**(changes or {}), **named}.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value if isinstance(value, list) else [str(value)]
        return values

    def names(self) -> set[str]:
        return {name for name, _ in self.fields}


class _FormParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[PageForm] = []
        self.current: PageForm | None = None
        self.select: tuple[str, bool] | None = None
        self.select_options: list[tuple[str, bool]] = []
        self.textarea: str | None = None
        self.text = ""
        self.option_value: str | None = None
        self.option_selected = False
        self.option_text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.current = PageForm(a.get("action") or "", (a.get("method") or "get").lower())
            self.forms.append(self.current)
        if self.current is None:
            return
        if tag == "input":
            kind = (a.get("type") or "text").lower()
            name = a.get("name")
            if not name or "disabled" in a:
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.current.fields.append((name, a.get("value", "on")))
            elif kind in ("submit", "button", "image", "reset"):
                self.current.buttons.append((name, a.get("value", ""), a.get("formaction", "")))
            else:
                self.current.fields.append((name, a.get("value", "")))
        elif tag == "button":
            if a.get("name"):
                self.current.buttons.append(
                    (a["name"], a.get("value", ""), a.get("formaction", ""))
                )
        elif tag == "select":
            if a.get("name") and "disabled" not in a:
                self.select = (a["name"], "multiple" in a)
                self.select_options = []
        elif tag == "option" and self.select:
            self.option_value = a.get("value")
            self.option_selected = "selected" in a
            self.option_text = ""
        elif tag == "textarea":
            if a.get("name") and "disabled" not in a:
                self.textarea = a["name"]
                self.text = ""

    def handle_data(self, data):
        if self.textarea is not None:
            self.text += data
        if self.option_value is None and self.select:
            self.option_text += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.current = None
        elif tag == "option" and self.select:
            value = self.option_value if self.option_value is not None else self.option_text
            self.select_options.append((value, self.option_selected))
            self.option_value = None
        elif tag == "select" and self.select and self.current is not None:
            name, multiple = self.select
            chosen = [v for v, selected in self.select_options if selected]
            if not chosen and not multiple and self.select_options:
                chosen = [self.select_options[0][0]]
            self.current.fields.extend((name, v) for v in chosen)
            self.select = None
        elif tag == "textarea" and self.textarea is not None and self.current is not None:
            # browsers drop one leading newline of a textarea's content
            self.current.fields.append((self.textarea, self.text.removeprefix("\n")))
            self.textarea = None


def page_forms(html: str) -> list[PageForm]:
    parser = _FormParser()
    parser.feed(html)
    return parser.forms


def edit_form(html: str) -> PageForm:
    """The page's POST form that carries a summary (the save form)."""
    for form in page_forms(html):
        if form.method == "post" and "summary" in form.names():
            return form
    raise AssertionError("no save form on the page")


def submit(client: Client, url: str, changes: dict | None = None, **named) -> HttpResponse:
    """Open ``url``, change some fields of its save form, and submit it."""
    form = edit_form(client.get(url).content.decode())
    return client.post(form.action or url, form.data(changes, **named))


def text_of(html: str) -> str:
    """Visible text, tags removed, whitespace collapsed (for 'the message is shown')."""

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)

    parser = Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def field_block(html: str, field_name: str) -> str:
    """The HTML of the field wrapper rendered for ``field_name`` (``id="field-<name>"``)."""
    match = re.search(
        rf'<(div|fieldset) class="[^"]*" id="field-{re.escape(field_name)}">(.*?)</\1>',
        html,
        re.S,
    )
    assert match, f"no field {field_name} on the page"
    return match.group(2)


class InertChecker(HTMLParser):
    """Collects what could run: script elements, event-handler attributes, and URLs with a
    scheme other than http(s)/mailto in attributes that load or navigate."""

    URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "srcset", "data"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def _check(self, tag, attrs):
        if tag == "script" and set(dict(attrs)) == {"src", "defer"}:
            src = dict(attrs)["src"] or ""
            if src.startswith("/static/claimsdb/") and src.endswith(".js"):
                return  # the app's own script file, which the CSP allows
        if tag in ("script", "iframe", "object", "embed", "svg", "math", "img", "base", "meta"):
            if tag == "meta" and all(k in ("name", "content", "charset") for k, _ in attrs):
                pass
            else:
                self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name in ("style",):
                self.problems.append(f"inline style on <{tag}>")
            if name in self.URL_ATTRIBUTES and value is not None:
                scheme = re.sub(r"[\x00-\x20]", "", value).lower().split(":", 1)
                if (
                    len(scheme) == 2
                    and "/" not in scheme[0]
                    and scheme[0]
                    not in (
                        "http",
                        "https",
                        "mailto",
                    )
                ):
                    self.problems.append(f"{name}={value!r} on <{tag}>")


def assert_inert(html: str) -> None:
    checker = InertChecker()
    checker.feed(html)
    assert checker.problems == [], checker.problems
    assert re.findall(r"<script[^>]*>(?!</script>)", html.lower()) == []


# --- browser pages (Playwright, tests/browser) ---------------------------------------------

ARTIFACTS = ROOT / "artifacts"


def sign_in(page, base_url: str, username: str) -> None:
    """Sign a browser page in through the sign-in form (password ``pw-<username>``)."""
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def artifact(name: str) -> Path:
    """Where a browser test leaves a screenshot or a file for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def add_claim(page, base_url: str, case: str, statement: str, summary: str) -> None:
    """Adds a supported claim citing the seed's SGLang pull request, through the claim form."""
    page.goto(f"{base_url}/cases/{case}/claims/new/")
    page.fill("#id_claim-statement", statement)
    page.select_option("#id_claim-status", "supported")
    page.select_option("#id_claim-basis", "reported_finding")
    page.fill("#id_evidence-0-source", "SRC-SGLANG-PR-35360")
    page.select_option("#id_evidence-0-relation", "supports")
    page.fill("#id_evidence-0-locator", "PR description")
    page.fill("#id_summary", summary)
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url(re.compile(rf"/cases/{case}/#claims$"))


# --- citations ----------------------------------------------------------------------------


def parse_bibtex(text: str):
    """Parse with pybtex (a BibTeX-compatible parser, strict mode): the one entry."""
    from pybtex.database import parse_string

    entries = parse_string(text, "bibtex").entries
    assert len(entries) == 1
    return next(iter(entries.items()))


def braces_balanced(text: str) -> bool:
    depth = 0
    for index, char in enumerate(text):
        if char in "{}" and index and text[index - 1] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def run_in_thread(coroutine):
    """``asyncio.run`` in a thread of its own: a browser test earlier in the same process
    (Playwright's sync API) may have left an event loop running in this one."""
    import asyncio
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def case_with_figure(key: str, source: str = "SRC-SGLANG-KV-TRANSFER-SAFETY") -> dict:
    """A case with a production figure (``figure_of(key)``) supported by its own claim,
    which cites ``source`` (a source of the seed)."""
    claim = f"CLM-{key}-A"
    return new_case(
        key,
        claims=[
            {
                "id": claim,
                "statement": "Forty responses were affected.",
                "status": "supported",
                "status_note": "",
                "basis": "reported_finding",
                "origin": "human",
                "evidence": [{"source": source, "relation": "supports", "locator": "§2"}],
            }
        ],
        figures=[
            {
                "id": figure_of(key),
                "value": 40,
                "unit": "responses",
                "measure": "affected_responses",
                "scope": "production",
                "description": "",
                "claims": [claim],
            }
        ],
    )


def figure_of(key: str) -> str:
    return f"FIG-{key}-RESPONSES"
