"""export_records, verify_history and check_rules read every record in batches: memory
bounded by the batch size, a fixed number of queries per batch, unchanged output, and a
progress line only on a terminal."""

from __future__ import annotations

import copy
import io
import json
import threading
import tracemalloc
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.integrity import (
    case_check_contexts,
    check_rules,
    rule_check_contexts,
    verify_history,
)
from claimsdb.management.commands._common import ProgressLine, one_snapshot
from claimsdb.models import (
    Attribution,
    Case,
    EvidenceLink,
    Figure,
    Relation,
    Release,
    ReproductionRun,
    Revision,
)
from claimsdb.records import (
    bundle_document,
    dumps_pretty,
    iter_pretty_bundle,
)
from claimsdb.records import stream as record_stream
from claimsdb.records.batched import case_documents
from claimsdb.records.kinds import CASE
from claimsdb.rules.context import DocumentContext, case_context
from claimsdb.services import bundle_load
from claimsdb.services.releases import release_publish

from .support import ROOT, SEED_PATH, case_doc, make_user, queries_of

pytestmark = pytest.mark.django_db

REPRO_FIXTURE = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"


def synthetic_cases(seed: dict, start: int, count: int) -> list[dict]:
    """``count`` valid cases shaped like the seed's CP22-003 (three claims with evidence,
    an assessment) plus one figure of their own, keyed ``CPS-<n>``."""
    template = case_doc(seed, "CP22-003")
    figure = copy.deepcopy(case_doc(seed, "CP22-002")["figures"][0])
    cases = []
    for number in range(start, start + count):
        key = f"CPS-{number:05d}"
        document = copy.deepcopy(template)
        document["key"] = key
        document["title"] = f"Synthetic case {number}"
        document["relations"] = []
        renamed = {}
        for letter, claim in zip("ABCDEFGH", document["claims"], strict=False):
            renamed[claim["id"]] = claim["id"] = f"CLM-{key}-{letter}"
        for assessment in document["assessments"]:
            basis = assessment["evidence_basis"]
            basis["claims"] = sorted(renamed[c] for c in basis["claims"])
        for entry in document.get("affected", []):
            entry["claims"] = [renamed[c] for c in entry["claims"]]
        document["figures"] = [
            {**figure, "id": f"FIG-{key}", "claims": [document["claims"][0]["id"]]}
        ]
        cases.append(document)
    return cases


def add_cases(user, seed: dict, start: int, count: int) -> None:
    bundle = {"format": "claimsdb.bundle/1", "methods": [], "sources": [], "rules": []}
    bundle["cases"] = synthetic_cases(seed, start, count)
    bundle_load(user=user, bundle=bundle, summary="Synthetic cases")


class Terminal(io.StringIO):
    """Standard error as a terminal."""

    def isatty(self) -> bool:
        return True


def run(name: str, *args, **options) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


# --- output ----------------------------------------------------------------------------------


def test_the_streamed_pieces_are_dumps_pretty(seed_bundle):
    documents = [
        {},
        {"é": ["ü", {"nested": [1, 2.5, None, True]}], "a": "line\nbreak"},
        {"empty": [], "also": {}},
    ]
    for bundle in (
        seed_bundle,
        {"format": "x", "cases": [], "methods": documents, "rules": [{}], "sources": []},
    ):
        lazy = {k: v if isinstance(v, str) else iter(v) for k, v in bundle.items()}
        assert "".join(iter_pretty_bundle(lazy)) == dumps_pretty(bundle)


@pytest.mark.parametrize("size", [1, 2, 500])
def test_export_is_byte_identical_at_any_batch_size(seeded, reviewer, tmp_path, size):
    out = tmp_path / "export.json"
    call_command("export_records", out=str(out), batch_size=size, stderr=io.StringIO())
    assert out.read_text(encoding="utf-8") == SEED_PATH.read_text(encoding="utf-8")
    release_publish(user=reviewer, notes="1")
    call_command("export_records", release=1, out=str(out), batch_size=size, stderr=io.StringIO())
    assert out.read_text(encoding="utf-8") == SEED_PATH.read_text(encoding="utf-8")


def test_a_failed_export_leaves_the_previous_file(seeded, tmp_path, monkeypatch):
    out = tmp_path / "export.json"
    out.write_text("before", encoding="utf-8")

    def broken(kind, *, batch_size):
        raise RuntimeError("the database went away")
        yield  # a generator: it fails when the export reads it, the file being written

    monkeypatch.setattr(record_stream, "document_batches", broken)
    with pytest.raises(RuntimeError):
        call_command("export_records", out=str(out), stderr=io.StringIO())
    assert out.read_text(encoding="utf-8") == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["export.json"]


def test_batches_refuse_records_out_of_key_order():
    batches = [[{"key": "B"}], [{"key": "A"}]]
    with pytest.raises(RuntimeError, match="out of key order"):
        list(record_stream.in_key_order(batches))


@pytest.mark.postgres(reason="collations are PostgreSQL's")
def test_export_sorts_by_code_point_under_a_language_collation(seeded, tmp_path, monkeypatch):
    monkeypatch.setattr(record_stream, "orders_bytewise", lambda queryset: False)
    out = tmp_path / "export.json"
    call_command("export_records", out=str(out), batch_size=1, stderr=io.StringIO())
    assert out.read_text(encoding="utf-8") == SEED_PATH.read_text(encoding="utf-8")


def test_case_documents_hold_every_part_in_batches_of_any_size(
    seeded, seed_bundle, reviewer, analyst
):
    """The one builder of a case's document gets every part of it right, whatever batch
    the case is built in: relations both ways (symmetric kinds only on the other side),
    attributions, tags, controls, unknowns, figures, assessments and imported reproduction
    runs. Cases written through the services read back as their latest snapshots; the
    rows added behind the ledger below show up where the document format puts them."""
    add_cases(reviewer, seed_bundle, 1, 3)
    first, second = Case.objects.get(key="CPS-00001"), Case.objects.get(key="CPS-00002")
    Relation.objects.create(case=first, other=second, kind="same_event", note="both ways")
    Relation.objects.create(case=second, other=first, kind="variant_of", note="one way")
    Attribution.objects.create(
        case=first,
        position=0,
        figure=Figure.objects.get(figure_id="FIG-CPS-00002"),
        role="impact_basis",
        note="",
    )
    ResultsImporter(user=analyst).import_path(REPRO_FIXTURE)
    assert ReproductionRun.objects.exists()
    expected = {
        key: json.loads(snapshot)
        for key, snapshot in Revision.objects.filter(record_kind="case")
        .order_by("record_key", "number")
        .values_list("record_key", "snapshot")
    }  # each case's latest snapshot
    assert any(document["reproduction_runs"] for document in expected.values())
    both_ways = {"kind": "same_event", "note": "both ways"}
    expected["CPS-00001"]["relations"] = [{"case": "CPS-00002", **both_ways}]
    expected["CPS-00001"]["attributions"] = [
        {"figure": "FIG-CPS-00002", "role": "impact_basis", "note": ""}
    ]
    expected["CPS-00002"]["relations"] = [
        {"case": "CPS-00001", **both_ways},
        {"case": "CPS-00001", "kind": "variant_of", "note": "one way"},
    ]
    cases = list(CASE.rows().order_by("key"))
    for size in (1, 2, len(cases)):
        built = [
            d
            for start in range(0, len(cases), size)
            for d in case_documents(cases[start : start + size])
        ]
        assert built == [expected[case.key] for case in cases]


def test_batch_contexts_are_the_per_document_contexts(seeded, seed_bundle, reviewer):
    add_cases(reviewer, seed_bundle, 1, 3)
    documents = bundle_document()
    cases = documents["cases"]
    for document, context in zip(cases, case_check_contexts(cases), strict=True):
        expected = case_context(document, action="check", current_runs=None)
        expected.live_claims.update({c["id"]: document["key"] for c in document["claims"]})
        assert context == expected
    rules = documents["rules"]
    for document, context in zip(rules, rule_check_contexts(rules), strict=True):
        assert context == DocumentContext(
            kind="rule",
            key=document["key"],
            exists=True,
            action="check",
            figures={document["figure"]: "CP22-002"},
            cases={document["case"]},
        )


def test_verify_names_the_same_problems_at_any_batch_size(seeded, seed_bundle, reviewer):
    add_cases(reviewer, seed_bundle, 1, 5)
    Case.objects.filter(key="CPS-00002").update(title="Edited behind the services")
    Case.objects.filter(key="CPS-00004").delete()
    Revision.objects.filter(number=3).update(summary="edited")
    problems = verify_history()
    assert problems == verify_history(batch_size=1) == verify_history(batch_size=2)
    assert "revision 3: the chain hash does not match its contents" in problems[0]
    assert any(p.startswith("case CPS-00002: the live record differs") for p in problems)
    assert problems[-1].startswith("case CPS-00004: has revisions but no live record")


def test_check_rules_finds_the_same_violations_at_any_batch_size(seeded, seed_bundle, reviewer):
    add_cases(reviewer, seed_bundle, 1, 4)
    EvidenceLink.objects.filter(claim__claim_id__in=["CLM-CPS-00001-A", "CLM-CPS-00003-B"]).delete()
    found = check_rules()
    assert found == check_rules(batch_size=1)
    assert [(v.record, v.code, v.path) for v in found] == [
        ("case CPS-00001", "claim.evidence_required", "claims[0].evidence"),
        ("case CPS-00003", "claim.evidence_required", "claims[1].evidence"),
    ]


# --- bounded memory and fixed queries per batch ----------------------------------------------

BATCH = 10


def peak(command: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        command()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def commands(tmp_path) -> dict[str, Callable[[], object]]:
    out = tmp_path / "out.json"
    release = Release.objects.order_by("-number").values_list("number", flat=True).first()
    quiet = {"batch_size": BATCH, "stdout": io.StringIO(), "stderr": io.StringIO()}
    return {
        "export_records": lambda: call_command("export_records", out=str(out), **quiet),
        "export_records --release": lambda: call_command(
            "export_records", release=release, out=str(out), **quiet
        ),
        "verify_history": lambda: call_command("verify_history", **quiet),
        "check_rules": lambda: call_command("check_rules", **quiet),
    }


def test_memory_follows_the_batch_size_not_the_records(seeded, seed_bundle, reviewer, tmp_path):
    small, large = 20, 80
    add_cases(reviewer, seed_bundle, 1, small)
    release_publish(user=reviewer, notes="small")
    for command in commands(tmp_path).values():
        command()  # imports and caches warmed up
    small_peaks = {name: peak(command) for name, command in commands(tmp_path).items()}
    add_cases(reviewer, seed_bundle, 1 + small, large - small)
    release_publish(user=reviewer, notes="large")
    large_peaks = {name: peak(command) for name, command in commands(tmp_path).items()}
    assert Case.objects.count() == large + 2
    for name in small_peaks:
        assert large_peaks[name] <= 1.5 * small_peaks[name], (name, small_peaks, large_peaks)


# Queries one more batch of cases (and of their revisions, and release entries) costs: the
# case rows and ten for their related rows (both directions of relations in one);
# verify_history adds the batch's latest snapshots (its revisions stream through one query,
# read in chunks of the batch size), check_rules the context lookups (six at most: none is
# made for references a batch lacks, here relations to other cases) and its scope pass: the
# case keys, one round of the same_event closure (these cases have no relations) and four
# for the scope state (no figure query: these cases attribute no figure, grade no impact).
PER_BATCH = {
    # a case's documents: twelve queries (claimsdb.records.batched), the affected entries
    # among them; check_rules also looks up the components the batch's entries name
    "export_records": 12,
    "export_records --release": 1,
    "verify_history": 12 + 1,
    "check_rules": 12 + 6 + 1 + 1 + 4,
}


def test_queries_per_batch_are_fixed(seeded, seed_bundle, reviewer, tmp_path):
    counts: dict[str, list[int]] = {name: [] for name in PER_BATCH}
    added = 0
    for batches in (1, 2, 3):
        # the seed's two cases and ours make whole batches
        add_cases(reviewer, seed_bundle, added + 1, batches * BATCH - 2 - added)
        added = batches * BATCH - 2
        release_publish(user=reviewer, notes=str(batches))
        for name, command in commands(tmp_path).items():
            counts[name].append(queries_of(command))
    for name, (one, two, three) in counts.items():
        assert two - one == three - two == PER_BATCH[name], (name, counts[name])


# --- progress --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, options",
    [
        ("export_records", {}),
        ("export_records", {"release": 1}),
        ("verify_history", {}),
        ("check_rules", {}),
    ],
)
def test_progress_only_on_a_terminal(seeded, reviewer, tmp_path, name, options):
    release_publish(user=reviewer, notes="1")
    options = {**options, "out": str(tmp_path / "x.json")} if name == "export_records" else options
    out, err = io.StringIO(), io.StringIO()
    call_command(name, stdout=out, stderr=err, **options)
    assert "\r" not in err.getvalue() and " of " not in err.getvalue()

    terminal = Terminal()
    call_command(name, stdout=io.StringIO(), stderr=terminal, **options)
    shown = terminal.getvalue()
    assert "\rcases 0 of 2 (0%)" in shown
    assert "\rcases 2 of 2 (100%)" in shown
    # the line is blanked out at the end: what follows starts on a clean line
    assert shown.replace("wrote " + str(tmp_path / "x.json") + "\n", "").endswith("\r")

    call_command(
        name, stdout=io.StringIO(), stderr=(piped := io.StringIO()), progress=True, **options
    )
    assert "cases 2 of 2" in piped.getvalue()
    call_command(
        name, stdout=io.StringIO(), stderr=(quiet := Terminal()), progress=False, **options
    )
    assert "\r" not in quiet.getvalue()


def test_progress_line_shows_done_total_and_rate():
    terminal = Terminal()
    from django.core.management.base import OutputWrapper

    ticks = iter([0.0, 0.0, 0.0, 0.05, 2.0, 2.0, 2.0, 4.0, 4.0])
    line = ProgressLine(OutputWrapper(terminal), clock=lambda: next(ticks))
    line.begin("revisions", lambda: 1000)
    line.advance(100)  # too soon after the last drawing: skipped
    line.advance(400)
    line.advance(500)
    line.end()
    assert terminal.getvalue().split("\r")[1:] == [
        "revisions 0 of 1,000 (0%)",
        "revisions 500 of 1,000 (50%) 250/s",
        "revisions 1,000 of 1,000 (100%) 250/s",
        " " * len("revisions 1,000 of 1,000 (100%) 250/s"),
        "",
    ]


def test_problems_are_written_on_their_own_line_under_a_progress_line(seeded):
    Revision.objects.filter(number=14).update(summary="edited")
    terminal = Terminal()
    with pytest.raises(CommandError):
        call_command("verify_history", stdout=io.StringIO(), stderr=terminal)
    lines = terminal.getvalue().split("\n")
    problem = next(line for line in lines if "revision 14" in line)
    # the progress line is blanked out, and the problem written from the line's start
    *drawn, blank, text = problem.split("\r")
    assert drawn and blank.strip() == "" and text.startswith("revision 14: the chain hash")


def test_a_batch_size_below_one_is_refused(db):
    with pytest.raises(CommandError, match="--batch-size"):
        call_command("verify_history", batch_size=0)


def test_the_release_download_is_the_release_export_streamed(seeded, reviewer, tmp_path, client):
    release_publish(user=reviewer, notes="1")
    response = client.get("/api/v1/releases/1/bundle.json")
    assert response.streaming
    assert json.loads(b"".join(response.streaming_content)) == json.loads(
        SEED_PATH.read_text(encoding="utf-8")
    )


# --- one snapshot (PostgreSQL) ---------------------------------------------------------------


@pytest.mark.postgres(reason="SQLite reads batch by batch")
def test_a_write_made_while_a_command_reads_is_not_seen(
    roles_kept, transactional_db, seed_bundle, tmp_path
):
    bundle_load(user=make_user("reviewer", "reviewer"), bundle=seed_bundle, summary="Seed")

    def write_elsewhere() -> None:
        Case.objects.filter(key="CP22-003").update(title="Changed while reading")
        connection.close()

    with one_snapshot():
        title = Case.objects.get(key="CP22-003").title
        writer = threading.Thread(target=write_elsewhere)
        writer.start()
        writer.join()
        assert Case.objects.get(key="CP22-003").title == title
    assert Case.objects.get(key="CP22-003").title == "Changed while reading"
    # and the commands run in such a snapshot outside the tests' transaction
    call_command("export_records", out=str(tmp_path / "x.json"), stderr=io.StringIO())
    assert "Changed while reading" in (tmp_path / "x.json").read_text(encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("verify_history", stdout=io.StringIO(), stderr=io.StringIO())
