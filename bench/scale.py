"""Scale benchmark of claimsdb on PostgreSQL (``make bench``): one table of ratios.

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/scale.py
    .venv/bin/python bench/scale.py --quick           # a small run, about a minute
    .venv/bin/python bench/scale.py --cases 2000 --small-cases 200 --update-cases 200 \\
        --revisions 20000

Every figure is a ratio of two measurements made in the same run, on throwaway databases
(``<name>_scale_<pid>_…``, copied from one migrated template, all dropped at the end):

* synthetic knowledge bases (``claimsdb.synthetic_kb``: with a component for every ten
  cases, 10,000 at 100,000 cases, and three affected entries a case) of ``--cases`` (100,000),
  ``--small-cases`` (10,000) and ``--update-cases`` (1,000) cases are loaded with
  ``manage.py load_records``; the load rate (records/s) at the two large sizes, and against
  a raw floor: the very rows the load wrote (revisions included, one per record), dumped
  with COPY and copied back into the emptied tables, foreign keys checked, rolled back;
* the ledger of the largest knowledge base is padded to ``--revisions`` (1,000,000): the
  added revisions repeat records' latest snapshots, chained with the ledger's own
  ``chain_hash`` and copied in bulk, so the chain verifies and every record still equals
  its latest snapshot (the smaller knowledge bases get as many revisions per case);
* one case update through ``case_update`` at ``--update-cases`` vs ``--cases`` cases (its
  time and, reported only, its queries), and against a raw floor: deleting and
  re-inserting the case's rows (and the rows that point at them) with ``executemany``,
  plus one chained revision row, in one transaction;
* ``GET /api/v1/cases/<key>/`` through Django's test client (signed in) against the same
  rows fetched with one psycopg query per table, the keys they name, plus ``json.dumps``;
  the case list page and a search against the bare SQL behind what they show (a page of
  ``PAGE_SIZE`` cases by key with their claim counts, revisions, tags and current
  assessments, and the count; on GIN-indexed ``tsvector`` tables of case, claim and
  source texts, the hits of each kind counted and a page of them highlighted), p95; the
  review queue's page (``/review/``) at its start and halfway down against the bare SQL of
  its page (the waiting records along the queue's index, their count, authors, revision
  counts and the two snapshots of each diff), p95;
* the case list page signed out (the released record) against the API's list of the same
  cases, through gunicorn with ``gunicorn.conf.py`` (as ``make serve`` runs it) on the
  largest knowledge base once it is released, at ``--users`` (10) concurrent users, p95
  (``bench/concurrent_lists.py``);
* ``verify_history`` against streaming the same revision rows and hashing the same bytes
  with ``hashlib.sha256``, then streaming the live records' rows and latest snapshots;
  ``publish_release``, ``export_records`` and ``check_rules``
  rates; the peak memory of every command at the two large sizes, each in its own child
  process: ``tracemalloc`` peak (in a separate traced run) and ``ru_maxrss``.

* write throughput through gunicorn (4 workers × 2 threads, as ``make serve`` runs it) at
  ``--small-cases``: 1, 2, 4 and 8 concurrent clients PUTting their own case with
  ``If-Match``, ``--write-rounds`` interleaved rounds of ``--write-seconds`` each, against
  a hand-written floor (lock the head row, update a case row, insert a revision with a
  real snapshot, its SHA-256 and chain hash), and the share of a write's time it holds
  the ledger lock, as the server logs it (bench/throughput.py); a table of its own.

``--profile`` adds a cProfile of one case update at the largest size below the table.
The exit status is 0 when the run completed (``--strict``: only when every target is met).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import concurrent_lists  # noqa: E402
from bench.harness import (  # noqa: E402  (the root is on the path from here on)
    Databases,
    log,
    maxrss_bytes,
    p95,
    postgres_url,
    serve_child,
    setup_django,
)
from bench.harness import run_child as run_script  # noqa: E402

USER = "bench-reviewer"
# a second reviewer, who approves what the first loaded before a release (four eyes)
APPROVER = "bench-approver"
PAGE_SIZE = 50  # rows of the list floor's page
SEARCH_PAGE = 20  # hits on a page of search results (claimsdb.search.PER_PAGE)
# the search floor's own tables: a GIN-indexed tsvector of each kind's texts
SEARCH_TABLES = {
    "case": "bench_case_text",
    "claim": "bench_claim_text",
    "source": "bench_source_text",
}
QUICK = {
    "cases": 24,
    "small_cases": 12,
    "update_cases": 12,
    "revisions": 400,
    "repeats": 3,
    "write_rounds": 1,
    "write_seconds": 1.0,
}
WRITERS = [1, 2, 4, 8]  # concurrent writers of the throughput table


# --- child processes: one measurement each ------------------------------------------------

CHILDREN: dict[str, Callable[..., dict]] = {}


def child(function: Callable[..., dict]) -> Callable[..., dict]:
    CHILDREN[function.__name__.removeprefix("child_")] = function
    return function


@child
def child_command(name: str, args: list[str], options: dict[str, Any], runs: str) -> dict:
    """One management command, its output thrown away: ``runs`` is ``timed``, ``traced``,
    or ``both`` (a read-only command: timed, ``ru_maxrss`` taken, then traced)."""
    setup_django()
    from django.core.management import call_command

    result: dict[str, Any] = {}
    with open(os.devnull, "w") as sink:
        if runs in {"timed", "both"}:
            start = time.perf_counter()
            call_command(name, *args, stdout=sink, stderr=sink, **options)
            result["seconds"] = time.perf_counter() - start
            result["maxrss"] = maxrss_bytes()
        if runs in {"traced", "both"}:
            tracemalloc.start()
            call_command(name, *args, stdout=sink, stderr=sink, **options)
            result["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    return result


_COLUMNS: dict[str, list[str]] = {}


def _columns(cursor, table: str) -> list[str]:
    """The columns a row can be written to (generated ones are left out); looked up once."""
    if table in _COLUMNS:
        return _COLUMNS[table]
    cursor.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = %s AND is_generated = 'NEVER' "
        "ORDER BY ordinal_position",
        [table],
    )
    _COLUMNS[table] = [row[0] for row in cursor.fetchall()]
    return _COLUMNS[table]


def _app_models() -> list:
    from django.apps import apps

    return list(apps.get_app_config("claimsdb").get_models(include_auto_created=True))


def _ident(*names: str):
    from psycopg import sql

    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


class _Rollback(Exception):
    pass


@child
def child_load_floor() -> dict:
    """COPY the rows the load wrote back into the emptied tables; check keys; roll back."""
    setup_django()
    from django.db import connection, transaction
    from psycopg import sql

    tables = sorted({m._meta.db_table for m in _app_models()})
    dumps: dict[str, tuple[list[str], bytes, int]] = {}
    with connection.cursor() as cursor:
        for table in tables:
            columns = _columns(cursor, table)
            cursor.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
            rows = cursor.fetchone()[0]
            if not rows:
                continue
            buffer = io.BytesIO()
            statement = sql.SQL("COPY {} ({}) TO STDOUT").format(
                sql.Identifier(table), _ident(*columns)
            )
            with cursor.cursor.copy(statement) as copy:
                for data in copy:
                    buffer.write(data)
            dumps[table] = (columns, buffer.getvalue(), rows)
    seconds = 0.0
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql.SQL("TRUNCATE {}").format(_ident(*tables)))
            start = time.perf_counter()
            for table, (columns, data, _) in dumps.items():
                statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(table), _ident(*columns)
                )
                with cursor.cursor.copy(statement) as copy:
                    view = memoryview(data)
                    for offset in range(0, len(view), 1 << 20):
                        copy.write(view[offset : offset + (1 << 20)])
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the deferred foreign keys
            seconds = time.perf_counter() - start
            raise _Rollback
    except _Rollback:
        pass
    return {"seconds": seconds, "rows": {t: n for t, (_, _, n) in dumps.items()}}


@child
def child_pad(target: int) -> dict:
    """Add revisions up to ``target`` that repeat records' latest snapshots, validly chained."""
    setup_django()
    from django.db import connection, transaction
    from django.utils import timezone
    from psycopg import sql

    from claimsdb.models import LedgerHead, Revision
    from claimsdb.services.ledger import chain_hash, lock_head

    with transaction.atomic():
        head = lock_head()
        missing = target - head.number
        if missing <= 0:
            return {"added": 0}
        step = max(1, head.number // 2000)
        sampled = set(
            Revision.objects.filter(number__in=range(1, head.number + 1, step)).values_list(
                "record_kind", "record_key"
            )
        )
        latest: dict[tuple[str, str], int] = {}
        for number, kind, key in Revision.objects.filter(
            record_key__in={key for _, key in sampled}
        ).values_list("number", "record_kind", "record_key"):
            if (kind, key) in sampled:
                latest[(kind, key)] = max(number, latest.get((kind, key), 0))
        table = Revision._meta.db_table
        pk = Revision._meta.pk.column
        with connection.cursor() as cursor:
            columns = [c for c in _columns(cursor, table) if c != pk]
            cursor.execute(
                sql.SQL("SELECT {} FROM {} WHERE number = ANY(%s) ORDER BY number").format(
                    _ident(*columns), sql.Identifier(table)
                ),
                [sorted(latest.values())],
            )
            templates = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
            field = {f.name: f.column for f in Revision._meta.concrete_fields}
            number, previous = head.number, head.chain_hash
            statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), _ident(*columns)
            )
            with cursor.cursor.copy(statement) as copy:
                for index in range(missing):
                    row = dict(templates[index % len(templates)])
                    number += 1
                    created_at = timezone.now()
                    row.update(
                        {
                            field["number"]: number,
                            field["action"]: "update",
                            field["material"]: False,
                            field["summary"]: "Benchmark history (snapshot unchanged)",
                            field["created_at"]: created_at,
                            field["previous_hash"]: previous,
                        }
                    )
                    previous = row[field["chain_hash"]] = chain_hash(
                        previous_hash=previous,
                        number=number,
                        record_kind=row[field["record_kind"]],
                        record_key=row[field["record_key"]],
                        action="update",
                        material=False,
                        summary=row[field["summary"]],
                        author_id=row[field["author"]],
                        created_at=created_at,
                        snapshot_sha256=row[field["snapshot_sha256"]],
                    )
                    copy.write_row([row[c] for c in columns])
        LedgerHead.objects.filter(pk=head.pk).update(number=number, chain_hash=previous)
    return {"added": missing}


def _case_rows(cursor, case_pk: int) -> dict[str, tuple[list[str], list[tuple]]]:
    """The case's row, the rows that point at it, and the rows that point at those.

    Found through the models' foreign keys, so that tables added later are included.
    """
    from psycopg import sql

    from claimsdb.models import Case

    def select(model, condition, params) -> tuple[list[str], list[tuple]]:
        columns = _columns(cursor, model._meta.db_table)
        cursor.execute(
            sql.SQL("SELECT {} FROM {} WHERE {}").format(
                _ident(*columns), sql.Identifier(model._meta.db_table), condition
            ),
            params,
        )
        return columns, cursor.fetchall()

    pk_is = sql.SQL("{} = %s").format(sql.Identifier(Case._meta.pk.column))
    rows = {Case._meta.db_table: select(Case, pk_is, [case_pk])}
    seen: dict[Any, set] = {Case: {case_pk}}
    frontier = {Case: rows[Case._meta.db_table]}
    for _ in range(2):
        following = {}
        for model in _app_models():
            links = [
                f
                for f in model._meta.concrete_fields
                if f.many_to_one and f.related_model in frontier
            ]
            if not links:
                continue
            params = []
            for f in links:
                columns, found = frontier[f.related_model]
                at = columns.index(f.target_field.column)  # a to_field, or the key
                params.append(sorted({row[at] for row in found}))
            condition = sql.SQL(" OR ").join(
                sql.SQL("{} = ANY(%s)").format(sql.Identifier(f.column)) for f in links
            )
            columns, found = select(model, condition, params)
            at = columns.index(model._meta.pk.column)
            known = seen.setdefault(model, set())
            new = [row for row in found if row[at] not in known]
            if not new:
                continue
            known.update(row[at] for row in new)
            following[model] = (columns, new)
            table = model._meta.db_table
            rows[table] = (columns, rows.get(table, (columns, []))[1] + new)
        frontier = following
    return rows


def _named_keys(cursor, rows: dict[str, tuple[list[str], list[tuple]]]) -> dict[str, dict]:
    """``{table: {id: key}}`` of the sources, methods and cases that ``rows`` point at
    through their foreign keys (a case document names them by key): one query a table."""
    from psycopg import sql

    from claimsdb.models import AssessmentMethod, Case, Source

    wanted: dict[Any, set] = {Source: set(), AssessmentMethod: set(), Case: set()}
    for model in _app_models():
        if model._meta.db_table not in rows:
            continue
        columns, table_rows = rows[model._meta.db_table]
        for field in model._meta.concrete_fields:
            if field.many_to_one and field.related_model in wanted:
                at = columns.index(field.column)
                wanted[field.related_model].update(row[at] for row in table_rows)
    keys = {}
    for model, ids in wanted.items():
        cursor.execute(
            sql.SQL("SELECT id, key FROM {} WHERE id = ANY(%s)").format(
                sql.Identifier(model._meta.db_table)
            ),
            [sorted(ids)],
        )
        keys[model._meta.db_table] = dict(cursor.fetchall())
    return keys


def _case_pk(key: str) -> int:
    from claimsdb.models import Case

    return Case.objects.values_list("pk", flat=True).get(key=key)


def _edited(document: dict, n: int) -> dict:
    """The case with an edited summary and claim note: a small editorial update."""
    import copy

    document = copy.deepcopy(document)
    document["summary"] = document["summary"].split(" [edit")[0] + f" [edit {n}]"
    document["claims"][0]["status_note"] = f"Re-read for edit {n}."
    return document


@child
def child_update(key: str, repeats: int, profile: str = "") -> dict:
    """``repeats`` updates of one case through ``case_update``: seconds of each, then the
    queries of one more (counted apart: recording queries slows them)."""
    setup_django()
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from claimsdb.records import record_document
    from claimsdb.services import case_update

    user = User.objects.get(username=USER)
    times = []
    for n in range(repeats + 1):
        document = _edited(record_document("case", key), n)
        start = time.perf_counter()
        case_update(user=user, key=key, document=document, summary=f"Benchmark edit {n}")
        if n:  # the first one warms the caches up
            times.append(time.perf_counter() - start)
    document = _edited(record_document("case", key), repeats + 1)
    with CaptureQueriesContext(connection) as captured:
        case_update(user=user, key=key, document=document, summary="Benchmark edit (counted)")
    if profile:
        document = _edited(record_document("case", key), repeats + 2)
        profiler = cProfile.Profile()
        profiler.enable()
        case_update(user=user, key=key, document=document, summary="Benchmark edit (profiled)")
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
        Path(profile).write_text(text.getvalue(), encoding="utf-8")
    return {"times": times, "queries": len(captured)}


@child
def child_update_floor(key: str, repeats: int) -> dict:
    """The raw floor of one case update: its rows deleted and re-inserted, one revision."""
    setup_django()
    from django.db import connection, transaction
    from django.utils import timezone
    from psycopg import sql

    from claimsdb.models import LedgerHead, Revision
    from claimsdb.services.ledger import chain_hash

    case_pk = _case_pk(key)
    rev_table, rev_pk = Revision._meta.db_table, Revision._meta.pk.column
    field = {f.name: f.column for f in Revision._meta.concrete_fields}
    head_table = LedgerHead._meta.db_table
    with connection.cursor() as cursor:
        rows = _case_rows(cursor, case_pk)
        rev_columns = [c for c in _columns(cursor, rev_table) if c != rev_pk]
        cursor.execute(
            sql.SQL(
                "SELECT {} FROM {} WHERE {} = 'case' AND {} = %s ORDER BY {} DESC LIMIT 1"
            ).format(
                _ident(*rev_columns),
                sql.Identifier(rev_table),
                sql.Identifier(field["record_kind"]),
                sql.Identifier(field["record_key"]),
                sql.Identifier(field["number"]),
            ),
            [key],
        )
        template = dict(zip(rev_columns, cursor.fetchone(), strict=True))
    statements = []
    for table, (columns, table_rows) in rows.items():
        pk = next(m._meta.pk.column for m in _app_models() if m._meta.db_table == table)
        at = columns.index(pk)
        statements.append(
            (
                sql.SQL("DELETE FROM {} WHERE {} = ANY(%s)").format(
                    sql.Identifier(table), sql.Identifier(pk)
                ),
                [row[at] for row in table_rows],
                sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                    sql.Identifier(table),
                    _ident(*columns),
                    sql.SQL(", ").join(sql.Placeholder() * len(columns)),
                ),
                table_rows,
            )
        )
    insert_revision = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
        sql.Identifier(rev_table),
        _ident(*rev_columns),
        sql.SQL(", ").join(sql.Placeholder() * len(rev_columns)),
    )
    times = []
    for n in range(repeats + 1):
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                sql.SQL("SELECT number, chain_hash FROM {} WHERE id = 1 FOR UPDATE").format(
                    sql.Identifier(head_table)
                )
            )
            number, previous = cursor.fetchone()
            for delete, pks, insert, table_rows in statements:
                cursor.execute(delete, [pks])
                cursor.executemany(insert, table_rows)
            created_at = timezone.now()
            row = dict(template)
            row.update(
                {
                    field["number"]: number + 1,
                    field["summary"]: "Raw floor update",
                    field["created_at"]: created_at,
                    field["previous_hash"]: previous,
                }
            )
            row[field["chain_hash"]] = chain_hash(
                previous_hash=previous,
                number=number + 1,
                record_kind="case",
                record_key=key,
                action=row[field["action"]],
                material=row[field["material"]],
                summary="Raw floor update",
                author_id=row[field["author"]],
                created_at=created_at,
                snapshot_sha256=row[field["snapshot_sha256"]],
            )
            cursor.execute(insert_revision, [row[c] for c in rev_columns])
            cursor.execute(
                sql.SQL("UPDATE {} SET number = %s, chain_hash = %s WHERE id = 1").format(
                    sql.Identifier(head_table)
                ),
                [number + 1, row[field["chain_hash"]]],
            )
        if n:
            times.append(time.perf_counter() - start)
    return {"times": times, "rows": sum(len(r) for _, r in rows.values())}


@child
def child_throughput(writers: list[int], rounds: int, seconds: float, port: int) -> dict:
    """Write throughput through gunicorn at each number of writers, against its floor
    (bench/throughput.py), on the knowledge base at DATABASE_URL."""
    setup_django()
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from bench import throughput
    from claimsdb import synthetic_kb
    from claimsdb.models import Case

    token = Token.objects.get_or_create(user=User.objects.get(username=USER))[0].key
    count = Case.objects.count()
    # synthetic cases are related within blocks of four: each writer gets a block of its
    # own, as far from the others as the knowledge base allows (so no two writes' scope
    # checks meet), and each floor client a case of yet another block
    blocks = count // 4
    if blocks >= 2 * max(writers):
        spread = blocks // (2 * max(writers))
        keys = [synthetic_kb.case_key(4 * 2 * i * spread) for i in range(max(writers))]
        floor = [synthetic_kb.case_key(4 * (2 * i + 1) * spread) for i in range(max(writers))]
    else:
        keys = [synthetic_kb.case_key(i) for i in range(max(writers))]
        floor = [synthetic_kb.case_key(max(writers) + i) for i in range(max(writers))]
    results = throughput.measure(
        os.environ["DATABASE_URL"],
        token,
        keys,
        floor,
        writers,
        rounds,
        seconds,
        port or throughput.free_port(),
    )
    return {"table": throughput.summary(results), "cases": count}


@child
def child_reads(key: str, word: str, repeats: int, profile: str = "") -> dict:
    """The case API, the case list page and a search, each against its raw floor, the
    requests and their floors interleaved (each round runs every read and every floor
    once, so that the machine's load falls on both alike); then the queries of one request
    of each, and with ``profile``, a cProfile of one of each written to that file."""
    setup_django()
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from psycopg import sql

    from claimsdb.models import (
        Assessment,
        AssessmentMethod,
        Case,
        CaseTag,
        Claim,
        Revision,
        Source,
    )

    client = Client()
    client.force_login(User.objects.get(username=USER))

    def get(url: str, **params: str) -> Callable[[], None]:
        def fetch() -> None:
            response = client.get(
                url, params, secure=True, HTTP_ACCEPT="application/json, text/html"
            )
            if response.status_code != 200:
                raise SystemExit(f"GET {url} {params}: HTTP {response.status_code}")
            bytes(response.content)

        return fetch

    reads: dict[str, Callable[[], None]] = {
        "api": get(f"/api/v1/cases/{key}/"),
        "list": get("/cases/"),
        "search": get("/", q=word),
    }

    case_table = Case._meta.db_table
    case_key = Case._meta.get_field("key").column
    rev = {f.name: f.column for f in Revision._meta.concrete_fields}

    def api_floor() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                sql.SQL("SELECT id FROM {} WHERE {} = %s").format(
                    sql.Identifier(case_table), sql.Identifier(case_key)
                ),
                [key],
            )
            rows = _case_rows(cursor, cursor.fetchone()[0])
            cursor.execute(
                sql.SQL(
                    "SELECT {} FROM {} WHERE {} = 'case' AND {} = %s ORDER BY {} DESC LIMIT 1"
                ).format(
                    sql.Identifier(rev["number"]),
                    sql.Identifier(Revision._meta.db_table),
                    sql.Identifier(rev["record_kind"]),
                    sql.Identifier(rev["record_key"]),
                    sql.Identifier(rev["number"]),
                ),
                [key],
            )
            etag = cursor.fetchone()[0]
            # the keys the document names the sources, methods and other cases by
            keys = _named_keys(cursor, rows)
            json.dumps({"etag": etag, "rows": rows, "keys": keys}, default=str, sort_keys=True)

    reads["api_floor"] = api_floor

    def list_floor() -> None:
        # what one page of the list shows, and the count above it: each case's columns,
        # claim count, latest revision, tags and current assessment (with its method's key)
        with connection.cursor() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT c.key, c.title, c.status, c.summary, "
                    "(SELECT count(*) FROM {claim} WHERE case_id = c.id "
                    "AND status <> 'withdrawn'), "
                    "(SELECT max(number) FROM {revision} WHERE record_kind = 'case' "
                    "AND record_key = c.key), "
                    "(SELECT array_agg(name ORDER BY name) FROM {tag} WHERE case_id = c.id), "
                    "(SELECT json_build_array(m.key, a.values, a.impact, a.assessed_on) "
                    "FROM {assessment} a JOIN {method} m ON m.id = a.method_id "
                    "WHERE a.case_id = c.id ORDER BY a.position DESC LIMIT 1) "
                    "FROM {case} c ORDER BY c.key LIMIT %s"
                ).format(
                    claim=sql.Identifier(Claim._meta.db_table),
                    revision=sql.Identifier(Revision._meta.db_table),
                    tag=sql.Identifier(CaseTag._meta.db_table),
                    assessment=sql.Identifier(Assessment._meta.db_table),
                    method=sql.Identifier(AssessmentMethod._meta.db_table),
                    case=sql.Identifier(case_table),
                ),
                [PAGE_SIZE],
            )
            cursor.fetchall()
            cursor.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(case_table)))
            cursor.fetchone()

    reads["list_floor"] = list_floor

    with connection.cursor() as cursor:
        # the floor's own index: what a stored, GIN-indexed tsvector gives
        for name, select in (
            (
                "bench_case_text",
                sql.SQL(
                    "SELECT key, title, summary AS body, to_tsvector('english', title || ' ' "
                    "|| summary) AS tsv FROM {}"
                ).format(sql.Identifier(case_table)),
            ),
            (
                "bench_claim_text",
                sql.SQL(
                    "SELECT claim_id AS key, claim_id AS title, statement AS body, "
                    "to_tsvector('english', statement) AS tsv FROM {}"
                ).format(sql.Identifier(Claim._meta.db_table)),
            ),
            (
                "bench_source_text",
                sql.SQL(
                    "SELECT key, title, '' AS body, to_tsvector('english', title) AS tsv FROM {}"
                ).format(sql.Identifier(Source._meta.db_table)),
            ),
        ):
            cursor.execute(
                sql.SQL("CREATE TEMP TABLE {} AS ").format(sql.Identifier(name)) + select
            )
            cursor.execute(
                sql.SQL("CREATE INDEX ON {} USING gin (tsv)").format(sql.Identifier(name))
            )
            cursor.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(name)))

    # what the results page shows: the hits of each kind counted, and one page of the
    # best-ranked hits of every kind with their title and an excerpt highlighted
    matches = sql.SQL(" UNION ALL ").join(
        sql.SQL(
            "SELECT {} AS kind, key, title, body, ts_rank(tsv, q) AS rank FROM {}, words "
            "WHERE tsv @@ q"
        ).format(sql.Literal(kind), sql.Identifier(name))
        for kind, name in SEARCH_TABLES.items()
    )
    count_query = sql.SQL(
        "WITH words AS (SELECT websearch_to_tsquery('english', %s) AS q) "
        "SELECT kind, count(*) FROM ({}) hits GROUP BY kind"
    ).format(matches)
    page_query = sql.SQL(
        "WITH words AS (SELECT websearch_to_tsquery('english', %s) AS q) "
        "SELECT kind, key, ts_headline('english', title, q, 'HighlightAll=true'), "
        "ts_headline('english', body, q, 'MaxWords=35, MinWords=15, MaxFragments=2') "
        "FROM (SELECT * FROM ({}) hits ORDER BY rank DESC, kind, key LIMIT %s) page, words "
        "ORDER BY rank DESC, kind, key"
    ).format(matches)

    def search_floor() -> None:
        with connection.cursor() as cursor:
            cursor.execute(count_query, [word])
            cursor.fetchall()
            cursor.execute(page_query, [word, SEARCH_PAGE])
            cursor.fetchall()

    reads["search_floor"] = search_floor
    reads.update(_queue_reads(get))
    return _interleaved(reads, repeats, profile)


def _queue_reads(get: Callable[..., Callable[[], None]]) -> dict[str, Callable[[], None]]:
    """The review queue's page (``/review/``, signed in as the reviewer) at its start and
    halfway down, against the bare SQL behind what it shows: the page of waiting records
    along the queue's partial index (with their revision counts), their count, the authors
    and open comments of each, and the two snapshots of each diff (docs/review.md)."""
    from django.db import connection
    from psycopg import sql

    from claimsdb.models import ReviewComment, ReviewState, ReviewStateAuthor, Revision
    from claimsdb.selectors.review import PAGE_SIZE as QUEUE_PAGE
    from claimsdb.selectors.review import encode_cursor

    waiting = ReviewState.objects.filter(waiting_since__isnull=False).order_by(
        "waiting_since", "id"
    )
    middle = waiting[waiting.count() // 2 : waiting.count() // 2 + 1].first()
    after = encode_cursor(middle) if middle is not None else ""
    result = {
        "queue": get("/review/"),
        "queue_middle": get("/review/", after=after),
    }
    names = {
        "state": sql.Identifier(ReviewState._meta.db_table),
        "author": sql.Identifier(ReviewStateAuthor._meta.db_table),
        "revision": sql.Identifier(Revision._meta.db_table),
        "comment": sql.Identifier(ReviewComment._meta.db_table),
    }
    page_query = sql.SQL(
        "SELECT id, record_kind, record_key, waiting_since, waiting_from, latest_number, "
        "approved_number, waiting_count, material FROM {state} WHERE waiting_since IS NOT NULL "
        "AND (waiting_since, id) > (%s, %s) ORDER BY waiting_since, id LIMIT %s"
    ).format(**names)
    count_query = sql.SQL("SELECT count(*) FROM {state} WHERE waiting_since IS NOT NULL").format(
        **names
    )
    details_query = sql.SQL(
        "SELECT state_id, array_agg(author_id) FROM {author} WHERE state_id = ANY(%s) "
        "GROUP BY state_id"
    ).format(**names)
    comments_query = sql.SQL(
        "SELECT record_kind, record_key, count(*) FROM {comment} WHERE record_key = ANY(%s) "
        "AND addressed_in IS NULL AND resolved_at IS NULL GROUP BY record_kind, record_key"
    ).format(**names)
    snapshots_query = sql.SQL(
        "SELECT number, snapshot FROM {revision} WHERE number = ANY(%s)"
    ).format(**names)
    start = (middle.waiting_since, middle.pk) if middle is not None else None

    def floor(since: Any) -> Callable[[], None]:
        def run() -> None:
            with connection.cursor() as cursor:
                cursor.execute(count_query)
                cursor.fetchone()
                moment, pk = since or ("-infinity", 0)
                cursor.execute(page_query, [moment, pk, QUEUE_PAGE + 1])
                rows = cursor.fetchall()[:QUEUE_PAGE]
                cursor.execute(details_query, [[row[0] for row in rows]])
                cursor.fetchall()
                cursor.execute(comments_query, [[row[2] for row in rows]])
                cursor.fetchall()
                numbers = [row[5] for row in rows] + [row[6] for row in rows if row[6]]
                cursor.execute(snapshots_query, [numbers])
                for _, snapshot in cursor.fetchall():
                    json.loads(snapshot)

        return run

    result["queue_floor"] = floor(None)
    result["queue_middle_floor"] = floor(start)
    return result


def _interleaved(reads: dict[str, Callable[[], None]], repeats: int, profile: str) -> dict:
    """Seconds of ``repeats`` rounds of every read, each round running them all in turn
    (after one warming round); the queries of one call of each; with ``profile``, the
    cProfile of one call of each written to that file."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    result: dict[str, Any] = {name: [] for name in reads}
    for n in range(repeats + 1):
        for name, read in reads.items():
            start = time.perf_counter()
            read()
            if n:  # the first round warms the caches up
                result[name].append(time.perf_counter() - start)
    for name, read in reads.items():
        with CaptureQueriesContext(connection) as captured:
            read()
        result[f"{name}_queries"] = len(captured)
    if profile:
        text = io.StringIO()
        for name, read in reads.items():
            profiler = cProfile.Profile()
            profiler.enable()
            read()
            profiler.disable()
            print(f"--- {name}", file=text)
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
        Path(profile).write_text(text.getvalue(), encoding="utf-8")
    return result


# The tables whose rows make the live records verify_history compares with their snapshots.
LIVE_TABLE_MODELS = (
    "Case", "CaseTag", "Claim", "EvidenceLink", "Assessment", "Control", "Unknown", "Figure",
    "Attribution", "Relation", "ReproductionRun", "Source", "AssessmentMethod", "ScopeRule",
    "AffectedEntry", "Component",
)  # fmt: skip


@child
def child_verify_floor() -> dict:
    """What verify_history reads, without what it builds: every revision row streamed and
    hashed (its snapshot, and its chained fields in the very bytes the ledger hashes), then
    every live record's rows and each record's latest snapshot streamed."""
    setup_django()
    from django.apps import apps
    from django.db import connection, transaction
    from psycopg import sql

    from claimsdb.models import Revision

    names = [
        "number", "record_kind", "record_key", "action", "material", "summary", "author",
        "created_at", "snapshot", "snapshot_sha256", "previous_hash", "chain_hash",
    ]  # fmt: skip
    columns = [Revision._meta.get_field(n).column for n in names]
    rev = dict(zip(names, columns, strict=True))
    encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    with connection.cursor() as plain:
        statements = [
            sql.SQL("SELECT {} FROM {}").format(
                _ident(*_columns(plain, model._meta.db_table)),
                sql.Identifier(model._meta.db_table),
            )
            for model in (apps.get_model("claimsdb", name) for name in LIVE_TABLE_MODELS)
        ]
    statements.append(
        sql.SQL(
            "SELECT DISTINCT ON ({kind}, {key}) {kind}, {key}, {number}, {snapshot} FROM {} "
            "ORDER BY {kind}, {key}, {number} DESC"
        ).format(
            sql.Identifier(Revision._meta.db_table),
            kind=sql.Identifier(rev["record_kind"]),
            key=sql.Identifier(rev["record_key"]),
            number=sql.Identifier(rev["number"]),
            snapshot=sql.Identifier(rev["snapshot"]),
        )
    )
    count = size = rows = 0
    start = time.perf_counter()
    with transaction.atomic():
        connection.ensure_connection()
        with connection.connection.cursor(name="bench_verify_floor") as cursor:
            cursor.itersize = 2000
            cursor.execute(
                sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
                    _ident(*columns),
                    sql.Identifier(Revision._meta.db_table),
                    sql.Identifier(columns[0]),
                )
            )
            for row in cursor:
                snapshot = row[8].encode("utf-8")
                hashlib.sha256(snapshot).hexdigest()
                moment = row[7].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                chained = encode(
                    [row[10], str(row[0]), row[1], row[2], row[3],
                     "material" if row[4] else "editorial", row[5], str(row[6]), moment, row[9]]
                ).encode("utf-8")  # fmt: skip
                hashlib.sha256(chained).hexdigest()
                count += 1
                size += len(snapshot) + len(chained)
        for index, statement in enumerate(statements):
            with connection.connection.cursor(name=f"bench_verify_live_{index}") as cursor:
                cursor.itersize = 2000
                cursor.execute(statement)
                for _ in cursor:
                    rows += 1
    return {
        "seconds": time.perf_counter() - start,
        "revisions": count,
        "bytes": size,
        "live_rows": rows,
    }


# --- the orchestrating process ------------------------------------------------------------


def run_child(url: str, kind: str, *args: Any) -> dict:
    measured = run_script(__file__, url, kind, *args)
    log("  " + _summary(measured))  # what a run cut short has measured so far
    return measured


def _summary(measured: dict) -> str:
    parts = []
    for name, value in measured.items():
        if isinstance(value, list) and value and isinstance(value[0], int | float):
            parts.append(f"{name} median {statistics.median(value) * 1000:,.1f} ms")
        elif isinstance(value, int | float):
            shown = f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"
            parts.append(f"{name} {shown}")
    return ", ".join(parts) or "done"


def make_template(dbs: Databases) -> str:
    """A migrated database with the benchmark's reviewer (made in the orchestrating
    process); its name, to copy it from."""
    setup_django()
    from django.contrib.auth.models import Group, User
    from django.db import connection

    dbs.migrated("template")
    for name in (USER, APPROVER):
        user = User.objects.create_user(name)
        user.groups.add(Group.objects.get(name="reviewer"))
    name = connection.settings_dict["NAME"]
    connection.close()
    return name


@dataclass
class Row:
    measure: str
    value: str
    baseline: str
    ratio: float | None
    target: str  # "≤ 1.5", "≥ 0.33" or "" (reported only)

    @property
    def met(self) -> str:
        if not self.target or self.ratio is None:
            return "–"
        bound = float(self.target.split()[1])
        ok = self.ratio <= bound if self.target.startswith("≤") else self.ratio >= bound
        return "met" if ok else "NOT MET"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def rate(count: float, unit: str) -> str:
    return f"{count:,.{0 if count >= 100 else 1}f} {unit}/s"


def mib(size: float) -> str:
    return f"{size / (1024 * 1024):,.1f} MiB"


LEGEND = """\
ratio: value / baseline; for a rate at two sizes, baseline / value (how much slower the
larger knowledge base is). Rates count records (methods, sources, cases, rules) or
revisions. Rows without a target are reported only."""


def format_table(rows: list[Row]) -> str:
    head = ("measure", "value", "baseline", "ratio", "target", "")
    cells = [
        (r.measure, r.value, r.baseline, "–" if r.ratio is None else f"{r.ratio:.2f}",
         r.target or "–", r.met)
        for r in rows
    ]  # fmt: skip
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]

    def line(c: tuple[str, ...]) -> str:
        return "  ".join(
            c[i].rjust(widths[i]) if i in (1, 2, 3) else c[i].ljust(widths[i])
            for i in range(len(c))
        ).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *map(line, cells)])


def measure(dbs: Databases, template: str, folder: Path, o: argparse.Namespace) -> list[Row]:
    from claimsdb import synthetic_kb

    big_n, small_n, upd_n = o.cases, o.small_cases, o.update_cases
    sizes = {"big": big_n, "small": small_n, "upd": upd_n}
    bundles, counts = {}, {}
    for name, n in sizes.items():
        bundles[name] = folder / f"kb-{name}.json"
        log(f"writing a synthetic knowledge base of {n:,} cases …")
        counts[name] = synthetic_kb.write_bundle(bundles[name], cases=n, seed=o.seed)
    urls = {name: dbs.copy(name, template) for name in sizes}

    traced_runs = not o.no_tracemalloc

    def command(url: str, name: str, *args: str, runs: str = "timed", **options: Any) -> dict:
        if not traced_runs:
            runs = "timed" if runs == "both" else runs
        return run_child(url, "command", name, list(args), options, runs)

    def load(url: str, name: str, runs: str) -> dict:
        return command(
            url, "load_records", str(bundles[name]), user=USER, summary="Benchmark load", runs=runs
        )

    timed: dict[tuple[str, str], dict] = {}
    traced: dict[tuple[str, str], dict] = {}
    for name in ("small", "big", "upd"):
        log(f"load_records: {sizes[name]:,} cases ({counts[name]['records']:,} records) …")
        timed[("load", name)] = load(urls[name], name, "timed")
    for name in ("small", "big") if traced_runs else ():
        log(f"load_records, traced: {sizes[name]:,} cases …")
        scratch = dbs.copy(f"{name}_traced", template)
        traced[("load", name)] = load(scratch, name, "traced")
        dbs.drop(f"{name}_traced")
    log("raw floor of the load: COPY of the same rows …")
    load_floor = run_child(urls["big"], "load_floor")

    for name in ("small", "big", "upd"):
        target = max(1, o.revisions * sizes[name] // big_n)
        log(f"padding the ledger of the {sizes[name]:,}-case knowledge base to {target:,} …")
        run_child(urls[name], "pad", target)
        dbs.analyze(urls[name])
    pub_copies = {name: dbs.copy(f"{name}_publish", f"{dbs.prefix}_{name}") for name in sizes
                  if name != "upd" and traced_runs}  # fmt: skip

    key = synthetic_kb.case_key(min(upd_n, big_n) // 2)
    log(f"case updates of {key} …")
    profile = str(folder / "update.prof.txt") if o.profile else ""
    update_small = run_child(urls["upd"], "update", key, o.repeats)
    update_big = run_child(urls["big"], "update", key, o.repeats, profile)
    update_floor = run_child(urls["big"], "update_floor", key, o.repeats)

    word = synthetic_kb.TOPIC_WORDS[7]
    log("reads: the case API, the case list page and a search …")
    reads = run_child(urls["big"], "reads", key, word, o.repeats)

    for name in ("small", "big"):
        url = urls[name]
        for label, args, options in (
            ("check_rules", (), {}),
            ("export_records", (), {"out": str(folder / f"export-{name}.json")}),
            ("verify_history", (), {}),
        ):
            log(f"{label}: {sizes[name]:,} cases (timed, traced) …")
            timed[(label, name)] = traced[(label, name)] = command(
                url, label, *args, runs="both", **options
            )
        # releases publish approved revisions: the loads wait for review until now (the
        # review queue was measured with every record waiting)
        log(f"approve --all: {sizes[name]:,} cases …")
        for target in (url, *([pub_copies[name]] if traced_runs else [])):
            command(target, "approve", all=True, user=APPROVER)
        log(f"publish_release: {sizes[name]:,} cases (timed, traced) …")
        notes = {"user": USER, "notes": "Benchmark release"}
        timed[("publish_release", name)] = command(url, "publish_release", **notes)
        if traced_runs:
            traced[("publish_release", name)] = command(
                pub_copies[name], "publish_release", runs="traced", **notes
            )
            dbs.drop(f"{name}_publish")
    log(f"the public case list and the API's at {o.users} concurrent users (make serve) …")
    lists = concurrent_lists.measure(urls["big"], users=o.users, requests=o.repeats // 2 or 1)
    log("raw floor of verify_history: stream the revisions, hash the same bytes …")
    verify_floor = run_child(urls["big"], "verify_floor")
    export_size = (folder / "export-big.json").stat().st_size

    # writers need a block of cases each, and the floor another: a quick run's smallest
    # knowledge base has too few
    writes_name = "small" if small_n >= 64 else "big"
    writes_url = dbs.copy("writes", f"{dbs.prefix}_{writes_name}")
    log(f"write throughput through gunicorn at {sizes[writes_name]:,} cases, "
        f"{WRITERS} writers, {o.write_rounds} rounds of {o.write_seconds:g} s …")  # fmt: skip
    writes = run_child(writes_url, "throughput", WRITERS, o.write_rounds, o.write_seconds,
                       o.port)  # fmt: skip
    dbs.drop("writes")
    o.throughput = (sizes[writes_name], writes["table"])

    rows: list[Row] = []
    med = statistics.median
    u_small, u_big = med(update_small["times"]), med(update_big["times"])
    rows.append(Row(f"case update at {big_n:,} vs {upd_n:,} cases (median)", ms(u_big),
                    ms(u_small), u_big / u_small, "≤ 1.5"))  # fmt: skip
    q_big, q_small = update_big["queries"], update_small["queries"]
    rows.append(Row(f"case update queries at {big_n:,} vs {upd_n:,} cases", f"{q_big:,}",
                    f"{q_small:,}", q_big / q_small, ""))  # fmt: skip
    records_big, records_small = counts["big"]["records"], counts["small"]["records"]
    r_big = records_big / timed[("load", "big")]["seconds"]
    r_small = records_small / timed[("load", "small")]["seconds"]
    rows.append(Row(f"load_records rate at {big_n:,} vs {small_n:,} cases", rate(r_big, "rec"),
                    rate(r_small, "rec"), r_small / r_big, "≤ 1.5"))  # fmt: skip
    r_floor = records_big / load_floor["seconds"]
    rows.append(Row(f"load_records rate vs raw COPY of its rows ({big_n:,} cases)",
                    rate(r_big, "rec"), rate(r_floor, "rec"), r_big / r_floor,
                    "≥ 0.33"))  # fmt: skip
    u_floor = med(update_floor["times"])
    rows.append(Row(f"case update vs raw rows + revision ({big_n:,} cases, median)", ms(u_big),
                    ms(u_floor), u_big / u_floor, "≤ 5"))  # fmt: skip
    api, api_floor = med(reads["api"]), med(reads["api_floor"])
    rows.append(Row("GET /api/v1/cases/<key>/ vs psycopg + json.dumps (median)", ms(api),
                    ms(api_floor), api / api_floor, "≤ 2"))  # fmt: skip
    page, page_floor = p95(reads["list"]), p95(reads["list_floor"])
    rows.append(Row(f"GET /cases/ vs bare SQL page ({big_n:,} cases, p95)", ms(page),
                    ms(page_floor), page / page_floor, "≤ 3"))  # fmt: skip
    found, found_floor = p95(reads["search"]), p95(reads["search_floor"])
    rows.append(Row(f"search ?q={word} vs GIN tsvector SQL ({big_n:,} cases, p95)", ms(found),
                    ms(found_floor), found / found_floor, "≤ 3"))  # fmt: skip
    queue, queue_floor = p95(reads["queue"]), p95(reads["queue_floor"])
    rows.append(Row(f"GET /review/ vs bare SQL page ({big_n:,} cases waiting, p95)", ms(queue),
                    ms(queue_floor), queue / queue_floor, "≤ 3"))  # fmt: skip
    queue, queue_floor = p95(reads["queue_middle"]), p95(reads["queue_middle_floor"])
    rows.append(Row("GET /review/ halfway down vs bare SQL page (p95)", ms(queue),
                    ms(queue_floor), queue / queue_floor, "≤ 3"))  # fmt: skip
    page, api = lists["page"]["p95"], lists["api"]["p95"]
    rows.append(Row(f"GET /cases/ signed out vs /api/v1/cases/ at {o.users} users (p95)",
                    ms(page), ms(api), page / api, "≤ 1.5"))  # fmt: skip
    revisions = verify_floor["revisions"]
    v_rate = revisions / timed[("verify_history", "big")]["seconds"]
    v_floor = revisions / verify_floor["seconds"]
    rows.append(Row(f"verify_history vs stream + sha256 ({revisions:,} revisions)",
                    rate(v_rate, "rev"), rate(v_floor, "rev"), v_rate / v_floor,
                    "≥ 0.5"))  # fmt: skip
    for label, unit in (("publish_release", "rec"), ("export_records", "rec"),
                        ("check_rules", "rec")):  # fmt: skip
        big_rate = records_big / timed[(label, "big")]["seconds"]
        small_rate = records_small / timed[(label, "small")]["seconds"]
        extra = f", {mib(export_size)}" if label == "export_records" else ""
        rows.append(Row(f"{label} rate at {big_n:,} vs {small_n:,} cases{extra}",
                        rate(big_rate, unit), rate(small_rate, unit), small_rate / big_rate,
                        ""))  # fmt: skip
    for label in ("load_records", "publish_release", "export_records", "verify_history",
                  "check_rules"):  # fmt: skip
        name = "load" if label == "load_records" else label
        if traced_runs:
            big_t, small_t = traced[(name, "big")], traced[(name, "small")]
            rows.append(Row(f"{label} peak memory (tracemalloc), {big_n:,} vs {small_n:,}",
                            mib(big_t["tracemalloc_peak"]), mib(small_t["tracemalloc_peak"]),
                            big_t["tracemalloc_peak"] / small_t["tracemalloc_peak"],
                            "≤ 1.5"))  # fmt: skip
        big_r, small_r = timed[(name, "big")], timed[(name, "small")]
        rows.append(Row(f"{label} peak memory (ru_maxrss), {big_n:,} vs {small_n:,}",
                        mib(big_r["maxrss"]), mib(small_r["maxrss"]),
                        big_r["maxrss"] / small_r["maxrss"], "≤ 1.5"))  # fmt: skip
    table = writes["table"]
    one, four = table["1"], table["4"]
    rows.append(Row(f"writes/s at 4 vs 1 concurrent writers ({sizes[writes_name]:,} cases, "
                    "gunicorn)", rate(four["rate"], "writes"), rate(one["rate"], "writes"),
                    four["rate"] / one["rate"], "≥ 1.7"))  # fmt: skip
    rows.append(Row("ledger lock held, share of a write's time (1 writer, median ms)",
                    ms(one["held_ms"] / 1000), ms(one["write_ms"] / 1000),
                    one["held_share"], "≤ 0.15"))  # fmt: skip
    if o.profile:
        o.profile_text = Path(profile).read_text(encoding="utf-8")
    return rows


def format_throughput(cases: int, table: dict[str, dict[str, float]]) -> str:
    """The write-throughput table: per number of concurrent writers, through gunicorn."""
    head = ("concurrent writers", "writes/s (median)", "p95", "floor writes/s",
            "claimsdb / floor", "lock held (share)")  # fmt: skip
    cells = [
        (n, f"{e['rate']:,.1f}", ms(e["p95"]), f"{e['floor']:,.0f}",
         f"{e['rate'] / e['floor']:.3f}", f"{e['held_share']:.2f}")
        for n, e in table.items()
    ]  # fmt: skip
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    lines = ["  ".join(c[i].rjust(widths[i]) for i in range(len(head))) for c in [head, *cells]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return f"Write throughput at {cases:,} cases (PUT with If-Match, distinct cases):\n" + (
        "\n".join(lines)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000, help="the large knowledge base")
    parser.add_argument("--small-cases", type=int, default=10_000, help="the load's other size")
    parser.add_argument("--update-cases", type=int, default=1_000, help="the update's other size")
    parser.add_argument("--revisions", type=int, default=1_000_000, help="ledger of the large KB")
    parser.add_argument("--repeats", type=int, default=20, help="timed repetitions of each read")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--users", type=int, default=10, help="concurrent users of the two lists' server"
    )
    parser.add_argument(
        "--write-rounds", type=int, default=3, help="interleaved rounds of the write throughput"
    )
    parser.add_argument(
        "--write-seconds", type=float, default=8.0, help="seconds of writing per measurement"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("BENCH_PORT", "0")),
        help="gunicorn's port for the write throughput (default: BENCH_PORT, else a free one)",
    )
    parser.add_argument("--quick", action="store_true", help="a small run (about a minute)")
    parser.add_argument("--profile", action="store_true", help="cProfile one case update")
    parser.add_argument(
        "--no-tracemalloc",
        action="store_true",
        help="peak memory from ru_maxrss only: no second, traced run of each command "
        "(halves a large run)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        return serve_child(CHILDREN, *options.child)
    if options.quick:
        for name, value in QUICK.items():
            setattr(options, name, value)
    if not options.small_cases < options.cases or not options.update_cases <= options.cases:
        parser.error("--small-cases and --update-cases must be below --cases")

    url = postgres_url("bench/scale.py", "it measures PostgreSQL")
    base = urlsplit(url).path.lstrip("/") or "claimsdb"
    prefix = f"{base}_scale_{os.getpid()}"
    dbs = Databases(url, prefix)
    started = time.monotonic()
    try:
        log(f"migrating the template database {prefix}_template …")
        template = make_template(dbs)
        with tempfile.TemporaryDirectory(prefix="claimsdb-scale-") as folder:
            rows = measure(dbs, template, Path(folder), options)
    finally:
        dbs.drop_all()
    print(
        f"claimsdb scale benchmark: {options.cases:,} cases (and {options.small_cases:,}; "
        f"updates at {options.update_cases:,}), {options.revisions:,} revisions, "
        f"PostgreSQL, {os.cpu_count()} cores, {time.monotonic() - started:,.0f} s"
    )
    print(format_table(rows))
    print(LEGEND)
    print()
    print(format_throughput(*options.throughput))
    missed = [r for r in rows if r.met == "NOT MET"]
    judged = [r for r in rows if r.met != "–"]
    if options.profile:
        print(f"\ncProfile of one case update at {options.cases:,} cases:")
        print(options.profile_text.rstrip())
    print(f"{len(judged) - len(missed)} of {len(judged)} targets met")
    return 1 if missed and options.strict else 0


if __name__ == "__main__":
    sys.exit(main())
