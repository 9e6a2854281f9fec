"""The copies of the shared examples in fixtures/repro/ are the examples, byte for byte."""

from __future__ import annotations

import pytest

from .repro_examples import EXAMPLES, SHARED_EXAMPLES


@pytest.mark.skipif(not SHARED_EXAMPLES.is_dir(), reason="the shared examples are not here")
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_fixture_copies_match_the_shared_examples(example):
    assert example.path.read_bytes() == (SHARED_EXAMPLES / example.name).read_bytes()
