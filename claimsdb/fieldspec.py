"""How the fields of a JSON object are described: the vocabulary of the record formats
(claimsdb/records/schema.py, checked by ``records.schema.check``).

It imports nothing of claimsdb but the codes, so that code that must run without Django (the
importer's pure parser) can use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claimsdb.codes import DocumentCode


@dataclass(frozen=True)
class Field:
    """A typed field. ``kind`` is one of: str, int, number, date, url, enum, pattern, list,
    object, object_any, mapping."""

    kind: str
    nullable: bool = False
    values: tuple[str, ...] = ()
    pattern: str = ""
    code: str = DocumentCode.INVALID_VALUE  # what a value outside its vocabulary or pattern reports
    item: Field | None = None
    fields: dict[str, Field] = field(default_factory=dict)
    optional_default: Any = None  # set for the few additive fields older documents may omit
    optional: bool = False  # may be left out, and then stays out (no default is filled in)
    normalize: Callable[[Any], Any] | None = None
    max_length: int | None = None
