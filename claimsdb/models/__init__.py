"""The claimsdb domain (docs/architecture.md, "The records").

Only ``claimsdb.services`` writes these tables, but for ``FormDraft`` (an editing form's
input kept for its user, not a record), written by ``claimsdb/web/stash.py``.
"""

from .approvals import Approval
from .assessments import Assessment, AssessmentMethod
from .cases import Attribution, Case, CaseTag, Control, Figure, Relation, Unknown
from .claims import Claim, ClaimIdReservation, EvidenceLink
from .components import AffectedEntry, Component, ComponentName
from .drafts import FormDraft
from .imports import ImportReport, ReproductionRun, ReproductionScenario, TrialRow
from .releases import Release, ReleaseChange, ReleasedRevision, ReleasedTerm, ReleaseEntry
from .review import ReviewComment, ReviewCommentRecipient, ReviewState, ReviewStateAuthor
from .revisions import LedgerHead, Revision, WriteFootprint
from .run_components import RunComponent
from .scope import ScopeRule
from .search import SearchEntry, SearchKind, SearchScope
from .sources import Source
from .webhooks import (
    DeliveryStatus,
    WebhookAttempt,
    WebhookCursor,
    WebhookDelivery,
    WebhookEvent,
    WebhookSubscription,
)

__all__ = [
    "Approval",
    "AffectedEntry",
    "Assessment",
    "AssessmentMethod",
    "Attribution",
    "Case",
    "CaseTag",
    "DeliveryStatus",
    "Claim",
    "Component",
    "ComponentName",
    "ClaimIdReservation",
    "Control",
    "EvidenceLink",
    "Figure",
    "FormDraft",
    "ImportReport",
    "LedgerHead",
    "Relation",
    "Release",
    "ReleaseChange",
    "ReleaseEntry",
    "ReleasedRevision",
    "ReleasedTerm",
    "ReproductionRun",
    "ReproductionScenario",
    "ReviewComment",
    "ReviewCommentRecipient",
    "ReviewState",
    "ReviewStateAuthor",
    "Revision",
    "RunComponent",
    "ScopeRule",
    "SearchEntry",
    "SearchKind",
    "SearchScope",
    "Source",
    "TrialRow",
    "Unknown",
    "WebhookAttempt",
    "WebhookCursor",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookSubscription",
    "WriteFootprint",
]
