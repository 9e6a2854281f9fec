"""The live documents of records, read from the tables through the registry of kinds.

Every kind's documents come from its one builder (``RecordKind.documents``), for one
record, a page or a batch alike. Whole-knowledge-base reads that must not hold everything
at once stream instead (``records/stream.py``).
"""

from __future__ import annotations

from typing import Any

from .kinds import record_kinds
from .schema import BUNDLE_FORMAT


def record_document(kind: str, key: str) -> dict[str, Any] | None:
    """The live document of one record, or None if it does not exist."""
    return record_kinds.get(kind).read([key]).get(key)


def bundle_document() -> dict[str, Any]:
    """Everything in the knowledge base, as one bundle held in memory (lists by key)."""
    bundle: dict[str, Any] = {"format": BUNDLE_FORMAT}
    for kind in record_kinds.in_write_order():
        bundle[kind.plural] = kind.documents(list(kind.rows().order_by("key")))
    return bundle
