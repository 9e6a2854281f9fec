"""The start page's search and the case list: the working state, or the released view."""

from __future__ import annotations

import datetime as dt
import functools
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.utils.formats import date_format
from django.utils.text import Truncator

from claimsdb import access, choices, public, search
from claimsdb.exports.lists import list_csv, released_list_batches, working_list_batches
from claimsdb.models import AssessmentMethod, SearchKind
from claimsdb.records.schema import normalize_tag
from claimsdb.records.stream import utf8_chunks
from claimsdb.selectors.cases import (
    case_list_filtered,
    case_list_rows,
    case_tags,
    case_tags_query,
)
from claimsdb.selectors.methods import method_list
from claimsdb.selectors.pages import page_keys
from claimsdb.selectors.revisions import recent_revisions

from ..access import reads_released, request_has_role
from ..pagination import ListPage, paginate, paginate_together
from ..presenters import LABELS, detail_url, label, method_from_document, parse_date
from ..rows import render_rows

RECENT_RELEASES = 5

# The case list's rows and the search hits render through Jinja2 templates
# (templates/rows/: claimsdb/web/rows.py), which escape every value as Django's do; the
# rest of both pages through Django's. Markup built here by hand would be faster still, but
# not worth escaping by hand (bench/list_render.py, bench/README.md).


def index(request: HttpRequest) -> HttpResponse:
    """Search across cases, claims and sources; without a query, the latest revisions, or
    for the public the latest releases."""
    query = request.GET.get("q", "").strip()
    released = reads_released(request)
    context = {"query": query, "results": None, "released": released}
    if query:
        results = search.search(
            query,
            released=released,
            kind=request.GET.get("kind", ""),
            page=request.GET.get("page", 1),
        )
        context["results"] = results
        context["hits_markup"] = render_rows(
            "search/_hits.html",
            {"hits": [search_row(hit) for hit in results.page], "page": results.page},
        )
        context["kind_tabs"] = [
            {"kind": "", "label": "everything", "count": results.total},
            *(
                {"kind": kind, "label": f"{SearchKind(kind).label}s", "count": count}
                for kind, count in results.counts.items()
            ),
        ]
    # a results page shows the results alone
    if not query and released:
        context["releases"] = [
            {"release": release, "counts": public.release_counts(release)}
            for release in public.release_list()[:RECENT_RELEASES]
        ]
    elif not query:
        context["recent"] = list(recent_revisions(20))
    return render(request, "index.html", context)


def search_row(hit: search.SearchHit) -> dict:
    """A search hit as the start page lists it (``search/_hits.html``): its labels in the
    vocabularies' words."""
    # cases and claims have their status vocabularies (``case_status``); a source's is its own
    vocabulary = f"{hit.kind}_status"
    if hit.kind == "source":
        url = detail_url("source-detail", hit.key)
    elif hit.kind == "component":
        url = detail_url("component-detail", hit.key)
    else:  # a claim is shown in its case
        url = detail_url("case-detail", hit.case_key if hit.kind == "claim" else hit.key)
    return {
        "hit": hit,
        "url": url,
        "status_label": label(vocabulary, hit.status) if vocabulary in LABELS else hit.status,
        "kind_label": label("source_kind", hit.source_kind) if hit.source_kind else "",
    }


def _assessment_profile(assessment: dict | None, labels: dict) -> list[tuple[str, str]]:
    """(dimension label, value label) of an assessment's values, in its method's words."""
    if assessment is None:
        return []
    method_labels = labels.get(assessment["method"], {})
    profile = []
    for dim_key, value in assessment["values"].items():
        dim_label, value_labels = method_labels.get(dim_key, (dim_key, {}))
        profile.append((dim_label, value_labels.get(value, value)))
    return profile


def case_row(key: str, document_fields: dict, assessment: dict | None, labels: dict) -> dict:
    """What one row of the case list shows (``cases/_list_rows.html``), its texts put
    together here rather than in the template: the page renders fifty rows, and each
    template tag costs more than this."""
    profile = _assessment_profile(assessment, labels)
    meta = []
    if not profile:  # an assessment without values reads as none, as it always has
        meta.append("not assessed")
    else:
        meta.extend(f"{name}: {value}" for name, value in profile)
        impact = assessment["impact"]
        meta.append(f"impact {'ungraded' if impact is None else impact}")
        meta.append(f"assessed {_short_date(assessment['assessed_on'])}")
    claims = document_fields["claim_count"]
    meta.append(f"{claims} claim{pluralize(claims)}")
    if document_fields["revision"]:
        meta.append(f"revision {document_fields['revision']}")
    return {
        "key": key,
        "url": detail_url("case-detail", key),
        **document_fields,
        # the tag filter's link of each tag (the template's ``urlencode``)
        "tag_links": [(tag, quote(tag, safe="/")) for tag in document_fields["tags"]],
        "status_label": label("case_status", document_fields["status"]),
        "summary_shown": _summary_shown(document_fields["summary"]),
        "profile": profile,
        "impact": None if assessment is None else assessment["impact"],
        "assessed_on": None if assessment is None else assessment["assessed_on"],
        "meta": " · ".join(meta),
    }


@functools.lru_cache(maxsize=1024)
def _short_date(day: dt.date) -> str:
    """``date_format(day, "M j, Y")``: a page of fifty rows holds few distinct dates, and
    Django's formatting of one costs more than looking it up."""
    return date_format(day, "M j, Y")


SUMMARY_CHARS = 260  # of a case's summary in the list


def _summary_shown(summary: str) -> str:
    """``Truncator(summary).chars(SUMMARY_CHARS)``, which gives a summary no longer than
    that back as it is (NFC-normalized) after looking at every character of it."""
    normalized = unicodedata.normalize("NFC", summary)
    if len(normalized) <= SUMMARY_CHARS:
        return normalized
    return Truncator(summary).chars(SUMMARY_CHARS)


def _working_case_rows(cases: list[dict], labels: dict) -> list[dict]:
    """Rows of ``selectors.cases.case_list_rows`` as the list shows them."""
    return [
        case_row(
            case["key"],
            {
                "status": case["status"],
                "title": case["title"],
                "summary": case["summary"],
                "tags": case["tags"],
                "claim_count": case["claim_count"],
                "revision": case["latest_revision"],
            },
            case["assessment"],
            labels,
        )
        for case in cases
    ]


def _released_case_rows(records, labels: dict) -> list[dict]:
    rows = []
    for key, document, revision in records:
        current = document["assessments"][-1] if document["assessments"] else None
        fields = {
            "status": document["status"],
            "title": document["title"],
            "summary": document["summary"],
            "tags": document["tags"],
            "claim_count": sum(c["status"] != "withdrawn" for c in document["claims"]),
            "revision": revision.number,
        }
        assessment = None
        if current is not None:
            assessment = {**current, "assessed_on": parse_date(current["assessed_on"])}
        rows.append(case_row(key, fields, assessment, labels))
    return rows


@dataclass
class CaseListFilters:
    """What the case list filters by, read from the query string as the page offers it:
    a value the page does not offer is ignored (as its form could not have sent it)."""

    released: bool
    methods: list[AssessmentMethod]
    tags: list[str]
    dimensions: dict[str, dict]
    status: str
    tag: str
    values: dict[str, str]
    component: str = ""
    affected_status: str = ""
    # the list's page, when it could be read with the methods and tags (no filter to check)
    page: ListPage | None = None

    @property
    def affected(self) -> dict[str, str]:
        """The component filters, as the case selectors take them."""
        return {"component": self.component, "affected_status": self.affected_status}


def case_list_filters(request: HttpRequest, *, with_page: bool = False) -> CaseListFilters:
    """The filters of the query string; ``with_page``: the list's page too, read in the same
    round of queries as the methods and tags when no filter needs checking first."""
    released = reads_released(request)
    unfiltered: ListPage | None = None  # the page, when read with the methods and tags
    if released:
        # methods are few: one plain query rather than a streaming cursor's three trips
        methods: list[AssessmentMethod] = [
            method_from_document(document)
            for _, document, _ in public.released_records("method")[:]
        ]
        tags = public.released_tags()
    elif (
        not with_page
        or request.GET.get("tag")
        or request.GET.get("component")
        or request.GET.get("affected_status")
        or any(name.startswith("a.") for name in request.GET)
    ):
        # the tag and the assessment filters are checked against the tags in use and the
        # methods' vocabularies before the cases are filtered with them
        methods = list(method_list())
        tags = case_tags()
    else:
        # no filter to check: the methods, the tags in use, the count and the page are read
        # in one round of queries (on PostgreSQL one round trip)
        status = request.GET.get("status", "")
        cases = case_list_filtered(status=status if status in choices.CaseStatus.values else "")
        unfiltered, found = paginate_together(
            request,
            page_keys(cases),
            {"methods": method_list(), "tags": case_tags_query()},
            noun="case",
            load=case_list_rows,
        )
        methods = found["methods"]
        tags = [name for (name,) in found["tags"]]
    dimensions: dict[str, dict] = {}
    for method in methods:
        for dimension in method.dimensions:
            entry = dimensions.setdefault(
                dimension["key"],
                {"key": dimension["key"], "label": dimension["label"], "values": {}},
            )
            for value in dimension["values"]:
                entry["values"].setdefault(value["key"], value["label"])
    status = request.GET.get("status", "")
    if released or status not in choices.CaseStatus.values:
        status = ""  # every released case is ready
    tag = normalize_tag(request.GET.get("tag", ""))  # tags are stored in their normal form
    if tag not in tags:
        tag = ""
    values = {}
    for key, dimension in dimensions.items():
        chosen = request.GET.get(f"a.{key}", "")
        if chosen in dimension["values"]:
            values[key] = chosen
        dimension["chosen"] = values.get(key, "")
        dimension["options"] = list(dimension["values"].items())
    component = request.GET.get("component", "").strip()[:100]
    affected_status = request.GET.get("affected_status", "")
    if affected_status not in choices.AffectedStatus.values:
        affected_status = ""
    return CaseListFilters(
        released,
        methods,
        tags,
        dimensions,
        status,
        tag,
        values,
        component,
        affected_status,
        unfiltered,
    )


def case_list(request: HttpRequest) -> HttpResponse:
    """Cases, filtered by status, tag, a component and what a case says of it, and the
    values of their current assessment (for the public: released cases, by tag, component
    and assessment)."""
    chosen = case_list_filters(request, with_page=True)
    released, methods, tags, dimensions = (
        chosen.released,
        chosen.methods,
        chosen.tags,
        chosen.dimensions,
    )
    status, tag, values = chosen.status, chosen.tag, chosen.values
    component, affected_status = chosen.component, chosen.affected_status
    affected = chosen.affected
    labels = {m.key: m.dimension_labels() for m in methods}
    if released:
        records = public.released_cases(tag=tag, values=values, **affected)
        pages = paginate(request, records, noun="case")
        rows = _released_case_rows(pages.items, labels)
    else:
        if chosen.page is not None:
            pages = chosen.page
        else:
            cases = case_list_filtered(status=status, tag=tag, values=values, **affected)
            pages = paginate(request, page_keys(cases), noun="case", load=case_list_rows)
        rows = _working_case_rows(pages.items, labels)
    return render(
        request,
        "cases/list.html",
        {
            "rows_markup": render_rows("cases/_list_rows.html", {"rows": rows}),
            "pages": pages,
            "statuses": [] if released else choices.CaseStatus.choices,
            "status": status,
            "tags": tags,
            "tag": tag,
            "dimensions": list(dimensions.values()),
            "component": component,
            "affected_status": affected_status,
            "affected_statuses": choices.AffectedStatus.choices,
            "filtered": bool(status or tag or values or component or affected_status),
            "csv_query": request.GET.urlencode(),
            "can_edit": request_has_role(request, "analyst"),
        },
    )


def case_list_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every case the list's filters select (not a page), as the ``cases.csv`` table
    (docs/exports.md), by key, streamed a batch at a time."""
    chosen = case_list_filters(request)
    if chosen.released:
        entries = public.released_cases(
            tag=chosen.tag, values=chosen.values, **chosen.affected
        ).entries
        batches = released_list_batches(entries)
    else:
        visible = access.visible_records(request.user, "case")
        cases = case_list_filtered(
            status=chosen.status,
            tag=chosen.tag,
            values=chosen.values,
            cases=visible,
            **chosen.affected,
        )
        batches = working_list_batches("case", cases)
    response = StreamingHttpResponse(
        utf8_chunks(list_csv("case", batches, released=chosen.released)),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = 'attachment; filename="cases.csv"'
    return response
