"""Publishing releases, the public view's selectors, citations and the release export."""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claimsdb import access, citation, http_caching, public
from claimsdb.models import Release, ReleaseEntry, Revision
from claimsdb.records import PermissionDenied, RuleViolations, record_document
from claimsdb.services import (
    case_create,
    case_update,
    case_withdraw,
    source_withdraw,
)
from claimsdb.services.releases import release_plan, release_publish

from .support import (
    braces_balanced,
    case_doc,
    create_source,
    edit_case,
    latest,
    parse_bibtex,
)

pytestmark = pytest.mark.django_db

SEED_RECORDS = 18  # 1 method, 10 sources, 4 components, 2 cases, 1 rule


def entries(release: Release) -> dict[tuple[str, str], tuple[str, int]]:
    return {
        (e.record_kind, e.record_key): (e.change, e.revision.number)
        for e in release.entries.select_related("revision")
    }


def new_draft_case(user, seed_bundle, key: str) -> int:
    document = case_doc(seed_bundle, "CP22-003")
    document.update(
        key=key,
        status="draft",
        title="A draft case",
        claims=[],
        assessments=[],
        figures=[],
        attributions=[],
        relations=[],
        affected=[],
    )
    return case_create(user=user, document=document, summary="Draft").revision.number


# --- publishing ----------------------------------------------------------------------------


def test_first_release_publishes_every_ready_and_active_record_as_new(seeded, reviewer):
    release = release_publish(user=reviewer, notes="First release")
    assert release.number == 1
    assert release.published_by == reviewer
    assert release.last_revision == Revision.objects.count()
    got = entries(release)
    assert len(got) == SEED_RECORDS
    assert {change for change, _ in got.values()} == {"new"}
    assert got[("case", "CP22-003")] == ("new", latest("case", "CP22-003"))
    assert got[("rule", "RULE-CP22-002-RESPONSES-NOT-CP22-003")][0] == "new"
    assert got[("method", "diggingbeagle.assessment/1")][0] == "new"


def test_entries_across_a_sequence_of_releases(seeded, seed_bundle, analyst, reviewer):
    first = release_publish(user=reviewer, notes="1")
    released_002 = latest("case", "CP22-002")

    # updated; a released case back to draft keeps its released revision; a new draft
    # case is not released; a new active source is new
    updated = edit_case(analyst, "CP22-003", title="SGLang RDMA transfers outlive aborts")
    edit_case(analyst, "CP22-002", status="draft", summary="Back to draft")
    new_draft_case(analyst, seed_bundle, "CP22-009")
    added = create_source(analyst, "SRC-NEW")
    second = release_publish(user=reviewer, notes="2")
    got = entries(second)
    assert got[("case", "CP22-003")] == ("updated", updated)
    assert got[("case", "CP22-002")] == ("unchanged", released_002)
    assert ("case", "CP22-009") not in got
    assert got[("source", "SRC-NEW")] == ("new", added)
    assert got[("source", "SRC-SGLANG-KV-TRANSFER-SAFETY")][0] == "unchanged"
    assert len(got) == SEED_RECORDS + 1

    # withdrawn: released before, withdrawn now → points at the withdrawal revision;
    # a record withdrawn before it was ever released gets no entry
    withdrawal = case_withdraw(user=analyst, key="CP22-002", summary="Withdrawn").revision
    source_withdraw(user=analyst, key="SRC-NEW", summary="Withdrawn")
    create_source(analyst, "SRC-NEVER")
    source_withdraw(user=analyst, key="SRC-NEVER", summary="Withdrawn before release")
    third = release_publish(user=reviewer, notes="3")
    got = entries(third)
    assert got[("case", "CP22-002")] == ("withdrawn", withdrawal.number)
    assert got[("source", "SRC-NEW")][0] == "withdrawn"
    assert ("source", "SRC-NEVER") not in got
    assert got[("case", "CP22-003")] == ("unchanged", updated)

    # unchanged everywhere: a fourth release is refused and nothing is written
    with pytest.raises(RuleViolations) as refused:
        release_publish(user=reviewer, notes="4")
    assert refused.value.codes == ["release.nothing_changed"]
    assert Release.objects.count() == 3

    # an edit to a withdrawn record is published as an update of its withdrawn document
    edit_case(analyst, "CP22-002", summary="Withdrawal note", scope_note="Withdrawn: see X.")
    fourth = release_publish(user=reviewer, notes="4")
    got = entries(fourth)
    assert got[("case", "CP22-002")] == ("updated", latest("case", "CP22-002"))
    assert first.number, second.number == (1, 2)


def test_draft_and_ready_again_without_change_keeps_the_released_revision(
    seeded, analyst, reviewer
):
    release_publish(user=reviewer, notes="1")
    released = latest("case", "CP22-003")
    edit_case(analyst, "CP22-003", status="draft")
    edit_case(reviewer, "CP22-003", status="ready")
    assert latest("case", "CP22-003") != released
    plan = release_plan()
    assert not plan.changed
    with pytest.raises(RuleViolations) as refused:
        release_publish(user=reviewer, notes="again")
    assert refused.value.codes == ["release.nothing_changed"]


def test_a_case_in_review_is_not_published_until_ready(seeded, analyst, reviewer):
    edit_case(analyst, "CP22-002", status="in_review")
    release = release_publish(user=reviewer, notes="1")
    assert ("case", "CP22-002") not in entries(release)
    ready = edit_case(reviewer, "CP22-002", status="ready")
    assert entries(release_publish(user=reviewer, notes="2"))[("case", "CP22-002")] == (
        "new",
        ready,
    )


def test_notes_are_required_and_violations_are_collected(db, reviewer):
    with pytest.raises(RuleViolations) as refused:
        release_publish(user=reviewer, notes="   ")
    assert refused.value.codes == ["release.notes_required", "release.nothing_changed"]
    assert Release.objects.count() == 0


@pytest.mark.parametrize("role", ["nobody", "viewer", "analyst"])
def test_only_reviewers_publish(seeded, role, request):
    user = request.getfixturevalue(role)
    with pytest.raises(PermissionDenied):
        release_publish(user=user, notes="Not mine to publish")
    assert Release.objects.count() == 0
    assert ReleaseEntry.objects.count() == 0


def test_anonymous_cannot_publish(seeded):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(PermissionDenied):
        release_publish(user=AnonymousUser(), notes="x")


# --- the release export --------------------------------------------------------------------


def export_release(tmp_path, number: int, name: str) -> bytes:
    out = tmp_path / name
    call_command("export_records", release=number, out=str(out))
    return out.read_bytes()


def test_release_export_is_byte_identical_before_and_after_later_edits(
    seeded, analyst, reviewer, tmp_path, capsys
):
    release_publish(user=reviewer, notes="1")
    first = export_release(tmp_path, 1, "a.json")
    assert first == export_release(tmp_path, 1, "b.json")
    # it is the working state at publishing time, here
    call_command("export_records", out=str(tmp_path / "working.json"))
    assert first == (tmp_path / "working.json").read_bytes()

    edit_case(analyst, "CP22-003", title="Changed after release 1")
    case_withdraw(user=analyst, key="CP22-002", summary="Withdrawn")
    release_publish(user=reviewer, notes="2")
    edit_case(analyst, "CP22-003", status="draft")
    assert export_release(tmp_path, 1, "c.json") == first

    second = export_release(tmp_path, 2, "d.json")
    bundle = json.loads(second)
    assert [c["key"] for c in bundle["cases"]] == ["CP22-002", "CP22-003"]
    statuses = {c["key"]: c["status"] for c in bundle["cases"]}
    assert statuses == {"CP22-002": "withdrawn", "CP22-003": "ready"}
    assert bundle["cases"][1]["title"] == "Changed after release 1"
    assert [s["key"] for s in bundle["sources"]] == sorted(s["key"] for s in bundle["sources"])
    assert second.endswith(b"\n") and second.decode("utf-8").startswith('{\n  "cases"')

    capsys.readouterr()
    call_command("export_records", release=2)
    assert capsys.readouterr().out.encode("utf-8") == second


def test_release_export_of_a_missing_release_fails(db):
    with pytest.raises(CommandError, match="no release 3"):
        call_command("export_records", release=3)


# --- publish_release command ---------------------------------------------------------------


def test_publish_release_command(seeded, reviewer, capsys):
    call_command("publish_release", user="reviewer", notes="From the command line")
    out = capsys.readouterr().out
    assert f"published release 1: {SEED_RECORDS} changed, 0 unchanged" in out
    assert f"new: case CP22-003 (revision {latest('case', 'CP22-003')})" in out
    assert Release.objects.get().notes == "From the command line"


def test_publish_release_command_dry_run_writes_nothing(seeded, capsys):
    call_command("publish_release", dry_run=True)
    assert f"release 1 would publish: {SEED_RECORDS} changed" in capsys.readouterr().out
    assert Release.objects.count() == 0


def test_publish_release_command_refusals(seeded, analyst, reviewer, capsys):
    with pytest.raises(CommandError, match="reviewer role"):
        call_command("publish_release", user="analyst", notes="x")
    assert Release.objects.count() == 0
    with pytest.raises(CommandError, match="refused"):
        call_command("publish_release", user="reviewer", notes="")
    assert "release.notes_required" in capsys.readouterr().err
    with pytest.raises(CommandError, match="--user"):
        call_command("publish_release", notes="x")
    assert Release.objects.count() == 0


# --- the public view -----------------------------------------------------------------------


def test_released_revision_and_document_follow_releases(seeded, analyst, reviewer):
    assert public.released_revision("case", "CP22-003") is None
    assert public.released_document("case", "CP22-003") is None
    release_publish(user=reviewer, notes="1")
    first = latest("case", "CP22-003")
    edit_case(analyst, "CP22-003", title="Working title")
    assert public.released_revision("case", "CP22-003").number == first
    assert public.released_document("case", "CP22-003")["title"] != "Working title"
    release_publish(user=reviewer, notes="2")
    second = latest("case", "CP22-003")
    assert public.released_document("case", "CP22-003")["title"] == "Working title"
    assert public.released_revision("case", "CP22-003", release=1).number == first
    assert public.released_revision("case", "CP22-003", release=2).number == second
    assert public.is_released_revision(first).number == 1
    assert public.is_released_revision(second).number == 2
    assert public.is_released_revision(second + 1000) is None


def test_visible_document_anonymous_sees_released_viewers_see_working(
    seeded, analyst, reviewer, viewer, nobody
):
    from django.contrib.auth.models import AnonymousUser

    anonymous = AnonymousUser()
    assert access.visible_document(anonymous, "case", "CP22-003") is None
    release_publish(user=reviewer, notes="1")
    released = latest("case", "CP22-003")
    working = edit_case(analyst, "CP22-003", title="Draft title", status="draft")
    for user in (anonymous, nobody):
        document, number = access.visible_document(user, "case", "CP22-003")
        assert number == released
        assert document["status"] == "ready"
        assert document["title"] != "Draft title"
    for user in (viewer, analyst):
        document, number = access.visible_document(user, "case", "CP22-003")
        assert (number, document["title"], document["status"]) == (working, "Draft title", "draft")
    assert access.visible_document(anonymous, "case", "CP22-999") is None
    assert access.visible_document(viewer, "case", "CP22-999") is None


def test_released_records_are_the_public_documents_and_hide_withdrawn(
    seeded, seed_bundle, analyst, reviewer
):
    new_draft_case(analyst, seed_bundle, "CP22-009")
    release_publish(user=reviewer, notes="1")
    edit_case(analyst, "CP22-003", title="Not yet public")
    case_withdraw(user=analyst, key="CP22-002", summary="Withdrawn")
    records = public.released_records("case")
    assert [r.key for r in records] == ["CP22-002", "CP22-003"]
    key, document, revision = records[1]
    assert (key, document["title"]) == ("CP22-003", case_doc(seed_bundle, "CP22-003")["title"])
    assert json.loads(revision.snapshot) == document
    release_publish(user=reviewer, notes="2")
    assert [r.key for r in public.released_records("case")] == ["CP22-003"]
    with_withdrawn = public.released_records("case", include_withdrawn=True)
    assert [(r.key, r.document["status"]) for r in with_withdrawn] == [
        ("CP22-002", "withdrawn"),
        ("CP22-003", "ready"),
    ]
    assert len(public.released_records("source")) == 10


def test_released_records_query_count_is_flat(seeded, analyst, reviewer):
    release_publish(user=reviewer, notes="1")
    with CaptureQueriesContext(connection) as few:
        assert len(public.released_records("source")) == 10
    for index in range(15):
        create_source(analyst, f"SRC-MORE-{index}")
    release_publish(user=reviewer, notes="2")
    with CaptureQueriesContext(connection) as many:
        assert len(public.released_records("source")) == 25
    assert len(many) == len(few) == 1


def test_material_history_labels_each_change_with_its_release(seeded, analyst, reviewer):
    created = latest("case", "CP22-003")
    release_publish(user=reviewer, notes="1")
    intermediate = edit_case(analyst, "CP22-003", title="First edit")
    editorial_doc = record_document("case", "CP22-003")
    editorial_doc["summary"] += " (typo fixed)"
    editorial = case_update(
        user=analyst, key="CP22-003", document=editorial_doc, summary="Typo", material=False
    ).revision.number
    updated = edit_case(analyst, "CP22-003", title="Second edit")
    release_publish(user=reviewer, notes="2")
    withdrawn = case_withdraw(user=analyst, key="CP22-003", summary="Withdrawn").revision.number
    release_publish(user=reviewer, notes="3")
    unreleased = edit_case(analyst, "CP22-003", scope_note="Edited after withdrawal")

    history = public.material_history("case", "CP22-003", public=False)
    labels = {item["revision"]: item["release_label"] for item in history}
    assert editorial not in labels
    assert labels == {
        created: "new in release 1",
        intermediate: "updated in release 2",
        updated: "updated in release 2",
        withdrawn: "withdrawn in release 3",
        unreleased: "not yet released",
    }
    assert [item["revision"] for item in history] == sorted(labels, reverse=True)
    published = {item["revision"] for item in history if item["published"]}
    assert published == {created, updated, withdrawn}
    first = history[-1]
    assert first["action"] == "create" and first["material"] is True
    assert first["date"] == first["created_at"].date()

    public_history = public.material_history("case", "CP22-003", public=True)
    assert [item["revision"] for item in public_history] == [
        withdrawn,
        updated,
        intermediate,
        created,
    ]
    assert public.material_history("case", "CP22-999", public=True) == []


def test_material_history_of_a_record_never_released(seeded):
    assert public.material_history("case", "CP22-003", public=True) == []
    (item,) = public.material_history("case", "CP22-003", public=False)
    assert item["release_label"] == "not yet released"
    assert item["release"] is None


def test_immutable_headers_only_for_released_revisions(seeded, reviewer, analyst, rf):
    from django.contrib.auth.models import AnonymousUser
    from django.http import HttpResponse

    release_publish(user=reviewer, notes="1")
    released = latest("case", "CP22-003")
    working = edit_case(analyst, "CP22-003", title="Working")
    response = HttpResponse("page")
    assert http_caching.immutable_headers(response, released)
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response["ETag"] == f'"{released}"'
    assert response["Vary"] == "Cookie"
    response = HttpResponse("page")
    assert not http_caching.immutable_headers(response, working)
    assert "Cache-Control" not in response and "ETag" not in response

    request = rf.get("/", HTTP_IF_NONE_MATCH=f'"{released}", "{working}"')
    request.user = analyst  # signed-in pages carry per-user content: never cached
    response = HttpResponse("page")
    assert not http_caching.immutable_headers(response, released, request=request)
    assert "Cache-Control" not in response
    assert http_caching.released_not_modified(request, released) is None
    request.user = AnonymousUser()
    assert http_caching.released_not_modified(request, released).status_code == 304
    assert http_caching.released_not_modified(request, working) is None


# --- citation ------------------------------------------------------------------------------


def test_citation_text_names_record_revision_release_and_url(seeded, seed_bundle, reviewer):
    release = release_publish(user=reviewer, notes="1")
    revision = public.released_revision("case", "CP22-003")
    document = json.loads(revision.snapshot)
    text = citation.citation_text(document, revision, release, base_url="https://kb.example/")
    date = release.published_at.date().isoformat()
    assert text == (
        "claimsdb. CP22-003: SGLang asynchronous RDMA transfers could overwrite a newly "
        f"assigned user cache. Revision {revision.number}, release 1, {date}. "
        f"https://kb.example/cases/CP22-003/revisions/{revision.number}/"
    )
    assert "not yet released" in citation.citation_text(document, revision, None)


def test_bibtex_escapes_latex_and_balances_braces(seeded, analyst, reviewer):
    edit_case(analyst, "CP22-003", title="50% of {caches} & $keys #1 under_score ~ ^ \\ done")
    release = release_publish(user=reviewer, notes="1")
    revision = public.released_revision("case", "CP22-003")
    entry = citation.bibtex(json.loads(revision.snapshot), revision, release)
    assert entry.startswith(f"@misc{{claimsdb-CP22-003-r{revision.number},\n")
    assert braces_balanced(entry)
    assert (
        r"50\% of \{caches\} \& \$keys \#1 under\_score \textasciitilde{} "
        r"\textasciicircum{} \textbackslash{} done" in entry
    )
    assert re.search(r"^  year = \{\d{4}\},$", entry, re.M)
    assert re.search(r"^  month = [a-z]{3},$", entry, re.M)
    assert f"revisions/{revision.number}/" in entry
    key, parsed = parse_bibtex(entry)
    assert key == f"claimsdb-CP22-003-r{revision.number}"
    assert parsed.type == "misc"
    day = release.published_at.date()
    assert parsed.fields["year"] == str(day.year)
    assert parsed.fields["month"] == day.strftime("%B")  # the macro, expanded
    assert parsed.fields["url"].endswith(f"/cases/CP22-003/revisions/{revision.number}/")
    assert parsed.fields["note"] == f"Revision {revision.number}, release 1, {day.isoformat()}"


def test_csl_json_item(seeded, reviewer):
    release = release_publish(user=reviewer, notes="1")
    revision = public.released_revision("case", "CP22-003")
    (item,) = json.loads(citation.csl_json(json.loads(revision.snapshot), revision, release))
    assert item["id"] == f"claimsdb-CP22-003-r{revision.number}"
    assert item["type"] == "dataset"
    assert item["title"].startswith("CP22-003: SGLang")
    assert item["URL"].endswith(f"/cases/CP22-003/revisions/{revision.number}/")
    day = release.published_at.date()
    assert item["issued"] == {"date-parts": [[day.year, day.month, day.day]]}


def test_citation_keys_are_safe_for_every_kind():
    document = {"format": "claimsdb.method/1", "key": "diggingbeagle.assessment/1"}
    assert citation.citation_key(document, 7) == "claimsdb-diggingbeagle-assessment-1-r7"
    assert citation.citation_url(document, 7) == "/methods/diggingbeagle.assessment/1/revisions/7/"
    rule = {"format": "claimsdb.rule/1", "key": "RULE-X", "reason": "…"}
    assert citation.record_title(copy.deepcopy(rule)) == "RULE-X"


def test_citation_block_for_the_record_page(seeded, reviewer):
    release = release_publish(user=reviewer, notes="1")
    document, number = access.visible_document(None, "case", "CP22-003")
    block = citation.citation_block("case", "CP22-003", document, number, base_url="https://x/")
    assert block["release"] == release
    assert block["key"] == f"claimsdb-CP22-003-r{number}"
    assert block["bibtex_url"] == f"/cases/CP22-003/cite.bib?revision={number}"
    assert block["csl_url"] == f"/cases/CP22-003/cite.json?revision={number}"
    assert block["text"].endswith(f"https://x/cases/CP22-003/revisions/{number}/")
