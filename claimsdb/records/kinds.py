"""The registry of record kinds: everything claimsdb knows about each kind, in one entry.

A record kind (case, source, scope rule, assessment method) is the unit with a stable key,
a history in the ledger and a place in releases. Code that treats every kind alike asks
this registry — the model, the document format, the bundle list and URL segment, who
writes it, what a release publishes, how its documents are built — instead of keeping a
table of its own (as Django's app registry answers for applications). Behaviour that is
truly one kind's own (a case's claims, a rule's scope checks) stays with that kind's
code. docs/development.md, "Adding a record kind", lists what a new kind takes.

Three orders, each for its own reason:

* **listing order** — the order of registration below: what readers care about first
  (cases, sources, rules, methods). Releases list their entries so; the API schema names
  the kinds so.
* **write order** (``write_rank``) — records a change writes before the records that refer
  to them: methods and sources before the cases whose assessments and evidence name them,
  cases before the scope rules naming their figures. Bundles list their records so, and
  loads and the write path take them so (a revision number follows it).
* **bundle-file order** — by list name, as a canonical bundle file sorts its fields.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Model, QuerySet

from claimsdb import choices
from claimsdb.models import AssessmentMethod, Case, Component, ScopeRule, Source

from . import schema
from .batched import CASE_FIELDS, case_documents
from .builders import (
    component_document,
    method_document,
    row_by_row,
    rule_document,
    source_document,
)

DocumentBuilder = Callable[[Sequence[Any]], list[dict[str, Any]]]


@dataclass(frozen=True)
class RecordKind:
    """One kind of record, and how the code that treats every kind alike treats it."""

    # The kind's name in the ledger, releases and the API (``case``) and its label.
    choice: choices.RecordKind
    # The format of its documents (docs/record-format.md).
    format: str
    # The name of its list in a bundle and the first segment of its pages' URLs (``cases``).
    plural: str
    # The live table of its records, one row per record, keyed by ``key``.
    model: type[Model]
    # The declaration every document of the kind is checked against (records/schema.py).
    schema: schema.Field
    # Rows of ``rows()`` → their documents, in their order: one builder for one record and
    # for a batch, so a page, an export and the write path read a record alike.
    build: DocumentBuilder
    # What ``build`` reads of each row (all of it when empty).
    row_fields: tuple[str, ...]
    # Its place in the write order (see the module docstring). The ranks leave room between
    # them for a kind that must come between two others.
    write_rank: int
    # The least role that creates, changes or withdraws one (services/permissions.py).
    write_role: str
    # The status a release publishes it in; withdrawn records are published as withdrawn.
    published_status: str
    # The seed record (fixtures/seed.json) the API's documentation shows as an example and
    # the generic tests of every kind read and write.
    example_key: str
    # The fields ``?q=`` searches in the released record (claimsdb.release_facets).
    text_fields: tuple[str, ...] = ()
    # Keys contain a slash (``diggingbeagle.assessment/1``): URLs match them as paths.
    keys_hold_slashes: bool = False
    # What the exports of a release make of its records (docs/exports.md), as dotted paths
    # so that reading the registry does not load the exporters: the STIX mapping (released
    # versions → STIX objects, ``claimsdb.exports.stix``) and the CSV tables (a tuple of
    # ``claimsdb.exports.tables.Table``). Empty: the generic mapping and table, which carry
    # every field of the document.
    stix_mapping: str = ""
    csv_tables: str = ""
    # A bundle may leave its list out (read as empty): a kind added after bundles of the
    # other kinds were written, so that those still load as they did.
    bundle_optional: bool = False

    @property
    def name(self) -> str:
        return self.choice.value

    @property
    def label(self) -> str:
        return self.choice.label

    @property
    def key_pattern(self) -> str:
        return self.schema.fields["key"].pattern

    @property
    def component(self) -> str:
        """The stem of its OpenAPI components: ``Case`` of ``CaseDocument``, ``CasePatch``."""
        return self.name.title()

    # --- documents of the live records --------------------------------------------------

    def rows(self) -> QuerySet:
        """The kind's rows with what ``documents`` needs of them."""
        records = self.model._default_manager.all()
        return records.only(*self.row_fields) if self.row_fields else records

    def documents(self, rows: Sequence[Any]) -> list[dict[str, Any]]:
        """The documents of rows of ``rows()`` (a page, a batch, one), in their order."""
        return self.build(rows)

    def read(self, keys: Collection[str]) -> dict[str, dict[str, Any]]:
        """The live documents of the records among ``keys`` that exist, by key: a fixed
        number of queries however many keys (one for most kinds, twelve for cases)."""
        if not keys:
            return {}
        rows = list(self.rows().filter(key__in=set(keys)))
        return {document["key"]: document for document in self.documents(rows)}

    # --- URLs ------------------------------------------------------------------------------

    def url_name(self, page: str) -> str:
        """The name of one of its pages: ``case-detail``, ``source-history`` (prefixed with
        ``api:`` for the API's)."""
        return f"{self.name}-{page}"

    def record_path(self, key: str) -> str:
        return f"/{self.plural}/{key}/"

    def revision_path(self, key: str, number: int) -> str:
        """The page of one revision of a record (``/cases/CP22-003/revisions/13/``)."""
        return f"/{self.plural}/{key}/revisions/{number}/"

    def diff_path(self, key: str, a: int, b: int) -> str:
        return f"/{self.plural}/{key}/diff/{a}/{b}/"


class KindRegistry:
    """The record kinds, in listing order; each looked up by name, format or list name."""

    def __init__(self) -> None:
        self._kinds: dict[str, RecordKind] = {}

    def register(self, kind: RecordKind) -> RecordKind:
        """Add a kind after those registered so far (its place in the listing order)."""
        if kind.schema.fields["format"].values != (kind.format,):
            raise ValueError(f"the {kind.name} schema does not declare the format {kind.format}")
        for other in self._kinds.values():
            for what in ("name", "format", "plural", "write_rank"):
                if getattr(other, what) == getattr(kind, what):
                    raise ValueError(f"{kind.name} and {other.name} have the same {what}")
        self._kinds[kind.name] = kind
        return kind

    def get(self, name: str) -> RecordKind:
        try:
            return self._kinds[name]
        except KeyError:
            raise ValueError(f"unknown record kind {name!r}") from None

    def __iter__(self) -> Iterator[RecordKind]:
        """Every kind, in listing order."""
        return iter(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def names(self) -> list[str]:
        return list(self._kinds)

    def by_format(self, format: Any) -> RecordKind | None:
        return next((kind for kind in self if kind.format == format), None)

    def by_plural(self, plural: str) -> RecordKind | None:
        return next((kind for kind in self if kind.plural == plural), None)

    def listing_rank(self, name: str) -> int:
        """A key to list records by kind in listing order."""
        return list(self._kinds).index(name)

    def in_write_order(self) -> list[RecordKind]:
        return sorted(self, key=lambda kind: kind.write_rank)

    def in_bundle_file_order(self) -> list[RecordKind]:
        return sorted(self, key=lambda kind: kind.plural)


record_kinds = KindRegistry()

CASE = record_kinds.register(
    RecordKind(
        choice=choices.RecordKind.CASE,
        format="claimsdb.case/1",
        plural="cases",
        model=Case,
        schema=schema.CASE,
        build=case_documents,
        row_fields=CASE_FIELDS,
        write_rank=30,
        write_role="analyst",
        published_status=choices.CaseStatus.READY,
        example_key="CP22-003",
        text_fields=("key", "title", "summary", "scope_note", "account", "basis", "limits"),
        stix_mapping="claimsdb.exports.stix.case_objects",
        csv_tables="claimsdb.exports.tables.CASE_TABLES",
    )
)
SOURCE = record_kinds.register(
    RecordKind(
        choice=choices.RecordKind.SOURCE,
        format="claimsdb.source/1",
        plural="sources",
        model=Source,
        schema=schema.SOURCE,
        build=row_by_row(source_document),
        row_fields=(),
        write_rank=20,
        write_role="analyst",
        published_status=choices.RecordStatus.ACTIVE,
        example_key="SRC-SGLANG-KV-TRANSFER-SAFETY",
        text_fields=("key", "title", "publisher", "url", "notes"),
        stix_mapping="claimsdb.exports.stix.source_objects",
    )
)
RULE = record_kinds.register(
    RecordKind(
        choice=choices.RecordKind.RULE,
        format="claimsdb.rule/1",
        plural="rules",
        model=ScopeRule,
        schema=schema.RULE,
        build=row_by_row(rule_document),
        row_fields=(),
        write_rank=40,
        write_role="reviewer",
        published_status=choices.RecordStatus.ACTIVE,
        example_key="RULE-CP22-002-RESPONSES-NOT-CP22-003",
        stix_mapping="claimsdb.exports.stix.rule_objects",
    )
)
METHOD = record_kinds.register(
    RecordKind(
        choice=choices.RecordKind.METHOD,
        format="claimsdb.method/1",
        plural="methods",
        model=AssessmentMethod,
        schema=schema.METHOD,
        build=row_by_row(method_document),
        row_fields=(),
        write_rank=10,
        write_role="reviewer",
        published_status=choices.RecordStatus.ACTIVE,
        example_key="diggingbeagle.assessment/1",
        keys_hold_slashes=True,
    )
)
COMPONENT = record_kinds.register(
    RecordKind(
        choice=choices.RecordKind.COMPONENT,
        format="claimsdb.component/1",
        plural="components",
        model=Component,
        schema=schema.COMPONENT,
        build=row_by_row(component_document),
        row_fields=(),
        # after sources, before the cases whose affected entries name components
        write_rank=25,
        write_role="analyst",
        published_status=choices.RecordStatus.ACTIVE,
        # named by no case, so that the generic tests may withdraw it (component.in_use)
        example_key="CMP-SGLANG",
        text_fields=("key", "name", "purl", "homepage"),
        csv_tables="claimsdb.exports.tables.COMPONENT_TABLES",
        bundle_optional=True,
    )
)
