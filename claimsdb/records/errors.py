"""Violations: what every write path reports when it refuses a change."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from claimsdb.codes import (
    REGISTERED,
    ApprovalCode,
    DocumentCode,
    PermissionCode,
    RecordCode,
    RevisionCode,
    UnknownCode,
)

logger = logging.getLogger("claimsdb.codes")


@dataclass(frozen=True)
class RuleViolation:
    """One broken rule.

    ``code`` is stable and documented (``scope.non_attribution``); ``message`` says in an
    analyst's words which rule and why; ``path`` points into the document being written
    (``claims[1].evidence[0].source``). ``record`` names another record when the problem
    lies there rather than in the document itself (``case CP22-003``), as when a new scope
    rule is refused because existing data already breaks it.
    """

    code: str
    message: str
    path: str = ""
    record: str = ""

    def __post_init__(self) -> None:
        if self.code not in REGISTERED:
            _unregistered(self.code)

    def as_dict(self) -> dict[str, str]:
        data = {"code": self.code, "message": self.message, "path": self.path}
        if self.record:
            data["record"] = self.record
        return data

    def prefixed(self, prefix: str) -> RuleViolation:
        """The same violation with its path seen from an enclosing document (a bundle)."""
        if self.record:
            return self
        path = f"{prefix}.{self.path}" if self.path else prefix
        return RuleViolation(self.code, self.message, path, self.record)

    def __str__(self) -> str:
        where = f"{self.record}: " if self.record else ""
        return f"{where}{self.path or '(document)'}: {self.code}: {self.message}"


def _unregistered(code: str) -> None:
    """A code missing from claimsdb/codes.py fails the tests (and DEBUG); in production the
    refusal still reaches its client, and the log names the code to register."""
    if settings.STRICT_VIOLATION_CODES:
        raise UnknownCode(code)
    logger.error("violation code %r is not registered in claimsdb/codes.py", code)


class RuleViolations(Exception):
    """A refused change: every violation found, not just the first."""

    def __init__(self, violations: list[RuleViolation]):
        self.violations = list(violations)
        super().__init__("; ".join(str(v) for v in self.violations))

    @property
    def codes(self) -> list[str]:
        return [v.code for v in self.violations]


class StaleRevision(RuleViolations):
    """An edit based on an older revision than the record's latest (HTTP 412)."""

    def __init__(self, *, record: str, expected: int | None, current: int | None):
        self.expected = expected
        self.current = current
        # what happened, without telling the reader what to do: the pages say that in their
        # own words (the form keeps the input, merged); the API's message adds the step
        self.what = (
            f"{record} has changed since revision {expected}: its latest revision is {current}."
            if expected is not None
            else f"{record} was written (revision {current}) after you started."
        )
        super().__init__(
            [
                RuleViolation(
                    RevisionCode.STALE,
                    f"{self.what} Reload it, reapply your change and save again.",
                    "",
                )
            ]
        )


class StaleApproval(StaleRevision):
    """An approval of a revision that is no longer the record's latest (HTTP 412): the
    reviewer has not seen what came after it."""

    def __init__(self, *, record: str, expected: int, current: int | None):
        super().__init__(record=record, expected=expected, current=current)
        self.what = (
            f"{record} has changed since revision {expected}: its latest revision is "
            f"{current}, which you have not reviewed."
        )
        self.violations = [
            RuleViolation(
                ApprovalCode.STALE,
                f"{self.what} Read the changes since the approved revision and approve "
                f"revision {current}.",
                "revision",
            )
        ]
        Exception.__init__(self, "; ".join(str(v) for v in self.violations))


def unknown_bundle_field(name: str) -> RuleViolation:
    """A bundle's top-level field that is not a list of records. ``approvals`` is refused
    with a code of its own: approvals are not loaded (docs/review.md, "Bundles")."""
    if name == "approvals":
        return RuleViolation(
            ApprovalCode.NOT_IN_BUNDLE,
            "a bundle carries records, not approvals: load the records, then a reviewer "
            "other than their author approves them (the API, the web or manage.py approve)",
            name,
        )
    return RuleViolation(DocumentCode.UNKNOWN_FIELD, f"{name!r} is not a field of a bundle", name)


class RecordNotFound(Exception):
    def __init__(self, kind: str, key: str):
        self.kind = kind
        self.key = key
        super().__init__(f"no {kind} with key {key!r}")


class RecordExists(RuleViolations):
    """Creating a record whose key is taken (HTTP 409)."""

    def __init__(self, kind: str, key: str):
        super().__init__(
            [RuleViolation(RecordCode.EXISTS, f"a {kind} with key {key} already exists", "key")]
        )


class PermissionDenied(Exception):
    def __init__(self, message: str):
        self.violation = RuleViolation(PermissionCode.DENIED, message, "")
        super().__init__(message)
