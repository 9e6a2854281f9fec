"""Loading bundles (fixtures, backups): one transaction, validated as a whole."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from claimsdb.records import parse_bundle

from .writer import KIND_ROLE, RecordWrite, WriteOutcome, write_records


def bundle_load(
    *, user: AbstractBaseUser, bundle: Any, summary: str, material: bool = True
) -> list[WriteOutcome]:
    """Create or update every record of a bundle (or of a single document): all or nothing.

    Records that exist are updated (one revision each, none where nothing changed).
    """
    lists = parse_bundle(bundle)
    writes = [
        RecordWrite(kind=name[:-1], document=document, mode="upsert", path=f"{name}[{index}]")
        for name in ("methods", "sources", "cases", "rules")
        for index, document in enumerate(lists[name])
    ]
    if not writes:
        return []
    kinds = {w.kind for w in writes}
    role = "reviewer" if any(KIND_ROLE[k] == "reviewer" for k in kinds) else "analyst"
    return write_records(user=user, writes=writes, summary=summary, material=material, role=role)
