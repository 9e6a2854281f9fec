"""What one pass over a results file learned: the run and its scenarios, without the rows."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from .format import parse_timestamp
from .scanner import Scan

# A scenario's build fields -> the fields of an environment.backends entry.
_BUILD = {"backend_version": "version", "backend_commit": "commit", "backend_purl": "purl"}


def backend_build(scenario: dict[str, Any], build: dict[str, Any] | None) -> dict[str, str]:
    """A scenario's backend version, commit and Package URL: its own where it states them,
    else its environment's (``build``). Version, commit and URL are taken together from one
    place, never mixed: a scenario that states its own version is another build."""
    own = any(key in scenario for key in _BUILD)
    source = scenario if own or build is None else {k: build.get(v) for k, v in _BUILD.items()}
    return {key: _text_or_empty(source.get(key)) for key in _BUILD}


def backend_builds(header: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The environment's builds by backend name (repro-results/1.1; {} in a /1 file)."""
    environment = header.get("environment")
    entries = environment.get("backends") if isinstance(environment, dict) else None
    builds: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("backend"), str):
            builds.setdefault(entry["backend"], entry)
    return builds


@dataclass
class ScenarioSummary:
    """One scenario of a run, as the file states it; `x-` keys kept verbatim in `extra`."""

    id: str
    backend: str
    mitigations: list[str]
    free_list_order: str
    write_delay_us: int
    seed: int
    trials: int
    aborts_injected: int
    aborts_mid_transfer: int
    reuse_while_in_flight: int
    late_writes_landed: int
    checksum_mismatches: int
    wrong_outputs: int
    timeout_forced_releases: int
    stale_generation_dropped: int
    held_slots_peak: int
    rejected_backpressure: int
    outcome: str
    extra: dict[str, Any]
    # repro-results/1.1: the backend's build, as the scenario or the environment states it
    # ("" when neither does)
    backend_version: str = ""
    backend_commit: str = ""
    backend_purl: str = ""

    @classmethod
    def from_dict(
        cls, scenario: dict[str, Any], build: dict[str, Any] | None = None
    ) -> ScenarioSummary:
        """Build from a scenario object of a file that `parse_results` accepted; ``build``:
        the environment's entry for its backend (repro-results/1.1), if any."""
        known = {f.name for f in fields(cls)} - {"extra", *_BUILD}
        values: dict[str, Any] = {key: scenario[key] for key in known}
        values["mitigations"] = list(scenario["mitigations"])
        values.update(backend_build(scenario, build))
        extra = {key: value for key, value in scenario.items() if key.startswith("x-")}
        return cls(**values, extra=extra)

    @property
    def mitigated(self) -> bool:
        return bool(self.mitigations)


@dataclass
class ParsedRun:
    """What one pass over a results file learned, without its trial rows.

    `header` is the file minus `trials`. Returned whenever the file is a readable
    `repro-results/1` object, so that a report can name the run; store it only when
    `parse_results` returned no problems alongside it.
    """

    header: dict[str, Any]
    run_id: str
    case: str
    claims: list[str]
    scenarios: list[dict[str, Any]]
    trial_counts: dict[str, int]
    has_trials: bool

    @property
    def scenario_summaries(self) -> list[ScenarioSummary]:
        builds = backend_builds(self.header)
        return [
            ScenarioSummary.from_dict(scenario, builds.get(scenario.get("backend", "")))
            for scenario in self.scenarios
        ]

    @property
    def framework(self) -> dict[str, str]:
        """The framework the run drove: name, version and commit ("" where not stated)."""
        environment = self.header.get("environment")
        framework = environment.get("framework") if isinstance(environment, dict) else None
        if not isinstance(framework, dict):
            framework = {}
        return {key: _text_or_empty(framework.get(key)) for key in ("name", "version", "commit")}

    @property
    def started_at(self) -> datetime | None:
        return parse_timestamp(self.header.get("started_at"))

    @property
    def finished_at(self) -> datetime | None:
        return parse_timestamp(self.header.get("finished_at"))

    @classmethod
    def from_scan(cls, scan: Scan) -> ParsedRun:
        header = scan.header
        scenarios = header.get("scenarios")
        scenarios = (
            [s for s in scenarios if isinstance(s, dict)] if isinstance(scenarios, list) else []
        )
        trial_counts: dict[str, int] = {}
        for scenario in scenarios:
            name = scenario.get("id")
            if type(name) is str and name not in trial_counts:
                trial_counts[name] = scan.tallies.rows_of(name)
        claims = header.get("claims")
        claims = (
            list(dict.fromkeys(c for c in claims if type(c) is str))
            if isinstance(claims, list)
            else []
        )
        return cls(
            header=header,
            run_id=_text_or_empty(header.get("run_id")),
            case=_text_or_empty(header.get("case")),
            claims=claims,
            scenarios=scenarios,
            trial_counts=trial_counts,
            has_trials=scan.rows_read > 0,
        )


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""
