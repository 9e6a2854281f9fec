"""Text written right to left, or with bidi controls, is isolated where it is shown: a
right-to-left override in a title reorders the title and nothing after it."""

from __future__ import annotations

from claimsdb.records import record_document
from claimsdb.services import case_update
from claimsdb.web.markdown import render_markdown

from .support import signed_in

RLO = "\u202e"
TITLE = f"Harmless {RLO}txt.exe"


def test_a_title_with_a_right_to_left_override_is_isolated_on_every_page(seeded, analyst):
    document = record_document("case", "CP22-003")
    document.update(title=TITLE, summary=f"Lede {RLO}reversed")
    case_update(user=analyst, key="CP22-003", document=document, summary="Right to left")
    client = signed_in(analyst)
    page = client.get("/cases/CP22-003/").content.decode()
    assert f'<h1 id="record-title"><bdi>{TITLE}</bdi></h1>' in page
    assert f'<p class="lede"><bdi>Lede {RLO}reversed</bdi></p>' in page
    listing = client.get("/cases/").content.decode()
    assert f"<bdi>{TITLE}</bdi>" in listing
    history = client.get("/cases/CP22-003/history/").content.decode()
    assert TITLE not in history or f"<bdi>{TITLE}</bdi>" in history
    found = client.get("/", {"q": "Harmless"}).content.decode()
    assert "<bdi>" in found and f"{RLO}txt.exe</bdi>" in found.replace("</mark>", "")


def test_markdown_blocks_take_their_own_direction():
    html = render_markdown(f"# Heading {RLO}x\n\nOne {RLO}para\n\n- an item\n\n> a quote")
    for tag in ("h3", "p", "li", "blockquote"):
        assert f'<{tag} dir="auto">' in html, tag
    # the text cannot set it: raw HTML is shown as text
    assert '<p dir="rtl"' not in render_markdown('<p dir="rtl">x</p>')
