"""Concurrent writes on PostgreSQL (docs/write-path.md, "The critical section").

Writes are checked outside the ledger lock and validated under it. These tests race
writers that each respect the scope rules alone but together would break one, and
writers of different and of the same cases, round after round: exactly one of each
conflicting pair wins, nothing is lost, and after every round the ledger verifies and
``check_rules`` finds nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connections

from claimsdb.integrity import check_rules, verify_history
from claimsdb.models import Revision
from claimsdb.records import RuleViolations, StaleRevision, record_document
from claimsdb.services import bundle_load, case_update, rule_create

from .support import (
    bundle_of,
    case_with_figure,
    figure_of,
    load_seed_bundle,
    make_user,
    new_case,
    relate,
)

pytestmark = [
    pytest.mark.postgres(
        reason="concurrent writers are raced on PostgreSQL (SQLite has a single writer)"
    ),
    pytest.mark.django_db(transaction=True),
]

ROUNDS = 5
GROUPS = 4  # independent races per round, two writers each: eight threads


@pytest.fixture
def racer(roles_kept):
    user = make_user("racer", "reviewer")
    bundle_load(user=user, bundle=load_seed_bundle(), summary="Seed")
    return user


def race(writers: list[Callable[[], object]]) -> list[BaseException | None]:
    """Run ``writers`` at once, each in its own thread (its own connection); returns what
    each raised (None for a write that went through)."""
    barrier = threading.Barrier(len(writers))
    results: list[BaseException | None] = [None] * len(writers)

    def run(index: int) -> None:
        try:
            barrier.wait()
            writers[index]()
        except BaseException as error:  # reported to the test below
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def assert_consistent() -> None:
    """The ledger verifies, its numbers are gapless, and no rule is broken anywhere."""
    assert verify_history() == []
    assert check_rules() == []
    numbers = list(Revision.objects.order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, len(numbers) + 1))


def exactly_one_won(results: list[BaseException | None]) -> None:
    """One write went through; the other was refused by a scope rule (nothing else)."""
    assert sorted(error is None for error in results) == [False, True], results
    (refused,) = [error for error in results if error is not None]
    assert isinstance(refused, RuleViolations), refused
    assert all(code.startswith("scope.") for code in refused.codes), refused.codes


def rule(key: str, *, figure: str, case: str) -> dict:
    return {
        "format": "claimsdb.rule/1",
        "key": key,
        "kind": "non_attribution",
        "status": "active",
        "figure": figure,
        "case": case,
        "reason": "The figure belongs to another event.",
    }


def keys(round_: int, group: int, *names: str) -> list[str]:
    return [f"CP{70 + group}-{round_:02d}{n}" for n in range(len(names))]


def update(user, key: str, change: Callable[[dict], object]) -> Callable[[], object]:
    """A case update that applies ``change`` to the document as it was before the race."""
    document = record_document("case", key)
    change(document)
    return lambda: case_update(user=user, key=key, document=document, summary=f"edit {key}")


def create_rule(user, document: dict) -> Callable[[], object]:
    return lambda: rule_create(user=user, document=document, summary=f"add {document['key']}")


def test_a_rule_and_the_attribution_it_forbids_race(racer):
    """Rule: figure F of B never to A. Attribution: A becomes B's event and attributes F.
    Either alone is right; together the attribution is forbidden and the relation bridges
    the rule."""
    for round_ in range(ROUNDS):
        groups = [keys(round_, g, "A", "B") for g in range(GROUPS)]
        cases = [doc for a, b in groups for doc in (new_case(a), case_with_figure(b))]
        bundle_load(user=racer, bundle=bundle_of(cases=cases), summary="setup")
        writers = []
        for a, b in groups:
            writers.append(
                create_rule(racer, rule(f"RULE-{b}-NOT-{a}", figure=figure_of(b), case=a))
            )

            def attribute(document, b=b):
                relate(document, b, "same_event")
                document["attributions"].append(
                    {"figure": figure_of(b), "role": "context", "note": ""}
                )

            writers.append(update(racer, a, attribute))
        results = race(writers)
        for pair in range(GROUPS):
            exactly_one_won(results[2 * pair : 2 * pair + 2])
        assert_consistent()


def test_a_same_event_relation_and_a_rule_it_would_bridge_race(racer):
    """Rule: figure F of B never to A. Relation: B and A the same event (written from B),
    which would make F attributable to A."""
    for round_ in range(ROUNDS):
        groups = [keys(round_, g, "A", "B") for g in range(GROUPS)]
        cases = [doc for a, b in groups for doc in (new_case(a), case_with_figure(b))]
        bundle_load(user=racer, bundle=bundle_of(cases=cases), summary="setup")
        writers = []
        for a, b in groups:
            writers.append(
                create_rule(racer, rule(f"RULE-{b}-NOT-{a}", figure=figure_of(b), case=a))
            )
            writers.append(update(racer, b, lambda d, a=a: relate(d, a, "same_event")))
        results = race(writers)
        for pair in range(GROUPS):
            exactly_one_won(results[2 * pair : 2 * pair + 2])
        assert_consistent()


def test_two_relations_racing_into_a_chain_across_a_rule(racer):
    """Rule: figure F of B never to A; M1 and M2 are one event. A joins M1's event, B joins
    M2's: each alone leaves A and B apart, together they chain A to B. The two writes
    share no record."""
    for round_ in range(ROUNDS):
        groups = [keys(round_, g, "A", "B", "M1", "M2") for g in range(GROUPS)]
        cases = []
        rules = []
        for a, b, m1, m2 in groups:
            cases += [new_case(a), case_with_figure(b), new_case(m1)]
            cases.append(relate(new_case(m2), m1, "same_event"))
            rules.append(rule(f"RULE-{b}-NOT-{a}", figure=figure_of(b), case=a))
        bundle_load(user=racer, bundle=bundle_of(cases=cases, rules=rules), summary="setup")
        writers = []
        for a, b, m1, m2 in groups:
            writers.append(update(racer, a, lambda d, m1=m1: relate(d, m1, "same_event")))
            writers.append(update(racer, b, lambda d, m2=m2: relate(d, m2, "same_event")))
        results = race(writers)
        for pair in range(GROUPS):
            exactly_one_won(results[2 * pair : 2 * pair + 2])
        assert_consistent()


def test_updates_of_different_cases_all_go_through(racer):
    """Eight writers, each on its own case with If-Match, round after round."""
    writers_count = 2 * GROUPS
    own = [f"CP79-{n:03d}" for n in range(writers_count)]
    bundle_load(user=racer, bundle=bundle_of(cases=[new_case(k) for k in own]), summary="setup")
    for round_ in range(ROUNDS):
        writers = []
        for key in own:
            document = record_document("case", key)
            document["limits"] = f"round {round_}"
            expected = Revision.objects.filter(record_key=key).latest("number").number
            writers.append(
                lambda key=key, document=document, expected=expected, round_=round_: case_update(
                    user=racer,
                    key=key,
                    document=document,
                    summary=f"round {round_}",
                    expected_revision=expected,
                )
            )
        assert race(writers) == [None] * writers_count
        for key in own:
            assert record_document("case", key)["limits"] == f"round {round_}"
        assert_consistent()


def test_updates_of_one_case_from_one_revision_one_wins(racer):
    """Eight writers of the same case, each with If-Match on the revision they read: one
    goes through, the others are stale (HTTP 412), and no change is lost or merged."""
    key = "CP22-003"
    for round_ in range(ROUNDS):
        expected = Revision.objects.filter(record_key=key).latest("number").number
        count = Revision.objects.filter(record_key=key).count()
        writers = []
        for n in range(2 * GROUPS):
            document = record_document("case", key)
            document["limits"] = f"round {round_} writer {n}"
            writers.append(
                lambda document=document, expected=expected: case_update(
                    user=racer,
                    key=key,
                    document=document,
                    summary="concurrent edit",
                    expected_revision=expected,
                )
            )
        results = race(writers)
        (winner,) = [n for n, error in enumerate(results) if error is None]
        assert all(isinstance(e, StaleRevision) for e in results if e is not None), results
        assert record_document("case", key)["limits"] == f"round {round_} writer {winner}"
        assert Revision.objects.filter(record_key=key).count() == count + 1
        assert_consistent()
