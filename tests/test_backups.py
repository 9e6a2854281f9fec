"""Backup and restore: a restored knowledge base exports byte-identically, its history
verifies with the same chain head, and claim IDs stay reserved."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.integrity import verify_history
from claimsdb.models import (
    AffectedEntry,
    ClaimIdReservation,
    Component,
    LedgerHead,
    Release,
    Revision,
    TrialRow,
)
from claimsdb.records import RuleViolations, record_document
from claimsdb.selectors.components import components_by_name
from claimsdb.services import bundle_load, case_update, writer
from claimsdb.services.backups import backup_keys
from claimsdb.services.releases import release_publish

from .support import ROOT

VALID_RESULTS = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
KEY = "k" * 24 + "0123456789abcdef" * 2  # as a test's key; made with secrets.token_hex(32)
OLD_KEY = "o" * 64
# the seed's scope rule forbids this figure of CP22-002 to be attributed to CP22-003
FORBIDDEN = {"figure": "FIG-CP22-002-RESPONSES", "role": "impact_basis", "note": ""}


@pytest.fixture(autouse=True)
def backup_key(settings):
    settings.BACKUP_KEY = KEY
    settings.BACKUP_KEY_FILE = ""
    return KEY


def _rights() -> dict:
    """Every account's groups and permissions, and every group's, by name."""
    return {
        "users": {
            user.username: (
                sorted(user.groups.values_list("name", flat=True)),
                sorted(user.user_permissions.values_list("codename", flat=True)),
            )
            for user in User.objects.all()
        },
        "groups": {
            group.name: sorted(group.permissions.values_list("codename", flat=True))
            for group in Group.objects.all()
        },
    }


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
    # accounts' rights beyond the roles: a group of one's own, a permission given directly
    auditors = Group.objects.create(name="auditors")
    auditors.permissions.add(Permission.objects.get(codename="view_case"))
    analyst.groups.add(auditors)
    analyst.user_permissions.add(Permission.objects.get(codename="view_user"))
    rights = _rights()
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
    said = out.getvalue()
    assert f"HMAC-SHA256 of manifest.json under backup key {backup_keys()[0].key_id}" in said
    assert f"history verified: {head.number} revisions" in said
    assert "rules checked (check_rules): 2 cases and 1 scope rule, no violations" in said
    assert "export identical" in said
    assert _export(tmp_path) == exported
    assert verify_history() == []
    restored = LedgerHead.objects.get(pk=1)
    assert (restored.number, restored.chain_hash) == (head.number, head.chain_hash)
    assert TrialRow.objects.count() == rows
    assert Release.objects.count() == 1
    # components, the cases' affected entries and the names that find components
    assert Component.objects.count() == len(seed_bundle["components"])
    assert AffectedEntry.objects.filter(case__key="CP22-003").count() == 3
    assert components_by_name(["mooncake"]) == {"mooncake": ["CMP-MOONCAKE"]}
    assert _rights() == rights
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


# --- forgeries ----------------------------------------------------------------------------


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


def _sums(path: Path) -> dict:
    data = path.read_bytes()
    import hashlib

    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _reseal(directory: Path, **changes) -> None:
    """What a forger with write access to the backups can do: recompute every file's
    SHA-256 and size in the manifest (and apply ``changes`` to it), keeping its proof."""
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    for name, entry in manifest["files"].items():
        entry.update(_sums(directory / name))
    manifest.update(changes)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _restore_refused(directory: Path, match: str) -> None:
    call_command("flush", interactive=False, verbosity=0)
    with pytest.raises(CommandError, match=match):
        call_command("restore", str(directory), stdout=io.StringIO())
    assert not Revision.objects.exists()


def _forbidden_state(analyst, monkeypatch) -> None:
    """The forbidden attribution, written behind the scope check: its revision, snapshot
    and chain are as genuine as any; only check_rules can tell."""
    document = record_document("case", "CP22-003")
    document["attributions"].append(dict(FORBIDDEN))
    with monkeypatch.context() as patched:
        patched.setattr(writer, "_check_scope", lambda *args, **kwargs: set())
        case_update(user=analyst, key="CP22-003", document=document, summary="Attribute")
    assert verify_history() == []


@pytest.mark.django_db(transaction=True)
def test_a_forged_attribution_with_its_chain_and_sums_fixed_is_refused(
    tmp_path, reviewer, analyst, seed_bundle, monkeypatch
):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    honest = tmp_path / "honest"
    call_command("backup", out=str(honest), stdout=io.StringIO())
    honest_export = _export(tmp_path)
    _forbidden_state(analyst, monkeypatch)
    call_command("backup", out=str(tmp_path / "bad"), stdout=io.StringIO())

    # the forger's copy: the honest backup's proof over every file of the forbidden state —
    # its attribution row, the case's snapshot, the recomputed chain, its export — with the
    # manifest's sums and head fixed to match
    forged = tmp_path / "forged"
    shutil.copytree(tmp_path / "bad", forged)
    shutil.copy(honest / "proof.json", forged / "proof.json")
    bad_manifest = json.loads((tmp_path / "bad" / "manifest.json").read_text())
    shutil.copy(honest / "manifest.json", forged / "manifest.json")
    _reseal(forged, head=bad_manifest["head"])
    assert _files(forged)["proof.json"] == _files(honest)["proof.json"]
    _restore_refused(forged, "manifest.json does not match its HMAC")

    # a backup of a database already broken (or forged by a holder of the key) verifies:
    # the rules, checked before committing, refuse it
    _restore_refused(tmp_path / "bad", r"breaks its rules \(check_rules\).*scope.non_attribution")

    # and the honest backup restores exactly
    call_command("restore", str(honest), stdout=io.StringIO())
    assert _export(tmp_path) == honest_export
    assert verify_history() == []


@pytest.mark.django_db(transaction=True)
def test_a_user_added_to_a_role_group_is_refused(tmp_path, reviewer, analyst, seed_bundle):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    backup = tmp_path / "b"
    call_command("backup", out=str(backup), stdout=io.StringIO())
    groups = backup / "tables" / "auth.user_groups.jsonl"
    with groups.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps([analyst.pk, "reviewer"]) + "\n")
    _reseal(backup)
    _restore_refused(backup, "manifest.json does not match its HMAC")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text.replace(b"\n", b"\r", 1), id="a line ending"),
        pytest.param(lambda text: text.replace(b'"format"', b'"formaT"', 1), id="a letter"),
        pytest.param(lambda text: text + b" ", id="a trailing space"),
    ],
)
def test_a_one_byte_edit_of_the_manifest_is_refused(tmp_path, reviewer, seed_bundle, edit):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    backup = tmp_path / "b"
    call_command("backup", out=str(backup), stdout=io.StringIO())
    manifest = backup / "manifest.json"
    before = manifest.read_bytes()
    manifest.write_bytes(edit(before))
    assert len(manifest.read_bytes()) - len(before) in (0, 1)
    _restore_refused(backup, "manifest.json does not match its HMAC")


@pytest.mark.django_db(transaction=True)
def test_an_added_a_removed_and_an_unsigned_file_are_refused(tmp_path, reviewer, seed_bundle):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    backup = tmp_path / "b"
    call_command("backup", out=str(backup), stdout=io.StringIO())
    kept = tmp_path / "kept"
    shutil.copytree(backup, kept)

    (backup / "tables" / "auth.user_user_permissions.jsonl").write_text("[]\n")
    _restore_refused(backup, "auth.user_user_permissions.jsonl: not in the manifest")
    (backup / "tables" / "auth.user_user_permissions.jsonl").unlink()

    (backup / "tables" / "claimsdb.claimidreservation.jsonl").unlink()
    _restore_refused(backup, "claimsdb.claimidreservation.jsonl: missing")
    shutil.rmtree(backup)
    shutil.copytree(kept, backup)

    (backup / "proof.json").unlink()
    _restore_refused(backup, "no proof.json: the backup is unsigned")


@pytest.mark.django_db(transaction=True)
def test_keys_are_required_rotated_and_never_in_the_backup(
    tmp_path, reviewer, seed_bundle, settings
):
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    settings.BACKUP_KEY = ""
    with pytest.raises(CommandError, match="no backup key: set BACKUP_KEY_FILE"):
        call_command("backup", out=str(tmp_path / "none"), stdout=io.StringIO())
    assert not (tmp_path / "none").exists()
    settings.BACKUP_KEY = "short"
    with pytest.raises(CommandError, match="shorter than 32 characters"):
        call_command("backup", out=str(tmp_path / "none"), stdout=io.StringIO())

    # signed with the old key, kept in the key file after the new one
    key_file = tmp_path / "backup.key"
    key_file.write_text(OLD_KEY + "\n")
    settings.BACKUP_KEY, settings.BACKUP_KEY_FILE = "", str(key_file)
    call_command("backup", out=str(tmp_path / "old"), stdout=io.StringIO())
    assert all(OLD_KEY.encode() not in data for data in _files(tmp_path / "old").values())
    old_id = backup_keys()[0].key_id

    key_file.write_text(KEY + "\n")  # rotated, and the old key dropped: refused
    _restore_refused(tmp_path / "old", f"signed with key '{old_id}', which is not among")
    key_file.write_text(f"{KEY}\n{OLD_KEY}\n")  # rotated, the old key still verifying
    call_command("flush", interactive=False, verbosity=0)
    call_command("restore", str(tmp_path / "old"), stdout=io.StringIO())
    assert verify_history() == []
    call_command("backup", out=str(tmp_path / "new"), stdout=io.StringIO())
    proof = json.loads((tmp_path / "new" / "proof.json").read_text())
    assert proof["key_id"] == backup_keys()[0].key_id != old_id


@pytest.mark.slow
def test_backup_and_restore_commands_across_two_databases(tmp_path: Path):
    """As an operator runs them: back up one database, restore into a new one."""
    base = {
        **os.environ,
        "SECRET_KEY": "backup-test-" + "k" * 50,
        "DJANGO_SETTINGS_MODULE": "claimsdb.settings",
        "DEBUG": "1",
        "BACKUP_KEY": KEY,
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
