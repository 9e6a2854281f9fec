"""Benchmark of the reproduction-results importer on PostgreSQL (``make bench-import``).

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/import.py

Sets up a throwaway database (``<name>_import_<pid>_kb``, migrated, with the seed fixture),
writes synthetic results files of 1,000,000 and 100,000 trial rows to a temporary
directory, and measures, each in a fresh child process:

* the import of the 1M file (both streaming passes, validation, COPY, the revision):
  rows per second, and its ratio to a plain COPY of the same rows (already in memory as
  tuples) into the same table, measured in the same run — the target is at least 1/3;
* peak memory of the imports of 1M and 100k rows — ``tracemalloc`` peak (in a separate,
  traced run, so that tracing does not slow the timed one) and ``ru_maxrss`` — and their
  ratio 1M/100k: the target is at most 1.5.

The database is dropped at the end. ``--rows`` and ``--small-rows`` change the sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402  (the root is on the path from here on)
    Databases,
    maxrss_bytes,
    postgres_url,
    run_child,
    serve_child,
    setup_django,
)

# --- child processes: one measurement each ------------------------------------------------


def child_import(path: str, traced: bool = False) -> dict:
    setup_django()
    from django.contrib.auth.models import User

    from claimsdb.importers.repro_results import ResultsImporter

    user = User.objects.get(username="bench-analyst")
    _forget_run(path)
    importer = ResultsImporter(user=user, summary="Benchmark import")
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    report = importer.import_path(path)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] if traced else None
    if traced:
        tracemalloc.stop()
    if report.outcome != "imported":
        raise SystemExit(f"import failed: {report.outcome} {report.problems[:5]}")
    return {
        "rows": report.trial_rows,
        "seconds": seconds,
        "tracemalloc_peak": peak,
        "maxrss": maxrss_bytes(),
    }


def child_copy(path: str) -> dict:
    """A plain COPY of the file's rows, already parsed into tuples, into the same table."""
    setup_django()
    from django.db import connection, transaction
    from psycopg import sql

    from claimsdb.importers import storage
    from claimsdb.importers.repro import trial_rows
    from claimsdb.models import ReproductionRun, TrialRow

    _forget_run(path)
    scenario_pks = _scratch_scenarios()
    with open(path, "rb") as stream:
        rows = list(storage.stored_rows(trial_rows(stream), scenario_pks))
    columns = [TrialRow._meta.get_field(name).column for name in storage.ROW_COLUMNS]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(TrialRow._meta.db_table),
        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
    )
    start = time.perf_counter()
    with transaction.atomic():
        with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
    seconds = time.perf_counter() - start
    with transaction.atomic():
        for run in ReproductionRun.objects.filter(run_id="bench-copy-baseline"):
            storage.delete_run(run)
    return {"rows": len(rows), "seconds": seconds}


def _scratch_scenarios() -> dict[str, int]:
    """A run of the bench's own, outside any case document, to hang the COPY's rows on."""
    from django.db import transaction

    from claimsdb.models import Case, ReproductionRun, ReproductionScenario

    with transaction.atomic():
        run, _ = ReproductionRun.objects.get_or_create(
            run_id="bench-copy-baseline",
            defaults={
                "case": Case.objects.get(key="CP22-003"),
                "file_sha256": "0" * 64,
                "summary": {},
            },
        )
        ReproductionScenario.objects.filter(run=run).delete()
        pks = {}
        for i in range(64):
            scenario = ReproductionScenario.objects.create(
                run=run,
                position=i,
                scenario_id=f"scratch-{i}",
                backend="other:bench",
                free_list_order="lifo",
                trials=10**9,
                checksum_mismatches=0,
                wrong_outputs=0,
                outcome="inconclusive",
            )
            pks[scenario.scenario_id] = scenario.pk
    return _name_scenarios(pks)


def _name_scenarios(pks: dict[str, int]) -> dict[str, int]:
    """Map the synthetic files' scenario ids onto the scratch scenarios."""
    from claimsdb.importers.synthetic import BACKENDS

    names = {}
    for i, pk in enumerate(pks.values()):
        names[f"s{i:02d}-{BACKENDS[i // 2 % len(BACKENDS)]}"] = pk
    return names


def _forget_run(path: str) -> None:
    """Remove a run left by an earlier measurement (a throwaway database: no revision)."""
    import ijson
    from django.db import transaction

    from claimsdb.importers import storage
    from claimsdb.models import ReproductionRun

    with open(path, "rb") as stream:
        run_id = next(ijson.items(stream, "run_id"))
    with transaction.atomic():
        for run in ReproductionRun.objects.filter(run_id=run_id):
            storage.delete_run(run)


CHILDREN = {"import": child_import, "copy": child_copy}


# --- the orchestrating process ------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small-rows", type=int, default=100_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        return serve_child(CHILDREN, *options.child)

    url = postgres_url("bench/import.py", "it measures COPY")
    setup_django()
    from django.db import connection

    base = urlsplit(url).path.lstrip("/") or "claimsdb"
    dbs = Databases(url, f"{base}_import_{os.getpid()}")
    try:
        print(f"setting up database {dbs.prefix}_kb …", flush=True)
        bench_url = dbs.migrated("kb")
        _seed()
        connection.close()
        with tempfile.TemporaryDirectory(prefix="claimsdb-bench-") as folder:
            return _measure(bench_url, Path(folder), options.rows, options.small_rows)
    finally:
        dbs.drop_all()


def _seed() -> None:
    from django.contrib.auth.models import Group, User

    from claimsdb.services import bundle_load

    reviewer = User.objects.create_user("bench-reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewer"))
    analyst = User.objects.create_user("bench-analyst")
    analyst.groups.add(Group.objects.get(name="analyst"))
    bundle = json.loads((ROOT / "fixtures" / "seed.json").read_text(encoding="utf-8"))
    bundle_load(user=reviewer, bundle=bundle, summary="Seed for the benchmark")


def _measure(url: str, folder: Path, rows: int, small_rows: int) -> int:
    from claimsdb.importers.synthetic import write_results_file

    big, small = folder / "big.json", folder / "small.json"
    print(f"writing {rows:,} and {small_rows:,} trial rows …", flush=True)
    write_results_file(big, rows=rows, run_id="bench-big")
    write_results_file(small, rows=small_rows, run_id="bench-small")
    size = big.stat().st_size

    print("plain COPY …", flush=True)
    copy = run_child(__file__, url, "copy", str(big))
    print("import (timed) …", flush=True)
    timed = run_child(__file__, url, "import", str(big))
    print("imports (traced) …", flush=True)
    traced_big = run_child(__file__, url, "import", str(big), True)
    traced_small = run_child(__file__, url, "import", str(small), True)
    timed_small = run_child(__file__, url, "import", str(small))

    import_rate = timed["rows"] / timed["seconds"]
    copy_rate = copy["rows"] / copy["seconds"]
    tm_ratio = traced_big["tracemalloc_peak"] / traced_small["tracemalloc_peak"]
    rss_ratio = timed["maxrss"] / timed_small["maxrss"]
    mib = 1024 * 1024
    print()
    print(f"file: {rows:,} trial rows, {size / mib:,.1f} MiB")
    print(
        f"import:     {timed['seconds']:7.2f} s  {import_rate:12,.0f} rows/s  "
        f"(both passes, validation, COPY, revision)"
    )
    print(f"plain COPY: {copy['seconds']:7.2f} s  {copy_rate:12,.0f} rows/s")
    print(f"import / COPY rate: {import_rate / copy_rate:.2f}  (target ≥ 0.33)")
    print(
        f"peak memory, tracemalloc: {traced_big['tracemalloc_peak'] / mib:.2f} MiB "
        f"({rows:,}) vs {traced_small['tracemalloc_peak'] / mib:.2f} MiB ({small_rows:,}): "
        f"ratio {tm_ratio:.2f}  (target ≤ 1.5)"
    )
    print(
        f"peak memory, ru_maxrss:   {timed['maxrss'] / mib:.1f} MiB ({rows:,}) vs "
        f"{timed_small['maxrss'] / mib:.1f} MiB ({small_rows:,}): ratio {rss_ratio:.2f}"
    )
    ok = import_rate / copy_rate >= 1 / 3 and tm_ratio <= 1.5 and rss_ratio <= 1.5
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
