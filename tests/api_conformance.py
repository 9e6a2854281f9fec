"""schemathesis hooks for .ci/schemathesis (``SCHEMATHESIS_HOOKS=tests.api_conformance``).

schemathesis's own ``positive_data_acceptance`` wants every schema-valid request accepted.
A knowledge base refuses many well-formed changes for reasons no schema can state: a scope
rule, a claim ID taken by another case, a stale If-Match, a results file whose content is
wrong, a release with nothing new. ``refusals_are_not_about_shape`` replaces it with what
the schema does promise: a request it calls valid is never refused for its shape. A 400 to
a schema-valid request must carry only codes that depend on stored data or on a file's
content; any other code means the schema and the API disagree.
"""

from __future__ import annotations

import json
import re

import schemathesis

# Statuses a schema-valid request may get whatever its content. 428: a whole-record PUT
# without If-Match, which the schema documents (If-Match is not a required parameter there,
# so that a client can make the request whose answer is the documented 428).
ACCEPTABLE = {401, 403, 404, 409, 412, 428, 429}
# Codes of refusals that depend on stored data, state or file content, which no schema states.
DATA_CODE_PREFIXES = (
    "scope.",
    "claim.id_taken",
    "claim.id_duplicate",
    "claim.evidence_required",
    "evidence.",
    "assessment.",
    "figure.id_duplicate",
    "figure.id_taken",
    "figure.claim_unknown",
    "figure.in_use",
    "attribution.",
    "relation.",
    "case.",
    "rule.",
    "method.",
    "repro.",
    "import.",
    "release.",
    "record.key_mismatch",  # the document's key against the URL's: two places at once
    "record.exists",
    "revision.not_of_record",
    "revision.stale",
    "document.inconsistent",
    "document.duplicate_key",
    "document.too_large",  # the whole document's size: no schema keyword bounds it
    "document.invalid_key",  # an object's keys: OpenAPI 3.0 has no propertyNames
    "signin.failed",  # wrong credentials at the token endpoint
    "pagination.cursor_invalid",  # a cursor is an opaque token that only the feed hands out
    "review.cursor_invalid",  # the review queue's cursor: opaque, from a page's next link
    "affected.",  # a case's affected entries name stored components and the case's claims
    "component.relation_unknown",  # a relation names a stored component
    "component.in_use",  # a withdrawn component that stored cases name
    "component.alias_duplicate",  # an alias against the name and the other aliases
    "component.purl_invalid",  # the Package URL grammar, checked by its parser
    "webhook.url_refused",  # where a receiver's host resolves: DNS, not the URL's shape
    "webhook.url_unresolved",
)


def _refused_for_data(body: bytes) -> tuple[bool, list[str]]:
    try:
        errors = json.loads(body)["errors"]
        codes = [str(error["code"]) for error in errors]
    except (ValueError, KeyError, TypeError):
        return False, []
    return bool(codes) and all(code.startswith(DATA_CODE_PREFIXES) for code in codes), codes


def _headers_follow_their_patterns(case) -> bool:
    """Whether the case's headers match the patterns the schema declares for them.

    schemathesis's coverage phase makes header values alphanumeric, and calls them valid even
    where the declared pattern needs other characters (no entity tag is alphanumeric); such a
    case is not schema-valid, whatever it is labelled."""
    definition = getattr(case.operation, "definition", None)
    raw = getattr(definition, "raw", None) or {}
    for parameter in raw.get("parameters", []):
        if not isinstance(parameter, dict) or parameter.get("in") != "header":
            continue
        pattern = (parameter.get("schema") or {}).get("pattern")
        value = (case.headers or {}).get(parameter.get("name"))
        if pattern and isinstance(value, str) and re.search(pattern, value) is None:
            return False
    return True


@schemathesis.check
def refusals_are_not_about_shape(ctx, response, case) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if not _headers_follow_their_patterns(case):
        return None
    status = response.status_code
    if status < 400 or status >= 500 or status in ACCEPTABLE:
        return None
    ok, codes = _refused_for_data(response.content)
    if status == 400 and ok:
        return None
    raise AssertionError(
        f"a schema-valid request was refused with {status} {codes or response.text[:300]}: "
        "the schema must state what the endpoint refuses for its shape"
    )


@schemathesis.check
def error_codes_are_namespaced(ctx, response, case) -> bool | None:
    """Every error the API answers with is JSON in the one shape, and each of its codes is
    one of claimsdb's namespaced codes (Django's and DRF's bare ones are mapped:
    claimsdb/codes.py ``API_CODES``)."""
    from claimsdb.codes import CODES

    if response.status_code < 400:
        return None
    try:
        codes = [str(error["code"]) for error in json.loads(response.content)["errors"]]
    except (ValueError, KeyError, TypeError) as error:
        raise AssertionError(f"an error that is not in the one JSON shape: {error}") from None
    unknown = [code for code in codes if code not in CODES]
    if unknown:
        raise AssertionError(f"codes that are not claimsdb's: {unknown}")
    return None
