"""The README documents every stable violation code."""

from claimsdb.rules.codes import CODES

from .support import ROOT


def test_readme_lists_every_code():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [code for code in CODES if f"`{code}`" not in readme]
    assert missing == []
