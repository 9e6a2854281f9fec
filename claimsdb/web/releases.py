"""Release pages, the release feed and citation downloads.

Anyone may read releases; publishing needs the reviewer role (checked again by the
service inside its transaction).
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib.auth.views import redirect_to_login
from django.contrib.syndication.views import Feed
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.feedgenerator import Atom1Feed

from claimsdb import access, choices, citation, http_caching, public
from claimsdb.models import Release, ReleaseChange, ReleaseEntry, Revision
from claimsdb.records import PermissionDenied, RuleViolations, canonical
from claimsdb.records.kinds import record_kinds
from claimsdb.selectors.releases import release_entry_list, with_previous_revisions
from claimsdb.services.permissions import has_role
from claimsdb.services.releases import PlannedEntry, release_plan, release_publish

from .pagination import PAGE_SIZE, paginate

FEED_SIZE = 50
RECORD_KINDS = dict(choices.RecordKind.choices)
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
    changed = paginate(request, release_entry_list(release, changed=True), noun="changed record")
    unchanged = paginate(
        request,
        release_entry_list(release, changed=False),
        noun="unchanged record",
        parameter="unchanged_page",
    )
    changed_entries = with_previous_revisions(release, changed.items)
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
            "show_publisher": access.may_read_working_state(request.user),
        },
    )


def _entry_row(entry, title: str, previous: int | None) -> dict:
    return _change_row(
        entry.record_kind, entry.record_key, title, entry.change, entry.revision.number, previous
    )


def _change_row(
    kind: str, key: str, title: str, change: str, number: int, previous: int | None
) -> dict:
    """One record's line in a release's table (published or previewed): what it links to."""
    return {
        "kind": kind,
        "kind_label": RECORD_KINDS[kind],
        "key": key,
        "title": title,
        "change": change,
        "revision": number,
        "previous_revision": previous,
        "record_url": record_kinds.get(kind).record_path(key),
        "revision_url": record_kinds.get(kind).revision_path(key, number),
        "diff_url": (
            record_kinds.get(kind).diff_path(key, previous, number)
            if previous is not None and previous != number
            else ""
        ),
    }


class PublishForm(forms.Form):
    notes = forms.CharField(
        label="Release notes",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        required=False,  # the service refuses empty notes, with its code
        help_text="What this release publishes and why. Shown on the release page and feed.",
    )


def release_new(request: HttpRequest) -> HttpResponse:
    """Reviewers publish a release: a preview of what it would record (a page of its changed
    records, as the release page will list them), and notes. A refusal is shown at the
    notes field, or above the form when it is not about the notes."""
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
            for violation in refused.violations:
                if violation.path == "notes":
                    form.add_error("notes", violation.message)
                else:
                    violations.append(violation)
        except PermissionDenied as exc:
            raise DjangoPermissionDenied(str(exc)) from exc
        else:
            return HttpResponseRedirect(release_path(release.number))
    plan = PlanPages(request)
    pages = paginate(request, plan, noun="changed record")
    entries = pages.items
    titles = public.revision_titles([e.revision_id for e in entries])
    return render(
        request,
        "releases/new.html",
        {
            "form": form,
            "violations": violations,
            "plan": plan.plan,
            "counts": plan.plan.counts(),
            "changed_pages": pages,
            "changed": [_planned_row(e, titles.get(e.revision_id, "")) for e in entries],
        },
        status=400 if violations or form.errors else 200,
    )


class PlanPages:
    """The changed entries of the release being previewed, as ``paginate`` cuts them.

    Planning walks every record, so the page is planned once: for the page the request
    asks for (counting along the way), and again only if that page does not exist."""

    def __init__(self, request: HttpRequest, per_page: int = PAGE_SIZE):
        requested = request.GET.get("page", "")
        self.per_page = per_page
        start = (int(requested) - 1) * per_page if requested.isdigit() and int(requested) else 0
        self.plan = release_plan(preview=per_page, preview_offset=start)

    def count(self) -> int:
        return self.plan.changed_count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[PlannedEntry]:
        start = window.start or 0
        if start != self.plan.preview_offset:
            self.plan = release_plan(preview=self.per_page, preview_offset=start)
        return self.plan.changed


def _planned_row(entry: PlannedEntry, title: str) -> dict:
    """A changed record of the release being previewed, as ``_entry_row`` shows one that
    was published."""
    return _change_row(
        entry.kind, entry.key, title, entry.change, entry.revision, entry.previous_revision
    )


# Records listed in one entry of the releases feed (the rest: "and N more" and the page).
FEED_RECORDS = 50


@dataclass(frozen=True)
class FeedRecord:
    """A record a release changed, as a feed entry lists it."""

    release_id: int
    kind: str
    key: str
    change: str
    revision: int
    title: str

    @property
    def revision_url(self) -> str:
        return record_kinds.get(self.kind).revision_path(self.key, self.revision)

    @property
    def name(self) -> str:
        return f"{RECORD_KINDS[self.kind]} {self.key}" + (f" — {self.title}" if self.title else "")


def feed_records(releases: list[Release], per_release: int) -> dict[int, list[FeedRecord]]:
    """The first ``per_release`` changed records of each release (kind, then key), with
    their titles as released. One query, however many releases."""
    rows = (
        ReleaseEntry.objects.filter(release__in=releases)
        .exclude(change=ReleaseChange.UNCHANGED)
        .annotate(
            place=Window(
                RowNumber(), partition_by=F("release_id"), order_by=["record_kind", "record_key"]
            )
        )
        .filter(place__lte=per_release)
        .order_by("release_id", "record_kind", "record_key")
        .values_list(
            "release_id",
            "record_kind",
            "record_key",
            "change",
            "revision__number",
            "revision__released__title",
        )
    )
    records: dict[int, list[FeedRecord]] = {release.pk: [] for release in releases}
    for release_id, kind, key, change, number, title in rows:
        records[release_id].append(FeedRecord(release_id, kind, key, change, number, title or ""))
    return records


class AbsoluteFeed(Feed):
    """A feed whose entries link records by absolute URL (feed readers resolve no
    relative links in entry content): ``get_object`` keeps the site's root."""

    feed_type = Atom1Feed
    author_name = "claimsdb"

    def get_object(self, request: HttpRequest, *args, **kwargs) -> str:
        return request.build_absolute_uri("/").rstrip("/")


class ReleaseFeed(AbsoluteFeed):
    """An Atom feed of the latest ``FEED_SIZE`` releases, newest first: each entry links to
    its release page and lists the records the release changed, each with its change."""

    title = "claimsdb releases"
    link = "/releases/"
    subtitle = "Each release publishes the ready revision of every record that changed."

    def items(self, root: str):
        releases = list(public.release_list()[:FEED_SIZE])
        records = feed_records(releases, FEED_RECORDS)
        for release in releases:
            release.feed_records = records[release.pk]
            release.feed_root = root
        return releases

    def item_title(self, item: Release) -> str:
        return f"Release {item.number}"

    def item_description(self, item: Release) -> str:
        counts = public.release_counts(item)
        summary = ", ".join(f"{counts[c]} {c}" for c in ReleaseChange.values if counts[c])
        changed = sum(n for c, n in counts.items() if c != ReleaseChange.UNCHANGED)
        more = changed - len(item.feed_records)
        return render_to_string(
            "releases/feed_entry.html",
            {
                "notes": item.notes,
                "summary": summary or "no records",
                "records": item.feed_records,
                "root": item.feed_root,
                "more": more,
                "release_url": item.feed_root + release_path(item.number),
            },
        )

    def item_link(self, item: Release) -> str:
        return release_path(item.number)

    def item_pubdate(self, item: Release):
        return item.published_at

    def item_updateddate(self, item: Release):
        return item.published_at

    def item_categories(self, item: Release) -> list[str]:
        return [c for c in ReleaseChange.values if c != "unchanged" and item.change_counts.get(c)]


# Releases listed by a case's feed.
CASE_FEED_SIZE = 50


@dataclass(frozen=True)
class CaseFeedEntry:
    """A release that changed the case, as the case's feed lists it."""

    key: str
    root: str  # the site's absolute root, for links in the entry's content
    release: Release
    change: str
    revision: int
    previous_revision: int | None
    title: str


class CaseFeed(AbsoluteFeed):
    """``/cases/<key>/feed.atom``: the latest ``CASE_FEED_SIZE`` releases that changed a
    case, newest first, each linking the revision it published (public data only: a case
    no release published is a 404, as its page is for the public)."""

    def get_object(self, request: HttpRequest, key: str) -> dict:
        # one more than shown: the oldest shown entry's diff needs the revision before it
        rows = list(
            ReleaseEntry.objects.filter(record_kind="case", record_key=key)
            .exclude(change=ReleaseChange.UNCHANGED)
            .order_by("-release__number")
            .values_list("release_id", "change", "revision__number", "revision__released__title")[
                : CASE_FEED_SIZE + 1
            ]
        )
        if not rows:
            raise Http404(f"no released case {key}")
        releases = Release.objects.in_bulk([row[0] for row in rows[:CASE_FEED_SIZE]])
        root = super().get_object(request)
        entries = [
            CaseFeedEntry(
                key,
                root,
                releases[release_id],
                change,
                number,
                rows[index + 1][2] if index + 1 < len(rows) else None,
                title or "",
            )
            for index, (release_id, change, number, title) in enumerate(rows[:CASE_FEED_SIZE])
        ]
        return {"key": key, "entries": entries}

    def title(self, obj: dict) -> str:
        latest = obj["entries"][0].title
        return f"claimsdb: case {obj['key']}" + (f" — {latest}" if latest else "")

    def link(self, obj: dict) -> str:
        return record_kinds.get("case").record_path(obj["key"])

    def subtitle(self, obj: dict) -> str:
        return f"The releases that published a new revision of case {obj['key']}."

    def items(self, obj: dict) -> list[CaseFeedEntry]:
        return obj["entries"]

    def item_title(self, item: CaseFeedEntry) -> str:
        return f"Release {item.release.number}: case {item.key} {item.change}"

    def item_description(self, item: CaseFeedEntry) -> str:
        key, root = item.key, item.root
        previous = item.previous_revision
        return render_to_string(
            "releases/case_feed_entry.html",
            {
                "entry": item,
                "key": key,
                "notes": item.release.notes,
                "release_url": root + release_path(item.release.number),
                "revision_url": root + record_kinds.get("case").revision_path(key, item.revision),
                "diff_url": (
                    root + record_kinds.get("case").diff_path(key, previous, item.revision)
                    if previous is not None
                    else ""
                ),
            },
        )

    def item_link(self, item: CaseFeedEntry) -> str:
        return record_kinds.get("case").revision_path(item.key, item.revision)

    def item_guid(self, item: CaseFeedEntry) -> str:
        return f"{item.root}{release_path(item.release.number)}#case-{item.key}"

    def item_pubdate(self, item: CaseFeedEntry):
        return item.release.published_at

    def item_updateddate(self, item: CaseFeedEntry):
        return item.release.published_at

    def item_categories(self, item: CaseFeedEntry) -> list[str]:
        return [item.change]


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
        if revision is None or not access.may_see_revision(
            request.user, kind, key, revision.number
        ):
            raise Http404(f"no visible revision {requested} of {kind} {key}")
    elif access.may_read_working_state(request.user):
        revision = (
            Revision.objects.filter(record_kind=kind, record_key=key).order_by("-number").first()
        )
    else:
        revision = public.released_revision(kind, key)
    if revision is None:
        raise Http404(f"no visible {kind} {key}")
    document = canonical.loads(revision.snapshot)
    release = public.release_of_revision(kind, key, revision.number)
    body = render_citation(document, revision, release, base_url=request.build_absolute_uri("/"))
    response = HttpResponse(body, content_type=content_type)
    filename = f"{citation.citation_key(document, revision)}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if requested:
        http_caching.immutable_headers(response, revision.number, request=request)
    return response
