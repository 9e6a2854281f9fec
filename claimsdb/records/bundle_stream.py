"""Reading a ``claimsdb.bundle/1`` file without holding it: an outline pass, then its lists.

``outline`` reads the file once, event by event, and keeps only what a bulk load needs to
plan its batches: the shape of the top level, the keys of every list (to refuse a key
given twice) and, for cases, which cases are linked by relations or attributions — the
cases that must be written in the same batch. Names are held as hashes in arrays, two
machine words each, and compared as text only where hashes repeat. ``iter_list`` then
reads one list's items one at a time. See docs/bulk-loading.md.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import ijson

from claimsdb.codes import DocumentCode

from . import schema
from .errors import RuleViolation, RuleViolations
from .jsontext import StreamedObject, problems_of
from .kinds import record_kinds

# Bytes read at a time. ijson's C backend turns a whole buffer into events before yielding
# the first, so the buffer bounds the outline pass's memory: the events of 64 KiB of JSON,
# about a megabyte (docs/bulk-loading.md, "What it holds in memory").
_BUF_SIZE = 64 * 1024

_EVENT_TYPES = {
    "start_map": "an object",
    "start_array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


@dataclass
class CaseLinks:
    """Which cases of a bundle refer to one another (relations, attributions of figures).

    Cases are numbered by their position in the bundle's ``cases`` list; linked cases share
    a group, and a group is written in one batch so that its documents are checked
    together, as one change would check them. Memory: a few machine words per case.
    """

    parent: array = field(default_factory=lambda: array("q"))
    sizes: dict[int, int] = field(default_factory=dict)

    def add_case(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, index: int) -> int:
        parent = self.parent
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    def link(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def finish(self) -> None:
        """Count the members of the groups of more than one case."""
        counts: dict[int, int] = {}
        for index in range(len(self.parent)):
            root = self.find(index)
            counts[root] = counts.get(root, 0) + 1
        self.sizes = {root: size for root, size in counts.items() if size > 1}

    def group(self, index: int) -> tuple[int, int]:
        """The group of a case and how many cases it has."""
        root = self.find(index) if index < len(self.parent) else index
        return root, self.sizes.get(root, 1)


@dataclass
class BundleOutline:
    """What the outline pass learnt about a file."""

    format: Any = None
    problems: list[RuleViolation] = field(default_factory=list)
    # paths (``sources[4]``) of items whose key an earlier item of the same list has
    duplicates: set[str] = field(default_factory=set)
    links: CaseLinks = field(default_factory=CaseLinks)
    # how many items each list has
    counts: dict[str, int] = field(default_factory=dict)
    # the file escapes NUL or a surrogate (``\\u0000``, ``\\ud800``): its lists are then
    # read by ijson's Python backend, which keeps a lone surrogate as it is (the C backend
    # turns it into "?") so that it can be refused
    escapes: bool = False

    @property
    def is_bundle(self) -> bool:
        return self.format == schema.BUNDLE_FORMAT


def malformed(error: Exception) -> RuleViolations:
    return RuleViolations([RuleViolation(DocumentCode.MALFORMED, f"not valid JSON: {error}", "")])


def outline(stream: IO[bytes]) -> BundleOutline:
    """One pass over the file: the top level's shape, duplicate keys, linked cases.

    Raises RuleViolations (``document.malformed``) if the file is not JSON. A file whose
    top level is not a bundle gets ``format`` set and no further checks (the caller loads
    it as a single document).
    """
    result = BundleOutline()
    top_level: dict[str, str] = {}  # top-level field → the type of its value
    current: str | None = None
    counts = dict.fromkeys(_LISTS, -1)
    # Names are kept as their hashes (``_hash``), in arrays: a machine word or two per
    # record where the strings in sets and dicts took some 400 bytes per case.
    keys = {name: _Pairs() for name in _LISTS}  # (key, position in its list)
    figures = _Pairs()  # (figure ID, position of the case that owns it)
    cases_named = _Pairs()  # (case key named by a relation, position of the naming case)
    figures_named = _Pairs()  # (figure ID named by an attribution, position of the case)
    links = result.links
    scanner = _EscapeScanner(stream)
    try:
        events = ijson.parse(scanner, buf_size=_BUF_SIZE, use_float=True)
        for prefix, event, value in events:
            if prefix == "":
                if event == "map_key":
                    current = value
                    if value in top_level:
                        result.problems.append(
                            RuleViolation(
                                DocumentCode.DUPLICATE_KEY,
                                f"the key {value!r} is given more than once in this object",
                                value,
                            )
                        )
                elif event != "start_map" and event != "end_map":
                    result.format = _NOT_AN_OBJECT
                    result.problems.append(
                        RuleViolation(
                            DocumentCode.TYPE,
                            f"must be an object, not {_EVENT_TYPES.get(event, event)}",
                            "",
                        )
                    )
                    return result
                continue
            if prefix == current:
                top_level[current] = _EVENT_TYPES.get(event, event)
                current = None
                if prefix == "format" and event == "string":
                    result.format = value
                continue
            name = _ITEM_PREFIXES.get(prefix)
            if name is not None:
                if event in _VALUE_STARTS:  # not the keys or the end of an item
                    counts[name] += 1
                    if name == "cases":
                        links.add_case()
                continue
            name = _KEY_PREFIXES.get(prefix)
            if name is not None:
                if event == "string":
                    keys[name].add(_hash(value), counts[name])
                continue
            if prefix == "cases.item.figures.item.id" and event == "string":
                figures.add(_hash(value), counts["cases"])
            elif prefix == "cases.item.relations.item.case" and event == "string":
                cases_named.add(_hash(value), counts["cases"])
            elif prefix == "cases.item.attributions.item.figure" and event == "string":
                figures_named.add(_hash(value), counts["cases"])
    except ijson.JSONError as error:
        raise malformed(error) from error
    except UnicodeDecodeError as error:
        raise RuleViolations(
            [RuleViolation(DocumentCode.MALFORMED, f"the file is not UTF-8 text: {error}", "")]
        ) from error
    result.escapes = scanner.found
    if "format" in top_level and top_level["format"] != "a string":
        result.format = None
    if record_kinds.by_format(result.format) is not None:
        return result
    suspects = {name: pairs.repeated() for name, pairs in keys.items()}
    if any(suspects.values()):  # a key given twice, or two keys with one hash
        result.duplicates = _duplicates(stream, suspects)
    # A reference links its case to every case owning a name of the same hash: a name the
    # file gives twice (refused anyway) or a collision of hashes only links more cases,
    # which are then written in one batch; no link is ever missed.
    for named, owners in ((cases_named, keys["cases"]), (figures_named, figures)):
        owner = owners.first_positions(links)
        for target, case in named:
            other = owner.get(target)
            if other is not None:
                links.link(case, other)
        del owner
    del keys, figures, cases_named, figures_named
    links.finish()
    result.counts = {name: count + 1 for name, count in counts.items()}
    result.problems.extend(_outline_problems(result.format, top_level))
    return result


_NOT_AN_OBJECT = object()
_VALUE_STARTS = frozenset(_EVENT_TYPES)
# A bundle's lists, in its order (the write order: records before those naming them).
_LISTS = [kind.plural for kind in record_kinds.in_write_order()]
_OPTIONAL_LISTS = {kind.plural for kind in record_kinds if kind.bundle_optional}
_ITEM_PREFIXES = {f"{name}.item": name for name in _LISTS}
_KEY_PREFIXES = {f"{name}.item.key": name for name in _LISTS}


def _hash(text: str) -> int:
    """A name's hash for the outline (the process's own string hash: the outline only
    compares names within one pass)."""
    return hash(text)


class _Pairs:
    """(hash of a name, position) pairs, two machine words each."""

    def __init__(self) -> None:
        self.hashes = array("q")
        self.positions = array("q")

    def add(self, name_hash: int, position: int) -> None:
        self.hashes.append(name_hash)
        self.positions.append(position)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.hashes, self.positions, strict=True)

    def repeated(self) -> set[int]:
        """The positions whose hash another position has too."""
        first: dict[int, int] = {}
        found: set[int] = set()
        for name_hash, position in self:
            earlier = first.setdefault(name_hash, position)
            if earlier != position:
                found.update((earlier, position))
        return found

    def first_positions(self, links: CaseLinks) -> dict[int, int]:
        """Each hash's first position; later positions with the same hash are linked to
        it, so that whatever refers to the hash reaches all of them."""
        first: dict[int, int] = {}
        for name_hash, position in self:
            earlier = first.setdefault(name_hash, position)
            if earlier != position:
                links.link(earlier, position)
        return first


def _duplicates(stream: IO[bytes], suspects: dict[str, set[int]]) -> set[str]:
    """The paths of the items whose key an earlier item of the same list has, among the
    positions ``suspects`` names per list: one more pass, holding only those keys."""
    stream.seek(0)
    counts = dict.fromkeys(_LISTS, -1)
    seen: dict[str, set[str]] = {name: set() for name in _LISTS}
    found = set()
    for prefix, event, value in ijson.parse(stream, buf_size=_BUF_SIZE, use_float=True):
        name = _ITEM_PREFIXES.get(prefix)
        if name is not None:
            if event in _VALUE_STARTS:
                counts[name] += 1
            continue
        name = _KEY_PREFIXES.get(prefix)
        if name is not None and event == "string" and counts[name] in suspects[name]:
            if value in seen[name]:
                found.add(f"{name}[{counts[name]}]")
            seen[name].add(value)
    return found


def _outline_problems(fmt: Any, top_level: dict[str, str]) -> list[RuleViolation]:
    """The problems ``parse_bundle`` finds at a bundle's top level, in its words."""
    if fmt != schema.BUNDLE_FORMAT:
        formats = [kind.format for kind in record_kinds]
        known = ", ".join(repr(f) for f in [schema.BUNDLE_FORMAT, *formats])
        code = DocumentCode.FORMAT if "format" in top_level else DocumentCode.MISSING_FIELD
        return [
            RuleViolation(
                code,
                f"format {fmt!r} is not one this loader reads ({known})",
                "format",
            )
        ]
    problems = []
    for name in top_level:
        if name != "format" and name not in _LISTS:
            problems.append(
                RuleViolation(
                    DocumentCode.UNKNOWN_FIELD, f"{name!r} is not a field of a bundle", name
                )
            )
    for name in _LISTS:
        if name not in top_level and name in _OPTIONAL_LISTS:
            continue
        if name not in top_level:
            problems.append(
                RuleViolation(DocumentCode.MISSING_FIELD, f"the field {name!r} is missing", name)
            )
        elif top_level[name] != "a list":
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be a list, not {top_level[name]}", name)
            )
    return problems


def iter_list(
    stream: IO[bytes], name: str, *, escapes: bool = False
) -> Iterator[tuple[int, Any, list[RuleViolation]]]:
    """The items of one list of the bundle, with their index and what ``records/jsontext.py``
    refuses in them (a repeated key, NUL, a lone surrogate), one at a time.

    ``escapes`` (``BundleOutline.escapes``) reads the list with ijson's Python backend, which
    keeps what the escapes make; the items are then walked for them. Otherwise an item is
    walked only if one of its objects repeated a key.
    """
    stream.seek(0)
    repeats = [0]

    class Item(StreamedObject):
        def __setitem__(self, key: str, value: Any) -> None:
            if key in self:
                repeats[0] += 1
            super().__setitem__(key, value)

    backend = ijson.get_backend("python") if escapes else ijson
    try:
        items = backend.items(
            stream, f"{name}.item", buf_size=_BUF_SIZE, use_float=True, map_type=Item
        )
        for index, item in enumerate(items):
            if escapes or repeats[0]:
                repeats[0] = 0
                yield index, item, problems_of(item)
            else:
                yield index, item, []
    except ijson.JSONError as error:
        raise malformed(error) from error


# an escape of NUL or of a surrogate, in JSON's text (a backslash before it may be escaped
# itself, which only makes the file be read the exact way for nothing)
_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


class _EscapeScanner:
    """A file read by the outline pass, watched for ``_ESCAPE`` as it goes by."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.found = False
        self.tail = b""

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        if not self.found and data:
            window = self.tail + data
            self.found = _ESCAPE.search(window) is not None
            self.tail = window[-5:]
        return data
