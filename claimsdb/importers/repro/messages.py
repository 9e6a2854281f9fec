"""The sentences the parser says about a results file, and how they name its values and
paths. Tests and clients read these words: they stay as they are."""

from __future__ import annotations

import ast
import json
from typing import Any

from .format import ENVIRONMENT_EXTENSION, FORMAT, FORMAT_1_1, SCENARIO_EXTENSION

# Where the fields of repro-results/1.1 belong, by what their object is called.
_EXTENSION_PLACES = {
    **{key: "a scenario" for key in SCENARIO_EXTENSION},
    **{key: "the environment" for key in ENVIRONMENT_EXTENSION},
}


def show(value: Any) -> str:
    """A value as it reads in JSON, shortened."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 80 else shown[:77] + '..."'


def join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def label(path: str) -> str:
    return path or "the file"


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def wrong_type(path: str, value: Any, expected: str) -> str:
    return f"{label(path)} must be {expected}, not {show(value)}."


def duplicate_key(key: Any) -> str:
    return f"The key {show(key)} appears twice."


def unknown_key(key: str, what: str, format: str = FORMAT) -> str:
    if format == FORMAT and _EXTENSION_PLACES.get(key) == what:
        return (
            f"{show(key)} is not a field of {what} in {FORMAT}; it is one in {FORMAT_1_1}: "
            f'declare "format": "{FORMAT_1_1}" to state it.'
        )
    return (
        f"{show(key)} is not a field of {what} in {format}; only keys beginning with x- may "
        "be added."
    )


def unknown_scenario(k: int, name: str) -> str:
    return f"Trial row {k} names scenario {show(name)}, which is not in the file's scenarios."


def number_range(k: int, n: int, trials: int | None) -> str:
    upper = "its scenario's trials" if trials is None else str(trials)
    return f"Trial row {k} has trial number n = {n}; it must run from 1 to {upper}."


def too_many(left_out: int, where: str) -> str:
    return f"{left_out} more problems {where} are not listed; fix the ones above first."


def json_error(error: Exception, offset: int, saw_content: bool) -> str:
    """Why the JSON parser stopped, `offset` bytes in."""
    if not saw_content:
        return "The file is empty."
    text = str(error)
    if text.startswith(("b'", 'b"')):  # some yajl messages arrive as the repr of bytes
        text = ast.literal_eval(text).decode("utf-8", "replace")
    lines = text.strip().splitlines() or [""]
    reason = lines[0].split(":", 1)[-1].strip().rstrip(".")
    if "premature EOF" in reason:
        return f"The JSON ends early (truncated?) after {offset} bytes."
    near = lines[1].strip() if len(lines) > 1 else ""
    where = f"within the first {offset} bytes" + (f", near {near[:60]!r}" if near else "")
    if reason == "trailing garbage":
        return f"There is more data after the JSON object ({where})."
    return f"The file is not valid JSON: {reason} ({where})."
