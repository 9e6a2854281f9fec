"""The plain-row read paths: a case's document, the case list's rows, and the ledger that
verify_history streams. Each must say exactly what the model-instance reads said."""

from __future__ import annotations

import copy
import json

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claimsdb.integrity import verify_history
from claimsdb.models import Case, Revision
from claimsdb.records import parse_document, record_document
from claimsdb.selectors.cases import case_list_rows, case_tags
from claimsdb.selectors.methods import method_list
from claimsdb.services import record_update

from .support import signed_in


def test_a_case_document_is_the_document_written(seeded, seed_bundle):
    """Every case of the seed reads back as the bundle gave it (normalized as every write
    normalizes it), and as its revision's snapshot keeps it."""
    assert seed_bundle["cases"]
    for written in seed_bundle["cases"]:
        _, expected = parse_document(written, "case")
        document = record_document("case", written["key"])
        assert document == expected, written["key"]
        assert document == _latest_snapshot(written["key"]), written["key"]
    assert record_document("case", "NO-SUCH-CASE") is None


def _latest_snapshot(key: str) -> dict:
    revision = Revision.objects.filter(record_kind="case", record_key=key).latest("number")
    return json.loads(revision.snapshot)


def _with_newer_assessment(reviewer) -> dict:
    """CP22-003 with a second, newer assessment whose values differ from the first's."""
    document = record_document("case", "CP22-003")
    newer = copy.deepcopy(document["assessments"][-1])
    newer["assessed_on"] = "2031-02-03"
    dimension = next(iter(newer["values"]))
    method = next(m for m in method_list() if m.key == newer["method"])
    choices = next(d["values"] for d in method.dimensions if d["key"] == dimension)
    newer["values"][dimension] = next(
        v["key"] for v in choices if v["key"] != newer["values"][dimension]
    )
    document["assessments"].append(newer)
    record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary="newer")
    return document


def test_case_list_rows_show_the_current_assessment(seeded, reviewer):
    document = _with_newer_assessment(reviewer)
    case = Case.objects.get(key="CP22-003")
    (row,) = case_list_rows([case.pk])
    newest = document["assessments"][-1]
    assert row["key"] == "CP22-003"
    assert row["title"] == document["title"]
    assert row["tags"] == sorted(document["tags"])
    assert row["claim_count"] == len(document["claims"])
    assert row["latest_revision"] == (
        Revision.objects.filter(record_kind="case", record_key="CP22-003")
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    assert row["assessment"]["values"] == newest["values"]
    assert row["assessment"]["assessed_on"].isoformat() == "2031-02-03"
    assert row["assessment"]["method"] == newest["method"]


def test_case_list_page_shows_the_newest_assessment(seeded, reviewer, viewer):
    _with_newer_assessment(reviewer)
    body = signed_in(viewer).get("/cases/").content.decode()
    start = body.index('<span class="key">CP22-003</span>')
    row = body[start : body.index("</li>", start)]
    assert "assessed Feb 3, 2031" in row


def test_verify_history_reads_the_ledger_in_one_query(seeded, reviewer):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert verify_history(batch_size=2) == []
        return len(captured)

    before = queries()
    for n in range(6):  # six more revisions: three more batches of two
        document = record_document("case", "CP22-003")
        document["summary"] = f"Edit {n}"
        record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary=str(n))
    assert queries() == before


def test_a_case_document_read_twice_is_the_same(seeded):
    """The second read of a case's document runs the batch queries compiled by the first
    (on PostgreSQL) and must build the same document, for every case."""
    keys = list(Case.objects.order_by("key").values_list("key", flat=True))
    first = [record_document("case", key) for key in keys]
    assert [record_document("case", key) for key in keys] == first
    assert first == [_latest_snapshot(key) for key in keys]


def test_case_tags_are_every_tag_name_once_sorted(seeded):
    from claimsdb.models import CaseTag

    expected = sorted(set(CaseTag.objects.values_list("name", flat=True)))
    assert expected
    assert case_tags() == expected


def _sql(captured) -> list[str]:
    return [query["sql"] for query in captured.captured_queries]


def test_a_signed_in_read_looks_the_role_up_with_the_user(seeded, viewer):
    """The pages and the API read the role with the session's user: no query of the user's
    groups of its own, and a role taken away shows on the next request."""
    client = signed_in(viewer)
    for url in ("/cases/", "/?q=rdma", "/api/v1/cases/CP22-003/"):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        statements = _sql(captured)
        assert not any(s.lstrip().upper().startswith('SELECT "AUTH_GROUP"') for s in statements)
        assert sum("auth_user_groups" in s for s in statements) == 1, url
    # a viewer reads the working state (drafts); without the role, the released view
    assert client.get("/api/v1/cases/CP22-003/").status_code == 200
    viewer.groups.clear()
    response = client.get("/api/v1/cases/CP22-003/")
    assert response.status_code == 404  # nothing released yet: the released view has none
