"""Backup and restore of a whole knowledge base (docs/operations.md).

A backup is a directory:

``bundle.json``
    the export of the working state (``export_records``), for people and tools;
``tables/<app>.<model>.jsonl``
    every row of every claimsdb table — the ledger (each revision with its snapshot and
    hashes), the live records, claim-ID reservations, imported runs with their trial rows,
    import reports, releases — plus every user account (password hashes included),
    every group with its permissions, who is in which group, and the
    permissions given to accounts themselves (API tokens and sessions are not backed up:
    they are re-issued);
``manifest.json``
    the format, when and from which schema (applied migrations) it was taken, the ledger
    head, the id of the key that signs it, and for each file its SHA-256, size and row
    count;
``proof.json``
    an HMAC-SHA256 of ``manifest.json``'s exact bytes under the backup key
    (``BACKUP_KEY_FILE`` or ``BACKUP_KEY``), which is never written into a backup.

Whoever can write to a backup directory can recompute every SHA-256 and the ledger's
chain, but not the HMAC: so the proof covers every byte of every file — the ledger, the
records, the accounts and their roles, claim-ID reservations, trial rows — and the list
of files itself.

Everything is read in one transaction (a repeatable-read snapshot on PostgreSQL), so the
files agree with one another while writers carry on; rows are streamed in primary-key
order, so memory does not grow with the knowledge base.

``backup_restore`` loads a backup into an empty, migrated database of the same schema, in
one transaction: it checks the manifest's HMAC with one of the configured keys, that the
directory holds exactly the manifest's files, and every SHA-256, before reading a row;
inserts the rows as they were (same primary keys, same revision numbers and hashes), then
proves the result before committing — ``verify_history`` must pass with the manifest's
chain head, ``check_rules`` must find no violation, and the export must be byte-identical
to the backup's ``bundle.json``. Anything else rolls back.
Restoring is the one write that appends no revision: it puts back the ledger itself.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import io
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, models, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from claimsdb.models import LedgerHead, Revision, WebhookCursor

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12
    from typing_extensions import Buffer

FORMAT = "claimsdb.backup/2"
BATCH = 2000
# Accounts' roles and rights, by name (group and permission ids differ per database):
GROUPS = "auth.groups"  # every group, with its permissions
USER_GROUPS = "auth.user_groups"  # memberships
USER_PERMISSIONS = "auth.user_permissions"  # permissions given to an account itself
MANIFEST = "manifest.json"
PROOF = "proof.json"
ALGORITHM = "HMAC-SHA256"
KEY_MIN_LENGTH = 32  # characters of a key (``secrets.token_hex(32)`` makes 64)


class BackupError(Exception):
    """A backup that cannot be restored here, with the reason."""


# --- the backup key ---------------------------------------------------------------------


@dataclass(frozen=True)
class BackupKey:
    """A key that signs (the first configured) or verifies (any configured) backups."""

    secret: bytes = dataclasses.field(repr=False)

    @property
    def key_id(self) -> str:
        """Names the key in a backup without revealing it."""
        return hashlib.sha256(b"claimsdb.backup-key-id\0" + self.secret).hexdigest()[:16]

    def sign(self, manifest: bytes) -> str:
        return hmac.new(self.secret, FORMAT.encode() + b"\n" + manifest, "sha256").hexdigest()


def backup_keys() -> list[BackupKey]:
    """The configured backup keys, the signing key first: ``BACKUP_KEY`` (the keys
    themselves) or ``BACKUP_KEY_FILE`` (a file of them), one key a line or separated by
    white space. Older keys after the first still verify the backups they signed."""
    inline = getattr(settings, "BACKUP_KEY", "") or ""
    path = getattr(settings, "BACKUP_KEY_FILE", "") or ""
    if inline and path:
        raise BackupError("set BACKUP_KEY or BACKUP_KEY_FILE, not both")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BackupError(f"BACKUP_KEY_FILE {path}: cannot read it ({exc})") from exc
        where = f"BACKUP_KEY_FILE {path}"
    else:
        text, where = inline, "BACKUP_KEY"
    words = text.split()
    if not words:
        raise BackupError(
            "no backup key: set BACKUP_KEY_FILE to a file holding one, made with "
            "`python3 -c 'import secrets; print(secrets.token_hex(32))'` and kept apart "
            "from the backups (docs/operations.md#the-backup-key)"
        )
    short = [n for n, word in enumerate(words, start=1) if len(word) < KEY_MIN_LENGTH]
    if short:
        raise BackupError(
            f"{where}: key {short[0]} is shorter than {KEY_MIN_LENGTH} characters; "
            "make keys with secrets.token_hex(32)"
        )
    return [BackupKey(word.encode()) for word in words]


# --- what is backed up ------------------------------------------------------------------


def _backed_up_models() -> list[type[models.Model]]:
    """The user model and every claimsdb model, each after the models it refers to."""
    user_model = apps.get_model("auth", "User")
    wanted = [user_model, *apps.get_app_config("claimsdb").get_models()]
    ordered: list[type[models.Model]] = []

    def visit(model: type[models.Model], trail: tuple[type[models.Model], ...] = ()) -> None:
        if model in ordered or model not in wanted or model in trail:
            return
        for field in model._meta.concrete_fields:
            related = field.related_model  # a model class once the app registry is ready
            if field.is_relation and isinstance(related, type) and related is not model:
                visit(related, (*trail, model))
        ordered.append(model)

    for model in wanted:
        visit(model)
    return ordered


def _label(model: type[models.Model]) -> str:
    return f"{model._meta.app_label}.{model._meta.model_name}"


def _columns(model: type[models.Model]) -> list[models.Field]:
    """The stored columns a row is rebuilt from (database-generated ones are left out)."""
    return [f for f in model._meta.concrete_fields if not getattr(f, "generated", False)]


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def _rows(model: type[models.Model]) -> Iterator[list[Any]]:
    """Every row of ``model`` as a list of column values, in primary-key order, streamed."""
    names = [f.attname for f in _columns(model)]
    last = None
    while True:
        batch = model._base_manager.order_by("pk")
        if last is not None:
            batch = batch.filter(pk__gt=last)
        rows = list(batch.values_list(*names)[:BATCH])
        if not rows:
            return
        for row in rows:
            yield [_encode(v) for v in row]
        last = rows[-1][names.index(model._meta.pk.attname)]


def _permission_name(app_label: str, codename: str) -> str:
    return f"{app_label}.{codename}"


def _groups() -> Iterator[list[Any]]:
    for group in Group.objects.order_by("name").prefetch_related("permissions__content_type"):
        yield [
            group.name,
            sorted(
                _permission_name(p.content_type.app_label, p.codename)
                for p in group.permissions.all()
            ),
        ]


def _user_permissions() -> Iterator[list[Any]]:
    through = apps.get_model("auth", "User").user_permissions.through
    rows = through.objects.order_by("pk").values_list(
        "user_id", "permission__content_type__app_label", "permission__codename"
    )
    for user_id, app_label, codename in rows.iterator(BATCH):
        yield [user_id, _permission_name(app_label, codename)]


def _memberships() -> Iterator[list[Any]]:
    through = apps.get_model("auth", "User").groups.through
    for user_id, name in (
        through.objects.order_by("pk").values_list("user_id", "group__name").iterator(BATCH)
    ):
        yield [user_id, name]


# --- writing ----------------------------------------------------------------------------


class _HashingWriter(io.RawIOBase):
    """A binary file that counts and hashes what passes through it."""

    def __init__(self, path: Path):
        self.file = path.open("wb")
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Buffer) -> int:
        self.sha256.update(data)
        self.size += memoryview(data).nbytes
        return self.file.write(data)

    def close(self) -> None:
        self.file.close()
        super().close()


def _write_jsonl(path: Path, header: list[str], rows: Iterator[list[Any]]) -> dict[str, Any]:
    out = _HashingWriter(path)
    count = 0
    with io.BufferedWriter(out, 1 << 16) as buffered:
        buffered.write((json.dumps(header) + "\n").encode())
        for row in rows:
            buffered.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
            count += 1
        buffered.flush()
        entry = {"sha256": out.sha256.hexdigest(), "bytes": out.size, "rows": count}
    return entry


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


def _applied_migrations() -> list[str]:
    return sorted(
        f"{app}.{name}"
        for app, name in MigrationRecorder.Migration.objects.values_list("app", "name")
    )


def backup_write(*, out: Path) -> dict[str, Any]:
    """Write a backup of the whole knowledge base into the directory ``out`` (which must
    not exist or be empty); returns the manifest."""
    out = Path(out)
    key = backup_keys()[0]  # before anything is written: no key, no backup
    if out.exists() and any(out.iterdir()):
        raise BackupError(f"{out} is not empty: a backup goes into a new directory")
    (out / "tables").mkdir(parents=True, exist_ok=True)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # one consistent snapshot for every file, without blocking writers
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        head = LedgerHead.objects.filter(pk=1).values("number", "chain_hash").first() or {
            "number": 0,
            "chain_hash": "0" * 64,
        }
        files: dict[str, Any] = {}
        for model in _backed_up_models():
            name = f"tables/{_label(model)}.jsonl"
            header = [f.attname for f in _columns(model)]
            files[name] = _write_jsonl(out / name, header, _rows(model))
        name = f"tables/{GROUPS}.jsonl"
        files[name] = _write_jsonl(out / name, ["name", "permissions"], _groups())
        name = f"tables/{USER_GROUPS}.jsonl"
        files[name] = _write_jsonl(out / name, ["user_id", "group"], _memberships())
        name = f"tables/{USER_PERMISSIONS}.jsonl"
        files[name] = _write_jsonl(out / name, ["user_id", "permission"], _user_permissions())
        call_command("export_records", out=str(out / "bundle.json"), stderr=io.StringIO())
        files["bundle.json"] = _file_entry(out / "bundle.json")
        manifest = {
            "format": FORMAT,
            "created_at": timezone.now().astimezone(dt.UTC).isoformat(),
            "database": connection.vendor,
            "migrations": _applied_migrations(),
            "head": {"number": head["number"], "chain_hash": head["chain_hash"]},
            "key_id": key.key_id,
            "files": files,
        }
    text = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    (out / MANIFEST).write_bytes(text)
    proof = {"algorithm": ALGORITHM, "key_id": key.key_id, "hmac": key.sign(text)}
    (out / PROOF).write_text(json.dumps(proof, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


# --- restoring --------------------------------------------------------------------------


def _read_manifest(source: Path) -> dict[str, Any]:
    """The manifest, once its HMAC is proved with one of the configured keys: nothing of a
    backup is believed before that."""
    path = source / MANIFEST
    if not path.is_file():
        raise BackupError(f"{source} has no {MANIFEST}: not a claimsdb backup")
    try:
        text = path.read_bytes()
        proof = json.loads((source / PROOF).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BackupError(
            f"{source} has no {PROOF}: the backup is unsigned (taken before backups were "
            "signed, or its proof was removed), so nothing in it can be trusted"
        ) from exc
    except (OSError, ValueError) as exc:
        raise BackupError(f"{source / PROOF} is not readable JSON: {exc}") from exc
    if not isinstance(proof, dict) or proof.get("algorithm") != ALGORITHM:
        raise BackupError(f"{PROOF}: expected an {ALGORITHM} proof")
    keys = {key.key_id: key for key in backup_keys()}
    key = keys.get(str(proof.get("key_id")))
    if key is None:
        raise BackupError(
            f"{PROOF}: the backup was signed with key {proof.get('key_id')!r}, which is not "
            f"among the configured backup keys ({', '.join(keys)})"
        )
    if not hmac.compare_digest(key.sign(text), str(proof.get("hmac", ""))):
        raise BackupError(
            f"{MANIFEST} does not match its HMAC under key {key.key_id}: the manifest or "
            "its proof was changed after the backup was taken"
        )
    try:
        manifest = json.loads(text.decode("utf-8"))
    except ValueError as exc:  # signed, so written so; kept for a clear message
        raise BackupError(f"{path} is not readable JSON: {exc}") from exc
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{path}: format {manifest.get('format')!r}, expected {FORMAT}")
    if manifest.get("key_id") != key.key_id:
        raise BackupError(f"{MANIFEST} names key {manifest.get('key_id')!r}, not {key.key_id}")
    return manifest


def _check_files(source: Path, manifest: dict[str, Any]) -> None:
    """The directory holds exactly the manifest's files, each with its SHA-256 and size."""
    listed = set(manifest["files"])
    present = {
        path.relative_to(source).as_posix() for path in source.rglob("*") if not path.is_dir()
    } - {MANIFEST, PROOF}
    problems = [f"{name}: not in the manifest" for name in sorted(present - listed)]
    for name, expected in sorted(manifest["files"].items()):
        path = source / name
        if not path.is_file() or path.is_symlink():
            problems.append(f"{name}: missing")
            continue
        found = _file_entry(path)
        if found["sha256"] != expected["sha256"] or found["bytes"] != expected["bytes"]:
            problems.append(f"{name}: SHA-256 or size differs from the manifest (damaged?)")
    if problems:
        raise BackupError("the backup does not match its manifest: " + "; ".join(problems))


def _check_target(manifest: dict[str, Any]) -> None:
    missing = sorted(set(manifest["migrations"]) - set(_applied_migrations()))
    extra = sorted(
        m
        for m in set(_applied_migrations()) - set(manifest["migrations"])
        if m.startswith("claimsdb.")
    )
    if missing or extra:
        raise BackupError(
            "the database's schema differs from the backup's: restore with the claimsdb "
            "version that took the backup, then upgrade "
            f"(missing here: {missing or 'none'}; not in the backup: {extra or 'none'})"
        )
    user_model = apps.get_model("auth", "User")
    if Revision.objects.exists() or user_model.objects.exists():
        raise BackupError(
            "the database is not empty (it has revisions or users): restore into a new, "
            "migrated database"
        )


def _read_jsonl(path: Path) -> tuple[list[str], Iterator[list[Any]]]:
    handle = path.open("r", encoding="utf-8")
    header = json.loads(handle.readline())

    def rows() -> Iterator[list[Any]]:
        with handle:
            for line in handle:
                yield json.loads(line)

    return header, rows()


# Single rows the migrations make in every database (the ledger head, the webhooks'
# fan-out cursor): restored over the migration's row, not beside it.
MADE_BY_MIGRATIONS: tuple[type[models.Model], ...] = (LedgerHead, WebhookCursor)


def _restore_model(model: type[models.Model], path: Path) -> None:
    header, rows = _read_jsonl(path)
    fields = {f.attname: f for f in _columns(model)}
    unknown = [name for name in header if name not in fields]
    if unknown:
        raise BackupError(f"{path.name}: columns {unknown} are not in {_label(model)}")
    if model in MADE_BY_MIGRATIONS:
        for row in rows:
            values = {name: fields[name].to_python(v) for name, v in zip(header, row, strict=True)}
            model._default_manager.update_or_create(pk=values.pop("id"), defaults=values)
        return
    columns = [fields[name] for name in header]
    batch: list[models.Model] = []
    for row in rows:
        values = {name: fields[name].to_python(v) for name, v in zip(header, row, strict=True)}
        batch.append(model(**values))
        if len(batch) >= BATCH:
            _insert_as_stored(model, columns, batch)
            batch = []
    _insert_as_stored(model, columns, batch)


def _insert_as_stored(model: type[models.Model], columns: list[models.Field], rows: list) -> None:
    """Insert rows exactly as given: a raw insert skips ``pre_save``, so ``auto_now_add``
    times (claim-ID reservations, import reports) keep their recorded values, as loading a
    fixture does."""
    size = max(1, connection.ops.bulk_batch_size(columns, rows) if rows else 1)
    for start in range(0, len(rows), size):
        # QuerySet._insert, as Model.save and loaddata use it; the type stubs leave it out
        model._base_manager._insert(  # type: ignore[attr-defined]
            rows[start : start + size], fields=columns, raw=True
        )


def _permissions_by_name() -> dict[str, int]:
    from django.contrib.auth.models import Permission

    return {
        _permission_name(app_label, codename): pk
        for pk, app_label, codename in Permission.objects.values_list(
            "pk", "content_type__app_label", "codename"
        )
    }


def _permission_ids(names: list[str], known: dict[str, int], where: str) -> list[int]:
    unknown = [name for name in names if name not in known]
    if unknown:
        raise BackupError(f"{where}: permissions {unknown} do not exist in this database")
    return [known[name] for name in names]


def _restore_groups(path: Path) -> None:
    """Every group as it was, with exactly its permissions (the role groups exist already:
    the migrations make them)."""
    known = _permissions_by_name()
    _header, rows = _read_jsonl(path)
    for name, permissions in rows:
        group = Group.objects.get_or_create(name=name)[0]
        group.permissions.set(_permission_ids(permissions, known, f"group {name!r}"))


def _restore_user_permissions(path: Path) -> None:
    through = apps.get_model("auth", "User").user_permissions.through
    known = _permissions_by_name()
    _header, rows = _read_jsonl(path)
    batch = []
    for user_id, name in rows:
        (permission,) = _permission_ids([name], known, f"user {user_id}")
        batch.append(through(user_id=user_id, permission_id=permission))
        if len(batch) >= BATCH:
            through.objects.bulk_create(batch)
            batch = []
    through.objects.bulk_create(batch)


def _restore_memberships(path: Path) -> None:
    through = apps.get_model("auth", "User").groups.through
    _header, rows = _read_jsonl(path)
    groups: dict[str, int] = {}
    batch = []
    for user_id, name in rows:
        if name not in groups:
            groups[name] = Group.objects.get_or_create(name=name)[0].pk
        batch.append(through(user_id=user_id, group_id=groups[name]))
        if len(batch) >= BATCH:
            through.objects.bulk_create(batch)
            batch = []
    through.objects.bulk_create(batch)


def _export_digest() -> str:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bundle.json"
        call_command("export_records", out=str(path), stderr=io.StringIO())
        return _file_entry(path)["sha256"]


@dataclass
class RestoreChecks:
    """What ``backup_restore`` proved before it committed, for the command to say."""

    manifest: dict[str, Any]
    key_id: str = ""
    files: int = 0
    rows: int = 0
    revisions: int = 0
    cases: int = 0
    rules: int = 0

    def lines(self) -> list[str]:
        head = self.manifest["head"]
        return [
            f"proof: {ALGORITHM} of {MANIFEST} under backup key {self.key_id}",
            f"files: {self.files}, exactly those of the manifest, each SHA-256 and size "
            f"as listed ({self.rows:,} rows)",
            f"history verified: {self.revisions:,} revisions, chain head revision "
            f"{head['number']} ({head['chain_hash'][:12]}…) as in the manifest",
            f"rules checked (check_rules): {_count(self.cases, 'case')} and "
            f"{_count(self.rules, 'scope rule')}, no violations",
            "export identical: bundle.json byte for byte",
        ]


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def backup_restore(*, source: Path) -> RestoreChecks:
    """Restore the backup in ``source`` into this (empty, migrated) database; returns what
    was checked. Raises ``BackupError`` — and writes nothing — if anything does not hold."""
    from claimsdb.integrity import rule_violations, verify_history
    from claimsdb.records.stream import record_count

    source = Path(source)
    manifest = _read_manifest(source)
    _check_files(source, manifest)
    checks = RestoreChecks(
        manifest=manifest,
        key_id=manifest["key_id"],
        files=len(manifest["files"]),
        rows=sum(entry.get("rows", 0) for entry in manifest["files"].values()),
    )
    with transaction.atomic():
        _check_target(manifest)
        restored = []
        for model in _backed_up_models():
            name = f"tables/{_label(model)}.jsonl"
            if name not in manifest["files"]:
                raise BackupError(f"the backup has no {name}")
            _restore_model(model, source / name)
            restored.append(model)
        for name in (GROUPS, USER_GROUPS, USER_PERMISSIONS):
            if f"tables/{name}.jsonl" not in manifest["files"]:
                raise BackupError(f"the backup has no tables/{name}.jsonl")
        _restore_groups(source / f"tables/{GROUPS}.jsonl")
        _restore_memberships(source / f"tables/{USER_GROUPS}.jsonl")
        _restore_user_permissions(source / f"tables/{USER_PERMISSIONS}.jsonl")
        with connection.cursor() as cursor:
            for statement in connection.ops.sequence_reset_sql(no_style(), restored):
                cursor.execute(statement)
        problems = verify_history()
        if problems:
            raise BackupError(
                "the restored ledger does not verify: " + "; ".join(map(str, problems[:10]))
            )
        head = LedgerHead.objects.get(pk=1)
        if (head.number, head.chain_hash) != (
            manifest["head"]["number"],
            manifest["head"]["chain_hash"],
        ):
            raise BackupError("the restored chain head differs from the manifest's")
        checks.revisions = head.number
        violations = []
        for violation in rule_violations():
            violations.append(str(violation))
            if len(violations) >= 10:
                break
        if violations:
            raise BackupError(
                "the restored knowledge base breaks its rules (check_rules): "
                + "; ".join(violations)
            )
        checks.cases, checks.rules = record_count("case"), record_count("rule")
        if _export_digest() != manifest["files"]["bundle.json"]["sha256"]:
            raise BackupError("the restored knowledge base does not export as the backup did")
    return checks
