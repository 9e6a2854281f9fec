"""The record page reproduces the seed's page (shared/seed/CP22-003-record.txt), section by
section and in the same order."""

from __future__ import annotations

from claimsdb.models import Revision

from .support import publish, signed_in, text_of

SECTIONS = [
    "Scope",
    "Assessment profile",
    "Basis and provenance",
    "At a glance",
    "Full account",
    "Claims &amp; evidence",
    "Controls and mitigations",
    "Unknowns and contradictions",
    "Sources and citation",
    "Material revision history",
]


def test_sections_in_the_seed_order(seeded, viewer):
    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()
    positions = [html.index(f">{title}</h2>") for title in SECTIONS]
    assert positions == sorted(positions)
    assert html.index("<h1") < positions[0]


def test_record_page_states_what_the_seed_page_states(seeded, viewer):
    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()
    text = text_of(html)
    # title, lede, inspect the record
    assert "SGLang asynchronous RDMA transfers could overwrite a newly assigned user cache" in text
    assert "The SGLang team demonstrated a separate cache corruption race" in text
    assert 'href="/cases/CP22-003/record.json">Inspect the record' in html
    # scope: the note, the rule that bounds the case, the relation
    assert "those response counts must not be assigned to the RDMA reproduction" in text
    assert "Must not be attributed here: the 155 responses (production) of CP22-002" in text
    assert "RULE-CP22-002-RESPONSES-NOT-CP22-003" in text
    assert "did not produce them" in text
    assert "Related but distinct: CP22-002" in text
    # the assessment profile, with the method's labels
    for label, value in [
        ("Setting", "research demonstration"),
        ("Exploitation", "demonstrated"),
        ("Evidence", "Grade B"),
        ("Remediation", "fixed reported"),
        ("AI role", "against AI"),
    ]:
        assert f"<dt>{label}</dt><dd>{value}</dd>" in html
    assert "Assessment method diggingbeagle.assessment/1" in text
    # basis and provenance
    assert "a production victim count is not supplied" in text
    assert "Assessed Oct 28, 2026 using diggingbeagle.assessment/1." in text
    assert (
        "Evidence basis: CLM-CP22-003-A · CLM-CP22-003-B · CLM-ENRICH-20261028-014 · "
        "SGLang disaggregated-prefill KV-cache transfer safety research"
    ) in text
    # at a glance
    assert "Limits and uncertainty" in text
    assert "Field prevalence and exact patched-version coverage" in text
    # full account
    assert "A prefill worker posts an asynchronous RDMA write" in text
    # claims and evidence
    for claim_id, locator in [
        ("CLM-CP22-003-A", "Technical analysis; RDMA transfer cancellation and slot reuse"),
        ("CLM-CP22-003-B", "Reproduction; Two-GPU experiment and transfer backends"),
        ("CLM-ENRICH-20261028-014", "Related KV cache lifetime issues; Deferred Release"),
    ]:
        claim = text_of(html.split(f'id="{claim_id}"', 1)[1].split("</article>", 1)[0])
        assert "supported" in claim
        assert "Basis: reported finding" in claim
        assert (
            "supports SGLang disaggregated-prefill KV-cache transfer safety research "
            "primary disclosure"
        ) in claim
        assert locator in claim
    # controls, unknowns
    assert "Drain or cancel posted writes before recycling cache slots" in text
    assert "The SGLang team has not supplied evidence" in text
    # sources and citation
    sources = text_of(html.split('id="sources"', 1)[1].split("</section>", 1)[0])
    assert "SGLang team. SGLang disaggregated-prefill KV-cache transfer safety research" in sources
    assert "Cite this record" in sources
    # material revision history
    number = Revision.objects.get(record_kind="case", record_key="CP22-003").number
    assert f"Revision {number} · create · Seed · by reviewer recorded " in text
    # loaded from the seed: the record keeps its own date (its assessment's) beside today's
    assert "· record dated Oct 28, 2026 · not yet released" in text
    assert "Canonical change recorded" not in text


def test_markdown_fields_are_rendered(seeded, reviewer):
    from claimsdb.records import record_document
    from claimsdb.services import record_update

    document = record_document("case", "CP22-003")
    document["account"] = (
        "First paragraph with *emphasis*.\n\n- one\n- two\n\n[PR](https://example.org/pr)"
    )
    record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary="md")
    html = signed_in(reviewer).get("/cases/CP22-003/").content.decode()
    account = html.split('id="account"', 1)[1].split("</section>", 1)[0]
    assert "<em>emphasis</em>" in account
    assert '<li dir="auto">one</li>' in account
    assert '<a href="https://example.org/pr" rel="noopener noreferrer nofollow">PR</a>' in account


def test_a_withdrawn_claims_words_in_the_lede_and_account_are_marked(seeded, analyst, viewer):
    from claimsdb.records import record_document
    from claimsdb.services import case_update, claim_withdraw

    document = record_document("case", "CP22-003")
    claim_a, claim_b = document["claims"][0], document["claims"][1]
    document["summary"] = f"In short: {claim_a['statement']}"
    document["account"] = f"As {claim_b['id']} says, it may happen.\n\nNothing else."
    # both claims are withdrawn below: the affected components rest on neither of them first
    for entry in document["affected"]:
        entry.update(status="under_investigation", claims=[])
    case_update(user=analyst, key="CP22-003", document=document, summary="Lede")
    for claim in (claim_a, claim_b):
        claim_withdraw(user=analyst, claim_id=claim["id"], summary="W", reason="Not borne out.")
    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()
    lede = html.split('<p class="lede">', 1)[1].split("</p>", 1)[0]
    assert '<del class="withdrawn-claim">' in lede
    assert f'href="#{claim_a["id"]}">withdrawn: {claim_a["id"]}</a>' in lede
    assert f'{claim_b["id"]} <span class="withdrawn-flag">(withdrawn)</span> says' in html


# --- controls citing a claim or a source ---------------------------------------------------

CITING = (
    "Fixed as CLM-CP22-003-A describes, by SRC-SGLANG-PR-35049 and SRC-SGLANG-KV-TRANSFER-SAFETY"
    " (not CLM-CP22-003-Z, SRC-NO-SUCH-SOURCE nor xCLM-CP22-003-A)."
)
CLAIM_LINK = '<a href="#CLM-CP22-003-A">CLM-CP22-003-A</a>'
SOURCE_LINK = '<a href="/sources/SRC-SGLANG-PR-35049/">SRC-SGLANG-PR-35049</a>'
CITED_SOURCE_LINK = (
    '<a href="/sources/SRC-SGLANG-KV-TRANSFER-SAFETY/">SRC-SGLANG-KV-TRANSFER-SAFETY</a>'
)


def controls_block(html: str) -> str:
    return html.split('<section id="controls"', 1)[1].split("</section>", 1)[0]


def set_controls(user, texts: list[str]) -> None:
    from .support import edit_case

    edit_case(user, "CP22-003", "Controls", controls=[{"kind": "fix", "text": t} for t in texts])


def test_a_control_citing_a_claim_and_sources_links_them(seeded, analyst, viewer):
    set_controls(analyst, [CITING])
    block = controls_block(signed_in(viewer).get("/cases/CP22-003/").content.decode())
    assert CLAIM_LINK in block and SOURCE_LINK in block and CITED_SOURCE_LINK in block
    # IDs naming nothing, and an ID inside a longer word, stay plain text
    assert "CLM-CP22-003-Z, SRC-NO-SUCH-SOURCE nor xCLM-CP22-003-A)." in block
    assert block.count("<a ") == 3


def test_a_controls_text_stays_escaped_around_its_links(seeded, analyst, viewer):
    set_controls(
        analyst,
        ['<script>alert(1)</script> see CLM-CP22-003-A"><img src=x onerror=alert(1)> &amp;'],
    )
    block = controls_block(signed_in(viewer).get("/cases/CP22-003/").content.decode())
    assert "<script>" not in block and "<img" not in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt; see " + CLAIM_LINK in block
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt; &amp;amp;" in block


def test_controls_citing_sources_take_as_many_queries_however_many(seeded, analyst, viewer):
    from .support import get_queries

    client = signed_in(viewer)
    set_controls(analyst, ["Fixed by SRC-SGLANG-PR-35049."])
    client.get("/cases/CP22-003/")
    one = get_queries(client, "/cases/CP22-003/")
    set_controls(
        analyst,
        [
            f"Fixed by {key} and CLM-CP22-003-B, not SRC-NOPE-{n}."
            for n, key in enumerate(
                ["SRC-SGLANG-PR-35049", "SRC-SGLANG-PR-35360", "SRC-SGLANG-PR-37077"] * 5
            )
        ],
    )
    assert get_queries(client, "/cases/CP22-003/") == one
    block = controls_block(client.get("/cases/CP22-003/").content.decode())
    assert block.count('<a href="/sources/SRC-SGLANG-PR-37077/">') == 5


def test_the_public_page_links_only_released_sources(seeded, analyst, reviewer):
    from django.test import Client

    from .support import create_source

    set_controls(analyst, [CITING + " Also SRC-UNRELEASED-FIX."])
    publish(reviewer, notes="Controls citing")
    create_source(analyst, "SRC-UNRELEASED-FIX")  # after the release: not published
    html = Client().get("/cases/CP22-003/").content.decode()
    block = controls_block(html)
    assert CLAIM_LINK in block and SOURCE_LINK in block
    assert "Also SRC-UNRELEASED-FIX." in block
    working = controls_block(signed_in(reviewer).get("/cases/CP22-003/").content.decode())
    assert '<a href="/sources/SRC-UNRELEASED-FIX/">' in working
