"""Benchmark of the write path: bulk load rate at two sizes and one case update, each
against a raw floor measured in the same run.

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/write_path.py \
        --sizes 10000,100000

For each size it makes a throwaway database (``<name>_wp_<size>_<pid>``, migrated), writes a
synthetic bundle (bench/synthetic.py: 8 claims and 16 evidence links a case) and measures:

* ``load_records`` of the bundle: records per second (parsing, validation, rules, writes
  and revisions included);
* the raw floor: the same rows, already in memory as tuples, inserted with ``COPY`` (or
  ``executemany`` with ``--floor executemany``) in batches of 500 cases, plus one revision
  row per record (snapshot, SHA-256 and chain hash computed), in one transaction, into a
  second empty database;
* one case update through ``case_update`` (a changed title and claim statement; median of
  five), its query count, and the raw floor of writing that case's rows and one revision
  the same way;
* with ``--profile``, where the update's time goes (cProfile, top functions).

Databases are dropped at the end. The ratios are the figures to read: the load rate at the
large size over the small one (target: within 1.5x), the load rate over the floor's
(target: at least 1/3) and the update over its floor (target: at most 5x).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import datetime as dt
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import synthetic  # noqa: E402

BATCH = 500
FLOOR_METHOD = "copy"  # or "executemany" (--floor)


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/" + name))


def admin(base: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as connection:
        connection.execute(statement)


def setup(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimsdb.settings")
    os.environ.setdefault("SECRET_KEY", "claimsdb-benchmark-only-" + "x" * 40)
    import django

    django.setup()


def switch(url: str) -> None:
    """Point Django's default connection at another database."""
    from django.db import connections

    from claimsdb.settings import database_from_url

    connections["default"].close()
    connections["default"].settings_dict.update(database_from_url(url))


def migrate_and_user():
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    user, _ = User.objects.get_or_create(username="bench-reviewer")
    user.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    return user


def measure_load(path: Path, cases: int) -> dict:
    from django.core.management import call_command

    records = cases + synthetic.source_count(cases) + 1
    start = time.perf_counter()
    call_command("load_records", str(path), user="bench-reviewer", stdout=io.StringIO())
    seconds = time.perf_counter() - start
    return {"records": records, "seconds": seconds, "rate": records / seconds}


def measure_update(cases: int, profile: bool) -> dict:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from claimsdb.records import record_document
    from claimsdb.services import case_update

    user = User.objects.get(username="bench-reviewer")
    key = synthetic.case_key(cases // 2 + 1)
    times, queries = [], 0
    profiler = cProfile.Profile() if profile else None
    for attempt in range(5):
        document = copy.deepcopy(record_document("case", key))
        document["title"] = f"Benchmark case, edit {attempt}"
        document["claims"][1]["statement"] += f" Edit {attempt}."
        start = time.perf_counter()
        with CaptureQueriesContext(connection) as captured:
            if profiler and attempt == 4:
                profiler.enable()
            case_update(user=user, key=key, document=document, summary="Benchmark edit")
            if profiler and attempt == 4:
                profiler.disable()
        times.append(time.perf_counter() - start)
        queries = len(captured)
    result = {"seconds": statistics.median(times), "queries": queries}
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
        result["profile"] = out.getvalue()
    return result


# --- the raw floor ---------------------------------------------------------------------------


class Floor:
    """Rows of the synthetic bundle as tuples, inserted with executemany."""

    def __init__(self, cases: int):
        from django.contrib.auth.models import User

        from claimsdb import models

        self.cases = cases
        self.m = models
        self.author = User.objects.get(username="bench-reviewer").pk
        self.number = 0
        self.previous = "0" * 64
        self.source_pks = {}
        self.method_pk = None

    def table(self, model) -> str:
        return model._meta.db_table

    def insert(self, cursor, model, columns: list[str], rows: list[tuple]) -> None:
        if not rows:
            return
        names = ", ".join(f'"{c}"' for c in columns)
        if FLOOR_METHOD == "copy":
            with cursor.cursor.copy(f'COPY "{self.table(model)}" ({names}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join(["%s"] * len(columns))
        cursor.executemany(f'INSERT INTO "{self.table(model)}" ({names}) VALUES ({marks})', rows)

    def revision_rows(self, records: list[tuple[str, str, dict]]) -> list[tuple]:
        from django.utils import timezone

        from claimsdb.records import dumps_compact, sha256_text
        from claimsdb.services.ledger import chain_hash

        rows = []
        for kind, key, document in records:
            snapshot = dumps_compact(document)
            digest = sha256_text(snapshot)
            self.number += 1
            now = timezone.now().astimezone(dt.UTC)
            chained = chain_hash(
                previous_hash=self.previous,
                number=self.number,
                record_kind=kind,
                record_key=key,
                action="create",
                material=True,
                summary="Floor",
                author_id=self.author,
                created_at=now,
                snapshot_sha256=digest,
            )
            rows.append(
                (
                    self.number,
                    kind,
                    key,
                    "create",
                    True,
                    "Floor",
                    self.author,
                    now,
                    snapshot,
                    digest,
                    self.previous,
                    chained,
                )
            )
            self.previous = chained
        return rows

    REVISION_COLUMNS = [
        "number",
        "record_kind",
        "record_key",
        "action",
        "material",
        "summary",
        "author_id",
        "created_at",
        "snapshot",
        "snapshot_sha256",
        "previous_hash",
        "chain_hash",
    ]

    def write_reference_rows(self, cursor) -> None:
        import json

        method = synthetic.method_document()
        self.insert(
            cursor,
            self.m.AssessmentMethod,
            ["id", "key", "title", "dimensions", "impact", "status"],
            [
                (
                    1,
                    method["key"],
                    method["title"],
                    json.dumps(method["dimensions"]),
                    json.dumps(method["impact"]),
                    "active",
                )
            ],
        )
        self.method_pk = 1
        sources = [synthetic.source_document(i) for i in range(synthetic.source_count(self.cases))]
        self.insert(
            cursor,
            self.m.Source,
            [
                "id",
                "key",
                "title",
                "kind",
                "publisher",
                "url",
                "published_on",
                "accessed_on",
                "reliability",
                "notes",
                "status",
            ],
            [
                (
                    i + 1,
                    s["key"],
                    s["title"],
                    s["kind"],
                    s["publisher"],
                    s["url"],
                    s["published_on"],
                    s["accessed_on"],
                    s["reliability"],
                    s["notes"],
                    s["status"],
                )
                for i, s in enumerate(sources)
            ],
        )
        self.source_pks = {s["key"]: i + 1 for i, s in enumerate(sources)}
        self.insert(
            cursor,
            self.m.Revision,
            self.REVISION_COLUMNS,
            self.revision_rows(
                [("method", method["key"], method)] + [("source", s["key"], s) for s in sources]
            ),
        )

    def case_rows(self, documents: list[dict], first_pk: int, claim_pk: int) -> dict:
        import json

        rows: dict[str, list[tuple]] = {
            name: []
            for name in (
                "case",
                "tag",
                "claim",
                "link",
                "reservation",
                "assessment",
                "control",
                "unknown",
                "figure",
                "attribution",
                "relation",
            )
        }
        pks = {d["key"]: first_pk + i for i, d in enumerate(documents)}
        for d in documents:
            pk = pks[d["key"]]
            rows["case"].append(
                (
                    pk,
                    d["key"],
                    d["title"],
                    d["status"],
                    d["summary"],
                    d["scope_note"],
                    d["account"],
                    d["basis"],
                    d["limits"],
                )
            )
            rows["tag"] += [(pk, name) for name in d["tags"]]
            for position, c in enumerate(d["claims"]):
                claim_pk += 1
                rows["claim"].append(
                    (
                        claim_pk,
                        pk,
                        c["id"],
                        position,
                        c["statement"],
                        c["status"],
                        c["status_note"],
                        c["basis"],
                        c["origin"],
                    )
                )
                rows["reservation"].append((c["id"], d["key"], dt.datetime.now(dt.UTC)))
                rows["link"] += [
                    (claim_pk, i, self.source_pks[e["source"]], e["relation"], e["locator"])
                    for i, e in enumerate(c["evidence"])
                ]
            rows["assessment"] += [
                (
                    pk,
                    i,
                    self.method_pk,
                    a["assessed_on"],
                    a["assessor"],
                    json.dumps(a["values"]),
                    a["impact"],
                    a["impact_ungraded_reason"],
                    a["narrative"],
                    json.dumps(a["evidence_basis"]["claims"]),
                    json.dumps(a["evidence_basis"]["sources"]),
                )
                for i, a in enumerate(d["assessments"])
            ]
            rows["control"] += [(pk, i, c["kind"], c["text"]) for i, c in enumerate(d["controls"])]
            rows["unknown"] += [(pk, i, u["kind"], u["text"]) for i, u in enumerate(d["unknowns"])]
            rows["figure"] += [
                (
                    pk,
                    f["id"],
                    i,
                    f["value"],
                    f["unit"],
                    f["measure"],
                    f["scope"],
                    f["description"],
                    json.dumps(f["claims"]),
                )
                for i, f in enumerate(d["figures"])
            ]
        return {"rows": rows, "pks": pks, "claim_pk": claim_pk}

    def link_rows(self, documents: list[dict], pks: dict[str, int], rows: dict) -> None:
        for d in documents:
            pk = pks[d["key"]]
            rows["attribution"] += [
                (pk, i, a["figure"], a["role"], a["note"]) for i, a in enumerate(d["attributions"])
            ]
            rows["relation"] += [
                (pk, pks[r["case"]], r["kind"], r["note"])
                for r in d["relations"]
                if d["key"] < r["case"]
            ]

    COLUMNS = {
        "case": (
            "Case",
            ["id", "key", "title", "status", "summary", "scope_note", "account", "basis", "limits"],
        ),
        "tag": ("CaseTag", ["case_id", "name"]),
        "claim": (
            "Claim",
            [
                "id",
                "case_id",
                "claim_id",
                "position",
                "statement",
                "status",
                "status_note",
                "basis",
                "origin",
            ],
        ),
        "reservation": ("ClaimIdReservation", ["claim_id", "case_key", "reserved_at"]),
        "link": ("EvidenceLink", ["claim_id", "position", "source_id", "relation", "locator"]),
        "assessment": (
            "Assessment",
            [
                "case_id",
                "position",
                "method_id",
                "assessed_on",
                "assessor",
                "values",
                "impact",
                "impact_ungraded_reason",
                "narrative",
                "basis_claims",
                "basis_sources",
            ],
        ),
        "control": ("Control", ["case_id", "position", "kind", "text"]),
        "unknown": ("Unknown", ["case_id", "position", "kind", "text"]),
        "figure": (
            "Figure",
            [
                "case_id",
                "figure_id",
                "position",
                "value",
                "unit",
                "measure",
                "scope",
                "description",
                "claims",
            ],
        ),
        "attribution": ("Attribution", ["case_id", "position", "figure_id", "role", "note"]),
        "relation": ("Relation", ["case_id", "other_id", "kind", "note"]),
    }

    def write_cases(self, cursor, documents: list[dict], first_pk: int, claim_pk: int) -> int:
        built = self.case_rows(documents, first_pk, claim_pk)
        self.link_rows(documents, built["pks"], built["rows"])
        for name, (model, columns) in self.COLUMNS.items():
            self.insert(cursor, getattr(self.m, model), columns, built["rows"][name])
        self.insert(
            cursor,
            self.m.Revision,
            self.REVISION_COLUMNS,
            self.revision_rows([("case", d["key"], d) for d in documents]),
        )
        return built["claim_pk"]


def measure_floor(cases: int) -> dict:
    """The whole bundle's rows, in batches of 500 cases, one transaction."""
    from django.db import connection, transaction

    floor = Floor(cases)
    records = cases + synthetic.source_count(cases) + 1
    batches = (
        [
            [synthetic.case_document(i, cases) for i in range(start, min(start + BATCH, cases))]
            for start in range(0, cases, BATCH)
        ]
        if cases <= 20_000
        else None
    )
    seconds = 0.0
    with transaction.atomic(), connection.cursor() as cursor:
        start = time.perf_counter()
        floor.write_reference_rows(cursor)
        seconds += time.perf_counter() - start
        claim_pk = 0
        for index, first in enumerate(range(0, cases, BATCH)):
            documents = (
                batches[index]
                if batches
                else [
                    synthetic.case_document(i, cases)
                    for i in range(first, min(first + BATCH, cases))
                ]
            )
            start = time.perf_counter()
            claim_pk = floor.write_cases(cursor, documents, first + 1, claim_pk)
            seconds += time.perf_counter() - start
        transaction.set_rollback(True)  # the rows are not needed afterwards
    return {"records": records, "seconds": seconds, "rate": records / seconds}


def measure_update_floor(cases: int) -> dict:
    """One case's rows and one revision, written with executemany, rolled back."""
    from django.db import connection, transaction

    floor = Floor(cases)
    floor.source_pks = dict(
        __import__("claimsdb.models", fromlist=["Source"]).Source.objects.values_list("key", "pk")
    )
    floor.method_pk = (
        __import__("claimsdb.models", fromlist=["AssessmentMethod"])
        .AssessmentMethod.objects.get()
        .pk
    )
    times = []
    for _ in range(5):
        document = synthetic.case_document(0, cases, prefix="FLOOR")
        document["relations"], document["attributions"] = [], []
        with connection.cursor() as cursor:
            cursor.execute('SELECT MAX(id) FROM "claimsdb_case"')
            case_pk = cursor.fetchone()[0] + 1000
            cursor.execute('SELECT MAX(id) FROM "claimsdb_claim"')
            claim_pk = cursor.fetchone()[0] + 1000
            cursor.execute('SELECT MAX(number) FROM "claimsdb_revision"')
            floor.number = cursor.fetchone()[0] + 1000
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            floor.write_cases(cursor, [document], case_pk, claim_pk)
            times.append(time.perf_counter() - start)
            transaction.set_rollback(True)
    return {"seconds": statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000", help="two case counts, small,large")
    parser.add_argument("--profile", action="store_true", help="profile one case update")
    parser.add_argument(
        "--floor", choices=["copy", "executemany"], default="copy", help="how the floor inserts"
    )
    args = parser.parse_args()
    global FLOOR_METHOD
    FLOOR_METHOD = args.floor
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL server (postgres://user@host/db)")
    sizes = [int(s) for s in args.sizes.split(",")]
    base_name = urlsplit(base).path.lstrip("/") or "claimsdb"
    setup(database_url(base, "postgres"))
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for cases in sizes:
            names = [
                f"{base_name}_wp_{cases}_{os.getpid()}",
                f"{base_name}_wpf_{cases}_{os.getpid()}",
            ]
            for name in names:
                admin(base, f'CREATE DATABASE "{name}"')
            try:
                path = synthetic.write_bundle(Path(scratch) / f"bundle-{cases}.json", cases)
                switch(database_url(base, names[1]))
                migrate_and_user()
                floor = measure_floor(cases)
                switch(database_url(base, names[0]))
                migrate_and_user()
                load = measure_load(path, cases)
                update = measure_update(cases, args.profile and cases == sizes[-1])
                update_floor = measure_update_floor(cases)
                results[cases] = (load, floor, update, update_floor)
                print(
                    f"{cases:>7} cases: load {load['rate']:8.1f} records/s "
                    f"({load['seconds']:.1f} s), floor {floor['rate']:8.1f} records/s, "
                    f"ratio {load['rate'] / floor['rate']:.2f}; update "
                    f"{update['seconds'] * 1000:.1f} ms ({update['queries']} queries), floor "
                    f"{update_floor['seconds'] * 1000:.1f} ms, ratio "
                    f"{update['seconds'] / update_floor['seconds']:.1f}x",
                    flush=True,
                )
            finally:
                from django.db import connections

                connections["default"].close()
                for name in names:
                    admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    small, large = sizes[0], sizes[-1]
    print(
        f"load rate {large}/{small}: {results[large][0]['rate'] / results[small][0]['rate']:.2f} "
        f"(target >= 0.67); update {large}/{small}: "
        f"{results[large][2]['seconds'] / results[small][2]['seconds']:.2f} (target <= 1.5)"
    )
    if args.profile:
        print(results[large][2]["profile"])


if __name__ == "__main__":
    main()
