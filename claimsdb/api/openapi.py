"""The OpenAPI description of the API: components, parameters, responses and examples.

Document components (``CaseDocument``, ``Claim``…) are generated from the record schemas
of ``claimsdb.records.schema`` — the same declarations that validate every write — so the
schema cannot drift from what the services accept. ``add_components`` is a drf-spectacular
postprocessing hook that puts them, and the ``Error`` shape, under ``components.schemas``;
views refer to them with ``ref("CaseDocument")``.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse

from claimsdb.codes import CODES
from claimsdb.records import schema as record_schema
from claimsdb.records.kinds import record_kinds

_CASE = record_schema.CASE.fields
_DIMENSION = record_schema.METHOD.fields["dimensions"].item
# Every object of a document is a named component: one class of a generated client for an
# attribution, whether it is read in a CaseDocument or sent in a CasePatch.
NAMED_FIELDS = {
    id(record_schema.CLAIM): "Claim",
    id(record_schema.EVIDENCE_LINK): "EvidenceLink",
    id(record_schema.ASSESSMENT): "Assessment",
    id(record_schema.FIGURE): "Figure",
    id(_CASE["controls"].item): "Control",
    id(_CASE["unknowns"].item): "Unknown",
    id(_CASE["attributions"].item): "Attribution",
    id(_CASE["relations"].item): "Relation",
    id(_CASE["reproduction_runs"].item): "ReproductionRunSummary",
    id(_DIMENSION): "Dimension",
    id(_DIMENSION.fields["values"].item): "DimensionValue",
    id(record_schema.METHOD.fields["impact"]): "ImpactScale",
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def document_ref(kind: str) -> dict[str, str]:
    return ref(f"{record_kinds.get(kind).component}Document")


# --- components from the record schemas ---------------------------------------------------


def field_schema(spec: record_schema.Field, components: dict[str, Any], top: bool = False):
    """JSON schema (OpenAPI 3.0 dialect) of one ``records.schema.Field``."""
    name = NAMED_FIELDS.get(id(spec))
    if name and not top:
        if name not in components:
            components[name] = field_schema(spec, components, top=True)
        return ref(name)
    kind = spec.kind
    if kind == "str":
        result: dict[str, Any] = {"type": "string"}
    elif kind == "pattern":
        result = {"type": "string", "pattern": spec.pattern}
    elif kind == "enum":
        result = {"type": "string", "enum": list(spec.values)}
    elif kind == "url":
        result = {"type": "string", "pattern": record_schema.URL_PATTERN}
    elif kind == "date":
        result = {"type": "string", "format": "date"}
    elif kind == "int":
        result = {"type": "integer"}
    elif kind == "number":
        result = {"type": "number"}
    elif kind == "list":
        result = {"type": "array", "items": field_schema(spec.item, components)}
    elif kind == "mapping":
        result = {"type": "object", "additionalProperties": field_schema(spec.item, components)}
    elif kind == "object_any":
        result = {"type": "object", "additionalProperties": True}
    elif kind == "object":
        result = {
            "type": "object",
            "properties": {
                field_name: field_schema(sub, components) for field_name, sub in spec.fields.items()
            },
            "additionalProperties": False,
        }
        required = [
            n for n, sub in spec.fields.items() if sub.optional_default is None and not sub.optional
        ]
        if required:
            result["required"] = required
    else:  # pragma: no cover - every kind of records.schema is mapped above
        raise AssertionError(f"unmapped field kind {kind}")
    longest = record_schema.max_chars(spec)
    if longest is not None and kind != "enum":
        result["maxLength"] = longest
    if spec.nullable:
        result["nullable"] = True
    return result


def patch_schema(document: dict[str, Any], description: str) -> dict[str, Any]:
    """A merge patch of a document: any of its fields, ``null`` to remove one."""
    properties = {}
    required = set(document.get("required", ()))
    for name, sub in document["properties"].items():
        prop = copy.deepcopy(sub)
        if name not in required:  # null removes a field: only one the format may leave out
            if "$ref" in prop:
                prop = {"allOf": [prop]}
            prop["nullable"] = True
        properties[name] = prop
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "additionalProperties": False,
    }


def error_components() -> dict[str, Any]:
    codes = "\n".join(f"- `{code}`: {meaning}" for code, meaning in sorted(CODES.items()))
    return {
        "Error": {
            "type": "object",
            "description": "The one shape of every error response. `status` repeats the HTTP "
            "status, `title` says what happened, `errors` lists every problem found.",
            "properties": {
                "status": {"type": "integer", "example": 400},
                "title": {"type": "string", "example": "The change was refused"},
                "errors": {"type": "array", "items": ref("ErrorItem")},
            },
            "required": ["status", "title", "errors"],
        },
        "ErrorItem": {
            "type": "object",
            "description": "One problem. `path` points into the document sent "
            "(`claims[1].evidence[0].source`), or names a query parameter or header; it is "
            "empty when the request as a whole is the problem. `record` names another record "
            "when the problem lies there. `code` is stable and namespaced; tools match on it, "
            "never on the message. Django REST framework's bare codes are never reported: "
            "each is mapped to one of these (docs/codes.md). The codes:\n\n"
            f"{codes}",
            "properties": {
                "code": {"type": "string", "example": "scope.non_attribution"},
                "message": {"type": "string"},
                "path": {"type": "string", "example": "attributions[0].figure"},
                "record": {"type": "string", "example": "case CP22-003"},
            },
            "required": ["code", "message", "path"],
        },
    }


@cache
def components() -> dict[str, Any]:
    """Every component the views refer to with ``ref()``."""
    result: dict[str, Any] = {}
    for entry in record_kinds:
        name = entry.component
        document = field_schema(entry.schema, result, top=True)
        document["description"] = f"A `{entry.format}` document (docs/record-format.md)."
        result[f"{name}Document"] = document
        result[f"{name}Patch"] = patch_schema(
            document,
            f"An RFC 7386 JSON merge patch of a `{entry.format}` document: the fields "
            "given replace the record's (lists whole), `null` removes a field the format lets "
            "you leave out.",
        )
        result[f"{name}ListItem"] = {
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "revision": {
                    "type": "integer",
                    "nullable": True,
                    "description": "the revision the document is (the record's ETag): its "
                    "latest for users with a role, the released one for everyone else",
                },
                "document": ref(f"{name}Document"),
            },
            "required": ["key", "revision", "document"],
        }
    result["ClaimPatch"] = patch_schema(
        result["Claim"],
        "An RFC 7386 JSON merge patch of a claim: the fields given replace the claim's "
        "(`evidence` whole).",
    )
    result.update(error_components())
    result.update(ledger_components())
    return result


def ledger_components() -> dict[str, Any]:
    revision_properties = {
        "number": {"type": "integer", "description": "the global revision number"},
        "record_kind": {"type": "string", "enum": record_kinds.names()},
        "record_key": {"type": "string"},
        "action": {
            "type": "string",
            "enum": ["create", "update", "withdraw", "revert", "import"],
        },
        "material": {"type": "boolean", "description": "false: an editorial change"},
        "summary": {"type": "string"},
        "author": {"type": "string", "description": "the author's username"},
        "created_at": {"type": "string", "format": "date-time"},
        "snapshot_sha256": {"type": "string"},
        "previous_hash": {"type": "string"},
        "chain_hash": {"type": "string"},
    }
    return {
        "Revision": {
            "type": "object",
            "description": "One change to one record in the ledger; in the feeds, with its "
            "approval (null until a reviewer approves it: docs/review.md).",
            "properties": {
                **revision_properties,
                "approval": {"oneOf": [ref("Approval")], "nullable": True},
            },
            "required": list(revision_properties),
        },
        "RevisionDetail": {
            "type": "object",
            "description": "A revision with the record's document as it was after it.",
            "properties": {
                **revision_properties,
                "snapshot": {
                    "oneOf": [document_ref(kind.name) for kind in record_kinds],
                    "discriminator": {
                        "propertyName": "format",
                        "mapping": {
                            kind.format: document_ref(kind.name)["$ref"] for kind in record_kinds
                        },
                    },
                },
            },
            "required": [*revision_properties, "snapshot"],
        },
        "Change": {
            "type": "object",
            "description": "One changed field; claims, figures and relations are matched by "
            "their IDs (`claims[CLM-CP22-003-A].status`), other lists by position; "
            "`claims:order` reports a reordering.",
            "properties": {
                "path": {"type": "string"},
                "op": {"type": "string", "enum": ["added", "removed", "changed"]},
                "old": {"description": "the value before (null when added)"},
                "new": {"description": "the value after (null when removed)"},
            },
            "required": ["path", "op", "old", "new"],
        },
        "Diff": {
            "type": "object",
            "properties": {
                "case": {"type": "string"},
                "from": {"type": "integer"},
                "to": {"type": "integer"},
                "changes": {"type": "array", "items": ref("Change")},
            },
            "required": ["case", "from", "to", "changes"],
        },
        "RevertRequest": {
            "type": "object",
            "properties": {
                "revision": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 2**63 - 1,  # a bigint, as the view takes it
                    "description": "a revision of this case to restore",
                }
            },
            "required": ["revision"],
            "additionalProperties": False,
        },
        "Approval": {
            "type": "object",
            "description": "A reviewer's approval of a record at a revision (docs/review.md)",
            "properties": {
                "number": {"type": "integer", "description": "the approval's number"},
                "record_kind": {"type": "string", "enum": record_kinds.names()},
                "record_key": {"type": "string"},
                "revision": {"type": "integer", "description": "the revision approved"},
                "since_revision": {
                    "type": "integer",
                    "nullable": True,
                    "description": "the record's previous approved revision",
                },
                "reviewer": {"type": "string"},
                "created_at": {"type": "string", "format": "date-time"},
                "note": {"type": "string"},
                "self_approved": {"type": "boolean"},
                "status": {"type": "string"},
                "previous_hash": {"type": "string"},
                "chain_hash": {"type": "string"},
            },
            "required": [
                "number",
                "record_kind",
                "record_key",
                "revision",
                "since_revision",
                "reviewer",
                "created_at",
                "note",
                "self_approved",
                "status",
                "previous_hash",
                "chain_hash",
            ],
        },
        "ApprovalRequest": {
            "type": "object",
            "properties": {
                "revision": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "the record's latest revision: the one whose diff you read",
                },
                "note": {"type": "string"},
            },
            "required": ["revision"],
        },
        "ApprovalReview": {
            "type": "object",
            "properties": {
                "record_kind": {"type": "string"},
                "record_key": {"type": "string"},
                "awaiting_review": {"type": "boolean", "nullable": True},
                "review": {
                    "type": "object",
                    "nullable": True,
                    "properties": {
                        "approved_revision": {"type": "integer", "nullable": True},
                        "latest_revision": {"type": "integer", "nullable": True},
                        "revisions": {"type": "array", "items": {"type": "integer"}},
                        "authors": {"type": "array", "items": {"type": "string"}},
                        "material": {"type": "boolean"},
                        "changes": {"type": "array", "items": ref("Change")},
                    },
                },
                "approvals": {"type": "array", "items": ref("Approval")},
            },
            "required": ["record_kind", "record_key", "awaiting_review", "review", "approvals"],
        },
        "TokenRequest": {
            "type": "object",
            "properties": {
                # the username is read with its surrounding whitespace trimmed (Python's,
                # which counts U+001C–U+001F and U+0085): it needs some other character
                "username": {
                    "type": "string",
                    "minLength": 1,
                    "pattern": "[^\\s\\u001c-\\u001f\\u0085]",
                },
                "password": {"type": "string", "minLength": 1},
            },
            "required": ["username", "password"],
        },
        "Token": {
            "type": "object",
            "properties": {"token": {"type": "string"}},
            "required": ["token"],
        },
    }


# Components the schema modules declare with ``component()``: the bodies their views build
# themselves (a release, a page of releases, a trial row), each under one name.
DECLARED: dict[str, dict[str, Any]] = {}


def component(name: str, schema: dict[str, Any]) -> dict[str, str]:
    """Declare ``schema`` as the component ``name``; a reference to it. Every body an
    operation answers with is a named component, so a generated client has one class per
    resource (``Release``), never one per operation and status."""
    if DECLARED.get(name, schema) != schema:
        raise ValueError(f"two schemas declared as the component {name}")
    DECLARED[name] = schema
    return ref(name)


def add_components(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the components ``ref()`` points at."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, value in {**components(), **DECLARED}.items():
        schemas.setdefault(name, copy.deepcopy(value))
    return result


# --- examples ---------------------------------------------------------------------------


@cache
def seed_records() -> dict[str, dict[str, Any]]:
    """One document of each kind from the seed fixture (CP22-003 for cases), for examples."""
    path = settings.BASE_DIR / "fixtures" / "seed.json"
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = {}
    for kind in record_kinds:
        for document in bundle.get(kind.plural, []):
            if document.get("key") == kind.example_key:
                found[kind.name] = document
    return found


def document_examples(kind: str, *, request: bool = False, codes=("200",)) -> list:
    document = seed_records().get(kind)
    if document is None:
        return []
    return [
        OpenApiExample(
            f"{document['key']}",
            value=document,
            request_only=request,
            response_only=not request,
            status_codes=None if request else list(codes),
        )
    ]


def claim_example() -> dict[str, Any] | None:
    case = seed_records().get("case")
    return case["claims"][0] if case and case.get("claims") else None


# --- recorded examples ------------------------------------------------------------------

# Real responses, recorded by tests/test_api_examples.py (which fails while this file differs
# from what the API answers): the schema's examples cannot drift from the server.
EXAMPLES_PATH = Path(__file__).resolve().parent / "schema" / "examples.json"
RECORDED_NAMES = (
    *(f"{kind}.400" for kind in ("case", "source", "rule", "method")),
    *(f"{kind}.404" for kind in ("case", "source", "rule", "method", "revision")),
    "case.409",
    "case.412",
    "any.401",
    "any.403",
    "any.415",
    "any.428",
    "read.401",
    "withdraw.400",
    "claim.400",
    "claim.404",
    "list.400",
    "read.400",
    "feed.400",
    "diff.400",
    "revert.400",
    "token.200",
    "token.400",
    "token.429",
    "import.200",
    "import.201",
    "import.202",
    "import.400",
    "import.404",
    "import.409",
    "run.200",
    "run.404",
    "runs.200",
    "release.201",
    "release.400",
    "release.404",
    "releases.200",
    "webhook.400",
    "webhook.404",
)


@cache
def recorded() -> dict[str, dict[str, Any]]:
    """``{name: {"status": …, "body": …}}`` of the recorded responses."""
    try:
        return json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def recorded_example(name: str, status: int | None = None) -> list[OpenApiExample]:
    """The recorded response ``name`` as the example of its status (none if not recorded)."""
    entry = recorded().get(name)
    if entry is None:
        return []
    code = str(status or entry["status"])
    body = entry["body"]
    label = body["errors"][0]["code"] if isinstance(body, dict) and body.get("errors") else name
    return [OpenApiExample(label, value=body, response_only=True, status_codes=[code])]


ERROR_DESCRIPTIONS = {
    400: "refused: every problem, with its code and path (nothing was written)",
    401: "no credentials, or invalid ones",
    403: "signed in without the role this needs",
    404: "no such record",
    409: "the key is taken",
    412: "If-Match names an older revision than the record's latest (`revision.stale`)",
    415: "the body is not JSON",
    428: "a whole-record PUT needs If-Match",
    429: "too many attempts; retry after the Retry-After header's seconds",
}


def error_responses(
    *statuses: int, family: str = "", examples: dict[int, str] | None = None
) -> dict[tuple[int, str], OpenApiResponse]:
    """Error responses, each with a recorded example when there is one for it: the one
    ``examples`` names for its status, else ``<family>.<status>``, else ``any.<status>``.
    No example is ever written by hand; an operation without a recorded one shows none."""
    responses = {}
    for status in statuses:
        names = [(examples or {}).get(status), f"{family}.{status}", f"any.{status}"]
        name = next((n for n in names if n and n in recorded()), None)
        # errors are JSON whatever the endpoint's own media types (a CSV download's too)
        responses[(status, "application/json")] = OpenApiResponse(
            response=ref("Error"),
            description=ERROR_DESCRIPTIONS[status],
            examples=recorded_example(name, status) if name else [],
        )
    return responses


# the 400 of a read: a query parameter; of a list: its page size
QUERY_ERRORS = {400: "read.400", 401: "read.401"}
LIST_ERRORS = {400: "list.400", 401: "read.401"}
READ_ERRORS = (400, 401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 415)
# Reads anyone may make: a 401 only for credentials that are sent and invalid, never a 403.
PUBLIC_READ_ERRORS = (400, 401, 404)

# --- the released view ------------------------------------------------------------------

# Reads need no credentials: the schema says so with an empty security requirement.
PUBLIC_READ = [{"tokenAuth": []}, {"cookieAuth": []}, {}]
PUBLIC_LIST_NOTE = (
    "Anyone may read it: users with a role (viewer and above) see the working state, drafts "
    "included, with each record's latest revision; everyone else (no credentials, or a user "
    "without a role) sees the released records only — each at the revision of the latest "
    "release that has it, and withdrawn ones only with `status=withdrawn`. The filters and "
    "`ordering` apply to the documents seen."
)
PUBLIC_RECORD_NOTE = (
    "Anyone may read it: users with a role see the working state (the latest revision); "
    "everyone else sees the released document — the revision of the latest release that has "
    "the record — and 404 for a record never released."
)

# --- parameters -------------------------------------------------------------------------

SUMMARY = OpenApiParameter(
    "summary",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    required=True,
    description="the revision's summary: what changed and why (refused when empty: "
    "`revision.summary_required`)",
)
MATERIAL = OpenApiParameter(
    "material",
    OpenApiTypes.BOOL,
    OpenApiParameter.QUERY,
    description="true (the default): a material change; false: an editorial one",
)
WRITE_PARAMETERS = [SUMMARY, MATERIAL]


def if_match(required: bool) -> OpenApiParameter:
    """``If-Match``. Never a required parameter, even where the write needs it (``required``):
    a request without it is answered 428 `revision.precondition_required`, a documented
    response, and a generated client must be able to send that request."""
    return OpenApiParameter(
        "If-Match",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        required=False,
        description='the ETag the change is based on (`"14"`), or `*`. '
        + (
            "This write needs it: without it the write is refused with 428 "
            "`revision.precondition_required`; a stale ETag is refused with 412 "
            "`revision.stale`."
            if required
            else "When sent, a stale ETag is refused with 412 `revision.stale`."
        ),
    )


IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="an ETag you hold: 304 Not Modified if it is still the one you would get",
)
ETAG_HEADER = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 201, 304],
    required=True,
    description='the number of the revision the document is, quoted (`"14"`): the record\'s '
    "latest, or for readers without a role the released one",
)
REVISION_ETAG_HEADER = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 304],
    required=True,
    description='the revision number, quoted (`"14"`): a revision never changes',
)
CACHE_CONTROL_HEADER = OpenApiParameter(
    "Cache-Control",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 304],
    description="`public, max-age=31536000, immutable` for a released revision (one a release "
    "points at): its URL never changes content",
)
LOCATION_HEADER = OpenApiParameter(
    "Location",
    OpenApiTypes.URI,
    OpenApiParameter.HEADER,
    response=[201],
    required=True,
    description="the absolute URL of the new resource",
)


def location_header(*statuses: int, what: str = "the new resource") -> OpenApiParameter:
    return OpenApiParameter(
        "Location",
        OpenApiTypes.URI,
        OpenApiParameter.HEADER,
        response=list(statuses),
        required=True,
        description=f"the absolute URL of {what}",
    )


RETRY_AFTER_HEADER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    response=[429],
    required=True,
    description="the seconds to wait before trying again",
)


def link_header(description: str) -> OpenApiParameter:
    """The ``Link`` header of a paged 200 answer (``rest.link_header``), as ``description``
    says what it links."""
    return OpenApiParameter(
        "Link",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200],
        required=True,
        description=description,
    )


# Every page of a list: RFC 8288 links beside the body's, and a weak entity tag.
LIST_HEADERS = [
    link_header(
        "RFC 8288 links to the `first`, `prev`, `next` and `last` pages, those "
        'that exist (`<https://…?page=3>; rel="next"`); the revision feeds give `first`, '
        "`prev` and `next`"
    ),
    OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200, 304],
        required=True,
        description='a weak entity tag of the page (`W/"…"`): send it as If-None-Match '
        "for a 304 while the page is the same",
    ),
]
LIST_NOT_MODIFIED = OpenApiResponse(description="Not Modified: the page is as the ETag sent")


def key_parameter(kind: str) -> OpenApiParameter:
    entry = record_kinds.get(kind)
    description = f"the {kind}'s key"
    if entry.keys_hold_slashes:
        description += " (it contains a slash, which may be sent as is or as %2F)"
    return OpenApiParameter(
        "key",
        OpenApiTypes.STR,
        OpenApiParameter.PATH,
        description=description,
        examples=[OpenApiExample(entry.example_key, value=entry.example_key)],
    )


NOT_MODIFIED = OpenApiResponse(description="Not Modified: the ETag sent is still the latest")
