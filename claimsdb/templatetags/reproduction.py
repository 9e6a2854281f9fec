"""``{% reproduction_sections runs as sections %}``: the record page's reproduction results.

``runs`` is the case document's ``reproduction_runs`` (the live document or a revision's
snapshot); see ``claimsdb.web.repro``.
"""

from __future__ import annotations

from typing import Any

from django import template

from claimsdb.web import repro

register = template.Library()


@register.simple_tag
def reproduction_sections(runs: list[Any] | None) -> list[repro.RunSection]:
    return repro.reproduction_sections(runs)
