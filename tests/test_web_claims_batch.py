"""Claims entered in batches: several claims with their evidence links saved as one revision
from /cases/<key>/claims/add/, and "Save and add another" on the single-claim page."""

from __future__ import annotations

import pytest

from claimsdb.records import record_document

from .support import edit_form, field_block, revision_count, signed_in, text_of

CASE = "CP22-003"
BATCH = f"/cases/{CASE}/claims/add/"
NEW_CLAIM = f"/cases/{CASE}/claims/new/"
SOURCE = "SRC-SGLANG-PR-35049"


@pytest.fixture
def client(seeded, analyst):
    return signed_in(analyst)


def claim_ids() -> list[str]:
    return [claim["id"] for claim in record_document("case", CASE)["claims"]]


def block(n: int, statement: str, source: str = SOURCE, relation: str = "supports") -> dict:
    return {
        f"c{n}-statement": statement,
        f"c{n}-evidence-0-source": source,
        f"c{n}-evidence-0-relation": relation,
        f"c{n}-evidence-0-locator": f"Section {n}",
    }


def test_the_batch_page_suggests_consecutive_claim_ids(client):
    data = edit_form(client.get(BATCH).content.decode()).data()
    single = edit_form(client.get(NEW_CLAIM).content.decode()).data()
    ids = [data[f"c{n}-id"][0] for n in range(5)]
    assert ids[0] == single["claim-id"][0]
    assert len(set(ids)) == 5 and all(i.startswith(f"CLM-{CASE}-") for i in ids)
    assert data["batch-count"] == ["5"]


def test_several_claims_with_their_links_are_saved_as_one_revision(client):
    before, ids = revision_count(), claim_ids()
    form = edit_form(client.get(BATCH).content.decode())
    data = form.data(
        {
            **block(0, "The first claim of the batch."),
            **block(1, "The second claim of the batch."),
            **block(3, "The fourth block, with the third left blank."),
            "c3-evidence-1-source": "SRC-SGLANG-PR-35360",
            "c3-evidence-1-relation": "context",
            "summary": "Three claims at once",
        }
    )
    response = client.post(BATCH, data)
    assert response.status_code == 302, text_of(response.content.decode())[:3000]
    assert revision_count() == before + 1
    claims = record_document("case", CASE)["claims"]
    added = claims[len(ids) :]
    assert [c["id"] for c in added] == [data["c0-id"][0], data["c1-id"][0], data["c3-id"][0]]
    assert [c["statement"] for c in added][2] == "The fourth block, with the third left blank."
    assert [(e["source"], e["relation"]) for e in added[2]["evidence"]] == [
        (SOURCE, "supports"),
        ("SRC-SGLANG-PR-35360", "context"),
    ]


def test_a_refused_claim_keeps_every_row_and_shows_the_refusal_at_its_field(client):
    before, ids = revision_count(), claim_ids()
    form = edit_form(client.get(BATCH).content.decode())
    typed = {
        **block(0, "A claim the rules accept."),
        # supported, yet its only link contradicts it: refused at that claim
        **block(1, "A claim whose evidence contradicts it.", relation="contradicts"),
        "summary": "Two claims",
    }
    response = client.post(BATCH, form.data(typed))
    assert response.status_code == 422
    assert revision_count() == before and claim_ids() == ids
    html = response.content.decode()
    kept = edit_form(html).data()
    for name, value in typed.items():
        assert kept[name] == [value], name
    second = html[html.index('id="claim-2"') : html.index('id="claim-3"')]
    first = html[html.index('id="claim-1"') : html.index('id="claim-2"')]
    assert 'class="error"' in second
    assert 'class="error"' not in first


def test_blank_blocks_with_links_typed_need_a_statement(client):
    before = revision_count()
    form = edit_form(client.get(BATCH).content.decode())
    typed = {**block(2, ""), "summary": "Links without a claim"}
    response = client.post(BATCH, form.data(typed))
    assert response.status_code == 400
    assert revision_count() == before
    assert 'class="error"' in field_block(response.content.decode(), "c2-statement")


def test_add_another_claim_shows_one_more_block_and_writes_nothing(client):
    before = revision_count()
    form = edit_form(client.get(BATCH).content.decode())
    typed = {**block(0, "Kept while a block is added."), "summary": ""}
    response = client.post(BATCH, {**form.data(typed), "add_claim": "1"})
    assert response.status_code == 200
    kept = edit_form(response.content.decode()).data()
    assert kept["batch-count"] == ["6"]
    assert "c5-statement" in kept
    assert kept["c0-statement"] == ["Kept while a block is added."]
    assert revision_count() == before


def test_the_batch_page_lists_labels_for_every_field(client):
    html = client.get(BATCH).content.decode()
    for n in range(5):
        for name in ("id", "statement", "status", "basis"):
            assert f'<label for="id_c{n}-{name}">' in html, (n, name)
    assert "<script>" not in html


def test_save_and_add_another_opens_an_empty_claim_form(client):
    before = revision_count()
    form = edit_form(client.get(NEW_CLAIM).content.decode())
    assert ("save_add", "1", "") in form.buttons
    data = form.data(
        {
            "claim-statement": "Saved, then another.",
            "claim-status": "supported",
            "claim-basis": "reported_finding",
            "evidence-0-source": SOURCE,
            "evidence-0-relation": "supports",
            "summary": "One claim",
        }
    )
    response = client.post(NEW_CLAIM, {**data, "save_add": "1"})
    assert response.status_code == 302
    assert response["Location"] == NEW_CLAIM
    assert revision_count() == before + 1
    again = edit_form(client.get(NEW_CLAIM).content.decode()).data()
    assert again["claim-statement"] == [""]
    assert again["claim-id"] != data["claim-id"]
