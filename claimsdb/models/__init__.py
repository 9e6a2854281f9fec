"""The claimsdb domain (docs/architecture.md, "The records").

Only ``claimsdb.services`` writes these tables.
"""

from .assessments import Assessment, AssessmentMethod
from .cases import Attribution, Case, CaseTag, Control, Figure, Relation, Unknown
from .claims import Claim, ClaimIdReservation, EvidenceLink
from .imports import ImportReport, ReproductionRun, ReproductionScenario, TrialRow
from .releases import Release, ReleaseChange, ReleasedRevision, ReleasedTerm, ReleaseEntry
from .revisions import LedgerHead, Revision, WriteFootprint
from .scope import ScopeRule
from .search import SearchEntry, SearchKind, SearchScope
from .sources import Source

__all__ = [
    "Assessment",
    "AssessmentMethod",
    "Attribution",
    "Case",
    "CaseTag",
    "Claim",
    "ClaimIdReservation",
    "Control",
    "EvidenceLink",
    "Figure",
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
    "Revision",
    "ScopeRule",
    "SearchEntry",
    "SearchKind",
    "SearchScope",
    "Source",
    "TrialRow",
    "Unknown",
    "WriteFootprint",
]
