"""How the fields of a JSON object are described: the one vocabulary of the record formats
(claimsdb/records/schema.py, checked by ``records.schema.check``) and of a results file's
header (claimsdb/importers/repro/header.py, checked by ``importers.repro.field_check.check``).

It imports nothing of claimsdb but the codes, so that the importer's pure parser can use it
without Django.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claimsdb.codes import DocumentCode


@dataclass(frozen=True)
class Field:
    """A typed field. ``kind`` is one of: str, text, int, number, date, url, enum, pattern,
    list, object, object_any, mapping; and timestamp (RFC 3339 with a zone), which only a
    results file's header uses.

    The attributes after ``max_length`` serve the header, whose checker reads them; no
    record format sets them, and the records' checker ignores them."""

    kind: str
    nullable: bool = False
    values: tuple[str, ...] = ()
    pattern: str = ""
    code: str = DocumentCode.INVALID_VALUE  # what a value outside its vocabulary or pattern reports
    item: Field | None = None
    fields: dict[str, Field] = field(default_factory=dict)
    optional_default: Any = None  # set for the few additive fields older documents may omit
    optional: bool = False  # may be left out, and then stays out (no default is filled in)
    # an optional list that is left out when empty: a field added to a format whose older
    # documents (and their snapshots in the ledger) do not have it stays out of them
    omit_empty: bool = False
    normalize: Callable[[Any], Any] | None = None
    max_length: int | None = None
    # the value in words, as a message names it: what an object is ("a GPU"), what a valid
    # string looks like ("a SHA-256 of 64 hex digits"), why an enum has its one value
    description: str = ""
    min_items: int = 0  # a list's fewest items
    minimum: int | None = None  # a number's least value
    unique: str = ""  # a list whose items may not repeat: what one item is called
    # a check across an object's fields or a list's items, run after theirs
    cross_check: Callable[[Any, str, Any], None] | None = None
