"""History, revisions as they were, diffs of two revisions, and reverts."""

from __future__ import annotations

import re

import pytest

from claimsdb.models import Revision
from claimsdb.records import record_document
from claimsdb.services import bundle_load, record_update, rule_update, rule_withdraw

from .support import (
    attribute,
    bundle_of,
    case_doc,
    edit_form,
    page_forms,
    relate,
    revision_count,
    revision_numbers,
    signed_in,
    submit,
    text_of,
)

CASE = "CP22-003"
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"


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
    return revision_numbers("case", CASE)


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


def revert_preview(client, number: int) -> str:
    """The revert page, reached as a reviewer reaches it: the link on the revision page."""
    page = client.get(f"/cases/{CASE}/revisions/{number}/").content.decode()
    (link,) = set(re.findall(r'href="([^"]*/revert/)"', page))
    assert link == f"/cases/{CASE}/revisions/{number}/revert/"
    response = client.get(link)
    assert response.status_code == 200
    return response.content.decode()


def revert_form(html: str):
    return next(f for f in page_forms(html) if "/revert/" in f.action and f.method == "post")


@pytest.fixture
def drafted(seeded, analyst, reviewer):
    """CP22-003 set back to draft, then made ready again (by a reviewer) with two new
    claims."""
    document = record_document("case", CASE)
    document["status"] = "draft"
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Draft")
    draft = revision_numbers("case", CASE)[-1]
    document = record_document("case", CASE)
    document["status"] = "ready"
    for letter in ("X", "Y"):
        document["claims"].append(
            {
                "id": f"CLM-CP22-003-{letter}",
                "statement": f"Claim {letter}.",
                "status": "unverified",
                "status_note": "",
                "basis": "analyst_inference",
                "origin": "human",
                "evidence": [{"source": SOURCE, "relation": "context", "locator": ""}],
            }
        )
    record_update(kind="case", key=CASE, document=document, user=reviewer, summary="Ready, X, Y")
    return draft


def test_revert_shows_a_preview_first_and_writes_nothing(edited, reviewer):
    first, _second, third = edited
    client = signed_in(reviewer)
    before = revision_count()
    html = revert_preview(client, first)
    text = text_of(html)
    assert revision_count() == before  # opening the preview writes nothing
    assert "It removes 1 claim: CLM-CP22-003-C." in text
    assert "It changes the title back to “SGLang asynchronous RDMA transfers" in text
    assert f"From the record as it is now — revision {third}" in text
    # the diff from now to the result: the claim that goes is shown removed, as its fields
    assert "Claim CLM-CP22-003-C" in text and "A new first claim." in text
    form = revert_form(html)
    assert form.data()["summary"] == [f"Revert to revision {first}"]
    assert form.data()["base_revision"] == [str(third)]
    assert form.data()["material"] == ["on"]


def test_preview_says_a_status_change_and_the_claims_removed_in_words(drafted, reviewer):
    html = revert_preview(signed_in(reviewer), drafted)
    effects = html.split('class="revert-effects"', 1)[1].split("</section>", 1)[0]
    assert "This revert moves the case from ready back to draft." in text_of(effects)
    assert "It removes 2 claims: CLM-CP22-003-X, CLM-CP22-003-Y." in text_of(effects)


def test_preview_says_claims_restored(drafted, analyst, reviewer):
    seed = revision_numbers("case", CASE)[0]
    document = record_document("case", CASE)
    document["claims"] = [c for c in document["claims"] if c["id"] != "CLM-CP22-003-B"]
    document["assessments"][0]["evidence_basis"]["claims"].remove("CLM-CP22-003-B")
    for entry in document["affected"]:  # the affected components rest on A instead
        entry["claims"] = ["CLM-CP22-003-A"]
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Drop B")
    text = text_of(revert_preview(signed_in(reviewer), seed))
    assert "It restores 1 claim: CLM-CP22-003-B." in text
    assert "It removes 2 claims: CLM-CP22-003-X, CLM-CP22-003-Y." in text


def test_reviewer_confirms_a_revert_and_it_is_written(edited, reviewer):
    first, _second, third = edited
    client = signed_in(reviewer)
    form = revert_form(revert_preview(client, first))
    response = client.post(form.action, form.data(summary="Back to the seed"))
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{CASE}/"
    revision = Revision.objects.order_by("-number").first()
    assert revision.action == "revert"
    assert revision.summary == "Back to the seed"
    assert [c["id"] for c in record_document("case", CASE)["claims"]][0] == "CLM-CP22-003-A"
    assert revision.number == third + 1
    page = client.get(response["Location"]).content.decode()
    assert f"Reverted to revision {first} as revision {revision.number}." in text_of(page)


def test_stale_revert_is_refused_and_changes_nothing(edited, reviewer, analyst):
    first, _second, third = edited
    client = signed_in(reviewer)
    form = revert_form(revert_preview(client, first))
    document = record_document("case", CASE)
    document["summary"] = "Changed meanwhile"
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Meanwhile")
    meanwhile = revision_numbers("case", CASE)[-1]
    before = revision_count()
    response = client.post(form.action, form.data(summary="Back, having looked"))
    assert response.status_code == 409
    html = response.content.decode()
    text = text_of(html)
    assert f"has changed since revision {third}" in text
    assert "Nothing was reverted." in text
    # one instruction (confirm again), not also the API's "reload and reapply"
    assert "Reload it" not in text and "reapply" not in text
    assert "Changed meanwhile" in text  # what changed since the preview
    assert revision_count() == before
    assert record_document("case", CASE)["summary"] == "Changed meanwhile"
    # the page previews again from the new state; the summary typed is kept
    again = revert_form(html)
    assert again.data()["base_revision"] == [str(meanwhile)]
    assert again.data()["summary"] == ["Back, having looked"]
    assert client.post(again.action, again.data()).status_code == 302
    assert Revision.objects.order_by("-number").first().action == "revert"


def test_revert_needs_a_summary(edited, reviewer):
    first = edited[0]
    client = signed_in(reviewer)
    form = revert_form(revert_preview(client, first))
    before = revision_count()
    response = client.post(form.action, form.data(summary=""))
    assert response.status_code == 400
    assert "This field is required." in text_of(response.content.decode())
    assert revision_count() == before


def test_editorial_revert_is_recorded_as_editorial(edited, reviewer):
    first = edited[0]
    client = signed_in(reviewer)
    form = revert_form(revert_preview(client, first))
    client.post(form.action, form.data(summary="Undo", material=None))
    revision = Revision.objects.order_by("-number").first()
    assert (revision.action, revision.material) == ("revert", False)


def test_revert_refused_by_todays_rules_is_shown_on_the_preview(seeded, reviewer):
    rule_withdraw(user=reviewer, key=RULE, summary="Withdraw")
    cp3 = attribute(relate(case_doc(seeded, "CP22-003"), "CP22-002", "same_event"), "context")
    cp2 = relate(case_doc(seeded, "CP22-002"), "CP22-003", "same_event")
    bundle_load(user=reviewer, bundle=bundle_of(cases=[cp2, cp3]), summary="Merge events")
    merged = revision_numbers("case", CASE)[-1]
    bundle_load(
        user=reviewer,
        bundle=bundle_of(cases=[case_doc(seeded, "CP22-002"), case_doc(seeded, "CP22-003")]),
        summary="Split again",
    )
    rule = record_document("rule", RULE)
    rule["status"] = "active"
    rule_update(user=reviewer, key=RULE, document=rule, summary="Reactivate")
    client = signed_in(reviewer)
    form = revert_form(revert_preview(client, merged))
    before = revision_count()
    response = client.post(form.action, form.data())
    assert response.status_code == 422
    text = text_of(response.content.decode())
    assert "The revert was refused" in text and "scope.non_attribution" in text
    assert revision_count() == before


def test_latest_revision_offers_no_revert(edited, reviewer):
    third = edited[-1]
    client = signed_in(reviewer)
    assert "/revert/" not in client.get(f"/cases/{CASE}/revisions/{third}/").content.decode()
    html = client.get(f"/cases/{CASE}/revisions/{third}/revert/").content.decode()
    assert "a revert would change nothing" in text_of(html)
    assert [f for f in page_forms(html) if "/revert/" in f.action] == []


def test_history_links_each_earlier_revision_to_its_revert_preview(edited, reviewer, viewer):
    first, second, third = edited
    html = signed_in(reviewer).get(f"/cases/{CASE}/history/").content.decode()
    for number in (first, second):
        assert f'href="/cases/{CASE}/revisions/{number}/revert/"' in html
    assert f"/revisions/{third}/revert/" not in html
    assert "/revert/" not in signed_in(viewer).get(f"/cases/{CASE}/history/").content.decode()


def test_analysts_and_viewers_cannot_open_the_revert_page(edited, analyst, viewer, client):
    first = edited[0]
    url = f"/cases/{CASE}/revisions/{first}/revert/"
    for user in (analyst, viewer):
        assert signed_in(user).get(url).status_code == 403
    assert client.get(url).status_code == 302  # anonymous: sign in first


def test_diff_shows_an_added_claim_as_its_fields_not_json(edited, viewer):
    _first, second, third = edited
    html = signed_in(viewer).get(f"/cases/{CASE}/diff/{second}/{third}/").content.decode()
    path = '<code class="path">claims[CLM-CP22-003-C]</code>'
    row = html.split(path, 1)[1].split("</tr>\n")[0]
    assert "{" not in row and "}" not in row and "&quot;" not in row
    assert "<pre" not in row
    fields = dict(re.findall(r'<th scope="row">([^<]+)</th><td>([^<]*)', row))
    assert fields["ID"] == "CLM-CP22-003-C"
    assert fields["Statement"] == "A new first claim."
    assert fields["Basis"] == "analyst_inference"
    assert fields["Evidence"] == "(none)"


def test_values_read_as_fields_and_lists():
    from claimsdb.web.diffs import ShownValue, shown_value

    claim = {
        "basis": "reported_finding",
        "evidence": [
            {"locator": "§2", "relation": "supports", "source": "SRC-A"},
            {"locator": "", "relation": "context", "source": "SRC-B"},
        ],
        "id": "CLM-X",
        "statement": "It happened.",
    }
    shown = shown_value(claim)
    assert [name for name, _ in shown.fields] == ["ID", "Statement", "Basis", "Evidence"]
    evidence = dict(shown.fields)["Evidence"]
    assert [dict(link.fields)["Source"].text for link in evidence.items] == ["SRC-A", "SRC-B"]
    assert dict(evidence.items[1].fields)["Locator"].text == "(empty)"
    tags = shown_value(["kv-cache", "rdma"])
    assert tags.simple_items and [t.text for t in tags.items] == ["kv-cache", "rdma"]
    assert shown_value({}) == ShownValue(text="(none)")
    assert shown_value(None).text == "—"


def test_an_added_assessment_renders_its_values_and_evidence_basis(edited, analyst, viewer):
    document = record_document("case", CASE)
    assessment = dict(document["assessments"][0], assessed_on="2026-11-30")
    document["assessments"].append(assessment)
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Reassess")
    third, fourth = revision_numbers("case", CASE)[-2:]
    html = signed_in(viewer).get(f"/cases/{CASE}/diff/{third}/{fourth}/").content.decode()
    row = html.split('<code class="path">assessments[1]</code>', 1)[1].split("</tr>\n")[0]
    assert "{" not in row and "&quot;" not in row
    text = text_of(row)
    for words in ("Values", "Evidence grade", "research_demonstration", "Evidence basis"):
        assert words in text
    assert '<ul class="value-list"><li>CLM-CP22-003-A</li>' in row


def test_source_rule_and_method_revisions_and_diffs(seeded, analyst, viewer):
    submit(
        signed_in(analyst),
        "/sources/SRC-SGLANG-PR-35049/edit/",
        {"source-title": "sgl-project/sglang #35049: deferred release", "summary": "Shorter"},
    )
    first, second = revision_numbers("source", "SRC-SGLANG-PR-35049")
    client = signed_in(viewer)
    html = client.get(f"/sources/SRC-SGLANG-PR-35049/revisions/{first}/").content.decode()
    assert "until outstanding transfers finish" in html
    html = client.get(f"/sources/SRC-SGLANG-PR-35049/diff/{first}/{second}/").content.decode()
    assert "<del>" in html and "deferred release" in html
    (rule,) = revision_numbers("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")
    html = client.get(
        f"/rules/RULE-CP22-002-RESPONSES-NOT-CP22-003/revisions/{rule}/"
    ).content.decode()
    assert "FIG-CP22-002-RESPONSES" in html
    (method,) = revision_numbers("method", "diggingbeagle.assessment/1")
    html = client.get(f"/methods/diggingbeagle.assessment/1/revisions/{method}/").content.decode()
    assert "research demonstration" in html


def test_conflict_then_edit_form_keeps_working(seeded, analyst):
    """After a refused save the page is a normal edit form again (a regression guard for the
    base revision being carried)."""
    client = signed_in(analyst)
    html = client.get(f"/cases/{CASE}/edit/").content.decode()
    assert edit_form(html).data()["base_revision"] == [str(revision_numbers("case", CASE)[-1])]


def test_revert_effects_in_words():
    from claimsdb.records import diff
    from claimsdb.web.diffs import change_rows, revert_effects

    now = {
        "status": "ready",
        "claims": [{"id": "CLM-A", "status": "withdrawn"}, {"id": "CLM-B", "status": "supported"}],
        "figures": [{"id": "FIG-X"}],
        "assessments": [{"values": {"setting": "production"}}],
        "controls": [],
    }
    then = {
        "status": "in_review",
        "claims": [{"id": "CLM-A", "status": "supported"}, {"id": "CLM-C", "status": "disputed"}],
        "figures": [],
        "assessments": [{"values": {"setting": "lab"}}],
        "controls": [{"kind": "mitigation", "text": "Drain"}, {"kind": "mitigation", "text": "B"}],
    }
    assert revert_effects("case", now, then) == [
        "This revert moves the case from ready back to in review.",
        "It removes 1 claim: CLM-B.",
        "It restores 1 claim: CLM-C.",
        "It removes 1 figure: FIG-X.",
        "It moves claim CLM-A from withdrawn back to supported.",
        "It restores 2 controls.",
        "It changes the current assessment back to what it was.",
    ]
    assert revert_effects("case", now, now) == []
    (status,) = [r for r in change_rows(diff(now, then)) if r.path == "status"]
    assert status.inline is None  # one word for another: old → new, not word marks
    assert (status.old.text, status.new.text) == ("ready", "in_review")


def test_source_revert_is_previewed_and_confirmed(seeded, analyst, reviewer):
    key = "SRC-SGLANG-PR-35049"
    submit(
        signed_in(analyst),
        f"/sources/{key}/edit/",
        {"source-title": "sgl-project/sglang #35049: deferred release", "summary": "Shorter"},
    )
    first, _second = revision_numbers("source", key)
    client = signed_in(reviewer)
    page = client.get(f"/sources/{key}/revisions/{first}/").content.decode()
    assert f'href="/sources/{key}/revisions/{first}/revert/"' in page
    html = client.get(f"/sources/{key}/revisions/{first}/revert/").content.decode()
    assert "<ins>" in html and "It changes the title back to" in text_of(html)
    form = revert_form(html)
    assert client.post(form.action, form.data()).status_code == 302
    assert Revision.objects.order_by("-number").first().summary == f"Revert to revision {first}"
    assert record_document("source", key)["title"].endswith("until outstanding transfers finish")


def test_method_revert_preview_opens_for_a_key_with_a_slash(seeded, reviewer):
    (number,) = revision_numbers("method", "diggingbeagle.assessment/1")
    url = f"/methods/diggingbeagle.assessment/1/revisions/{number}/revert/"
    html = signed_in(reviewer).get(url).content.decode()
    assert "a revert would change nothing" in text_of(html)


def test_tags_are_diffed_as_a_set_in_diff_history_and_revert_preview(seeded, analyst, reviewer):
    from claimsdb.records import diff

    before = record_document("case", CASE)
    document = record_document("case", CASE)
    # "asyncio" sorts first: by position every tag after it would read as changed
    document["tags"] = [*document["tags"], "asyncio"]
    record_update(kind="case", key=CASE, document=document, user=analyst, summary="Tag")
    first, second = revision_numbers("case", CASE)[-2:]
    changes = [c.as_dict() for c in diff(before, record_document("case", CASE))]
    assert changes == [{"path": "tags[asyncio]", "op": "added", "old": None, "new": "asyncio"}]
    client = signed_in(reviewer)
    html = client.get(f"/cases/{CASE}/diff/{first}/{second}/").content.decode()
    assert text_of(html).count("Tag asyncio") == 1
    assert "Tag 1" not in text_of(html) and "Tags" not in text_of(html)
    assert Revision.objects.get(number=second).changed == ["tags"]
    # the revert preview: one tag taken away, nothing else
    preview = text_of(revert_preview(client, first))
    assert preview.count("Tag asyncio") == 1 and "Tag 2" not in preview
