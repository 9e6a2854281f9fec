"""What the claimsdb commands share."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def acting_user(username: str):
    """The user a command acts as (``--user``): every change has an author."""
    if not username:
        raise CommandError("--user is required: every change is recorded with its author")
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist as exc:
        raise CommandError(f"no user named {username!r}") from exc
