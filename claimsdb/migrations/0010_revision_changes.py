"""What each revision changed and the date its document gives the record, for the history
pages (docs/architecture.md, "The ledger"): two columns, filled from the snapshots.

The fill compares snapshots with its own copy of claimsdb.records.diff (below), as the
write path compared them when these columns were added: a migration does tomorrow what it
does today, whatever becomes of the module."""

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from django.db import migrations, models
from django.db.models import Q

BATCH = 500

# --- claimsdb.records.diff, frozen ------------------------------------------------------------

# Lists whose items carry a stable identity: matched by it rather than by position.
KEYED_LISTS = {"claims": "id", "figures": "id", "relations": "case", "reproduction_runs": "run_id"}


@dataclass(frozen=True)
class Change:
    """One changed field. ``op`` is ``added``, ``removed`` or ``changed``."""

    path: str
    op: str
    old: Any = None
    new: Any = None


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


# --- the fill --------------------------------------------------------------------------------


def _batches(Revision):
    """Every revision in (record_kind, record_key, number) order, ``BATCH`` at a time."""
    revisions = Revision.objects.order_by("record_kind", "record_key", "number").only(
        "record_kind", "record_key", "number", "action", "snapshot"
    )
    last = None
    while True:
        batch = revisions
        if last is not None:
            kind, key, number = last
            batch = batch.filter(
                Q(record_kind__gt=kind)
                | Q(record_kind=kind, record_key__gt=key)
                | Q(record_kind=kind, record_key=key, number__gt=number)
            )
        batch = list(batch[:BATCH])
        if not batch:
            return
        yield batch
        last = (batch[-1].record_kind, batch[-1].record_key, batch[-1].number)


def fill(apps, schema_editor):
    """Each revision against the record's revision before it. Of the loads from bundles
    only creations are known now: they get the document's date."""
    Revision = apps.get_model("claimsdb", "Revision")
    record, previous = None, None
    for batch in _batches(Revision):
        changed = []
        for revision in batch:
            document = json.loads(revision.snapshot)
            if (revision.record_kind, revision.record_key) != record:
                record, previous = (revision.record_kind, revision.record_key), None
            revision.changed = changed_fields(previous, document)
            if revision.action == "create":
                revision.dated_on = record_date(revision.record_kind, document)
            if revision.changed or revision.dated_on:
                changed.append(revision)
            previous = document
        Revision.objects.bulk_update(changed, ["changed", "dated_on"])


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0009_cache_table")]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="changed",
            field=models.JSONField(
                default=list,
                help_text="the fields changed since the record's previous revision "
                "(records.changed_fields); empty for its first",
            ),
        ),
        migrations.AddField(
            model_name="revision",
            name="dated_on",
            field=models.DateField(
                blank=True,
                null=True,
                help_text="the date the document gives its own record (records.record_date), "
                "for a revision that brought the document in: a creation or a bundle load",
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
