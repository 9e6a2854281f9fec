"""The review queue (docs/review.md): its state on the write path and on approval, the
queue page and API with their filters, cursor and fixed query counts, approving and
requesting changes from the web (four eyes, stale revisions, roles), review comments on
record and edit pages, the per-user feed and its e-mail."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.core import mail
from django.db import connection
from django.db.models import Q
from django.test import TestCase
from django.test.utils import CaptureQueriesContext

from claimsdb.models import Approval, ReviewComment, ReviewState, ReviewStateAuthor, Revision
from claimsdb.selectors import review as review_reads
from claimsdb.selectors.approvals import review_range
from claimsdb.services import bundle_load, review_queue
from claimsdb.services.approvals import approve, approve_pending
from claimsdb.web.review import feed_token

from .support import (
    CASE,
    CLAIM,
    body,
    create_source,
    edit_case,
    latest,
    load_seed_bundle,
    make_user,
    signed_in,
    state,
    token_client,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed(seeded):
    """The seed (loaded by ``reviewer``), approved by another reviewer: nothing waits."""
    approve_pending(user=make_user("seed-approver", "reviewer"), note="the seed")
    return seeded


@pytest.fixture
def second(db):
    return make_user("second", "reviewer")


def waiting() -> list[tuple[str, str]]:
    return [(s.record_kind, s.record_key) for s in review_reads.waiting_records()]


def assert_state_matches_ledger(kind: str, key: str) -> None:
    """The denormalised state says what the approvals and the ledger say."""
    pending = review_range(kind, key)
    current = ReviewState.objects.get(record_kind=kind, record_key=key)
    assert current.latest_number == latest(kind, key)
    assert current.approved_number == pending.approved
    if pending.pending:
        assert current.waiting_from == pending.revisions[0].number
        assert current.waiting_count == len(pending.revisions)
        assert current.waiting_since == pending.revisions[0].created_at
        assert current.material == any(r.material for r in pending.revisions)
        assert sorted(a.author.username for a in current.authors.select_related("author")) == (
            sorted(pending.authors)
        )
    else:
        assert current.waiting_from is None and current.waiting_since is None


# --- the state ------------------------------------------------------------------------------


def test_the_state_follows_writes_and_approvals(seeded, reviewer, analyst, second):
    approve_pending(user=make_user("seed-approver", "reviewer"))
    assert waiting() == []
    a = edit_case(analyst, CASE, summary="Lede", limits="New limits.")
    b = edit_case(second, CASE, summary="Title", title="A new title")
    assert waiting() == [("case", CASE)]
    assert_state_matches_ledger("case", CASE)
    approved = ReviewState.objects.get(record_key=CASE).approved_number
    assert approved is not None and approved < a < b
    # four eyes: neither author approves; a third reviewer does
    third = make_user("third", "reviewer")
    approve(user=third, record_kind="case", record_key=CASE, revision_number=b)
    assert waiting() == []
    assert_state_matches_ledger("case", CASE)
    c = edit_case(analyst, CASE, summary="Again", limits="Newer limits.")
    assert_state_matches_ledger("case", CASE)
    assert ReviewState.objects.get(record_key=CASE).waiting_from == c


def states() -> list[tuple]:
    return sorted(
        ReviewState.objects.values_list(
            "record_kind",
            "record_key",
            "latest_number",
            "approved_number",
            "waiting_from",
            "waiting_since",
            "waiting_count",
            "material",
        )
    ) + sorted(ReviewStateAuthor.objects.values_list("state__record_key", "author__username"))


def test_the_migration_and_the_write_path_agree(seeded, reviewer, analyst):
    """Every record's state, as the write path kept it, equals what the ledger and the
    approvals say, and what migration 0016 computes from scratch on upgrade."""
    approve_pending(user=make_user("seed-approver", "reviewer"))
    edit_case(analyst, CASE, summary="Lede", limits="New limits.")
    create_source(analyst, "SRC-NEW")
    for kind, key in Revision.objects.values_list("record_kind", "record_key").distinct():
        assert_state_matches_ledger(kind, key)
    kept = states()
    ReviewStateAuthor.objects.all().delete()
    ReviewState.objects.all().delete()
    migration = importlib.import_module("claimsdb.migrations.0016_review_comments")
    migration.fill_states(django_apps, None)
    assert states() == kept


def test_a_load_that_changes_many_records_keeps_every_state(seeded, reviewer, analyst):
    """One write changing many records that have states (one approved, one waiting, the
    rest never approved) brings each up to date in one update (``_update_states``)."""
    approve_pending(user=make_user("seed-approver", "reviewer"))
    edit_case(analyst, CASE, summary="Lede", limits="New limits.")  # waiting before the load
    bundle = load_seed_bundle()
    for record in (*bundle["cases"], *bundle["sources"]):
        record["title"] += " (revised)"
    outcomes = bundle_load(user=reviewer, bundle=bundle, summary="Revised titles")
    assert sum(o.outcome == "updated" for o in outcomes) == len(bundle["cases"]) + len(
        bundle["sources"]
    )
    for kind, key in Revision.objects.values_list("record_kind", "record_key").distinct():
        assert_state_matches_ledger(kind, key)
    assert {(k, key) for k, key in waiting()} >= {("case", c["key"]) for c in bundle["cases"]}


# --- the queue ------------------------------------------------------------------------------


def test_the_queue_is_oldest_first_with_what_changed(reviewed, analyst):
    edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    create_source(analyst, "SRC-NEW")
    page = review_reads.queue_page(review_reads.waiting_records())
    assert [(i.kind, i.key) for i in page.items] == [("case", CASE), ("source", "SRC-NEW")]
    case = page.items[0]
    assert case.authors == ["analyst"]
    assert case.revisions == 1
    assert case.status == "ready"
    assert case.origins == ["human"]
    assert [change.path for change in case.changes] == ["limits"]
    assert page.items[1].approved_document is None  # a new record: all of it is new


def test_the_queue_filters(reviewed, analyst, second):
    edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    edit_case(second, "CP22-002", summary="Limits", limits="Other limits.")
    create_source(analyst, "SRC-NEW")

    def keys(**filters):
        states = review_reads.waiting_records(review_reads.QueueFilters(**filters))
        return [s.record_key for s in states]

    assert keys(kind="source") == ["SRC-NEW"]
    assert keys(author="analyst") == [CASE, "SRC-NEW"]
    assert keys(author="second") == ["CP22-002"]
    assert keys(author="nobody-at-all") == []
    tag = reviewed["cases"][[c["key"] for c in reviewed["cases"]].index(CASE)]["tags"][0]
    assert CASE in keys(tag=tag)
    assert "SRC-NEW" not in keys(tag=tag)
    assert keys(status="draft") == []
    assert set(keys(status="ready")) >= {CASE}


def test_the_queue_pages_by_cursor_each_record_once(seeded, analyst):
    for n in range(9):
        create_source(analyst, f"SRC-PAGED-{n}")
    everything = waiting()
    assert len(everything) >= 9
    seen, after = [], ""
    while True:
        page = review_reads.queue_page(review_reads.waiting_records(), after=after, size=4)
        assert page.count == len(everything)
        seen += [(i.kind, i.key) for i in page.items]
        if not page.next_cursor:
            break
        after = page.next_cursor
    assert seen == everything


def test_a_forged_cursor_is_refused(seeded, reviewer):
    with pytest.raises(review_reads.CursorInvalid):
        review_reads.queue_page(review_reads.waiting_records(), after="bm90IGEgY3Vyc29y")
    response = token_client(reviewer).get("/api/v1/review-queue/?after=garbage")
    assert response.status_code == 400
    assert body(response)["errors"][0]["code"] == "review.cursor_invalid"
    assert signed_in(reviewer).get("/review/?after=garbage").status_code == 302


def queue_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return len(captured)


def test_the_queue_page_costs_the_same_whatever_the_page(reviewed, reviewer, analyst):
    client = signed_in(make_user("third", "reviewer"))
    edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    few = queue_queries(client, "/review/")
    assert few <= 9  # the session and its user, the count, the page, and five for its details
    for n in range(30):
        create_source(analyst, f"SRC-MANY-{n:02}")
        edit_case(reviewer, "CP22-002", summary=f"Edit {n}", limits=f"Limits {n}.")
    many = queue_queries(client, "/review/")
    assert many == few
    html = client.get("/review/").content.decode()
    assert "32 records awaiting review" in html
    after = review_reads.queue_page(review_reads.waiting_records(), size=25).next_cursor
    assert queue_queries(client, f"/review/?after={after}") <= few  # no case: two fewer
    api = token_client(reviewer)
    first = queue_queries(api, "/api/v1/review-queue/?page_size=5")
    assert queue_queries(api, "/api/v1/review-queue/?page_size=50") == first
    # the next page in the body and in the Link header, absolute (docs/api.md)
    response = api.get("/api/v1/review-queue/?page_size=5")
    following = body(response)["next"]
    assert following.startswith("http://testserver/api/v1/review-queue/?")
    assert response["Link"] == f'<{following}>; rel="next"'


def test_who_sees_the_queue(reviewed, viewer, analyst, reviewer, second, client):
    edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    edit_case(second, "CP22-002", summary="Limits", limits="Other limits.")
    assert client.get("/review/").status_code == 302  # to sign in
    assert signed_in(viewer).get("/review/").status_code == 403
    assert token_client(viewer).get("/api/v1/review-queue/").status_code == 403
    assert client.get("/api/v1/review-queue/").status_code in (401, 403)
    # analysts see their own waiting changes; reviewers all of them
    results = body(token_client(analyst).get("/api/v1/review-queue/"))["results"]
    assert [r["key"] for r in results] == [CASE]
    results = body(token_client(reviewer).get("/api/v1/review-queue/"))["results"]
    assert [r["key"] for r in results] == [CASE, "CP22-002"]
    assert results[0]["authors"] == ["analyst"]
    assert results[0]["change"] == "material"
    assert results[0]["claim_origins"] == ["human"]
    assert results[0]["changes"][0]["path"] == "limits"
    html = signed_in(analyst).get("/review/").content.decode()
    assert CASE in html and "CP22-002" not in html


# --- approving and requesting changes from the web ----------------------------------------


def review_form_revision(client, kind: str, key: str) -> int:
    html = client.get(f"/review/{kind}/{key}/").content.decode()
    marker = 'name="revision" value="'
    return int(html.split(marker, 1)[1].split('"', 1)[0])


def test_a_second_reviewer_approves_from_the_review_page(reviewed, analyst, second):
    number = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    client = signed_in(second)
    html = client.get(f"/review/case/{CASE}/").content.decode()
    assert "Narrower limits." in html
    assert "1 change since the reviewed revision" in html
    assert review_form_revision(client, "case", CASE) == number
    response = client.post(
        f"/review/case/{CASE}/approve/", {"revision": number, "note": "Checked the source."}
    )
    assert response.status_code == 302
    approval = Approval.objects.order_by("-number").first()
    assert (approval.revision_number, approval.reviewer, approval.note) == (
        number,
        second,
        "Checked the source.",
    )
    assert waiting() == []


def test_an_author_cannot_approve_their_own_change_through_the_web(reviewed, second):
    number = edit_case(second, CASE, summary="Own", limits="My own limits.")
    before = state(), Approval.objects.count()
    client = signed_in(second)
    assert "another reviewer must approve" in client.get(f"/review/case/{CASE}/").content.decode()
    response = client.post(f"/review/case/{CASE}/approve/", {"revision": number})
    assert response.status_code == 403
    assert "approval.own_change" in response.content.decode()
    assert (state(), Approval.objects.count()) == before
    assert waiting() == [("case", CASE)]


@pytest.mark.parametrize("role", ["viewer", "analyst"])
def test_analysts_and_viewers_cannot_approve_or_request_changes(reviewed, second, role):
    number = edit_case(second, CASE, summary="Edit", limits="Edited limits.")
    user = make_user(f"a-{role}", role)
    before = state(), Approval.objects.count(), ReviewComment.objects.count()
    client = signed_in(user)
    assert client.post(f"/review/case/{CASE}/approve/", {"revision": number}).status_code == 403
    response = client.post(
        f"/review/case/{CASE}/request-changes/",
        {"revision": number, "path": "limits", "text": "No."},
    )
    assert response.status_code == 403
    response = token_client(user).post(
        f"/api/v1/review-queue/case/{CASE}/comments/",
        {"revision": number, "comments": [{"path": "limits", "text": "No."}]},
        format="json",
    )
    assert response.status_code == 403
    assert (state(), Approval.objects.count(), ReviewComment.objects.count()) == before
    if role == "analyst":
        html = client.get(f"/review/case/{CASE}/").content.decode()
        assert "/approve/" not in html and "Edited limits." in html


def test_a_stale_approval_writes_nothing_and_shows_the_new_diff(reviewed, analyst, second):
    opened = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    edit_case(analyst, CASE, summary="Title", title="A later title")
    before = state(), Approval.objects.count()
    response = signed_in(second).post(f"/review/case/{CASE}/approve/", {"revision": opened})
    assert response.status_code == 409
    html = response.content.decode()
    assert "Nothing was written" in html
    assert "A later title" in html  # the new diff
    assert (state(), Approval.objects.count()) == before


def test_requesting_changes_anchors_comments_and_writes_nothing_when_stale(
    reviewed, analyst, second
):
    opened = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    client = signed_in(second)
    response = client.post(
        f"/review/case/{CASE}/request-changes/",
        {
            "revision": opened,
            "path": ["limits", f"claims[{CLAIM}].statement", ""],
            "text": ["Say which versions.", "Cite the PR.", ""],
        },
    )
    assert response.status_code == 302
    comments = list(ReviewComment.objects.order_by("id"))
    assert [(c.path, c.text) for c in comments] == [
        ("limits", "Say which versions."),
        (f"claims[{CLAIM}].statement", "Cite the PR."),
    ]
    assert list(comments[0].addressed_to.all()) == [analyst]
    assert "2 open comments" in signed_in(analyst).get("/review/").content.decode()
    listed = body(token_client(analyst).get("/api/v1/review-queue/"))["results"]
    assert listed[0]["open_comments"] == 2
    # a path that names nothing is refused, with its code and path
    response = client.post(
        f"/review/case/{CASE}/request-changes/",
        {"revision": opened, "path": "claims[CLM-NOPE].statement", "text": "?"},
    )
    assert response.status_code == 422
    assert "review.path_unknown" in response.content.decode()
    # the record moved on: nothing is written, the new diff is shown (412 in the API)
    edit_case(analyst, CASE, summary="Title", title="A later title")
    count = ReviewComment.objects.count()
    response = client.post(
        f"/review/case/{CASE}/request-changes/",
        {"revision": opened, "path": "limits", "text": "Again."},
    )
    assert response.status_code == 409
    assert "A later title" in response.content.decode()
    response = token_client(second).post(
        f"/api/v1/review-queue/case/{CASE}/comments/",
        {"revision": opened, "comments": [{"path": "limits", "text": "Again."}]},
        format="json",
    )
    assert response.status_code == 412
    assert body(response)["errors"][0]["code"] == "revision.stale"
    assert ReviewComment.objects.count() == count


# --- comments: where they show, what addresses them ---------------------------------------


def request(second, number: int, *pairs: tuple[str, str]) -> list[ReviewComment]:
    return review_queue.request_changes(
        user=second,
        record_kind="case",
        record_key=CASE,
        revision_number=number,
        comments=[review_queue.CommentInput(path, text) for path, text in pairs],
    )


def test_comments_show_at_their_fields_until_addressed_or_resolved(reviewed, analyst, second):
    number = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    on_limits, on_record = request(
        second, number, ("limits", "Say which versions."), ("", "Split this case?")
    )
    client = signed_in(analyst)
    page = client.get(f"/cases/{CASE}/").content.decode()
    assert "Say which versions." in page and "Split this case?" in page
    assert "1 change since the reviewed revision" in page
    glance = page.split('id="at-a-glance"', 1)[1].split("</section>", 1)[0]  # the limits
    assert "Say which versions." in glance and "Split this case?" not in glance
    edit_page = client.get(f"/cases/{CASE}/edit/").content.decode()
    field = edit_page.split('id="field-case-limits"', 1)[1].split("</div>", 1)[0]
    assert "Say which versions." in field
    # the public never sees them
    assert "Say which versions." not in signed_in(None).get(f"/cases/{CASE}/").content.decode()
    # an edit of another field addresses nothing; one of the limits addresses that comment
    edit_case(analyst, CASE, summary="Title", title="Another title")
    on_limits.refresh_from_db()
    assert on_limits.is_open
    fixed = edit_case(analyst, CASE, summary="Versions", limits="Versions 0.4 to 0.5.")
    on_limits.refresh_from_db()
    on_record.refresh_from_db()
    assert on_limits.addressed_in == fixed
    assert on_record.is_open  # a whole-record comment waits for the reviewer
    assert "Say which versions." not in client.get(f"/cases/{CASE}/").content.decode()
    # the reviewer resolves the other
    response = signed_in(second).post(f"/review/comments/{on_record.pk}/resolve/")
    assert response.status_code == 302
    on_record.refresh_from_db()
    assert not on_record.is_open and on_record.resolved_by == second


def test_a_claims_comment_shows_on_that_claims_page(reviewed, analyst, second):
    number = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    request(second, number, (f"claims[{CLAIM}].statement", "Cite the PR."))
    record = signed_in(analyst).get(f"/cases/{CASE}/").content.decode()
    claim = record.split(f'id="{CLAIM}"', 1)[1].split("</article>", 1)[0]
    assert "Cite the PR." in claim
    other = record.split('id="CLM-CP22-003-B"', 1)[1].split("</article>", 1)[0]
    assert "Cite the PR." not in other
    page = signed_in(analyst).get(f"/cases/{CASE}/claims/{CLAIM}/edit/").content.decode()
    field = page.split('id="field-claim-statement"', 1)[1].split("</div>", 1)[0]
    assert "Cite the PR." in field


def test_an_approval_resolves_the_comments_it_covers(reviewed, analyst, second):
    number = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    (comment,) = request(second, number, ("", "Fine as it is?"))
    approve(user=second, record_kind="case", record_key=CASE, revision_number=number)
    comment.refresh_from_db()
    assert comment.resolved_by == second


def test_addresses():
    changed = ["limits", "claims[CLM-X].statement", "claims[CLM-Y].evidence"]
    assert review_queue.addresses(changed, "limits")
    assert review_queue.addresses(changed, "claims[CLM-X]")  # inside it
    assert review_queue.addresses(changed, "claims[CLM-Y].evidence[0].locator")  # around it
    assert not review_queue.addresses(changed, "claims[CLM-Z].statement")
    assert not review_queue.addresses(changed, "limitsx")
    assert not review_queue.addresses(changed, "")
    assert review_queue.addresses(["claims[CLM-X]"], "claims[CLM-X].statement")


# --- the feed and e-mail ----------------------------------------------------------------


def test_the_feed_lists_what_awaits_review_and_comments_on_ones_changes(
    reviewed, analyst, second, client, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    analyst.email = "analyst@example.org"
    analyst.save()
    number = edit_case(analyst, CASE, summary="Limits", limits="Narrower limits.")
    with TestCase.captureOnCommitCallbacks(execute=True):
        request(second, number, ("limits", "Say which versions."))
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["analyst@example.org"]
    assert "Say which versions." in mail.outbox[0].body
    # the reviewer's feed: the record waiting; read with the secret address, no session
    feed = client.get(f"/review/feed/{second.pk}/{feed_token(second)}/")
    assert feed.status_code == 200
    assert feed["Content-Type"].startswith("application/atom+xml")
    assert f"Case {CASE} awaits review" in feed.content.decode()
    # the analyst's: the comment on their change
    feed = signed_in(analyst).get("/review/feed.atom").content.decode()
    assert "Say which versions." in feed
    assert "awaits review" not in feed  # analysts review nothing
    # a wrong token, another user's token, no session: nothing
    assert client.get(f"/review/feed/{second.pk}/{'0' * 40}/").status_code == 404
    assert client.get(f"/review/feed/{analyst.pk}/{feed_token(second)}/").status_code == 404
    assert client.get("/review/feed.atom").status_code == 404
    # a reviewer's own change does not await their review
    own = edit_case(second, "CP22-002", summary="Own", limits="Own limits.")
    assert own
    feed = client.get(f"/review/feed/{second.pk}/{feed_token(second)}/").content.decode()
    assert "CP22-002 awaits review" not in feed
    # changing the password revokes the address
    token = feed_token(second)
    second.set_password("another")
    second.save()
    assert client.get(f"/review/feed/{second.pk}/{token}/").status_code == 404


def test_a_record_that_waits_for_nothing_has_a_review_page(reviewed, second):
    html = signed_in(second).get(f"/review/case/{CASE}/").content.decode()
    assert f"Revision {latest('case', CASE)} is reviewed: nothing waits." in html
    assert "/approve/" not in html


@pytest.mark.postgres
def test_a_page_of_the_queue_is_a_walk_along_its_index(reviewed, analyst):
    """At any size the page is read along the partial index of waiting records, in its
    order: no sort of the waiting records, no scan of the ledger (planner costs set so
    that the plan for a large table is chosen on a small one)."""
    for n in range(5):
        create_source(analyst, f"SRC-PLANNED-{n}")
    page = review_reads.queue_page(review_reads.waiting_records(), size=2)
    states = review_reads.waiting_records()
    since, pk = review_reads.decode_cursor(page.next_cursor)
    query = states.filter(Q(waiting_since__gt=since) | Q(waiting_since=since, pk__gt=pk))[:26]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        sql, params = query.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "review_state_queue" in plan, plan
    assert "Sort" not in plan, plan
    assert "claimsdb_revision" not in plan, plan
