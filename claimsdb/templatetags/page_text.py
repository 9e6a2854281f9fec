"""``{{ text|shortened }}``: a plain text cut to what a page shows (docs/limits.md)."""

from __future__ import annotations

from django import template

from claimsdb.web.markdown import page_excerpt

register = template.Library()


@register.filter
def shortened(text: str | None) -> str:
    return page_excerpt(text or "")[0]
