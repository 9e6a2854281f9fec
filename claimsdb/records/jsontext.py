"""JSON text from outside claimsdb, read strictly: the one parser of every JSON document it is
sent (API bodies, bundles and fixtures, the web's JSON fields).

Beyond the JSON grammar (``json.loads``, with NaN and Infinity refused) it refuses:

- an object that repeats a key (``document.duplicate_key``): ``json.loads`` keeps the last
  value silently, so two tools could read one document differently;
- a string or key holding a NUL character or a lone UTF-16 surrogate (``input.invalid_text``):
  JSON's ``\\u0000`` and ``\\ud800`` escapes make them, no database stores them alike
  (PostgreSQL refuses NUL in text, and no UTF-8 encoding exists for a lone surrogate).

Every problem is reported with its JSON path (``claims[2].statement``), all of them at once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from claimsdb.codes import DocumentCode, InputCode

from .errors import RuleViolation, RuleViolations
from .figures import FigureNumber
from .schema import join

# NUL, and a surrogate code point (which a str holds only when it is unpaired: JSON's escaped
# pairs are joined into one character by the decoder)
_INVALID = re.compile("[\x00\ud800-\udfff]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _Repeating(dict):
    """An object of the document that gave a key more than once: its value is the last one
    given, as ``json.loads`` keeps it, and ``repeated`` lists the keys given again."""

    repeated: list[str]


class _Objects:
    """``object_pairs_hook``: a dict for each object, or a ``_Repeating`` one if a key came
    twice (then ``repeats`` is set, and the document is walked for them)."""

    def __init__(self) -> None:
        self.repeats = False

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) == len(pairs):
            return result
        self.repeats = True
        repeating = _Repeating(result)
        seen: set[str] = set()
        repeating.repeated = []
        for key, _ in pairs:
            if key in seen and key not in repeating.repeated:
                repeating.repeated.append(key)
            seen.add(key)
        return repeating


class StreamedObject(dict):
    """The ``map_type`` of a streamed parse (``ijson.items``): a dict that remembers the keys
    given more than once."""

    repeated: list[str] | None = None

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self:
            if self.repeated is None:
                self.repeated = []
            if key not in self.repeated:
                self.repeated.append(key)
        super().__setitem__(key, value)


def printable(text: str) -> str:
    """``text`` with each NUL and lone surrogate written as its JSON escape, so that a path
    or a name holding one can be reported (no UTF-8 text holds a lone surrogate)."""
    return _INVALID.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def describe(character: str) -> str:
    if character == "\x00":
        return "a NUL character (\\u0000)"
    return f"a lone surrogate (\\u{ord(character):04x}), which is not a character"


def text_problem(value: str, path: str) -> RuleViolation | None:
    """The violation of one string of input, if it holds a NUL or a lone surrogate."""
    match = _INVALID.search(value)
    if match is None:
        return None
    return RuleViolation(
        InputCode.INVALID_TEXT, f"must not contain {describe(match.group())}", path
    )


def loads(text: str | bytes) -> Any:
    """Parse JSON text strictly; raise RuleViolations listing every problem with its path.

    A syntax error (or text that is not UTF-8) is one ``document.malformed`` with its line
    and column.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RuleViolations(
                [RuleViolation(DocumentCode.MALFORMED, f"the text is not UTF-8: {exc}", "")]
            ) from exc
    objects = _Objects()
    try:
        value = json.loads(
            text,
            object_pairs_hook=objects,
            parse_constant=_refuse_constant,
            parse_float=FigureNumber,  # a number keeps the digits it was written with
        )
    except json.JSONDecodeError as exc:
        what = "the document is empty" if not text.strip() else exc.msg
        raise RuleViolations(
            [
                RuleViolation(
                    DocumentCode.MALFORMED,
                    f"not valid JSON: {what} (line {exc.lineno}, column {exc.colno})",
                    "",
                )
            ]
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise RuleViolations(
            [RuleViolation(DocumentCode.MALFORMED, f"not valid JSON: {exc}", "")]
        ) from exc
    # NUL and surrogates come only from escapes (or from a str given as it is): a document
    # without them or a repeated key is not walked at all
    if objects.repeats or "\\u" in text or _INVALID.search(text):
        problems = problems_of(value)
        if problems:
            raise RuleViolations(problems)
    return value


def problems_of(value: Any) -> list[RuleViolation]:
    """Every repeated key and every string holding NUL or a lone surrogate, in document
    order (iteratively: a document may nest as deeply as the parser allows)."""
    problems: list[RuleViolation] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item, path)
            if problem is not None:
                problems.append(problem)
        elif isinstance(item, dict):
            for key in getattr(item, "repeated", None) or ():
                problems.append(
                    RuleViolation(
                        DocumentCode.DUPLICATE_KEY,
                        f"the key {key!r} is given more than once in this object",
                        join(path, printable(key)),
                    )
                )
            children = []
            for key, child in item.items():
                problem = text_problem(key, join(path, printable(key)))
                if problem is not None:
                    problems.append(
                        RuleViolation(problem.code, "a key " + problem.message, problem.path)
                    )
                children.append((join(path, printable(key)), child))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(join(path, i), child) for i, child in enumerate(item)]))
    return problems
