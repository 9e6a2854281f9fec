"""Searching cases, claims and sources through the search index (docs/search.md).

One ranked list of hits of every kind, paged, with the number of hits of each kind. Signed-
in users search the working state, the public the released revisions: the same query over
the entries of one scope. Every page runs two queries (the counts, the page), whatever the
size of the knowledge base or the number of hits.

PostgreSQL: full-text search on the stored, GIN-indexed ``tsvector`` (``websearch`` query
syntax: words, "quoted phrases", ``-excluded``, ``or``), ranked by ``ts_rank`` with titles
weighing more than summaries and statements, matched words highlighted by ``ts_headline``.
Elsewhere (SQLite): every word of the query appears, case-insensitively, in the title or
the text; hits are listed by kind and key, and highlighted here.

Either way, a query that is a key or a claim ID (any case) finds that record first.
Highlighted text is escaped before any markup is added: see ``Highlighted``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, overload

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Replace
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from claimsdb.models import SearchEntry, SearchKind, SearchScope
from claimsdb.models.search import MORE_FIELDS, MORE_SEPARATOR, SEARCH_CONFIG
from claimsdb.records.batched import compiled_query, compiled_rows, run_together

PER_PAGE = 20
KINDS = SearchKind.values  # the order of the counts
EXCERPT_WORDS = 35  # words of a summary or statement around the first match
# ts_headline brackets each match in these. They are private-use characters, removed from
# the text before ts_headline sees it, so every one in its output is a bracket it added.
START, STOP = "\ue000", "\ue001"


@dataclass(frozen=True)
class SearchHit:
    """One case, claim or source found: ``title`` and ``text`` are safe HTML with the
    matched words in ``<mark>``."""

    kind: str
    key: str
    case_key: str
    status: str
    source_kind: str
    title: SafeString
    text: SafeString
    revision: int | None
    matched: str = ""  # the field the query was found in: "title", "tags", "publisher"…


@dataclass(frozen=True)
class SearchResults:
    query: str
    kind: str  # "" for every kind
    counts: dict[str, int]  # hits of each kind, whatever ``kind`` is
    page: Page[SearchHit]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def search(
    query: str,
    *,
    released: bool,
    kind: str = "",
    page: Any = 1,
    per_page: int = PER_PAGE,
) -> SearchResults:
    """One page of the hits of ``query``: released entries for the public, the working
    state otherwise; of one ``kind`` (``case``, ``claim``, ``source``) or of all.

    Ordered by the exact key match first, then rank (PostgreSQL), then kind and key, so
    pages never overlap. An unknown ``kind`` means every kind; a ``page`` out of range
    gives the last page. Two queries, sent together (on PostgreSQL one round trip); a page
    out of range, one more.
    """
    query = query.strip()
    kind = kind if kind in KINDS else ""
    scope = SearchScope.RELEASED if released else SearchScope.WORKING
    if not query:
        empty = Paginator[SearchHit]([], per_page).get_page(1)
        return SearchResults(query, kind, dict.fromkeys(KINDS, 0), empty)
    params = _params(query, scope)
    page_params = {**params, "kind": kind} if kind else params
    # the counts, and the page asked for, sent together (``run_together``); a page number
    # out of range is read again once the counts are known
    try:
        guess = max(1, int(page))
    except (TypeError, ValueError):
        guess = 1
    start = (guess - 1) * per_page
    found = run_together(
        {
            "counts": compiled_query(_shape("search.counts", params), SearchEntry, _counts, params),
            "page": compiled_query(
                _shape("search.page", page_params),
                SearchEntry,
                _page,
                page_params,
                " LIMIT %s OFFSET %s",
                (per_page, start),
            ),
        }
    )
    counts = dict.fromkeys(KINDS, 0)
    counts.update(found["counts"][1])
    total = counts[kind] if kind else sum(counts.values())
    names, rows = found["page"]
    hits = [_hit(dict(zip(names, row, strict=True)), query) for row in rows]
    paginator = Paginator(_Counted(page_params, total, query, (start, hits)), per_page)
    return SearchResults(query, kind, counts, paginator.get_page(page))


def _params(query: str, scope: str) -> dict[str, str]:
    """The values a search's queries take: the scope, the query as typed, the key it would
    be, and for a query typed as a key (or its first parts) that key's parts as a phrase,
    the last one a prefix (the index holds every key's parts as words, in order)."""
    params = {"scope": str(scope), "text": query, "key": query.upper()}
    parts = _key_parts(query)
    if parts:
        params["phrase"] = " <-> ".join(f"'{part.lower()}'" for part in parts) + ":*"
    return params


def _shape(name: str, params: dict[str, str]) -> str:
    """The name of a query put together once (``compiled_rows``): its parameters' names."""
    return ".".join([name, *sorted(params), connection.vendor])


class _Counted:
    """The hits of a search, for a paginator that need not count them: the counts query
    already did. A page of them is one query."""

    def __init__(
        self, params: dict[str, str], total: int, query: str, known: tuple[int, list[SearchHit]]
    ):
        self.params, self.total, self.query = params, total, query
        self.start, self.known = known  # the hits from ``start`` on, read already

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self[0 : self.total])

    @overload
    def __getitem__(self, index: int) -> SearchHit: ...

    @overload
    def __getitem__(self, index: slice) -> list[SearchHit]: ...

    def __getitem__(self, index: int | slice) -> SearchHit | list[SearchHit]:
        if isinstance(index, int):
            return self[index : index + 1][0]
        start, stop, _ = index.indices(self.total)
        if not self.total or stop <= start:
            return []
        if start == self.start and stop - start <= len(self.known):
            return self.known[: stop - start]
        names, rows = compiled_rows(
            _shape("search.page", self.params),
            SearchEntry,
            _page,
            self.params,
            " LIMIT %s OFFSET %s",
            (stop - start, start),
        )
        return [_hit(dict(zip(names, row, strict=True)), self.query) for row in rows]


FIELDS = ("kind", "key", "case_key", "status", "source_kind", "revision")


def _postgresql() -> bool:
    return connection.vendor == "postgresql"


KEYLIKE = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+-?")


def _key_parts(query: str) -> list[str]:
    """The parts of a query typed as a key or the start of one (``SRC-OPENAI``), else []."""
    if not KEYLIKE.fullmatch(query):
        return []
    return [part for part in query.split("-") if part]


def _text_query(text: str, phrase: str | None) -> SearchQuery:
    """The query as web-search syntax, or'ed with the phrase of its key's parts."""
    text_query = SearchQuery(text, search_type="websearch", config=SEARCH_CONFIG)
    if phrase is not None:
        text_query |= SearchQuery(phrase, search_type="raw", config=SEARCH_CONFIG)
    return text_query


def _words(query: str) -> list[str]:
    return query.split()


def _matching(
    scope: str, text: str, key: str, phrase: str | None = None, kind: str | None = None
) -> QuerySet[SearchEntry]:
    """The entries of ``scope`` the query matches (``_params``' values), of ``kind`` if
    given. A query typed as a key or a claim ID (upper case in the index) matches that
    entry too, by an equality on the (scope, key) index."""
    entries = SearchEntry.objects.filter(scope=scope)
    if _postgresql():
        found = entries.filter(Q(vector=_text_query(text, phrase)) | Q(key=key))
    else:
        every_word = Q()
        for word in _words(text):
            every_word &= (
                Q(title__icontains=word) | Q(text__icontains=word) | Q(more__icontains=word)
            )
        found = entries.filter(every_word | Q(key=key))
    return found.filter(kind=kind) if kind is not None else found


def _counts(
    scope: str, text: str, key: str, phrase: str | None = None
) -> QuerySet[SearchEntry, tuple[str, int]]:
    """The hits of each kind (``kind``, number)."""
    return (
        _matching(scope, text, key, phrase).order_by().values_list("kind").annotate(n=Count("pk"))
    )


def _page(
    scope: str, text: str, key: str, phrase: str | None = None, kind: str | None = None
) -> QuerySet[SearchEntry, dict[str, Any]]:
    """The hits in order, each with its fields and (PostgreSQL) its title and text
    highlighted; the page is cut by the caller (``LIMIT``/``OFFSET``)."""
    return _ordered(_matching(scope, text, key, phrase, kind), text, key, phrase)


def _ordered(
    found: QuerySet[SearchEntry], text: str, key: str, phrase: str | None = None
) -> QuerySet[SearchEntry, dict[str, Any]]:
    exact = Case(When(Q(key=key), then=Value(1)), default=Value(0), output_field=IntegerField())
    found = found.annotate(exact=exact)
    if not _postgresql():
        return found.order_by("-exact", "kind", "key").values(*FIELDS, "title", "text", "more")
    text_query = _text_query(text, phrase)

    def headline(
        field: str,
        *,
        highlight_all: bool | None = None,
        max_words: int | None = None,
        min_words: int | None = None,
        max_fragments: int | None = None,
        fragment_delimiter: str | None = None,
    ) -> SearchHeadline:
        # the markers are removed from the text first: each one in the output is a match
        bare = Replace(Replace(field, Value(START), Value("")), Value(STOP), Value(""))
        return SearchHeadline(
            bare,
            text_query,
            config=SEARCH_CONFIG,
            start_sel=START,
            stop_sel=STOP,
            highlight_all=highlight_all,
            max_words=max_words,
            min_words=min_words,
            max_fragments=max_fragments,
            fragment_delimiter=fragment_delimiter,
        )

    return (
        found.annotate(
            # F(): a bare name would be wrapped in to_tsvector() and recomputed from text
            rank=SearchRank(F("vector"), text_query),
            title_marked=headline("title", highlight_all=True),
            text_marked=headline(
                "text",
                max_words=EXCERPT_WORDS,
                min_words=15,
                max_fragments=2,
                fragment_delimiter=" … ",
            ),
        )
        .order_by("-exact", "-rank", "kind", "key")
        .values(*FIELDS, "title", "text", "more", "title_marked", "text_marked")
    )


def _hit(row: dict[str, Any], query: str) -> SearchHit:
    words = _query_words(query)
    if "title_marked" in row:
        title = marked_html(row["title_marked"])
        text = _with_ellipses(marked_html(row["text_marked"]), row["text"], row["text_marked"])
    else:
        title = highlight(row["title"], _words(query))
        text = highlight(row["text"], _words(query), excerpt_words=EXCERPT_WORDS)
    matched, segment = matched_field(row, query, words)
    if segment:  # found in the account, the basis…: an excerpt of that text is shown
        text = highlight(segment, words, excerpt_words=EXCERPT_WORDS)
    return SearchHit(
        kind=row["kind"],
        key=row["key"],
        case_key=row["case_key"],
        status=row["status"],
        source_kind=row["source_kind"],
        title=title,
        text=text,
        revision=row["revision"],
        matched=matched,
    )


# --- which field a hit was found in ------------------------------------------------------

TEXT_NAMES = {"case": "summary", "claim": "statement", "source": "text", "component": "name"}
SHOWN_AS_TEXT = {"full account", "basis"}  # segments shown as the hit's excerpt


def _query_words(query: str, *, parts: bool = True) -> list[str]:
    """The words of a query as typed, without web-search syntax (quotes, ``-excluded``,
    ``or``); with ``parts``, a key's parts as words too."""
    words = []
    for word in re.findall(r'-?"[^"]*"|\S+', query):
        if word.startswith("-") and not KEYLIKE.fullmatch(word.lstrip("-")):
            continue
        word = word.strip('"')
        if word.lower() == "or" or not word:
            continue
        words.extend(word.split())
        if parts:
            words.extend(_key_parts(word))
    return words


def _holds(text: str, words: list[str]) -> bool:
    """Whether ``text`` holds one of ``words``, its stem at least (PostgreSQL stems:
    ``transfers`` finds ``transfer``)."""
    folded = text.casefold()
    return any(w.casefold()[: max(4, len(w) - 2)] in folded for w in words if w)


def matched_field(row: dict[str, Any], query: str, words: list[str]) -> tuple[str, str]:
    """The name of the field a hit was found in, and that field's text when it is one the
    hit does not otherwise show (an account, a basis): the key, the title, the text, then
    each further field in ``MORE_FIELDS`` order — first for the words as typed, then for
    the parts of those typed as keys."""
    names = MORE_FIELDS.get(row["kind"], ())
    segments = list(zip(names, (row.get("more") or "").split(MORE_SEPARATOR), strict=False))
    for candidates in (_query_words(query, parts=False), words):
        if any(w.upper() in row["key"] for w in candidates if KEYLIKE.fullmatch(w)):
            return "key", ""
        if _holds(row.get("title") or "", candidates):
            return "title", ""
        if _holds(row.get("text") or "", candidates):
            return TEXT_NAMES.get(row["kind"], "text"), ""
        for name, segment in segments:
            if _holds(segment, candidates):
                return name, segment if name in SHOWN_AS_TEXT else ""
    if row["key"] == query.strip().upper():
        return "key", ""
    return "", ""


# --- highlighting: escape every piece of text, then add the markup --------------------------


def marked_html(marked: str) -> SafeString:
    """``ts_headline`` output (matches between START and STOP) as HTML: the text escaped,
    each match in ``<mark>``. Markers the text might hold were removed before ts_headline,
    so an unpaired marker cannot occur; one is dropped if it did."""
    parts = []
    for index, piece in enumerate(re.split(f"[{START}{STOP}]", marked)):
        # pieces alternate: outside, match, outside, match…
        parts.append(f"<mark>{escape(piece)}</mark>" if index % 2 and piece else escape(piece))
    return mark_safe("".join(parts))


def _with_ellipses(html: SafeString, text: str, marked: str) -> SafeString:
    """An excerpt that leaves out the start or the end of the text says so."""
    bare = marked.replace(START, "").replace(STOP, "").strip()
    if not bare:
        return html
    before = "" if text.lstrip().startswith(bare[:40]) else "… "
    after = "" if text.rstrip().endswith(bare[-40:]) else " …"
    return mark_safe(before + html + after)


def highlight(text: str, words: list[str], *, excerpt_words: int | None = None) -> SafeString:
    """``text`` as HTML with every occurrence of ``words`` (case-insensitively) in
    ``<mark>``; with ``excerpt_words``, only about that many words around the first match
    (or from the start when none matches)."""
    if excerpt_words is not None:
        text = _excerpt(text, words, excerpt_words)
    wanted = [w for w in words if w]
    if not wanted:
        return escape(text)
    pattern = re.compile(
        "|".join(re.escape(w) for w in sorted(wanted, key=len, reverse=True)), re.IGNORECASE
    )
    parts: list[str] = []
    end = 0
    for match in pattern.finditer(text):
        parts.append(escape(text[end : match.start()]))
        parts.append(f"<mark>{escape(match.group())}</mark>")
        end = match.end()
    parts.append(escape(text[end:]))
    return mark_safe("".join(parts))


def _excerpt(text: str, words: list[str], size: int) -> str:
    tokens = text.split()
    if len(tokens) <= size:
        return text
    folded = [w.casefold() for w in words]
    first = next(
        (i for i, token in enumerate(tokens) if any(w in token.casefold() for w in folded)), 0
    )
    start = max(0, min(first - size // 3, len(tokens) - size))
    excerpt = " ".join(tokens[start : start + size])
    return ("… " if start else "") + excerpt + (" …" if start + size < len(tokens) else "")
