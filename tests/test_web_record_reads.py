"""The analyst's vocabulary where it is used, withdrawal with a reason, and a record page
that says each thing once."""

from __future__ import annotations

import datetime as dt
import html as html_module
import re

import pytest

from claimsdb import release_facets
from claimsdb.models import Claim, Revision
from claimsdb.records import RuleViolations, record_document
from claimsdb.selectors import revisions
from claimsdb.services import case_update, claim_withdraw, record_create, record_update

from .support import (
    edit_form,
    field_block,
    get_queries,
    publish,
    revision_count,
    signed_in,
    text_of,
)

CASE = "CP22-003"
CLAIM = "CLM-CP22-003-A"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
NARRATIVE_START = "The SGLang team reproduces stale RDMA writes into recycled KV slots"
REASON_START = "Impact is left ungraded because a calibrated 0-to-4 impact basis"


def visible(html: str) -> str:
    """The text a reader sees: tags dropped where they stand, whitespace collapsed."""
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", html)).split())


def option_items(html: str, field_name: str) -> dict[str, str]:
    """The radio options of a field: value → the visible text of its list item."""
    block = field_block(html, field_name)
    items = {}
    for item in re.findall(r"<li>(.*?)</li>", block, re.S):
        value = re.search(r'value="([^"]*)"', item)
        assert value, item
        items[value.group(1)] = visible(item)
    return items


# --- 1. vocabulary at the point of choice ---------------------------------------------------


def test_assessment_form_shows_each_values_definition_beside_it(analyst_client, seeded):
    html = analyst_client.get(f"/cases/{CASE}/assessments/1/edit/").content.decode()
    method = seeded["methods"][0]
    for dimension in method["dimensions"]:
        items = option_items(html, f"assessment-value_{dimension['key']}")
        assert list(items) == [v["key"] for v in dimension["values"]]
        for value in dimension["values"]:
            assert items[value["key"]] == f"{value['label']} {value['definition']}"
    grades = option_items(html, "assessment-impact")
    for grade, definition in method["impact"]["definitions"].items():
        assert definition in grades[grade]
        assert grades[grade].startswith(f"{grade} — {method['impact']['labels'][grade]}")
    assert "say why below" in grades[""]
    # the current values are the ones chosen
    data = edit_form(html).data()
    assert data["assessment-value_setting"] == ["research_demonstration"]
    assert data["assessment-impact"] == [""]


def test_an_unchosen_value_is_refused_at_its_field(analyst_client):
    form = edit_form(analyst_client.get(f"/cases/{CASE}/assessments/1/edit/").content.decode())
    before = revision_count()
    response = analyst_client.post(
        f"/cases/{CASE}/assessments/1/edit/",
        form.data({"assessment-value_setting": None, "summary": "Unset the setting"}),
    )
    assert response.status_code == 400
    assert 'class="error"' in field_block(response.content.decode(), "assessment-value_setting")
    assert revision_count() == before


def method_document(key: str, **impact) -> dict:
    return {
        "format": "claimsdb.method/1",
        "key": key,
        "title": "A method",
        "dimensions": [
            {"key": "setting", "label": "Setting", "values": [{"key": "lab", "label": "lab"}]}
        ],
        "impact": {"min": 0, "max": 2, "labels": {}, **impact},
        "status": "active",
    }


def test_method_definitions_are_optional_and_stay_out_when_left_out(seeded, reviewer):
    record_create(
        user=reviewer, kind="method", document=method_document("plain.method/1"), summary="New"
    )
    document = record_document("method", "plain.method/1")
    assert "definition" not in document["dimensions"][0]["values"][0]
    assert "definitions" not in document["impact"]


def test_an_impact_definition_off_the_scale_is_refused(seeded, reviewer):
    document = method_document("defined.method/1", definitions={"7": "beyond the scale"})
    with pytest.raises(RuleViolations) as refused:
        record_create(user=reviewer, kind="method", document=document, summary="New")
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("method.invalid", "impact.definitions.7")
    ]


def test_record_page_labels_every_control_and_unknown_with_its_kind(seeded, viewer):
    html = signed_in(viewer).get(f"/cases/{CASE}/").content.decode()
    controls = html[html.index('id="controls"') : html.index('id="unknowns"')]
    unknowns = html[html.index('id="unknowns"') : html.index('id="sources"')]
    assert controls.count('<span class="badge kind kind-mitigation">mitigation</span>') == 1
    assert (
        "<dt>mitigation</dt><dd>lowers the likelihood or the harm; the cause remains</dd>"
        in controls
    )
    assert "<dt>fix</dt>" not in controls  # the legend names only the kinds used
    assert unknowns.count('<span class="badge kind kind-unknown">unknown</span>') == 2
    assert "<dt>unknown</dt><dd>not established by the evidence either way</dd>" in unknowns


# --- 2. withdrawal with a reason ------------------------------------------------------------


@pytest.mark.parametrize("reason", ["", "  \r\n "])
def test_withdrawing_without_a_reason_is_refused_at_the_field(analyst_client, reason):
    url = f"/cases/{CASE}/claims/{CLAIM}/withdraw/"
    form = edit_form(analyst_client.get(url).content.decode())
    before = revision_count()
    response = analyst_client.post(
        url, form.data({"withdraw-reason": reason, "summary": "Withdraw it, my words"})
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Say why the claim is withdrawn." in text_of(field_block(html, "withdraw-reason"))
    assert edit_form(html).data()["summary"] == ["Withdraw it, my words"]
    assert revision_count() == before
    assert Claim.objects.get(claim_id=CLAIM).status == "supported"


def withdraw(client, reason: str = "The vendor retracted the figure.") -> None:
    url = f"/cases/{CASE}/claims/{CLAIM}/withdraw/"
    form = edit_form(client.get(url).content.decode())
    response = client.post(url, form.data({"withdraw-reason": reason}))
    assert response.status_code == 302


def test_withdrawn_claim_card_shows_the_date_and_the_reason(analyst_client):
    withdraw(analyst_client)
    document = record_document("case", CASE)
    claim = next(c for c in document["claims"] if c["id"] == CLAIM)
    assert (claim["status"], claim["status_note"]) == (
        "withdrawn",
        "The vendor retracted the figure.",
    )
    when = Revision.objects.filter(record_key=CASE).latest("number").created_at
    html = analyst_client.get(f"/cases/{CASE}/").content.decode()
    card = html[html.index(f'id="{CLAIM}"') : html.index("</article>", html.index(f'id="{CLAIM}"'))]
    assert (
        f"Withdrawn on {when:%b} {when.day}, {when.year}: The vendor retracted the figure."
        in visible(card)
    )
    assert "Withdraw</a>" not in card


def test_the_withdrawal_date_is_that_of_the_revision_that_withdrew_the_claim(
    analyst_client, analyst
):
    withdraw(analyst_client)
    withdrawing = Revision.objects.filter(record_key=CASE).latest("number")
    Revision.objects.filter(pk=withdrawing.pk).update(
        created_at=dt.datetime(2026, 11, 2, 12, tzinfo=dt.UTC)
    )
    document = record_document("case", CASE)
    document["limits"] += " Edited after the withdrawal."
    record_update(user=analyst, kind="case", key=CASE, document=document, summary="Later edit")
    text = visible(analyst_client.get(f"/cases/{CASE}/").content.decode())
    assert "Withdrawn on Nov 2, 2026: The vendor retracted the figure." in text


def test_a_withdrawal_older_than_the_revisions_read_is_dated_on_or_before(
    analyst_client, analyst, monkeypatch
):
    monkeypatch.setattr(revisions, "WITHDRAWAL_LOOKBACK", 2)
    withdraw(analyst_client)
    for n in range(2):
        document = record_document("case", CASE)
        document["limits"] += f" Edit {n}."
        record_update(user=analyst, kind="case", key=CASE, document=document, summary=f"Edit {n}")
    oldest_read = Revision.objects.filter(record_key=CASE).order_by("-number")[1].created_at
    text = visible(analyst_client.get(f"/cases/{CASE}/").content.decode())
    assert f"Withdrawn on or before {oldest_read:%b} {oldest_read.day}, {oldest_read.year}:" in text


def test_withdrawal_dates_take_a_fixed_number_of_queries(seeded, analyst, viewer):
    # every claim is withdrawn below: the affected components rest on none of them first
    document = record_document("case", CASE)
    for entry in document["affected"]:
        entry.update(status="under_investigation", claims=[])
    case_update(user=analyst, key=CASE, document=document, summary="Under investigation")
    claim_withdraw(user=analyst, claim_id=CLAIM, summary="One", reason="first")
    client = signed_in(viewer)
    client.get("/")

    def queries() -> int:
        return get_queries(client, f"/cases/{CASE}/")

    one = queries()
    for claim_id in ("CLM-CP22-003-B", "CLM-ENRICH-20261028-014"):
        claim_withdraw(user=analyst, claim_id=claim_id, summary="More", reason="later")
    assert queries() == one


def test_source_page_marks_withdrawn_claims_in_cited_by(analyst_client):
    withdraw(analyst_client)
    html = analyst_client.get(f"/sources/{SOURCE}/").content.decode()
    cited = html[html.index('id="h-cited"') : html.index('id="h-hist"')]
    items = re.findall(r"<li( class=\"withdrawn\")?>(.*?)</li>", cited, re.S)
    marked = {re.search(r"(CLM-[A-Z0-9-]+)</a>", body).group(1): bool(cls) for cls, body in items}
    assert marked == {
        "CLM-CP22-002-A": False,
        CLAIM: True,
        "CLM-CP22-003-B": False,
        "CLM-ENRICH-20261028-014": False,
    }
    assert '<span class="badge claim-withdrawn">withdrawn</span>' in cited


def test_claim_and_link_counts_leave_withdrawn_claims_out(analyst_client):
    assert "3 claims" in text_of(analyst_client.get("/cases/").content.decode())
    assert "cited by 4 evidence links" in text_of(analyst_client.get("/sources/").content.decode())
    withdraw(analyst_client)
    assert "2 claims" in text_of(analyst_client.get("/cases/").content.decode())
    assert "cited by 3 evidence links" in text_of(analyst_client.get("/sources/").content.decode())


def test_released_counts_leave_withdrawn_claims_out(seeded, analyst, reviewer, client):
    claim_withdraw(user=analyst, claim_id=CLAIM, summary="Withdraw", reason="Retracted.")
    publish(reviewer, notes="With a withdrawn claim")
    assert "2 claims" in text_of(client.get("/cases/").content.decode())
    assert "cited by 3 evidence links" in text_of(client.get("/sources/").content.decode())
    cited = client.get(f"/sources/{SOURCE}/").content.decode()
    assert '<li class="withdrawn">' in cited


def test_a_withdrawn_claims_source_stays_a_term_with_its_links_uncounted():
    document = {
        "claims": [
            {"status": "withdrawn", "evidence": [{"source": "SRC-A"}, {"source": "SRC-B"}]},
            {"status": "supported", "evidence": [{"source": "SRC-B"}]},
        ]
    }
    terms = release_facets.revision_terms("case", document)
    assert [t for t in terms if t[0] == "source"] == [
        ("source", "SRC-A", 0),
        ("source", "SRC-B", 1),
    ]


# --- 3. the record page reads once ----------------------------------------------------------


def test_seed_record_page_shows_the_repeated_paragraph_once(seeded, viewer):
    html = signed_in(viewer).get(f"/cases/{CASE}/").content.decode()
    text = text_of(html)
    assert text.count(NARRATIVE_START) == 1
    assert text.count(REASON_START) == 1
    assert "Same as the assessor's narrative and the reason the impact is ungraded, above." in text
    assert '<details class="narrative" open>' in html


def test_a_basis_of_its_own_is_shown_in_full(seeded, analyst, viewer):
    document = record_document("case", CASE)
    document["basis"] = document["basis"] + " The maintainers confirmed the fix in a reply."
    record_update(user=analyst, kind="case", key=CASE, document=document, summary="Basis")
    text = text_of(signed_in(viewer).get(f"/cases/{CASE}/").content.decode())
    assert "Same as" not in text
    assert text.count(NARRATIVE_START) == 2
    assert "The maintainers confirmed the fix in a reply." in text


def test_a_narrative_that_is_the_ungraded_reason_is_shown_once(seeded, analyst, viewer):
    document = record_document("case", CASE)
    assessment = document["assessments"][-1]
    assessment["narrative"] = "  " + assessment["impact_ungraded_reason"].replace(" ", "\n", 3)
    document["basis"] = "Taken from the vendor's write-up."
    record_update(user=analyst, kind="case", key=CASE, document=document, summary="Same texts")
    text = text_of(signed_in(viewer).get(f"/cases/{CASE}/").content.decode())
    assert text.count(REASON_START) == 1
    assert "The assessor's narrative is the same as the reason the impact is ungraded" in text
    assert "Taken from the vendor's write-up." in text
