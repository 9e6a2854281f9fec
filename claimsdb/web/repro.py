"""The record page's "Reproduction results" section: each imported run's provenance, a table
and a chart of each scenario's stale-read rate with its 95 % Wilson interval.

Built from run summaries (the case document's ``reproduction_runs``), so a past revision
shows the runs it had; the database adds how many trial rows are stored for the very file
a summary describes (one query for all runs). The chart is an inline SVG written here:
no script, no style attributes (the pages' content security policy forbids both), every
piece of text escaped.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from claimsdb.importers.runs import ScenarioStats, scenario_stats
from claimsdb.importers.stats import Z_95, percent
from claimsdb.models import ReproductionRun, ReproductionScenario

UNMITIGATED_COLOUR = "#b42318"
MITIGATED_COLOUR = "#1b6e8a"
GRID_COLOUR = "#d0d5dd"
TEXT_COLOUR = "#1d2939"
MUTED_COLOUR = "#667085"


@dataclass
class ScenarioRow:
    """A scenario as the table shows it."""

    stats: ScenarioStats
    rate_text: str
    interval_text: str
    mitigations_text: str
    outcome_text: str


@dataclass
class BackendGroup:
    backend: str
    rows: list[ScenarioRow]


@dataclass
class RunSection:
    """One imported run on the record page."""

    run_id: str
    anchor: str
    sha256: str
    harness: str
    harness_commit: str
    harness_config: str
    host: str
    gpus: list[str]
    driver: str
    cuda: str
    framework: str
    framework_commit: str
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    duration: str
    setting: str
    claims: list[str]
    notes: str
    artifacts: list[dict[str, Any]]
    groups: list[BackendGroup]
    chart: SafeString
    stored_rows: int
    trials_csv_url: str
    api_url: str
    extensions: list[tuple[str, str]] = field(default_factory=list)

    @property
    def scenario_count(self) -> int:
        return sum(len(g.rows) for g in self.groups)


def reproduction_results(case_key: str) -> list[RunSection]:
    """The live case's runs, for pages that have no document in hand."""
    summaries = [
        run.summary
        for run in ReproductionRun.objects.filter(case__key=case_key).order_by("run_id")
        if isinstance(run.summary, dict)
    ]
    return reproduction_sections(summaries)


def reproduction_sections(summaries: list[Any] | None) -> list[RunSection]:
    """Sections for run summaries as a case document lists them (live or as of a revision)."""
    runs = [s for s in summaries or [] if isinstance(s, dict)]
    stored = _stored_rows([(_text(s.get("run_id")), _text(s.get("sha256"))) for s in runs])
    return [
        run_section(summary, stored.get(_text(summary.get("run_id"))), index)
        for index, summary in enumerate(runs)
    ]


def run_anchor(index: int) -> str:
    """The record page's anchor of the ``index``-th run summary of a case document."""
    return f"run-{index + 1}"


def run_anchors(summaries: list[Any] | None) -> dict[str, str]:
    """run_id → its section's anchor on the record page (as ``reproduction_sections``)."""
    runs = [s for s in summaries or [] if isinstance(s, dict)]
    return {_text(s.get("run_id")): run_anchor(i) for i, s in enumerate(runs)}


def runs_by_claim(summaries: list[Any] | None) -> dict[str, list[dict[str, str]]]:
    """claim id → the runs that bear on it (the ``claims`` of their summaries), each as
    ``{"run_id", "anchor"}`` in the order of the record page's sections; no queries."""
    bearing: dict[str, list[dict[str, str]]] = {}
    runs = [s for s in summaries or [] if isinstance(s, dict)]
    for index, summary in enumerate(runs):
        run = {"run_id": _text(summary.get("run_id")), "anchor": run_anchor(index)}
        for claim in dict.fromkeys(c for c in _list(summary.get("claims")) if isinstance(c, str)):
            bearing.setdefault(claim, []).append(run)
    return bearing


def run_section(summary: dict[str, Any], stored: dict[str, int] | None, index: int) -> RunSection:
    run_id = _text(summary.get("run_id"))
    harness = _mapping(summary.get("harness"))
    environment = _mapping(summary.get("environment"))
    framework = _mapping(environment.get("framework"))
    started = _timestamp(summary.get("started_at"))
    finished = _timestamp(summary.get("finished_at"))
    stats = scenario_stats(summary, stored)
    groups = _groups(stats)
    anchor = run_anchor(index)
    stored_rows = sum(s.stored_rows for s in stats)
    return RunSection(
        run_id=run_id,
        anchor=anchor,
        sha256=_text(summary.get("sha256")),
        harness=_join(_text(harness.get("name")), _text(harness.get("version"))),
        harness_commit=_text(harness.get("commit")),
        harness_config=_text(harness.get("config_sha256")),
        host=_text(environment.get("host")),
        gpus=_gpus(environment.get("gpus")),
        driver=_text(environment.get("driver")),
        cuda=_text(environment.get("cuda")),
        framework=_join(_text(framework.get("name")), _text(framework.get("version"))),
        framework_commit=_text(framework.get("commit")),
        started_at=started,
        finished_at=finished,
        duration=_duration(started, finished),
        setting=_text(summary.get("setting")),
        claims=[c for c in _list(summary.get("claims")) if isinstance(c, str)],
        notes=_text(summary.get("notes")),
        artifacts=[
            {
                "name": _text(a.get("name")),
                "sha256": _text(a.get("sha256")),
                "bytes": a.get("bytes") if type(a.get("bytes")) is int else None,
            }
            for a in _list(summary.get("artifacts"))
            if isinstance(a, dict)
        ],
        groups=groups,
        chart=stale_read_chart(groups, chart_id=f"{anchor}-chart", run_id=run_id),
        stored_rows=stored_rows,
        trials_csv_url=reverse("imports_api:run-trials", args=[run_id])
        if stored_rows and run_id
        else "",
        api_url=reverse("imports_api:run-detail", args=[run_id]) if stored is not None else "",
        extensions=[
            (key, _short(value)) for key, value in sorted(summary.items()) if key.startswith("x-")
        ],
    )


def _stored_rows(runs: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Rows stored per scenario, for the runs whose stored file is the one summarised.

    A run present with no scenario rows (restored from a document) maps to an empty dict.
    """
    wanted = dict(runs)
    result: dict[str, dict[str, int]] = {}
    for run_id, sha in ReproductionRun.objects.filter(run_id__in=list(wanted)).values_list(
        "run_id", "file_sha256"
    ):
        if sha == wanted.get(run_id):
            result[run_id] = {}
    rows = ReproductionScenario.objects.filter(run__run_id__in=list(result)).values_list(
        "run__run_id", "scenario_id", "stored_rows"
    )
    for run_id, scenario_id, count in rows:
        result[run_id][scenario_id] = count
    return result


def _groups(stats: list[ScenarioStats]) -> list[BackendGroup]:
    """Scenarios by backend (in order of first appearance), unmitigated ones first."""
    by_backend: dict[str, list[ScenarioStats]] = {}
    for scenario in stats:
        by_backend.setdefault(scenario.backend, []).append(scenario)
    return [
        BackendGroup(
            backend=backend,
            rows=[_row(s) for s in sorted(scenarios, key=lambda s: (s.mitigated, s.position))],
        )
        for backend, scenarios in by_backend.items()
    ]


def _row(stats: ScenarioStats) -> ScenarioRow:
    rate = stats.stale_read
    return ScenarioRow(
        stats=stats,
        rate_text=percent(rate.rate) if rate else "–",
        interval_text=_interval(rate.lower, rate.upper) if rate else "–",
        mitigations_text=", ".join(m.replace("_", " ") for m in stats.mitigations) or "none",
        outcome_text=stats.outcome.replace("_", " ") or "—",
    )


def _interval(lower: float, upper: float) -> str:
    """``0.44–12.88 %``"""
    return f"{lower * 100:.2f}–{upper * 100:.2f} %"


# --- the chart ----------------------------------------------------------------------------

WIDTH = 680
LABEL_WIDTH = 250
VALUE_WIDTH = 78
PLOT_LEFT = LABEL_WIDTH
PLOT_WIDTH = WIDTH - LABEL_WIDTH - VALUE_WIDTH
LEGEND_HEIGHT = 30
GROUP_HEIGHT = 22
ROW_HEIGHT = 20
AXIS_HEIGHT = 30
NICE_MAXIMA = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0)
LABEL_CHARACTERS = 36


def axis_maximum(uppers: list[float]) -> float:
    """The smallest round scale end that holds every interval."""
    top = max(uppers, default=0.0)
    return next((m for m in NICE_MAXIMA if top <= m), 1.0)


def stale_read_chart(groups: list[BackendGroup], *, chart_id: str, run_id: str) -> SafeString:
    """A dot-and-whisker chart: one row per scenario, grouped by backend.

    Unmitigated scenarios are red circles, mitigated ones blue squares (shape and colour,
    so the difference survives greyscale and colour blindness); whiskers are the 95 %
    Wilson interval.
    """
    rows = [row for group in groups for row in group.rows]
    if not rows:
        return mark_safe("")
    maximum = axis_maximum([r.stats.stale_read.upper for r in rows if r.stats.stale_read])
    ticks = [maximum * i / 5 for i in range(6)]
    plot_top = LEGEND_HEIGHT
    plot_height = len(groups) * GROUP_HEIGHT + len(rows) * ROW_HEIGHT
    height = plot_top + plot_height + AXIS_HEIGHT

    def x(value: float) -> float:
        return PLOT_LEFT + PLOT_WIDTH * min(value, maximum) / maximum

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" '
        f'font-family="system-ui, sans-serif" font-size="12" fill="{TEXT_COLOUR}">',
        f'<title id="{chart_id}-title">Stale-read rate by scenario, run {escape(run_id)}</title>',
        f'<desc id="{chart_id}-desc">{escape(_description(rows))}</desc>',
    ]
    parts += _legend()
    for tick in ticks:
        tx = _f(x(tick))
        parts.append(
            f'<line x1="{tx}" y1="{plot_top}" x2="{tx}" y2="{plot_top + plot_height}" '
            f'stroke="{GRID_COLOUR}" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{tx}" y="{plot_top + plot_height + 16}" text-anchor="middle" '
            f'fill="{MUTED_COLOUR}">{escape(_tick_text(tick, maximum))}</text>'
        )
    parts.append(
        f'<text x="{_f(PLOT_LEFT + PLOT_WIDTH / 2)}" y="{height - 2}" text-anchor="middle" '
        f'fill="{MUTED_COLOUR}">stale-read rate (checksum mismatches / trials), 95 % Wilson '
        "interval</text>"
    )
    y = plot_top
    for group in groups:
        parts.append(
            f'<text x="4" y="{y + 15}" font-weight="bold">{escape(group.backend or "—")}</text>'
        )
        y += GROUP_HEIGHT
        for row in group.rows:
            parts += _scenario_row(row, y + ROW_HEIGHT / 2, x)
            y += ROW_HEIGHT
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text in it is escaped above


def _legend() -> list[str]:
    return [
        f'<circle cx="{PLOT_LEFT + 6}" cy="14" r="4.5" fill="{UNMITIGATED_COLOUR}"/>',
        f'<text x="{PLOT_LEFT + 16}" y="18">unmitigated</text>',
        f'<rect x="{PLOT_LEFT + 106}" y="10" width="8" height="8" fill="{MITIGATED_COLOUR}"/>',
        f'<text x="{PLOT_LEFT + 120}" y="18">mitigated</text>',
    ]


def _scenario_row(row: ScenarioRow, centre: float, x) -> list[str]:
    stats = row.stats
    colour = MITIGATED_COLOUR if stats.mitigated else UNMITIGATED_COLOUR
    label = stats.scenario_id
    if len(label) > LABEL_CHARACTERS:
        label = label[: LABEL_CHARACTERS - 1] + "…"
    cy = _f(centre)
    parts = [
        "<g>",
        f"<title>{escape(_row_title(row))}</title>",
        f'<text x="{PLOT_LEFT - 8}" y="{_f(centre + 4)}" text-anchor="end">{escape(label)}</text>',
    ]
    rate = stats.stale_read
    if rate is None or rate.rate is None:
        parts.append(
            f'<text x="{PLOT_LEFT + 6}" y="{_f(centre + 4)}" fill="{MUTED_COLOUR}">'
            "no rate (no trials)</text>"
        )
    else:
        low, high, point = _f(x(rate.lower)), _f(x(rate.upper)), x(rate.rate)
        parts += [
            f'<line x1="{low}" y1="{cy}" x2="{high}" y2="{cy}" stroke="{colour}" '
            'stroke-width="2"/>',
            f'<line x1="{low}" y1="{_f(centre - 4)}" x2="{low}" y2="{_f(centre + 4)}" '
            f'stroke="{colour}" stroke-width="1.5"/>',
            f'<line x1="{high}" y1="{_f(centre - 4)}" x2="{high}" y2="{_f(centre + 4)}" '
            f'stroke="{colour}" stroke-width="1.5"/>',
        ]
        if stats.mitigated:
            parts.append(
                f'<rect x="{_f(point - 4)}" y="{_f(centre - 4)}" width="8" height="8" '
                f'fill="{colour}"/>'
            )
        else:
            parts.append(f'<circle cx="{_f(point)}" cy="{cy}" r="4.5" fill="{colour}"/>')
        parts.append(
            f'<text x="{WIDTH - VALUE_WIDTH + 8}" y="{_f(centre + 4)}">'
            f"{escape(row.rate_text)}</text>"
        )
    parts.append("</g>")
    return parts


def _row_title(row: ScenarioRow) -> str:
    stats = row.stats
    if stats.stale_read is None:
        return f"{stats.scenario_id}: no rate"
    return (
        f"{stats.scenario_id} ({stats.backend}, mitigations: {row.mitigations_text}): "
        f"{stats.checksum_mismatches:,} of {stats.trials:,} trials had a checksum mismatch, "
        f"{row.rate_text} (95 % CI {row.interval_text})"
    )


def _description(rows: list[ScenarioRow]) -> str:
    return "; ".join(_row_title(row) for row in rows) + (
        f". Intervals are 95 % Wilson score intervals (z = {Z_95})."
    )


def _tick_text(value: float, maximum: float) -> str:
    digits = 1 if maximum <= 0.02 else 0
    if maximum <= 0.005:
        digits = 2
    return f"{value * 100:.{digits}f} %"


def _f(value: float) -> str:
    return f"{value:.1f}"


# --- reading summaries defensively --------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:199] + "…"


def _gpus(value: Any) -> list[str]:
    """``["NVIDIA H200, 141 GiB (prefill)", …]``"""
    result = []
    for gpu in _list(value):
        if not isinstance(gpu, dict):
            continue
        text = _text(gpu.get("model")) or "GPU"
        memory = gpu.get("memory_gib")
        if type(memory) in (int, float):
            text += f", {memory:g} GiB"
        role = _text(gpu.get("role"))
        if role:
            text += f" ({role})"
        result.append(text)
    return result


def _timestamp(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return moment.astimezone(dt.UTC) if moment.tzinfo else None


def _duration(start: dt.datetime | None, end: dt.datetime | None) -> str:
    if start is None or end is None or end < start:
        return ""
    seconds = int((end - start).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"
