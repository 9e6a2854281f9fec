"""Storing an accepted run: its row, its scenarios and its trial rows.

Called only from inside ``services.writer.write_records`` (its ``before_apply`` hook), so
every write here happens in the import's one transaction, under the ledger lock, after the
case document was validated and before the ``import`` revision is appended. Nothing here
decides whether a file is acceptable: ``repro`` and ``repro_results`` did.

Trial rows go in bulk: PostgreSQL's COPY (psycopg 3, text format, one row at a time from
the streaming second pass), or batched multi-row inserts elsewhere. Memory stays flat in
the number of rows either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any

from django.db import connection

from claimsdb.models import Case, ReproductionRun, ReproductionScenario, RunComponent, TrialRow
from claimsdb.services.rows import column

from .matching import Match
from .repro import ParsedRun

BATCH_SIZE = 5_000
# The trial-row columns in the order both insertion paths send them.
ROW_COLUMNS = (
    "scenario",
    "n",
    "aborted",
    "mid_transfer",
    "reused_in_flight",
    "late_write",
    "checksum_mismatch",
    "wrong_output",
    "latency_us",
    "extra",
)
# A row as the stores take it: (scenario pk, n, six flags, latency or None, extra JSON or None).
StoredRow = tuple[int, int, bool, bool, bool, bool, bool, bool, float | None, str | None]


class RowCountMismatch(Exception):
    """The second pass did not see the rows the first pass counted (the file changed)."""


def delete_run(run: ReproductionRun) -> None:
    """Remove a run with its scenarios and trial rows (before a replacement)."""
    # Trial rows first, in one statement: the cascade would collect millions of ids.
    TrialRow.objects.filter(scenario__run=run)._raw_delete(TrialRow.objects.db)
    RunComponent.objects.filter(run=run).delete()
    ReproductionScenario.objects.filter(run=run).delete()
    run.delete()


def create_run(
    *, case: Case, parsed: ParsedRun, summary: dict[str, Any], sha256: str
) -> tuple[ReproductionRun, dict[str, ReproductionScenario]]:
    """The run row and its scenario rows (without trial rows); scenarios by their id."""
    run = ReproductionRun.objects.create(
        case=case,
        run_id=parsed.run_id,
        file_sha256=sha256,
        summary=summary,
        started_at=parsed.started_at,
    )
    return run, create_scenarios(run, parsed)


def create_scenarios(run: ReproductionRun, parsed: ParsedRun) -> dict[str, ReproductionScenario]:
    stored = parsed.has_trials
    scenarios = ReproductionScenario.objects.bulk_create(
        ReproductionScenario(
            run=run,
            position=position,
            scenario_id=s.id,
            backend=s.backend,
            mitigations=sorted(s.mitigations),
            free_list_order=s.free_list_order,
            trials=s.trials,
            checksum_mismatches=s.checksum_mismatches,
            wrong_outputs=s.wrong_outputs,
            outcome=s.outcome,
            backend_version=s.backend_version,
            backend_commit=s.backend_commit,
            backend_purl=s.backend_purl,
            stored_rows=s.trials if stored else 0,
        )
        for position, s in enumerate(parsed.scenario_summaries)
    )
    if any(s.pk is None for s in scenarios):  # a backend that does not return ids
        scenarios = list(ReproductionScenario.objects.filter(run=run).order_by("position"))
    return {s.scenario_id: s for s in scenarios}


def create_run_components(
    run: ReproductionRun, scenarios: dict[str, ReproductionScenario], matches: list[Match]
) -> None:
    """What each scenario ran (its framework, its backend) and the component each matched."""
    RunComponent.objects.bulk_create(
        RunComponent(
            run=run,
            scenario=scenarios[scenario_id],
            role=match.role,
            name=match.name,
            version=match.version,
            commit=match.commit,
            purl=match.purl,
            component_id=match.component_pk,
            matched_by=match.matched_by,
        )
        for match in matches
        for scenario_id in match.scenarios
    )


def stored_rows(
    rows: Iterable[dict[str, Any]], scenario_pks: dict[str, int]
) -> Iterator[StoredRow]:
    """Trial rows as parsed (dicts of an accepted file) → rows ready for insertion."""
    plain = itemgetter(*ROW_COLUMNS[:-1])  # the usual row: eight fields and a latency
    for row in rows:
        if len(row) == 9 and "latency_us" in row:
            name, n, a, m, r, lw, c, w, latency = plain(row)
            yield (scenario_pks[name], n, a, m, r, lw, c, w, float(latency), None)
            continue
        latency = row.get("latency_us")
        extra = {k: v for k, v in row.items() if k.startswith("x-")}
        yield (
            scenario_pks[row["scenario"]],
            row["n"],
            row["aborted"],
            row["mid_transfer"],
            row["reused_in_flight"],
            row["late_write"],
            row["checksum_mismatch"],
            row["wrong_output"],
            None if latency is None else float(latency),
            json.dumps(extra, ensure_ascii=False, allow_nan=False) if extra else None,
        )


def insert_rows(rows: Iterable[StoredRow]) -> int:
    """Insert trial rows in bulk in the current transaction; the number inserted."""
    if connection.vendor == "postgresql":
        return _copy_rows(rows)
    return _insert_batches(rows)


def _columns() -> list[str]:
    return [column(TrialRow, name) for name in ROW_COLUMNS]


def _copy_rows(rows: Iterable[StoredRow]) -> int:
    from psycopg import sql

    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(TrialRow._meta.db_table),
        sql.SQL(", ").join(sql.Identifier(column) for column in _columns()),
    )
    count = 0
    with connection.cursor() as cursor:
        with cursor.cursor.copy(statement) as copy:
            write_row = copy.write_row
            for row in rows:
                write_row(row)
                count += 1
    return count


def _insert_batches(rows: Iterable[StoredRow]) -> int:
    """Multi-row INSERTs of ``BATCH_SIZE`` rows (SQLite and other databases)."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(column) for column in _columns())
    statement = (
        f"INSERT INTO {quote(TrialRow._meta.db_table)} ({columns}) "
        f"VALUES ({', '.join(['%s'] * len(ROW_COLUMNS))})"
    )
    count = 0
    batch: list[StoredRow] = []
    with connection.cursor() as cursor:
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH_SIZE:
                cursor.executemany(statement, batch)
                count += len(batch)
                batch.clear()
        if batch:
            cursor.executemany(statement, batch)
            count += len(batch)
    return count
