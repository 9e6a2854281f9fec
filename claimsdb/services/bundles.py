"""Loading bundles (fixtures, backups): one transaction, validated as a whole."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.contrib.auth.models import User
from django.db import connection, transaction

from claimsdb.codes import DocumentCode
from claimsdb.records import RuleViolation, RuleViolations, loads, parse_bundle, parse_document
from claimsdb.records.bundle_stream import BundleOutline, iter_list, outline
from claimsdb.records.kinds import CASE, RecordKind, record_kinds

from .ledger import lock_head
from .permissions import RANK
from .writer import RecordWrite, WriteOutcome, write_records

BATCH_SIZE = 500
# On PostgreSQL a load refreshes the statistics of claimsdb's tables once it has read this
# many records, and again each time the count doubles (``_refresh_statistics``).
ANALYZE_FROM = 2_000


def bundle_load(
    *, user: User, bundle: Any, summary: str, material: bool = True
) -> list[WriteOutcome]:
    """Create or update every record of a bundle (or of a single document): all or nothing.

    Records that exist are updated (one revision each, none where nothing changed).
    """
    lists = parse_bundle(bundle)
    writes = [
        RecordWrite(
            kind=kind.name, document=document, mode="upsert", path=f"{kind.plural}[{index}]"
        )
        for kind in record_kinds.in_write_order()
        for index, document in enumerate(lists[kind.plural])
    ]
    if not writes:
        return []
    role = load_role({w.kind for w in writes})
    return write_records(user=user, writes=writes, summary=summary, material=material, role=role)


def load_role(kinds: set[str]) -> str:
    """The role a load of records of ``kinds`` needs, as one change: the most demanding of
    their write roles (for a load of nothing, the least any kind needs)."""
    if not kinds:
        return min((kind.write_role for kind in record_kinds), key=RANK.__getitem__)
    return max((record_kinds.get(kind).write_role for kind in kinds), key=RANK.__getitem__)


OutcomeSink = Callable[[list[WriteOutcome]], None]


def bundle_load_file(
    *,
    user: User,
    path: Path,
    summary: str,
    material: bool = True,
    batch_size: int = BATCH_SIZE,
    on_outcomes: OutcomeSink | None = None,
) -> int:
    """Load a bundle file of any size, streaming it in batches: all of it or nothing.

    The file is read twice, never held: an outline pass (its shape, duplicate keys, which
    cases are linked), then each list in turn (methods, sources, cases, rules), written
    ``batch_size`` records per ``write_records`` call, all in one transaction under the
    ledger lock. Linked cases go in the same batch. The bundle is checked as one change: a
    record its batch refuses is held and written with the other held records after the
    last batch, against the bundle's end state (``_BulkLoader``). Every problem is reported
    with its bundle path; then nothing is written (RuleViolations). ``on_outcomes``
    receives each batch's outcomes as it is written (inside the transaction). Returns the
    number of records. A file holding one record document is loaded as a bundle of one.
    See docs/bulk-loading.md.
    """
    with open(path, "rb") as stream:
        shape = outline(stream)
        if not shape.is_bundle and not shape.problems:
            stream.seek(0)
            outcomes = bundle_load(
                user=user, bundle=loads(stream.read()), summary=summary, material=material
            )
            if on_outcomes is not None:
                on_outcomes(outcomes)
            return len(outcomes)
        if shape.problems:
            raise RuleViolations(shape.problems)
        # the whole file needs the role of its most demanding kind of record, as one change
        role = load_role({kind.name for kind in record_kinds if shape.counts.get(kind.plural)})
        loader = _BulkLoader(user, summary, material, role, on_outcomes)
        read, analyze_at = 0, ANALYZE_FROM
        with transaction.atomic():
            lock_head()
            for kind in record_kinds.in_write_order():
                for batch in _batches(stream, kind, shape, batch_size, loader.problems):
                    loader.write(batch)
                    read += len(batch)
                    if read >= analyze_at:
                        _refresh_statistics()
                        analyze_at = 2 * read
                    # the documents and rows read back form reference cycles: free them now,
                    # so that memory follows the batch rather than the garbage collector
                    del batch
                    gc.collect()
            loader.finish()
            if loader.problems:
                raise RuleViolations(loader.problems)
        return loader.written


def _refresh_statistics() -> None:
    """ANALYZE claimsdb's tables, inside the load's transaction (PostgreSQL only).

    A load is one transaction, so autovacuum never sees its rows, and the planner would
    plan the write path's lookups on statistics of the tables as they were before the load
    (none at all for a new database): it then answers them by scanning whole tables, and
    every batch costs more than the one before. ANALYZE in the transaction samples the
    load's own rows; its statistics are rolled back with the load if it fails. Run at
    doubling counts, it costs a few seconds over a load of 100,000 cases.
    """
    if connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    models = apps.get_app_config("claimsdb").get_models()
    tables = ", ".join(
        sorted({quote(m._meta.db_table) for m in models if m._meta.managed and not m._meta.proxy})
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


class _BulkLoader:
    """Writes batches, each in a savepoint; holds refused records back to the end.

    A bundle is one change, checked against the state after all of it: a record refused
    in its batch may be refused only because a later record of the bundle has not been
    written yet (a case attributing a figure that a rule, withdrawn further on, still
    forbids). So a refused record, with the cases linked to it, is held, and the batch
    written again without them; once every batch has been read, the held records are
    written together as one more change (``finish``), against the bundle's end state. Only
    what that last change refuses is a problem of the bundle.
    """

    def __init__(
        self,
        user: User,
        summary: str,
        material: bool,
        role: str,
        on_outcomes: OutcomeSink | None,
    ) -> None:
        self.user = user
        self.summary = summary
        self.material = material
        self.role = role
        self.on_outcomes = on_outcomes
        self.problems: list[RuleViolation] = []
        self.held: list[_BatchWrite] = []
        self.written = 0

    def write(self, writes: list[_BatchWrite]) -> None:
        """Write a batch; hold what it refuses, and write the rest, so that later batches
        can refer to it."""
        self.held.extend(self._write(writes, on_refused=lambda violations: None))

    def finish(self) -> None:
        """Write the held records as the bundle's last change; record what it refuses
        (and, the refused taken out, what the rest then refuses: every problem is told)."""
        held, self.held = self.held, []
        self._write(held, on_refused=self.problems.extend)

    def _write(
        self, writes: list[_BatchWrite], on_refused: Callable[[list[RuleViolation]], None]
    ) -> list[_BatchWrite]:
        """Write ``writes``, taking out refused records and their linked cases until the
        rest holds; returns what was taken out. A refusal no record can be blamed for is a
        problem of the bundle whatever ``on_refused`` does."""
        taken: list[_BatchWrite] = []
        while writes:
            try:
                outcomes = write_records(
                    user=self.user,
                    writes=writes,
                    summary=self.summary,
                    material=self.material,
                    role=self.role,
                )
            except RuleViolations as refused:
                refused_paths = {_record_path(v.path) for v in refused.violations}
                groups = {w.group for w in writes if w.path in refused_paths}
                if not groups:
                    self.problems.extend(refused.violations)
                    return taken
                on_refused(refused.violations)
                taken.extend(w for w in writes if w.group in groups)
                writes = [w for w in writes if w.group not in groups]
                continue
            if not self.problems:
                self.written += len(outcomes)
                if self.on_outcomes is not None:
                    self.on_outcomes(outcomes)
            return taken
        return taken


_RECORD_PATH = re.compile(r"^[a-z]+\[\d+\]")


def _record_path(path: str) -> str:
    match = _RECORD_PATH.match(path)
    return match.group(0) if match else ""


@dataclass
class _BatchWrite(RecordWrite):
    """A write that knows its group of linked cases (itself if it has none)."""

    group: Any = None


def _batches(
    stream: IO[bytes],
    kind: RecordKind,
    shape: BundleOutline,
    batch_size: int,
    problems: list[RuleViolation],
) -> Iterator[list[_BatchWrite]]:
    """The list's valid documents as batches of writes; schema problems go to ``problems``.

    A case whose group of linked cases is not complete yet is held until its last member
    has been read, so that the group is written in one batch.
    """
    name = kind.plural
    batch: list[_BatchWrite] = []
    held: dict[int, list[_BatchWrite]] = {}
    missing: dict[int, int] = {}
    for index, raw, refused in iter_list(stream, name, escapes=shape.escapes):
        path = f"{name}[{index}]"
        if refused:
            problems.extend(v.prefixed(path) for v in refused)
            write = None
        else:
            write = _parse(kind.name, raw, path, shape, problems)
        # linked cases go together (``BundleOutline.links``); other records one by one
        if kind is not CASE:
            if write is not None:
                write.group = (name, index)
                batch.append(write)
        else:
            group, size = shape.links.group(index)
            if size == 1:
                if write is not None:
                    write.group = (name, index)
                    batch.append(write)
            else:
                if write is not None:
                    write.group = (name, group)
                    held.setdefault(group, []).append(write)
                missing[group] = missing.get(group, size) - 1
                if missing[group] == 0:
                    del missing[group]
                    batch.extend(held.pop(group, []))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    for group in list(held):  # groups the outline counted but the list did not complete
        batch.extend(held.pop(group))
    if batch:
        yield batch


def _parse(
    kind: str, raw: Any, path: str, shape: BundleOutline, problems: list[RuleViolation]
) -> _BatchWrite | None:
    try:
        _, document = parse_document(raw, kind)
    except RuleViolations as refused:
        problems.extend(v.prefixed(path) for v in refused.violations)
        return None
    if path in shape.duplicates:
        problems.append(
            RuleViolation(
                DocumentCode.DUPLICATE_KEY,
                f"{document['key']} appears twice in this bundle",
                f"{path}.key",
            )
        )
        return None
    return _BatchWrite(kind=kind, document=document, mode="upsert", path=path)
