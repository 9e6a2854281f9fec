"""The critical section of the write path (docs/write-path.md, "The critical section"):
checks before the ledger lock, validation under it, footprints, and the timing log."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections
from django.test import override_settings

from claimsdb.integrity import check_rules, verify_history
from claimsdb.models import LedgerHead, WriteFootprint
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, case_update, footprints, rule_create, writer

from .support import bundle_of, case_with_figure, load_seed_bundle, make_user, new_case, relate

ON_POSTGRES = pytest.mark.postgres(
    reason="writes are checked before the ledger lock on PostgreSQL only"
)
SOURCE = "SRC-SGLANG-KV-TRANSFER-SAFETY"


@pytest.fixture
def racer(roles_kept):
    user = make_user("racer", "reviewer")
    bundle_load(user=user, bundle=load_seed_bundle(), summary="Seed")
    return user


def in_another_connection(action: Callable[[], object]) -> object:
    """Run ``action`` in a thread of its own, so on a connection of its own; its result."""
    result: list[object] = []

    def run() -> None:
        try:
            result.append(action())
        except BaseException as error:
            result.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return result[0]


def during_the_check(monkeypatch, action: Callable[[], object]) -> list[object]:
    """Run ``action`` in another connection while the first write's checks are done and
    it has not yet taken the ledger lock (after the round trip, step 10); what it gave."""
    seen: list[object] = []
    check = writer._check_round_trip
    first = threading.current_thread()

    def checking(writes):
        live = check(writes)
        if threading.current_thread() is first and not seen:
            seen.append(in_another_connection(action))
        return live

    monkeypatch.setattr(writer, "_check_round_trip", checking)
    return seen


def count_checks(monkeypatch) -> list[int]:
    """The checks (steps 5–10) the write of this thread makes, one entry each."""
    checks: list[int] = []
    check = writer._check
    first = threading.current_thread()

    def counted(change, reads):
        if threading.current_thread() is first:
            checks.append(1)
        return check(change, reads)

    monkeypatch.setattr(writer, "_check", counted)
    return checks


@ON_POSTGRES
@pytest.mark.django_db(transaction=True)
def test_the_checks_run_without_the_ledger_lock(racer, monkeypatch):
    """While a write is being checked, another transaction can take the ledger lock."""

    def lock_without_waiting() -> int:
        from django.db import transaction

        with transaction.atomic():
            return LedgerHead.objects.select_for_update(nowait=True).get(pk=1).number

    seen = during_the_check(monkeypatch, lock_without_waiting)
    document = record_document("case", "CP22-003")
    document["limits"] = "Checked before the lock."
    case_update(user=racer, key="CP22-003", document=document, summary="Edit")
    assert isinstance(seen[0], int), seen


@ON_POSTGRES
@pytest.mark.django_db(transaction=True)
def test_a_write_landing_in_what_a_check_read_makes_it_run_again(racer, monkeypatch):
    """A rule barring figure F of B from A is checked while A is related to B and made to
    attribute F, and that commits before the rule takes the lock: the rule runs again and
    is refused, as it would have been after the attribution."""
    bundle_load(
        user=racer,
        bundle=bundle_of(cases=[new_case("CP71-001"), case_with_figure("CP71-002")]),
        summary="setup",
    )

    def attribute() -> object:
        document = record_document("case", "CP71-001")
        relate(document, "CP71-002", "same_event")
        document["attributions"].append(
            {"figure": "FIG-CP71-002-RESPONSES", "role": "context", "note": ""}
        )
        return case_update(user=racer, key="CP71-001", document=document, summary="attribute")

    seen = during_the_check(monkeypatch, attribute)
    checks = count_checks(monkeypatch)
    rule = {
        "format": "claimsdb.rule/1",
        "key": "RULE-CP71-002-NOT-CP71-001",
        "kind": "non_attribution",
        "status": "active",
        "figure": "FIG-CP71-002-RESPONSES",
        "case": "CP71-001",
        "reason": "The figure belongs to another event.",
    }
    with pytest.raises(RuleViolations) as refused:
        rule_create(user=racer, document=rule, summary="add the rule")
    assert not isinstance(seen[0], BaseException), seen
    assert "scope.rule_conflict" in refused.value.codes
    assert len(checks) == 2  # checked, found changed under the lock, checked again
    assert check_rules() == [] and verify_history() == []


@ON_POSTGRES
@pytest.mark.django_db(transaction=True)
def test_a_write_elsewhere_does_not_make_it_run_again(racer, monkeypatch):
    """A write of a case that the check did not read commits meanwhile: one check."""
    bundle_load(
        user=racer,
        bundle=bundle_of(cases=[new_case("CP71-001"), new_case("CP71-005")]),
        summary="setup",
    )

    def elsewhere() -> object:
        document = record_document("case", "CP71-005")
        document["limits"] = "Elsewhere."
        return case_update(user=racer, key="CP71-005", document=document, summary="elsewhere")

    seen = during_the_check(monkeypatch, elsewhere)
    checks = count_checks(monkeypatch)
    document = record_document("case", "CP71-001")
    document["limits"] = "Here."
    case_update(user=racer, key="CP71-001", document=document, summary="here")
    assert not isinstance(seen[0], BaseException), seen
    assert len(checks) == 1
    assert record_document("case", "CP71-005")["limits"] == "Elsewhere."
    assert verify_history() == []


@ON_POSTGRES
@pytest.mark.django_db
def test_a_write_leaves_its_footprint(seeded, analyst):
    """The case written and the cases its scope check loaded or read figures of: its
    related case CP22-002, which owns the figure a rule naming CP22-003 names."""
    document = record_document("case", "CP22-003")
    document["limits"] = "A footprint."
    outcome = case_update(user=analyst, key="CP22-003", document=document, summary="Edit")
    rows = set(
        WriteFootprint.objects.filter(number=outcome.revision.number).values_list(
            "record_kind", "record_key"
        )
    )
    assert rows == {("case", "CP22-003"), ("case", "CP22-002")}
    start = outcome.revision.number - 1
    assert footprints.changed_since(start, {("case", "CP22-002")})
    assert not footprints.changed_since(start, {("case", "CP99-001"), ("source", SOURCE)})
    assert not footprints.changed_since(outcome.revision.number, {("case", "CP22-003")})


@ON_POSTGRES
@pytest.mark.django_db
def test_a_large_footprint_names_everything(seeded, reviewer):
    """A bundle of more cases than a footprint lists leaves one naming everything."""
    cases = [new_case(f"CP72-{n:03d}") for n in range(footprints.MAX_RECORDS + 1)]
    head = LedgerHead.objects.get(pk=1).number
    bundle_load(user=reviewer, bundle=bundle_of(cases=cases), summary="Many")
    assert list(
        WriteFootprint.objects.filter(number__gt=head).values_list("record_kind", "record_key")
    ) == [footprints.EVERYTHING]
    assert footprints.changed_since(head, {("case", "CP22-003")})


@ON_POSTGRES
@pytest.mark.django_db
def test_a_write_started_before_the_footprints_kept_runs_again(seeded, monkeypatch):
    head = LedgerHead.objects.get(pk=1).number
    monkeypatch.setattr(footprints, "WINDOW", 2)
    assert footprints.changed_since(head - 3, {("case", "CP99-001")})
    assert not footprints.changed_since(head - 2, {("case", "CP99-001")})


@pytest.mark.django_db
def test_the_timing_log_has_a_line_per_write(seeded, analyst, tmp_path):
    log = tmp_path / "timing.log"
    document = record_document("case", "CP22-003")
    with override_settings(WRITE_TIMING_LOG=str(log)):
        for n in range(2):
            document["limits"] = f"Timed {n}."
            case_update(user=analyst, key="CP22-003", document=document, summary="Timed")
    lines = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    assert len(lines) == 2
    for total, held in lines:
        assert 0 < held <= total
    if connection.vendor == "postgresql":
        # the checks ran before the lock: it was held for part of the write only
        assert all(held < total for total, held in lines)


@pytest.mark.django_db
def test_no_timing_log_without_the_setting(seeded, analyst, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    document = record_document("case", "CP22-003")
    document["limits"] = "Not timed."
    case_update(user=analyst, key="CP22-003", document=document, summary="Untimed")
    assert list(tmp_path.iterdir()) == []
