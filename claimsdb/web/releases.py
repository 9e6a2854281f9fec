"""Release pages, the release feed and citation downloads.

Anyone may read releases; publishing needs the reviewer role (checked again by the
service inside its transaction).
"""

from __future__ import annotations

import json

from django import forms
from django.contrib.auth.views import redirect_to_login
from django.contrib.syndication.views import Feed
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.feedgenerator import Atom1Feed

from claimsdb import citation, public, selectors
from claimsdb.models import Release, ReleaseChange, Revision
from claimsdb.records import PermissionDenied, RuleViolations
from claimsdb.services.permissions import has_role
from claimsdb.services.releases import release_plan, release_publish

from .pagination import paginate

FEED_SIZE = 50
CITATION_FORMATS = {
    "bib": ("application/x-bibtex; charset=utf-8", citation.bibtex),
    "json": ("application/vnd.citationstyles.csl+json; charset=utf-8", citation.csl_json),
}


def release_path(number: int) -> str:
    return f"/releases/{number}/"


def release_list(request: HttpRequest) -> HttpResponse:
    """Every release, newest first: number, date, notes, counts by change."""
    pages = paginate(request, Release.objects.order_by("-number"), noun="release")
    # the counts of the page's releases only: counting every release's entries to cut a
    # page would read the whole release history
    counted = public.release_list().filter(number__in=[r.number for r in pages.items])
    releases = [
        {
            "release": release,
            "counts": public.release_counts(release),
            "url": release_path(release.number),
        }
        for release in counted
    ]
    return render(
        request,
        "releases/list.html",
        {
            "pages": pages,
            "releases": releases,
            "may_publish": has_role(request.user, "reviewer"),
        },
    )


def release_detail(request: HttpRequest, number: int) -> HttpResponse:
    """What one release changed: a page of its changed entries, then (folded) a page of the
    unchanged ones (``?page=`` and ``?unchanged_page=``)."""
    release = public.release_get(number)
    if release is None:
        raise Http404(f"no release {number}")
    changed = paginate(
        request, selectors.release_entry_list(release, changed=True), noun="changed record"
    )
    unchanged = paginate(
        request,
        selectors.release_entry_list(release, changed=False),
        noun="unchanged record",
        parameter="unchanged_page",
    )
    changed_entries = selectors.with_previous_revisions(release, changed.items)
    titles = public.revision_titles([e.revision_id for e in changed_entries])
    return render(
        request,
        "releases/detail.html",
        {
            "release": release,
            "counts": public.release_counts(release),
            "changed_pages": changed,
            "changed": [
                _entry_row(e, titles.get(e.revision_id, ""), e.previous_revision)
                for e in changed_entries
            ],
            "unchanged_pages": unchanged,
            # an unchanged entry publishes the revision the release before did
            "unchanged": [_entry_row(e, "", e.revision.number) for e in unchanged.items],
            "unchanged_open": "unchanged_page" in request.GET,
            "bundle_url": f"/api/v1/releases/{release.number}/bundle.json",
            "show_publisher": public.may_read_working_state(request.user),
        },
    )


def _entry_row(entry, title: str, previous: int | None) -> dict:
    kind, key, number = entry.record_kind, entry.record_key, entry.revision.number
    return {
        "kind": kind,
        "kind_label": entry.get_record_kind_display(),
        "key": key,
        "title": title,
        "change": entry.change,
        "revision": number,
        "previous_revision": previous,
        "record_url": public.record_path(kind, key),
        "revision_url": public.revision_path(kind, key, number),
        "diff_url": (
            public.diff_path(kind, key, previous, number)
            if previous is not None and previous != number
            else ""
        ),
    }


class PublishForm(forms.Form):
    notes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        required=False,  # the service refuses empty notes, with its code
        help_text="What this release publishes and why. Shown on the release page and feed.",
    )


def release_new(request: HttpRequest) -> HttpResponse:
    """Reviewers publish a release: a preview of what it would record, and notes."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not has_role(request.user, "reviewer"):
        raise DjangoPermissionDenied("publishing a release needs the reviewer role")
    violations = []
    form = PublishForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            release = release_publish(user=request.user, notes=form.cleaned_data["notes"])
        except RuleViolations as refused:
            violations = refused.violations
        except PermissionDenied as exc:
            raise DjangoPermissionDenied(str(exc)) from exc
        else:
            return HttpResponseRedirect(release_path(release.number))
    plan = release_plan()
    return render(
        request,
        "releases/new.html",
        {
            "form": form,
            "violations": violations,
            "plan": plan,
            "counts": plan.counts(),
            "changed_count": plan.changed_count,
            "changed": [
                {
                    "kind": e.kind,
                    "key": e.key,
                    "change": e.change,
                    "revision": e.revision,
                    "previous_revision": e.previous_revision,
                    "revision_url": public.revision_path(e.kind, e.key, e.revision),
                }
                for e in plan.changed
            ],
        },
        status=400 if violations else 200,
    )


class ReleaseFeed(Feed):
    """An Atom feed of releases, newest first, each entry linking to its release page."""

    feed_type = Atom1Feed
    title = "claimsdb releases"
    link = "/releases/"
    subtitle = "Each release publishes the ready revision of every record that changed."
    author_name = "claimsdb"

    def items(self):
        return public.release_list()[:FEED_SIZE]

    def item_title(self, item: Release) -> str:
        return f"Release {item.number}"

    def item_description(self, item: Release) -> str:
        counts = public.release_counts(item)
        summary = ", ".join(f"{counts[c]} {c}" for c in ReleaseChange.values if counts[c])
        return f"{item.notes}\n\n{summary or 'no records'}."

    def item_link(self, item: Release) -> str:
        return release_path(item.number)

    def item_pubdate(self, item: Release):
        return item.published_at

    def item_updateddate(self, item: Release):
        return item.published_at


def case_citation(request: HttpRequest, key: str, fmt: str) -> HttpResponse:
    """``/cases/<key>/cite.bib`` and ``cite.json``: the revision this user sees, or
    ``?revision=<n>`` (any revision for users with a role, released ones for others)."""
    return record_citation(request, "case", key, fmt)


def record_citation(request: HttpRequest, kind: str, key: str, fmt: str) -> HttpResponse:
    content_type, render_citation = CITATION_FORMATS[fmt]
    requested = request.GET.get("revision")
    if requested:
        if not requested.isdigit():
            raise Http404("revision must be a revision number")
        revision = Revision.objects.filter(
            record_kind=kind, record_key=key, number=int(requested)
        ).first()
        if revision is None or not public.may_see_revision(
            request.user, kind, key, revision.number
        ):
            raise Http404(f"no visible revision {requested} of {kind} {key}")
    elif public.may_read_working_state(request.user):
        revision = (
            Revision.objects.filter(record_kind=kind, record_key=key).order_by("-number").first()
        )
    else:
        revision = public.released_revision(kind, key)
    if revision is None:
        raise Http404(f"no visible {kind} {key}")
    document = json.loads(revision.snapshot)
    release = public.release_of_revision(kind, key, revision.number)
    body = render_citation(document, revision, release, base_url=request.build_absolute_uri("/"))
    response = HttpResponse(body, content_type=content_type)
    filename = f"{citation.citation_key(document, revision)}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if requested:
        public.immutable_headers(response, revision.number, request=request)
    return response
