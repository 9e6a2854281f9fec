from claimsdb.integrity import check_rules, verify_history
from claimsdb.records import bundle_document, dumps_pretty

from .support import SEED_PATH


def test_seed_loads_and_exports_identically(seeded):
    assert dumps_pretty(bundle_document()) == SEED_PATH.read_text(encoding="utf-8")
    assert verify_history() == []
    assert check_rules() == []
