"""The serialization rules of record-format.md: one place that turns documents into bytes."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def dumps_pretty(document: Any) -> str:
    """Files and exports: sorted keys, 2-space indent, a trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def dumps_compact(document: Any) -> str:
    """Snapshots and hashes: the compact form."""
    return json.dumps(document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_number(value: float | int) -> float | int:
    """A figure value is a JSON number, an integer when integral."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
