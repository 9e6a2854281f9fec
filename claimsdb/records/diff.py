"""Field-level diff of two documents of the same record, with claims matched by ID."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

# Lists whose items carry a stable identity: matched by it rather than by position.
KEYED_LISTS = {
    "claims": "id",
    "figures": "id",
    "relations": "case",
    "reproduction_runs": "run_id",
    "affected": "component",
}
# Lists named alike in two kinds' documents, keyed by another field in the other kind (a
# component's ``relations`` name components, not cases).
OTHER_IDENTITIES = {"relations": "component"}
# Lists that are sets (docs/record-format.md: sorted, unique): an item comes or goes, and
# its position says nothing — adding one tag is one change, ``tags[asyncio]`` added.
SET_LISTS = {"tags"}


@dataclass(frozen=True)
class Change:
    """One changed field. ``op`` is ``added``, ``removed`` or ``changed``."""

    path: str
    op: str
    old: Any = None
    new: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "op": self.op, "old": self.old, "new": self.new}


def diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """Every changed field from ``old`` to ``new`` (either may be None: created, gone)."""
    changes: list[Change] = []
    _diff_value(old or {}, new or {}, "", changes)
    return changes


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _diff_value(old: Any, new: Any, path: str, changes: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted(set(old) | set(new)):
            sub = _join(path, name)
            if name not in old:
                changes.append(Change(sub, "added", None, new[name]))
            elif name not in new:
                changes.append(Change(sub, "removed", old[name], None))
            else:
                _diff_value(old[name], new[name], sub, changes)
        return
    if isinstance(old, list) and isinstance(new, list):
        field_name = path.rsplit(".", 1)[-1]
        identity = KEYED_LISTS.get(field_name)
        other = OTHER_IDENTITIES.get(field_name)
        if identity and other and not (_all_keyed(old, identity) and _all_keyed(new, identity)):
            identity = other
        if field_name in SET_LISTS and _all_text(old) and _all_text(new):
            _diff_set(old, new, path, changes)
        elif identity and _all_keyed(old, identity) and _all_keyed(new, identity):
            _diff_keyed(old, new, path, identity, changes)
        else:
            _diff_positional(old, new, path, changes)
        return
    if old != new or type(old) is not type(new):
        changes.append(Change(path, "changed", old, new))


def _all_text(items: list[Any]) -> bool:
    return all(isinstance(item, str) for item in items)


def _diff_set(old: list[str], new: list[str], path: str, changes: list[Change]) -> None:
    for item in sorted(set(old) - set(new)):
        changes.append(Change(f"{path}[{item}]", "removed", item, None))
    for item in sorted(set(new) - set(old)):
        changes.append(Change(f"{path}[{item}]", "added", None, item))


def _all_keyed(items: list[Any], identity: str) -> bool:
    keys = [item.get(identity) for item in items if isinstance(item, dict) and identity in item]
    return len(keys) == len(items) and len(set(map(str, keys))) == len(keys)


def _diff_keyed(
    old: list[dict], new: list[dict], path: str, identity: str, changes: list[Change]
) -> None:
    old_by_key = {str(item[identity]): item for item in old}
    new_by_key = {str(item[identity]): item for item in new}
    for key, item in old_by_key.items():
        if key not in new_by_key:
            changes.append(Change(f"{path}[{key}]", "removed", item, None))
    for key, item in new_by_key.items():
        if key not in old_by_key:
            changes.append(Change(f"{path}[{key}]", "added", None, item))
        else:
            _diff_value(old_by_key[key], item, f"{path}[{key}]", changes)
    old_order = [k for k in old_by_key if k in new_by_key]
    new_order = [k for k in new_by_key if k in old_by_key]
    if old_order != new_order:
        changes.append(Change(f"{path}:order", "changed", old_order, new_order))


def _diff_positional(old: list, new: list, path: str, changes: list[Change]) -> None:
    for index in range(max(len(old), len(new))):
        sub = f"{path}[{index}]"
        if index >= len(old):
            changes.append(Change(sub, "added", None, new[index]))
        elif index >= len(new):
            changes.append(Change(sub, "removed", old[index], None))
        else:
            _diff_value(old[index], new[index], sub, changes)


# --- what a revision changed, in short (docs/architecture.md, "The ledger") ------------------

_TOP = re.compile(r"([A-Za-z_]+)(\[[^\]]*\])?(?:\.([A-Za-z_]+))?")


def changed_fields(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """The fields a change touched, compactly, in the order ``diff`` finds them: a
    top-level field (``status``, ``assessments``), or for an item of a list matched by
    identity the item and its field (``claims[CLM-X].statement``, ``figures[FIG-Y]`` when
    the item came or went). Empty when there is nothing to compare with (a creation)."""
    if old is None or new is None:
        return []
    fields: dict[str, None] = {}
    for change in diff(old, new):
        fields.setdefault(_compact_path(change.path))
    return list(fields)


def _compact_path(path: str) -> str:
    match = _TOP.match(path.removesuffix(":order"))
    if match is None:
        return path
    name, item, field = match.groups()
    if item is None or name not in KEYED_LISTS:
        return name
    return f"{name}{item}.{field}" if field else f"{name}{item}"


def record_date(kind: str, document: dict[str, Any] | None) -> dt.date | None:
    """The date a document gives its own record, if any: a case's latest assessment
    (``assessed_on``), a source's ``accessed_on`` (``published_on`` dates the source, not
    the record). Scope rules and methods carry none."""
    if not document:
        return None
    if kind == "case":
        dates = [a["assessed_on"] for a in document.get("assessments", []) if a.get("assessed_on")]
        return dt.date.fromisoformat(max(dates)) if dates else None
    if kind == "source" and document.get("accessed_on"):
        return dt.date.fromisoformat(document["accessed_on"])
    return None
