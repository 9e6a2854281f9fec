"""History, revisions as they were, diffs of two revisions, and reverts."""

from __future__ import annotations

import pytest

from claimsdb.models import Revision
from claimsdb.records import record_document
from claimsdb.services import record_update

from .test_web_support import edit_form, page_forms, revision_count, signed_in, text_of

CASE = "CP22-003"


def numbers(kind="case", key=CASE) -> list[int]:
    return list(
        Revision.objects.filter(record_kind=kind, record_key=key)
        .order_by("number")
        .values_list("number", flat=True)
    )


@pytest.fixture
def edited(seeded, analyst):
    """CP22-003 with two more revisions: a reworded claim and a new claim, then a reorder."""
    document = record_document("case", CASE)
    document["claims"][0]["statement"] = document["claims"][0]["statement"].replace(
        "posted RDMA writes", "posted RDMA write requests"
    )
    document["title"] = "SGLang RDMA transfers could overwrite a reassigned cache"
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Reword")
    document = record_document("case", CASE)
    document["claims"].insert(
        0,
        {
            "id": "CLM-CP22-003-C",
            "statement": "A new first claim.",
            "status": "unverified",
            "status_note": "",
            "basis": "analyst_inference",
            "origin": "human",
            "evidence": [],
        },
    )
    record_update(
        kind="case", key=CASE, document=document, user=analyst, summary="Add C", material=False
    )
    return numbers()


def test_history_lists_every_revision_with_links(edited, viewer):
    first, second, third = edited
    html = signed_in(viewer).get(f"/cases/{CASE}/history/").content.decode()
    for number in edited:
        assert f'href="/cases/{CASE}/revisions/{number}/"' in html
    assert f'href="/cases/{CASE}/diff/{first}/{second}/"' in html
    assert f'href="/cases/{CASE}/diff/{second}/{third}/"' in html
    assert "editorial" in html and "material" in html
    compare = next(f for f in page_forms(html) if f.method == "get")
    response = signed_in(viewer).get(compare.action, {"a": third, "b": first})
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{CASE}/diff/{first}/{third}/"


def test_record_page_lists_only_material_revisions(edited, viewer):
    first, second, third = edited
    html = signed_in(viewer).get(f"/cases/{CASE}/").content.decode()
    history = html.split('id="history"', 1)[1]
    assert f"Revision {first}" in history and f"Revision {second}" in history
    assert f"Revision {third}" not in history


def test_a_revision_is_shown_as_it_was(edited, viewer):
    first, _second, third = edited
    html = signed_in(viewer).get(f"/cases/{CASE}/revisions/{first}/").content.decode()
    assert "SGLang asynchronous RDMA transfers could overwrite a newly assigned user cache" in html
    assert "CLM-CP22-003-C" not in html
    assert f"The latest is revision {third}" in html
    # rendered like the record page, section by section
    for heading in ("Scope", "Assessment profile", "Basis and provenance", "Claims &amp; evidence"):
        assert heading in html
    assert "/edit/" not in html  # no edit links on a past revision


def test_diff_matches_claims_by_id_and_marks_changed_words(edited, viewer):
    first, _second, third = edited
    html = signed_in(viewer).get(f"/cases/{CASE}/diff/{first}/{third}/").content.decode()
    text = text_of(html)
    assert "Claim CLM-CP22-003-A › statement" in text
    assert "<ins>write requests</ins>" in html or "<ins>requests</ins>" in html
    assert "<del>" in html
    assert "Claim CLM-CP22-003-C" in text  # added, matched by ID (not by position)
    assert "Claim CLM-CP22-003-B › statement" not in text  # moved down, not changed


def test_path_labels_and_word_marks():
    from claimsdb.web.diffs import path_label, word_diff

    assert (
        path_label("claims[CLM-X].evidence[0].locator") == "Claim CLM-X › evidence link 1 › locator"
    )
    assert path_label("claims:order") == "Order of claims"
    assert path_label("claims[CLM-X].evidence:order") == "Claim CLM-X › order of evidence"
    assert path_label("scope_note") == "Scope note"
    assert str(word_diff("a quick <b>fox</b>", "a slow <b>fox</b>")) == (
        "a <del>quick</del><ins>slow</ins> &lt;b&gt;fox&lt;/b&gt;"
    )


def test_reviewer_reverts_to_an_earlier_revision(edited, reviewer):
    first, _second, third = edited
    client = signed_in(reviewer)
    page = client.get(f"/cases/{CASE}/revisions/{first}/").content.decode()
    form = next(f for f in page_forms(page) if "/revert/" in f.action)
    response = client.post(form.action, form.data(summary="Back to the seed"))
    assert response.status_code == 302
    revision = Revision.objects.order_by("-number").first()
    assert revision.action == "revert"
    assert revision.summary == "Back to the seed"
    assert [c["id"] for c in record_document("case", CASE)["claims"]][0] == "CLM-CP22-003-A"
    assert revision.number == third + 1


def test_stale_revert_is_refused_and_changes_nothing(edited, reviewer, analyst):
    first, _second, _third = edited
    client = signed_in(reviewer)
    page = client.get(f"/cases/{CASE}/revisions/{first}/").content.decode()
    form = next(f for f in page_forms(page) if "/revert/" in f.action)
    document = record_document("case", CASE)
    document["summary"] = "Changed meanwhile"
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Meanwhile")
    before = revision_count()
    response = client.post(form.action, form.data(summary="Back"))
    assert response.status_code == 409
    assert "has changed since revision" in text_of(response.content.decode())
    assert revision_count() == before


def test_revert_needs_a_summary(edited, reviewer):
    first = edited[0]
    client = signed_in(reviewer)
    page = client.get(f"/cases/{CASE}/revisions/{first}/").content.decode()
    form = next(f for f in page_forms(page) if "/revert/" in f.action)
    before = revision_count()
    response = client.post(form.action, form.data(summary=""))
    assert response.status_code == 400
    assert revision_count() == before


def test_source_rule_and_method_revisions_and_diffs(seeded, analyst, viewer):
    from tests.test_web_editing import submit

    submit(
        signed_in(analyst),
        "/sources/SRC-SGLANG-PR-35049/edit/",
        {"source-title": "sgl-project/sglang #35049: deferred release", "summary": "Shorter"},
    )
    first, second = numbers("source", "SRC-SGLANG-PR-35049")
    client = signed_in(viewer)
    html = client.get(f"/sources/SRC-SGLANG-PR-35049/revisions/{first}/").content.decode()
    assert "until outstanding transfers finish" in html
    html = client.get(f"/sources/SRC-SGLANG-PR-35049/diff/{first}/{second}/").content.decode()
    assert "<del>" in html and "deferred release" in html
    (rule,) = numbers("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")
    html = client.get(
        f"/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/revisions/{rule}/"
    ).content.decode()
    assert "FIG-CP22-002-RESPONSES" in html
    (method,) = numbers("method", "diggingbeagle.assessment/1")
    html = client.get(f"/methods/diggingbeagle.assessment/1/revisions/{method}/").content.decode()
    assert "research demonstration" in html


def test_conflict_then_edit_form_keeps_working(seeded, analyst):
    """After a refused save the page is a normal edit form again (a regression guard for the
    base revision being carried)."""
    client = signed_in(analyst)
    html = client.get(f"/cases/{CASE}/edit/").content.decode()
    assert edit_form(html).data()["base_revision"] == [str(numbers()[-1])]
