"""Documents → what the templates show.

The record page renders a case *document* (the live one or a revision's snapshot), so the
current page and any past revision look the same. Markdown fields arrive here as text and
leave as sanitized HTML; plain-text fields stay text and are escaped by the templates.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from claimsdb import choices, public
from claimsdb.models import Approval, AssessmentMethod, Release, Revision, Source
from claimsdb.records.figures import figure_text, number_text
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors.approvals import approvals_of_numbers, review_label
from claimsdb.selectors.components import components_by_key
from claimsdb.selectors.methods import methods_by_key
from claimsdb.selectors.revisions import claim_withdrawals
from claimsdb.selectors.scope import scope_of_document
from claimsdb.selectors.sources import sources_as_of, sources_by_key

from .markdown import page_excerpt, render_markdown
from .repro import runs_by_claim

LABELS: dict[str, dict[str, str]] = {
    "case_status": dict(choices.CaseStatus.choices),
    "claim_status": dict(choices.ClaimStatus.choices),
    "claim_basis": dict(choices.ClaimBasis.choices),
    "claim_origin": dict(choices.ClaimOrigin.choices),
    "relation": dict(choices.EvidenceRelation.choices),
    "source_kind": dict(choices.SourceKind.choices),
    "control_kind": dict(choices.ControlKind.choices),
    "unknown_kind": dict(choices.UnknownKind.choices),
    "figure_scope": dict(choices.FigureScope.choices),
    "attribution_role": dict(choices.AttributionRole.choices),
    "case_relation": dict(choices.RelationKind.choices),
    "reliability": dict(choices.Reliability.choices),
    "revision_action": dict(choices.RevisionAction.choices),
    "component_kind": dict(choices.ComponentKind.choices),
    "affected_status": dict(choices.AffectedStatus.choices),
}


# What each kind of control and unknown means: shown beside the lists that use them.
KIND_DEFINITIONS: dict[str, dict[str, str]] = {
    "control_kind": {
        choices.ControlKind.MITIGATION: "lowers the likelihood or the harm; the cause remains",
        choices.ControlKind.DETECTION: "shows that it is happening or has happened",
        choices.ControlKind.FIX: "removes the cause",
    },
    "case_relation": {
        choices.RelationKind.SAME_EVENT: (
            "one incident seen twice: figures may be attributed between the two cases "
            "(shown on both)"
        ),
        choices.RelationKind.RELATED_DISTINCT: (
            "a related mechanism or cause, but another event: figures stay with their own "
            "case (shown on both)"
        ),
        choices.RelationKind.REPRODUCTION_OF: "this case reproduces the other one",
        choices.RelationKind.VARIANT_OF: "the same flaw in another form, product or setting",
        choices.RelationKind.FOLLOW_UP_OF: "later work on the other case (a fix, a new finding)",
        choices.RelationKind.DUPLICATE_OF: "the same record entered twice; the other one is kept",
    },
    "unknown_kind": {
        choices.UnknownKind.UNKNOWN: "not established by the evidence either way",
        choices.UnknownKind.CONTRADICTION: "sources or claims that disagree",
        choices.UnknownKind.OPEN_QUESTION: "a question for further work to answer",
    },
}


_PLAIN_KEY = re.compile(r"[A-Za-z0-9._~-]+")  # keys reverse() puts in a URL as they are
_KEY_MARKER = "0claimsdb0key0"


def detail_url(name: str, key: str) -> str:
    """``reverse(name, args=[key])`` for a route that takes one key, which a list page asks
    for once per row: the route is resolved once (per prefix and URL configuration) and a
    plain key put into it; any other key goes through ``reverse``."""
    if not _PLAIN_KEY.fullmatch(key):
        return reverse(name, args=[key])
    before, after = _route_around(name, get_script_prefix(), get_urlconf())
    return f"{before}{key}{after}"


@functools.lru_cache(maxsize=64)
def _route_around(name: str, prefix: str, urlconf: str | None) -> tuple[str, str]:
    before, after = reverse(name, args=[_KEY_MARKER]).split(_KEY_MARKER)
    return before, after


def label(vocabulary: str, value: str) -> str:
    return LABELS[vocabulary].get(value, value.replace("_", " "))


def parse_date(value: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if value else None
    except ValueError:
        return None


def sentence_end(text: str) -> str:
    """``text`` ending a sentence: a full stop added unless it already ends with one (or
    with ``?``, ``!`` or an ellipsis), so a value that ends a sentence never reads ".."."""
    stripped = text.rstrip()
    return stripped if stripped.endswith((".", "?", "!", "…")) else f"{stripped}."


def safe_url(url: str) -> str:
    """The URL if it is an http(s) link; otherwise nothing (it is then shown as text)."""
    lowered = url.strip().lower()
    return url.strip() if lowered.startswith(("https://", "http://")) else ""


@dataclass
class SourceView:
    key: str
    title: str
    kind: str
    kind_label: str
    publisher: str = ""
    url: str = ""
    link: str = ""
    published_on: dt.date | None = None
    accessed_on: dt.date | None = None
    reliability: str = ""
    reliability_label: str = ""
    notes: str = ""
    status: str = "active"
    missing: bool = False


def source_view(key: str, document: dict[str, Any] | None) -> SourceView:
    if document is None:
        return SourceView(key=key, title=key, kind="", kind_label="", missing=True)
    return SourceView(
        key=key,
        title=document["title"],
        kind=document["kind"],
        kind_label=label("source_kind", document["kind"]),
        publisher=document["publisher"],
        url=document["url"],
        link=safe_url(document["url"]),
        published_on=parse_date(document["published_on"]),
        accessed_on=parse_date(document["accessed_on"]),
        reliability=document["reliability"],
        reliability_label=label("reliability", document["reliability"])
        if document["reliability"]
        else "",
        notes=document["notes"],
        status=document.get("status", "active"),
    )


@dataclass
class AssessmentView:
    position: int
    method_key: str
    method_title: str
    method_known: bool
    assessed_on: dt.date | None
    assessor: str
    profile: list[tuple[str, str]]
    impact: int | None
    impact_label: str
    impact_scale: str
    ungraded_reason: str
    narrative_html: str
    basis_claims: list[str]
    basis_sources: list[SourceView]


def assessment_view(
    position: int, assessment: dict[str, Any], methods, sources, *, full_text_url: str = ""
) -> AssessmentView:
    method = methods.get(assessment["method"])
    values = assessment["values"]
    profile: list[tuple[str, str]] = []
    if method is not None:
        for dimension in method.dimensions:
            value_labels = {v["key"]: v["label"] for v in dimension["values"]}
            if dimension["key"] in values:
                value = values[dimension["key"]]
                profile.append((dimension["label"], value_labels.get(value, value)))
        known = {d["key"] for d in method.dimensions}
        profile += [(k, v) for k, v in values.items() if k not in known]
        impact_labels = method.impact.get("labels", {})
        scale = f"{method.impact.get('min', '')}–{method.impact.get('max', '')}"
    else:
        profile = [(k.replace("_", " "), v.replace("_", " ")) for k, v in values.items()]
        impact_labels, scale = {}, ""
    impact = assessment["impact"]
    return AssessmentView(
        position=position,
        method_key=assessment["method"],
        method_title=method.title if method else "",
        method_known=method is not None,
        assessed_on=parse_date(assessment["assessed_on"]),
        assessor=assessment["assessor"],
        profile=profile,
        impact=impact,
        impact_label=impact_labels.get(str(impact), "") if impact is not None else "",
        impact_scale=scale,
        ungraded_reason=assessment["impact_ungraded_reason"],
        narrative_html=render_markdown(assessment["narrative"], full_text_url=full_text_url),
        basis_claims=list(assessment["evidence_basis"]["claims"]),
        basis_sources=[
            sources.get(k) or source_view(k, None) for k in assessment["evidence_basis"]["sources"]
        ],
    )


def kinds_with_definitions(
    vocabulary: str, items: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A list of controls or unknowns, each with its kind's label, and the legend of the
    kinds it uses (in the vocabulary's order): ``(items, legend)``."""
    used = {item["kind"] for item in items}
    definitions = KIND_DEFINITIONS[vocabulary]
    legend = [
        {"kind": kind, "label": label(vocabulary, kind), "definition": definition}
        for kind, definition in definitions.items()
        if kind in used
    ]
    return [{**item, "kind_label": label(vocabulary, item["kind"])} for item in items], legend


def vocabulary_legend(vocabulary: str) -> list[dict[str, Any]]:
    """Every kind of a vocabulary with its label and definition, in the vocabulary's order:
    the legend of a form that chooses one."""
    return [
        {"kind": kind, "label": label(vocabulary, kind), "definition": definition}
        for kind, definition in KIND_DEFINITIONS[vocabulary].items()
    ]


# a claim ID or source key written in a control's text, as a whole word
CITED = re.compile(r"(?<![\w-])(?:CLM|SRC)-[A-Z0-9]+(?:-[A-Z0-9]+)*(?![\w-])")


def cited_in_controls(controls: list[dict[str, Any]]) -> set[str]:
    """The claim IDs and source keys written in the texts of ``controls``."""
    return {m.group(0) for c in controls for m in CITED.finditer(c["text"])}


def linked_citations(text: str, claims: set[str], sources: set[str]) -> SafeString:
    """``text``, escaped, with each claim ID of ``claims`` written in it linked to the
    claim on the page (``#CLM-…``) and each key of ``sources`` to the source's page; any
    other ID stays plain text."""
    pieces: list[str] = []
    end = 0
    for match in CITED.finditer(text):
        cited = match.group(0)
        if cited in claims:
            href = f"#{cited}"
        elif cited in sources:
            href = reverse("source-detail", args=[cited])
        else:
            continue
        pieces.append(escape(text[end : match.start()]))
        pieces.append(f'<a href="{escape(href)}">{escape(cited)}</a>')
        end = match.end()
    pieces.append(escape(text[end:]))
    return mark_safe("".join(pieces))


_TAG = re.compile(r"(<[^>]*>)")


def mark_withdrawn(html: str, withdrawn: list[tuple[str, str]]) -> SafeString:
    """Sanitized ``html`` (a lede, an account) with what it says of withdrawn claims
    marked: a withdrawn claim's statement, where the text repeats it, struck through and
    flagged with a link to the claim; a withdrawn claim's ID, flagged. Only text between
    tags is touched."""
    if not withdrawn:
        return mark_safe(html)
    pieces = _TAG.split(str(html))
    for index, piece in enumerate(pieces):
        if not piece or piece.startswith("<"):
            continue
        for claim_id, statement in withdrawn:
            flag = (
                f' <a class="withdrawn-flag" href="#{escape(claim_id)}">'
                f"withdrawn: {escape(claim_id)}</a>"
            )
            sentence = str(escape(statement.strip()))
            for said in (sentence, sentence.rstrip(".")):
                if said and said in piece:
                    piece = piece.replace(
                        said, f'<del class="withdrawn-claim">{said}</del>{flag}', 1
                    )
                    break
            else:
                piece = re.sub(
                    rf"\b{re.escape(claim_id)}\b(?!-)",
                    lambda m: f'{m.group(0)} <span class="withdrawn-flag">(withdrawn)</span>',
                    piece,
                )
        pieces[index] = piece
    return mark_safe("".join(pieces))


def normalized_text(text: str) -> str:
    return " ".join(text.split())


def repeated_texts(text: str, shown: list[tuple[str, str]]) -> list[str]:
    """The names of the texts shown earlier on the page that ``text`` is made of, one after
    another (whitespace aside), or [] if it says anything else. ``shown``: (name, text)."""
    rest = normalized_text(text)
    names: list[str] = []
    while rest:
        for name, earlier in shown:
            earlier = normalized_text(earlier)
            if earlier and rest.startswith(earlier) and name not in names:
                rest = rest[len(earlier) :].strip()
                names.append(name)
                break
        else:
            return []
    return names


@dataclass
class CasePage:
    """Everything the record page shows, section by section in the seed's order."""

    document: dict[str, Any]
    key: str
    title: str
    summary: str
    summary_html: str  # the lede as shown (shortened), a withdrawn claim's words marked
    status: str
    status_label: str
    tags: list[str]
    scope_note_html: str
    scope: dict[str, Any]
    own_figures: list[dict[str, Any]]
    attributions: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    incoming: list[dict[str, Any]]
    assessment: AssessmentView | None
    earlier_assessments: list[AssessmentView]
    basis_html: str
    basis_repeats: list[str]  # the texts above that the basis repeats: shown once, named here
    narrative_repeats_reason: bool  # the narrative is the ungraded reason again: shown once
    limits_html: str
    account_html: str
    claims: list[dict[str, Any]]
    controls: list[dict[str, Any]]
    control_legend: list[dict[str, Any]]
    unknowns: list[dict[str, Any]]
    unknown_legend: list[dict[str, Any]]
    reproduction: list[dict[str, Any]]
    sources: list[SourceView]
    # the components the case is about (``affected_view`` of each entry, with its component)
    affected: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)  # material_history_rows
    revision: int | None = None
    as_of: Revision | None = None  # set when showing a past revision
    citation: dict[str, Any] | None = None  # citation.citation_block of the revision shown
    released: bool = False  # the released view: link only published revisions


# How a range's events read on a page.
EVENT_WORDS = {
    "introduced": "from {}",
    "fixed": "fixed in {}",
    "last_affected": "up to and including {}",
    "limit": "(searched up to {})",
}


def range_words(range_: dict[str, Any]) -> str:
    """A range in words: ``from the first version, fixed in 0.5.3``."""
    words = []
    for event in range_.get("events", []):
        for name, version in event.items():
            shown = "the first version" if name == "introduced" and version == "0" else version
            words.append(EVENT_WORDS.get(name, name + " {}").format(shown))
    return ", ".join(words)


def affected_view(entry: dict[str, Any], scheme: str) -> dict[str, Any]:
    """What a page shows of an affected entry beside its fields: its status and ranges in
    words, and whether it states any version at all."""
    return {
        "status_label": label("affected_status", entry["status"]),
        "range_words": [range_words(r) for r in entry["ranges"]],
        "no_versions": not entry["ranges"] and not entry["versions"],
        "scheme": scheme,
    }


def affected_entries(
    document: dict[str, Any], *, released: bool, release: Release | int | None = None
) -> list[dict[str, Any]]:
    """The case's affected entries as its page shows them, each with its component's name
    and scheme (working or released, as the page): one query for all the components."""
    entries = document.get("affected", [])
    if not entries:
        return []
    keys = {entry["component"] for entry in entries}
    if released:
        found = public.released_documents("component", keys, release)
    else:
        found = components_by_key(keys)
    views = []
    for entry in entries:
        component = found.get(entry["component"])
        scheme = component["version_scheme"] if component else ""
        views.append(
            {
                **entry,
                **affected_view(entry, scheme),
                "component_name": component["name"] if component else entry["component"],
                "component_missing": component is None,
            }
        )
    return views


def cited_source_keys(document: dict[str, Any]) -> list[str]:
    """Every source the case cites, in order of first appearance."""
    keys: dict[str, None] = {}
    for claim in document["claims"]:
        for link in claim["evidence"]:
            keys.setdefault(link["source"])
    for assessment in document["assessments"]:
        for key in assessment["evidence_basis"]["sources"]:
            keys.setdefault(key)
    return list(keys)


def method_from_document(document: dict[str, Any]) -> AssessmentMethod:
    """An assessment method as a (released) document states it, read like the live one."""
    fields = ("key", "title", "dimensions", "impact")
    return AssessmentMethod(
        **{name: document[name] for name in fields}, status=document.get("status", "active")
    )


def released_methods(
    keys: set[str] | list[str], release: Release | int | None = None
) -> dict[str, AssessmentMethod]:
    """The named methods as a release (else the latest) published them, by key."""
    documents = public.released_documents("method", keys, release)
    return {key: method_from_document(document) for key, document in documents.items()}


CHANGED_SHOWN = 8  # changed fields named on a history line; the rest are counted


def changed_text(paths: list[str]) -> str:
    """``status, claims[CLM-X].statement, assessments``: what a revision changed, compactly
    (``records.changed_fields``), the first few named and the rest counted."""
    more = len(paths) - CHANGED_SHOWN
    shown = ", ".join(paths[:CHANGED_SHOWN])
    return f"{shown} and {more} more" if more > 0 else shown


def record_dated(dated_on: dt.date | None, created_at: dt.datetime) -> dt.date | None:
    """The date a revision's document gives its record, when it differs from the day the
    revision was recorded (a record loaded from a bundle keeps its own date)."""
    if dated_on is None or dated_on == created_at.astimezone(dt.UTC).date():
        return None
    return dated_on


def material_history_rows(
    kind: str, key: str, entries: list[dict[str, Any]], *, released: bool
) -> list[dict[str, Any]]:
    """``public.material_history`` entries for the templates (``records/_history_line.html``),
    with their action's label, what they changed, the record's own date and ``url``: the
    revision's page, or "" where the reader may not open it (in the released view, only
    published revisions open, and authors are not named)."""
    approvals = approvals_of_numbers(kind, key, [entry["revision"] for entry in entries])
    return [
        {
            **entry,
            **_review(approvals.get(entry["revision"])),
            "action_label": label("revision_action", entry["action"]),
            "author": "" if released else entry["author"],
            "changed_text": changed_text(entry["changed"]),
            "record_dated": record_dated(entry["dated_on"], entry["created_at"]),
            "url": record_kinds.get(kind).revision_path(key, entry["revision"])
            if entry["published"] or not released
            else "",
        }
        for entry in entries
    ]


def revision_rows(
    kind: str, key: str, revisions: list[Revision], older: Revision | None, *, full: bool = True
):
    """A page of a record's revisions (newest first, with their authors) for
    ``records/_history_line.html``; on the ``full`` history, each with its snapshot's hash
    and a link to what it changed from the revision before it (``older``: the one before
    the page's oldest)."""
    rows = []
    approvals = approvals_of_numbers(kind, key, [revision.number for revision in revisions])
    for i, revision in enumerate(revisions):
        previous = revisions[i + 1] if i + 1 < len(revisions) else older
        previous = previous if full else None
        rows.append(
            {
                "revision": revision.number,
                "url": record_kinds.get(kind).revision_path(key, revision.number),
                "action": revision.action,
                "action_label": label("revision_action", revision.action),
                "material": revision.material,
                "summary": revision.summary,
                "author": revision.author.get_username(),
                "changed_text": changed_text(revision.changed),
                "created_at": revision.created_at,
                "record_dated": record_dated(revision.dated_on, revision.created_at),
                "diff_url": record_kinds.get(kind).diff_path(key, previous.number, revision.number)
                if previous
                else "",
                "diff_label": f"Changes from revision {previous.number}" if previous else "",
                "hash": revision.snapshot_sha256 if full else "",
                **_review(approvals.get(revision.number)),
            }
        )
    return rows


def _review(approval: Approval | None) -> dict[str, Any]:
    """Who reviewed a revision and when (docs/review.md), for its history line."""
    if approval is None:
        return {"review": "", "reviewed_at": None, "self_approved": False}
    return {
        "review": review_label(approval),
        "reviewed_at": approval.created_at,
        "self_approved": approval.self_approved,
    }


def case_page(
    document: dict[str, Any],
    *,
    revision: int | None,
    as_of: Revision | None = None,
    history: list[dict[str, Any]] | None = None,
    citation: dict[str, Any] | None = None,
    released: bool = False,
    release: Release | int | None = None,
) -> CasePage:
    """Build the record page of a case document.

    The records it names (sources, methods, scope rules, figures of other cases) come from
    the working state — for a past revision (``as_of``), its sources as they were then — or,
    in the ``released`` view, as ``release`` (else the latest release) published them.
    """
    keys = cited_source_keys(document)
    method_keys = {a["method"] for a in document["assessments"]}
    if released:
        source_docs = public.released_documents("source", keys, release)
        methods = released_methods(method_keys, release)
        scope = public.released_scope(document, release)
    else:
        if as_of is not None:
            source_docs = sources_as_of(keys, as_of.number)
            missing = [k for k in keys if k not in source_docs]
            if missing:
                source_docs.update(sources_by_key(missing))
        else:
            source_docs = sources_by_key(keys)
        methods = methods_by_key(method_keys)
        scope = scope_of_document(document)
    sources = {k: source_view(k, source_docs.get(k)) for k in keys}
    figures = scope["figures"]
    # long texts are cut on the page; the whole record is one link away
    full_text_url = (
        reverse("case-revision-json", args=[document["key"], revision])
        if as_of is not None and revision is not None
        else reverse("case-record-json", args=[document["key"]])
    )

    assessments = [
        assessment_view(i, a, methods, sources, full_text_url=full_text_url)
        for i, a in enumerate(document["assessments"])
    ]
    runs = runs_by_claim(document["reproduction_runs"])
    withdrawn = [c["id"] for c in document["claims"] if c["status"] == "withdrawn"]
    withdrawn_statements = [
        (c["id"], c["statement"]) for c in document["claims"] if c["status"] == "withdrawn"
    ]
    withdrawals = claim_withdrawals(document["key"], withdrawn, up_to=revision) if withdrawn else {}
    claims = [
        {
            **claim,
            "runs": runs.get(claim["id"], []),
            "status_label": label("claim_status", claim["status"]),
            "basis_label": label("claim_basis", claim["basis"]),
            "origin_label": label("claim_origin", claim["origin"]),
            "withdrawn": claim["status"] == "withdrawn",
            "withdrawn_at": withdrawals.get(claim["id"], (None, False))[0],
            "withdrawn_exact": withdrawals.get(claim["id"], (None, False))[1],
            "links": [
                {
                    **link,
                    "relation_label": label("relation", link["relation"]),
                    "source_view": sources[link["source"]],
                }
                for link in claim["evidence"]
            ],
        }
        for claim in document["claims"]
    ]
    current = document["assessments"][-1] if document["assessments"] else None
    shown: list[tuple[str, str]] = []  # the texts of the assessment section, as shown
    narrative_repeats_reason = False
    if current is not None:
        reason = current["impact_ungraded_reason"] if current["impact"] is None else ""
        narrative_repeats_reason = bool(reason) and repeated_texts(
            current["narrative"], [("reason", reason)]
        ) == ["reason"]
        if not narrative_repeats_reason:
            shown.append(("the assessor's narrative", current["narrative"]))
        shown.append(("the reason the impact is ungraded", reason))
    controls, control_legend = kinds_with_definitions("control_kind", document["controls"])
    # claim IDs and source keys a control's text cites become links when they name a claim
    # of this case or a source there is (released, in the released view): one query at
    # most, for the sources the page has not read already
    cited = cited_in_controls(controls)
    claim_ids = {c["id"] for c in document["claims"]} & cited
    source_keys = {k for k in cited & set(sources) if not sources[k].missing}
    unread = {k for k in cited - set(sources) if k.startswith("SRC-")}
    if unread:
        if released:
            source_keys |= set(public.released_documents("source", unread, release))
        else:
            source_keys |= set(Source.objects.filter(key__in=unread).values_list("key", flat=True))
    for control in controls:
        control["text_html"] = linked_citations(control["text"], claim_ids, source_keys)
    unknowns, unknown_legend = kinds_with_definitions("unknown_kind", document["unknowns"])
    return CasePage(
        document=document,
        key=document["key"],
        title=document["title"],
        summary=document["summary"],
        summary_html=mark_withdrawn(
            escape(page_excerpt(document["summary"])[0]), withdrawn_statements
        ),
        status=document["status"],
        status_label=label("case_status", document["status"]),
        tags=document["tags"],
        scope_note_html=render_markdown(document["scope_note"], full_text_url=full_text_url),
        scope=scope,
        own_figures=[
            {
                **f,
                "value_text": number_text(f["value"]),
                "text": figure_text(f["value"], f["unit"]),
                "scope_label": label("figure_scope", f["scope"]),
            }
            for f in document["figures"]
        ],
        attributions=[
            {
                **a,
                "role_label": label("attribution_role", a["role"]),
                "figure_view": figures.get(a["figure"]),
                "value_text": number_text(figures[a["figure"]]["value"])
                if a["figure"] in figures
                else "",
                "text": figure_text(figures[a["figure"]]["value"], figures[a["figure"]]["unit"])
                if a["figure"] in figures
                else "",
            }
            for a in document["attributions"]
        ],
        relations=[
            {**r, "kind_label": label("case_relation", r["kind"])} for r in document["relations"]
        ],
        incoming=[
            {**r, "kind_label": label("case_relation", r["kind"])} for r in scope["incoming"]
        ],
        assessment=assessments[-1] if assessments else None,
        earlier_assessments=list(reversed(assessments[:-1])),
        basis_html=render_markdown(document["basis"], full_text_url=full_text_url),
        basis_repeats=repeated_texts(document["basis"], shown),
        narrative_repeats_reason=narrative_repeats_reason,
        limits_html=render_markdown(document["limits"], full_text_url=full_text_url),
        account_html=mark_withdrawn(
            render_markdown(document["account"], full_text_url=full_text_url),
            withdrawn_statements,
        ),
        claims=claims,
        controls=controls,
        control_legend=control_legend,
        unknowns=unknowns,
        unknown_legend=unknown_legend,
        reproduction=document["reproduction_runs"],
        sources=list(sources.values()),
        affected=affected_entries(document, released=released, release=release),
        history=history or [],
        revision=revision,
        as_of=as_of,
        citation=citation,
        released=released,
    )
