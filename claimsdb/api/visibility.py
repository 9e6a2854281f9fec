"""The API's reads of what a user may see, in the shapes its views answer with.

Who sees the working state and who the released record is decided by the access policy
(``claimsdb.access``, docs/releases.md); the views ask it, and never test roles themselves
(the permission classes let anyone read and refuse writes early; the services check the
role again). This module adds what only the API needs: the documents of a page of a list,
the fast path of a case's GET, and the released filters' vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import OuterRef, Subquery

from claimsdb import public
from claimsdb.access import VisibleDocument
from claimsdb.models import Case, Revision
from claimsdb.records.kinds import CASE, record_kinds


def page_documents(kind: str, page: Sequence[Any]) -> list[dict[str, Any]]:
    """The documents of a page of ``access.visible_records``, in its order: the released
    snapshots as they are, rows of the working state built together
    (``RecordKind.documents``: a fixed number of queries for the page)."""
    if all(isinstance(row, VisibleDocument) for row in page):
        return [row.document for row in page]
    return record_kinds.get(kind).documents(page)


def working_case(key: str) -> Case | None:
    """For readers of the working state (the caller checks): a case's own row with its
    latest revision number (``revision``, its ETag) read in the same query, or None.

    Its document is ``working_case_document(row)``: the rows it is built from are read
    after the revision, as ``access.visible_document`` reads the revision before the
    document, and not at all when ``If-None-Match`` names the revision."""
    latest = (
        Revision.objects.filter(record_kind="case", record_key=OuterRef("key"))
        .order_by("-number")
        .values("number")[:1]
    )
    return CASE.rows().annotate(revision=Subquery(latest)).filter(key=key).first()


def working_case_document(case: Case) -> VisibleDocument:
    """The document of a row of ``working_case``."""
    (document,) = CASE.documents([case])
    return VisibleDocument("case", case.key, document, case.revision, released=False)


def released_method_dimensions() -> set[str]:
    """The dimension keys of the released assessment methods (for the released view's
    filters: a dimension only a draft method has is no filter there)."""
    return {
        dimension.get("key")
        for record in public.released_records("method", include_withdrawn=True)
        for dimension in record.document.get("dimensions") or []
        if isinstance(dimension, dict)
    }
