"""Field-level diff of two documents of the same record, with claims matched by ID."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Lists whose items carry a stable identity: matched by it rather than by position.
KEYED_LISTS = {"claims": "id", "figures": "id", "relations": "case", "reproduction_runs": "run_id"}


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
        if identity and _all_keyed(old, identity) and _all_keyed(new, identity):
            _diff_keyed(old, new, path, identity, changes)
        else:
            _diff_positional(old, new, path, changes)
        return
    if old != new or type(old) is not type(new):
        changes.append(Change(path, "changed", old, new))


def _all_keyed(items: list[Any], identity: str) -> bool:
    keys = [item.get(identity) for item in items if isinstance(item, dict)]
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
