"""What the public lists filter and order a released revision by (docs/releases.md).

Read once from a revision's snapshot when a release first publishes it, into a
``ReleasedRevision`` row (single values) and ``ReleasedTerm`` rows (many values), so the
public lists and the API's released filters run as indexed queries instead of parsing
every released snapshot. Pure functions, used by the release service (the migration that
back-filled the releases before it, 0007, has its own frozen copy).
"""

from __future__ import annotations

from typing import Any

from claimsdb.records.kinds import record_kinds

TEXT_SEPARATOR = "\x1f"  # never in a stripped ``?q=`` text that can match (see filters)
WITHDRAWN = "withdrawn"


def is_withdrawn(document: dict[str, Any]) -> bool:
    return document.get("status") == WITHDRAWN


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def revision_fields(kind: str, document: dict[str, Any]) -> dict[str, str]:
    """The single-valued columns of a ``ReleasedRevision``."""
    fields = {
        "title": _text(document.get("title")),
        "status": _text(document.get("status")),
        "kind": "",
        "reliability": "",
        "case": "",
        "figure": "",
        "text": "",
    }
    if kind == "source":
        fields["kind"] = _text(document.get("kind"))
        fields["reliability"] = _text(document.get("reliability"))
    if kind == "component":
        fields["title"] = _text(document.get("name"))
        fields["kind"] = _text(document.get("kind"))
    if kind == "rule":
        fields["case"] = _text(document.get("case"))
        fields["figure"] = _text(document.get("figure"))
    # the fields ``?q=`` searches (the same as the working state's filters)
    texts = [_text(document.get(name)) for name in record_kinds.get(kind).text_fields]
    if kind == "case":
        texts += [_text(tag) for tag in document.get("tags") or []]
        texts += [_text(claim.get("statement")) for claim in document.get("claims") or []]
    if kind == "component":
        texts += [_text(alias) for alias in document.get("aliases") or []]
    fields["text"] = TEXT_SEPARATOR.join(text.casefold() for text in texts)
    return fields


def revision_terms(kind: str, document: dict[str, Any]) -> list[tuple[str, str, int]]:
    """The many-valued facts of a released case: ``(name, value, number)`` (see
    ``ReleasedTerm``). Other kinds have none."""
    if kind != "case":
        return []
    terms = [("tag", tag, 0) for tag in sorted(set(document.get("tags") or []))]
    related = {r.get("case") for r in document.get("relations") or [] if r.get("case")}
    terms += [("related", other, 0) for other in sorted(related)]
    figures = {f.get("id") for f in document.get("figures") or [] if f.get("id")}
    # the components the case names, alone and with what it says of each (``CMP-X:fixed``)
    affected = [a for a in document.get("affected") or [] if a.get("component")]
    terms += [("component", c, 0) for c in sorted({a["component"] for a in affected})]
    terms += [
        ("component_status", s, 0)
        for s in sorted({f"{a['component']}:{a.get('status')}" for a in affected})
    ]
    terms += [("figure", figure, 0) for figure in sorted(figures)]
    # every cited source is a term (its "Cited by" lists withdrawn claims too); the number
    # counts the links of claims not withdrawn
    links: dict[str, int] = {}
    for claim in document.get("claims") or []:
        counted = 0 if claim.get("status") == "withdrawn" else 1
        for link in claim.get("evidence") or []:
            source = link.get("source")
            if source:
                links[source] = links.get(source, 0) + counted
    terms += [("source", source, count) for source, count in sorted(links.items())]
    assessments = document.get("assessments") or []
    for position, assessment in enumerate(assessments):
        values = assessment.get("values") or {}
        pairs = sorted(
            dimension_value(name, value) for name, value in values.items() if value is not None
        )
        terms += [("assessment", pair, position) for pair in pairs]
        if position == len(assessments) - 1:
            terms += [("current", pair, position) for pair in pairs]
    return terms


def dimension_value(dimension: str, value: Any) -> str:
    """``evidence_grade=B``: a dimension key has no ``=``, so the pair is unambiguous."""
    return f"{dimension}={value}"
