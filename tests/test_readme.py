"""The README stays a tour, and docs/codes.md documents every stable violation code."""

from pathlib import Path

from claimsdb.rules.codes import CODES

ROOT = Path(__file__).resolve().parent.parent
README_MAX_BYTES = 12 * 1024


def test_codes_page_lists_every_code():
    codes_page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    missing = [code for code in CODES if f"`{code}`" not in codes_page]
    assert missing == []


def test_readme_is_a_tour_of_at_most_12_kb():
    # The manual lives in docs/; the README says what claimsdb is, shows it and points there.
    assert (ROOT / "README.md").stat().st_size <= README_MAX_BYTES
