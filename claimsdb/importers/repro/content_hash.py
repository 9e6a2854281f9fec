"""The identity of a results file: the SHA-256 of its canonical JSON.

Two files that hold the same JSON are the same file to the importer, whatever their
whitespace, key order or number spelling: a file re-serialised by a client (a generated
API client, ``json.dump`` with other settings) is the file the harness wrote. The canonical
JSON is what ``json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` writes, in UTF-8, numbers read as Python reads them (``812.50`` is
``812.5``, ``1`` stays an integer).

``ContentDigest`` computes it from the parser's events as they pass, in bounded memory: the
value of each top-level member is written canonically to a spooled file of its own (the
items of a top-level array, such as the trial rows, one by one), and the members are hashed
in key order at the end.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import ijson

_SPOOL_IN_MEMORY = 1024 * 1024
_CHUNK = 1024 * 1024


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a parsed value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


class ContentDigest:
    """Feed it a file's ``ijson.basic_parse`` events (``watch``); ``hexdigest()`` is the
    SHA-256 of the file's canonical JSON, or None if the events were not one whole JSON
    object (the caller then names the file by its bytes)."""

    def __init__(self) -> None:
        self._members: dict[str, IO[bytes]] = {}
        self._depth = 0  # 1 inside the top-level object, 2 inside a top-level array
        self._key: str | None = None
        self._spool: IO[bytes] | None = None
        self._builder: Any = None  # an ijson ObjectBuilder for the value being read
        self._nesting = 0  # open containers of the value being built
        self._in_array = False
        self._first_item = True
        self._done = False
        self._failed = False

    def watch(self, events: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        for event, value in events:
            if not self._failed:
                try:
                    self._feed(event, value)
                except (ValueError, TypeError, UnicodeError):
                    self._failed = True
            yield event, value

    def _write(self, text: str) -> None:
        assert self._spool is not None
        self._spool.write(text.encode("utf-8"))

    def _value_done(self, value: Any) -> None:
        """A whole value at depth 1 (a member's) or 2 (an item of a member's array)."""
        if self._in_array:
            self._write(("" if self._first_item else ",") + canonical_json(value))
            self._first_item = False
        else:
            self._write(canonical_json(value))

    def _feed(self, event: str, value: Any) -> None:
        if self._done:
            self._failed = True  # anything after the object: not one JSON object
            return
        if self._builder is not None:  # inside an object or array below the top-level ones
            self._builder.event(event, value)
            if event in ("start_map", "start_array"):
                self._nesting += 1
            elif event in ("end_map", "end_array"):
                self._nesting -= 1
                if self._nesting == 0:
                    built, self._builder = self._builder.value, None
                    self._value_done(built)
            return
        if self._depth == 0:
            if event != "start_map":
                self._failed = True
                return
            self._depth = 1
            return
        if self._depth == 1 and event == "map_key":
            self._key = value
            old = self._members.pop(value, None)
            if old is not None:
                old.close()
            self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)
            self._members[value] = self._spool
            return
        if self._depth == 1 and event == "end_map":
            self._depth = 0
            self._done = True
            return
        if self._depth == 1 and event == "start_array":
            self._depth, self._in_array, self._first_item = 2, True, True
            self._write("[")
            return
        if self._depth == 2 and event == "end_array":
            self._write("]")
            self._depth, self._in_array = 1, False
            return
        if event in ("start_map", "start_array"):
            self._builder = ijson.ObjectBuilder()
            self._builder.event(event, value)
            self._nesting = 1
            return
        self._value_done(value)  # a scalar

    def hexdigest(self) -> str | None:
        if self._failed or not self._done:
            self.close()
            return None
        digest = hashlib.sha256(b"{")
        for position, key in enumerate(sorted(self._members)):
            digest.update((("," if position else "") + canonical_json(key) + ":").encode("utf-8"))
            spool = self._members[key]
            spool.seek(0)
            while chunk := spool.read(_CHUNK):
                digest.update(chunk)
        digest.update(b"}")
        self.close()
        return digest.hexdigest()

    def close(self) -> None:
        for spool in self._members.values():
            spool.close()
        self._members = {}


def content_sha256(stream: IO[bytes]) -> str | None:
    """The SHA-256 of the canonical JSON of a whole JSON object read from ``stream``."""
    digest = ContentDigest()
    try:
        for _ in digest.watch(ijson.basic_parse(stream, use_float=True)):
            pass
    except ijson.JSONError:
        digest.close()
        return None
    return digest.hexdigest()
