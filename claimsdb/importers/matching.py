"""Which components a run bears on: its framework and each scenario's backend, matched to
component records by Package URL, then by name or alias (docs/coverage.md).

A name is matched exactly as ``ComponentName`` keeps it (case-folded, spaces collapsed), and
a Package URL by its type, namespace and name (its version, qualifiers and subpath are the
build, not the component). Nothing is guessed: a name no active component bears, or one that
two components bear, stays unmatched, and the import report lists it with the reason. Two
queries per file, whatever its number of scenarios. ``rematch_stored`` (``manage.py
match_runs``) matches the stored runs again when components change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Q
from packageurl import PackageURL

from claimsdb.choices import RecordStatus
from claimsdb.models import Component, ComponentName, RunComponent
from claimsdb.models.components import fold_name

from .repro import ParsedRun

FRAMEWORK = RunComponent.Role.FRAMEWORK.value
BACKEND = RunComponent.Role.BACKEND.value
OTHER_PREFIX = "other:"


@dataclass(frozen=True)
class Named:
    """A framework or backend as a results file names it, with the build it states."""

    role: str
    name: str
    version: str = ""
    commit: str = ""
    purl: str = ""

    @property
    def lookup_name(self) -> str:
        """The name looked up among components' names and aliases: a backend
        ``other:ucx`` is looked up as ``ucx``."""
        name = self.name
        if self.role == BACKEND and name.startswith(OTHER_PREFIX):
            name = name[len(OTHER_PREFIX) :]
        return fold_name(name)


@dataclass
class Match:
    """What one name (with its build) of a run matched, and the scenarios that ran it.

    ``component`` is the key of the component matched, or "" with the ``reason`` why none
    was; ``path`` is where the file names it first."""

    role: str
    name: str
    version: str
    commit: str
    purl: str
    path: str
    component: str = ""
    component_pk: int | None = None
    matched_by: str = ""
    reason: str = ""
    scenarios: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["component_pk"]
        return data


def scenario_names(parsed: ParsedRun) -> list[tuple[str, int, Named]]:
    """(scenario id, position, what it ran) for each scenario's framework and backend."""
    framework = parsed.framework
    result = []
    for position, summary in enumerate(parsed.scenario_summaries):
        if framework["name"].strip():
            result.append(
                (
                    summary.id,
                    position,
                    Named(FRAMEWORK, framework["name"], framework["version"], framework["commit"]),
                )
            )
        result.append(
            (
                summary.id,
                position,
                Named(
                    BACKEND,
                    summary.backend,
                    summary.backend_version,
                    summary.backend_commit,
                    summary.backend_purl,
                ),
            )
        )
    return result


def match_run(parsed: ParsedRun) -> list[Match]:
    """Every distinct name and build of the run with what it matched, in file order."""
    named = scenario_names(parsed)
    by_purl = _components_by_purl({n.purl for _, _, n in named if n.purl})
    by_name = _components_by_name({n.lookup_name for _, _, n in named})
    matches: dict[Named, Match] = {}
    for scenario_id, position, what in named:
        match = matches.get(what)
        if match is None:
            path = (
                "environment.framework.name"
                if what.role == FRAMEWORK
                else f"scenarios[{position}].backend"
            )
            match = Match(what.role, what.name, what.version, what.commit, what.purl, path)
            _decide(match, what, by_purl, by_name)
            matches[what] = match
        match.scenarios.append(scenario_id)
    return list(matches.values())


@dataclass
class Rematched:
    """What ``rematch_stored`` did: rows looked at, rows that now name a component they did
    not (or another one), and rows that no longer name one."""

    rows: int = 0
    matched: int = 0
    unmatched: int = 0
    examples: list[str] = field(default_factory=list)


# What re-matching reads of a stored row (and names it by in its report).
REMATCH_FIELDS = (
    "role",
    "name",
    "version",
    "commit",
    "purl",
    "component_id",
    "matched_by",
    "run__run_id",
    "scenario__scenario_id",
)


def rematch_stored(*, batch_size: int = 1000, write: bool = True) -> Rematched:
    """Match every stored run's frameworks and backends again against today's components,
    by the rules an import follows (``_decide``): a component added, given an alias or a
    Package URL after a run was imported now claims it; one withdrawn, or a name that now
    two components bear, lets it go. The rows keep the name, build and Package URL the file
    stated, so the file is not needed. Import reports are not changed: they say what
    matched when the run was imported.

    Walks the rows along their primary key, ``batch_size`` at a time: two lookups and at
    most one update per batch, each batch in a transaction of its own. ``write=False``
    counts what would change and writes nothing."""
    outcome = Rematched()
    after = 0
    while True:
        rows = list(
            RunComponent.objects.filter(pk__gt=after)
            .select_related("run", "scenario")
            .only(*REMATCH_FIELDS)
            .order_by("pk")[:batch_size]
        )
        if not rows:
            return outcome
        after = rows[-1].pk
        outcome.rows += len(rows)
        named = {
            row.pk: Named(row.role, row.name, row.version, row.commit, row.purl) for row in rows
        }
        by_purl = _components_by_purl({n.purl for n in named.values() if n.purl})
        by_name = _components_by_name({n.lookup_name for n in named.values()})
        changed = []
        for row in rows:
            what = named[row.pk]
            match = Match(what.role, what.name, what.version, what.commit, what.purl, "")
            _decide(match, what, by_purl, by_name)
            if (match.component_pk, match.matched_by) == (row.component_id, row.matched_by):
                continue
            if match.component_pk is None:
                outcome.unmatched += 1
            else:
                outcome.matched += 1
            if len(outcome.examples) < 20:
                outcome.examples.append(
                    f"run {row.run.run_id}, scenario {row.scenario.scenario_id}, {row.role} "
                    f"{row.name!r}: "
                    + (f"now {match.component}" if match.component else "now unmatched")
                )
            row.component_id, row.matched_by = match.component_pk, match.matched_by
            changed.append(row)
        if changed and write:
            with transaction.atomic():
                RunComponent.objects.bulk_update(changed, ["component", "matched_by"])


def _decide(
    match: Match,
    what: Named,
    by_purl: dict[str, list[tuple[int, str]]],
    by_name: dict[str, list[tuple[int, str]]],
) -> None:
    base = purl_base(what.purl) if what.purl else None
    purl_found = by_purl.get(base, []) if base else []
    if len(purl_found) == 1:
        match.component_pk, match.component = purl_found[0]
        match.matched_by = RunComponent.MatchedBy.PURL.value
        return
    found = by_name.get(what.lookup_name, [])
    if len(found) == 1:
        match.component_pk, match.component = found[0]
        match.matched_by = RunComponent.MatchedBy.NAME.value
        return
    if len(purl_found) > 1 or len(found) > 1:
        keys = ", ".join(sorted({key for _, key in [*purl_found, *found]}))
        match.reason = (
            f"{what.name!r} names more than one component ({keys}); relate them "
            "(same_component) or make one name an alias of one only"
        )
    else:
        purl = f" or Package URL {what.purl!r}" if what.purl else ""
        match.reason = (
            f"no active component has the name or alias {what.lookup_name!r}{purl}; add "
            "the component, or the name as an alias of one"
        )


def purl_base(text: str) -> str | None:
    """A Package URL without its version, qualifiers and subpath (``pkg:pypi/nixl`` of
    ``pkg:pypi/nixl@0.7.1``), normalised; None when ``text`` is not one."""
    try:
        purl = PackageURL.from_string(text)
    except ValueError:
        return None
    return str(PackageURL(type=purl.type, namespace=purl.namespace, name=purl.name).to_string())


def _components_by_purl(purls: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
    bases = {base for purl in purls if (base := purl_base(purl))}
    if not bases:
        return {}
    condition = Q()
    for base in bases:
        condition |= Q(purl__iexact=base) | Q(purl__istartswith=base + "@")
    result: dict[str, list[tuple[int, str]]] = {}
    rows = Component.objects.filter(condition, status=RecordStatus.ACTIVE).values_list(
        "pk", "key", "purl"
    )
    for pk, key, purl in rows:
        base = purl_base(purl)
        if base in bases:
            result.setdefault(base, []).append((pk, key))
    return result


def _components_by_name(names: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
    names = sorted({n for n in names if n})
    result: dict[str, list[tuple[int, str]]] = {}
    if not names:
        return result
    rows = (
        ComponentName.objects.filter(name__in=names, component__status=RecordStatus.ACTIVE)
        .order_by("name", "component__key")
        .values_list("name", "component_id", "component__key")
    )
    for name, pk, key in rows:
        result.setdefault(name, []).append((pk, key))
    return result
