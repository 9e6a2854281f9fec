"""Canonical documents: serialization rules, validation paths, diff."""

import copy
import json

import pytest

from claimsdb.records import (
    RuleViolations,
    bundle_document,
    diff,
    dumps_compact,
    dumps_pretty,
    loads,
    parse_bundle,
    parse_document,
)

from .support import SEED_PATH, case_doc


def problems(exc: RuleViolations) -> set[tuple[str, str]]:
    return {(v.code, v.path) for v in exc.violations}


def test_pretty_and_compact_forms():
    document = {"b": [1, 2], "a": "é"}
    assert dumps_pretty(document) == '{\n  "a": "é",\n  "b": [\n    1,\n    2\n  ]\n}\n'
    assert dumps_compact(document) == '{"a":"é","b":[1,2]}'


@pytest.mark.parametrize(
    ("value", "compact"),
    [
        (1e-07, "1e-07"),  # Python's exponent form, two digits at least (not 1e-7)
        (1e16, "1e+16"),
        (0.1, "0.1"),
        (2**70, "1180591620717411303424"),  # integers of any size, exactly
        ("é\u2028\x7f\x00", '"é\u2028\x7f\\u0000"'),  # only control characters escaped
    ],
)
def test_the_compact_form_of_numbers_and_text(value, compact):
    """Snapshots and chain hashes are these bytes: a faster encoder must give them too
    (orjson, for one, writes 1e-7 and refuses integers beyond 64 bits)."""
    assert dumps_compact(value) == compact
    assert dumps_compact(value) == json.dumps(
        value, separators=(",", ":"), sort_keys=True, ensure_ascii=False
    )


def test_seed_file_is_in_canonical_form(seed_bundle):
    assert dumps_pretty(seed_bundle) == SEED_PATH.read_text(encoding="utf-8")


def test_every_seed_document_validates_unchanged(seed_bundle):
    for name in ("methods", "sources", "cases", "rules"):
        for document in seed_bundle[name]:
            _, parsed = parse_document(document)
            assert parsed == document


def test_normalization_sorts_tags_and_basis_and_integral_values(seed_bundle):
    document = case_doc(seed_bundle, "CP22-002")
    document["tags"] = ["zeta", "alpha", "zeta"]
    document["figures"][0]["value"] = 155.0
    _, parsed = parse_document(document)
    assert parsed["tags"] == ["alpha", "zeta"]
    assert parsed["figures"][0]["value"] == 155
    assert isinstance(parsed["figures"][0]["value"], int)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d.pop("title"), {("document.missing_field", "title")}),
        (lambda d: d.update(format="claimsdb.case/9"), {("document.format", "format")}),
        (lambda d: d.update(title=7), {("document.type", "title")}),
        (lambda d: d.update(extra="x"), {("document.unknown_field", "extra")}),
        (lambda d: d.update(status="published"), {("document.invalid_value", "status")}),
        (lambda d: d.update(key="cp22-003"), {("record.key_format", "key")}),
        (
            lambda d: d["claims"][1].update(id="CLM-lower-case"),
            {("claim.id_format", "claims[1].id")},
        ),
        (
            lambda d: d["claims"][0]["evidence"][0].pop("locator"),
            {("document.missing_field", "claims[0].evidence[0].locator")},
        ),
        (
            lambda d: d["assessments"][0].update(assessed_on="28/10/2026"),
            {("document.invalid_value", "assessments[0].assessed_on")},
        ),
        (
            lambda d: d["assessments"][0].update(impact=True),
            {("document.type", "assessments[0].impact")},
        ),
    ],
)
def test_structural_problems_are_reported_with_paths(seed_bundle, mutate, expected):
    document = case_doc(seed_bundle, "CP22-003")
    mutate(document)
    with pytest.raises(RuleViolations) as refused:
        parse_document(document)
    assert problems(refused.value) == expected


def test_all_problems_are_collected_not_just_the_first(seed_bundle):
    document = case_doc(seed_bundle, "CP22-003")
    document.pop("title")
    document["summary"] = None
    document["claims"][0]["status"] = "true"
    with pytest.raises(RuleViolations) as refused:
        parse_document(document)
    assert problems(refused.value) == {
        ("document.missing_field", "title"),
        ("document.type", "summary"),
        ("document.invalid_value", "claims[0].status"),
    }


def test_malformed_json_is_a_violation():
    with pytest.raises(RuleViolations) as refused:
        loads(b'{"format": "claimsdb.bundle/1",')
    assert refused.value.codes == ["document.malformed"]
    with pytest.raises(RuleViolations) as refused:
        loads(b"")
    assert "empty" in refused.value.violations[0].message


def test_bundle_paths_point_into_the_bundle(seed_bundle):
    bundle = copy.deepcopy(seed_bundle)
    bundle["cases"][1]["claims"][0]["basis"] = "rumour"
    bundle["sources"].append(copy.deepcopy(bundle["sources"][0]))
    with pytest.raises(RuleViolations) as refused:
        parse_bundle(bundle)
    assert problems(refused.value) == {
        ("document.invalid_value", "cases[1].claims[0].basis"),
        ("document.duplicate_key", f"sources[{len(bundle['sources']) - 1}].key"),
    }


def test_bundle_with_unknown_format():
    with pytest.raises(RuleViolations) as refused:
        parse_bundle({"format": "claimsdb.bundle/2"})
    assert problems(refused.value) == {("document.format", "format")}


def test_single_document_loads_as_bundle(seed_bundle):
    lists = parse_bundle(seed_bundle["sources"][0])
    assert [d["key"] for d in lists["sources"]] == [seed_bundle["sources"][0]["key"]]
    assert lists["cases"] == []


def test_diff_matches_claims_by_id(seed_bundle):
    old = case_doc(seed_bundle, "CP22-003")
    new = copy.deepcopy(old)
    new["claims"].reverse()
    new["claims"][0]["statement"] = "changed"
    new["claims"].append({**new["claims"][1], "id": "CLM-CP22-003-C"})
    changes = {(c.path, c.op) for c in diff(old, new)}
    assert ("claims[CLM-ENRICH-20261028-014].statement", "changed") in changes
    assert ("claims[CLM-CP22-003-C]", "added") in changes
    assert ("claims:order", "changed") in changes
    assert diff(old, copy.deepcopy(old)) == []


def test_export_is_the_canonical_bundle(seeded):
    exported = dumps_pretty(bundle_document())
    assert json.loads(exported) == seeded
