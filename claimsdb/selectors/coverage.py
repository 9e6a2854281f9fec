"""The coverage matrix of a case (docs/coverage.md): for each component the case states
something about, and each backend its runs ran, the versions and ranges the record states,
the versions its runs actually tested — by mitigation set, with runs reproduced and not
reproduced and the stale-read rate with its Wilson interval — and the gaps, in words.

It is built from the case document a reader sees (its ``affected`` list and the runs it
lists) and two queries: the components it names, and one aggregate over what the runs' scenarios
ran (``RunComponent`` joined to ``ReproductionScenario``), grouped by component, version
and mitigation set. No trial row is read, and the number of queries does not grow with the
number of runs, scenarios, ranges or components.

The matrix reads lab evidence: it says what was tested, never grades impact, and changes
nothing in the record.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, F, Q, Sum, TextField, Value, When

from claimsdb.importers.stats import Rate, percent
from claimsdb.models import Component, RunComponent
from claimsdb.versions import FIRST_VERSION, in_ranges, parse_version, sort_key

MITIGATION_NONE = "none (unmitigated)"
STATUS_WORDS = {
    "affected": "affected",
    "fixed": "fixed",
    "not_affected": "not affected",
    "under_investigation": "under investigation",
}


@dataclass(frozen=True)
class StatedEntry:
    """One ``affected`` entry of the case, in words."""

    status: str
    ranges: list[dict[str, Any]]
    ranges_text: list[str]
    versions: list[str]
    claims: list[str]
    note: str

    @property
    def status_label(self) -> str:
        return STATUS_WORDS.get(self.status, self.status)

    @property
    def versions_text(self) -> str:
        """The versions and ranges stated, or that none are."""
        parts = [*self.ranges_text, *self.versions]
        return "; ".join(parts) if parts else "no versions given"

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ranges": self.ranges,
            "ranges_text": self.ranges_text,
            "versions": self.versions,
            "claims": self.claims,
            "note": self.note,
        }


@dataclass
class TestedGroup:
    """What the case's runs tested of one component at one version, with one mitigation
    set: counted from the scenarios that ran it."""

    role: str
    name: str  # as the results files write it
    version: str  # "" when the files state none
    mitigations: list[str]
    runs: int
    runs_reproduced: int
    runs_not_reproduced: int
    scenarios: int
    reproduced: int
    not_reproduced: int
    trials: int
    checksum_mismatches: int
    standing: str = ""  # what the record states of this version, in words

    @property
    def other(self) -> int:
        """Scenarios inconclusive or in error."""
        return self.scenarios - self.reproduced - self.not_reproduced

    @property
    def mitigations_text(self) -> str:
        return ", ".join(self.mitigations) if self.mitigations else MITIGATION_NONE

    @property
    def stale_read(self) -> Rate:
        return Rate.of(min(self.checksum_mismatches, self.trials), self.trials)

    @property
    def rate_text(self) -> str:
        return percent(self.stale_read.rate)

    @property
    def interval_text(self) -> str:
        """``0.44–12.88 %``, as the record page's scenario tables write it."""
        rate = self.stale_read
        return f"{rate.lower * 100:.2f}–{rate.upper * 100:.2f} %"

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "name": self.name,
            "version": self.version or None,
            "mitigations": self.mitigations,
            "runs": self.runs,
            "runs_reproduced": self.runs_reproduced,
            "runs_not_reproduced": self.runs_not_reproduced,
            "scenarios": self.scenarios,
            "scenarios_reproduced": self.reproduced,
            "scenarios_not_reproduced": self.not_reproduced,
            "scenarios_other": self.other,
            "stale_read_rate": self.stale_read.as_dict(),
            "standing": self.standing,
        }


@dataclass
class CoverageRow:
    """One component (or one backend name no component matched) of the matrix."""

    label: str  # the component's name, or the backend as the files write it
    component: str = ""  # its key ("" for an unmatched name)
    version_scheme: str = ""
    purl: str = ""
    stated: list[StatedEntry] = field(default_factory=list)
    tested: list[TestedGroup] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    # runs that tested it, and that reproduced on it: each run counted once, however many
    # of its groups it is in
    runs: int = 0
    runs_reproduced: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "component": self.component or None,
            "name": self.label,
            "version_scheme": self.version_scheme or None,
            "purl": self.purl or None,
            "stated": [s.as_dict() for s in self.stated],
            "runs": self.runs,
            "runs_reproduced": self.runs_reproduced,
            "tested": [g.as_dict() for g in self.tested],
            "gaps": self.gaps,
        }


@dataclass
class CaseCoverage:
    """The coverage matrix of one case as one reader sees it."""

    case: str
    rows: list[CoverageRow]
    runs: int  # the runs the document lists

    @property
    def gaps(self) -> list[str]:
        return [gap for row in self.rows for gap in row.gaps]

    @property
    def tested_anything(self) -> bool:
        return any(row.tested for row in self.rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "runs": self.runs,
            "components": [row.as_dict() for row in self.rows],
            "gaps": self.gaps,
        }


# --- building it --------------------------------------------------------------------------


@dataclass(frozen=True)
class _ComponentFacts:
    key: str
    name: str
    purl: str
    version_scheme: str


def _component_facts(
    stated_keys: list[str], tested_pks: set[int], *, released: bool
) -> dict[int, _ComponentFacts]:
    """The components the matrix names, by primary key: as they now are, or (``released``)
    as the latest release published them — a component never released is left out, and a
    draft's name never shows to the public."""
    found = Component.objects.filter(Q(key__in=stated_keys) | Q(pk__in=tested_pks))
    if not released:
        return {
            c.pk: _ComponentFacts(c.key, c.name, c.purl, c.version_scheme)
            for c in found.only("key", "name", "purl", "version_scheme")
        }
    from claimsdb import public  # the released record

    keys = dict(found.values_list("pk", "key"))
    documents = public.released_documents("component", set(keys.values()))
    return {
        pk: _ComponentFacts(
            key,
            str(documents[key].get("name", key)),
            str(documents[key].get("purl", "")),
            str(documents[key].get("version_scheme", "")),
        )
        for pk, key in keys.items()
        if key in documents
    }


def case_coverage(document: dict[str, Any], *, released: bool = False) -> CaseCoverage:
    """The coverage matrix of the case ``document`` as its reader sees it: the working
    state, or (``released``) the released record, whose components are read as released
    too. Three queries (four when released)."""
    entries = [e for e in document.get("affected") or [] if isinstance(e, dict)]
    run_ids = [
        r["run_id"]
        for r in document.get("reproduction_runs") or []
        if isinstance(r, dict) and isinstance(r.get("run_id"), str)
    ]
    groups = _tested_groups(document["key"], run_ids)
    totals = _run_totals(document["key"], run_ids)
    stated_keys = [key for e in entries if isinstance(key := e.get("component"), str)]
    tested_pks = {pk for pk, _ in groups if pk is not None}
    components = _component_facts(stated_keys, tested_pks, released=released)
    by_key = {c.key: c for c in components.values()}

    rows: dict[str, CoverageRow] = {}
    for entry in entries:
        key = entry.get("component")
        if not isinstance(key, str):
            continue
        component = by_key.get(key)
        row = rows.get(key)
        if row is None:
            row = rows[key] = CoverageRow(
                label=component.name if component else key,
                component=key,
                version_scheme=component.version_scheme if component else "",
                purl=component.purl if component else "",
            )
        row.stated.append(_stated(entry))
    stated_components = set(rows)
    for (pk, unmatched_name), tested in groups.items():
        if pk is not None and pk in components:
            component = components[pk]
            if component.key not in stated_components and all(
                g.role == RunComponent.Role.FRAMEWORK for g in tested
            ):
                continue  # a framework the case says nothing about: not a row of its own
            row = rows.get(component.key)
            if row is None:
                row = rows[component.key] = CoverageRow(
                    label=component.name,
                    component=component.key,
                    version_scheme=component.version_scheme,
                    purl=component.purl,
                )
            row.tested.extend(tested)
            row.runs, row.runs_reproduced = totals.get((pk, ""), (0, 0))
        elif pk is None:
            row = rows.setdefault(f"\0{unmatched_name}", CoverageRow(label=unmatched_name))
            row.tested.extend(tested)
            row.runs, row.runs_reproduced = totals.get((None, unmatched_name), (0, 0))
    for row in rows.values():
        row.tested.sort(key=lambda g: _group_order(row.version_scheme, g))
        for group in row.tested:
            group.standing = _standing(row, group.version)
        row.gaps = _gaps(row, stated=row.component in stated_components)
    # the record's order first, then the other components tested, then unmatched names
    order = {key: index for index, key in enumerate(rows) if key in stated_components}
    ordered = sorted(
        rows.values(),
        key=lambda r: (
            order.get(r.component, len(order)),
            not r.component,
            r.label.casefold(),
        ),
    )
    return CaseCoverage(case=document["key"], rows=ordered, runs=len(run_ids))


def _tested_groups(
    case_key: str, run_ids: list[str]
) -> dict[tuple[int | None, str], list[TestedGroup]]:
    """One aggregate query: what the runs' scenarios ran, grouped by component (or, for an
    unmatched name, by the name), role, version and mitigation set."""
    if not run_ids:
        return {}
    reproduced = Q(scenario__outcome="reproduced")
    not_reproduced = Q(scenario__outcome="not_reproduced")
    rows = (
        RunComponent.objects.filter(run__case__key=case_key, run__run_id__in=run_ids)
        .values("component_id", "role", "name", "version", "scenario__mitigations")
        .annotate(
            runs=Count("run_id", distinct=True),
            runs_reproduced=Count("run_id", distinct=True, filter=reproduced),
            runs_not_reproduced=Count("run_id", distinct=True, filter=not_reproduced),
            scenarios=Count("id"),
            reproduced=Count("id", filter=reproduced),
            not_reproduced=Count("id", filter=not_reproduced),
            trials=Sum("scenario__trials"),
            mismatches=Sum("scenario__checksum_mismatches"),
        )
        .order_by()
    )
    groups: dict[tuple[int | None, str], list[TestedGroup]] = defaultdict(list)
    for row in rows:
        pk = row["component_id"]
        mitigations = row["scenario__mitigations"]
        groups[(pk, "" if pk is not None else row["name"])].append(
            TestedGroup(
                role=row["role"],
                name=row["name"],
                version=row["version"],
                mitigations=sorted(mitigations) if isinstance(mitigations, list) else [],
                runs=row["runs"],
                runs_reproduced=row["runs_reproduced"],
                runs_not_reproduced=row["runs_not_reproduced"],
                scenarios=row["scenarios"],
                reproduced=row["reproduced"],
                not_reproduced=row["not_reproduced"],
                trials=int(row["trials"] or 0),
                checksum_mismatches=int(row["mismatches"] or 0),
            )
        )
    return groups


def _run_totals(case_key: str, run_ids: list[str]) -> dict[tuple[int | None, str], tuple[int, int]]:
    """One aggregate query: the distinct runs that ran each component (or unmatched name),
    and those that reproduced on it."""
    if not run_ids:
        return {}
    rows = (
        RunComponent.objects.filter(run__case__key=case_key, run__run_id__in=run_ids)
        .annotate(
            unmatched=Case(
                When(component__isnull=True, then=F("name")),
                default=Value(""),
                output_field=TextField(),
            )
        )
        .values("component_id", "unmatched")
        .annotate(
            runs=Count("run_id", distinct=True),
            reproduced=Count("run_id", distinct=True, filter=Q(scenario__outcome="reproduced")),
        )
        .order_by()
    )
    return {
        (row["component_id"], row["unmatched"]): (row["runs"], row["reproduced"]) for row in rows
    }


def _group_order(scheme: str, group: TestedGroup) -> tuple[Any, ...]:
    unstated = group.version == ""
    return (group.role, unstated, sort_key(scheme, group.version), len(group.mitigations),
            group.mitigations, group.name)  # fmt: skip


# --- in words -----------------------------------------------------------------------------


def _stated(entry: dict[str, Any]) -> StatedEntry:
    ranges = [r for r in entry.get("ranges") or [] if isinstance(r, dict)]
    return StatedEntry(
        status=str(entry.get("status", "")),
        ranges=ranges,
        ranges_text=[ranges_text(r.get("events") or []) for r in ranges],
        versions=[v for v in entry.get("versions") or [] if isinstance(v, str)],
        claims=[c for c in entry.get("claims") or [] if isinstance(c, str)],
        note=str(entry.get("note") or ""),
    )


def ranges_text(events: list[Any]) -> str:
    """A range's events in words: ``≥ 0.3.0, < 0.3.8``; ``all versions ≤ 1.2``."""
    parts = []
    for event in events:
        if not isinstance(event, dict) or len(event) != 1:
            continue
        ((name, value),) = event.items()
        if name == "introduced":
            parts.append("all versions" if value == FIRST_VERSION else f"≥ {value}")
        elif name == "fixed":
            parts.append(f"< {value} (fixed in {value})")
        elif name == "last_affected":
            parts.append(f"≤ {value}")
    return ", ".join(parts) if parts else "no events"


def _fixed_versions(entries: list[StatedEntry]) -> list[str]:
    """The versions in which a stated range ends with a fix."""
    return [
        value
        for entry in entries
        for range_ in entry.ranges
        for event in range_.get("events") or []
        if isinstance(event, dict)
        for name, value in event.items()
        if name == "fixed" and isinstance(value, str)
    ]


def _standing(row: CoverageRow, version: str) -> str:
    """What the record states of ``version`` of the row's component, in words."""
    if not row.stated:
        return "the record states nothing about it"
    if not version:
        return "version not stated by the run"
    scheme = row.version_scheme
    if scheme and parse_version(scheme, version) is None:
        return f"not comparable: not a version of the {scheme} scheme"
    said = []
    for entry in row.stated:
        if version in entry.versions:
            said.append(f"stated {entry.status_label}")
        elif entry.ranges and scheme and in_ranges(scheme, version, entry.ranges):
            said.append(f"in a range stated {entry.status_label}")
    fixed = [
        f
        for f in _fixed_versions(row.stated)
        if scheme and (v := parse_version(scheme, version)) is not None
        and (b := parse_version(scheme, f)) is not None and not v < b
    ]  # fmt: skip
    if fixed and not any(s.endswith("affected") and "not" not in s for s in said):
        said.append(f"at or after the stated fix ({', '.join(fixed)})")
    if said:
        return "; ".join(dict.fromkeys(said))
    if not any(e.ranges or e.versions for e in row.stated):
        return "the record gives no versions"
    return "outside the stated ranges and versions"


def _gaps(row: CoverageRow, *, stated: bool) -> list[str]:
    """What is stated but not tested, or tested and not stated, in words."""
    name = row.label
    tested = row.tested
    reproduced = sum(g.reproduced for g in tested)
    runs = row.runs
    gaps: list[str] = []
    if not row.component:
        return [f"{name}: tested in {_runs(runs)}, but matches no component"]
    if not stated:
        return [f"{name}: tested in {_runs(runs)}, the record states nothing about it"]
    if not tested:
        return [f"{name}: no runs"]
    statuses = {entry.status for entry in row.stated}
    scheme = row.version_scheme
    if "affected" in statuses and reproduced == 0:
        gaps.append(f"{name}: stated affected, never reproduced ({_runs(runs)})")
    if "not_affected" in statuses and reproduced:
        gaps.append(f"{name}: stated not affected, but reproduced in {_runs(row.runs_reproduced)}")
    versions = [g.version for g in tested if g.version]
    if not versions:
        gaps.append(f"{name}: tested only at versions the runs do not state ({_runs(runs)})")
    for fix in dict.fromkeys(_fixed_versions(row.stated)):
        at_or_after = [g for g in tested if g.version and _not_before(scheme, g.version, fix)]
        if not at_or_after:
            gaps.append(f"{name} ≥ {fix}: stated fixed, not tested")
        elif any(g.reproduced for g in at_or_after):
            hit = [g for g in at_or_after if g.reproduced]
            shown = ", ".join(dict.fromkeys(g.version for g in hit))
            scenarios = sum(g.reproduced for g in hit)
            gaps.append(
                f"{name} {shown}: stated fixed (in {fix}), but reproduced in {scenarios} "
                f"scenario{'' if scenarios == 1 else 's'}"
            )
    for entry in row.stated:
        if entry.status == "affected" and entry.ranges and scheme:
            if not any(in_ranges(scheme, v, entry.ranges) for v in versions):
                gaps.append(f"{name} {'; '.join(entry.ranges_text)}: stated affected, not tested")
        untested = [v for v in entry.versions if v not in versions]
        if untested and entry.status in ("affected", "fixed", "not_affected"):
            gaps.append(f"{name} {', '.join(untested)}: stated {entry.status_label}, not tested")
    return gaps


def _not_before(scheme: str, version: str, bound: str) -> bool:
    v, b = parse_version(scheme, version), parse_version(scheme, bound)
    return v is not None and b is not None and not v < b


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


# --- a component's runs (its page) ----------------------------------------------------------


@dataclass
class ComponentRunsRow:
    """What the runs of one case tested of a component at one version (all mitigations)."""

    case: str
    role: str
    version: str
    runs: int
    runs_reproduced: int
    scenarios: int
    reproduced: int
    trials: int
    checksum_mismatches: int

    @property
    def stale_read(self) -> Rate:
        return Rate.of(min(self.checksum_mismatches, self.trials), self.trials)

    @property
    def rate_text(self) -> str:
        return percent(self.stale_read.rate)

    @property
    def interval_text(self) -> str:
        rate = self.stale_read
        return f"{rate.lower * 100:.2f}–{rate.upper * 100:.2f} %"

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "role": self.role,
            "version": self.version or None,
            "runs": self.runs,
            "runs_reproduced": self.runs_reproduced,
            "scenarios": self.scenarios,
            "scenarios_reproduced": self.reproduced,
            "stale_read_rate": self.stale_read.as_dict(),
        }


@dataclass
class ComponentRuns:
    """The runs that ran a component, by case and version, as one reader may see them."""

    component: str
    rows: list[ComponentRunsRow]
    runs: int  # distinct runs over all the rows

    @property
    def versions(self) -> list[str]:
        """The versions tested, in the rows' order (the component's scheme), unstated last."""
        return list(dict.fromkeys(r.version for r in self.rows if r.version))

    def as_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "runs": self.runs,
            "versions_tested": self.versions,
            "by_case_and_version": [row.as_dict() for row in self.rows],
        }


def component_runs(component: Component, *, released: bool) -> ComponentRuns:
    """The runs on ``component``: for readers of the working state every imported run; for
    the public (``released``) only the runs the released documents of their cases list.

    A fixed number of queries (two, four for the public), whatever the number of runs,
    cases and versions; no trial row is read."""
    relations = RunComponent.objects.filter(component=component)
    if released:
        from claimsdb import public  # the released record; the live tables otherwise

        case_keys = set(relations.values_list("run__case__key", flat=True).distinct())
        documents = public.released_documents("case", case_keys)
        run_ids = [
            run["run_id"]
            for document in documents.values()
            if document.get("status") != "withdrawn"
            for run in document.get("reproduction_runs") or []
            if isinstance(run, dict) and isinstance(run.get("run_id"), str)
        ]
        relations = relations.filter(run__run_id__in=run_ids)
    reproduced = Q(scenario__outcome="reproduced")
    rows = [
        ComponentRunsRow(
            case=row["run__case__key"],
            role=row["role"],
            version=row["version"],
            runs=row["runs"],
            runs_reproduced=row["runs_reproduced"],
            scenarios=row["scenarios"],
            reproduced=row["reproduced"],
            trials=int(row["trials"] or 0),
            checksum_mismatches=int(row["mismatches"] or 0),
        )
        for row in relations.values("run__case__key", "role", "version")
        .annotate(
            runs=Count("run_id", distinct=True),
            runs_reproduced=Count("run_id", distinct=True, filter=reproduced),
            scenarios=Count("id"),
            reproduced=Count("id", filter=reproduced),
            trials=Sum("scenario__trials"),
            mismatches=Sum("scenario__checksum_mismatches"),
        )
        .order_by()
    ]
    scheme = component.version_scheme
    rows.sort(key=lambda r: (r.case, r.role, r.version == "", sort_key(scheme, r.version)))
    total = relations.aggregate(runs=Count("run_id", distinct=True))["runs"]
    return ComponentRuns(component=component.key, rows=rows, runs=int(total or 0))
