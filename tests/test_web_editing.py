"""Editing through the pages: each form builds a whole document and calls one service;
refusals are shown at the field the violation's path points to, with the input kept."""

from __future__ import annotations

from claimsdb.models import Attribution, Case, Claim
from claimsdb.records import record_document

from .support import (
    edit_form,
    field_block,
    latest_revision,
    page_forms,
    revision_count,
    signed_in,
    submit,
    text_of,
)

CASE = "CP22-003"
FORBIDDEN_FIGURE = "FIG-CP22-002-RESPONSES"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"


# --- the forbidden attribution (the seed's rule) ----------------------------------------------


def test_forbidden_attribution_is_refused_at_the_field_with_input_kept(analyst_client):
    before_revisions = revision_count()
    before_document = record_document("case", CASE)
    response = submit(
        analyst_client,
        f"/cases/{CASE}/attributions/edit/",
        {
            "attributions-0-figure": FORBIDDEN_FIGURE,
            "attributions-0-role": "impact_basis",
            "attributions-0-note": "my note about the 155 responses",
            "summary": "Use the production count",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    block = field_block(html, "attributions-0-figure")
    # the message names the rule and its reason, next to the field
    assert "RULE-CP22-002-RESPONSES-NOT-CP22-003" in text_of(block)
    assert "did not produce them" in text_of(block)
    assert 'class="error"' in block
    # the input is still there
    form = edit_form(html)
    data = form.data()
    assert data["attributions-0-figure"] == [FORBIDDEN_FIGURE]
    assert data["attributions-0-role"] == ["impact_basis"]
    assert data["attributions-0-note"] == ["my note about the 155 responses"]
    assert data["summary"] == ["Use the production count"]
    # nothing was written
    assert revision_count() == before_revisions
    assert Attribution.objects.count() == 0
    assert record_document("case", CASE) == before_document


def test_forbidden_attribution_as_context_is_refused_too(analyst_client):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/attributions/edit/",
        {
            "attributions-1-figure": FORBIDDEN_FIGURE,
            "attributions-1-role": "context",
            "summary": "context only",
        },
    )
    assert response.status_code == 422
    # the row the analyst filled (the second blank row) is the one marked
    assert "RULE-CP22-002" in text_of(
        field_block(response.content.decode(), "attributions-1-figure")
    )
    assert revision_count() == before


# --- case fields ------------------------------------------------------------------------------


def test_edit_case_fields_writes_one_revision(analyst_client, analyst):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/edit/",
        {
            "case-summary": "A new lede.",
            "case-tags": "rdma, kv-cache, new-tag",
            "summary": "Sharpen the lede",
            "material": None,
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{CASE}/"
    assert revision_count() == before + 1
    revision = latest_revision("case", CASE)
    assert revision.summary == "Sharpen the lede"
    assert revision.material is False
    assert revision.author == analyst
    document = record_document("case", CASE)
    assert document["summary"] == "A new lede."
    assert document["tags"] == ["kv-cache", "new-tag", "rdma"]
    page = analyst_client.get(f"/cases/{CASE}/").content.decode()
    assert "A new lede." in page
    assert f"Saved as revision {revision.number}" in page


def test_a_save_that_changes_nothing_writes_no_revision(analyst_client):
    before = revision_count()
    response = submit(analyst_client, f"/cases/{CASE}/edit/", summary="No change")
    assert response.status_code == 302
    assert revision_count() == before
    page = analyst_client.get(response["Location"]).content.decode()
    assert "Nothing changed" in page


def test_every_save_needs_a_summary(analyst_client):
    before = revision_count()
    response = submit(analyst_client, f"/cases/{CASE}/edit/", {"case-title": "X", "summary": ""})
    assert response.status_code == 400
    assert "This field is required" in text_of(field_block(response.content.decode(), "summary"))
    assert edit_form(response.content.decode()).data()["case-title"] == ["X"]
    assert revision_count() == before


def test_new_case_and_taken_key(analyst_client):
    response = submit(
        analyst_client,
        "/cases/new/",
        {
            "case-key": "CP22-004",
            "case-title": "A third case",
            "case-summary": "Lede",
            "summary": "New case CP22-004",
        },
    )
    assert response.status_code == 302
    assert Case.objects.filter(key="CP22-004", status="draft").exists()
    assert latest_revision("case", "CP22-004").action == "create"
    response = submit(
        analyst_client,
        "/cases/new/",
        {"case-key": CASE, "case-title": "Duplicate", "summary": "dup"},
    )
    assert response.status_code == 422
    assert "already exists" in text_of(field_block(response.content.decode(), "case-key"))


def test_invalid_case_key_is_shown_at_the_key(analyst_client):
    response = submit(
        analyst_client, "/cases/new/", {"case-key": "bad key", "case-title": "T", "summary": "s"}
    )
    assert response.status_code == 422
    assert 'class="error"' in field_block(response.content.decode(), "case-key")


# --- claims -----------------------------------------------------------------------------------


def test_add_a_claim_with_an_evidence_link(analyst_client):
    page = analyst_client.get(f"/cases/{CASE}/claims/new/").content.decode()
    form = edit_form(page)
    assert form.data()["claim-id"] == ["CLM-CP22-003-C"]  # the next free ID is suggested
    response = analyst_client.post(
        f"/cases/{CASE}/claims/new/",
        form.data(
            {
                "claim-statement": "Deferred release closes the window for Mooncake.",
                "claim-status": "supported",
                "claim-basis": "reported_finding",
                "evidence-0-source": "SRC-SGLANG-PR-35049",
                "evidence-0-relation": "supports",
                "evidence-0-locator": "PR description",
                "summary": "Add claim C",
            }
        ),
    )
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{CASE}/#claims"
    claims = record_document("case", CASE)["claims"]
    assert claims[-1]["id"] == "CLM-CP22-003-C"
    assert claims[-1]["evidence"] == [
        {"source": "SRC-SGLANG-PR-35049", "relation": "supports", "locator": "PR description"}
    ]
    html = analyst_client.get(f"/cases/{CASE}/").content.decode()
    assert "Deferred release closes the window for Mooncake." in html
    assert "sgl-project/sglang #35049" in html  # the source title, in claims and sources


def test_supported_claim_without_support_is_refused_at_the_evidence(analyst_client):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/claims/new/",
        {
            "claim-statement": "Unsupported",
            "claim-status": "supported",
            "claim-basis": "analyst_inference",
            "evidence-0-source": SOURCE,
            "evidence-0-relation": "context",
            "summary": "Add",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    evidence = html.split('id="evidence"', 1)[1]
    assert "needs at least one evidence link that supports it" in text_of(evidence)
    data = edit_form(html).data()
    assert data["claim-statement"] == ["Unsupported"]
    assert data["evidence-0-relation"] == ["context"]
    assert revision_count() == before


def test_taken_claim_id_is_shown_at_the_id(analyst_client):
    response = submit(
        analyst_client,
        f"/cases/{CASE}/claims/new/",
        {
            "claim-id": "CLM-CP22-002-A",
            "claim-statement": "Steal an ID",
            "claim-status": "unverified",
            "claim-basis": "analyst_inference",
            "summary": "Add",
        },
    )
    assert response.status_code == 422
    assert "already used by case CP22-002" in text_of(
        field_block(response.content.decode(), "claim-id")
    )


def test_edit_a_claim_and_its_links(analyst_client):
    url = f"/cases/{CASE}/claims/CLM-CP22-003-B/edit/"
    response = submit(
        analyst_client,
        url,
        {
            "claim-statement": "Reworded statement.",
            "claim-id": "CLM-HIJACK",  # disabled on the page: ignored
            "evidence-1-source": "SRC-SGLANG-ISSUE-24527",
            "evidence-1-relation": "context",
            "evidence-1-locator": "Steps 1–5",
            "evidence-1-ORDER": "1",
            "evidence-0-ORDER": "2",
            "summary": "Reword B, add context",
        },
    )
    assert response.status_code == 302
    claim = next(c for c in record_document("case", CASE)["claims"] if c["id"] == "CLM-CP22-003-B")
    assert claim["statement"] == "Reworded statement."
    assert [link["source"] for link in claim["evidence"]] == ["SRC-SGLANG-ISSUE-24527", SOURCE]
    # remove the context link again
    response = submit(analyst_client, url, {"evidence-0-DELETE": "on", "summary": "Drop link"})
    assert response.status_code == 302
    claim = next(c for c in record_document("case", CASE)["claims"] if c["id"] == "CLM-CP22-003-B")
    assert [link["source"] for link in claim["evidence"]] == [SOURCE]


def test_an_unknown_evidence_source_is_an_error_on_its_row(analyst_client):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/claims/CLM-CP22-003-A/edit/",
        {
            "evidence-1-source": "SRC-DOES-NOT-EXIST",
            "evidence-1-relation": "context",
            "summary": "cite nothing",
        },
    )
    assert response.status_code == 400
    assert "There is no source SRC-DOES-NOT-EXIST." in text_of(
        field_block(response.content.decode(), "evidence-1-source")
    )
    assert revision_count() == before


def test_violation_paths_map_to_form_fields(db):
    from django import forms

    from claimsdb.records import RuleViolation
    from claimsdb.web.editing import ViolationPlacer

    class Claim(forms.Form):
        id = forms.CharField()
        statement = forms.CharField()

    class Link(forms.Form):
        source = forms.CharField()
        relation = forms.CharField()

    class Row(forms.Form):
        figure = forms.CharField()

    class Assess(forms.Form):
        value_setting = forms.CharField()
        impact = forms.CharField()

    def bound(form_class):
        data = {name: "x" for name in form_class.base_fields}
        form = form_class(data)
        assert form.is_valid()
        return form

    claim, link0, link1, row, assess = (
        bound(Claim),
        bound(Link),
        bound(Link),
        bound(Row),
        bound(Assess),
    )
    placer = ViolationPlacer()
    placer.add("claims[3]", claim)
    placer.add("claims[3].evidence[0]", link0)
    placer.add("claims[3].evidence[1]", link1)
    placer.section("claims[3].evidence", "evidence")
    placer.add("attributions[0]", row)
    placer.add("assessments[1]", assess, {"values.setting": "value_setting", "impact": "impact"})
    violations = [
        RuleViolation("evidence.source_unknown", "no such source", "claims[3].evidence[1].source"),
        RuleViolation("claim.id_taken", "taken", "claims[3].id"),
        RuleViolation("claim.evidence_required", "needs support", "claims[3].evidence"),
        RuleViolation("scope.non_attribution", "forbidden", "attributions[0].figure"),
        RuleViolation("assessment.value_unknown", "bad value", "assessments[1].values.setting"),
        RuleViolation("claim.id_duplicate", "about another claim", "claims[4].statement"),
        RuleViolation("scope.rule_conflict", "elsewhere", "attributions[0].figure", "case X"),
        RuleViolation("claim.evidence_required", "the claim as a whole", "claims[3]"),
    ]
    top = placer.place(violations)
    assert link1.errors["source"] == ["no such source"]
    assert not link0.errors
    assert claim.errors["id"] == ["taken"]
    assert claim.non_field_errors() == ["the claim as a whole"]
    assert [v.message for v in placer.section_errors["evidence"]] == ["needs support"]
    assert row.errors["figure"] == ["forbidden"]
    assert assess.errors["value_setting"] == ["bad value"]
    assert [v.message for v in top] == ["about another claim", "elsewhere"]


def test_move_claims_up_and_down(analyst_client):
    page = analyst_client.get(f"/cases/{CASE}/claims/").content.decode()
    (form,) = [f for f in page_forms(page) if f.method == "post" and "summary" in f.names()]
    moves = [b for b in form.buttons if b[0] == "direction"]
    down_b = next(b for b in moves if b[1] == "down" and "CLM-CP22-003-B" in b[2])
    response = analyst_client.post(down_b[2], form.data(direction="down"))
    assert response.status_code == 302
    ids = [c["id"] for c in record_document("case", CASE)["claims"]]
    assert ids == ["CLM-CP22-003-A", "CLM-ENRICH-20261028-014", "CLM-CP22-003-B"]
    assert latest_revision("case", CASE).material is False  # reordering is editorial by default
    page = analyst_client.get(f"/cases/{CASE}/claims/").content.decode()
    (form,) = [f for f in page_forms(page) if f.method == "post" and "summary" in f.names()]
    response = analyst_client.post(
        f"/cases/{CASE}/claims/CLM-CP22-003-B/move/", form.data(direction="up")
    )
    assert response.status_code == 302
    ids = [c["id"] for c in record_document("case", CASE)["claims"]]
    assert ids == ["CLM-CP22-003-A", "CLM-CP22-003-B", "CLM-ENRICH-20261028-014"]


def test_withdraw_a_claim(analyst_client):
    response = submit(
        analyst_client,
        f"/cases/{CASE}/claims/CLM-CP22-003-A/withdraw/",
        {"withdraw-reason": "The report was retracted."},
    )
    assert response.status_code == 302
    claim = Claim.objects.get(claim_id="CLM-CP22-003-A")
    assert claim.status == "withdrawn"
    assert claim.status_note == "The report was retracted."
    assert latest_revision("case", CASE).summary == "Withdraw claim CLM-CP22-003-A"
    html = analyst_client.get(f"/cases/{CASE}/").content.decode()
    assert 'class="claim withdrawn"' in html


# --- assessments ------------------------------------------------------------------------------


def test_new_assessment_follows_the_method_and_becomes_current(analyst_client):
    url = f"/cases/{CASE}/assessments/new/"
    form = edit_form(analyst_client.get(url).content.decode())
    names = form.names()
    for dimension in ("setting", "exploitation", "evidence_grade", "remediation", "ai_role"):
        assert f"assessment-value_{dimension}" in names
    response = analyst_client.post(
        url,
        form.data(
            {
                "assessment-value_remediation": "fixed_verified",
                "assessment-assessed_on": "2026-12-01",
                "summary": "Reassess after the fixes",
            }
        ),
    )
    assert response.status_code == 302
    document = record_document("case", CASE)
    assert len(document["assessments"]) == 2
    assert document["assessments"][-1]["values"]["remediation"] == "fixed_verified"
    html = analyst_client.get(f"/cases/{CASE}/").content.decode()
    assert "fixed verified" in html
    assert "Assessed Dec 1, 2026 using diggingbeagle.assessment/1" in html
    assert "Earlier assessments (1)" in html


def test_graded_impact_without_production_basis_is_refused_at_impact(analyst_client):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/assessments/1/edit/",
        {
            "assessment-impact": "3",
            "assessment-impact_ungraded_reason": "",
            "summary": "Grade it",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "no claim in the evidence basis supports a production figure" in text_of(
        field_block(html, "assessment-impact")
    )
    assert edit_form(html).data()["assessment-impact"] == ["3"]
    assert revision_count() == before


def test_ungraded_impact_needs_a_reason(analyst_client):
    response = submit(
        analyst_client,
        f"/cases/{CASE}/assessments/1/edit/",
        {"assessment-impact_ungraded_reason": "", "summary": "Drop the reason"},
    )
    assert response.status_code == 422
    assert "needs a reason" in text_of(
        field_block(response.content.decode(), "assessment-impact_ungraded_reason")
    )


def test_missing_dimension_value_is_shown_at_its_choice(analyst_client):
    response = submit(
        analyst_client,
        f"/cases/{CASE}/assessments/1/edit/",
        {"assessment-value_setting": "", "summary": "Unset"},
    )
    # the form requires it before the services see it
    assert response.status_code == 400
    assert 'class="error"' in field_block(response.content.decode(), "assessment-value_setting")


# --- lists ------------------------------------------------------------------------------------


def test_figures_are_added_and_a_bad_id_is_shown_on_its_row(analyst_client):
    url = f"/cases/{CASE}/figures/edit/"
    response = submit(
        analyst_client,
        url,
        {
            "figures-0-id": "FIG-CP22-003-LATE-WRITES",
            "figures-0-value": "12",
            "figures-0-unit": "late writes",
            "figures-0-measure": "late_writes",
            "figures-0-scope": "lab",
            "figures-0-claims": ["CLM-CP22-003-B"],
            "summary": "Lab figure",
        },
    )
    assert response.status_code == 302
    figures = record_document("case", CASE)["figures"]
    assert figures[0]["value"] == 12 and figures[0]["claims"] == ["CLM-CP22-003-B"]
    response = submit(
        analyst_client,
        url,
        {
            "figures-1-id": "not-a-figure-id",
            "figures-1-value": "1",
            "figures-1-unit": "x",
            "figures-1-measure": "x",
            "figures-1-scope": "lab",
            "summary": "Bad",
        },
    )
    assert response.status_code == 422
    assert 'class="error"' in field_block(response.content.decode(), "figures-1-id")


def test_controls_and_unknowns_are_added_reordered_and_removed(analyst_client):
    url = f"/cases/{CASE}/unknowns/edit/"
    response = submit(
        analyst_client,
        url,
        {
            "unknowns-2-kind": "open_question",
            "unknowns-2-text": "Does the NIXL fix cover the timeout path?",
            "unknowns-2-ORDER": "0",
            "unknowns-0-DELETE": "on",
            "summary": "Question first, drop the first unknown",
        },
    )
    assert response.status_code == 302
    unknowns = record_document("case", CASE)["unknowns"]
    assert [u["kind"] for u in unknowns] == ["open_question", "unknown"]
    assert unknowns[1]["text"].startswith("The SGLang team has not supplied")
    response = submit(
        analyst_client,
        f"/cases/{CASE}/controls/edit/",
        {"controls-1-kind": "detection", "controls-1-text": "Checksums.", "summary": "Detect"},
    )
    assert response.status_code == 302
    assert [c["kind"] for c in record_document("case", CASE)["controls"]] == [
        "mitigation",
        "detection",
    ]


def test_blank_extra_rows_are_ignored(analyst_client):
    before = revision_count()
    response = submit(analyst_client, f"/cases/{CASE}/controls/edit/", summary="Nothing")
    assert response.status_code == 302
    assert revision_count() == before


def test_half_filled_row_is_an_error_on_that_row(analyst_client):
    response = submit(
        analyst_client,
        f"/cases/{CASE}/controls/edit/",
        {"controls-1-text": "No kind chosen", "summary": "half"},
    )
    assert response.status_code == 400
    assert 'class="error"' in field_block(response.content.decode(), "controls-1-kind")


def test_same_event_with_a_distinct_case_is_refused(analyst_client):
    before = revision_count()
    response = submit(
        analyst_client,
        f"/cases/{CASE}/relations/edit/",
        {
            "relations-1-case": "CP22-002",
            "relations-1-kind": "same_event",
            "summary": "Same event?",
        },
    )
    assert response.status_code == 422
    assert "cannot be both the same event and related but distinct" in text_of(
        response.content.decode()
    )
    assert revision_count() == before


# --- sources, rules, methods ------------------------------------------------------------------


def test_sources_are_created_and_edited(analyst_client):
    response = submit(
        analyst_client,
        "/sources/new/",
        {
            "source-key": "SRC-VENDOR-NOTE",
            "source-title": "Vendor note",
            "source-kind": "vendor_advisory",
            "source-url": "https://example.org/note",
            "source-published_on": "2026-11-02",
            "summary": "New source",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/sources/SRC-VENDOR-NOTE/"
    document = record_document("source", "SRC-VENDOR-NOTE")
    assert document["published_on"] == "2026-11-02"
    response = submit(
        analyst_client,
        "/sources/SRC-VENDOR-NOTE/edit/",
        {"source-reliability": "C", "summary": "Rate it"},
    )
    assert response.status_code == 302
    assert record_document("source", "SRC-VENDOR-NOTE")["reliability"] == "C"
    response = submit(
        analyst_client,
        "/sources/new/",
        {"source-key": "SRC-VENDOR-NOTE", "source-title": "again", "summary": "dup"},
    )
    assert response.status_code == 422
    assert "already exists" in text_of(field_block(response.content.decode(), "source-key"))


def test_reviewer_edits_a_rule_and_a_conflicting_rule_is_refused(reviewer_client, analyst):
    response = submit(
        reviewer_client,
        "/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/edit/",
        {"rule-reason": "Reworded reason.", "summary": "Reword"},
    )
    assert response.status_code == 302
    # a rule forbidding a figure in its own case is a conflict, shown at the case field
    before = revision_count()
    response = submit(
        reviewer_client,
        "/rules/new/",
        {
            "rule-key": "RULE-SELF",
            "rule-figure": FORBIDDEN_FIGURE,
            "rule-case": "CP22-002",
            "rule-reason": "nonsense",
            "summary": "Bad rule",
        },
    )
    assert response.status_code == 422
    assert "cannot forbid attributing a figure to its own case" in text_of(
        field_block(response.content.decode(), "rule-case")
    )
    assert revision_count() == before


def test_rule_that_existing_data_breaks_lists_the_offending_record(reviewer_client, reviewer):
    from claimsdb.services import record_update

    document = record_document("case", "CP22-002")
    document["relations"] = []
    record_update(kind="case", key="CP22-002", document=document, user=reviewer, summary="x")
    document = record_document("case", "CP22-003")
    document["relations"] = [{"case": "CP22-002", "kind": "same_event", "note": ""}]
    document["attributions"] = [{"figure": FORBIDDEN_FIGURE, "role": "context", "note": ""}]
    # the active rule forbids it: withdraw the rule first, then attribute, then try it again
    rule = record_document("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")
    rule["status"] = "withdrawn"
    record_update(kind="rule", key=rule["key"], document=rule, user=reviewer, summary="off")
    record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary="x")
    before = revision_count()
    response = submit(
        reviewer_client,
        "/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/edit/",
        {"rule-status": "active", "summary": "Reactivate"},
    )
    assert response.status_code == 422
    html = text_of(response.content.decode())
    assert "The change was refused" in html
    assert "case CP22-003" in html
    assert revision_count() == before


def test_methods_new_version_and_in_use_method_refused(reviewer_client):
    before = revision_count()
    response = submit(
        reviewer_client,
        "/methods/diggingbeagle.assessment/1/edit/",
        {"method-title": "Renamed", "summary": "Rename"},
    )
    assert response.status_code == 422
    assert revision_count() == before
    page = reviewer_client.get("/methods/new/?from=diggingbeagle.assessment/1").content.decode()
    form = edit_form(page)
    assert form.data()["method-key"] == ["diggingbeagle.assessment/2"]
    response = reviewer_client.post("/methods/new/", form.data(summary="Version 2"))
    assert response.status_code == 302
    assert record_document("method", "diggingbeagle.assessment/2")["title"].startswith(
        "DiggingBeagle"
    )
    response = reviewer_client.post(
        "/methods/new/",
        form.data({"method-key": "x/3", "method-dimensions": "{not json", "summary": "bad"}),
    )
    assert response.status_code == 400
    assert "not valid JSON" in text_of(field_block(response.content.decode(), "method-dimensions"))


# --- no lost edits ----------------------------------------------------------------------------


def test_stale_edit_shows_the_other_change_and_keeps_the_input(seeded, analyst, reviewer):
    mine, theirs = signed_in(analyst), signed_in(reviewer)
    url = f"/cases/{CASE}/edit/"
    my_form = edit_form(mine.get(url).content.decode())
    their_form = edit_form(theirs.get(url).content.decode())
    base = my_form.data()["base_revision"]
    response = theirs.post(
        url, their_form.data({"case-title": "Their new title", "summary": "Their edit"})
    )
    assert response.status_code == 302
    before = revision_count()
    response = mine.post(
        url, my_form.data({"case-limits": "My new limits text.", "summary": "My edit"})
    )
    assert response.status_code == 409
    html = response.content.decode()
    text = text_of(html)
    assert "Someone else saved this record while you were editing" in text
    conflict = html.split('class="conflict"', 1)[1].split("</section>", 1)[0]
    assert "<ins>Their new title</ins>" in conflict
    assert "<del>SGLang asynchronous RDMA transfers" in conflict
    kept = edit_form(html).data()
    assert kept["case-limits"] == ["My new limits text."]  # my input stays
    assert kept["summary"] == ["My edit"]
    assert kept["case-title"] == ["Their new title"]  # a field I did not touch takes theirs
    assert kept["base_revision"] != base  # now based on their revision
    assert revision_count() == before
    # having seen their change, saving again applies mine on top of theirs
    response = mine.post(url, edit_form(html).data())
    assert response.status_code == 302
    document = record_document("case", CASE)
    assert document["limits"] == "My new limits text."
    assert document["title"] == "Their new title"


def test_stale_edit_of_the_same_field_keeps_mine_and_shows_theirs(seeded, analyst, reviewer):
    mine, theirs = signed_in(analyst), signed_in(reviewer)
    url = f"/cases/{CASE}/edit/"
    my_form = edit_form(mine.get(url).content.decode())
    assert submit(theirs, url, {"case-title": "Their title", "summary": "T"}).status_code == 302
    response = mine.post(url, my_form.data({"case-title": "My title", "summary": "M"}))
    assert response.status_code == 409
    html = response.content.decode()
    assert edit_form(html).data()["case-title"] == ["My title"]
    block = text_of(field_block(html, "case-title"))
    assert "Also changed in revision" in block and "Their title" in block
    response = mine.post(url, edit_form(html).data())
    assert response.status_code == 302
    assert record_document("case", CASE)["title"] == "My title"


def test_stale_claim_edit_keeps_other_claims_changes(seeded, analyst, reviewer):
    mine, theirs = signed_in(analyst), signed_in(reviewer)
    url_a = f"/cases/{CASE}/claims/CLM-CP22-003-A/edit/"
    url_b = f"/cases/{CASE}/claims/CLM-CP22-003-B/edit/"
    my_form = edit_form(mine.get(url_a).content.decode())
    assert (
        submit(theirs, url_b, {"claim-statement": "B changed", "summary": "B"}).status_code == 302
    )
    response = mine.post(url_a, my_form.data({"claim-statement": "A changed", "summary": "A"}))
    assert response.status_code == 409
    assert "B changed" in response.content.decode()
    response = mine.post(url_a, edit_form(response.content.decode()).data())
    assert response.status_code == 302
    statements = {c["id"]: c["statement"] for c in record_document("case", CASE)["claims"]}
    assert statements["CLM-CP22-003-A"] == "A changed"
    assert statements["CLM-CP22-003-B"] == "B changed"


def test_stale_claim_withdrawal_and_move_are_refused_with_the_other_change(
    seeded, analyst, reviewer
):
    mine, theirs = signed_in(analyst), signed_in(reviewer)
    withdraw_url = f"/cases/{CASE}/claims/CLM-CP22-003-A/withdraw/"
    withdraw_form = edit_form(mine.get(withdraw_url).content.decode())
    page = mine.get(f"/cases/{CASE}/claims/").content.decode()
    (arrange,) = [f for f in page_forms(page) if f.method == "post" and "summary" in f.names()]
    url_b = f"/cases/{CASE}/claims/CLM-CP22-003-B/edit/"
    assert (
        submit(theirs, url_b, {"claim-statement": "B changed", "summary": "B"}).status_code == 302
    )
    before = revision_count()
    response = mine.post(withdraw_url, withdraw_form.data({"withdraw-reason": "Retracted."}))
    assert response.status_code == 409
    assert "B changed" in response.content.decode()
    response = mine.post(
        f"/cases/{CASE}/claims/CLM-CP22-003-A/move/", arrange.data(direction="down")
    )
    assert response.status_code == 409
    assert revision_count() == before
    claims = record_document("case", CASE)["claims"]
    assert [c["id"] for c in claims][:2] == ["CLM-CP22-003-A", "CLM-CP22-003-B"]
    assert claims[0]["status"] != "withdrawn" and claims[1]["statement"] == "B changed"


def test_csrf_is_required(seeded, analyst):
    client = signed_in(analyst, enforce_csrf_checks=True)
    before = revision_count()
    form = edit_form(client.get(f"/cases/{CASE}/edit/").content.decode())
    data = form.data({"case-title": "CSRF", "summary": "x"})
    assert "csrfmiddlewaretoken" in data
    response = client.post(f"/cases/{CASE}/edit/", {**data, "csrfmiddlewaretoken": "bad"})
    assert response.status_code == 403
    assert revision_count() == before
    response = client.post(f"/cases/{CASE}/edit/", data)
    assert response.status_code == 302
    assert revision_count() == before + 1


def test_browser_line_endings_do_not_change_untouched_text(analyst_client):
    """Browsers send textarea lines ending in CRLF: an untouched field must save unchanged."""
    before = revision_count()
    form = edit_form(analyst_client.get(f"/cases/{CASE}/edit/").content.decode())
    data = form.data()
    for name in ("case-account", "case-summary", "case-basis", "case-limits", "case-scope_note"):
        data[name] = [value.replace("\n", "\r\n") for value in data[name]]
    assert "\r\n" in data["case-account"][0]
    data["summary"] = ["Nothing really"]
    response = analyst_client.post(f"/cases/{CASE}/edit/", data)
    assert response.status_code == 302
    assert revision_count() == before


def test_a_stale_edit_gives_one_instruction_and_no_doubled_full_stop(seeded, analyst, reviewer):
    mine, theirs = signed_in(analyst), signed_in(reviewer)
    url = f"/cases/{CASE}/edit/"
    my_form = edit_form(mine.get(url).content.decode())
    their_limits = "Nothing is known about chat titles."
    assert submit(theirs, url, {"case-limits": their_limits, "summary": "T"}).status_code == 302
    response = mine.post(url, my_form.data({"case-limits": "Mine.", "summary": "M"}))
    assert response.status_code == 409
    html = response.content.decode()
    text = text_of(html)
    # the banner says what happened and one thing to do: the form keeps the input merged,
    # saving again applies it; it never also says to reload and reapply
    assert "Reload it" not in text and "reapply" not in text
    assert "has changed since revision" in text
    assert "saving again applies yours" in text
    block = text_of(field_block(html, "case-limits"))
    assert f"to: {their_limits} Your value is kept here" in block
    assert ".." not in block


def test_the_api_still_says_how_to_recover_from_a_stale_edit(seeded, analyst):
    from claimsdb.records.errors import StaleRevision

    stale = StaleRevision(record="case CP22-003", expected=3, current=4)
    assert stale.what == "case CP22-003 has changed since revision 3: its latest revision is 4."
    assert stale.violations[0].message == (
        f"{stale.what} Reload it, reapply your change and save again."
    )
