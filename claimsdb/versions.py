"""Versions and version ranges of components, compared in each component's version scheme.

Versions are compared by ``univers`` (the version library of the Package URL project,
maintained beside ``packageurl-python``): it knows the ordering rules of each package
ecosystem — PEP 440 for PyPI (``0.5.10`` after ``0.5.9``, ``1.0rc1`` before ``1.0``),
SemVer for npm, Cargo and GitHub tags, Debian's and RPM's own orders, Go's, Maven's… —
under the scheme names that Package URLs and ``vers:`` ranges use, which OSV's ecosystems
follow. A component names its scheme (``version_scheme``); the ranges and versions of a
case's affected entries are checked and ordered in it.

Ranges are OSV's event form (``affected[].ranges[].events``): ``introduced``, then
``fixed`` or ``last_affected``, repeated; a ``limit`` bounds the search. ``introduced:
"0"`` means from the first version, as in OSV.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from packageurl import PackageURL
from univers.version_range import RANGE_CLASS_BY_SCHEMES
from univers.versions import InvalidVersion, SemverVersion, Version

# The schemes a component may name: univers's, under their Package URL type names, and
# ``semver`` for a project that follows SemVer and has no package type of its own (univers
# calls that class ``generic``'s too). ``all``, ``none`` and ``datetime`` are left out:
# they are not orders of versions one writes down.
_EXCLUDED = frozenset({"all", "none", "datetime"})
SCHEMES: dict[str, type[Version]] = {}
for _name, _range_class in sorted(RANGE_CLASS_BY_SCHEMES.items()):
    _version_class = _range_class.version_class
    if _name not in _EXCLUDED and _version_class is not None:
        SCHEMES[_name] = _version_class
SCHEMES["semver"] = SemverVersion
SCHEME_NAMES: tuple[str, ...] = tuple(sorted(SCHEMES))

# OSV's "from the first version": valid in every scheme as an ``introduced`` value.
FIRST_VERSION = "0"
EVENT_NAMES = ("introduced", "fixed", "last_affected", "limit")


def parse_version(scheme: str, text: str) -> Version | None:
    """``text`` as a version of ``scheme``, or None when it is not one."""
    version_class = SCHEMES.get(scheme)
    if version_class is None or not isinstance(text, str) or not text.strip():
        return None
    try:
        return version_class(text)
    except (InvalidVersion, ValueError, TypeError, AttributeError):
        return None
    except Exception:  # a scheme's parser may raise its own error for a malformed string
        return None


def is_valid_purl(text: str) -> str | None:
    """None when ``text`` is a Package URL, else why it is not (``packageurl-python``)."""
    try:
        PackageURL.from_string(text)
    except ValueError as error:
        return str(error)
    return None


def purl_type(text: str) -> str:
    """The type of a valid Package URL (``pypi`` of ``pkg:pypi/sglang``)."""
    return str(PackageURL.from_string(text).type)


@dataclass(frozen=True)
class RangeProblem:
    """What is wrong with a range: the message and the path below the range
    (``events[2].fixed``), or below ``versions`` for an explicit version."""

    message: str
    path: str


def range_problems(scheme: str, events: Any) -> Iterator[RangeProblem]:
    """Why ``events`` (a range's list of events) is not a well-formed, ordered range of
    ``scheme``: each event one of the four names with a version of the scheme; an
    ``introduced`` first; ``fixed`` and ``last_affected`` not both; introduced and closing
    events alternating in increasing order; ``limit`` events last."""
    if not isinstance(events, list) or not events:
        yield RangeProblem("a range needs at least one event (an 'introduced' first)", "events")
        return
    parsed: list[tuple[int, str, Version | None]] = []
    for index, event in enumerate(events):
        path = f"events[{index}]"
        if not isinstance(event, dict) or len(event) != 1:
            yield RangeProblem(
                "an event is an object of exactly one of " + ", ".join(EVENT_NAMES), path
            )
            return
        ((name, value),) = event.items()
        if name not in EVENT_NAMES:
            yield RangeProblem(
                f"{name!r} is not an event of a range ({', '.join(EVENT_NAMES)})", path
            )
            return
        if not isinstance(value, str):
            yield RangeProblem("an event's version must be a string", f"{path}.{name}")
            return
        if name == "introduced" and value == FIRST_VERSION:
            parsed.append((index, name, None))
            continue
        version = parse_version(scheme, value)
        if version is None:
            yield RangeProblem(
                f"{value!r} is not a version of the {scheme} scheme", f"{path}.{name}"
            )
            return
        parsed.append((index, name, version))
    names = [name for _, name, _ in parsed]
    if names[0] != "introduced":
        yield RangeProblem("a range starts with an 'introduced' event", "events[0]")
        return
    if "fixed" in names and "last_affected" in names:
        index = names.index(
            "last_affected" if names.index("fixed") < names.index("last_affected") else "fixed"
        )
        yield RangeProblem(
            "a range has 'fixed' or 'last_affected' events, not both (as OSV says)",
            f"events[{index}]",
        )
        return
    seen_limit = False
    previous: tuple[str, Version | None] | None = None
    for index, name, version in parsed:
        path = f"events[{index}].{name}"
        if name == "limit":
            seen_limit = True
            continue
        if seen_limit:
            yield RangeProblem("'limit' events come after every other event", path)
            return
        if previous is not None:
            if (previous[0] == "introduced") == (name == "introduced"):
                expected = (
                    "'fixed' or 'last_affected'"
                    if previous[0] == "introduced"
                    else ("'introduced'")
                )
                yield RangeProblem(
                    f"after {previous[0]!r} comes {expected}: introduced and closing events "
                    "alternate",
                    path,
                )
                return
            before = previous[1]
            if before is not None and version is not None and not before < version:
                yield RangeProblem(
                    f"{events[index][name]!r} is not after the event before it in the "
                    f"{scheme} scheme: events are in increasing version order",
                    path,
                )
                return
            if before is not None and version is None:  # "0" after a version
                yield RangeProblem("'introduced: \"0\"' can only open a range", path)
                return
        previous = (name, version)
    limits = [(index, version) for index, name, version in parsed if name == "limit"]
    last = max((v for _, n, v in parsed if n != "limit" and v is not None), default=None)
    for index, version in limits:
        if last is not None and version is not None and version < last:
            yield RangeProblem(
                "a 'limit' is not before the range's other events",
                f"events[{index}].limit",
            )
            return


def sort_key(scheme: str, text: str) -> tuple[int, Any]:
    """A key that orders versions of ``scheme`` (unparsable ones last, by their text)."""
    version = parse_version(scheme, text)
    if version is None:
        return (1, text)
    return (0, version)


def in_ranges(scheme: str, text: str, ranges: list[dict[str, Any]]) -> bool | None:
    """Whether ``text`` falls in one of ``ranges`` (OSV's evaluation); None when it is not
    a version of the scheme."""
    version = parse_version(scheme, text)
    if version is None:
        return None
    for range_ in ranges:
        affected = False
        for event in range_.get("events", []):
            ((name, value),) = event.items()
            bound = None if value == FIRST_VERSION else parse_version(scheme, value)
            if name == "introduced" and (bound is None or not version < bound):
                affected = True
            elif name == "fixed" and bound is not None and not version < bound:
                affected = False
            elif name == "last_affected" and bound is not None and version > bound:
                affected = False
        if affected:
            return True
    return False
