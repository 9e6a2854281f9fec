"""Every closed vocabulary of the record format, in one place.

The values are the contract of docs/record-format.md: tools outside claimsdb read and
write them, so they never change spelling.
"""

from django.db import models

KEY_PATTERN = r"^[A-Z0-9]+(-[A-Z0-9]+)*$"
CASE_KEY_PATTERN = KEY_PATTERN
SOURCE_KEY_PATTERN = r"^SRC-[A-Z0-9]+(-[A-Z0-9]+)*$"
RULE_KEY_PATTERN = r"^RULE-[A-Z0-9]+(-[A-Z0-9]+)*$"
CLAIM_ID_PATTERN = r"^CLM-[A-Z0-9]+(-[A-Z0-9]+)*$"
FIGURE_ID_PATTERN = r"^FIG-[A-Z0-9]+(-[A-Z0-9]+)*$"
METHOD_KEY_PATTERN = r"^[a-z0-9]+([._-][a-z0-9]+)*/[1-9][0-9]*$"
COMPONENT_KEY_PATTERN = r"^CMP-[A-Z0-9]+(-[A-Z0-9]+)*$"

_PARTS = "capital letters and digits in parts joined by single hyphens (no spaces, no underscores)"
# Each key and ID pattern in words, with an example: what a refusal says instead of the regex.
PATTERN_WORDS = {
    KEY_PATTERN: f"a case key: {_PARTS}, e.g. CP23-001",
    SOURCE_KEY_PATTERN: f"a source key: SRC- then {_PARTS}, e.g. SRC-OPENAI-MARCH-20-OUTAGE",
    RULE_KEY_PATTERN: f"a rule key: RULE- then {_PARTS}, e.g. RULE-CP22-002-RESPONSES-NOT-CP22-003",
    CLAIM_ID_PATTERN: f"a claim ID: CLM- then {_PARTS}, e.g. CLM-CP22-003-A",
    FIGURE_ID_PATTERN: f"a figure ID: FIG- then {_PARTS}, e.g. FIG-CP22-002-RESPONSES",
    COMPONENT_KEY_PATTERN: f"a component key: CMP- then {_PARTS}, e.g. CMP-MOONCAKE",
    METHOD_KEY_PATTERN: (
        "a method key: a lowercase name (parts joined by '.', '_' or '-'), a slash and a "
        "version number, e.g. diggingbeagle.assessment/1"
    ),
}
KEY_MAX_LENGTH = 40
ID_MAX_LENGTH = 80


class CaseStatus(models.TextChoices):
    DRAFT = "draft", "draft"
    IN_REVIEW = "in_review", "in review"
    READY = "ready", "ready"
    WITHDRAWN = "withdrawn", "withdrawn"


class RecordStatus(models.TextChoices):
    """Status of sources, methods and scope rules."""

    ACTIVE = "active", "active"
    WITHDRAWN = "withdrawn", "withdrawn"


class ClaimStatus(models.TextChoices):
    SUPPORTED = "supported", "supported"
    PARTIALLY_SUPPORTED = "partially_supported", "partially supported"
    DISPUTED = "disputed", "disputed"
    REFUTED = "refuted", "refuted"
    UNVERIFIED = "unverified", "unverified"
    WITHDRAWN = "withdrawn", "withdrawn"


class ClaimBasis(models.TextChoices):
    REPORTED_FINDING = "reported_finding", "reported finding"
    INDEPENDENT_REPLICATION = "independent_replication", "independent replication"
    VENDOR_STATEMENT = "vendor_statement", "vendor statement"
    ANALYST_INFERENCE = "analyst_inference", "analyst inference"
    LAB_REPRODUCTION = "lab_reproduction", "lab reproduction"


class ClaimOrigin(models.TextChoices):
    HUMAN = "human", "human"
    MACHINE = "machine", "machine"
    IMPORT = "import", "import"


class EvidenceRelation(models.TextChoices):
    SUPPORTS = "supports", "supports"
    CONTRADICTS = "contradicts", "contradicts"
    CONTEXT = "context", "context"


class SourceKind(models.TextChoices):
    PRIMARY_DISCLOSURE = "primary_disclosure", "primary disclosure"
    SECONDARY_REPORT = "secondary_report", "secondary report"
    VENDOR_ADVISORY = "vendor_advisory", "vendor advisory"
    UPSTREAM_ISSUE = "upstream_issue", "upstream issue"
    UPSTREAM_FIX = "upstream_fix", "upstream fix"
    REPRODUCTION = "reproduction", "reproduction"
    DATASET = "dataset", "dataset"
    OTHER = "other", "other"


class Reliability(models.TextChoices):
    NONE = "", "not rated"
    A = "A", "A — completely reliable"
    B = "B", "B — usually reliable"
    C = "C", "C — fairly reliable"
    D = "D", "D — not usually reliable"
    E = "E", "E — unreliable"
    F = "F", "F — reliability cannot be judged"


class ControlKind(models.TextChoices):
    MITIGATION = "mitigation", "mitigation"
    DETECTION = "detection", "detection"
    FIX = "fix", "fix"


class UnknownKind(models.TextChoices):
    UNKNOWN = "unknown", "unknown"
    CONTRADICTION = "contradiction", "contradiction"
    OPEN_QUESTION = "open_question", "open question"


class FigureScope(models.TextChoices):
    PRODUCTION = "production", "production"
    LAB = "lab", "lab"
    ESTIMATE = "estimate", "estimate"


class AttributionRole(models.TextChoices):
    IMPACT_BASIS = "impact_basis", "impact basis"
    CONTEXT = "context", "context"


class RelationKind(models.TextChoices):
    SAME_EVENT = "same_event", "same event"
    RELATED_DISTINCT = "related_distinct", "related but distinct"
    REPRODUCTION_OF = "reproduction_of", "reproduction of"
    VARIANT_OF = "variant_of", "variant of"
    FOLLOW_UP_OF = "follow_up_of", "follow-up of"
    DUPLICATE_OF = "duplicate_of", "duplicate of"


SYMMETRIC_RELATIONS = frozenset({RelationKind.SAME_EVENT, RelationKind.RELATED_DISTINCT})


class ComponentKind(models.TextChoices):
    """What a component is: the software, models, services and hardware cases are about."""

    PROJECT = "project", "project"
    LIBRARY = "library", "library"
    TRANSFER_BACKEND = "transfer_backend", "transfer backend"
    MODEL = "model", "model"
    SERVICE = "service", "service"
    HARDWARE = "hardware", "hardware"


class ComponentRelationKind(models.TextChoices):
    # Two component records that turn out to name one thing: related, never merged, so
    # the decision can be undone by removing the relation.
    SAME_COMPONENT = "same_component", "same component"


class AffectedStatus(models.TextChoices):
    """What a case says of a component (OSV's and CSAF's product statuses, in their words)."""

    AFFECTED = "affected", "affected"
    FIXED = "fixed", "fixed"
    NOT_AFFECTED = "not_affected", "not affected"
    UNDER_INVESTIGATION = "under_investigation", "under investigation"


class RangeEvent(models.TextChoices):
    """The events of a version range, in OSV's form (``affected[].ranges[].events``)."""

    INTRODUCED = "introduced", "introduced"
    FIXED = "fixed", "fixed"
    LAST_AFFECTED = "last_affected", "last affected"
    LIMIT = "limit", "limit"


class RuleKind(models.TextChoices):
    NON_ATTRIBUTION = "non_attribution", "non-attribution"


class RecordKind(models.TextChoices):
    CASE = "case", "case"
    SOURCE = "source", "source"
    RULE = "rule", "scope rule"
    METHOD = "method", "assessment method"
    COMPONENT = "component", "component"


class RevisionAction(models.TextChoices):
    CREATE = "create", "create"
    UPDATE = "update", "update"
    WITHDRAW = "withdraw", "withdraw"
    REVERT = "revert", "revert"
    IMPORT = "import", "import"
