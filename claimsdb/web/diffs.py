"""Changes between two documents, for people: field paths in words, changed words marked.

``claimsdb.records.diff`` finds what changed (claims matched by ID); this module shows it.
Every piece of text is escaped before the ``<ins>``/``<del>`` marks are put around it.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from claimsdb.records import Change, diff

FIELD_NAMES = {
    "account": "Full account",
    "assessments": "Assessment",
    "attributions": "Attribution",
    "basis": "Basis and provenance",
    "claims": "Claim",
    "controls": "Control",
    "evidence": "evidence link",
    "evidence_basis": "evidence basis",
    "figures": "Figure",
    "impact_ungraded_reason": "reason impact is ungraded",
    "limits": "Limits and uncertainty",
    "relations": "Relation to",
    "reproduction_runs": "Reproduction run",
    "scope_note": "Scope note",
    "status_note": "status note",
    "unknowns": "Unknown",
}
_SEGMENT = re.compile(r"([A-Za-z_]+)(?:\[([^\]]*)\])?")
_TOKENS = re.compile(r"\s+|[^\s]+")


def path_label(path: str) -> str:
    """``claims[CLM-X].evidence[0].locator`` → ``Claim CLM-X › evidence link 1 › locator``."""
    if path.endswith(":order"):
        inner = path.removesuffix(":order")
        *parents, last = inner.rsplit(".", 1)
        prefix = f"{path_label(parents[0])} › " if parents else ""
        return f"{prefix}order of {last.replace('_', ' ')}" if prefix else f"Order of {last}"
    parts = []
    for segment in path.split("."):
        match = _SEGMENT.fullmatch(segment)
        if not match:
            parts.append(segment)
            continue
        name, index = match.groups()
        words = FIELD_NAMES.get(name, name.replace("_", " "))
        if index is not None:
            words += f" {int(index) + 1}" if index.isdigit() else f" {index}"
        parts.append(words)
    text = " › ".join(parts)
    return text[:1].upper() + text[1:]


def word_diff(old: str, new: str) -> SafeString:
    """The new text with removed words in ``<del>`` and added words in ``<ins>``."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[str] = []
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:
        if removed:
            out.append(f"<del>{escape(''.join(removed))}</del>")
        if added:
            out.append(f"<ins>{escape(''.join(added))}</ins>")
        removed.clear()
        added.clear()

    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for position, (op, a1, a2, b1, b2) in enumerate(opcodes):
        if op == "equal":
            same = "".join(a[a1:a2])
            between_changes = 0 < position < len(opcodes) - 1
            if between_changes and not same.strip() and (removed or added):
                # a lone space between two changed words belongs to the change: one
                # <del>…</del><ins>…</ins> pair reads better than alternating fragments
                removed.append(same)
                added.append(same)
                continue
            flush()
            out.append(escape(same))
            continue
        removed.extend(a[a1:a2])
        added.extend(b[b1:b2])
    flush()
    return mark_safe("".join(out))  # noqa: S308 (every piece escaped above)


def value_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value if value else "(empty)"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@dataclass
class ChangeRow:
    path: str
    label: str
    op: str
    inline: SafeString | None  # both sides text: one line with words marked
    old: str
    new: str
    block: bool  # old/new are structured (shown preformatted)


def change_rows(changes: list[Change]) -> list[ChangeRow]:
    rows = []
    for change in changes:
        both_text = isinstance(change.old, str) and isinstance(change.new, str)
        rows.append(
            ChangeRow(
                path=change.path,
                label=path_label(change.path),
                op=change.op,
                inline=word_diff(change.old, change.new) if both_text else None,
                old=value_text(change.old),
                new=value_text(change.new),
                block=isinstance(change.old, dict | list) or isinstance(change.new, dict | list),
            )
        )
    return rows


def document_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[ChangeRow]:
    return change_rows(diff(old, new))
