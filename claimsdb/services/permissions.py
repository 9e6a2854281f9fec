"""Roles (docs/architecture.md, "Roles"): viewer < analyst < reviewer, as Django groups."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import IntegerField
from django.db.models.expressions import RawSQL

from claimsdb.records import PermissionDenied

from .rows import column

ROLES = ("viewer", "analyst", "reviewer")
RANK = {role: rank for rank, role in enumerate(ROLES)}
# The rank of a user's highest role, read with the user (``role_rank_annotation``).
ROLE_RANK_FIELD = "claimsdb_role_rank"


def user_role(user: User | AnonymousUser | None) -> str | None:
    """The highest role a user holds (superusers are reviewers), or None."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return "reviewer"
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def role_rank_annotation() -> dict[str, RawSQL]:
    """``User.objects.annotate(**role_rank_annotation())``: each user with the rank of their
    highest role (None without one) in the same query. The signed-in user of a request is
    read so (``claimsdb.signin.ThrottledModelBackend.get_user``), and ``loaded_role`` uses
    it: a page or an API read needs no query of its own for the role. (Plain SQL: the
    expression is put together on every request, and this is far cheaper than the ORM's.)"""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    quote = connection.ops.quote_name
    user_model = get_user_model()
    through = user_model.groups.through
    user_column = column(through, "user")
    group_column = column(through, "group")
    user_pk = user_model._meta.pk
    assert user_pk is not None  # a concrete model's
    ranks = " ".join("WHEN %s THEN %s" for _ in ROLES)
    sql = (
        f"SELECT MAX(CASE g.{quote('name')} {ranks} END) "
        f"FROM {quote(Group._meta.db_table)} g "
        f"JOIN {quote(through._meta.db_table)} m ON m.{quote(group_column)} = g.{quote('id')} "
        f"WHERE m.{quote(user_column)} = "
        f"{quote(user_model._meta.db_table)}.{quote(user_pk.column)}"
    )
    params = [value for role in ROLES for value in (role, RANK[role])]
    return {ROLE_RANK_FIELD: RawSQL(sql, params, output_field=IntegerField())}


def loaded_role(user: User | AnonymousUser | None) -> str | None:
    """``user_role``, from the rank read with the user when it was (``role_rank_annotation``),
    else looked up. For deciding what a request shows, once per request: the services call
    ``user_role`` (a fresh lookup) inside every writing transaction."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return "reviewer"
    if not hasattr(user, ROLE_RANK_FIELD):
        return user_role(user)
    rank: int | None = getattr(user, ROLE_RANK_FIELD)
    return None if rank is None else ROLES[rank]


def has_role(user: User | AnonymousUser | None, role: str) -> bool:
    held = user_role(user)
    return held is not None and RANK[held] >= RANK[role]


def require_role(user: User | AnonymousUser | None, role: str, action: str) -> None:
    """Refuse unless ``user`` holds ``role`` or a higher one. Call it inside the transaction."""
    if user is None or not getattr(user, "pk", None):
        raise PermissionDenied(f"{action} needs a signed-in user")
    if not has_role(user, role):
        raise PermissionDenied(f"{action} needs the {role} role")
