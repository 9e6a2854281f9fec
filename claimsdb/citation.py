"""How to cite a record at a revision (and the release that published it).

A citation names the revision, because a revision's page never changes: the URL it gives
is ``/cases/<key>/revisions/<n>/``. A released revision is dated by its release; a revision
not yet released (only signed-in users see those) by the revision itself and marked so.

Three forms: a line of text (``citation_text``), a BibTeX ``@misc`` entry (``bibtex``)
and a CSL-JSON item list (``csl_json``), the last two served as downloads.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.conf import settings

from claimsdb.models import Release, Revision
from claimsdb.records import dumps_pretty
from claimsdb.records.kinds import record_kinds

from .public import release_of_revision, released_entry

PUBLISHER = "claimsdb"
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# LaTeX's special characters, each with what stands for it in running text.
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in LATEX_SPECIALS))
BIBTEX_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")
URL_UNSAFE = re.compile(r"[\s{}\\]")


def latex_escape(text: str) -> str:
    """Text with LaTeX's special characters escaped (one pass: nothing is escaped twice)."""
    return LATEX_PATTERN.sub(lambda match: LATEX_SPECIALS[match.group(0)], text)


def record_title(document: dict[str, Any]) -> str:
    """``CP22-003: <title>``; a scope rule has no title and is named by its key."""
    title = (document.get("title") or "").strip()
    return f"{document['key']}: {title}" if title else document["key"]


def citation_url(document: dict[str, Any], revision: Revision | int, *, base_url: str = "") -> str:
    """The absolute URL of the cited revision's page.

    ``base_url`` is the site's root (``request.build_absolute_uri("/")``); without it,
    ``settings.CLAIMSDB_SITE_URL`` if set, else the path alone.
    """
    base = base_url or getattr(settings, "CLAIMSDB_SITE_URL", "")
    kind = record_kinds.by_format(document["format"])
    path = kind.revision_path(document["key"], _number(revision))
    return URL_UNSAFE.sub("", base.rstrip("/")) + path


def citation_key(document: dict[str, Any], revision: Revision | int) -> str:
    """A stable key: ``claimsdb-CP22-003-r13``."""
    key = BIBTEX_KEY_UNSAFE.sub("-", document["key"]).strip("-")
    return f"{PUBLISHER}-{key}-r{_number(revision)}"


def citation_date(revision: Revision, release: Release | None) -> dt.date:
    """The release's date, or the revision's for a revision not yet released (UTC)."""
    moment = release.published_at if release is not None else revision.created_at
    return moment.astimezone(dt.UTC).date()


def version_note(revision: Revision | int, release: Release | None) -> str:
    """``Revision 13, release 1`` or ``Revision 15, not yet released``."""
    released = f"release {release.number}" if release is not None else "not yet released"
    return f"Revision {_number(revision)}, {released}"


def citation_text(
    document: dict[str, Any],
    revision: Revision,
    release: Release | None,
    *,
    base_url: str = "",
) -> str:
    """``claimsdb. CP22-003: <title>. Revision 13, release 1, 2026-12-02. <URL>``"""
    title = record_title(document).rstrip(".")
    date = citation_date(revision, release).isoformat()
    url = citation_url(document, revision, base_url=base_url)
    return f"{PUBLISHER}. {title}. {version_note(revision, release)}, {date}. {url}"


def bibtex(
    document: dict[str, Any],
    revision: Revision,
    release: Release | None,
    *,
    base_url: str = "",
) -> str:
    """One ``@misc`` entry; the title is braced whole so styles keep its capitals."""
    date = citation_date(revision, release)
    url = citation_url(document, revision, base_url=base_url)
    fields = [
        ("author", f"{{{PUBLISHER}}}"),
        ("title", f"{{{latex_escape(record_title(document))}}}"),
        ("howpublished", rf"\url{{{url}}}"),
        ("url", url),
        ("note", latex_escape(f"{version_note(revision, release)}, {date.isoformat()}")),
        ("year", str(date.year)),
        ("month", MONTHS[date.month - 1]),
    ]
    lines = [f"@misc{{{citation_key(document, revision)},"]
    for name, value in fields:
        # a month is a BibTeX macro (``dec``), written bare
        lines.append(f"  {name} = {value}," if name == "month" else f"  {name} = {{{value}}},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def csl_item(
    document: dict[str, Any],
    revision: Revision,
    release: Release | None,
    *,
    base_url: str = "",
) -> dict[str, Any]:
    date = citation_date(revision, release)
    return {
        "id": citation_key(document, revision),
        "type": "dataset",
        "title": record_title(document),
        "author": [{"literal": PUBLISHER}],
        "publisher": PUBLISHER,
        "URL": citation_url(document, revision, base_url=base_url),
        "version": version_note(revision, release),
        "issued": {"date-parts": [[date.year, date.month, date.day]]},
    }


def csl_json(
    document: dict[str, Any],
    revision: Revision,
    release: Release | None,
    *,
    base_url: str = "",
) -> str:
    """A CSL-JSON item list with one item (what reference managers import)."""
    return dumps_pretty([csl_item(document, revision, release, base_url=base_url)])


def citation_block(
    kind: str, key: str, document: dict[str, Any], revision_number: int, *, base_url: str = ""
) -> dict[str, Any]:
    """What a record page's "Sources and citation" section needs, for the revision shown:
    ``{"text", "key", "revision", "release", "bibtex_url", "csl_url", "unreleased",
    "public"}``. ``release`` is the release that published this revision, or None: then
    ``unreleased`` says that its link is not public yet (only signed-in readers see such a
    revision) and ``public`` is what the public sees instead (``public_revision``), or None
    when the record was never released. Two queries, three for an unreleased revision."""
    revision = Revision.objects.defer("snapshot").get(
        record_kind=kind, record_key=key, number=revision_number
    )
    release = release_of_revision(kind, key, revision_number)
    downloads = f"{record_kinds.get(kind).record_path(key)}cite"
    query = f"?revision={revision_number}"
    return {
        "text": citation_text(document, revision, release, base_url=base_url),
        "key": citation_key(document, revision),
        "revision": revision_number,
        "release": release,
        "bibtex_url": f"{downloads}.bib{query}",
        "csl_url": f"{downloads}.json{query}",
        "unreleased": UNRELEASED_NOTE if release is None else "",
        "public": public_revision(kind, key) if release is None else None,
    }


UNRELEASED_NOTE = (
    "This revision is not in a release yet: its link works only for signed-in users until "
    "a release publishes it."
)


def public_revision(kind: str, key: str) -> dict[str, Any] | None:
    """The revision the public sees of a record, to cite instead of an unreleased one:
    ``{"revision", "release", "url"}``, or None if no release published the record. One
    query."""
    entry = released_entry(kind, key)
    if entry is None:
        return None
    number = entry.revision.number
    return {
        "revision": number,
        "release": entry.release,
        "url": record_kinds.get(kind).revision_path(key, number),
    }


def _number(revision: Revision | int) -> int:
    return revision.number if isinstance(revision, Revision) else int(revision)
