"""Roles (README, "Roles"): viewer < analyst < reviewer, as Django groups."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from claimsdb.records import PermissionDenied

ROLES = ("viewer", "analyst", "reviewer")
RANK = {role: rank for rank, role in enumerate(ROLES)}


def user_role(user: AbstractBaseUser | AnonymousUser | None) -> str | None:
    """The highest role a user holds (superusers are reviewers), or None."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return "reviewer"
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def has_role(user, role: str) -> bool:
    held = user_role(user)
    return held is not None and RANK[held] >= RANK[role]


def require_role(user, role: str, action: str) -> None:
    """Refuse unless ``user`` holds ``role`` or a higher one. Call it inside the transaction."""
    if user is None or not getattr(user, "pk", None):
        raise PermissionDenied(f"{action} needs a signed-in user")
    if not has_role(user, role):
        raise PermissionDenied(f"{action} needs the {role} role")
