"""A real incident entered through the web UI only, counting what it costs the analyst.

The March 2023 ChatGPT exposure (a canceled request in the redis-py client left a shared
connection with another user's data; a cousin of CP22-003): three sources, a case with
seven claims, two figures, a relation to CP22-003, an assessment, controls, four unknowns,
two non-attribution rules, and a release. The test counts the pages the browser loads and
the forms it submits, prints them, and holds them to at most half of what the same entry
took one claim and one list at a time (39 loads, 25 submits).
"""

from __future__ import annotations

import re

from claimsdb.models import Release, ReleaseEntry
from claimsdb.records import record_document
from tests.support import approve_all, artifact, sign_in

CASE = "CP23-001"
SOURCES = [
    (
        "SRC-OPENAI-2023-03-POSTMORTEM",
        "March 20 ChatGPT outage: here's what happened",
        "primary_disclosure",
        "OpenAI",
    ),
    (
        "SRC-REDIS-PY-ISSUE-2624",
        "Canceled async commands leave the connection with unread responses",
        "upstream_issue",
        "redis-py",
    ),
    (
        "SRC-REDIS-PY-PR-2641",
        "Close the connection when an async command is canceled",
        "upstream_fix",
        "redis-py",
    ),
]
POSTMORTEM, ISSUE, FIX = (key for key, *_ in SOURCES)
CLAIMS = [
    (
        "A canceled request in redis-py's asyncio client left its connection with an unread "
        "response, which the next request on that connection read.",
        ISSUE,
        "Description",
    ),
    ("Some ChatGPT users saw titles from another user's chat history.", POSTMORTEM, "Summary"),
    (
        "Payment details of some Plus subscribers were visible to other users.",
        POSTMORTEM,
        "What happened",
    ),
    (
        "About 1.2 % of ChatGPT Plus subscribers active in the window may have been exposed.",
        POSTMORTEM,
        "What happened",
    ),
    ("The window of exposure lasted about nine hours.", POSTMORTEM, "Timeline"),
    (
        "A server change had increased the number of canceled requests.",
        POSTMORTEM,
        "Technical details",
    ),
    ("The redis-py maintainers fixed the cancellation handling.", FIX, "Pull request"),
]
LOADS_BEFORE, SUBMITS_BEFORE = 39, 25


class Tally:
    """Pages loaded (every load of the main frame: a form, or what a submit led to) and
    forms submitted (the main frame's POST navigations)."""

    def __init__(self, page):
        self.loads = self.submits = 0
        page.on("load", self._loaded)
        page.on("request", self._requested)
        self.page = page

    def _loaded(self, _page):
        self.loads += 1

    def _requested(self, request):
        if (
            request.is_navigation_request()
            and request.frame == self.page.main_frame
            and request.method == "POST"
        ):
            self.submits += 1


def save(page, label="Save"):
    with page.expect_navigation():
        page.get_by_role("button", name=label, exact=True).click()


def test_an_incident_entered_in_half_the_pages(seeded_site, new_page):
    page = new_page()
    page.set_default_timeout(20_000)
    sign_in(page, seeded_site, "reviewer")
    tally = Tally(page)

    # three sources, each form leading to the next
    page.goto(f"{seeded_site}/sources/new/")
    for number, (key, title, kind, publisher) in enumerate(SOURCES):
        page.fill("#id_source-key", key)
        page.fill("#id_source-title", title)
        page.select_option("#id_source-kind", kind)
        page.fill("#id_source-publisher", publisher)
        page.fill("#id_summary", f"Source {key}")
        save(page, "Save and add another" if number < 2 else "Save")
    page.wait_for_url(f"{seeded_site}/sources/{FIX}/")

    # the case
    page.goto(f"{seeded_site}/cases/new/")
    page.fill("#id_case-key", CASE)
    page.fill("#id_case-title", "ChatGPT showed users other users' chat titles and payment details")
    page.fill(
        "#id_case-summary",
        "A canceled request in the redis-py asyncio client left a shared connection holding "
        "another user's response.",
    )
    page.fill("#id_case-account", "On March 20, 2023, a change increased canceled requests…")
    page.fill("#id_case-basis", "OpenAI's postmortem and the redis-py issue and fix.")
    page.fill("#id_case-tags", "asyncio, redis, connection-reuse")
    page.fill("#id_summary", "New case")
    save(page)
    page.wait_for_url(f"{seeded_site}/cases/{CASE}/")

    # seven claims with their evidence on one page, one save
    page.goto(f"{seeded_site}/cases/{CASE}/claims/add/?claims={len(CLAIMS)}")
    ids = [page.input_value(f"#id_c{n}-id") for n in range(len(CLAIMS))]
    for n, (statement, source, locator) in enumerate(CLAIMS):
        page.fill(f"#id_c{n}-statement", statement)
        page.fill(f"#id_c{n}-evidence-0-source", source)
        page.select_option(f"#id_c{n}-evidence-0-relation", "supports")
        page.fill(f"#id_c{n}-evidence-0-locator", locator)
    page.fill("#id_summary", "Seven claims from the postmortem, the issue and the fix")
    save(page, "Save the claims")
    page.wait_for_url(f"{seeded_site}/cases/{CASE}/#claims")

    # figures, the relation, controls and four unknowns on one page, one save
    page.goto(f"{seeded_site}/cases/{CASE}/lists/edit/?blank=4")
    for n, (fid, value, unit, measure, claim) in enumerate(
        [
            (f"FIG-{CASE}-PLUS-SHARE", "1.2", "%", "plus_subscribers_exposed", ids[3]),
            (f"FIG-{CASE}-WINDOW", "9", "h", "exposure_window", ids[4]),
        ]
    ):
        page.fill(f"#id_figures-{n}-id", fid)
        page.fill(f"#id_figures-{n}-value", value)
        page.fill(f"#id_figures-{n}-unit", unit)
        page.fill(f"#id_figures-{n}-measure", measure)
        page.select_option(f"#id_figures-{n}-scope", "production")
        page.check(f"input[name='figures-{n}-claims'][value='{claim}']")
    page.fill("#id_relations-0-case", "CP22-003")
    page.select_option("#id_relations-0-kind", "related_distinct")
    page.fill(
        "#id_relations-0-note", "The same class of bug: a canceled request leaves stale data."
    )
    for n, text in enumerate(
        ["Close a connection whose command was canceled.", "Upgrade redis-py to a fixed release."]
    ):
        page.select_option(f"#id_controls-{n}-kind", "fix" if n else "mitigation")
        page.fill(f"#id_controls-{n}-text", text)
    for n, text in enumerate(
        [
            "How many chat titles were shown to other users.",
            "Whether other services using redis-py asyncio were affected.",
            "How the 1.2 % was counted.",
            "When the increase in canceled requests began exactly.",
        ]
    ):
        page.select_option(f"#id_unknowns-{n}-kind", "open_question")
        page.fill(f"#id_unknowns-{n}-text", text)
    page.fill("#id_summary", "Figures, relation, controls and unknowns")
    save(page)
    page.wait_for_url(f"{seeded_site}/cases/{CASE}/#scope")

    # the assessment
    page.goto(f"{seeded_site}/cases/{CASE}/assessments/new/")
    for name, value in [
        ("setting", "production_incident"),
        ("exploitation", "in_the_wild"),
        ("evidence_grade", "B"),
        ("remediation", "fixed_reported"),
        ("ai_role", "incidental"),
    ]:
        page.check(f"input[name='assessment-value_{name}'][value='{value}']")
    page.check("input[name='assessment-impact'][value='3']")
    page.fill("#id_assessment-narrative", "Production exposure of personal data to other users.")
    page.check(f"input[name='assessment-basis_claims'][value='{ids[3]}']")
    page.fill("#id_summary", "Assessment")
    save(page)
    page.wait_for_url(re.compile(rf"/cases/{CASE}/#assessment$"))

    # two non-attribution rules, the first leading to the second
    page.goto(f"{seeded_site}/rules/new/")
    for number, (figure, what) in enumerate([("PLUS-SHARE", "share"), ("WINDOW", "window")]):
        page.fill("#id_rule-key", f"RULE-{CASE}-{figure}-NOT-CP22-003")
        page.fill("#id_rule-figure", f"FIG-{CASE}-{figure}")
        page.fill("#id_rule-case", "CP22-003")
        page.fill("#id_rule-reason", f"The {what} belongs to the ChatGPT exposure, not CP22-003.")
        page.fill("#id_summary", "Keep the ChatGPT figure out of CP22-003")
        save(page, "Save and add another" if number == 0 else "Save")
    page.wait_for_url(f"{seeded_site}/rules/RULE-{CASE}-WINDOW-NOT-CP22-003/")

    # ready, then the release
    page.goto(f"{seeded_site}/cases/{CASE}/edit/")
    page.select_option("#id_case-status", "ready")
    page.fill("#id_summary", "Reviewed: ready")
    save(page)
    # releases publish approved revisions: a second reviewer approves what was entered (four
    # eyes; the review pages have their own tests and are not the entry's page loads)
    approve_all()
    page.goto(f"{seeded_site}/releases/new/")
    page.fill("#id_notes", f"{CASE}: the March 2023 ChatGPT exposure.")
    with page.expect_navigation():
        page.get_by_role("button", name=re.compile("^Publish release")).click()
    page.wait_for_url(re.compile(r"/releases/\d+/$"))
    page.screenshot(path=str(artifact("incident-entry-release.png")), full_page=True)

    print(f"\nincident entry: {tally.loads} page loads, {tally.submits} submits")
    document = record_document("case", CASE)
    assert [c["statement"] for c in document["claims"]] == [c[0] for c in CLAIMS]
    assert [f["id"] for f in document["figures"]] == [
        f"FIG-{CASE}-PLUS-SHARE",
        f"FIG-{CASE}-WINDOW",
    ]
    assert [r["case"] for r in document["relations"]] == ["CP22-003"]
    assert len(document["assessments"]) == 1 and len(document["controls"]) == 2
    assert len(document["unknowns"]) == 4 and document["status"] == "ready"
    for figure in ("PLUS-SHARE", "WINDOW"):
        assert record_document("rule", f"RULE-{CASE}-{figure}-NOT-CP22-003") is not None
    release = Release.objects.order_by("-number").first()
    assert ReleaseEntry.objects.filter(release=release, record_key=CASE).exists()
    assert page.csp_errors == []
    assert tally.loads <= LOADS_BEFORE // 2, tally.loads
    assert tally.submits <= SUBMITS_BEFORE // 2, tally.submits


def test_claims_are_entered_with_the_keyboard_alone_and_no_javascript(seeded_site, new_page):
    page = new_page(javascript=False)
    page.set_default_timeout(20_000)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/CP22-003/claims/add/")
    page.focus("#id_c0-statement")  # where a reader of the page starts typing
    page.keyboard.type("Entered with the keyboard alone.")
    order = []
    for _ in range(8):
        page.keyboard.press("Tab")
        order.append(page.locator(":focus").get_attribute("id"))
        if order[-1] == "id_c0-evidence-0-source":
            page.keyboard.type("SRC-SGLANG-PR-35360")
        elif order[-1] == "id_c0-evidence-0-relation":
            page.keyboard.type("s")  # the first relation starting with s: supports
        elif order[-1] == "id_c0-evidence-0-locator":
            page.keyboard.type("PR description")
            break
    assert order == [
        "id_c0-status",
        "id_c0-status_note",
        "id_c0-basis",
        "id_c0-origin",
        "id_c0-evidence-0-source",
        "id_c0-evidence-0-relation",
        "id_c0-evidence-0-locator",
    ]
    with page.expect_navigation():
        page.keyboard.press("Enter")  # saves, with the page's summary
    page.wait_for_url(re.compile(r"/cases/CP22-003/#claims$"))
    claim = record_document("case", "CP22-003")["claims"][-1]
    assert claim["statement"] == "Entered with the keyboard alone."
    assert [(e["source"], e["relation"]) for e in claim["evidence"]] == [
        ("SRC-SGLANG-PR-35360", "supports")
    ]
