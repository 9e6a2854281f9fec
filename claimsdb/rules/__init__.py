"""The rules of the knowledge base (docs/scope-rules.md), run by every service call.

See ``registry`` for how they are registered and run.
"""

from . import components, fields, scope  # noqa: F401  (registers the rules)
from .registry import FIELD_RULES, SCOPE_RULES, run_field_rules, run_scope_rules
from .state import ScopeState

__all__ = [
    "FIELD_RULES",
    "SCOPE_RULES",
    "ScopeState",
    "run_field_rules",
    "run_scope_rules",
]
