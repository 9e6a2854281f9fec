"""Benchmark of search at scale on PostgreSQL.

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/search.py

Sets up a throwaway database (``<name>_search_<pid>_index``, migrated), fills the search index
with the entries of ``--cases`` synthetic cases (each with ``--claims`` claims) and a
twentieth as many sources, in the working scope, with text drawn from a vocabulary of
2,000 words with a skewed frequency (a few words are in most entries, most are rare). The
rows are inserted with one SQL statement, not through the services: this measures reading
the index, which the write path keeps current (docs/search.md).

For a rare, a common and a very common word, two words, and a key, it measures the p95 of
``claimsdb.search.search`` (the counts and the first page, highlighted), against the bare
SQL behind it: the count and the ranked page of ids, without headlines or Python. It prints
one table, the plan of the page query, and drops the database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Databases, p95, postgres_url, setup_django, timed  # noqa: E402

VOCABULARY = 2000
RUNS = 30

# a word: w0001 … w2000, low numbers far more frequent (random()^4)
WORD = "'w' || lpad((1 + floor(power(random(), 4) * %(vocabulary)s))::int::text, 4, '0')"
FILL = f"""
INSERT INTO claimsdb_searchentry
    (scope, kind, key, case_key, status, source_kind, title, text, more, revision)
SELECT 'working', e.kind, e.key, e.case_key, e.status, e.source_kind,
       -- "+ 0 * e.n": a correlated subquery, drawn again for every row
       coalesce((SELECT string_agg({WORD}, ' ')
                   FROM generate_series(1, e.title_words + 0 * e.n)), ''),
       coalesce((SELECT string_agg({WORD}, ' ')
                   FROM generate_series(1, e.text_words + 0 * e.n)), ''),
       -- the further text (tags, account, basis; a publisher and the key's parts)
       coalesce((SELECT string_agg({WORD}, ' ')
                   FROM generate_series(1, e.more_words + 0 * e.n)), '')
         || ' ' || e.key || ' ' || replace(e.key, '-', ' '),
       NULL
FROM (
    SELECT n, 'case' AS kind, 'BENCH-' || n AS key, 'BENCH-' || n AS case_key,
           'ready' AS status, '' AS source_kind, 8 AS title_words, 40 AS text_words,
           60 AS more_words
      FROM generate_series(1, %(cases)s) n
    UNION ALL
    SELECT n * 100 + c, 'claim', 'CLM-BENCH-' || n || '-' || c, 'BENCH-' || n,
           'supported', '', 0, 20, 0
      FROM generate_series(1, %(cases)s) n, generate_series(1, %(claims)s) c
    UNION ALL
    SELECT n, 'source', 'SRC-BENCH-' || n, '', 'active', 'other', 10, 0, 2
      FROM generate_series(1, %(sources)s) n
) e
"""

BARE_COUNT = """
SELECT kind, count(*) FROM claimsdb_searchentry
 WHERE scope = 'working' AND (vector @@ websearch_to_tsquery('english', %(q)s) OR key = %(key)s)
 GROUP BY kind
"""
BARE_PAGE = """
SELECT id FROM claimsdb_searchentry
 WHERE scope = 'working' AND (vector @@ websearch_to_tsquery('english', %(q)s) OR key = %(key)s)
 ORDER BY (key = %(key)s) DESC, ts_rank(vector, websearch_to_tsquery('english', %(q)s)) DESC,
          kind, key
 LIMIT 20
"""


def median_and_p95(function) -> tuple[float, float]:
    """(median, p95) seconds of ``RUNS`` calls, after one that warms the cache."""
    samples = timed(function, RUNS)
    return statistics.median(samples), p95(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=10, help="claims per case")
    arguments = parser.parse_args()
    url = postgres_url("bench/search.py", "it measures PostgreSQL's full-text search")
    setup_django()
    from django.db import connection

    base = urlsplit(url).path.lstrip("/") or "claimsdb"
    dbs = Databases(url, f"{base}_search_{os.getpid()}")
    try:
        dbs.migrated("index")
        sources = max(1, arguments.cases // 20)
        start = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(
                FILL,
                {
                    "vocabulary": VOCABULARY,
                    "cases": arguments.cases,
                    "claims": arguments.claims,
                    "sources": sources,
                },
            )
            cursor.execute("VACUUM ANALYZE claimsdb_searchentry")
            cursor.execute("SELECT count(*) FROM claimsdb_searchentry")
            entries = cursor.fetchone()[0]
        print(
            f"{entries:,} entries ({arguments.cases:,} cases, "
            f"{arguments.cases * arguments.claims:,} claims, {sources:,} sources) "
            f"in {time.perf_counter() - start:.0f} s"
        )
        report(connection)
    finally:
        connection.close()
        dbs.drop_all()


def report(connection) -> None:
    from claimsdb import search

    queries = {
        "rare word": "w1900",
        "common word": "w0100",
        "very common word": "w0001",
        "two words": "w0002 w0300",
        "a key": "BENCH-4242",
    }
    print(
        "\n| query | hits | search() median / p95 | bare SQL median / p95 | ratio of p95 |"
        "\n|---|---:|---:|---:|---:|"
    )
    for label, query in queries.items():
        results = search.search(query, released=False)

        def bare(query=query):
            with connection.cursor() as cursor:
                params = {"q": query, "key": query.upper()}
                cursor.execute(BARE_COUNT, params)
                cursor.fetchall()
                cursor.execute(BARE_PAGE, params)
                cursor.fetchall()

        ours = median_and_p95(lambda query=query: list(search.search(query, released=False).page))
        floor = median_and_p95(bare)
        print(
            f"| {label} (`{query}`) | {results.total:,} | "
            f"{ours[0] * 1000:.1f} / {ours[1] * 1000:.1f} ms | "
            f"{floor[0] * 1000:.1f} / {floor[1] * 1000:.1f} ms | {ours[1] / floor[1]:.2f}× |"
        )
    page = search._page(**search._params("w0100", "working"))[:20]
    sql, params = page.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (VERBOSE, COSTS OFF) " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
    print("\nplan of a page query:\n    " + "\n    ".join(line[:160] for line in plan))


if __name__ == "__main__":
    main()
