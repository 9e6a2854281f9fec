"""Structural validation of documents: every field present, of the right type and vocabulary.

A small declarative schema per record kind; ``check`` walks a document against it and
returns the normalized document (tags sorted, evidence-basis lists sorted, integral
figure values as integers) together with every problem found, each with its path.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from claimsdb import choices, versions
from claimsdb.codes import ClaimCode, DocumentCode, FigureCode, RecordCode, SourceCode
from claimsdb.fieldspec import Field
from claimsdb.limits import TEXT_MAX_CHARS

from .errors import RuleViolation
from .figures import figure_number

Problems = list[RuleViolation]


STRING_KINDS = frozenset({"str", "pattern", "enum", "date", "url"})
# A source's address: empty, or an http(s) URL (a javascript: or data: URL is never stored).
URL_PATTERN = (
    "^(|[hH][tT][tT][pP][sS]?://[^\\s\\x00-\\x1f\\x7f-\\x9f/?#]+[^\\s\\x00-\\x1f\\x7f-\\x9f]*)$"
)


def max_chars(spec: Field) -> int | None:
    """The longest string a field takes: its own limit, else the limit of every text."""
    if spec.kind not in STRING_KINDS:
        return None
    return spec.max_length if spec.max_length is not None else TEXT_MAX_CHARS


def text(max_length: int | None = None) -> Field:
    return Field("str", max_length=max_length)


def enum(values: list[str] | tuple[str, ...], code: str = DocumentCode.INVALID_VALUE) -> Field:
    return Field("enum", values=tuple(values), code=code)


def pattern(regex: str, code: str, max_length: int | None = None) -> Field:
    """A string matching ``regex``; a refusal says the pattern in words with an example
    (``choices.PATTERN_WORDS``), not the regex."""
    return Field(
        "pattern",
        pattern=regex,
        code=code,
        max_length=max_length,
        description=choices.PATTERN_WORDS.get(regex, ""),
    )


def list_of(item: Field, normalize: Callable[[Any], Any] | None = None) -> Field:
    return Field("list", item=item, normalize=normalize)


def obj(**fields: Field) -> Field:
    return Field("object", fields=fields)


def sorted_unique(items: list[str]) -> list[str]:
    return sorted(set(items))


# Characters that are there and not seen: format characters (category Cf: zero-width space
# and joiners, the byte-order mark, soft hyphen, bidi controls…) and the other default
# ignorable code points of Unicode that are not Cf (fillers, variation selectors).
_IGNORABLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0]
    + list(range(0x180B, 0x1810))
    + list(range(0xFE00, 0xFE10))
    + list(range(0xE0100, 0xE01F0))
)


def normalize_tag(tag: str) -> str:
    """A tag as it is stored: NFKC, case-folded (NFKC_Casefold's steps), without invisible
    characters, its spaces collapsed. ``RDMA``, ``rdma`` and ``rdma`` + zero-width space are
    one tag, ``rdma``."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", tag).casefold())
    text = "".join(
        ch for ch in text if ord(ch) not in _IGNORABLE and unicodedata.category(ch) != "Cf"
    )
    return " ".join(text.split())


def normalized_tags(items: list[str]) -> list[str]:
    """Tags normalized (``normalize_tag``), sorted and unique; a tag of invisible characters
    only is no tag."""
    return sorted({tag for tag in map(normalize_tag, items) if tag})


DATE = Field("date")
DATE_OR_NULL = Field("date", nullable=True)

EVIDENCE_LINK = obj(
    source=pattern(choices.SOURCE_KEY_PATTERN, DocumentCode.INVALID_VALUE),
    relation=enum(choices.EvidenceRelation.values),
    locator=text(),
)
CLAIM = obj(
    id=pattern(choices.CLAIM_ID_PATTERN, ClaimCode.ID_FORMAT, choices.ID_MAX_LENGTH),
    statement=text(),
    status=enum(choices.ClaimStatus.values),
    status_note=text(),
    basis=enum(choices.ClaimBasis.values),
    origin=enum(choices.ClaimOrigin.values),
    evidence=list_of(EVIDENCE_LINK),
)
ASSESSMENT = obj(
    method=Field("str", max_length=100),
    assessed_on=DATE,
    assessor=text(200),
    values=Field("mapping", item=Field("str")),
    impact=Field("int", nullable=True),
    impact_ungraded_reason=text(),
    narrative=text(),
    evidence_basis=obj(
        claims=list_of(Field("str"), normalize=sorted_unique),
        sources=list_of(Field("str"), normalize=sorted_unique),
    ),
)
FIGURE = obj(
    id=pattern(choices.FIGURE_ID_PATTERN, FigureCode.ID_FORMAT, choices.ID_MAX_LENGTH),
    value=Field("number"),
    unit=text(100),
    measure=text(100),
    scope=enum(choices.FigureScope.values),
    description=text(),
    claims=list_of(Field("str")),
)

# One entry of a case's ``affected`` list (docs/record-format.md): the field rules check
# the component, the ranges and versions in its scheme, and the claims
# (rules/components.py).
AFFECTED = obj(
    component=pattern(choices.COMPONENT_KEY_PATTERN, DocumentCode.INVALID_VALUE),
    status=enum(choices.AffectedStatus.values),
    ranges=list_of(obj(events=list_of(Field("mapping", item=Field("str", max_length=200))))),
    versions=list_of(Field("str", max_length=200)),
    claims=list_of(Field("str")),
    note=text(),
)

CASE = obj(
    format=enum(["claimsdb.case/1"], DocumentCode.FORMAT),
    key=pattern(choices.CASE_KEY_PATTERN, RecordCode.KEY_FORMAT, choices.KEY_MAX_LENGTH),
    title=text(500),
    status=enum(choices.CaseStatus.values),
    summary=text(),
    scope_note=text(),
    account=text(),
    basis=text(),
    limits=text(),
    tags=list_of(Field("str", max_length=100), normalize=normalized_tags),
    claims=list_of(CLAIM),
    assessments=list_of(ASSESSMENT),
    controls=list_of(obj(kind=enum(choices.ControlKind.values), text=text())),
    unknowns=list_of(obj(kind=enum(choices.UnknownKind.values), text=text())),
    figures=list_of(FIGURE),
    attributions=list_of(
        obj(figure=Field("str"), role=enum(choices.AttributionRole.values), note=text())
    ),
    relations=list_of(
        obj(case=Field("str"), kind=enum(choices.RelationKind.values), note=text()),
        normalize=lambda items: sorted(items, key=lambda r: (r["case"], r["kind"])),
    ),
    reproduction_runs=list_of(
        Field("object_any"), normalize=lambda runs: sorted(runs, key=lambda r: str(r.get("run_id")))
    ),
    # added after the first documents: present only when the case names a component, so
    # the documents (and snapshots) of cases that name none are as they were
    affected=Field("list", item=AFFECTED, optional=True, omit_empty=True),
)

SOURCE = obj(
    format=enum(["claimsdb.source/1"], DocumentCode.FORMAT),
    key=pattern(choices.SOURCE_KEY_PATTERN, RecordCode.KEY_FORMAT, choices.KEY_MAX_LENGTH),
    title=text(500),
    kind=enum(choices.SourceKind.values),
    publisher=text(300),
    url=Field("url", max_length=2000),
    published_on=DATE_OR_NULL,
    accessed_on=DATE_OR_NULL,
    reliability=enum(choices.Reliability.values),
    notes=text(),
    status=Field("enum", values=tuple(choices.RecordStatus.values), optional_default="active"),
)

RULE = obj(
    format=enum(["claimsdb.rule/1"], DocumentCode.FORMAT),
    key=pattern(choices.RULE_KEY_PATTERN, RecordCode.KEY_FORMAT, choices.KEY_MAX_LENGTH),
    kind=enum(choices.RuleKind.values),
    status=enum(choices.RecordStatus.values),
    figure=pattern(choices.FIGURE_ID_PATTERN, DocumentCode.INVALID_VALUE),
    case=pattern(choices.CASE_KEY_PATTERN, DocumentCode.INVALID_VALUE),
    reason=text(),
)

METHOD = obj(
    format=enum(["claimsdb.method/1"], DocumentCode.FORMAT),
    key=pattern(choices.METHOD_KEY_PATTERN, RecordCode.KEY_FORMAT, 100),
    title=text(300),
    dimensions=list_of(
        obj(
            key=pattern(r"^[a-z][a-z0-9_]*$", DocumentCode.INVALID_VALUE, 64),
            label=text(200),
            values=list_of(
                obj(
                    key=Field("str", max_length=64),
                    label=text(200),
                    definition=Field("str", optional=True),
                )
            ),
        )
    ),
    impact=obj(
        min=Field("int"),
        max=Field("int"),
        labels=Field("mapping", item=Field("str")),
        definitions=Field("mapping", item=Field("str"), optional=True),
    ),
    status=Field("enum", values=tuple(choices.RecordStatus.values), optional_default="active"),
)

COMPONENT = obj(
    format=enum(["claimsdb.component/1"], DocumentCode.FORMAT),
    key=pattern(choices.COMPONENT_KEY_PATTERN, RecordCode.KEY_FORMAT, choices.KEY_MAX_LENGTH),
    name=text(300),
    kind=enum(choices.ComponentKind.values),
    purl=text(1000),
    version_scheme=enum(versions.SCHEME_NAMES),
    homepage=Field("url", max_length=2000),
    # an alias has a character that is not white space (as Python's str.strip counts it)
    aliases=list_of(
        Field(
            "pattern",
            pattern=r"[\s\S]*[^\s\u001c-\u001f\u0085][\s\S]*",
            max_length=300,
            description="a name with a character that is not white space",
        )
    ),
    relations=list_of(
        obj(
            component=pattern(choices.COMPONENT_KEY_PATTERN, DocumentCode.INVALID_VALUE),
            kind=enum(choices.ComponentRelationKind.values),
            note=text(),
        ),
        normalize=lambda items: sorted(items, key=lambda r: (r["component"], r["kind"])),
    ),
    status=enum(choices.RecordStatus.values),
)

# Each kind's declaration is named by its entry in the registry (records/kinds.py).
BUNDLE_FORMAT = "claimsdb.bundle/1"

TYPE_NAMES = {
    "str": "a string",
    "pattern": "a string",
    "enum": "a string",
    "int": "an integer",
    "number": "a number",
    "date": "a date (YYYY-MM-DD)",
    "url": "a string",
    "list": "a list",
    "object": "an object",
    "object_any": "an object",
    "mapping": "an object",
}


def join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def check(spec: Field, value: Any, path: str, problems: Problems) -> Any:
    """Validate ``value`` against ``spec``; return the normalized value (or None if broken)."""
    if value is None:
        if spec.nullable:
            return None
        problems.append(
            RuleViolation(DocumentCode.TYPE, f"must be {TYPE_NAMES[spec.kind]}, not null", path)
        )
        return None
    kind = spec.kind
    if kind in STRING_KINDS:
        if not isinstance(value, str):
            problems.append(
                RuleViolation(
                    DocumentCode.TYPE,
                    f"must be {TYPE_NAMES[kind]}, not {type_name(value)}",
                    path,
                )
            )
            return None
        if "\x00" in value:  # no database stores it alike (PostgreSQL refuses it)
            problems.append(RuleViolation(DocumentCode.INVALID_VALUE, NUL_MESSAGE, path))
        longest = max_chars(spec)
        if longest is not None and len(value) > longest:
            problems.append(
                RuleViolation(
                    DocumentCode.INVALID_VALUE,
                    f"is {len(value)} characters long; at most {longest} are allowed "
                    "(docs/limits.md)",
                    path,
                )
            )
        if kind == "enum" and value not in spec.values:
            allowed = ", ".join(repr(v) for v in spec.values)
            if spec.code == DocumentCode.FORMAT:
                message = f"format {value!r} is not one this loader reads ({allowed})"
            else:
                message = f"{value!r} is not one of {allowed}"
            problems.append(RuleViolation(spec.code, message, path))
        if kind == "url" and not re.fullmatch(URL_PATTERN, value):
            problems.append(
                RuleViolation(
                    SourceCode.URL_SCHEME,
                    f"{value[:80]!r} is not an http:// or https:// address (or empty); other "
                    "schemes (javascript:, data:, file:…) are refused",
                    path,
                )
            )
        if kind == "pattern" and not re.fullmatch(spec.pattern, value):
            problems.append(
                RuleViolation(
                    spec.code,
                    f"{value!r} is not {spec.description}"
                    if spec.description
                    else f"{value!r} does not match {spec.pattern}",
                    path,
                )
            )
        if kind == "date":
            try:
                if len(value) != 10:
                    raise ValueError
                dt.date.fromisoformat(value)
            except ValueError:
                problems.append(
                    RuleViolation(
                        DocumentCode.INVALID_VALUE, f"{value!r} is not a date (YYYY-MM-DD)", path
                    )
                )
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            problems.append(
                RuleViolation(
                    DocumentCode.TYPE, f"must be an integer, not {type_name(value)}", path
                )
            )
            return None
        return value
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be a number, not {type_name(value)}", path)
            )
            return None
        try:
            # an integer when integral, otherwise the number as written (records.figures)
            return figure_number(value)
        except ValueError as exc:
            problems.append(RuleViolation("document.type", f"must be a number: {exc}", path))
            return None
    if kind == "list":
        if not isinstance(value, list):
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be a list, not {type_name(value)}", path)
            )
            return None
        before = len(problems)
        assert spec.item is not None  # list_of declares its items
        items = [check(spec.item, item, join(path, i), problems) for i, item in enumerate(value)]
        # normalizing reads the items' fields: only items that passed every check have them
        return spec.normalize(items) if spec.normalize and len(problems) == before else items
    if kind == "mapping":
        if not isinstance(value, dict):
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be an object, not {type_name(value)}", path)
            )
            return None
        for k in value:
            bad = first_control_character(k, allow_whitespace=False)
            if bad is not None:
                message = "a key " + control_message(bad)
                problems.append(RuleViolation(DocumentCode.INVALID_KEY, message, join(path, k)))
        assert spec.item is not None  # a mapping declares its values
        return {k: check(spec.item, v, join(path, k), problems) for k, v in value.items()}
    if kind == "object_any":
        if not isinstance(value, dict):
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be an object, not {type_name(value)}", path)
            )
            return None
        if _contains_nul(value):
            problems.append(RuleViolation(DocumentCode.INVALID_VALUE, NUL_MESSAGE, path))
        return value
    if kind == "object":
        if not isinstance(value, dict):
            problems.append(
                RuleViolation(DocumentCode.TYPE, f"must be an object, not {type_name(value)}", path)
            )
            return None
        result = {}
        for name, field_spec in spec.fields.items():
            if name not in value:
                if field_spec.optional:
                    continue
                if field_spec.optional_default is not None:
                    result[name] = field_spec.optional_default
                    continue
                problems.append(
                    RuleViolation(
                        DocumentCode.MISSING_FIELD,
                        f"the field {name!r} is missing",
                        join(path, name),
                    )
                )
                continue
            checked = check(field_spec, value[name], join(path, name), problems)
            if field_spec.omit_empty and checked == []:
                continue
            result[name] = checked
        for name in value:
            if name not in spec.fields:
                problems.append(
                    RuleViolation(
                        DocumentCode.UNKNOWN_FIELD,
                        f"{name!r} is not a field of this document",
                        join(path, name),
                    )
                )
        return result
    raise AssertionError(f"unknown field kind {kind}")


NUL_MESSAGE = "must not contain NUL characters (\\u0000)"
# Keys, identifiers and file names take no control character (C0, DEL, C1); prose takes any
# character but NUL (tab, newline… belong to text).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_IN_PROSE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def first_control_character(value: str, *, allow_whitespace: bool) -> str | None:
    """The first control character of ``value`` that is not allowed there, if any. Keys,
    identifiers and file names take none; prose takes tab, newline and carriage return."""
    match = (_CONTROL_IN_PROSE if allow_whitespace else _CONTROL).search(value)
    return match.group() if match else None


def control_message(character: str) -> str:
    if character == "\x00":
        return NUL_MESSAGE
    return f"must not contain control characters (U+{ord(character):04X})"


def _contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_contains_nul(k) or _contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains_nul(item) for item in value)
    return False


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
