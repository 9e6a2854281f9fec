"""How webhooks keep up with a large ledger (run by hand; docs/integrations.md).

On the PostgreSQL database of ``DATABASE_URL`` — dropped and made again: give a throwaway
one — it writes a ledger of ``--revisions`` revisions straight into the table (the
fan-out reads them, it does not check their chain), makes three subscriptions (every
revision; cases only; a tag one revision in ten carries), then:

* fans the whole ledger out into deliveries, batch by batch, and reports the time, the
  deliveries made, the queries of one batch and the peak memory;
* sends ``--sends`` of the deliveries to a receiver on 127.0.0.1 (``--port``) one after
  another, as one job after another would, and reports the rate.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/claimsdb_bench_webhooks \\
        python bench/webhooks.py --revisions 100000 --sends 500
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import log, postgres_url, setup_django


def recreate(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        dbname="postgres",
        autocommit=True,
    ) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--sends", type=int, default=500)
    parser.add_argument("--port", type=int, default=8440)
    options = parser.parse_args()
    url = postgres_url("bench/webhooks.py", "it measures PostgreSQL")
    recreate(url)
    os.environ["WEBHOOKS_ALLOW_PRIVATE"] = "1"
    setup_django()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from claimsdb.models import LedgerHead, WebhookDelivery
    from claimsdb.webhooks import fanout
    from claimsdb.webhooks.delivery import enqueue_due, send
    from claimsdb.webhooks.subscriptions import subscription_create

    call_command("migrate", verbosity=0)
    reviewer = User.objects.create(username="bench-reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewer"))
    hook = f"http://127.0.0.1:{options.port}/hooks"
    events = ["revision.written"]
    for values in ({}, {"kinds": ["case"]}, {"tags": ["rdma"]}):
        subscription_create(user=reviewer, values={"url": hook, "events": events, **values})
    # the subscriptions start at the head (0); now the ledger grows behind them
    count = options.revisions
    log(f"writing {count} revisions")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO claimsdb_revision (number, record_kind, record_key, action, material,
                summary, author_id, created_at, snapshot, snapshot_sha256, previous_hash,
                chain_hash, changed, dated_on)
            SELECT n, CASE WHEN n %% 4 = 0 THEN 'source' ELSE 'case' END,
                'BENCH-' || (n %% 5000), 'update', true, 'bench', %s, now(),
                '{"format":"claimsdb.case/1","tags":["'
                    || CASE WHEN n %% 10 = 0 THEN 'rdma' ELSE 'other' END
                    || '"],"title":"A case of the benchmark with a title of some length"}',
                md5(n::text) || md5(n::text), md5((n - 1)::text) || md5((n - 1)::text),
                md5(n::text) || md5('c' || n::text), '[]', NULL
            FROM generate_series(1, %s) AS n
            """,
            [reviewer.pk, count],
        )
    LedgerHead.objects.update_or_create(pk=1, defaults={"number": count})

    tracemalloc.start()
    with CaptureQueriesContext(connection) as one_batch:
        fanout.fan_out_batch()
    started = time.perf_counter()
    batches = 1
    while True:
        made, more = fanout.fan_out_batch()
        batches += 1
        if not more:
            break
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    deliveries = WebhookDelivery.objects.count()
    print(
        f"fan-out: {count} revisions, 3 subscriptions → {deliveries} deliveries in "
        f"{batches} batches, {seconds:.1f} s after the first ({deliveries / seconds:.0f} "
        f"deliveries/s); {len(one_batch)} queries a batch; peak traced memory "
        f"{peak / 1e6:.1f} MB"
    )

    from tests.webhook_receiver import Receiver

    receiver = Receiver(options.port).start()
    try:
        jobs: list[tuple[int, str]] = []
        with CaptureQueriesContext(connection) as hand_out:
            enqueue_due(limit=options.sends, enqueue=lambda pk, token: jobs.append((pk, token)))
        started = time.perf_counter()
        for pk, token in jobs:
            send(pk, token)
        seconds = time.perf_counter() - started
    finally:
        receiver.stop()
    print(
        f"hand-out of {len(jobs)} due deliveries: {len(hand_out)} queries; sent one after "
        f"another in {seconds:.1f} s ({len(jobs) / seconds:.0f}/s), "
        f"{len(receiver.received)} received"
    )


if __name__ == "__main__":
    main()
