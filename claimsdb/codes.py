"""Every stable code claimsdb reports, one ``StrEnum`` family per prefix, each code with its
meaning beside it.

Tools match on these codes; the messages beside them may be reworded, the codes never. Code
names a member (``ScopeCode.NON_ATTRIBUTION``), so a misspelt name fails when the line runs
(and under a type checker). A code given as a string is checked against ``REGISTERED`` when
a ``RuleViolation`` is made: it raises under ``STRICT_VIOLATION_CODES`` (the tests, DEBUG)
and is logged elsewhere; tests/test_codes.py also checks every code written as a string in
the tree. docs/codes.md is written from this module (``python -m claimsdb.codes_doc``).

This module depends on nothing in claimsdb, so that every layer may import it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self


class Code(StrEnum):
    """A family of codes. A member is its code (``"scope.non_attribution"``) and carries
    what it means in ``doc``."""

    doc: str

    def __new__(cls, value: str, doc: str) -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.doc = doc
        return member


class DocumentCode(Code):
    """A document that is not a well-formed record of its format."""

    MALFORMED = "document.malformed", "the input is not valid JSON (or not UTF-8)"
    FORMAT = (
        "document.format",
        "the document's `format` is not one this endpoint or loader reads",
    )
    MISSING_FIELD = "document.missing_field", "a field of the record format is missing"
    UNKNOWN_FIELD = "document.unknown_field", "a field that is not part of the record format"
    TYPE = "document.type", "a field has the wrong JSON type"
    INVALID_VALUE = (
        "document.invalid_value",
        "a value outside the field's vocabulary, pattern, or length",
    )
    DUPLICATE_KEY = (
        "document.duplicate_key",
        "the same record twice in one bundle, or the same key twice in one JSON object (the "
        "path names the object and the key)",
    )
    TOO_LARGE = (
        "document.too_large",
        "a document larger than a document may be (docs/limits.md)",
    )
    INVALID_KEY = (
        "document.invalid_key",
        "an object key with a control character (NUL included)",
    )
    INCONSISTENT = (
        "document.inconsistent",
        "two documents of one change disagree (e.g. the two sides of a relation)",
    )


class RecordCode(Code):
    """A record addressed by its key."""

    KEY_FORMAT = "record.key_format", "a record key does not match its pattern"
    KEY_LOOKALIKE = (
        "record.key_lookalike",
        "a new key (or figure ID) differs from an existing one of its kind only by characters "
        "that look alike (0 and O; 1, I and l; m and rn: Unicode's confusables); the message "
        "names the existing one",
    )
    EXISTS = "record.exists", "creating a record whose key is taken (HTTP 409)"
    KEY_MISMATCH = (
        "record.key_mismatch",
        "the document's key (or a claim's ID) differs from the one addressed",
    )
    NOT_FOUND = (
        "record.not_found",
        "no record (case, source, rule, method, claim, revision) by that key (HTTP 404)",
    )


class RevisionCode(Code):
    """Revisions: the summary every change needs, lost updates, and the API's revision
    parameters."""

    SUMMARY_REQUIRED = "revision.summary_required", "every change needs a summary"
    STALE = (
        "revision.stale",
        "the edit is based on an older revision than the record's latest (HTTP 412)",
    )
    PRECONDITION_REQUIRED = (
        "revision.precondition_required",
        "a whole-record PUT without If-Match (HTTP 428)",
    )
    PRECONDITION_INVALID = (
        "revision.precondition_invalid",
        "an If-Match header that is not * or quoted revisions",
    )
    MATERIAL_INVALID = "revision.material_invalid", "?material= is neither true nor false"
    NOT_OF_RECORD = (
        "revision.not_of_record",
        "a diff or revert names a revision of another record",
    )


class PermissionCode(Code):
    """The acting user's role, checked before a change and again inside its transaction."""

    DENIED = "permission.denied", "the acting user's role does not allow this change"


class StatusCode(Code):
    """A case's status, which decides what a release publishes."""

    READY_NEEDS_REVIEWER = (
        "status.ready_needs_reviewer",
        "only a reviewer may set a case's status to ready; analysts propose a case for "
        "release by setting in_review",
    )


class ClaimCode(Code):
    """Claims: their permanent IDs, and the evidence their status needs."""

    ID_FORMAT = "claim.id_format", "a claim ID does not match ^CLM-[A-Z0-9]+(-[A-Z0-9]+)*$"
    ID_TAKEN = (
        "claim.id_taken",
        "a claim ID is used by another case, or belonged to a removed claim: IDs are never reused",
    )
    ID_DUPLICATE = "claim.id_duplicate", "the same claim ID twice in one case"
    EVIDENCE_REQUIRED = (
        "claim.evidence_required",
        "supported/partially_supported claims need a `supports` link; refuted claims a "
        "`contradicts` link",
    )


class EvidenceCode(Code):
    """Evidence links from a claim to a source."""

    SOURCE_UNKNOWN = (
        "evidence.source_unknown",
        "an evidence link names a source that does not exist",
    )


class SourceCode(Code):
    """Evidence source records."""

    URL_SCHEME = (
        "source.url_scheme",
        "a source's url is neither empty nor an http:// or https:// address",
    )


class AssessmentCode(Code):
    """Assessments, checked against their method."""

    METHOD_UNKNOWN = (
        "assessment.method_unknown",
        "the assessment names a method that does not exist",
    )
    VALUE_MISSING = "assessment.value_missing", "a dimension of the method has no value"
    VALUE_UNKNOWN = (
        "assessment.value_unknown",
        "a value (or dimension) that is not in the method's vocabulary",
    )
    IMPACT_REASON = (
        "assessment.impact_reason",
        "impact is null exactly when a non-empty ungraded reason is given",
    )
    IMPACT_RANGE = "assessment.impact_range", "impact lies outside the method's scale"
    IMPACT_BASIS = (
        "assessment.impact_basis",
        "a graded impact needs, in the evidence basis, a claim supporting a production figure "
        "attributable to this case",
    )
    BASIS_FOREIGN = (
        "assessment.basis_foreign",
        "evidence-basis claims must belong to this case and its sources must exist",
    )


class FigureCode(Code):
    """Figures of a case: their IDs, their claims, their use by other cases."""

    ID_FORMAT = "figure.id_format", "a figure ID does not match ^FIG-[A-Z0-9]+(-[A-Z0-9]+)*$"
    ID_DUPLICATE = "figure.id_duplicate", "the same figure ID twice in one case"
    ID_TAKEN = "figure.id_taken", "a figure ID that belongs to another case"
    CLAIM_UNKNOWN = "figure.claim_unknown", "a figure names a claim that does not exist"
    IN_USE = (
        "figure.in_use",
        "removing a figure that another case attributes or a scope rule names",
    )


class AttributionCode(Code):
    """Figures of other cases that a case uses."""

    FIGURE_UNKNOWN = (
        "attribution.figure_unknown",
        "an attribution names a figure that does not exist",
    )


class RelationCode(Code):
    """Relations between cases."""

    CASE_UNKNOWN = (
        "relation.case_unknown",
        "a relation names a case that does not exist (or the case itself)",
    )
    DUPLICATE = "relation.duplicate", "the same relation listed twice"


class CaseCode(Code):
    """A case document as a whole."""

    TAG_NEAR_DUPLICATE = (
        "case.tag_near_duplicate",
        "a tag no case has yet that differs from one in use only by look-alike characters, "
        "hyphens, underscores, dots or spaces (kvcache beside kv-cache): the message names the "
        "tag in use",
    )
    REPRODUCTION_RUNS_READONLY = (
        "case.reproduction_runs_readonly",
        "a document must carry exactly the imported runs the case has: runs are written only "
        "by the importer",
    )


class ScopeCode(Code):
    """The scope rules: what a figure may be attributed to."""

    NON_ATTRIBUTION = (
        "scope.non_attribution",
        "a figure named by a non-attribution rule is attributed to the case the rule names",
    )
    CROSS_CASE_FIGURE = (
        "scope.cross_case_figure",
        "a figure is attributed to a case other than its own and its same_event cases",
    )
    LAB_NOT_IMPACT = "scope.lab_not_impact", "a lab figure is used as an impact basis"
    RELATION_CONFLICT = (
        "scope.relation_conflict",
        "two cases are both same_event and related_distinct, or a same_event relation bridges "
        "a non-attribution rule",
    )
    RULE_CONFLICT = (
        "scope.rule_conflict",
        "a new or reactivated rule that existing data already breaks (every offending record "
        "and path is listed)",
    )


class RuleCode(Code):
    """Scope rule records: what they name."""

    FIGURE_UNKNOWN = "rule.figure_unknown", "a scope rule names a figure that does not exist"
    CASE_UNKNOWN = "rule.case_unknown", "a scope rule names a case that does not exist"


class MethodCode(Code):
    """Assessment method records: their vocabulary, immutable once used."""

    INVALID = (
        "method.invalid",
        "a method's dimensions, values or impact scale are malformed",
    )
    IN_USE = (
        "method.in_use",
        "a method used by assessments is immutable: publish a new version",
    )


class ComponentCode(Code):
    """Component records: their Package URL, names and relations."""

    PURL_INVALID = (
        "component.purl_invalid",
        "a component's `purl` is not a Package URL (checked by packageurl-python)",
    )
    ALIAS_DUPLICATE = (
        "component.alias_duplicate",
        "an alias listed twice or empty, or the component's own name listed as an alias "
        "(spelt alike)",
    )
    RELATION_UNKNOWN = (
        "component.relation_unknown",
        "a relation names a component that does not exist (or the component itself)",
    )
    RELATION_DUPLICATE = (
        "component.relation_duplicate",
        "the same relation to a component listed twice",
    )
    IN_USE = (
        "component.in_use",
        "a component that cases' affected entries name cannot be withdrawn: change those "
        "entries first (the message names the cases)",
    )


class AffectedCode(Code):
    """A case's affected components (its `affected` list)."""

    COMPONENT_UNKNOWN = (
        "affected.component_unknown",
        "an affected entry names a component that does not exist",
    )
    COMPONENT_WITHDRAWN = (
        "affected.component_withdrawn",
        "an affected entry names a withdrawn component",
    )
    COMPONENT_DUPLICATE = (
        "affected.component_duplicate",
        "the same component has two affected entries in one case (one entry lists every range)",
    )
    EVIDENCE_REQUIRED = (
        "affected.evidence_required",
        "an entry other than `under_investigation` names no claim of this case that is "
        "supported (or partially supported)",
    )
    EVIDENCE_WITHDRAWN = (
        "affected.evidence_withdrawn",
        "every claim an entry names is withdrawn: a withdrawn claim cannot be the only evidence",
    )
    CLAIM_FOREIGN = (
        "affected.claim_foreign",
        "an entry names a claim that is not a claim of this case",
    )
    RANGE_INVALID = (
        "affected.range_invalid",
        "a range is not well-formed or not ordered in the component's version scheme: "
        "an `introduced` first, `fixed` or `last_affected` (not both) alternating with it in "
        "increasing versions, `limit` last, every version valid in the scheme",
    )
    VERSION_INVALID = (
        "affected.version_invalid",
        "an explicit version is not a version of the component's scheme, or is listed twice",
    )


class ReproCode(Code):
    """A reproduction-results file (repro-results/1), reported by the importer with the JSON
    path into the file (``scenarios[2].late_writes_landed``)."""

    MALFORMED = (
        "repro.malformed",
        "the file is empty, truncated, not JSON, not one JSON object, nested too deeply, or "
        "repeats a key",
    )
    FORMAT_UNSUPPORTED = (
        "repro.format_unsupported",
        "`format` is not a format this importer reads (it reads repro-results/1 and "
        "repro-results/1.1)",
    )
    MISSING = "repro.missing", "a required field is missing"
    UNKNOWN_KEY = (
        "repro.unknown_key",
        "a key the format does not define (only keys beginning with `x-` may be added)",
    )
    TYPE = "repro.type", "a value has the wrong JSON type"
    INVALID = "repro.invalid", "a value outside its field's vocabulary, pattern or range"
    TIME_ORDER = "repro.time_order", "finished_at is before started_at"
    SETTING_NOT_LAB = (
        "repro.setting_not_lab",
        "`setting` is not `lab`: imported results are lab observations and never production "
        "figures",
    )
    DUPLICATE_SCENARIO = "repro.duplicate_scenario", "two scenarios share an id"
    PURL_INVALID = (
        "repro.purl_invalid",
        "a backend's `purl` (repro-results/1.1) is not a Package URL",
    )
    PURL_VERSION = (
        "repro.purl_version",
        "a backend's Package URL names a version other than the one stated beside it",
    )
    BACKEND_REPEATED = (
        "repro.backend_repeated",
        "`environment.backends` describes one backend twice (repro-results/1.1)",
    )
    BACKEND_UNUSED = (
        "repro.backend_unused",
        "`environment.backends` describes a backend that no scenario runs (repro-results/1.1)",
    )
    COUNTER_INCONSISTENT = (
        "repro.counter_inconsistent",
        "a scenario counter exceeds the one that bounds it (e.g. late_writes_landed > "
        "aborts_mid_transfer)",
    )
    OUTCOME_INCONSISTENT = (
        "repro.outcome_inconsistent",
        "`outcome` disagrees with checksum_mismatches + wrong_outputs",
    )
    TRIAL_UNKNOWN_SCENARIO = (
        "repro.trial_unknown_scenario",
        "a trial row names a scenario the file does not have",
    )
    TRIAL_REPEATED = "repro.trial_repeated", "a scenario's trial number n appears twice"
    TRIAL_COUNT = (
        "repro.trial_count",
        "a scenario's number of trial rows differs from its `trials`",
    )
    TRIAL_COUNTER_MISMATCH = (
        "repro.trial_counter_mismatch",
        "a scenario counter differs from the number of its trial rows with the matching flag true",
    )
    TOO_MANY_PROBLEMS = (
        "repro.too_many_problems",
        "more problems than are listed; fix the listed ones first",
    )
    TOO_LARGE = (
        "repro.too_large",
        "the file, one of its strings, or its fields outside the trial rows are larger than "
        "allowed (docs/limits.md)",
    )
    TOO_MANY_TRIALS = (
        "repro.too_many_trials",
        "more trial rows (or scenarios' trials) than one run may have (docs/limits.md)",
    )


class ImportCode(Code):
    """Importing a results file: what the knowledge base says about a well-formed file."""

    CASE_UNKNOWN = "import.case_unknown", "the file's `case` names no existing case"
    CLAIM_UNKNOWN = (
        "import.claim_unknown",
        "a claim of `claims` does not exist (or was removed)",
    )
    CLAIM_FOREIGN = (
        "import.claim_foreign",
        "a claim of `claims` belongs to another case than the file's `case` (the message names it)",
    )
    RUN_CONFLICT = (
        "import.run_conflict",
        "the run_id was imported before from a different file; replacing it must be asked for "
        "explicitly (HTTP 409)",
    )
    FILE_CHANGED = (
        "import.file_changed",
        "the file changed between the importer's check and its storage pass; nothing was written",
    )
    NO_FILE = "import.no_file", "an import request without a results file"
    FILENAME_INVALID = (
        "import.filename_invalid",
        "a results file's name with a control character (NUL included)",
    )


class ImportNowCode(Code):
    """Why a dry run's stored file cannot be imported now: the web's "Import it now" button
    (the import page shows the message; the API never reports these)."""

    NOT_DRY_RUN = (
        "import.not_dry_run",
        "the import was not a dry run: there is no stored file to import from it",
    )
    DRY_RUN_REFUSED = (
        "import.dry_run_refused",
        "the dry run's outcome would not import the file, so there is nothing to import",
    )
    ALREADY_IMPORTED = (
        "import.already_imported",
        "the dry run's file was imported already (or is being imported): a dry run is "
        "imported once",
    )
    FILE_GONE = (
        "import.file_gone",
        "the file the dry run checked is no longer stored; upload it again",
    )
    FILE_MISMATCH = (
        "import.file_mismatch",
        "the stored file no longer matches the one the dry run checked (its SHA-256 differs)",
    )


class ReleaseCode(Code):
    """Publishing a release, and reading one."""

    NOTES_REQUIRED = "release.notes_required", "publishing a release needs notes"
    NOTHING_CHANGED = (
        "release.nothing_changed",
        "nothing changed since the previous release: no release is made",
    )
    NOT_FOUND = "release.not_found", "there is no release with that number (HTTP 404)"


class ApprovalCode(Code):
    """Approving a record at a revision (docs/review.md)."""

    OWN_CHANGE = (
        "approval.own_change",
        "four eyes: the revisions the approval would cover include one the approving reviewer "
        "wrote; another reviewer must approve them (HTTP 403)",
    )
    STALE = (
        "approval.stale",
        "the revision to approve is not the record's latest: it moved on since the diff was "
        "read; nothing is written (HTTP 412)",
    )
    ALREADY_APPROVED = (
        "approval.already_approved",
        "the record's latest revision is approved already: there is nothing to review (HTTP 409)",
    )
    REVISION_REQUIRED = (
        "approval.revision_required",
        "an approval names the revision it approves (`revision`, a positive integer)",
    )
    NOT_IN_BUNDLE = (
        "approval.not_in_bundle",
        "a bundle carries records, not approvals: approve loaded records through the API, "
        "the web or `manage.py approve` (docs/review.md)",
    )
    CONFLICT = (
        "approval.conflict",
        "the approved revisions of two records disagree under a scope or field rule: the "
        "release would publish a violation (the message names the records, revisions and "
        "the approval that would resolve it; the usual rule code comes beside it)",
    )


class WebhookCode(Code):
    """Webhook subscriptions and their deliveries (docs/integrations.md)."""

    URL_INVALID = (
        "webhook.url_invalid",
        "a receiver URL that is not an http(s) URL with a host (or that carries credentials "
        "or a fragment)",
    )
    URL_UNRESOLVED = "webhook.url_unresolved", "a receiver URL whose host does not resolve"
    URL_REFUSED = (
        "webhook.url_refused",
        "a receiver URL whose host resolves to a private, loopback, link-local or other "
        "non-public address (allowed only with WEBHOOKS_ALLOW_PRIVATE)",
    )
    EVENTS_REQUIRED = "webhook.events_required", "a subscription names no event"
    EVENT_UNKNOWN = "webhook.event_unknown", "an event type that is not one claimsdb sends"
    FILTER_INVALID = (
        "webhook.filter_invalid",
        "a subscription field that cannot be: an unknown record kind, a malformed case key, "
        "an empty tag, a filter that is not a list of strings, a description too long, or a "
        "field a subscription does not have",
    )
    NOT_FOUND = "webhook.not_found", "no such subscription or delivery (HTTP 404)"
    NOT_OWNER = (
        "webhook.not_owner",
        "only the reviewer who made a subscription reads or changes its secret (HTTP 403)",
    )


class PaginationCode(Code):
    """The API's cursors through the revision feed."""

    CURSOR_INVALID = (
        "pagination.cursor_invalid",
        "?cursor= is not a place in the revision feed: take it from a response's next or "
        "previous link",
    )


class ReviewCode(Code):
    """Reviewing a change: requesting changes and the review queue (docs/review.md)."""

    COMMENT_MISSING = (
        "review.comment_missing",
        "a request for changes needs at least one comment, each with text (and within the "
        "limits on their number and length)",
    )
    PATH_UNKNOWN = (
        "review.path_unknown",
        "a comment's path names nothing in the revision reviewed: a field (`limits`), an "
        "item by its ID (`claims[CLM-CP22-004-C].statement`), or empty for the whole record",
    )
    CURSOR_INVALID = (
        "review.cursor_invalid",
        "?after= is not a place in the review queue: take it from a page's next link",
    )


class ServerCode(Code):
    """An error of the server itself, not of the request."""

    ERROR = "server.error", "an unexpected error, logged on the server (HTTP 500)"
    UNAVAILABLE = (
        "server.unavailable",
        "the database (or a replica and then the primary) cannot be reached for now: try "
        "again after the Retry-After header's seconds (HTTP 503; docs/operations.md)",
    )


class RequestCode(Code):
    """A request as a whole, before its document is read, and its query parameters and the
    fields of a form-like body (a revert's `revision`, a token request's): what Django REST
    framework would report with a bare code (`DrfCode`), under one prefix."""

    TOO_LARGE = (
        "request.too_large",
        "a request body larger than allowed (HTTP 413; docs/limits.md)",
    )
    NOT_FOUND = (
        "request.not_found",
        "no API endpoint at that URL, or nothing at it by that identifier (an import, a run, "
        "a page past the end of a list) (HTTP 404)",
    )
    METHOD_NOT_ALLOWED = (
        "request.method_not_allowed",
        "the endpoint does not take this method (HTTP 405)",
    )
    NOT_ACCEPTABLE = (
        "request.not_acceptable",
        "no representation fits the Accept header (HTTP 406)",
    )
    UNSUPPORTED_MEDIA_TYPE = (
        "request.unsupported_media_type",
        "the request body's Content-Type is not one the endpoint reads (HTTP 415)",
    )
    THROTTLED = "request.throttled", "too many requests: retry after Retry-After (HTTP 429)"
    INVALID = "request.invalid", "a query parameter or request field is not valid"
    REQUIRED = "request.required", "a required query parameter or request field is missing"
    BLANK = "request.blank", "a request field that may not be blank is blank"
    NULL = "request.null", "a request field that may not be null is null"
    INVALID_CHOICE = (
        "request.invalid_choice",
        "a query parameter is not one of its choices",
    )
    MIN_VALUE = "request.min_value", "a number in the request is below its least value"
    MAX_VALUE = "request.max_value", "a number in the request is above its greatest value"
    MAX_DIGITS = "request.max_digits", "a number in the request has too many digits"


class AuthenticationCode(Code):
    """Who is asking: credentials missing or wrong."""

    REQUIRED = (
        "authentication.required",
        "the request carries no credentials and needs some (HTTP 401)",
    )
    FAILED = (
        "authentication.failed",
        "the credentials are wrong, e.g. an unknown or revoked API token (HTTP 401)",
    )


class InputCode(Code):
    """Text that comes from outside claimsdb: a request's path, query string and form
    fields, and the strings and keys of every JSON document it reads (API bodies, bundles,
    fixtures, the web's JSON fields)."""

    INVALID_TEXT = (
        "input.invalid_text",
        "a NUL character, or a lone UTF-16 surrogate (U+D800 to U+DFFF, which no UTF-8 text "
        "holds), in the URL's path, the query string, a form field or a JSON string or key "
        "(HTTP 400; the path names the parameter, field or JSON path)",
    )


class SigninCode(Code):
    """Signing in, on the web or for an API token."""

    THROTTLED = (
        "signin.throttled",
        "too many failed sign-ins for the account: even the right password is refused for a "
        "while (HTTP 429; docs/limits.md)",
    )
    FAILED = (
        "signin.failed",
        "the username and password of a token request do not sign in (HTTP 400)",
    )


class DrfCode(Code):
    """Django's and Django REST framework's own codes, as their forms, serializers and
    exceptions raise them. The API never reports one: it reports the namespaced code that
    `API_CODES` gives for it (the last column of docs/codes.md), so that tools match on one
    vocabulary. The web's forms keep them."""

    NOT_AUTHENTICATED = "not_authenticated", "the request carries no credentials (HTTP 401)"
    AUTHENTICATION_FAILED = (
        "authentication_failed",
        "the credentials are wrong, e.g. an unknown API token (HTTP 401)",
    )
    PERMISSION_DENIED = "permission_denied", "the request may not do this (HTTP 403)"
    NOT_FOUND = "not_found", "no such endpoint or object (HTTP 404)"
    PARSE_ERROR = "parse_error", "the request body cannot be parsed (HTTP 400)"
    METHOD_NOT_ALLOWED = "method_not_allowed", "the endpoint does not take this method (HTTP 405)"
    NOT_ACCEPTABLE = "not_acceptable", "no representation fits the Accept header (HTTP 406)"
    UNSUPPORTED_MEDIA_TYPE = (
        "unsupported_media_type",
        "the request body's Content-Type is not one the endpoint reads (HTTP 415)",
    )
    THROTTLED = "throttled", "too many requests (HTTP 429)"
    INVALID = "invalid", "a request parameter or field is not valid"
    REQUIRED = "required", "a required request parameter or field is missing"
    BLANK = "blank", "a request field that may not be blank is blank"
    NULL = "null", "a request field that may not be null is null"
    NULL_CHARACTERS_NOT_ALLOWED = (
        "null_characters_not_allowed",
        "a request parameter or field with a NUL character",
    )
    SURROGATE_CHARACTERS_NOT_ALLOWED = (
        "surrogate_characters_not_allowed",
        "a request field with a lone surrogate character",
    )
    INVALID_CHOICE = "invalid_choice", "a request parameter is not one of its choices"
    MIN_VALUE = "min_value", "a number in the request body is below its least value"
    MAX_VALUE = "max_value", "a number in the request body is above its greatest value"
    MAX_STRING_LENGTH = "max_string_length", "a number in the request body has too many digits"
    AUTHORIZATION = (
        "authorization",
        "the username and password of a token request do not sign in (HTTP 400)",
    )


# What the API reports for each of Django's and DRF's codes.
API_CODES: dict[DrfCode, Code] = {
    DrfCode.NOT_AUTHENTICATED: AuthenticationCode.REQUIRED,
    DrfCode.AUTHENTICATION_FAILED: AuthenticationCode.FAILED,
    DrfCode.PERMISSION_DENIED: PermissionCode.DENIED,
    DrfCode.NOT_FOUND: RequestCode.NOT_FOUND,
    DrfCode.PARSE_ERROR: DocumentCode.MALFORMED,
    DrfCode.METHOD_NOT_ALLOWED: RequestCode.METHOD_NOT_ALLOWED,
    DrfCode.NOT_ACCEPTABLE: RequestCode.NOT_ACCEPTABLE,
    DrfCode.UNSUPPORTED_MEDIA_TYPE: RequestCode.UNSUPPORTED_MEDIA_TYPE,
    DrfCode.THROTTLED: RequestCode.THROTTLED,
    DrfCode.INVALID: RequestCode.INVALID,
    DrfCode.REQUIRED: RequestCode.REQUIRED,
    DrfCode.BLANK: RequestCode.BLANK,
    DrfCode.NULL: RequestCode.NULL,
    DrfCode.NULL_CHARACTERS_NOT_ALLOWED: InputCode.INVALID_TEXT,
    DrfCode.SURROGATE_CHARACTERS_NOT_ALLOWED: InputCode.INVALID_TEXT,
    DrfCode.INVALID_CHOICE: RequestCode.INVALID_CHOICE,
    DrfCode.MIN_VALUE: RequestCode.MIN_VALUE,
    DrfCode.MAX_VALUE: RequestCode.MAX_VALUE,
    DrfCode.MAX_STRING_LENGTH: RequestCode.MAX_DIGITS,
    DrfCode.AUTHORIZATION: SigninCode.FAILED,
}


def api_code(code: str) -> str:
    """The code the API reports for ``code``: a namespaced code as it is, one of Django's or
    DRF's mapped (``invalid_choice`` → ``request.invalid_choice``), and any other bare code a
    library may raise as ``request.invalid``."""
    if "." in code:
        return code
    mapped = _API_CODES_BY_TEXT.get(code)
    return str(mapped) if mapped is not None else str(RequestCode.INVALID)


_API_CODES_BY_TEXT: dict[str, Code] = {str(drf): ours for drf, ours in API_CODES.items()}


FAMILIES: tuple[type[Code], ...] = (
    DocumentCode,
    RecordCode,
    RevisionCode,
    PermissionCode,
    StatusCode,
    ClaimCode,
    EvidenceCode,
    SourceCode,
    AssessmentCode,
    FigureCode,
    AttributionCode,
    RelationCode,
    CaseCode,
    ScopeCode,
    RuleCode,
    MethodCode,
    ComponentCode,
    AffectedCode,
    ReproCode,
    ImportCode,
    ImportNowCode,
    ReleaseCode,
    ApprovalCode,
    WebhookCode,
    PaginationCode,
    ServerCode,
    RequestCode,
    InputCode,
    SigninCode,
    AuthenticationCode,
    DrfCode,
    ReviewCode,
)
REGISTERED: dict[str, Code] = {code.value: code for family in FAMILIES for code in family}
# The codes of claimsdb's own errors that the API and the importer report, with their meaning
# (the API schema lists them, then DRF's own).
CODES: dict[str, str] = {
    code.value: code.doc
    for family in FAMILIES
    if family not in (ImportNowCode, DrfCode)
    for code in family
}


class UnknownCode(ValueError):
    """A code that is not registered here: a misspelling, or a code to document first."""

    def __init__(self, code: str) -> None:
        super().__init__(f"{code!r} is not a code of claimsdb/codes.py; register it there")
        self.code = code
