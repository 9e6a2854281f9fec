"""Raw JSON → validated documents: one record's document, or a bundle of them.

Every kind's document is checked against its declaration (``records/schema.py``), found
through the registry of record kinds by its ``format``.
"""

from __future__ import annotations

import json
from typing import Any

from claimsdb.codes import DocumentCode
from claimsdb.limits import DOCUMENT_MAX_BYTES

from . import jsontext, schema
from .errors import RuleViolation, RuleViolations
from .kinds import record_kinds


def loads(text: str | bytes) -> Any:
    """Parse JSON text strictly (``records/jsontext.py``): a syntax error, a repeated key,
    NUL or a lone surrogate is a violation with its position or path."""
    return jsontext.loads(text)


def parse_document(raw: Any, expected_kind: str | None = None) -> tuple[str, dict[str, Any]]:
    """Validate one record document; return ``(kind, normalized document)``.

    Raises RuleViolations listing every structural problem with its path.
    """
    if not isinstance(raw, dict):
        raise RuleViolations(
            [
                RuleViolation(
                    DocumentCode.TYPE, f"must be an object, not {schema.type_name(raw)}", ""
                )
            ]
        )
    fmt = raw.get("format")
    kind = record_kinds.by_format(fmt) if isinstance(fmt, str) else None
    if kind is None or (expected_kind and kind.name != expected_kind):
        wanted = (
            [record_kinds.get(expected_kind).format]
            if expected_kind
            else [entry.format for entry in record_kinds]
        )
        path = "format" if "format" in raw else "format"
        code = DocumentCode.FORMAT if "format" in raw else DocumentCode.MISSING_FIELD
        raise RuleViolations(
            [
                RuleViolation(
                    code,
                    f"format {fmt!r} is not one this loader reads here (expected "
                    + " or ".join(repr(w) for w in wanted)
                    + ")",
                    path,
                )
            ]
        )
    size = document_size(raw)
    if size > DOCUMENT_MAX_BYTES:
        raise RuleViolations(
            [
                RuleViolation(
                    DocumentCode.TOO_LARGE,
                    f"the document is {size} bytes of JSON; at most {DOCUMENT_MAX_BYTES} are "
                    "allowed (docs/limits.md)",
                    "",
                )
            ]
        )
    problems: list[RuleViolation] = []
    document = schema.check(kind.schema, raw, "", problems)
    if problems:
        raise RuleViolations(problems)
    return kind.name, document


def document_size(raw: Any) -> int:
    """Bytes of a document as compact UTF-8 JSON (what it costs to store and to send)."""
    text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def parse_bundle(raw: Any) -> dict[str, list[dict[str, Any]]]:
    """Validate a bundle, or a single record document treated as a bundle of one."""
    if isinstance(raw, dict) and record_kinds.by_format(raw.get("format")) is not None:
        kind, document = parse_document(raw)
        lists: dict[str, list[dict[str, Any]]] = {
            entry.plural: [] for entry in record_kinds.in_write_order()
        }
        lists[record_kinds.get(kind).plural].append(document)
        return lists
    if not isinstance(raw, dict):
        raise RuleViolations(
            [
                RuleViolation(
                    DocumentCode.TYPE, f"must be an object, not {schema.type_name(raw)}", ""
                )
            ]
        )
    if raw.get("format") != schema.BUNDLE_FORMAT:
        formats = [entry.format for entry in record_kinds]
        known = ", ".join(repr(f) for f in [schema.BUNDLE_FORMAT, *formats])
        code = DocumentCode.FORMAT if "format" in raw else DocumentCode.MISSING_FIELD
        raise RuleViolations(
            [
                RuleViolation(
                    code,
                    f"format {raw.get('format')!r} is not one this loader reads ({known})",
                    "format",
                )
            ]
        )
    problems: list[RuleViolation] = []
    lists = {}
    for name in raw:
        if name != "format" and record_kinds.by_plural(name) is None:
            problems.append(
                RuleViolation(
                    DocumentCode.UNKNOWN_FIELD, f"{name!r} is not a field of a bundle", name
                )
            )
    for entry in record_kinds.in_write_order():
        name = entry.plural
        items = raw.get(name)
        if items is None and name not in raw and entry.bundle_optional:
            lists[name] = []
            continue
        if items is None:
            problems.append(
                RuleViolation(DocumentCode.MISSING_FIELD, f"the field {name!r} is missing", name)
            )
            continue
        if not isinstance(items, list):
            problems.append(
                RuleViolation(
                    DocumentCode.TYPE, f"must be a list, not {schema.type_name(items)}", name
                )
            )
            continue
        lists[name] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            try:
                _, document = parse_document(item, entry.name)
            except RuleViolations as refused:
                problems.extend(v.prefixed(f"{name}[{index}]") for v in refused.violations)
                continue
            if document["key"] in seen:
                problems.append(
                    RuleViolation(
                        DocumentCode.DUPLICATE_KEY,
                        f"{document['key']} appears twice in this bundle",
                        f"{name}[{index}].key",
                    )
                )
            seen.add(document["key"])
            lists[name].append(document)
    if problems:
        raise RuleViolations(problems)
    return lists
