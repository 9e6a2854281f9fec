"""The write path at scale: fixed queries per change and per batch, bounded memory, and
load_records streaming a bundle in batches, all or nothing."""

from __future__ import annotations

import copy
import json
import re
import tracemalloc
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from claimsdb import synthetic_kb
from claimsdb.models import (
    Case,
    Claim,
    ClaimIdReservation,
    EvidenceLink,
    Relation,
    Revision,
    SearchEntry,
    SearchScope,
    Source,
)
from claimsdb.records import RuleViolations, bundle_document, dumps_pretty, record_document
from claimsdb.services import bundle_load_file, case_update, ledger, rows
from claimsdb.services.search_index import (
    ENTRY_FIELDS,
    case_entries,
    component_entry,
    source_entry,
)

from .support import queries_of

pytestmark = pytest.mark.django_db


def cases_of(count: int) -> list[dict]:
    """Cases 0 to ``count - 1`` of a synthetic knowledge base of ``count`` cases."""
    return [synthetic_kb.case_document(i, cases=count) for i in range(count)]


def bundle_of(cases: list[dict], sources: int = 10) -> dict:
    """The cases with the method, ``sources`` sources and the components they name."""
    named = sorted({a["component"] for case in cases for a in case.get("affected", [])})
    return {
        "format": "claimsdb.bundle/1",
        "methods": [synthetic_kb.METHOD],
        "sources": [synthetic_kb.source_document(i) for i in range(sources)],
        "components": [
            synthetic_kb.component_document(int(key.rsplit("-", 1)[1])) for key in named
        ],
        "cases": cases,
        "rules": [],
    }


def write_bundle(tmp_path: Path, cases: int, name: str = "bundle.json") -> Path:
    """A bundle of ``cases`` cases and the sources they cite (ten at least), written as
    ``export_records`` writes one."""
    bundle = bundle_of(cases_of(cases), max(10, synthetic_kb.source_count(cases)))
    path = tmp_path / name
    path.write_text(dumps_pretty(bundle), encoding="utf-8")
    return path


def save(tmp_path: Path, bundle: dict, name: str = "bundle.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(bundle, indent=2, sort_keys=True), encoding="utf-8")
    return path


def load(user, path: Path, batch_size: int = 4) -> int:
    return bundle_load_file(user=user, path=path, summary="Bulk", batch_size=batch_size)


def update_queries(user, key: str) -> int:
    document = copy.deepcopy(record_document("case", key))
    document["title"] += " (edited)"
    document["claims"][1]["statement"] += " Edited."
    return queries_of(lambda: case_update(user=user, key=key, document=document, summary="Edit"))


def test_one_case_update_costs_the_same_queries_at_two_sizes(reviewer, tmp_path):
    load(reviewer, write_bundle(tmp_path, 4, "small.json"))
    small = update_queries(reviewer, synthetic_kb.case_key(2))
    # the first ten sources are loaded again unchanged, with ten more
    more = bundle_of(cases_of(40)[4:], synthetic_kb.source_count(40))
    load(reviewer, save(tmp_path, more), batch_size=16)
    assert Case.objects.count() == 40
    assert update_queries(reviewer, synthetic_kb.case_key(2)) == small


def load_queries(user, path: Path) -> int:
    """Queries of one load, rolled back so that every load starts from the same state."""
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        load(user, path)
        transaction.set_rollback(True)
    return len(captured)


def test_load_queries_grow_by_batch_not_by_record(reviewer, tmp_path):
    # pairs of linked cases, four cases a batch: 2, 3 and 4 batches of cases; ten sources
    counts = [load_queries(reviewer, write_bundle(tmp_path, n, f"b{n}.json")) for n in (8, 12, 16)]
    per_batch = counts[1] - counts[0]
    assert counts[2] - counts[1] == per_batch
    assert per_batch < 80  # a batch of four cases with 32 claims and 64 evidence links
    assert Revision.objects.count() == 0


@pytest.mark.slow
def test_memory_of_a_load_follows_the_batch_not_the_file(reviewer, tmp_path):
    peaks = []
    for cases in (20, 80):
        path = write_bundle(tmp_path, cases, f"m{cases}.json")
        with transaction.atomic():
            tracemalloc.start()
            try:
                load(reviewer, path, batch_size=10)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            transaction.set_rollback(True)
    assert peaks[1] / peaks[0] <= 1.5, peaks


def test_export_after_a_batched_load_is_the_file_byte_for_byte(reviewer, tmp_path):
    path = write_bundle(tmp_path, 14)
    assert load(reviewer, path, batch_size=3) == 14 + 10 + 3 + 1
    assert dumps_pretty(bundle_document()) == path.read_text(encoding="utf-8")
    assert Revision.objects.count() == 28
    call_command("verify_history", stdout=open("/dev/null", "w"))


def test_a_case_may_refer_to_a_case_in_a_much_later_batch(reviewer, tmp_path):
    cases = cases_of(12)
    first, last = cases[0], cases[11]
    for document in cases:
        document["relations"], document["attributions"] = [], []
    first["relations"] = [{"case": last["key"], "kind": "same_event", "note": ""}]
    last["relations"] = [{"case": first["key"], "kind": "same_event", "note": ""}]
    first["attributions"] = [{"figure": last["figures"][0]["id"], "role": "context", "note": ""}]
    load(reviewer, save(tmp_path, bundle_of(cases)), batch_size=2)
    assert record_document("case", first["key"]) == first
    assert record_document("case", last["key"]) == last
    # the pair was written in one batch, so each got one revision, none for a partner
    assert not Revision.objects.filter(summary__contains="relation changed").exists()


def test_an_error_in_a_late_batch_writes_nothing_and_every_problem_is_reported(reviewer, tmp_path):
    cases = cases_of(12)
    cases[10]["claims"][2]["evidence"][0]["source"] = "SRC-NOWHERE"
    del cases[7]["title"]
    path = save(tmp_path, bundle_of(cases))
    with pytest.raises(RuleViolations) as refused:
        load(reviewer, path, batch_size=2)
    found = {(v.code, v.path) for v in refused.value.violations}
    assert ("evidence.source_unknown", "cases[10].claims[2].evidence[0].source") in found
    assert ("document.missing_field", "cases[7].title") in found
    assert Revision.objects.count() == 0
    assert not Case.objects.exists() and not Source.objects.exists()
    assert not ClaimIdReservation.objects.exists()


def test_load_records_reports_a_late_error_with_its_bundle_path(reviewer, tmp_path, capsys):
    cases = cases_of(10)
    cases[9]["claims"][0]["evidence"][1]["source"] = "SRC-NOWHERE"
    path = save(tmp_path, bundle_of(cases))
    with pytest.raises(Exception, match="refused"):
        call_command("load_records", str(path), user="reviewer", batch_size=2)
    err = capsys.readouterr().err
    assert "cases[9].claims[0].evidence[1].source: evidence.source_unknown" in err
    assert Revision.objects.count() == 0


def test_a_key_given_twice_in_different_batches_is_refused(reviewer, tmp_path):
    cases = cases_of(6)
    sources = bundle_of(cases)["sources"]
    sources.append(copy.deepcopy(sources[0]))
    bundle = {**bundle_of(cases), "sources": sources}
    with pytest.raises(RuleViolations) as refused:
        load(reviewer, save(tmp_path, bundle), batch_size=2)
    assert ("document.duplicate_key", "sources[10].key") in {
        (v.code, v.path) for v in refused.value.violations
    }
    assert not Source.objects.exists()


def test_a_relation_added_from_one_side_revises_the_other_case(reviewer, tmp_path):
    cases = cases_of(4)
    for document in cases:
        document["relations"], document["attributions"] = [], []
    load(reviewer, save(tmp_path, bundle_of(cases)))
    first, third = cases[0]["key"], cases[2]["key"]
    document = record_document("case", first)
    document["relations"] = [{"case": third, "kind": "related_distinct", "note": "n"}]
    case_update(user=reviewer, key=first, document=document, summary="Relate")
    partner = Revision.objects.filter(record_key=third).latest("number")
    assert partner.summary == "Relate (relation changed from the other case)"
    assert json.loads(partner.snapshot) == record_document("case", third)
    # an edit that leaves the relation alone revises only the edited case
    document["title"] = "Retitled"
    before = Revision.objects.count()
    case_update(user=reviewer, key=first, document=document, summary="Retitle")
    assert Revision.objects.count() == before + 1
    document["relations"] = []
    case_update(user=reviewer, key=first, document=document, summary="Unrelate")
    assert record_document("case", third)["relations"] == []
    assert Revision.objects.filter(record_key=third).count() == 3
    assert not Relation.objects.exists()


def test_a_case_update_reads_relations_by_either_side_not_by_an_or_across_joins(reviewer, tmp_path):
    # "case is one of these OR other is one of these", each through its own join to the
    # case table, cannot use an index on PostgreSQL: it read every relation and case
    load(reviewer, write_bundle(tmp_path, 6))
    document = copy.deepcopy(record_document("case", synthetic_kb.case_key(3)))
    document["summary"] += " Edited."
    with CaptureQueriesContext(connection) as captured:
        case_update(user=reviewer, key=document["key"], document=document, summary="Edit")
    relation_reads = [q["sql"] for q in captured if '"claimsdb_relation"' in q["sql"]]
    assert relation_reads
    for sql in relation_reads:
        assert not re.search(r'\."key" IN \([^)]*\)\)? OR \(?T\d+\."key" IN', sql), sql


@pytest.mark.postgres(reason="ANALYZE runs on PostgreSQL")
def test_a_load_refreshes_statistics_each_time_its_record_count_doubles(
    reviewer, tmp_path, monkeypatch
):
    from claimsdb.services import bundles

    monkeypatch.setattr(bundles, "ANALYZE_FROM", 6)
    # 1 method, 10 sources, the 3 components the cases name and 14 cases: 28 records
    path = write_bundle(tmp_path, 14)
    with CaptureQueriesContext(connection) as captured:
        assert load(reviewer, path, batch_size=4) == 28
    analyzed = [q["sql"] for q in captured if q["sql"].startswith("ANALYZE ")]
    # batches of 4 of each kind in turn (method, sources, components, cases): read 1, 5,
    # 9 (≥ 6), 11, 14, 18 (≥ 18), 22, 26, 28: twice
    assert len(analyzed) == 2
    assert '"claimsdb_revision"' in analyzed[0] and '"claimsdb_case"' in analyzed[0]
    with connection.cursor() as cursor:  # the statistics see the load's own rows
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'claimsdb_source'")
        assert cursor.fetchone()[0] == 10


@pytest.mark.parametrize("colliding", [False, True], ids=["hashes", "every-hash-collides"])
def test_the_outline_finds_duplicates_and_links_exactly_whatever_the_hashes(
    reviewer, tmp_path, monkeypatch, colliding
):
    # the outline keeps names as hashes: duplicates are confirmed on the names themselves,
    # and a collision may only link more cases, never report a key twice that is not
    from claimsdb.records import bundle_stream

    if colliding:
        monkeypatch.setattr(bundle_stream, "_hash", lambda text: 7)
    cases = cases_of(8)
    bundle = bundle_of(cases)
    bundle["sources"].append(copy.deepcopy(bundle["sources"][3]))
    bundle["cases"].append(copy.deepcopy(bundle["cases"][5]))
    with open(save(tmp_path, bundle), "rb") as stream:
        shape = bundle_stream.outline(stream)
    assert shape.duplicates == {"sources[10]", "cases[8]"}
    del bundle["sources"][10], bundle["cases"][8]
    with open(save(tmp_path, bundle, "unique.json"), "rb") as stream:
        shape = bundle_stream.outline(stream)
    assert shape.duplicates == set()
    groups = {shape.links.group(i)[0] for i in range(8)}
    if colliding:
        assert len(groups) == 1  # every name "the same": one group, written in one batch
    assert load(reviewer, save(tmp_path, bundle, "unique.json"), batch_size=3) == 8 + 10 + 3 + 1
    for document in cases:
        assert record_document("case", document["key"]) == document


# -- how rows are written: the same rows, documents, revisions and hashes either way ------


class _RolledBack(Exception):
    pass


def _loaded_state(user, path: Path) -> dict:
    """A load of ``path``, then everything it wrote that does not depend on primary keys
    (documents, revisions with their hashes, search entries, reserved claim IDs); rolled
    back, so that the next load starts from the same ledger."""
    state: dict = {}
    try:
        with transaction.atomic():
            load(user, path, batch_size=3)
            state["export"] = dumps_pretty(bundle_document())
            state["revisions"] = list(
                Revision.objects.order_by("number").values_list(
                    "number", "record_kind", "record_key", "action", "snapshot",
                    "snapshot_sha256", "previous_hash", "chain_hash", "changed", "dated_on",
                )
            )  # fmt: skip
            state["search"] = sorted(
                SearchEntry.objects.values_list(
                    "scope", "kind", "key", "case_key", "status", "source_kind", "title", "text",
                    "revision",
                )
            )  # fmt: skip
            state["reserved"] = sorted(
                ClaimIdReservation.objects.values_list("claim_id", "case_key")
            )
            raise _RolledBack
    except _RolledBack:
        pass
    return state


@pytest.mark.postgres(reason="binary COPY is PostgreSQL's")
def test_binary_copy_and_plain_inserts_write_the_same_ledger(reviewer, tmp_path, monkeypatch):
    path = write_bundle(tmp_path, 9)
    moment = timezone.now()
    monkeypatch.setattr(ledger.timezone, "now", lambda: moment)  # the same hashed times
    copied = _loaded_state(reviewer, path)
    monkeypatch.setattr(rows, "BINARY_COPY", False)
    inserted = _loaded_state(reviewer, path)
    assert len(copied["revisions"]) == 9 + 10 + 3 + 1
    assert copied == inserted
    assert copied["export"] == path.read_text(encoding="utf-8")


def test_the_search_index_of_a_load_holds_the_entries_of_its_documents(reviewer, tmp_path):
    path = write_bundle(tmp_path, 6)
    load(reviewer, path)
    bundle = json.loads(path.read_text(encoding="utf-8"))
    expected = [
        *(e for d in bundle["cases"] for e in case_entries(d, scope=SearchScope.WORKING)),
        *(source_entry(d, scope=SearchScope.WORKING) for d in bundle["sources"]),
        *(component_entry(d, scope=SearchScope.WORKING) for d in bundle["components"]),
    ]
    assert sorted(SearchEntry.objects.values_list(*ENTRY_FIELDS)) == sorted(expected)
    assert {revision for *_, revision in expected} == {None}
    # an edit re-indexes the case from what it now holds
    document = record_document("case", synthetic_kb.case_key(1))
    document["title"] = "Renamed"
    document["claims"][0]["statement"] = "Restated."
    case_update(user=reviewer, key=document["key"], document=document, summary="Edit")
    entries = SearchEntry.objects.filter(case_key=document["key"])
    assert sorted(entries.values_list("kind", "key", "title", "text")) == [
        ("case", document["key"], "Renamed", document["summary"]),
        *(("claim", c["id"], "", c["statement"]) for c in document["claims"]),
    ]


def test_an_edit_of_a_claims_own_fields_rewrites_that_claim_only(reviewer, tmp_path):
    load(reviewer, write_bundle(tmp_path, 4))
    key = synthetic_kb.case_key(1)
    claims = Claim.objects.filter(case__key=key)
    before = dict(claims.values_list("claim_id", "pk"))
    links = set(EvidenceLink.objects.filter(claim__case__key=key).values_list("pk", flat=True))
    document = record_document("case", key)
    document["claims"][2]["status_note"] = "Re-read."
    document["claims"][3]["statement"] += " Restated."
    document["summary"] += " Edited."
    outcome = case_update(user=reviewer, key=key, document=document, summary="Edit")
    assert dict(claims.values_list("claim_id", "pk")) == before  # rows kept, not rewritten
    assert (
        set(EvidenceLink.objects.filter(claim__case__key=key).values_list("pk", flat=True)) == links
    )
    assert record_document("case", key) == document
    assert outcome.document == document
    assert len(outcome.revision.changed) == 3  # the two claims' fields and the summary
    # a claim added or moved rewrites the list
    document["claims"].reverse()
    case_update(user=reviewer, key=key, document=document, summary="Reordered")
    assert record_document("case", key) == document
    assert dict(claims.values_list("claim_id", "pk")) != before
