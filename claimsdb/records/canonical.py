"""The serialization rules of docs/record-format.md: one place that turns documents into bytes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .figures import FigureNumber, figure_number

# A figure value keeps the literal it was written as (``1.20``), which ``json`` cannot
# write for a float: such a value goes to the encoder as a marked string, and the mark
# and quotes are taken off its text afterwards. The mark begins with NUL, which the
# encoder writes as ``\u0000`` and no stored text holds (documents refuse it).
_MARK = "\x00figure-number:"
_MARKED_TEXT = '"\\u0000figure-number:'
_MARKED = re.compile(r'"\\u0000figure-number:([-+.0-9eE]+)"')


def with_literals(value: Any) -> Any:
    """``value`` with every case document's figure values that keep a literal (a
    ``FigureNumber``) marked for the encoder. Only containers are copied, and only
    those that hold such a value; a case document's other fields are not walked."""
    if isinstance(value, dict):
        if value.get("format") == "claimsdb.case/1":
            figures = value.get("figures")
            if isinstance(figures, list) and any(
                isinstance(f, dict) and isinstance(f.get("value"), FigureNumber) for f in figures
            ):
                return {**value, "figures": [_marked_figure(f) for f in figures]}
            return value
        items = {name: with_literals(item) for name, item in value.items()}
        if any(items[name] is not value[name] for name in value):
            return items
        return value
    if isinstance(value, list | tuple):
        marked = [with_literals(item) for item in value]
        if any(new is not old for new, old in zip(marked, value, strict=True)):
            return marked
        return value
    return value


def _marked_figure(figure: Any) -> Any:
    if isinstance(figure, dict) and isinstance(figure.get("value"), FigureNumber):
        return {**figure, "value": _MARK + figure["value"].literal}
    return figure


def unmark(text: str) -> str:
    """Encoded text with every marked figure value written as its number."""
    return _MARKED.sub(r"\1", text) if _MARKED_TEXT in text else text


def dumps_pretty(document: Any) -> str:
    """Files and exports: sorted keys, 2-space indent, a trailing newline."""
    text = json.dumps(with_literals(document), indent=2, sort_keys=True, ensure_ascii=False)
    return unmark(text) + "\n"


# One encoder for every compact dump: ``json.dumps`` with these options builds a new
# encoder per call, a cost paid once per revision when the whole ledger is checked.
_COMPACT = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def dumps_compact(document: Any) -> str:
    """Snapshots and hashes: the compact form (what ``json.dumps(document,
    separators=(",", ":"), sort_keys=True, ensure_ascii=False)`` gives)."""
    return unmark(_COMPACT.encode(with_literals(document)))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_number(value: Any) -> float | int:
    """A figure value is a JSON number, an integer when integral, otherwise the number as
    written (``records.figures``)."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    return figure_number(value)


def loads(text: str | bytes) -> Any:
    """JSON text → Python, every non-integral number a float that remembers its literal,
    so that a figure written ``1.20`` is still ``1.20`` when shown or written again."""
    return json.loads(text, parse_float=FigureNumber)


def iter_pretty_bundle(fields: Mapping[str, Any]) -> Iterator[str]:
    """``dumps_pretty`` of a bundle, in pieces, reading each list as it goes.

    ``fields`` maps each top-level name to a JSON value or to an iterable of documents
    (a list read lazily). The pieces join to exactly what ``dumps_pretty`` makes of the
    same bundle with its lists materialised, so an export streams yet stays byte-stable.
    """
    yield "{"
    for index, name in enumerate(sorted(fields)):
        value = fields[name]
        yield ("," if index else "") + "\n  " + _pretty(name) + ": "
        if isinstance(value, str | int | float | bool | dict) or value is None:
            yield _pretty(value).replace("\n", "\n  ")
            continue
        empty = True
        for document in value:
            # An item sits two levels deep: indent every line of its own form by four.
            yield ("[" if empty else ",") + "\n    " + _pretty(document).replace("\n", "\n    ")
            empty = False
        yield "[]" if empty else "\n  ]"
    yield "\n}\n"


def _pretty(value: Any) -> str:
    return unmark(json.dumps(with_literals(value), indent=2, sort_keys=True, ensure_ascii=False))
