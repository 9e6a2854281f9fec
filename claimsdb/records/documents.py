"""Raw JSON → validated documents: one record's document, or a bundle of them; and the
documents of cases read through the ORM's prefetches.

Every kind's document is checked against its declaration (``records/schema.py``), found
through the registry of record kinds by its ``format``.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Prefetch, QuerySet

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.limits import DOCUMENT_MAX_BYTES
from claimsdb.models import Assessment, Case, EvidenceLink, Relation

from . import schema
from .canonical import json_number
from .errors import RuleViolation, RuleViolations
from .kinds import record_kinds


def case_queryset() -> QuerySet[Case]:
    """Cases with everything their documents need, in a fixed number of queries."""
    return Case.objects.prefetch_related(
        "tags",
        "claims",
        Prefetch("claims__evidence", queryset=EvidenceLink.objects.select_related("source")),
        Prefetch("assessments", queryset=Assessment.objects.select_related("method")),
        "controls",
        "unknowns",
        "figures",
        "attributions",
        Prefetch("relations_out", queryset=Relation.objects.select_related("other")),
        Prefetch("relations_in", queryset=Relation.objects.select_related("case")),
        "reproduction_runs",
    )


def case_document(case: Case) -> dict[str, Any]:
    relations = [
        {"case": r.other.key, "kind": r.kind, "note": r.note} for r in case.relations_out.all()
    ] + [
        {"case": r.case.key, "kind": r.kind, "note": r.note}
        for r in case.relations_in.all()
        if r.kind in SYMMETRIC_RELATIONS
    ]
    relations.sort(key=lambda r: (r["case"], r["kind"]))
    return {
        "format": "claimsdb.case/1",
        "key": case.key,
        "title": case.title,
        "status": case.status,
        "summary": case.summary,
        "scope_note": case.scope_note,
        "account": case.account,
        "basis": case.basis,
        "limits": case.limits,
        "tags": sorted(t.name for t in case.tags.all()),
        "claims": [
            {
                "id": c.claim_id,
                "statement": c.statement,
                "status": c.status,
                "status_note": c.status_note,
                "basis": c.basis,
                "origin": c.origin,
                "evidence": [
                    {"source": e.source.key, "relation": e.relation, "locator": e.locator}
                    for e in c.evidence.all()
                ],
            }
            for c in case.claims.all()
        ],
        "assessments": [
            {
                "method": a.method.key,
                "assessed_on": a.assessed_on.isoformat(),
                "assessor": a.assessor,
                "values": dict(a.values),
                "impact": a.impact,
                "impact_ungraded_reason": a.impact_ungraded_reason,
                "narrative": a.narrative,
                "evidence_basis": {
                    "claims": sorted(a.basis_claims),
                    "sources": sorted(a.basis_sources),
                },
            }
            for a in case.assessments.all()
        ],
        "controls": [{"kind": c.kind, "text": c.text} for c in case.controls.all()],
        "unknowns": [{"kind": u.kind, "text": u.text} for u in case.unknowns.all()],
        "figures": [
            {
                "id": f.figure_id,
                "value": json_number(f.value),
                "unit": f.unit,
                "measure": f.measure,
                "scope": f.scope,
                "description": f.description,
                "claims": list(f.claims),
            }
            for f in case.figures.all()
        ],
        "attributions": [
            {"figure": a.figure_id, "role": a.role, "note": a.note} for a in case.attributions.all()
        ],
        "relations": relations,
        "reproduction_runs": sorted(
            (r.summary for r in case.reproduction_runs.all()), key=lambda s: s.get("run_id", "")
        ),
    }


def loads(text: str | bytes) -> Any:
    """Parse JSON text, turning a syntax error into a violation with its position."""
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise RuleViolations(
            [RuleViolation("document.malformed", f"the file is not UTF-8 text: {exc}", "")]
        ) from exc
    except json.JSONDecodeError as exc:
        blank = not (text.strip() if isinstance(text, str | bytes) else text)
        what = "the document is empty" if blank else exc.msg
        raise RuleViolations(
            [
                RuleViolation(
                    "document.malformed",
                    f"not valid JSON: {what} (line {exc.lineno}, column {exc.colno})",
                    "",
                )
            ]
        ) from exc


def parse_document(raw: Any, expected_kind: str | None = None) -> tuple[str, dict[str, Any]]:
    """Validate one record document; return ``(kind, normalized document)``.

    Raises RuleViolations listing every structural problem with its path.
    """
    if not isinstance(raw, dict):
        raise RuleViolations(
            [RuleViolation("document.type", f"must be an object, not {schema.type_name(raw)}", "")]
        )
    fmt = raw.get("format")
    kind = record_kinds.by_format(fmt) if isinstance(fmt, str) else None
    if kind is None or (expected_kind and kind.name != expected_kind):
        wanted = (
            [record_kinds.get(expected_kind).format]
            if expected_kind
            else [entry.format for entry in record_kinds]
        )
        path = "format" if "format" in raw else "format"
        code = "document.format" if "format" in raw else "document.missing_field"
        raise RuleViolations(
            [
                RuleViolation(
                    code,
                    f"format {fmt!r} is not one this loader reads here (expected "
                    + " or ".join(repr(w) for w in wanted)
                    + ")",
                    path,
                )
            ]
        )
    size = document_size(raw)
    if size > DOCUMENT_MAX_BYTES:
        raise RuleViolations(
            [
                RuleViolation(
                    "document.too_large",
                    f"the document is {size} bytes of JSON; at most {DOCUMENT_MAX_BYTES} are "
                    "allowed (docs/limits.md)",
                    "",
                )
            ]
        )
    problems: list[RuleViolation] = []
    document = schema.check(kind.schema, raw, "", problems)
    if problems:
        raise RuleViolations(problems)
    return kind.name, document


def document_size(raw: Any) -> int:
    """Bytes of a document as compact UTF-8 JSON (what it costs to store and to send)."""
    text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def parse_bundle(raw: Any) -> dict[str, list[dict[str, Any]]]:
    """Validate a bundle, or a single record document treated as a bundle of one."""
    if isinstance(raw, dict) and record_kinds.by_format(raw.get("format")) is not None:
        kind, document = parse_document(raw)
        lists: dict[str, list[dict[str, Any]]] = {
            entry.plural: [] for entry in record_kinds.in_write_order()
        }
        lists[record_kinds.get(kind).plural].append(document)
        return lists
    if not isinstance(raw, dict):
        raise RuleViolations(
            [RuleViolation("document.type", f"must be an object, not {schema.type_name(raw)}", "")]
        )
    if raw.get("format") != schema.BUNDLE_FORMAT:
        formats = [entry.format for entry in record_kinds]
        known = ", ".join(repr(f) for f in [schema.BUNDLE_FORMAT, *formats])
        code = "document.format" if "format" in raw else "document.missing_field"
        raise RuleViolations(
            [
                RuleViolation(
                    code,
                    f"format {raw.get('format')!r} is not one this loader reads ({known})",
                    "format",
                )
            ]
        )
    problems: list[RuleViolation] = []
    lists = {}
    for name in raw:
        if name != "format" and record_kinds.by_plural(name) is None:
            problems.append(
                RuleViolation(
                    "document.unknown_field", f"{name!r} is not a field of a bundle", name
                )
            )
    for entry in record_kinds.in_write_order():
        name = entry.plural
        items = raw.get(name)
        if items is None:
            problems.append(
                RuleViolation("document.missing_field", f"the field {name!r} is missing", name)
            )
            continue
        if not isinstance(items, list):
            problems.append(
                RuleViolation(
                    "document.type", f"must be a list, not {schema.type_name(items)}", name
                )
            )
            continue
        lists[name] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            try:
                _, document = parse_document(item, entry.name)
            except RuleViolations as refused:
                problems.extend(v.prefixed(f"{name}[{index}]") for v in refused.violations)
                continue
            if document["key"] in seen:
                problems.append(
                    RuleViolation(
                        "document.duplicate_key",
                        f"{document['key']} appears twice in this bundle",
                        f"{name}[{index}].key",
                    )
                )
            seen.add(document["key"])
            lists[name].append(document)
    if problems:
        raise RuleViolations(problems)
    return lists
