"""docs/codes.md documents every stable violation code."""

from pathlib import Path

from claimsdb.rules.codes import CODES

ROOT = Path(__file__).resolve().parent.parent


def test_codes_page_lists_every_code():
    codes_page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    missing = [code for code in CODES if f"`{code}`" not in codes_page]
    assert missing == []
