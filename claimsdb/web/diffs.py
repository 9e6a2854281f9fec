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

from claimsdb import choices
from claimsdb.records import Change, diff
from claimsdb.records.figures import number_text

FIELD_NAMES = {
    "account": "Full account",
    "affected": "Affected component",
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
    "tags": "Tag",
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
    return mark_safe("".join(out))


def value_text(value: Any) -> str:
    """A single value as text (a list or object is shown with ``shown_value``)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value if value else "(empty)"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return number_text(value)  # a figure's value as written
    return ", ".join(value_text(item) for item in value)


# How a field inside a claim, figure, assessment… is labelled when it is shown as a row;
# the others read as their name in words ("status_note" → "Status note").
VALUE_LABELS = {
    "id": "ID",
    "impact_ungraded_reason": "Reason impact is ungraded",
    "run_id": "Run ID",
    "url": "URL",
}
# The fields that name an object come first, the rest in alphabetical order (as the
# canonical document has them), whichever way the document was built.
LEADING_FIELDS = (
    "id",
    "key",
    "case",
    "figure",
    "source",
    "title",
    "statement",
    "kind",
    "text",
    "status",
)


def value_label(name: str) -> str:
    if name in VALUE_LABELS:
        return VALUE_LABELS[name]
    words = name.replace("_", " ")
    return words[:1].upper() + words[1:]


@dataclass
class ShownValue:
    """A value as people read it: one text, a field/value table (an object such as a claim,
    an assessment's values) or a list (evidence links, tags). Never a block of JSON."""

    text: str | None = None
    fields: list[tuple[str, ShownValue]] | None = None
    items: list[ShownValue] | None = None

    @property
    def simple_items(self) -> bool:
        """A list of plain texts (tags, claim IDs) reads on one line."""
        return self.items is not None and all(item.text is not None for item in self.items)


def shown_value(value: Any) -> ShownValue:
    if isinstance(value, dict | list) and not value:
        return ShownValue(text="(none)")
    if isinstance(value, dict):
        names = [n for n in LEADING_FIELDS if n in value]
        names += sorted(n for n in value if n not in names)
        return ShownValue(fields=[(value_label(n), shown_value(value[n])) for n in names])
    if isinstance(value, list):
        return ShownValue(items=[shown_value(item) for item in value])
    return ShownValue(text=value_text(value))


@dataclass
class ChangeRow:
    path: str
    label: str
    op: str
    inline: SafeString | None  # both sides text: one line with words marked
    old: ShownValue
    new: ShownValue
    block: bool  # old or new is an object or a list (shown as fields or items)


def change_rows(changes: list[Change]) -> list[ChangeRow]:
    rows = []
    for change in changes:
        # word marks help in prose; one word replaced by another reads better as old → new
        both_text = (
            isinstance(change.old, str)
            and isinstance(change.new, str)
            and any(len(side.split()) > 1 for side in (change.old, change.new))
        )
        rows.append(
            ChangeRow(
                path=change.path,
                label=path_label(change.path),
                op=change.op,
                inline=word_diff(change.old, change.new) if both_text else None,
                old=shown_value(change.old),
                new=shown_value(change.new),
                block=isinstance(change.old, dict | list) or isinstance(change.new, dict | list),
            )
        )
    return rows


def document_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[ChangeRow]:
    return change_rows(diff(old, new))


STATUS_LABELS = {
    **dict(choices.CaseStatus.choices),
    **dict(choices.RecordStatus.choices),
    **dict(choices.ClaimStatus.choices),
}
# Lists whose items have an ID people know them by, and the lists counted instead.
NAMED_ITEMS = (
    ("claims", "id", "claim"),
    ("figures", "id", "figure"),
    ("affected", "component", "affected component"),
)
COUNTED_ITEMS = (
    ("assessments", "assessment"),
    ("attributions", "attribution"),
    ("relations", "relation"),
    ("controls", "control"),
    ("unknowns", "unknown"),
)


def _status(value: Any) -> str:
    return STATUS_LABELS.get(value, str(value))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def revert_effects(kind_label: str, current: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What a revert from ``current`` to ``result`` does, in sentences a reviewer reads
    before confirming: a change of status, claims and figures removed or brought back by
    ID, other lists shrinking or growing, claims whose status moves."""
    said: list[str] = []
    if "status" in current and current.get("status") != result.get("status"):
        said.append(
            f"This revert moves the {kind_label} from {_status(current['status'])} "
            f"back to {_status(result.get('status'))}."
        )
    if current.get("title") != result.get("title") and "title" in result:
        said.append(f"It changes the title back to “{result['title']}”.")
    for field, identity, noun in NAMED_ITEMS:
        now = [item[identity] for item in current.get(field) or []]
        then = [item[identity] for item in result.get(field) or []]
        removed = [key for key in now if key not in then]
        restored = [key for key in then if key not in now]
        if removed:
            said.append(f"It removes {_count(len(removed), noun)}: {', '.join(removed)}.")
        if restored:
            said.append(f"It restores {_count(len(restored), noun)}: {', '.join(restored)}.")
    statuses_then = {c["id"]: c.get("status") for c in result.get("claims") or []}
    for claim in current.get("claims") or []:
        then = statuses_then.get(claim["id"], claim.get("status"))
        if then != claim.get("status"):
            said.append(
                f"It moves claim {claim['id']} from {_status(claim.get('status'))} "
                f"back to {_status(then)}."
            )
    for field, noun in COUNTED_ITEMS:
        now, then = len(current.get(field) or []), len(result.get(field) or [])
        if now > then:
            said.append(f"It removes {_count(now - then, noun)}.")
        elif then > now:
            said.append(f"It restores {_count(then - now, noun)}.")
    assessments_now, assessments_then = current.get("assessments"), result.get("assessments")
    if (
        assessments_now
        and assessments_then
        and len(assessments_now) == len(assessments_then)
        and assessments_now[-1] != assessments_then[-1]
    ):
        said.append("It changes the current assessment back to what it was.")
    return said
