"""Reading pages: the record page, its canonical document, history, revisions, diffs."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from claimsdb import choices, http_caching, public
from claimsdb.access import VisibleRevision
from claimsdb.citation import citation_block
from claimsdb.records import (
    RuleViolations,
    StaleRevision,
    dumps_pretty,
    loads,
    record_document,
)
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors import revisions as revision_reads
from claimsdb.selectors.coverage import case_coverage
from claimsdb.services import revert_document, revision_revert

from ..access import (
    SignInRequired,
    document_or_404,
    reader_page,
    reads_released,
    request_has_role,
    require_visible_record,
    revision_or_404,
)
from ..diffs import document_changes, revert_effects
from ..editing import simple_service_call
from ..forms import RevertForm
from ..pagination import paginate
from ..presenters import case_page, material_history_rows, revision_rows, source_view

RECORD_LABELS = dict(choices.RecordKind.choices)
RECORD_PAGE_HISTORY = 50


def record_url(kind: str, key: str, page: str = "detail", *args) -> str:
    return reverse(record_kinds.get(kind).url_name(page), args=[key, *args])


def case_detail(request: HttpRequest, key: str) -> HttpResponse:
    """The record page, sections in the seed's order: the working state, or the released
    revision for the public."""
    visible = document_or_404(request, "case", key)
    history = public.material_history("case", key, public=visible.released)
    page = case_page(
        visible.document,
        revision=visible.revision,
        history=material_history_rows(
            "case", key, history[:RECORD_PAGE_HISTORY], released=visible.released
        ),
        citation=_citation(request, "case", key, visible.document, visible.revision),
        released=visible.released,
    )
    return render(
        request,
        "cases/detail.html",
        {
            "page": page,
            "coverage": case_coverage(visible.document, released=visible.released),
            "can_edit": request_has_role(request, "analyst"),
            "can_review": request_has_role(request, "reviewer"),
        },
    )


def _citation(request, kind: str, key: str, document: dict, number: int | None):
    if number is None:
        return None
    return citation_block(kind, key, document, number, base_url=request.build_absolute_uri("/"))


def case_record_json(request: HttpRequest, key: str) -> HttpResponse:
    """ "Inspect the record": the canonical document this user sees."""
    visible = document_or_404(request, "case", key)
    response = HttpResponse(
        dumps_pretty(visible.document), content_type="application/json; charset=utf-8"
    )
    if visible.revision is not None:
        response["ETag"] = http_caching.revision_etag(visible.revision)
    return response


def case_revision_json(request: HttpRequest, key: str, number: int) -> HttpResponse:
    """A past revision's canonical document, as the ledger holds it (for the public, a
    released one, cacheable for ever)."""
    visible = revision_or_404(request, "case", key, number)
    not_modified = http_caching.released_not_modified(request, number)
    if not_modified is not None:
        return not_modified
    response = HttpResponse(
        dumps_pretty(loads(visible.revision.snapshot)),
        content_type="application/json; charset=utf-8",
    )
    response["ETag"] = http_caching.revision_etag(number)
    http_caching.immutable_headers(response, number, request=request)
    return response


def record_history(request: HttpRequest, key: str, kind: str = "case") -> HttpResponse:
    """Every revision of a record, newest first, with links to each and to its changes. The
    public sees the material revisions up to the released one, and opens the published ones."""
    require_visible_record(request, kind, key)
    context = {
        "kind": kind,
        "kind_label": RECORD_LABELS[kind],
        "key": key,
        "record_url": record_url(kind, key),
        "diff_form_url": record_url(kind, key, "diff-form"),
    }
    if reads_released(request):
        return render(
            request, "records/history.html", {**context, **_released_history(request, kind, key)}
        )
    revisions = revision_reads.record_revisions(kind, key)
    pages = paginate(request, revisions, noun="revision")
    shown = pages.items
    # the revision before the page's oldest, for its "changes from" link
    older = revisions.filter(number__lt=shown[-1].number).first() if shown else None
    entries = revision_rows(kind, key, list(shown), older)
    if request_has_role(request, "reviewer"):
        # newest first: the latest revision, if this page shows it, needs no revert link
        latest = shown[0].number if shown and pages.number == 1 else None
        for entry in entries:
            if entry["revision"] != latest:
                entry["revert_url"] = record_url(kind, key, "revert", entry["revision"])
    return render(
        request,
        "records/history.html",
        {
            **context,
            "pages": pages,
            "entries": entries,
            # the compare form takes any two numbers; it starts on the page's newest two
            "compare": [entry["revision"] for entry in entries[:2]],
        },
    )


def _released_history(request: HttpRequest, kind: str, key: str) -> dict:
    """The public history: material revisions, each published one linked, with a diff
    against the published revision before it."""
    history = public.material_history(kind, key, public=True)
    entries = material_history_rows(kind, key, history, released=True)
    published = [entry["revision"] for entry in entries if entry["published"]]
    for entry in entries:
        number = entry["revision"]
        earlier = [n for n in published if n < number]
        entry["diff_url"] = (
            record_url(kind, key, "diff", earlier[0], number)
            if entry["published"] and earlier
            else ""
        )
        entry["diff_label"] = "Changes from the revision published before"
    pages = paginate(request, entries, noun="revision")
    return {"released": True, "pages": pages, "entries": pages.items, "numbers": published}


def record_revision(request: HttpRequest, key: str, number: int, kind: str = "case"):
    """One revision as it was: a case rendered like its record page, other records as fields.

    A released revision's page never changes: for the public it is cacheable for ever."""
    visible = revision_or_404(request, kind, key, number)
    not_modified = http_caching.released_not_modified(request, number)
    if not_modified is not None:
        return not_modified
    response = _render_revision(request, kind, key, visible)
    http_caching.immutable_headers(response, number, request=request)
    return response


def _render_revision(request, kind, key, visible: VisibleRevision):
    revision = visible.revision
    document = loads(revision.snapshot)
    context = {
        "kind": kind,
        "kind_label": RECORD_LABELS[kind],
        "key": key,
        "revision": revision,
        "release": visible.release,
        "released": visible.released,
        # for the public, a page that never changes: nothing about later revisions
        "latest": None if visible.released else revision_reads.latest_revision_number(kind, key),
        "document": document,
        "can_review": request_has_role(request, "reviewer"),
        "record_url": record_url(kind, key),
        "history_url": record_url(kind, key, "history"),
        "revert_url": record_url(kind, key, "revert", revision.number),
    }
    if kind == "case":
        context["page"] = case_page(
            document,
            revision=revision.number,
            as_of=revision,
            citation=_citation(request, kind, key, document, revision.number),
            released=visible.released,
            release=visible.release,
        )
        return render(request, "cases/revision.html", context)
    context["fields"] = _record_fields(kind, document)
    return render(request, "records/revision.html", context)


def _record_fields(kind: str, document: dict) -> list[tuple[str, str]]:
    if kind == "source":
        view = source_view(document["key"], document)
        return [
            ("Title", view.title),
            ("Kind", view.kind_label),
            ("Publisher", view.publisher),
            ("URL", view.url),
            ("Published on", document["published_on"] or ""),
            ("Accessed on", document["accessed_on"] or ""),
            ("Reliability", view.reliability_label),
            ("Notes", view.notes),
            ("Status", view.status),
        ]
    if kind == "rule":
        return [
            ("Kind", document["kind"].replace("_", "-")),
            ("Status", document["status"]),
            ("Figure", document["figure"]),
            ("Case", document["case"]),
            ("Reason", document["reason"]),
        ]
    if kind == "component":
        return [
            ("Name", document["name"]),
            ("Kind", document["kind"].replace("_", " ")),
            ("Package URL", document["purl"]),
            ("Version scheme", document["version_scheme"]),
            ("Homepage", document["homepage"]),
            ("Also called", ", ".join(document["aliases"])),
            (
                "Same component as",
                ", ".join(
                    r["component"] + (f" ({r['note']})" if r["note"] else "")
                    for r in document["relations"]
                ),
            ),
            ("Status", document["status"]),
        ]
    rows = [("Title", document["title"]), ("Status", document.get("status", ""))]
    for dimension in document["dimensions"]:
        values = ", ".join(f"{v['label']} ({v['key']})" for v in dimension["values"])
        rows.append((f"{dimension['label']} ({dimension['key']})", values))
    impact = document["impact"]
    labels = impact.get("labels", {})
    rows.append(
        (
            "Impact scale",
            f"{impact.get('min')}–{impact.get('max')}: "
            + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())),
        )
    )
    return rows


def revision_revert_view(request: HttpRequest, key: str, number: int, kind: str = "case"):
    """The revert page (reviewers). GET shows what a revert to revision ``number`` would
    change, from the record as it is now, with a form to confirm; POST writes it, as a new
    ``revert`` revision through the same rules. The form carries the revision the preview
    was made from: if the record changed since, nothing is written and the page shows the
    revert again from the new state."""
    if not request.user.is_authenticated:
        raise SignInRequired
    if not request_has_role(request, "reviewer"):
        raise PermissionDenied("reverting needs the reviewer role")
    visible = revision_or_404(request, kind, key, number)
    if request.method != "POST":
        return _render_revert(request, kind, key, visible)
    form = RevertForm(request.POST)
    if not form.is_valid():
        return _render_revert(request, kind, key, visible, data=request.POST, status=400)

    def refused(error: RuleViolations):
        if isinstance(error, StaleRevision):
            return _render_revert(
                request,
                kind,
                key,
                visible,
                data=request.POST,
                stale=error,
                stale_from=form.cleaned_data["base_revision"],
                status=409,
            )
        return _render_revert(
            request, kind, key, visible, data=request.POST, violations=error.violations, status=422
        )

    result = simple_service_call(
        request,
        lambda: revision_revert(
            user=request.user,
            number=number,
            summary=form.cleaned_data["summary"],
            material=form.cleaned_data["material"],
            expected_revision=form.cleaned_data["base_revision"],
        ),
        on_refused=refused,
    )
    if isinstance(result, HttpResponse):
        return result
    if result.revision is None:
        messages.info(request, f"The record already reads as revision {number}: nothing changed.")
    else:
        messages.success(
            request, f"Reverted to revision {number} as revision {result.revision.number}."
        )
    return HttpResponseRedirect(record_url(kind, key))


def _render_revert(
    request: HttpRequest,
    kind: str,
    key: str,
    visible: VisibleRevision,
    *,
    data=None,
    stale: StaleRevision | None = None,
    stale_from: int | None = None,
    violations=(),
    status: int = 200,
) -> HttpResponse:
    """The revert preview: the record now → the record the revert writes (the document
    ``revision_revert`` builds), in words at the top and field by field below."""
    # the number first: if a save lands between the two reads, the form's base is the
    # older one and confirming is refused as stale rather than reverting unseen changes
    current_number = revision_reads.latest_revision_number(kind, key)
    current = record_document(kind, key)
    if current is None or current_number is None:
        raise Http404(f"no {kind} {key}")
    revision = visible.revision
    result = revert_document(revision, current)
    if data is None:
        form = RevertForm(
            initial={
                "summary": f"Revert to revision {revision.number}",
                "material": True,
                "base_revision": current_number,
            }
        )
    else:
        if stale is not None:
            # the page now previews from the new state; confirming again reverts that
            data = data.copy()
            data["base_revision"] = str(current_number)
        form = RevertForm(data)
    stale_rows = []
    if stale is not None and stale_from is not None:
        seen = revision_reads.record_revision(kind, key, stale_from)
        if seen is not None:
            stale_rows = document_changes(loads(seen.snapshot), current)
    rows = document_changes(current, result)
    kind_label = RECORD_LABELS[kind]
    return render(
        request,
        "records/revert.html",
        {
            "kind": kind,
            "kind_label": kind_label,
            "key": key,
            "revision": revision,
            "current": revision_reads.record_revision(kind, key, current_number),
            "effects": revert_effects(kind_label, current, result),
            "rows": rows,
            "form": form,
            "stale": stale,
            "stale_from": stale_from,
            "stale_rows": stale_rows,
            "violations": violations,
            "record_url": record_url(kind, key),
            "history_url": record_url(kind, key, "history"),
            "revision_url": record_url(kind, key, "revision", revision.number),
            "revert_url": record_url(kind, key, "revert", revision.number),
        },
        status=status,
    )


revision_revert_page = reader_page(revision_revert_view)


def record_diff(request: HttpRequest, key: str, a: int, b: int, kind: str = "case"):
    """What changed between two revisions of one record, field by field (for the public,
    between two released revisions)."""
    old = revision_or_404(request, kind, key, a)
    new = revision_or_404(request, kind, key, b)
    rows = document_changes(loads(old.revision.snapshot), loads(new.revision.snapshot))
    return render(
        request,
        "records/diff.html",
        {
            "kind": kind,
            "kind_label": RECORD_LABELS[kind],
            "key": key,
            "old": old.revision,
            "new": new.revision,
            "old_release": old.release,
            "new_release": new.release,
            "released": new.released,
            "rows": rows,
            "record_url": record_url(kind, key),
            "history_url": record_url(kind, key, "history"),
        },
    )


def record_diff_form(request: HttpRequest, key: str, kind: str = "case"):
    """The history page's compare form (GET ?a=&b=) → the diff page."""
    require_visible_record(request, kind, key)
    try:
        a, b = int(request.GET["a"]), int(request.GET["b"])
    except (KeyError, ValueError):
        return HttpResponseRedirect(record_url(kind, key, "history"))
    a, b = min(a, b), max(a, b)
    return HttpResponseRedirect(record_url(kind, key, "diff", a, b))
