"""Reads of imported runs for the API and the pages (selectors: no writes here).

A run is described from its summary — the document's ``reproduction_runs`` entry — so that
a case restored from a document, or shown as of a past revision, reads the same as a live
one. The database adds only what the summary cannot say: how many trial rows are stored.
Summaries reach here from documents loaded by anyone, so every field is read defensively.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet, Sum

from claimsdb.models import ImportReport, ReproductionRun, ReproductionScenario, TrialRow

from .repro.run import backend_build, backend_builds
from .stats import Rate
from .storage import ROW_COLUMNS

# the CSV has the stored columns, in the order the stores write them
CSV_COLUMNS = ROW_COLUMNS
CSV_CHUNK = 5_000


@dataclass(frozen=True)
class ScenarioStats:
    """One scenario of a run with its stale-read rate (checksum_mismatches / trials)."""

    position: int
    scenario_id: str
    backend: str
    mitigations: list[str]
    free_list_order: str
    trials: int
    checksum_mismatches: int
    wrong_outputs: int
    outcome: str
    stale_read: Rate | None  # None when the counters cannot give a rate
    stored_rows: int
    # the backend's build (repro-results/1.1): version, commit, Package URL ("" if unstated)
    backend_version: str = ""
    backend_commit: str = ""
    backend_purl: str = ""

    @property
    def mitigated(self) -> bool:
        return bool(self.mitigations)

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "id": self.scenario_id,
            "backend": self.backend,
            "backend_version": self.backend_version or None,
            "backend_commit": self.backend_commit or None,
            "backend_purl": self.backend_purl or None,
            "mitigations": self.mitigations,
            "mitigated": self.mitigated,
            "free_list_order": self.free_list_order,
            "trials": self.trials,
            "checksum_mismatches": self.checksum_mismatches,
            "wrong_outputs": self.wrong_outputs,
            "outcome": self.outcome,
            "stale_read_rate": self.stale_read.as_dict() if self.stale_read else None,
            "stored_rows": self.stored_rows,
        }


def scenario_stats(
    summary: dict[str, Any], stored: dict[str, int] | None = None
) -> list[ScenarioStats]:
    """The scenarios of a run summary with their rates; ``stored``: rows stored per scenario."""
    stored = stored or {}
    builds = backend_builds(summary)
    scenarios = summary.get("scenarios")
    result = []
    for position, scenario in enumerate(scenarios if isinstance(scenarios, list) else []):
        if not isinstance(scenario, dict):
            continue
        name = _text(scenario.get("id"))
        trials = _count(scenario.get("trials"))
        mismatches = _count(scenario.get("checksum_mismatches"))
        rate = (
            Rate.of(mismatches, trials)
            if trials is not None and mismatches is not None and mismatches <= trials
            else None
        )
        mitigations = scenario.get("mitigations")
        result.append(
            ScenarioStats(
                position=position,
                scenario_id=name,
                backend=_text(scenario.get("backend")),
                mitigations=sorted(m for m in mitigations if isinstance(m, str))
                if isinstance(mitigations, list)
                else [],
                free_list_order=_text(scenario.get("free_list_order")),
                trials=trials or 0,
                checksum_mismatches=mismatches or 0,
                wrong_outputs=_count(scenario.get("wrong_outputs")) or 0,
                outcome=_text(scenario.get("outcome")),
                stale_read=rate,
                stored_rows=stored.get(name, 0),
                **backend_build(scenario, builds.get(_text(scenario.get("backend")))),
            )
        )
    return result


def stored_rows_by_run(run_ids: list[str]) -> dict[str, dict[str, int]]:
    """Trial rows stored per scenario, for runs whose stored file is the summary's."""
    result: dict[str, dict[str, int]] = {}
    rows = ReproductionScenario.objects.filter(run__run_id__in=run_ids).values_list(
        "run__run_id", "scenario_id", "stored_rows"
    )
    for run_id, scenario_id, count in rows:
        result.setdefault(run_id, {})[scenario_id] = count
    return result


# --- the API's reads ------------------------------------------------------------------------


def run_queryset() -> QuerySet[ReproductionRun]:
    """Runs with their case and the totals a list shows, newest first."""
    return (
        ReproductionRun.objects.select_related("case")
        .annotate(scenario_count=Count("scenarios"), stored_rows=Sum("scenarios__stored_rows"))
        .order_by("-started_at", "run_id")
    )


def run_item(run: ReproductionRun) -> dict[str, Any]:
    """A run as the API lists it (a row of ``run_queryset``)."""
    summary = run.summary if isinstance(run.summary, dict) else {}
    harness = summary.get("harness")
    if not isinstance(harness, dict):
        harness = {}
    scenarios = summary.get("scenarios")
    return {
        "run_id": run.run_id,
        "case": run.case.key,
        "sha256": run.file_sha256,
        "started_at": _text(summary.get("started_at")) or None,
        "finished_at": _text(summary.get("finished_at")) or None,
        "harness": {"name": _text(harness.get("name")), "version": _text(harness.get("version"))},
        "claims": [c for c in summary.get("claims", []) if isinstance(c, str)]
        if isinstance(summary.get("claims"), list)
        else [],
        "scenarios": len(scenarios) if isinstance(scenarios, list) else 0,
        "stored_trial_rows": int(getattr(run, "stored_rows", 0) or 0),
    }


def run_detail(run_id: str) -> dict[str, Any] | None:
    run = run_queryset().filter(run_id=run_id).first()
    if run is None:
        return None
    stored = stored_rows_by_run([run.run_id]).get(run.run_id, {})
    return {
        **run_item(run),
        "summary": run.summary,
        "scenario_stats": [s.as_dict() for s in scenario_stats(run.summary, stored)],
    }


def import_reports() -> QuerySet[ImportReport]:
    return ImportReport.objects.select_related("user").order_by("-created_at", "-id")


def trial_rows_csv(run: ReproductionRun) -> Iterator[list[Any]]:
    """The run's trial rows, scenario by scenario in file order, read in chunks by key.

    Keyset pagination on (scenario, n) uses the unique index and keeps memory flat however
    many rows a run has; it holds no cursor open between chunks.
    """
    yield list(CSV_COLUMNS)
    scenarios = ReproductionScenario.objects.filter(run=run).order_by("position")
    for scenario_pk, name in scenarios.values_list("pk", "scenario_id"):
        after = 0
        while True:
            chunk = list(
                TrialRow.objects.filter(scenario_id=scenario_pk, n__gt=after)
                .order_by("n")
                .values_list(*CSV_COLUMNS[1:])[:CSV_CHUNK]
            )
            for row in chunk:
                yield [name, *_csv_values(row)]
            if len(chunk) < CSV_CHUNK:
                break
            after = chunk[-1][0]


def _csv_values(row: tuple) -> list[Any]:
    n, *flags, latency, extra = row
    return [
        n,
        *("true" if flag else "false" for flag in flags),
        "" if latency is None else repr(float(latency)),
        "" if not extra else json.dumps(extra, ensure_ascii=False, sort_keys=True),
    ]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None
