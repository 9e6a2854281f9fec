"""A figure's value as the analyst wrote it, and the one way pages put a figure in words.

A figure's ``value`` is a JSON number (docs/record-format.md). JSON keeps a number as
written — ``1.20`` is not ``1.2`` to a reader — while a Python float forgets the trailing
zero. So a value that is not an integer travels as a ``FigureNumber``: a float (it
compares, sorts and sums like one) that remembers its literal. The canonical dumps write
that literal (``records.canonical``), the database keeps it as text, and every page shows
it through ``figure_text``. An integral value is an integer (``155``, also when typed
``155.0``), as the format has always said.

Values written before the literal was kept were floats: their canonical text was Python's
``repr`` of the float, and ``number_literal`` gives exactly that text for them, so the
bytes of every existing snapshot stay what they were.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "FigureNumber",
    "figure_number",
    "figure_text",
    "figure_words",
    "number_literal",
    "number_text",
]


class FigureNumber(float):
    """A float that remembers the literal it was written as (``"1.20"``)."""

    __slots__ = ("literal",)
    literal: str

    def __new__(cls, literal: str | Decimal) -> FigureNumber:
        text = _plain(Decimal(str(literal)), str(literal))
        number = super().__new__(cls, text)
        number.literal = text
        return number

    def __repr__(self) -> str:
        return self.literal

    # Two values written differently are different values of a figure (``1.2`` retyped as
    # ``1.20`` is a change to save); beside a plain number it compares as the float it is.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, FigureNumber):
            return self.literal == other.literal
        return float(self) == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = float.__hash__

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (FigureNumber, (self.literal,))

    def __deepcopy__(self, memo: dict[int, Any]) -> FigureNumber:
        return self

    def __copy__(self) -> FigureNumber:
        return self


def _plain(number: Decimal, written: str) -> str:
    """The canonical literal of a non-integral decimal: plain notation with the digits as
    written (``1.20``); written with an exponent (``1e-07``), the float's own text, as the
    values from before the literal was kept were written."""
    if not number.is_finite():
        raise ValueError(f"{written!r} is not a finite number")
    if "e" in written.lower():
        return repr(float(number))
    return format(number, "f").lstrip("+")


def figure_number(value: Any) -> int | float:
    """A figure value as a document holds it: an int when integral, otherwise a
    ``FigureNumber`` keeping the digits as written (from a ``Decimal``, a literal in a
    string, or a float). Raises ``ValueError`` for anything that is not a finite number."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, FigureNumber):
        text = value.literal
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, Decimal | str):
        text = str(value).strip()
    else:
        raise ValueError(f"{value!r} is not a number")
    try:
        number = Decimal(text)
    except InvalidOperation as exc:
        raise ValueError(f"{text!r} is not a number") from exc
    if not number.is_finite():
        raise ValueError(f"{text!r} is not a finite number")
    if number == number.to_integral_value() and abs(number) < 2**53:
        return int(number)
    if isinstance(value, float) and not isinstance(value, FigureNumber):
        return value  # its repr is already its canonical text
    return FigureNumber(text)


def number_literal(value: Any) -> str:
    """The canonical JSON text of a figure value: ``155``, ``1.2``, ``1.20``."""
    number = figure_number(value)
    if isinstance(number, FigureNumber):
        return number.literal
    return repr(number)


def number_text(value: Any) -> str:
    """A figure value for people: the digits as written, thousands grouped (``50,000``,
    ``1.20``, ``1,234.5``). Anything that is not a number is shown as it is."""
    try:
        literal = number_literal(value)
    except ValueError:
        return str(value)
    if "e" in literal.lower():
        return literal
    sign, digits = ("-", literal[1:]) if literal.startswith("-") else ("", literal)
    whole, dot, fraction = digits.partition(".")
    return f"{sign}{int(whole):,}{dot}{fraction}"


def figure_text(value: Any, unit: str) -> str:
    """A figure as people write it: the number as entered, then its unit — ``1.2 %``,
    ``155 responses``, ``9 h``. Every page that names a figure says it this way."""
    number = number_text(value)
    unit = unit.strip()
    return f"{number} {unit}" if unit else number


def figure_words(value: Any, unit: str, scope: str) -> str:
    """A figure with its scope, for sentences: ``1.2 % (production)``."""
    text = figure_text(value, unit)
    return f"{text} ({scope})" if scope else text
