"""The synthetic knowledge bases the scale benchmark loads: valid, deterministic, streamed."""

import json

import pytest
from django.core.management import call_command

from claimsdb import synthetic_kb
from claimsdb.integrity import check_rules, verify_history
from claimsdb.models import (
    AffectedEntry,
    Attribution,
    Case,
    Claim,
    Component,
    EvidenceLink,
    Relation,
    Revision,
    ScopeRule,
)
from claimsdb.records import parse_bundle

from .support import load_seed_bundle


def test_method_is_the_seeds():
    (method,) = load_seed_bundle()["methods"]
    assert synthetic_kb.METHOD == method


def test_bundle_is_deterministic_and_well_formed(tmp_path):
    first, second, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    counts = synthetic_kb.write_bundle(first, cases=21, seed=3)
    synthetic_kb.write_bundle(second, cases=21, seed=3)
    synthetic_kb.write_bundle(other, cases=21, seed=4)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    bundle = json.loads(first.read_text(encoding="utf-8"))
    lists = parse_bundle(bundle)  # every field present, of its type and vocabulary
    names = ("methods", "sources", "components", "cases", "rules")
    assert {name: len(lists[name]) for name in names} == {name: counts[name] for name in names}
    assert counts == {
        "methods": 1,
        "sources": 10,
        "components": 3,
        "cases": 21,
        "rules": 5,
        "records": 40,
    }
    # three entries a case, each naming a component of the bundle
    components = {c["key"] for c in lists["components"]}
    for case in lists["cases"]:
        assert len(case["affected"]) == synthetic_kb.AFFECTED_PER_CASE
        assert len({a["component"] for a in case["affected"]}) == 3
        assert {a["component"] for a in case["affected"]} <= components


def test_a_case_reads_the_same_at_every_size():
    small = synthetic_kb.case_document(500, cases=1_000)
    large = synthetic_kb.case_document(500, cases=100_000)
    assert small == large
    # the components a case names exist in every knowledge base holding it
    for cases in (31, 1_000, 100_000):
        named = synthetic_kb.case_document(cases - 1, cases=cases)["affected"]
        count = synthetic_kb.component_count(cases)
        assert all(int(a["component"].rsplit("-", 1)[1]) < count for a in named)
    assert synthetic_kb.component_count(100_000) == 10_000


@pytest.mark.django_db
def test_generated_knowledge_base_loads_clean(reviewer, tmp_path, capsys):
    path = tmp_path / "kb.json"
    counts = synthetic_kb.write_bundle(path, cases=20)
    call_command("load_records", str(path), user="reviewer")
    assert Case.objects.count() == 20
    assert Claim.objects.count() == 20 * synthetic_kb.CLAIMS_PER_CASE
    assert EvidenceLink.objects.count() == 20 * 16
    assert Relation.objects.filter(kind="same_event").count() == 5
    assert Relation.objects.filter(kind="related_distinct").count() == 5
    assert ScopeRule.objects.count() == counts["rules"] == 5
    # own figures twice each, and the same_event partner's production figure
    assert Attribution.objects.count() == 20 * 2 + 10
    assert AffectedEntry.objects.count() == 20 * synthetic_kb.AFFECTED_PER_CASE
    assert Component.objects.count() == counts["components"]
    assert Revision.objects.count() == counts["records"]
    assert check_rules() == []
    assert verify_history() == []
    call_command("check_rules")
    call_command("verify_history")
    assert "no rule violations" in capsys.readouterr().out


@pytest.mark.django_db
def test_command_line_writes_a_bundle(tmp_path, capsys):
    path = tmp_path / "kb.json"
    assert synthetic_kb.main([str(path), "--cases", "4"]) == 0
    assert "4 cases" in capsys.readouterr().out
    assert len(json.loads(path.read_text(encoding="utf-8"))["cases"]) == 4
