"""Benchmark of the coverage matrix (docs/coverage.md) on PostgreSQL: one case with 1,000
runs of 10 scenarios.

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/coverage.py

Sets up a throwaway database (``<name>_coverage_<pid>``, migrated, with the seed), gives
CP22-003 its affected backends, and stores 1,000 runs of 10 scenarios each — 10,000
scenarios over four backends (three components and one name no component matches), four
versions each, five mitigation sets — with their component relations and, for every
scenario, ``--rows`` trial rows (COPY), as the importer stores them. The runs are written as
rows, not imported one by one (the import itself is ``bench/import.py``'s), and the case
document handed to the matrix lists the 1,000 runs as an imported case's document would.

It measures ``case_coverage`` of that document: its queries (the count, which must be the
same as at 10 runs, and that none reads the trial rows), and its time (p50 and p95 of
``--repeats`` builds after a warm-up), beside the time of the same counts computed from the
trial rows, which the matrix does not read. The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Databases, log, p95, postgres_url, setup_django  # noqa: E402

BACKENDS = [("mooncake", "CMP-MOONCAKE"), ("nixl", "CMP-NIXL"), ("mori", "CMP-MORI"),
            ("other:ucx", None)]  # fmt: skip
MITIGATION_SETS = [[], ["abort_ack"], ["deferred_release"], ["generation_token"],
                   ["abort_ack", "kv_checksum"]]  # fmt: skip
VERSIONS = ["v0.3.5", "v0.3.6", "v0.3.7", "v0.3.8"]


def populate(runs: int, scenarios: int, rows: int) -> list[str]:
    """Store the runs; return their ids."""
    from django.contrib.auth.models import User
    from django.db import transaction

    from claimsdb.importers import storage
    from claimsdb.models import (
        Case,
        Component,
        ReproductionRun,
        ReproductionScenario,
        RunComponent,
    )
    from claimsdb.records import record_document
    from claimsdb.services import case_update

    user = User.objects.get(username="bench-analyst")
    document = record_document("case", "CP22-003")
    assert document is not None
    if not document.get("affected"):
        document["affected"] = [
            {"component": key, "status": "affected", "ranges": [], "versions": [],
             "claims": ["CLM-CP22-003-B"], "note": ""}
            for _, key in BACKENDS if key
        ]  # fmt: skip
        document["affected"][0]["ranges"] = [{"events": [{"introduced": "0"}, {"fixed": "v0.3.8"}]}]
        case_update(user=user, key="CP22-003", document=document, summary="Affected backends")
    case = Case.objects.get(key="CP22-003")
    components = dict(Component.objects.values_list("key", "pk"))
    run_ids = []
    with transaction.atomic():
        for r in range(runs):
            run_id = f"bench-cov-{r:05d}"
            run_ids.append(run_id)
            run = ReproductionRun.objects.create(
                case=case, run_id=run_id, file_sha256="0" * 64, summary={"run_id": run_id}
            )
            made = ReproductionScenario.objects.bulk_create(
                ReproductionScenario(
                    run=run,
                    position=s,
                    scenario_id=f"s{s}",
                    backend=BACKENDS[s % len(BACKENDS)][0],
                    mitigations=MITIGATION_SETS[s % len(MITIGATION_SETS)],
                    free_list_order="lifo",
                    trials=rows or 20,
                    checksum_mismatches=(r + s) % 7 if (r + s) % 3 else 0,
                    wrong_outputs=0,
                    outcome="reproduced" if (r + s) % 3 else "not_reproduced",
                    backend_version=VERSIONS[(r // 7 + s) % len(VERSIONS)],
                    stored_rows=rows,
                )
                for s in range(scenarios)
            )
            RunComponent.objects.bulk_create(
                RunComponent(
                    run=run,
                    scenario=scenario,
                    role="backend",
                    name=scenario.backend,
                    version=scenario.backend_version,
                    component_id=components.get(dict(BACKENDS)[scenario.backend] or ""),
                    matched_by="name" if dict(BACKENDS)[scenario.backend] else "",
                )
                for scenario in made
            )
            if rows:
                storage.insert_rows(
                    (scenario.pk, n, True, True, False, False, n <= scenario.checksum_mismatches,
                     False, 10.0, None)
                    for scenario in made
                    for n in range(1, rows + 1)
                )  # fmt: skip
            if (r + 1) % 200 == 0:
                log(f"stored {r + 1} runs")
    return run_ids


def measure(run_ids: list[str], repeats: int) -> dict:
    from django.db import connection
    from django.db.models import Count, Q
    from django.test.utils import CaptureQueriesContext

    from claimsdb.models import TrialRow
    from claimsdb.records import record_document
    from claimsdb.selectors.coverage import case_coverage

    document = record_document("case", "CP22-003")
    assert document is not None
    document["reproduction_runs"] = [{"run_id": run_id} for run_id in run_ids]

    def build():
        return case_coverage(document)

    with CaptureQueriesContext(connection) as captured:
        coverage = build()
    few = dict(document, reproduction_runs=document["reproduction_runs"][:10])
    with CaptureQueriesContext(connection) as captured_few:
        case_coverage(few)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)

    def from_trial_rows():
        return list(
            TrialRow.objects.filter(scenario__run__run_id__in=run_ids)
            .values("scenario__backend", "scenario__backend_version", "scenario__mitigations")
            .annotate(trials=Count("id"), mismatches=Count("id", filter=Q(checksum_mismatch=True)))
            .order_by()
        )

    row_times = []
    for _ in range(max(1, repeats // 4)):
        start = time.perf_counter()
        from_trial_rows()
        row_times.append(time.perf_counter() - start)
    if os.environ.get("COVERAGE_EXPLAIN"):
        with connection.cursor() as cursor:
            for query in captured.captured_queries:
                cursor.execute("EXPLAIN ANALYZE " + query["sql"])
                log("\n".join(row[0] for row in cursor.fetchall()))
    table = TrialRow._meta.db_table
    return {
        "queries": len(captured.captured_queries),
        "queries_at_10_runs": len(captured_few.captured_queries),
        "reads_trial_rows": any(table in q["sql"] for q in captured.captured_queries),
        "p50_ms": sorted(times)[len(times) // 2] * 1000,
        "p95_ms": p95(times) * 1000,
        "from_trial_rows_p50_ms": sorted(row_times)[len(row_times) // 2] * 1000,
        "trial_rows": TrialRow.objects.count(),
        "rows": len(coverage.rows),
        "groups": sum(len(row.tested) for row in coverage.rows),
        "gaps": coverage.gaps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--rows", type=int, default=20, help="trial rows per scenario")
    parser.add_argument("--repeats", type=int, default=40)
    options = parser.parse_args()
    url = postgres_url("bench/coverage.py", "it measures PostgreSQL's aggregates")
    setup_django()
    from django.contrib.auth.models import Group, User

    from claimsdb.services import bundle_load

    base = urlsplit(url).path.lstrip("/") or "claimsdb"
    dbs = Databases(url, f"{base}_coverage_{os.getpid()}")
    try:
        dbs.migrated("kb")
        analyst = User.objects.create_user("bench-analyst")
        analyst.groups.add(Group.objects.get(name="analyst"))
        reviewer = User.objects.create_user("bench-reviewer")
        reviewer.groups.add(Group.objects.get(name="reviewer"))
        bundle = json.loads((ROOT / "fixtures" / "seed.json").read_text(encoding="utf-8"))
        bundle_load(user=reviewer, bundle=bundle, summary="Seed for the benchmark")
        start = time.perf_counter()
        run_ids = populate(options.runs, options.scenarios, options.rows)
        log(f"stored {options.runs} runs in {time.perf_counter() - start:.1f} s")
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would have, before a reader came
        result = measure(run_ids, options.repeats)
        print(
            f"case_coverage of CP22-003 at {options.runs:,} runs × {options.scenarios} "
            f"scenarios ({result['trial_rows']:,} trial rows stored):\n"
            f"  queries: {result['queries']} (at 10 runs: {result['queries_at_10_runs']}); "
            f"reads trial rows: {result['reads_trial_rows']}\n"
            f"  build: p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms "
            f"({result['rows']} rows, {result['groups']} version × mitigation groups)\n"
            "  the same counts from the trial rows: p50 "
            f"{result['from_trial_rows_p50_ms']:.1f} ms\n"
            f"  gaps: {result['gaps']}"
        )
        return 0 if result["queries"] == result["queries_at_10_runs"] else 1
    finally:
        from django.db import connection

        connection.close()
        dbs.drop_all()


if __name__ == "__main__":
    raise SystemExit(main())
