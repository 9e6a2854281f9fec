"""``{{ revision.changed|changed_fields }}``: what a revision changed, compactly."""

from __future__ import annotations

from django import template

from claimsdb.web.presenters import changed_text

register = template.Library()


@register.filter
def changed_fields(paths: list[str] | None) -> str:
    return changed_text(paths or [])
