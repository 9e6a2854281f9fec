"""The rules registry: every write path runs every registered rule.

Two kinds of rule:

* **field rules** look at one document being written (plus the database for the records
  it refers to) and run before anything is written;
* **scope rules** look at the whole knowledge base as it would be after the change (the
  live tables inside the writing transaction) and report violations in the records the
  change touches. ``check_rules`` runs them over everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .codes import CODES

if TYPE_CHECKING:
    from claimsdb.records import RuleViolation

    from .context import DocumentContext
    from .state import ScopeState

FieldRule = Callable[[dict[str, Any], "DocumentContext"], Iterable["RuleViolation"]]
ScopeRuleCheck = Callable[["ScopeState"], Iterable["RuleViolation"]]

FIELD_RULES: dict[str, list[FieldRule]] = {"case": [], "source": [], "rule": [], "method": []}
SCOPE_RULES: list[ScopeRuleCheck] = []


def field_rule(kind: str, *codes: str) -> Callable[[FieldRule], FieldRule]:
    def register(function: FieldRule) -> FieldRule:
        FIELD_RULES[kind].append(function)
        _known(codes)
        return function

    return register


def scope_rule(*codes: str) -> Callable[[ScopeRuleCheck], ScopeRuleCheck]:
    def register(function: ScopeRuleCheck) -> ScopeRuleCheck:
        SCOPE_RULES.append(function)
        _known(codes)
        return function

    return register


def _known(codes: tuple[str, ...]) -> None:
    unknown = [code for code in codes if code not in CODES]
    if unknown:
        raise ValueError(f"document these codes in rules/codes.py first: {unknown}")


def run_field_rules(
    kind: str, document: dict[str, Any], context: DocumentContext
) -> list[RuleViolation]:
    violations: list[RuleViolation] = []
    for rule in FIELD_RULES[kind]:
        violations.extend(rule(document, context))
    return violations


def run_scope_rules(state: ScopeState) -> list[RuleViolation]:
    violations: list[RuleViolation] = []
    for rule in SCOPE_RULES:
        violations.extend(rule(state))
    return violations
