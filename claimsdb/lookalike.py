"""Keys that look alike: the skeleton of Unicode's confusable detection (UTS #39, section 4).

Two strings are confusable when their skeletons are equal. The skeleton is
``NFD(map(NFD(text)))``, where ``map`` replaces each character listed in Unicode's
``confusables.txt`` by its prototype. claimsdb's keys and IDs are ASCII by their patterns
(``CP22-003``, ``SRC-…``, ``FIG-…``, ``diggingbeagle.assessment/1``), and a character
outside ASCII never reaches this check, so the table holds exactly the ASCII characters
that ``confusables.txt`` maps: ``0`` and ``O`` share a skeleton, as do ``1``, ``I``, ``l``
and ``|``, and ``m`` and ``rn``. A library with the whole table (``confusable_homoglyphs``)
would add a dependency, and data for characters no key may hold, for the same answers.

The skeleton is stored beside each key (``key_skeleton``, a figure's ``id_skeleton``,
written by ``services/apply.py`` when the row is made: keys never change) with an index,
so a new key is checked against 100,000 records with one indexed lookup, never by
scanning them.

This module depends on nothing in claimsdb. Migration 0012 keeps its own copy of the
table, as migrations do.
"""

from __future__ import annotations

import unicodedata

# The ASCII entries of confusables.txt (character → prototype); the prototypes themselves
# (O, l, r n, ') map to themselves.
CONFUSABLE_ASCII = {
    '"': "''",
    "0": "O",
    "1": "l",
    "I": "l",
    "`": "'",
    "m": "rn",
    "|": "l",
}
_TABLE = str.maketrans(CONFUSABLE_ASCII)


def skeleton(text: str) -> str:
    """The UTS #39 skeleton of ``text`` (``HX-2O1`` and ``HX-201`` give ``HX-2Ol``)."""
    mapped = unicodedata.normalize("NFD", text).translate(_TABLE)
    return unicodedata.normalize("NFD", mapped)
