"""Create, replace, patch and withdraw any record.

One guard against lost updates serves every write: the revision the change is based on,
checked by ``write_records`` under the ledger lock (``revision.stale``). A write of a whole
document names it (``expected_revision``) or skips the check (``ANY_REVISION``: fixture
loads, scripts, ``If-Match: *``). A change made to the record as it is — a merge patch, a
withdrawal, a claim change, a revert — goes through ``record_change``: it reads the
record's latest revision number, then its document, changes the document and writes it
with that number as the expected revision. A caller that based the change on a revision
of its own (If-Match, a form's base revision) has a stale one refused; a caller that
names none has the change read and applied again, up to ``STALE_RETRIES`` times, so a
concurrent change is never overwritten and no lock is held while the record is read.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, Literal, overload

from django.contrib.auth.models import User

from claimsdb.codes import RecordCode
from claimsdb.records import (
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
    parse_document,
    record_document,
)
from claimsdb.selectors.revisions import latest_revision_number

from .writer import RecordWrite, WriteOutcome, write_records


class _AnyRevision:
    def __repr__(self) -> str:
        return "ANY_REVISION"


# Pass as ``expected_revision`` to name no revision: a whole document is written without
# the stale-edit check (fixture loads, scripts); a change is applied to the latest revision.
ANY_REVISION: Any = _AnyRevision()

# How many times a change that names no revision is read and applied again when another
# writer lands between its read and its write (each attempt is refused as stale, not lost).
STALE_RETRIES = 3


def _write(
    *,
    user: User,
    kind: str,
    document: dict[str, Any],
    mode: str,
    summary: str,
    material: bool,
    expected_revision: Any,
    action: str | None = None,
    role: str | None = None,
) -> WriteOutcome:
    checked = expected_revision is not ANY_REVISION
    (outcome,) = write_records(
        user=user,
        writes=[
            RecordWrite(
                kind=kind,
                document=document,
                mode=mode,
                action=action,
                expected_revision=expected_revision if checked else None,
                check_expected=checked,
            )
        ],
        summary=summary,
        material=material,
        role=role,
    )
    return outcome


# A change of a record that exists (``mode="update"``), and one that may also make it anew
# from None (``mode="upsert"``: a revert of a record since removed).
Change = Callable[[dict[str, Any]], dict[str, Any]]
ChangeOrCreate = Callable[[dict[str, Any] | None], dict[str, Any]]


@overload
def record_change(
    *,
    user: User,
    kind: str,
    key: str,
    change: Change,
    summary: str,
    material: bool = ...,
    expected_revision: Any = ...,
    mode: Literal["update"] = ...,
    action: str | None = ...,
    role: str | None = ...,
) -> WriteOutcome: ...


@overload
def record_change(
    *,
    user: User,
    kind: str,
    key: str,
    change: ChangeOrCreate,
    summary: str,
    material: bool = ...,
    expected_revision: Any = ...,
    mode: Literal["upsert"],
    action: str | None = ...,
    role: str | None = ...,
) -> WriteOutcome: ...


def record_change(
    *,
    user: User,
    kind: str,
    key: str,
    change: Change | ChangeOrCreate,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
    mode: Literal["update", "upsert"] = "update",
    action: str | None = None,
    role: str | None = None,
) -> WriteOutcome:
    """Write ``change(document)`` over the record as it is now, without losing a
    concurrent change (the module's docstring says how).

    ``change`` gets a copy of the live document (None for a missing record, which only an
    ``upsert`` accepts; ``update`` answers ``RecordNotFound``) and returns the document to
    write; it is called again on each retry, with the document read again.
    """
    for attempt in range(STALE_RETRIES):
        # the number first: a write landing before the document is read makes it newer
        # than the number, and the write below is refused as stale rather than merged
        latest = latest_revision_number(kind, key)
        current = record_document(kind, key)
        if current is None and mode == "update":
            raise RecordNotFound(kind, key)
        if expected_revision is not ANY_REVISION and expected_revision != latest:
            raise StaleRevision(record=f"{kind} {key}", expected=expected_revision, current=latest)
        try:
            # an update has a document here; only an upsert's change is given None
            changed = change(copy.deepcopy(current))  # type: ignore[arg-type]
            return _write(
                user=user,
                kind=kind,
                document=changed,
                mode=mode,
                summary=summary,
                material=material,
                expected_revision=latest,
                action=action,
                role=role,
            )
        except StaleRevision:
            if expected_revision is not ANY_REVISION or attempt == STALE_RETRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge, ``null`` removes, anything else
    replaces (lists are replaced whole)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


def parse_update(kind: str, key: str, document: Any) -> dict[str, Any]:
    """``document`` checked and normalized as the new version of record ``key``
    (``parse_document``; the key never changes)."""
    _, parsed = parse_document(document, kind)
    if parsed["key"] != key:
        raise RuleViolations(
            [
                RuleViolation(
                    RecordCode.KEY_MISMATCH,
                    f"the document's key {parsed['key']} is not {key}; keys never change",
                    "key",
                )
            ]
        )
    return parsed


def record_create(
    *, user: User, kind: str, document: Any, summary: str, material: bool = True
) -> WriteOutcome:
    """Create a record from a document; refused if its key exists (``record.exists``)."""
    _, parsed = parse_document(document, kind)
    return _write(
        user=user,
        kind=kind,
        document=parsed,
        mode="create",
        summary=summary,
        material=material,
        expected_revision=ANY_REVISION,
    )


def record_update(
    *,
    user: User,
    kind: str,
    key: str,
    document: Any,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Replace a record with a whole document; ``expected_revision`` guards lost updates."""
    return _write(
        user=user,
        kind=kind,
        document=parse_update(kind, key, document),
        mode="update",
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def record_patch(
    *,
    user: User,
    kind: str,
    key: str,
    patch: Any,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Apply an RFC 7386 JSON merge patch to the record as it is now (``merge_patch``)."""
    return record_change(
        user=user,
        kind=kind,
        key=key,
        change=lambda document: parse_update(kind, key, merge_patch(document, patch)),
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def _withdrawn(document: dict[str, Any]) -> dict[str, Any]:
    document["status"] = "withdrawn"
    return document


def record_withdraw(
    *,
    user: User,
    kind: str,
    key: str,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Withdraw a record: its status becomes ``withdrawn``; nothing is erased."""
    return record_change(
        user=user,
        kind=kind,
        key=key,
        change=_withdrawn,
        summary=summary,
        material=material,
        expected_revision=expected_revision,
        action="withdraw",
    )


# The named services of each kind: the generic ones with the kind given.
case_create = functools.partial(record_create, kind="case")
case_update = functools.partial(record_update, kind="case")
case_withdraw = functools.partial(record_withdraw, kind="case")
source_create = functools.partial(record_create, kind="source")
source_update = functools.partial(record_update, kind="source")
source_withdraw = functools.partial(record_withdraw, kind="source")
rule_create = functools.partial(record_create, kind="rule")
rule_update = functools.partial(record_update, kind="rule")
rule_withdraw = functools.partial(record_withdraw, kind="rule")
method_create = functools.partial(record_create, kind="method")
method_update = functools.partial(record_update, kind="method")
method_withdraw = functools.partial(record_withdraw, kind="method")
component_create = functools.partial(record_create, kind="component")
component_update = functools.partial(record_update, kind="component")
component_withdraw = functools.partial(record_withdraw, kind="component")
