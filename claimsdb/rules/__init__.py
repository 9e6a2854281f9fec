"""The rules of DESIGN.md §3, run by every service call (see ``registry``)."""

from . import fields, scope  # noqa: F401  (registers the rules)
from .registry import CODES, FIELD_RULES, SCOPE_RULES, run_field_rules, run_scope_rules
from .state import ScopeState

__all__ = [
    "CODES",
    "FIELD_RULES",
    "SCOPE_RULES",
    "ScopeState",
    "run_field_rules",
    "run_scope_rules",
]
