"""The canonical record documents of docs/record-format.md."""

from .builders import method_document, rule_document, source_document
from .canonical import dumps_compact, dumps_pretty, iter_pretty_bundle, sha256_text
from .diff import Change, changed_fields, diff, record_date
from .documents import loads, parse_bundle, parse_document
from .errors import (
    PermissionDenied,
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleApproval,
    StaleRevision,
)
from .live import bundle_document, record_document

__all__ = [
    "Change",
    "PermissionDenied",
    "RecordExists",
    "RecordNotFound",
    "RuleViolation",
    "RuleViolations",
    "StaleApproval",
    "StaleRevision",
    "bundle_document",
    "changed_fields",
    "diff",
    "dumps_compact",
    "dumps_pretty",
    "iter_pretty_bundle",
    "loads",
    "method_document",
    "parse_bundle",
    "parse_document",
    "record_date",
    "record_document",
    "rule_document",
    "sha256_text",
    "source_document",
]
