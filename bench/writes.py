"""The write and read rows of the scale benchmark alone, for one or more checkouts, interleaved.

Runs ``bench/scale.py``'s own measurements (its ``--child`` processes) and nothing else.
``--rows writes`` (the default): ``load_records`` of a synthetic knowledge base against
the COPY of the rows it wrote, and one case update (median of ``--repeats``) against
writing its rows and one revision raw. Each checkout named (a directory holding claimsdb,
e.g. an ``git archive`` of a commit) loads its own copy of the same bundle, in the order
given, so that code before and after a change is measured in one run on the same machine,
and the ratios of each can be compared even when the machine's load moves its times::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/claimsdb python bench/writes.py \\
        --cases 2000 /tmp/after /tmp/before /tmp/after /tmp/before

``--rows reads``: the knowledge base is loaded once (its ledger padded to ``--revisions``,
then analyzed), and each checkout in turn measures the case API, the case list and a
search against their bare SQL, requests and floors interleaved (``--repeats`` rounds;
p95 for the list and search, median for the API), with each read's queries::

    DATABASE_URL=… python bench/writes.py --rows reads --cases 10000 --revisions 100000 \\
        --repeats 40 /tmp/after /tmp/before /tmp/after /tmp/before

``--rows writes,reads`` does both. Every line of the table ends with the machine's load
average when it was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Databases, log, p95, postgres_url, setup_django  # noqa: E402

USER = "bench-reviewer"  # bench/scale.py's reviewer


def child(checkout: str, url: str, kind: str, *args: object) -> dict:
    """One of ``bench/scale.py``'s measurements, run with ``checkout``'s code."""
    result = subprocess.run(
        [sys.executable, f"{checkout}/bench/scale.py", "--child", kind, json.dumps(list(args))],
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise SystemExit(f"{kind} failed with {checkout}:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def load_average() -> str:
    return " ".join(f"{n:.1f}" for n in os.getloadavg())


def reads_row(checkout: str, measured: dict) -> dict:
    """One checkout's reads: each read's figure, its floor's, their ratio, its queries."""
    row: dict = {"checkout": checkout}
    for name, statistic, label in (
        ("api", statistics.median, "median"),
        ("list", p95, "p95"),
        ("search", p95, "p95"),
    ):
        value, floor = statistic(measured[name]), statistic(measured[f"{name}_floor"])
        row[f"{name} {label} ms"] = round(value * 1000, 1)
        row[f"{name} floor ms"] = round(floor * 1000, 1)
        row[f"{name} / floor"] = round(value / floor, 2)
        if statistic is p95:  # and the medians' ratio, which the machine's load moves less
            middle = statistics.median(measured[name]) / statistics.median(
                measured[f"{name}_floor"]
            )
            row[f"{name} median / floor"] = round(middle, 2)
        row[f"{name} queries"] = measured[f"{name}_queries"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", default=[str(ROOT)], help="default: this one")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", default="writes", help="writes, reads, or writes,reads")
    parser.add_argument(
        "--revisions", type=int, default=0, help="pad the reads' ledger to this many revisions"
    )
    parser.add_argument(
        "--profile", help="--rows reads: cProfile one of each read into this folder"
    )
    options = parser.parse_args()
    rows = set(options.rows.split(","))
    if options.profile:
        Path(options.profile).mkdir(parents=True, exist_ok=True)
    if not rows or rows - {"writes", "reads"}:
        parser.error("--rows: writes, reads, or writes,reads")
    url = postgres_url("bench/writes.py", "it measures PostgreSQL")
    base = urlsplit(url).path.lstrip("/") or "claimsdb"
    dbs = Databases(url, f"{base}_writes_{os.getpid()}")
    results: list[dict] = []
    read_results: list[dict] = []
    try:
        setup_django()
        from django.contrib.auth.models import Group, User
        from django.db import connection

        from claimsdb import synthetic_kb

        dbs.migrated("template")
        User.objects.create_user(USER).groups.add(Group.objects.get(name="reviewer"))
        template = connection.settings_dict["NAME"]
        connection.close()
        with tempfile.TemporaryDirectory(prefix="claimsdb-writes-") as folder:
            bundle = Path(folder) / "kb.json"
            records = synthetic_kb.write_bundle(bundle, cases=options.cases, seed=options.seed)[
                "records"
            ]
            key = synthetic_kb.case_key(min(1000, options.cases) // 2)
            if "reads" in rows:
                db = dbs.copy("reads", template)
                log(f"reads: load_records of {options.cases:,} cases ({records:,} records) …")
                child(
                    options.checkouts[0], db, "command", "load_records", [str(bundle)],
                    {"user": USER, "summary": "Benchmark load"}, "timed",
                )  # fmt: skip
                if options.revisions:
                    log(f"reads: padding the ledger to {options.revisions:,} revisions …")
                    child(options.checkouts[0], db, "pad", options.revisions)
                dbs.analyze(db)
                word = synthetic_kb.TOPIC_WORDS[7]  # bench/scale.py's search word
                for n, checkout in enumerate(options.checkouts):
                    log(f"{checkout}: reads, {options.repeats} interleaved rounds …")
                    profile = (
                        str(Path(options.profile) / f"reads-{n}.txt") if options.profile else ""
                    )
                    measured = child(checkout, db, "reads", key, word, options.repeats, profile)
                    read_results.append({**reads_row(checkout, measured), "load": load_average()})
                    log(json.dumps(read_results[-1]))
                dbs.drop("reads")
            for n, checkout in enumerate(options.checkouts if "writes" in rows else []):
                db = dbs.copy(f"run{n}", template)
                log(f"{checkout}: load_records of {options.cases:,} cases ({records:,} records) …")
                load = child(
                    checkout, db, "command", "load_records", [str(bundle)],
                    {"user": USER, "summary": "Benchmark load"}, "timed",
                )  # fmt: skip
                floor = child(checkout, db, "load_floor")
                dbs.analyze(db)
                update = child(checkout, db, "update", key, options.repeats)
                raw = child(checkout, db, "update_floor", key, options.repeats)
                rate, copy_rate = records / load["seconds"], records / floor["seconds"]
                median, raw_median = (statistics.median(m["times"]) for m in (update, raw))
                results.append(
                    {
                        "checkout": checkout,
                        "load rec/s": round(rate, 1),
                        "COPY rec/s": round(copy_rate, 1),
                        "load / COPY": round(rate / copy_rate, 3),
                        "update ms": round(median * 1000, 1),
                        "raw ms": round(raw_median * 1000, 1),
                        "update / raw": round(median / raw_median, 2),
                        "update queries": update["queries"],
                        "load": load_average(),
                    }
                )
                log(json.dumps(results[-1]))
                dbs.drop(f"run{n}")
    finally:
        dbs.drop_all()
    for table in (results, read_results):
        columns = list(table[0]) if table else []
        if columns:
            print("  ".join(columns))
        for row in table:
            print("  ".join(str(row[c]) for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
