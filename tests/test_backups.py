"""Backup and restore: a restored knowledge base exports byte-identically, its history
verifies with the same chain head, and claim IDs stay reserved."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.integrity import verify_history
from claimsdb.models import ClaimIdReservation, LedgerHead, Release, Revision, TrialRow
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, case_update
from claimsdb.services.releases import release_publish

from .support import ROOT

VALID_RESULTS = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"


def _export(tmp_path: Path) -> bytes:
    path = tmp_path / "export.json"
    call_command("export_records", out=str(path), stderr=io.StringIO())
    return path.read_bytes()


def _history_of_everything(reviewer, analyst, seed_bundle) -> None:
    """Seed, an import with trial rows, a release, and a claim removed from its case."""
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    ResultsImporter(user=analyst).import_path(VALID_RESULTS)
    release_publish(user=reviewer, notes="First release")
    document = record_document("case", "CP22-003")
    removed = document["claims"].pop()["id"]
    for assessment in document["assessments"]:
        basis = assessment["evidence_basis"]["claims"]
        assessment["evidence_basis"]["claims"] = [c for c in basis if c != removed]
    for figure in document["figures"]:
        figure["claims"] = [c for c in figure["claims"] if c != removed]
    case_update(user=analyst, key="CP22-003", document=document, summary="Drop a claim")
    return removed


@pytest.mark.django_db(transaction=True)
def test_backup_then_restore_into_an_empty_database(tmp_path, reviewer, analyst, seed_bundle):
    removed = _history_of_everything(reviewer, analyst, seed_bundle)
    exported = _export(tmp_path)
    head = LedgerHead.objects.get(pk=1)
    rows = TrialRow.objects.count()
    assert rows > 0

    manifest = {}
    call_command("backup", out=str(tmp_path / "b"), stdout=io.StringIO())
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["head"] == {"number": head.number, "chain_hash": head.chain_hash}
    assert (tmp_path / "b" / "bundle.json").read_bytes() == exported
    assert manifest["files"]["tables/claimsdb.revision.jsonl"]["rows"] == head.number

    call_command("flush", interactive=False, verbosity=0)
    assert not Revision.objects.exists()

    out = io.StringIO()
    call_command("restore", str(tmp_path / "b"), stdout=out)
    assert "history verified, export identical" in out.getvalue()
    assert _export(tmp_path) == exported
    assert verify_history() == []
    restored = LedgerHead.objects.get(pk=1)
    assert (restored.number, restored.chain_hash) == (head.number, head.chain_hash)
    assert TrialRow.objects.count() == rows
    assert Release.objects.count() == 1
    assert ClaimIdReservation.objects.filter(claim_id=removed).exists()
    # the removed claim's ID is still taken after the restore, and the ledger goes on
    document = record_document("case", "CP22-003")
    document["claims"].append({**document["claims"][0], "id": removed})
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="Reuse an ID")
    assert "claim.id_taken" in {v.code for v in refused.value.violations}
    document = record_document("case", "CP22-003")
    document["title"] += " (after restore)"
    outcome = case_update(user=analyst, key="CP22-003", document=document, summary="Go on")
    assert outcome.revision.number == head.number + 1
    assert verify_history() == []


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_a_damaged_backup_and_a_non_empty_database(
    tmp_path, reviewer, analyst, seed_bundle
):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    call_command("backup", out=str(tmp_path / "b"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", out=str(tmp_path / "b"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="not empty"):
        call_command("restore", str(tmp_path / "b"), stdout=io.StringIO())

    call_command("flush", interactive=False, verbosity=0)
    revisions = tmp_path / "b" / "tables" / "claimsdb.revision.jsonl"
    text = revisions.read_text(encoding="utf-8")
    revisions.write_text(text.replace("Seed", "Sded", 1), encoding="utf-8")
    with pytest.raises(CommandError, match="claimsdb.revision.jsonl"):
        call_command("restore", str(tmp_path / "b"), stdout=io.StringIO())
    assert not Revision.objects.exists()
    with pytest.raises(CommandError, match="no manifest.json"):
        call_command("restore", str(tmp_path), stdout=io.StringIO())


@pytest.mark.slow
def test_backup_and_restore_commands_across_two_databases(tmp_path: Path):
    """As an operator runs them: back up one database, restore into a new one."""
    base = {
        **os.environ,
        "SECRET_KEY": "backup-test-" + "k" * 50,
        "DJANGO_SETTINGS_MODULE": "claimsdb.settings",
        "DEBUG": "1",
    }

    def manage(database: str, *args: str) -> str:
        env = {**base, "DATABASE_URL": f"sqlite:///{tmp_path / database}"}
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("a.sqlite3", "migrate", "--noinput", "-v", "0")
    manage("a.sqlite3", "setup_demo")
    before = manage("a.sqlite3", "export_records")
    manage("a.sqlite3", "backup", "--out", str(tmp_path / "backup"))
    manage("b.sqlite3", "migrate", "--noinput", "-v", "0")
    manage("b.sqlite3", "restore", str(tmp_path / "backup"))
    assert manage("b.sqlite3", "export_records") == before
    manage("b.sqlite3", "verify_history")
