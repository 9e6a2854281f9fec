"""The documentation kept in step with the code: docs/codes.md is what the codes registry
(claimsdb/codes.py) writes, and lists every code."""

from claimsdb import codes_doc
from claimsdb.codes import REGISTERED

from .conftest import ROOT


def test_codes_doc_is_written_from_the_registry():
    written = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert written == codes_doc.render(), "docs/codes.md is stale: python -m claimsdb.codes_doc"


def test_codes_doc_lists_every_code():
    text = codes_doc.render()
    missing = [code for code in REGISTERED if f"| `{code}` |" not in text]
    assert missing == []
