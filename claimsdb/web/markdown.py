"""Markdown fields (scope note, account, basis, limits, narrative) as safe HTML.

Two layers, because analysts' text and imported text are both untrusted:

1. Python-Markdown without its raw-HTML passthrough: ``<b>`` in a field is shown as the
   characters ``<b>``, never parsed as a tag. Headings are moved two levels down so that an
   account's ``# Heading`` sits under the page's own section headings.
2. nh3 (ammonia) cleans the result against an allow-list of tags and attributes, keeps only
   http, https and mailto links (so ``javascript:`` and ``data:`` URLs, however they are
   encoded, lose their ``href``), and marks every link ``rel="noopener noreferrer nofollow"``.
"""

from __future__ import annotations

import xml.etree.ElementTree as etree

import markdown
import nh3
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from claimsdb.limits import PAGE_TEXT_CHARS

ALLOWED_TAGS = {
    "a",
    "abbr",
    "blockquote",
    "br",
    "code",
    "del",
    "em",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "ins",
    "li",
    "ol",
    "p",
    "pre",
    "strong",
    "sub",
    "sup",
    "ul",
}
# Blocks of text each take their direction from their own first strong character (``dir``
# is set by ``_DemoteHeadings``, never taken from the text, whose raw HTML is not parsed):
# a right-to-left override in one paragraph ends with it.
DIRECTED = ("p", "li", "h3", "h4", "h5", "h6", "blockquote")
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "ol": {"start"},
    **{tag: {"dir"} for tag in DIRECTED if tag != "ol"},
}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener noreferrer nofollow"
HEADING_SHIFT = 2


class _DemoteHeadings(Treeprocessor):
    """Headings two levels down; images become links named by their alt text (pages load no
    images from elsewhere); every block of text isolated for bidi (``dir="auto"``)."""

    def run(self, root: etree.Element) -> None:
        for element in root.iter():
            if len(element.tag) == 2 and element.tag[0] == "h" and element.tag[1].isdigit():
                element.tag = f"h{min(6, int(element.tag[1]) + HEADING_SHIFT)}"
            if element.tag in DIRECTED:
                element.set("dir", "auto")
            elif element.tag == "img":
                src, alt = element.get("src", ""), element.get("alt", "") or "image"
                element.attrib.clear()
                element.tag = "a"
                element.set("href", src)
                element.text = f"image: {alt}"


class _NoRawHtml(Extension):
    """Treat raw HTML as text: drop the block and inline HTML passthrough."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.treeprocessors.register(_DemoteHeadings(md), "demote_headings", 0)


def _converter() -> markdown.Markdown:
    return markdown.Markdown(extensions=[_NoRawHtml()], output_format="html")


def sanitize_html(html: str) -> str:
    """Clean HTML against the allow-list (the second layer; also used on its own)."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel=LINK_REL,
        strip_comments=True,
    )


def render_markdown(text: str | None, *, full_text_url: str = "") -> SafeString:
    """Markdown text → sanitized HTML, safe to put in a template as it is.

    A text longer than a page shows (``PAGE_TEXT_CHARS``, docs/limits.md) is cut there, with a
    note linking to ``full_text_url`` (the whole record), so that pages stay bounded."""
    if not text or not text.strip():
        return mark_safe("")
    shown, cut = page_excerpt(text)
    html = sanitize_html(_converter().convert(shown))
    if cut:
        html += format_html(
            '<p class="shortened muted">Shortened here: the whole text is {} characters long'
            "{}.</p>",
            len(text),
            format_html(' — <a href="{}">read it in the record</a>', full_text_url)
            if full_text_url
            else "",
        )
    return mark_safe(html)


def page_excerpt(text: str, limit: int | None = None) -> tuple[str, bool]:
    """The start of ``text`` that a page shows, and whether it was cut: at a paragraph or
    word boundary near ``limit`` characters when there is one."""
    limit = PAGE_TEXT_CHARS if limit is None else limit
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    for boundary in ("\n\n", "\n", " "):
        at = head.rfind(boundary)
        if at >= limit // 2:
            return head[:at].rstrip() + " …", True
    return head + "…", True
