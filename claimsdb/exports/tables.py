"""The released record as CSV tables, one file per table a researcher opens (docs/exports.md,
"CSV", which is the data dictionary of every column).

A kind's tables are its registry entry's ``csv_tables`` (``claimsdb.records.kinds``); a kind
without any gets ``generic_table``: one row per record, one column per field of its
document. The same tables serve a release's zip (``release_csv_zip``) and a filtered list
page (``csv_lines``): rows are made from documents, whichever way they were read.

The bytes are fixed by the release alone: rows in key order of their records (then in the
documents' own order), ``\\n`` line endings, UTF-8 without a byte-order mark, and a zip
whose members carry a fixed time and attributes. A text cell that a spreadsheet would take
for a formula is escaped (``safe_cell``).
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.utils.module_loading import import_string

from claimsdb import choices
from claimsdb.models import Release, ReleaseEntry
from claimsdb.records import canonical
from claimsdb.records.figures import number_literal
from claimsdb.records.kinds import RecordKind, record_kinds
from claimsdb.records.stream import BATCH_SIZE, NO_PROGRESS, Progress

from .released import release_count, release_version_batches

# What a cell starting with one of these becomes in a spreadsheet: a formula (= + - @), or a
# cell some spreadsheets read past (tab, carriage return) to a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
LIST_SEPARATOR = "; "
# Every member of a zip carries this time (the earliest a zip can hold) and these bits.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
ZIP_MODE = 0o644 << 16
ZIP_LEVEL = 6


class TableRecord(Protocol):
    """What a row is made of: a record's key, document, revision, and whether it is
    withdrawn (a released version, or a record of the working state)."""

    @property
    def key(self) -> str: ...

    @property
    def document(self) -> dict[str, Any]: ...

    @property
    def revision(self) -> int: ...

    @property
    def withdrawn(self) -> bool: ...


@dataclass(frozen=True)
class Column:
    """A column of a table, as the data dictionary lists it."""

    name: str
    # text, integer, number, boolean, date, list (values joined by "; "), json
    type: str
    meaning: str


Rows = Callable[[TableRecord, Sequence[str]], Iterable[Sequence[Any]]]


@dataclass(frozen=True)
class Table:
    """One CSV file: its name (``cases`` → ``cases.csv``), its columns, and the rows one
    record gives. A table ``by_dimension`` ends with a column per assessment dimension
    (``value_<dimension>``) of the methods of the record read; its rows get their keys."""

    name: str
    columns: tuple[Column, ...]
    rows: Rows
    by_dimension: bool = False

    def header(self, dimensions: Sequence[str]) -> list[str]:
        names = [column.name for column in self.columns]
        if self.by_dimension:
            names += [f"value_{dimension}" for dimension in dimensions]
        return names

    def types(self, dimensions: Sequence[str]) -> list[str]:
        return [column.type for column in self.columns] + (
            ["text"] * len(dimensions) if self.by_dimension else []
        )


# --- cells ------------------------------------------------------------------------------


def safe_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: one starting with ``= + - @``, a tab or a
    carriage return gets a leading apostrophe (``=SUM(A1)`` → ``'=SUM(A1)``), as OWASP
    advises. Readers of the CSV as data take the apostrophe off such cells."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def cell(value: Any, column_type: str) -> str:
    """One value as the column's type writes it."""
    if value is None:
        return ""
    if column_type == "boolean":
        return "true" if value else "false"
    if column_type == "integer":
        return str(int(value))
    if column_type == "number":
        return number_literal(value)
    if column_type == "list":
        return safe_cell(LIST_SEPARATOR.join(str(item) for item in value))
    if column_type == "json":
        return safe_cell(canonical.dumps_compact(value))
    return safe_cell(str(value))


def joined(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --- the tables of a case ---------------------------------------------------------------

COMMON = (
    Column("revision", "integer", "the revision of the record the row was read from"),
    Column("withdrawn", "boolean", "whether that revision withdraws the record"),
)


def current_assessment(document: dict[str, Any]) -> dict[str, Any] | None:
    """A case's newest assessment (the last of its list), or None."""
    return document["assessments"][-1] if document["assessments"] else None


def case_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    document = record.document
    claims = document["claims"]
    current = current_assessment(document) or {}
    values = current.get("values", {})
    yield [
        record.key,
        record.revision,
        record.withdrawn,
        document["title"],
        document["status"],
        document["tags"],
        document["summary"],
        len(claims),
        *(sum(c["status"] == status for c in claims) for status in choices.ClaimStatus.values),
        len({link["source"] for claim in claims for link in claim["evidence"]}),
        len(document["figures"]),
        len(document["relations"]),
        len(document["assessments"]),
        current.get("method"),
        current.get("assessed_on"),
        current.get("assessor"),
        current.get("impact"),
        current.get("impact_ungraded_reason"),
        *(values.get(dimension) for dimension in dimensions),
    ]


CASES = Table(
    "cases",
    (
        Column("key", "text", "the case's key (CP22-003)"),
        *COMMON,
        Column("title", "text", "the case's title"),
        Column("status", "text", "draft, in_review, ready or withdrawn"),
        Column("tags", "list", "its tags, sorted"),
        Column("summary", "text", "the lede under the title"),
        Column("claims", "integer", "how many claims it has, of every status"),
        *(
            Column(f"claims_{status}", "integer", f"how many of its claims are {status}")
            for status in choices.ClaimStatus.values
        ),
        Column("sources", "integer", "how many distinct sources its claims' evidence cites"),
        Column("figures", "integer", "how many figures it owns"),
        Column("relations", "integer", "how many relations its document lists"),
        Column("assessments", "integer", "how many assessments it has"),
        Column("assessment_method", "text", "the method of its current (newest) assessment"),
        Column("assessment_assessed_on", "date", "the date of its current assessment"),
        Column("assessment_assessor", "text", "who made its current assessment"),
        Column(
            "assessment_impact",
            "integer",
            "its current assessment's impact on the method's scale; empty when ungraded",
        ),
        Column(
            "assessment_impact_ungraded_reason",
            "text",
            "why its current assessment leaves the impact ungraded",
        ),
    ),
    case_rows,
    by_dimension=True,
)


def claim_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    for position, claim in enumerate(record.document["claims"], start=1):
        links = claim["evidence"]
        by_relation = {
            relation: joined(link["source"] for link in links if link["relation"] == relation)
            for relation in choices.EvidenceRelation.values
        }
        yield [
            claim["id"],
            record.key,
            position,
            record.revision,
            record.withdrawn,
            claim["statement"],
            claim["status"],
            claim["status_note"],
            claim["basis"],
            claim["origin"],
            len(links),
            *(by_relation[relation] for relation in choices.EvidenceRelation.values),
        ]


CLAIMS = Table(
    "claims",
    (
        Column("claim_id", "text", "the claim's permanent ID (CLM-CP22-003-A)"),
        Column("case", "text", "the key of its case"),
        Column("position", "integer", "its place among the case's claims, from 1"),
        *COMMON,
        Column("statement", "text", "what it claims"),
        Column(
            "status",
            "text",
            "supported, partially_supported, disputed, refuted, unverified or withdrawn",
        ),
        Column("status_note", "text", "why it has that status"),
        Column("basis", "text", "what the claim rests on (reported_finding, lab_reproduction…)"),
        Column("origin", "text", "human, machine or import"),
        Column("evidence", "integer", "how many evidence links it has"),
        *(
            Column(relation, "list", f"the sources of its {relation} links, in their order")
            for relation in choices.EvidenceRelation.values
        ),
    ),
    claim_rows,
)


def evidence_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    for claim in record.document["claims"]:
        for position, link in enumerate(claim["evidence"], start=1):
            yield [
                claim["id"],
                record.key,
                position,
                link["source"],
                link["relation"],
                link["locator"],
            ]


EVIDENCE = Table(
    "evidence",
    (
        Column("claim_id", "text", "the claim the link belongs to"),
        Column("case", "text", "the key of the claim's case"),
        Column("position", "integer", "its place among the claim's links, from 1"),
        Column("source", "text", "the key of the source it cites"),
        Column("relation", "text", "supports, contradicts or context"),
        Column("locator", "text", "which part of the source"),
    ),
    evidence_rows,
)


def assessment_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    assessments = record.document["assessments"]
    for position, assessment in enumerate(assessments, start=1):
        basis = assessment["evidence_basis"]
        yield [
            record.key,
            position,
            position == len(assessments),
            assessment["method"],
            assessment["assessed_on"],
            assessment["assessor"],
            assessment["impact"],
            assessment["impact_ungraded_reason"],
            assessment["narrative"],
            basis["claims"],
            basis["sources"],
            *(assessment["values"].get(dimension) for dimension in dimensions),
        ]


ASSESSMENTS = Table(
    "assessments",
    (
        Column("case", "text", "the key of the assessed case"),
        Column("position", "integer", "its place among the case's assessments, from 1"),
        Column("current", "boolean", "whether it is the case's newest (current) assessment"),
        Column("method", "text", "the key of its method (diggingbeagle.assessment/1)"),
        Column("assessed_on", "date", "when it was made"),
        Column("assessor", "text", "who made it"),
        Column("impact", "integer", "the impact on the method's scale; empty when ungraded"),
        Column("impact_ungraded_reason", "text", "why the impact is ungraded"),
        Column("narrative", "text", "the assessment's narrative (markdown)"),
        Column("basis_claims", "list", "the claims it rests on, sorted"),
        Column("basis_sources", "list", "the sources it rests on, sorted"),
    ),
    assessment_rows,
    by_dimension=True,
)


def figure_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    for position, figure in enumerate(record.document["figures"], start=1):
        yield [
            figure["id"],
            record.key,
            position,
            figure["value"],
            figure["unit"],
            figure["measure"],
            figure["scope"],
            figure["description"],
            figure["claims"],
        ]


FIGURES = Table(
    "figures",
    (
        Column("figure_id", "text", "the figure's ID (FIG-CP22-002-RESPONSES)"),
        Column("case", "text", "the key of the case that owns it"),
        Column("position", "integer", "its place among the case's figures, from 1"),
        Column("value", "number", "the number, as written (1.20 stays 1.20)"),
        Column("unit", "text", "its unit (responses, %)"),
        Column("measure", "text", "what it measures (affected_responses)"),
        Column("scope", "text", "production, lab or estimate"),
        Column("description", "text", "what it counts"),
        Column("claims", "list", "the claims that support it, in their order"),
    ),
    figure_rows,
)


def relation_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    for relation in record.document["relations"]:
        yield [record.key, relation["case"], relation["kind"], relation["note"]]


RELATIONS = Table(
    "relations",
    (
        Column("case", "text", "the case whose document lists the relation"),
        Column("other_case", "text", "the case it relates to"),
        Column(
            "kind",
            "text",
            "same_event, related_distinct, reproduction_of, variant_of, follow_up_of or "
            "duplicate_of (case → other_case)",
        ),
        Column("note", "text", "the analyst's note on the relation"),
    ),
    relation_rows,
)


def affected_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    for position, entry in enumerate(record.document.get("affected", []), start=1):
        yield [
            record.key,
            position,
            entry["component"],
            entry["status"],
            entry["ranges"],
            entry["versions"],
            entry["claims"],
            entry["note"],
        ]


AFFECTED = Table(
    "affected",
    (
        Column("case", "text", "the key of the case that states it"),
        Column("position", "integer", "its place among the case's affected entries, from 1"),
        Column("component", "text", "the key of the component it is about (CMP-NIXL)"),
        Column("status", "text", "affected, fixed, not_affected or under_investigation"),
        Column("ranges", "json", "its version ranges, in OSV's form (events)"),
        Column("versions", "list", "the versions it names, in their order"),
        Column("claims", "list", "the claims of the case it rests on, in their order"),
        Column("note", "text", "the analyst's note on it"),
    ),
    affected_rows,
)

CASE_TABLES = (CASES, CLAIMS, EVIDENCE, ASSESSMENTS, FIGURES, RELATIONS, AFFECTED)


# --- the tables of a component ----------------------------------------------------------


def component_rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
    document = record.document
    same = [
        relation["component"]
        for relation in document["relations"]
        if relation["kind"] == choices.ComponentRelationKind.SAME_COMPONENT
    ]
    yield [
        record.key,
        record.revision,
        record.withdrawn,
        document["name"],
        document["kind"],
        document["status"],
        document["purl"],
        document["version_scheme"],
        document["homepage"],
        document["aliases"],
        same,
    ]


COMPONENTS = Table(
    "components",
    (
        Column("key", "text", "the component's key (CMP-NIXL)"),
        *COMMON,
        Column("name", "text", "its name"),
        Column(
            "kind",
            "text",
            "project, library, transfer_backend, model, service or hardware",
        ),
        Column("status", "text", "active or withdrawn"),
        Column("purl", "text", "its package URL (pkg:pypi/sglang); empty when it has none"),
        Column(
            "version_scheme", "text", "the scheme its versions compare by (pypi, semver, generic…)"
        ),
        Column("homepage", "text", "its homepage"),
        Column("aliases", "list", "the other names it goes by, in their order"),
        Column(
            "same_component",
            "list",
            "the components its relations say are the same thing, by key",
        ),
    ),
    component_rows,
)

COMPONENT_TABLES = (COMPONENTS,)


# --- any other kind ---------------------------------------------------------------------

FIELD_TYPES = {
    "int": "integer",
    "number": "number",
    "date": "date",
    "list": "json",
    "object": "json",
    "object_any": "json",
    "mapping": "json",
}


def generic_table(kind: RecordKind) -> Table:
    """The table of a kind without tables of its own (``sources.csv``, ``rules.csv``…):
    a row per record, a column per field of its document in the format's order (lists and
    objects as compact JSON)."""
    names = [name for name in kind.schema.fields if name not in {"format", "key"}]

    def rows(record: TableRecord, dimensions: Sequence[str]) -> Iterator[list[Any]]:
        document = record.document
        yield [
            record.key,
            record.revision,
            record.withdrawn,
            *(document.get(name) for name in names),
        ]

    return Table(
        kind.plural,
        (
            Column("key", "text", f"the {kind.label}'s key"),
            *COMMON,
            *(
                Column(
                    name,
                    FIELD_TYPES.get(kind.schema.fields[name].kind, "text"),
                    f"the document's {name} field (docs/record-format.md)",
                )
                for name in names
            ),
        ),
        rows,
    )


def tables_of(kind: RecordKind) -> tuple[Table, ...]:
    """The kind's tables (its registry entry's ``csv_tables``), else its generic table."""
    if kind.csv_tables:
        tables: tuple[Table, ...] = import_string(kind.csv_tables)
        return tables
    return (generic_table(kind),)


# --- writing ----------------------------------------------------------------------------


def csv_lines(
    table: Table, records: Iterable[Sequence[TableRecord]], dimensions: Sequence[str]
) -> Iterator[str]:
    """The table's CSV text, in pieces: the header, then the rows of each batch of records."""
    types = table.types(dimensions)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.header(dimensions))
    for batch in records:
        for record in batch:
            for row in table.rows(record, dimensions):
                writer.writerow([cell(value, kind) for value, kind in zip(row, types, strict=True)])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def method_dimensions(methods: Iterable[dict[str, Any]]) -> list[str]:
    """The dimension keys of these method documents: each method's in its order, the methods
    by key, each key once (the ``value_<dimension>`` columns)."""
    keys: dict[str, None] = {}
    for method in sorted(methods, key=lambda document: document["key"]):
        for dimension in method["dimensions"]:
            keys.setdefault(dimension["key"])
    return list(keys)


def release_dimensions(release: Release) -> list[str]:
    """The dimensions of the methods the release published (one query; methods are few)."""
    snapshots = ReleaseEntry.objects.filter(release=release, record_kind="method").values_list(
        "revision__snapshot", flat=True
    )
    return method_dimensions(canonical.loads(snapshot) for snapshot in snapshots)


class _Sink:
    """Where a zip is written as it goes: what it holds so far is taken by ``take``."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.position = 0

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        self.size += len(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        return data


CHUNK = 64 * 1024


def zip_member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ZIP_MODE
    info.create_system = 3  # Unix, whatever system writes it
    return info


def release_csv_zip(
    release: Release, *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[bytes]:
    """The release as a zip of CSV tables (``release-<n>/cases.csv``…), in chunks: each table
    is one pass over its kind's entries, a batch at a time."""
    dimensions = release_dimensions(release)
    sink = _Sink()
    folder = f"claimsdb-release-{release.number}"
    with zipfile.ZipFile(sink, "w", compresslevel=ZIP_LEVEL) as archive:
        for kind in record_kinds:
            for table in tables_of(kind):
                label = f"{table.name}.csv"
                progress.begin(label, release_count(release, kind.name))
                batches = reported(
                    release_version_batches(release, kind.name, batch_size=batch_size), progress
                )
                with archive.open(zip_member(f"{folder}/{label}"), "w", force_zip64=True) as out:
                    for text in csv_lines(table, batches, dimensions):
                        out.write(text.encode("utf-8"))
                        if sink.size >= CHUNK:
                            yield sink.take()
                progress.end()
    yield sink.take()


def reported(batches: Iterable[list[Any]], progress: Progress) -> Iterator[list[Any]]:
    for batch in batches:
        yield batch
        progress.advance(len(batch))


def data_dictionary() -> dict[str, list[Column]]:
    """Every table of every kind with its columns (docs/exports.md lists them all)."""
    return {table.name: list(table.columns) for kind in record_kinds for table in tables_of(kind)}
