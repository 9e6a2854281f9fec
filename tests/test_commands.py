"""load_records, export_records, verify_history, setup_demo."""

import copy
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from claimsdb.models import Revision
from claimsdb.records import bundle_document

from .support import SEED_PATH, load_seed_bundle

pytestmark = pytest.mark.django_db


def export(tmp_path, name="export.json") -> str:
    out = tmp_path / name
    call_command("export_records", out=str(out))
    return out.read_text(encoding="utf-8")


def test_load_prints_outcomes_and_is_idempotent(reviewer, capsys):
    call_command("load_records", str(SEED_PATH), user="reviewer")
    out = capsys.readouterr().out
    assert "case CP22-003: created (revision 17)" in out
    count = Revision.objects.count()
    call_command("load_records", str(SEED_PATH), user="reviewer")
    out = capsys.readouterr().out
    assert "case CP22-003: unchanged" in out
    assert Revision.objects.count() == count


def test_export_load_export_is_byte_identical(reviewer, tmp_path, django_db_blocker):
    call_command("load_records", str(SEED_PATH), user="reviewer")
    first = export(tmp_path, "first.json")
    assert first == SEED_PATH.read_text(encoding="utf-8")
    # into an empty knowledge base
    from claimsdb.models import (
        AssessmentMethod,
        Case,
        ClaimIdReservation,
        LedgerHead,
        ScopeRule,
        Source,
    )

    ScopeRule.objects.all().delete()
    Case.objects.all().delete()
    Source.objects.all().delete()
    AssessmentMethod.objects.all().delete()
    ClaimIdReservation.objects.all().delete()
    Revision.objects.all().delete()
    LedgerHead.objects.update(number=0, chain_hash="0" * 64)
    assert bundle_document()["cases"] == []
    (tmp_path / "in.json").write_text(first, encoding="utf-8")
    call_command("load_records", str(tmp_path / "in.json"), user="reviewer")
    assert export(tmp_path, "second.json") == first
    assert connection.vendor in {"sqlite", "postgresql"}


def test_every_seed_field_survives_the_round_trip(seeded):
    exported = bundle_document()
    assert exported == seeded
    cp3 = next(c for c in exported["cases"] if c["key"] == "CP22-003")
    assert [c["id"] for c in cp3["claims"]] == [
        "CLM-CP22-003-A",
        "CLM-CP22-003-B",
        "CLM-ENRICH-20261028-014",
    ]
    assert cp3["claims"][0]["evidence"][0]["locator"] == (
        "Technical analysis; RDMA transfer cancellation and slot reuse"
    )
    assessment = cp3["assessments"][0]
    assert assessment["impact"] is None
    assert assessment["impact_ungraded_reason"].startswith("Impact is left ungraded because")
    assert assessment["values"] == {
        "setting": "research_demonstration",
        "exploitation": "demonstrated",
        "evidence_grade": "B",
        "remediation": "fixed_reported",
        "ai_role": "against_ai",
    }


def bad_bundles():
    seed = load_seed_bundle()
    cases = [
        (
            "malformed JSON",
            b'{"format": "claimsdb.bundle/1", "cases": [',
            {("document.malformed", "")},
        ),
        (
            "unknown format",
            {**seed, "format": "claimsdb.bundle/7"},
            {("document.format", "format")},
        ),
    ]
    missing = copy.deepcopy(seed)
    del missing["cases"][1]["claims"][0]["statement"]
    cases.append(
        ("missing field", missing, {("document.missing_field", "cases[1].claims[0].statement")})
    )
    wrong_type = copy.deepcopy(seed)
    wrong_type["cases"][1]["tags"] = "kv-cache"
    cases.append(("wrong type", wrong_type, {("document.type", "cases[1].tags")}))
    unknown_source = copy.deepcopy(seed)
    unknown_source["cases"][1]["claims"][1]["evidence"][0]["source"] = "SRC-NOWHERE"
    cases.append(
        (
            "unknown source key",
            unknown_source,
            {("evidence.source_unknown", "cases[1].claims[1].evidence[0].source")},
        )
    )
    duplicate = copy.deepcopy(seed)
    duplicate["cases"][1]["claims"].append(copy.deepcopy(duplicate["cases"][1]["claims"][0]))
    cases.append(
        ("duplicate claim ID", duplicate, {("claim.id_duplicate", "cases[1].claims[3].id")})
    )
    across = copy.deepcopy(seed)
    across["cases"][0]["claims"].append(
        {**copy.deepcopy(across["cases"][1]["claims"][0]), "evidence": []}
    )
    across["cases"][0]["claims"][-1]["status"] = "unverified"
    cases.append(
        ("claim ID used by another case", across, {("claim.id_taken", "cases[1].claims[0].id")})
    )
    several = copy.deepcopy(seed)
    del several["cases"][0]["title"]
    several["cases"][1]["status"] = "published"
    several["rules"][0]["figure"] = "not-a-figure"
    cases.append(
        (
            "every problem at once",
            several,
            {
                ("document.missing_field", "cases[0].title"),
                ("document.invalid_value", "cases[1].status"),
                ("document.invalid_value", "rules[0].figure"),
            },
        )
    )
    return cases


@pytest.mark.parametrize(
    "name, content, expected", bad_bundles(), ids=[c[0] for c in bad_bundles()]
)
def test_bad_bundles_are_refused_with_every_problem(
    reviewer, tmp_path, capsys, name, content, expected
):
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    with pytest.raises(CommandError):
        call_command("load_records", str(path), user="reviewer")
    err = capsys.readouterr().err
    assert "refused, nothing written" in err
    for code, where in expected:
        assert f"{where or '(document)'}: {code}:" in err, err
    assert Revision.objects.count() == 0
    assert bundle_document()["cases"] == []


def test_claim_id_used_before_in_the_database_is_refused(seeded, tmp_path, capsys):
    other = copy.deepcopy(seeded["cases"][0])
    other["key"] = "CP22-077"
    other["figures"] = []
    other["relations"] = []
    other["claims"][0]["id"] = "CLM-CP22-003-A"
    path = tmp_path / "reuse.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("load_records", str(path), user="reviewer")
    assert "claims[0].id: claim.id_taken" in capsys.readouterr().err


def test_load_needs_a_known_user(tmp_path):
    with pytest.raises(CommandError, match="no user named"):
        call_command("load_records", str(SEED_PATH), user="ghost")


def test_export_to_stdout_matches_file(seeded, tmp_path, capsys):
    call_command("export_records")
    assert capsys.readouterr().out == SEED_PATH.read_text(encoding="utf-8")


def test_verify_history_command(seeded, capsys):
    call_command("verify_history")
    assert "history verifies: 18 revisions" in capsys.readouterr().out
    Revision.objects.filter(number=18).update(summary="edited")
    with pytest.raises(CommandError):
        call_command("verify_history")
    assert "revision 18" in capsys.readouterr().err


def test_setup_demo_is_idempotent(settings, db, tmp_path, capsys, monkeypatch):
    from claimsdb.management.commands import setup_demo

    settings.DEBUG = True
    monkeypatch.setattr(setup_demo, "PASSWORD_FILE", tmp_path / "demo-password")
    call_command("setup_demo")
    count = Revision.objects.count()
    assert count == 18  # the seed: 1 method, 10 sources, 4 components, 2 cases, 1 rule
    call_command("setup_demo")
    assert Revision.objects.count() == count
    from claimsdb.models import Release

    assert Release.objects.count() == 1
    password = (tmp_path / "demo-password").read_text().strip()
    assert password in capsys.readouterr().out
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("setup_demo")
