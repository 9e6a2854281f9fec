"""Review notes on record and edit pages: ``{% review_notes kind key as review %}`` then
``{% include "review/_notes.html" %}``, and a field's comments with ``review|comments_at:name``
(docs/review.md)."""

from __future__ import annotations

from typing import Any

from django import template

from claimsdb.web.review import ReviewNotes
from claimsdb.web.review import review_notes as notes_of

register = template.Library()


@register.simple_tag(takes_context=True)
def review_notes(context: Any, kind: str, key: str, scope: str = "") -> ReviewNotes | None:
    request = context.get("request")
    if request is None:
        return None
    return notes_of(request, kind, key, scope)


@register.filter
def comments_at(review: ReviewNotes | None, name: str) -> list:
    if review is None:
        return []
    return review.by_field.get(name, [])


@register.filter
def comments_under(review: ReviewNotes | None, prefix: str) -> list:
    """The open comments at ``prefix`` or inside it (``claims[CLM-X]`` and its fields)."""
    if review is None:
        return []
    return [
        comment
        for comment in review.comments
        if comment.path == prefix or comment.path.startswith((prefix + ".", prefix + "["))
    ]


@register.filter
def sees_review_queue(user: Any) -> bool:
    """Whether the site's menu offers this user the review queue."""
    from claimsdb import access

    return access.may_see_review_queue(user)
