"""The README stays a tour; docs/codes.md is what the codes registry (claimsdb/codes.py)
writes, and lists every code."""

from claimsdb import codes_doc
from claimsdb.codes import REGISTERED

from .support import ROOT

README_MAX_BYTES = 12 * 1024


def test_codes_doc_is_written_from_the_registry():
    written = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert written == codes_doc.render(), "docs/codes.md is stale: python -m claimsdb.codes_doc"


def test_codes_doc_lists_every_code():
    text = codes_doc.render()
    missing = [code for code in REGISTERED if f"| `{code}` |" not in text]
    assert missing == []


def test_readme_is_a_tour_of_at_most_12_kb():
    # The manual lives in docs/; the README says what claimsdb is, shows it and points there.
    assert (ROOT / "README.md").stat().st_size <= README_MAX_BYTES
