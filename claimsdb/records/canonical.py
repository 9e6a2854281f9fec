"""The serialization rules of docs/record-format.md: one place that turns documents into bytes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any


def dumps_pretty(document: Any) -> str:
    """Files and exports: sorted keys, 2-space indent, a trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# One encoder for every compact dump: ``json.dumps`` with these options builds a new
# encoder per call, a cost paid once per revision when the whole ledger is checked.
_COMPACT = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def dumps_compact(document: Any) -> str:
    """Snapshots and hashes: the compact form (what ``json.dumps(document,
    separators=(",", ":"), sort_keys=True, ensure_ascii=False)`` gives)."""
    return _COMPACT.encode(document)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_number(value: float | int) -> float | int:
    """A figure value is a JSON number, an integer when integral."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def iter_pretty_bundle(fields: Mapping[str, Any]) -> Iterator[str]:
    """``dumps_pretty`` of a bundle, in pieces, reading each list as it goes.

    ``fields`` maps each top-level name to a JSON value or to an iterable of documents
    (a list read lazily). The pieces join to exactly what ``dumps_pretty`` makes of the
    same bundle with its lists materialised, so an export streams yet stays byte-stable.
    """
    yield "{"
    for index, name in enumerate(sorted(fields)):
        value = fields[name]
        yield ("," if index else "") + "\n  " + _pretty(name) + ": "
        if isinstance(value, str | int | float | bool | dict) or value is None:
            yield _pretty(value).replace("\n", "\n  ")
            continue
        empty = True
        for document in value:
            # An item sits two levels deep: indent every line of its own form by four.
            yield ("[" if empty else ",") + "\n    " + _pretty(document).replace("\n", "\n    ")
            empty = False
        yield "[]" if empty else "\n  ]"
    yield "\n}\n"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
