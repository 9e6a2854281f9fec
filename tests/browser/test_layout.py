"""Layout at phone width: the release pages fit 390 px, and a refusal at the top of a form
shows every line of its message whole."""

from __future__ import annotations

from django.contrib.auth.models import User

from tests.support import publish, sign_in

PHONE = 390
NOTES = (
    "First public release of the knowledge base: the SGLang RDMA cancellation case, the "
    "GLM-5.3 production rejection-path incident, their sources, the scope rule that keeps "
    "the 155 production responses with their own event, and the assessment method."
)


def scroll_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_release_pages_fit_a_phone_and_notes_wrap_normally(seeded_site, new_page):
    release = publish(User.objects.get(username="reviewer"), notes=NOTES)
    page = new_page(width=PHONE, height=844, javascript=False)
    for path in ("/releases/", f"/releases/{release.number}/"):
        page.goto(f"{seeded_site}{path}")
        assert scroll_width(page) <= PHONE, path
    # the notes on the list read as a paragraph, not one word per line
    page.goto(f"{seeded_site}/releases/")
    notes = page.locator("td.notes").first
    box = notes.bounding_box()
    assert box is not None and box["width"] >= 250
    lines = box["height"] / float(
        notes.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 20")
    )
    assert lines < len(NOTES.split()) / 3


def test_a_refusal_at_the_top_of_a_form_is_not_clipped(seeded_site, new_page):
    from claimsdb.services import record_create
    from tests.support import new_case

    # a case of the same event as CP22-002 that uses its figure: a rule barring the figure
    # from it is refused for the data already there, at the top of the rule's form
    record_create(
        user=User.objects.get(username="reviewer"),
        kind="case",
        document=new_case(
            "CP99-001",
            relations=[{"case": "CP22-002", "kind": "same_event", "note": ""}],
            attributions=[{"figure": "FIG-CP22-002-RESPONSES", "role": "context", "note": ""}],
        ),
        summary="Same event",
    )
    page = new_page(width=PHONE, height=844, javascript=False)
    sign_in(page, seeded_site, "reviewer")
    page.goto(f"{seeded_site}/rules/new/")
    page.fill("input[name=rule-key]", "RULE-CP22-002-RESPONSES-NOT-CP99-001")
    page.fill("input[name=rule-figure]", "FIG-CP22-002-RESPONSES")
    page.fill("input[name=rule-case]", "CP99-001")
    page.fill("textarea[name=rule-reason]", "Counted for another event.")
    page.fill("input[name=summary]", "Refused")
    page.locator("form button[type=submit]").last.click()
    messages = page.locator(".refusal .message")
    assert messages.count() >= 1
    # every line of a refusal's message stands clear of the one above: no box drawn per
    # wrapped line covers the line before it
    for message in messages.all():
        rects = message.evaluate("e => Array.from(e.getClientRects()).map(r => [r.top, r.bottom])")
        lines = sorted({(round(top, 1), round(bottom, 1)) for top, bottom in rects})
        assert len(lines) > 1  # the message wraps at this width
        for (_top, bottom), (next_top, _bottom) in zip(lines, lines[1:], strict=False):
            assert next_top >= bottom - 0.5, lines
        # and nothing else of the box lies over it
        assert message.evaluate(
            """e => { const r = e.getBoundingClientRect();
                      const hit = document.elementFromPoint(r.left + 5, r.top + 3);
                      return e.contains(hit) || hit === e; }"""
        )
    assert scroll_width(page) <= PHONE


def test_attribution_figure_ids_are_not_cut_on_a_desktop(seeded_site, new_page):
    page = new_page(width=1280, javascript=True)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/cases/CP22-003/attributions/edit/")
    field = page.locator("input[name=attributions-0-figure]")
    field.fill("FIG-CP22-002-RESPONSES")
    # the width the figure ID needs against the room the input gives it
    needed, room = field.evaluate(
        """s => {
             const style = getComputedStyle(s);
             const context = document.createElement("canvas").getContext("2d");
             context.font = style.font;
             const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
             return [context.measureText(s.value).width, s.clientWidth - padding];
           }"""
    )
    assert needed <= room, (needed, room)


def test_component_pages_and_the_affected_list_fit_a_phone(seeded_site, new_page):
    """Signed out (the released record) and signed in as an analyst (the editor too)."""
    publish(User.objects.get(username="reviewer"), notes="Components")
    paths = ("/components/", "/components/CMP-MOONCAKE/", "/cases/CP22-003/")
    page = new_page(width=PHONE, height=844, javascript=False)
    for path in paths:
        page.goto(f"{seeded_site}{path}")
        assert scroll_width(page) <= PHONE, path
    page.goto(f"{seeded_site}/cases/CP22-003/")
    assert page.locator("#affected li.affected-entry").count() == 3
    sign_in(page, seeded_site, "analyst")
    for path in (*paths, "/cases/CP22-003/affected/edit/", "/components/new/"):
        page.goto(f"{seeded_site}{path}")
        assert scroll_width(page) <= PHONE, path
