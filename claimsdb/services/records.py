"""Create, update and withdraw any record from a whole document."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from claimsdb.records import (
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    parse_document,
    record_document,
)

from .ledger import lock_head
from .writer import RecordWrite, WriteOutcome, write_records


class _AnyRevision:
    def __repr__(self) -> str:
        return "ANY_REVISION"


# Pass as ``expected_revision`` to skip the stale-edit check (fixture loads, scripts).
ANY_REVISION: Any = _AnyRevision()


def _write(
    *,
    user: AbstractBaseUser,
    kind: str,
    document: dict[str, Any],
    mode: str,
    summary: str,
    material: bool,
    expected_revision: Any,
    action: str | None = None,
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
    )
    return outcome


def record_create(
    *, user: AbstractBaseUser, kind: str, document: Any, summary: str, material: bool = True
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
    user: AbstractBaseUser,
    kind: str,
    key: str,
    document: Any,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Replace a record with a whole document; ``expected_revision`` guards lost updates."""
    _, parsed = parse_document(document, kind)
    if parsed["key"] != key:
        raise RuleViolations(
            [
                RuleViolation(
                    "record.key_mismatch",
                    f"the document's key {parsed['key']} is not {key}; keys never change",
                    "key",
                )
            ]
        )
    return _write(
        user=user,
        kind=kind,
        document=parsed,
        mode="update",
        summary=summary,
        material=material,
        expected_revision=expected_revision,
    )


def record_withdraw(
    *,
    user: AbstractBaseUser,
    kind: str,
    key: str,
    summary: str,
    material: bool = True,
    expected_revision: Any = ANY_REVISION,
) -> WriteOutcome:
    """Withdraw a record: its status becomes ``withdrawn``; nothing is erased."""
    with transaction.atomic():
        lock_head()  # the document read below is the one written back
        document = record_document(kind, key)
        if document is None:
            raise RecordNotFound(kind, key)
        document = copy.deepcopy(document)
        document["status"] = "withdrawn"
        return _write(
            user=user,
            kind=kind,
            document=document,
            mode="update",
            summary=summary,
            material=material,
            expected_revision=expected_revision,
            action="withdraw",
        )


def case_create(**kwargs) -> WriteOutcome:
    return record_create(kind="case", **kwargs)


def case_update(**kwargs) -> WriteOutcome:
    return record_update(kind="case", **kwargs)


def case_withdraw(**kwargs) -> WriteOutcome:
    return record_withdraw(kind="case", **kwargs)


def source_create(**kwargs) -> WriteOutcome:
    return record_create(kind="source", **kwargs)


def source_update(**kwargs) -> WriteOutcome:
    return record_update(kind="source", **kwargs)


def source_withdraw(**kwargs) -> WriteOutcome:
    return record_withdraw(kind="source", **kwargs)


def rule_create(**kwargs) -> WriteOutcome:
    return record_create(kind="rule", **kwargs)


def rule_update(**kwargs) -> WriteOutcome:
    return record_update(kind="rule", **kwargs)


def rule_withdraw(**kwargs) -> WriteOutcome:
    return record_withdraw(kind="rule", **kwargs)


def method_create(**kwargs) -> WriteOutcome:
    return record_create(kind="method", **kwargs)


def method_update(**kwargs) -> WriteOutcome:
    return record_update(kind="method", **kwargs)


def method_withdraw(**kwargs) -> WriteOutcome:
    return record_withdraw(kind="method", **kwargs)
