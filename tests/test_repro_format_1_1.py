"""`repro-results/1.1`: the backends' versions (docs/repro-results-1.md, "1.1"), parser only.

The sample files of fixtures/repro/ (``backend-*``, ``format-1-1-*``) are run by
tests/test_repro_parse.py like every other; this file holds the compatibility promises: a /1
file reads as before, a /1 file relabelled /1.1 reads the same, and a /1.1 file stripped of
what /1.1 adds is a /1 file with the same run.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from claimsdb.importers.repro import FORMAT, SUPPORTED_FORMATS, parse_results
from claimsdb.importers.repro.format import (
    ENVIRONMENT_EXTENSION,
    FORMAT_1_1,
    SCENARIO_EXTENSION,
)
from claimsdb.importers.repro.run import backend_build

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "repro"


def _document(folder: str, name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / folder / f"{name}.json").read_text())


def _parse(document: dict[str, Any]) -> tuple[Any, list[Any]]:
    return parse_results(io.BytesIO(json.dumps(document).encode()))


def _strip(document: dict[str, Any]) -> dict[str, Any]:
    """The /1 file a /1.1 file is without what /1.1 adds."""
    stripped = copy.deepcopy(document)
    stripped["format"] = FORMAT
    for key in ENVIRONMENT_EXTENSION:
        stripped["environment"].pop(key, None)
    for scenario in stripped["scenarios"]:
        for key in SCENARIO_EXTENSION:
            scenario.pop(key, None)
    return stripped


def test_both_formats_are_read():
    assert SUPPORTED_FORMATS == (FORMAT, FORMAT_1_1)


@pytest.mark.parametrize("name", ["valid-small", "valid-no-trials"])
def test_a_format_1_file_relabelled_reads_the_same(name: str):
    document = _document("valid", name)
    old, old_problems = _parse(document)
    new, new_problems = _parse(dict(document, format=FORMAT_1_1))

    assert old_problems == new_problems == []
    assert [vars(s) for s in old.scenario_summaries] == [vars(s) for s in new.scenario_summaries]
    assert old.trial_counts == new.trial_counts
    assert all(s.backend_version == "" for s in new.scenario_summaries)


@pytest.mark.parametrize("name", ["backend-versions", "backend-versions-mixed"])
def test_a_format_1_1_file_without_its_new_fields_is_a_format_1_file(name: str):
    document = _document("valid", name)
    new, new_problems = _parse(document)
    old, old_problems = _parse(_strip(document))

    assert new_problems == old_problems == []
    assert old.run_id == new.run_id and old.trial_counts == new.trial_counts
    for before, after in zip(old.scenario_summaries, new.scenario_summaries, strict=True):
        kept = {k: v for k, v in vars(after).items() if not k.startswith("backend_")}
        assert {k: v for k, v in vars(before).items() if not k.startswith("backend_")} == kept


def test_a_format_1_reader_is_told_to_declare_format_1_1():
    run, problems = _parse(_document("invalid", "backend-versions-undeclared"))

    assert [(p.code, p.path, p.message) for p in problems] == [
        (
            "repro.unknown_key",
            "environment.backends",
            '"backends" is not a field of the environment in repro-results/1; it is one in '
            'repro-results/1.1: declare "format": "repro-results/1.1" to state it.',
        ),
        (
            "repro.unknown_key",
            "scenarios[1].backend_version",
            '"backend_version" is not a field of a scenario in repro-results/1; it is one in '
            'repro-results/1.1: declare "format": "repro-results/1.1" to state it.',
        ),
    ]


def test_an_extension_key_in_the_wrong_place_is_an_unknown_key_in_either_format():
    document = _document("valid", "backend-versions")
    document["backend_version"] = "1.0"
    _, problems = _parse(document)

    assert [(p.code, p.path) for p in problems] == [("repro.unknown_key", "backend_version")]
    assert "only keys beginning with x- may be added" in problems[0].message
    assert "repro-results/1.1" in problems[0].message


def test_a_scenario_stating_any_of_its_build_states_all_of_it():
    """Version, commit and Package URL come from one place: a scenario that names its own
    commit does not borrow the environment's version (that would invent a build)."""
    build = {"backend": "mooncake", "version": "0.3.6", "commit": "abcd", "purl": "pkg:x/y"}

    assert backend_build({"backend": "mooncake"}, build) == {
        "backend_version": "0.3.6",
        "backend_commit": "abcd",
        "backend_purl": "pkg:x/y",
    }
    assert backend_build({"backend": "mooncake", "backend_commit": "ef01"}, build) == {
        "backend_version": "",
        "backend_commit": "ef01",
        "backend_purl": "",
    }
    assert backend_build({"backend": "mooncake"}, None) == {
        "backend_version": "",
        "backend_commit": "",
        "backend_purl": "",
    }


def test_a_package_url_without_a_version_goes_with_any_stated_version():
    document = _document("valid", "backend-versions")
    document["environment"]["backends"][0]["purl"] = "pkg:pypi/mooncake-transfer-engine"
    run, problems = _parse(document)

    assert problems == []
    assert run.scenario_summaries[0].backend_purl == "pkg:pypi/mooncake-transfer-engine"
    assert run.scenario_summaries[0].backend_version == "v0.3.7"


def test_an_overlong_version_or_package_url_is_refused_once():
    document = _document("valid", "backend-versions")
    document["scenarios"][2]["backend_version"] = "1" * 201
    document["scenarios"][2]["backend_purl"] = "pkg:pypi/nixl@" + "1" * 500
    _, problems = _parse(document)

    assert sorted((p.code, p.path) for p in problems) == [
        ("repro.invalid", "scenarios[2].backend_purl"),
        ("repro.invalid", "scenarios[2].backend_version"),
    ]
