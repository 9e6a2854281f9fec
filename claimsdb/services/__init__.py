"""The only code that writes domain tables (docs/write-path.md)."""

from .bundles import bundle_load, bundle_load_file
from .claims import claim_add, claim_update, claim_withdraw
from .records import (
    ANY_REVISION,
    case_create,
    case_update,
    case_withdraw,
    method_create,
    method_update,
    method_withdraw,
    record_create,
    record_update,
    record_withdraw,
    rule_create,
    rule_update,
    rule_withdraw,
    source_create,
    source_update,
    source_withdraw,
)
from .revisions import revert_document, revision_revert
from .writer import RecordWrite, WriteOutcome, write_records

__all__ = [
    "ANY_REVISION",
    "RecordWrite",
    "WriteOutcome",
    "bundle_load",
    "bundle_load_file",
    "case_create",
    "case_update",
    "case_withdraw",
    "claim_add",
    "claim_update",
    "claim_withdraw",
    "method_create",
    "method_update",
    "method_withdraw",
    "record_create",
    "record_update",
    "record_withdraw",
    "revert_document",
    "revision_revert",
    "rule_create",
    "rule_update",
    "rule_withdraw",
    "source_create",
    "source_update",
    "source_withdraw",
    "write_records",
]
