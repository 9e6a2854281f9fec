"""The start page's search and the case list: the working state, or the released view."""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.formats import date_format
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from claimsdb import choices, public, search
from claimsdb.models import AssessmentMethod
from claimsdb.selectors.cases import case_list_filtered, case_list_rows, case_tags
from claimsdb.selectors.methods import method_list
from claimsdb.selectors.pages import page_keys
from claimsdb.selectors.revisions import recent_revisions

from ..access import reads_released, request_has_role
from ..pagination import paginate
from ..presenters import label, method_from_document, parse_date

RECENT_RELEASES = 5


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
        context["hits"] = [search_row(hit) for hit in results.page]
        context["kind_tabs"] = [
            {"kind": "", "label": "everything", "count": results.total},
            *(
                {"kind": kind, "label": SEARCH_KIND_LABELS[kind], "count": count}
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


SEARCH_KIND_LABELS = {"case": "cases", "claim": "claims", "source": "sources"}


def search_row(hit: search.SearchHit) -> dict:
    """A search hit as the start page lists it: its labels in the vocabularies' words."""
    vocabulary = {"case": "case_status", "claim": "claim_status"}.get(hit.kind)
    row = {
        "hit": hit,
        "status_label": label(vocabulary, hit.status) if vocabulary else hit.status,
        "kind_label": label("source_kind", hit.source_kind) if hit.source_kind else "",
    }
    row["html"] = _search_row_html(row)
    return row


def _search_row_html(row: dict) -> SafeString:
    """One hit of the start page's results: the markup ``index.html`` had for it, every
    text escaped as the template escaped it (a hit's title and text are already safe
    HTML, with their matches marked). Put together here, as the template's tags cost
    several times more for the twenty hits of a page."""
    hit, e = row["hit"], _text
    status = f' <span class="badge">{e(row["status_label"])}</span>'
    if hit.kind == "case":
        url = e(detail_url("case-detail", hit.key))
        badge = status if hit.status != "ready" else ""
        html = (
            f'<li class="hit-case"><span class="kind">case</span> <a href="{url}">'
            f'<span class="key">{e(hit.key)}</span> {e(hit.title)}</a>{badge}'
            f'<p class="muted">{e(hit.text)}</p></li>'
        )
    elif hit.kind == "claim":
        url = e(detail_url("case-detail", hit.case_key))
        html = (
            f'<li class="hit-claim"><span class="kind">claim</span> <a href="{url}#{e(hit.key)}">'
            f'<span class="key">{e(hit.key)}</span></a> <span class="badge claim-{e(hit.status)}">'
            f'{e(row["status_label"])}</span> {e(hit.text)} <span class="muted">in '
            f"{e(hit.case_key)}</span></li>"
        )
    else:
        url = e(detail_url("source-detail", hit.key))
        badge = status if hit.status != "active" else ""
        html = (
            f'<li class="hit-source"><span class="kind">source</span> <a href="{url}">'
            f'{e(hit.title)}</a> <span class="kind">{e(row["kind_label"])}</span> '
            f'<span class="muted">{e(hit.key)}</span>{badge}</li>'
        )
    if hit.kind != "source":  # the line break the template's branch for the kind ended in
        html += "\n    "
    return mark_safe(html)


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


def _case_row(key, document_fields: dict, assessment: dict | None, labels: dict) -> dict:
    """What one row of the case list shows, its texts put together here rather than in the
    template: the page renders fifty rows, and each template tag costs more than this."""
    profile = _assessment_profile(assessment, labels)
    meta = []
    if not profile:  # an assessment without values reads as none, as it always has
        meta.append("not assessed")
    else:
        meta.extend(f"{name}: {value}" for name, value in profile)
        impact = assessment["impact"]
        meta.append(f"impact {'ungraded' if impact is None else impact}")
        meta.append(f"assessed {date_format(assessment['assessed_on'], 'M j, Y')}")
    claims = document_fields["claim_count"]
    meta.append(f"{claims} claim{pluralize(claims)}")
    if document_fields["revision"]:
        meta.append(f"revision {document_fields['revision']}")
    row = {
        "key": key,
        **document_fields,
        "status_label": label("case_status", document_fields["status"]),
        "summary_shown": _summary_shown(document_fields["summary"]),
        "profile": profile,
        "impact": None if assessment is None else assessment["impact"],
        "assessed_on": None if assessment is None else assessment["assessed_on"],
        "meta": " · ".join(meta),
    }
    row["html"] = _case_row_html(row)
    return row


SUMMARY_CHARS = 260  # of a case's summary in the list
# Keys that reverse() puts in a URL as they are (every record key is one).
_PLAIN_KEY = re.compile(r"[A-Za-z0-9._~-]+")
_KEY_MARKER = "0claimsdb0key0"


def detail_url(name: str, key: str) -> str:
    """``reverse(name, args=[key])`` for the rows of a page: the route is resolved once (per
    script prefix and URL configuration) and a plain key put in its place, as reverse()
    itself would put it; any other key goes through reverse()."""
    if not _PLAIN_KEY.fullmatch(key):
        return reverse(name, args=[key])
    before, after = _route_around(name, get_script_prefix(), get_urlconf())
    return f"{before}{key}{after}"


@functools.lru_cache(maxsize=64)
def _route_around(name: str, prefix: str, urlconf: str | None) -> tuple[str, str]:
    """What ``detail_url`` puts before and after the key (``prefix`` and ``urlconf`` are
    what reverse() read them from: they are the cache's key)."""
    before, after = reverse(name, args=[_KEY_MARKER]).split(_KEY_MARKER)
    return before, after


def _summary_shown(summary: str) -> str:
    """``Truncator(summary).chars(SUMMARY_CHARS)``, which gives a summary no longer than
    that back as it is (NFC-normalized) after looking at every character of it."""
    normalized = unicodedata.normalize("NFC", summary)
    if len(normalized) <= SUMMARY_CHARS:
        return normalized
    return Truncator(summary).chars(SUMMARY_CHARS)


def _text(value: object) -> str:
    """A value as the template's ``{{ value }}`` shows it: escaped unless already safe HTML
    (``conditional_escape``, without its wrappers: the rows of a page call it hundreds of
    times)."""
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value))


def _case_row_html(row: dict) -> SafeString:
    """The inside of one row of ``cases/list.html``: the markup its template had, every
    text escaped as the template escaped it (``{{ … }}``, ``|urlencode``, ``{% url %}``).
    Put together here, as fifty rows of template tags cost several times more."""
    tags = "".join(
        f' <a class="tag" href="?tag={_text(quote(tag))}">{_text(tag)}</a>' for tag in row["tags"]
    )
    summary = f"<p>{_text(row['summary_shown'])}</p>" if row["summary"] else ""
    url = _text(detail_url("case-detail", row["key"]))
    return mark_safe(
        f'    <p class="kicker"><span class="key">{_text(row["key"])}</span> '
        f'<span class="badge status-{_text(row["status"])}">{_text(row["status_label"])}'
        f"</span>{tags}</p>\n"
        f'    <h2><a href="{url}">{_text(row["title"])}</a></h2>\n'
        f"    {summary}\n"
        f'    <p class="meta">{_text(row["meta"])}</p>'
    )


def _working_case_rows(cases: list[dict], labels: dict) -> list[dict]:
    """Rows of ``selectors.cases.case_list_rows`` as the list shows them."""
    return [
        _case_row(
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


def _released_case_matches(document: dict, tag: str, values: dict) -> bool:
    """A released case carries the tag and its current assessment has the values."""
    if tag and tag not in document["tags"]:
        return False
    current = document["assessments"][-1] if document["assessments"] else None
    chosen = current["values"] if current else {}
    return all(chosen.get(k) == v for k, v in values.items())


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
        rows.append(_case_row(key, fields, assessment, labels))
    return rows


def case_list(request: HttpRequest) -> HttpResponse:
    """Cases, filtered by status, tag and the values of their current assessment (for the
    public: released cases, by tag and assessment)."""
    released = reads_released(request)
    if released:
        records = public.released_records("case")
        methods: list[AssessmentMethod] = [
            method_from_document(document) for _, document, _ in public.released_records("method")
        ]
        tags = sorted({tag for _, document, _ in records for tag in document["tags"]})
    else:
        methods = list(method_list())
        tags = case_tags()
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
    tag = request.GET.get("tag", "")
    if tag not in tags:
        tag = ""
    values = {}
    for key, dimension in dimensions.items():
        chosen = request.GET.get(f"a.{key}", "")
        if chosen in dimension["values"]:
            values[key] = chosen
        dimension["chosen"] = values.get(key, "")
        dimension["options"] = list(dimension["values"].items())
    labels = {m.key: m.dimension_labels() for m in methods}
    if released:
        if tag or values:
            # the released documents are filtered here, not in the database
            records = [r for r in records if _released_case_matches(r.document, tag, values)]
        pages = paginate(request, records, noun="case")
        rows = _released_case_rows(pages.items, labels)
    else:
        cases = case_list_filtered(status=status, tag=tag, values=values)
        pages = paginate(request, page_keys(cases), noun="case", load=case_list_rows)
        rows = _working_case_rows(pages.items, labels)
    return render(
        request,
        "cases/list.html",
        {
            "rows": rows,
            "pages": pages,
            "statuses": [] if released else choices.CaseStatus.choices,
            "status": status,
            "tags": tags,
            "tag": tag,
            "dimensions": list(dimensions.values()),
            "filtered": bool(status or tag or values),
            "can_edit": request_has_role(request, "analyst"),
        },
    )
