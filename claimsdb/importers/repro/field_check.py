"""A value of a results file's header checked against a ``claimsdb.fieldspec.Field``, the
vocabulary the record formats are written in (records/schema.py), in the words and codes of
repro-results/1.

The record formats and the header are described in the same terms; what differs is how a
problem reads. Here a problem is a ``ReproCode`` (a wrong JSON type is ``repro.type``, a
missing field ``repro.missing``, a key the format does not define ``repro.unknown_key``, a
value outside its field's rule the field's own ``code``) with a sentence an analyst reads,
and every object also takes keys beginning with ``x-``, kept as they are.
"""

from __future__ import annotations

import re
from typing import Any

from claimsdb.codes import ReproCode
from claimsdb.fieldspec import Field

from . import messages
from .format import parse_timestamp
from .messages import capital, join, label, show
from .problems import ProblemLog


def check(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    """Log every problem of ``value`` (at ``path``) against ``spec``."""
    kind = spec.kind
    if kind == "object":
        _object(spec, value, path, log)
    elif kind == "list":
        _list(spec, value, path, log)
    elif kind == "int" or kind == "number":
        _number(spec, value, path, log)
    elif kind == "timestamp":
        _timestamp(spec, value, path, log)
    elif kind == "str" or kind == "pattern" or kind == "enum":
        _string(spec, value, path, log)
    else:
        raise AssertionError(f"a results file has no field of kind {kind}")


def _object(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    if not isinstance(value, dict):
        log.wrong_type(path, value, f"an object ({spec.description})")
        return
    for key in value:
        if key not in spec.fields and not key.startswith("x-"):
            log.add(
                ReproCode.UNKNOWN_KEY,
                join(path, key),
                messages.unknown_key(key, spec.description, log.format),
            )
    for key, field in spec.fields.items():
        if key in value:
            check(field, value[key], join(path, key), log)
        elif not field.optional:
            log.add(ReproCode.MISSING, join(path, key), f"{capital(label(path))} has no {key}.")
    if spec.cross_check is not None:
        spec.cross_check(value, path, log)


def _list(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    if not isinstance(value, list):
        log.wrong_type(path, value, "a list")
        return
    if len(value) < spec.min_items:
        log.add(spec.code, path, f"{label(path)} must hold at least {spec.min_items} entry.")
    assert spec.item is not None
    seen: set[Any] = set()
    for i, item in enumerate(value):
        before = log.added
        check(spec.item, item, f"{path}[{i}]", log)
        if not spec.unique or log.added != before:
            continue  # only an item that passed its own check can repeat another
        if item in seen:
            log.add(
                spec.code,
                f"{path}[{i}]",
                f"The {spec.unique} {show(item)} is listed twice; {spec.unique}s are a set.",
            )
        else:
            seen.add(item)
    if spec.cross_check is not None:
        spec.cross_check(value, path, log)


def _number(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    if spec.kind == "int":
        is_number = type(value) is int
        at_least = "" if spec.minimum is None else f" ({spec.minimum} or more)"
        expected = f"a whole number{at_least}"
    else:
        is_number = type(value) is int or type(value) is float
        expected = "a number"
    if not is_number:
        log.wrong_type(path, value, expected)
    elif spec.minimum is not None and value < spec.minimum:
        log.add(spec.code, path, f"{label(path)} is {value}; it must be {spec.minimum} or more.")


def _timestamp(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    if not isinstance(value, str):
        log.wrong_type(path, value, "an RFC 3339 timestamp string")
    elif parse_timestamp(value) is None:
        log.add(spec.code, path, f"{label(path)} is {show(value)}; it must be {spec.description}.")


def _string(spec: Field, value: Any, path: str, log: ProblemLog) -> None:
    # An enum of one value is a constant: its description says why it has no other.
    constant = spec.kind == "enum" and len(spec.values) == 1
    if not isinstance(value, str):
        log.wrong_type(
            path, value, f"the string {show(spec.values[0])}" if constant else "a string"
        )
        return
    if spec.kind == "enum" and value not in spec.values:
        if constant:
            rule = f", but it must be {show(spec.values[0])}: {spec.description}."
        else:
            rule = f"; it must be one of {', '.join(spec.values)}."
        log.add(spec.code, path, f"{label(path)} is {show(value)}{rule}")
    elif spec.kind == "pattern" and not (
        re.fullmatch(spec.pattern, value)
        and (spec.max_length is None or len(value) <= spec.max_length)
    ):
        log.add(spec.code, path, f"{label(path)} is {show(value)}; it must be {spec.description}.")
