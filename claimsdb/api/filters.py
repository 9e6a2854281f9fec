"""Filters of the list endpoints (django-filter), documented in the schema from here.

Readers of the working state are filtered in the database (the FilterSets' querysets).
Everyone else reads the released record, whose documents are revision snapshots rather
than rows: ``filter_released`` validates the same query parameters with the same
FilterSets (the same 400s) and applies each filter to the released documents instead
(``filter_documents``), with the same meaning — every filter of every list works on both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import django_filters as filters
from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django_filters.utils import translate_validation
from rest_framework.filters import OrderingFilter

from claimsdb.choices import (
    CaseStatus,
    RecordKind,
    RecordStatus,
    Reliability,
    RevisionAction,
    SourceKind,
)
from claimsdb.models import (
    Assessment,
    AssessmentMethod,
    Case,
    CaseTag,
    Claim,
    Relation,
    Revision,
    ScopeRule,
    Source,
)

from .common import MAX_INT
from .visibility import VisibleDocument, released_method_dimensions

# Query parameters that are never assessment dimensions, whatever a method calls its own.
RESERVED_PARAMETERS = {"page", "page_size", "ordering", "format", "assessment"}
DIMENSION_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


class AnyValueMultipleField(forms.MultipleChoiceField):
    """Repeatable free-text parameter (``?tag=a&tag=b``): no fixed vocabulary."""

    def valid_value(self, value) -> bool:
        return True


class TagFilter(filters.MultipleChoiceFilter):
    field_class = AnyValueMultipleField


class IntegerFilter(filters.NumberFilter):
    field_class = forms.IntegerField


class StrictBooleanField(forms.Field):
    """true or false (also 1 or 0); anything else is refused, not read as "not given"."""

    def to_python(self, value):
        if value in (None, ""):
            return None
        text = str(value).strip().lower()
        if text in {"true", "1"}:
            return True
        if text in {"false", "0"}:
            return False
        raise forms.ValidationError("must be true or false", code="invalid")


class StrictBooleanFilter(filters.BooleanFilter):
    field_class = StrictBooleanField


class ReleasedDocumentFilter:
    """FilterSet mixin: the filters applied to released documents (``VisibleDocument``s).

    ``equal_fields`` are filters comparing one document field with the value; ``q`` looks
    for the text, case-insensitively, in ``text_fields`` (and ``extra_texts``).
    """

    equal_fields: tuple[str, ...] = ()
    text_fields: tuple[str, ...] = ()

    def filter_documents(self, records: list[VisibleDocument]) -> list[VisibleDocument]:
        data = self.form.cleaned_data
        wanted = {
            name: data[name] for name in self.equal_fields if data.get(name) not in (None, "")
        }
        text = (data.get("q") or "").strip().casefold()
        return [
            record
            for record in records
            if all(record.document.get(name) == value for name, value in wanted.items())
            and (not text or self.contains(record.document, text))
        ]

    def contains(self, document: dict[str, Any], text: str) -> bool:
        texts = [str(document.get(name) or "") for name in self.text_fields]
        return any(text in value.casefold() for value in [*texts, *self.extra_texts(document)])

    def extra_texts(self, document: dict[str, Any]) -> Iterable[str]:
        return ()


class CaseFilter(ReleasedDocumentFilter, filters.FilterSet):
    """Cases by status, tags, relations, free text and assessment values.

    Assessment values are filtered with one query parameter per dimension, named as the
    dimension is in its method (``?evidence_grade=B&setting=research_demonstration``).
    They match the case's current assessment — the newest, which is the last in the case's
    list (as the record page shows it) — unless ``assessment=any`` asks for any of its
    assessments. Several dimensions must all hold for the same assessment.
    """

    status = filters.ChoiceFilter(choices=CaseStatus.choices)
    tag = TagFilter(
        method="filter_tags", help_text="a tag; repeat it for cases carrying all of them"
    )
    related_to = filters.CharFilter(
        method="filter_related_to",
        help_text="cases with a relation of any kind to this case key, in either direction",
    )
    q = filters.CharFilter(
        method="filter_text",
        help_text="free text, case-insensitive, in the key, title, summary, scope note, "
        "account, basis, limits, tags and claim statements",
    )
    assessment = filters.ChoiceFilter(
        choices=[("current", "current"), ("any", "any")],
        method="filter_nothing",
        empty_label=None,
        help_text="which assessments the dimension parameters match: the current (newest, "
        "the default) or any",
    )

    class Meta:
        model = Case
        fields: list[str] = []

    def filter_tags(self, queryset: QuerySet, name: str, value: list[str]) -> QuerySet:
        for tag in value:
            queryset = queryset.filter(
                Exists(CaseTag.objects.filter(case=OuterRef("pk"), name=tag))
            )
        return queryset

    def filter_related_to(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            Exists(Relation.objects.filter(case=OuterRef("pk"), other__key=value))
            | Exists(Relation.objects.filter(other=OuterRef("pk"), case__key=value))
        )

    def filter_text(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        text = value.strip()
        if not text:
            return queryset
        fields = ("key", "title", "summary", "scope_note", "account", "basis", "limits")
        condition = Q()
        for field_name in fields:
            condition |= Q(**{f"{field_name}__icontains": text})
        condition |= Exists(CaseTag.objects.filter(case=OuterRef("pk"), name__icontains=text))
        condition |= Exists(Claim.objects.filter(case=OuterRef("pk"), statement__icontains=text))
        return queryset.filter(condition)

    def filter_nothing(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset  # read by filter_queryset with the dimension parameters

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = super().filter_queryset(queryset)
        wanted = self.dimension_values()
        if not wanted:
            return queryset
        matching = Assessment.objects.filter(case=OuterRef("pk"))
        for index, (dimension, value) in enumerate(sorted(wanted.items())):
            alias = f"dimension_{index}"
            # as text, so that any dimension key works (even one named like a lookup)
            text = Cast(KeyTextTransform(dimension, "values"), TextField())
            matching = matching.alias(**{alias: text}).filter(**{alias: value})
        if self.form.cleaned_data.get("assessment") != "any":
            newest = (
                Assessment.objects.filter(case=OuterRef(OuterRef("pk")))
                .order_by("-position")
                .values("pk")[:1]
            )
            matching = matching.filter(pk=Subquery(newest))
        return queryset.filter(Exists(matching))

    def dimension_values(
        self, known_dimensions: Callable[[], set[str]] | None = None
    ) -> dict[str, str]:
        """The query parameters naming a dimension of some assessment method (of those
        ``known_dimensions`` gives; by default, of every method)."""
        candidates = {
            name: self.data.get(name)
            for name in self.data
            if name not in self.filters
            and name not in RESERVED_PARAMETERS
            and DIMENSION_KEY.match(name)
        }
        if not candidates:
            return {}
        known = (known_dimensions or self.method_dimensions)()
        return {name: value for name, value in candidates.items() if name in known}

    @staticmethod
    def method_dimensions() -> set[str]:
        return {
            dimension.get("key")
            for dimensions in AssessmentMethod.objects.values_list("dimensions", flat=True)
            for dimension in dimensions or []
            if isinstance(dimension, dict)
        }

    # --- the same filters on released documents ---------------------------------------

    equal_fields = ("status",)
    text_fields = ("key", "title", "summary", "scope_note", "account", "basis", "limits")

    def extra_texts(self, document: dict[str, Any]) -> Iterable[str]:
        yield from document.get("tags") or []
        for claim in document.get("claims") or []:
            yield claim.get("statement") or ""

    def filter_documents(self, records: list[VisibleDocument]) -> list[VisibleDocument]:
        everything = {record.key: record.document for record in records}
        found = super().filter_documents(records)
        data = self.form.cleaned_data
        for tag in data.get("tag") or []:
            found = [r for r in found if tag in (r.document.get("tags") or [])]
        other = data.get("related_to")
        if other:
            found = [r for r in found if related(r.key, r.document, other, everything)]
        wanted = self.dimension_values(released_method_dimensions)
        if wanted:
            anyone = data.get("assessment") == "any"
            found = [r for r in found if assessed(r.document, wanted, anyone)]
        return found


def related(key: str, document: dict[str, Any], other: str, documents: dict) -> bool:
    """A relation of any kind between two cases, in either direction, as their documents
    hold it (a directed relation appears in its subject's document only)."""
    if any(relation.get("case") == other for relation in document.get("relations") or []):
        return True
    other_document = documents.get(other) or {}
    return any(relation.get("case") == key for relation in other_document.get("relations") or [])


def assessed(document: dict[str, Any], wanted: dict[str, str], anyone: bool) -> bool:
    """The case's current (newest: last) assessment, or any with ``anyone``, has every
    dimension value wanted."""
    assessments = document.get("assessments") or []
    for assessment in assessments if anyone else assessments[-1:]:
        values = assessment.get("values") or {}
        if all(
            values.get(name) is not None and str(values[name]) == value
            for name, value in wanted.items()
        ):
            return True
    return False


class SourceFilter(ReleasedDocumentFilter, filters.FilterSet):
    kind = filters.ChoiceFilter(choices=SourceKind.choices)
    status = filters.ChoiceFilter(choices=RecordStatus.choices)
    reliability = filters.ChoiceFilter(choices=[c for c in Reliability.choices if c[0]])
    q = filters.CharFilter(
        method="filter_text", help_text="free text in the key, title, publisher, URL and notes"
    )

    equal_fields = ("kind", "status", "reliability")
    text_fields = ("key", "title", "publisher", "url", "notes")

    class Meta:
        model = Source
        fields: list[str] = []

    def filter_text(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        condition = Q()
        for field_name in ("key", "title", "publisher", "url", "notes"):
            condition |= Q(**{f"{field_name}__icontains": value.strip()})
        return queryset.filter(condition)


class RuleFilter(ReleasedDocumentFilter, filters.FilterSet):
    case = filters.CharFilter(help_text="rules naming this case key")
    figure = filters.CharFilter(help_text="rules naming this figure ID")
    status = filters.ChoiceFilter(choices=RecordStatus.choices)

    equal_fields = ("case", "figure", "status")

    class Meta:
        model = ScopeRule
        fields: list[str] = []


class MethodFilter(ReleasedDocumentFilter, filters.FilterSet):
    status = filters.ChoiceFilter(choices=RecordStatus.choices)

    equal_fields = ("status",)

    class Meta:
        model = AssessmentMethod
        fields: list[str] = []


class CaseRevisionFilter(filters.FilterSet):
    """Revisions of one record: by action, author, material flag, and ``since``."""

    action = filters.ChoiceFilter(choices=RevisionAction.choices)
    author = filters.CharFilter(field_name="author__username", help_text="the author's username")
    material = StrictBooleanFilter(help_text="true: material changes; false: editorial ones")
    since = IntegerFilter(
        field_name="number",
        lookup_expr="gt",
        min_value=0,
        max_value=MAX_INT,
        help_text="only revisions numbered above this one (for syncing: pass the last number "
        "you hold; results are in ascending order)",
    )

    class Meta:
        model = Revision
        fields: list[str] = []


class RevisionFilter(CaseRevisionFilter):
    """The global log: also by record and record kind."""

    record = filters.CharFilter(
        method="filter_record",
        help_text="one record: kind:key (case:CP22-003, method:diggingbeagle.assessment/1) "
        "or a bare key (any kind)",
    )
    kind = filters.ChoiceFilter(field_name="record_kind", choices=RecordKind.choices)

    class Meta:
        model = Revision
        fields: list[str] = []

    def filter_record(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        kind, _, key = value.partition(":")
        if key and kind in RecordKind.values:
            return queryset.filter(record_kind=kind, record_key=key)
        return queryset.filter(record_key=value)


# --- the released view -------------------------------------------------------------------

WITHDRAWN = "withdrawn"
ORDER_FIELDS: dict[str, Callable[[VisibleDocument], Any]] = {
    "key": lambda record: record.key,
    "revision": lambda record: record.revision or 0,
}


def filter_released(view, request, records: list[VisibleDocument]) -> list[VisibleDocument]:
    """The released records a list view shows: its filters (``view.filterset_class``)
    applied to the released documents, then its ordering (``?ordering=``, else the view's
    default), as DjangoFilterBackend and OrderingFilter do for querysets.

    Withdrawn records are left out unless ``?status=withdrawn`` asks for them (as the
    public pages leave them out of their lists; their documents still read).
    """
    filterset_class = view.filterset_class
    filterset = filterset_class(
        request.query_params,
        queryset=filterset_class._meta.model.objects.none(),
        request=request,
    )
    if not filterset.is_valid():
        raise translate_validation(filterset.errors)
    found = filterset.filter_documents(records)
    if filterset.form.cleaned_data.get("status") != WITHDRAWN:
        found = [r for r in found if r.document.get("status") != WITHDRAWN]
    ordering = OrderingFilter().get_ordering(request, found, view) or ["key"]
    for term in reversed(ordering):  # stable sorts, the last term first
        name = term.lstrip("-")
        value = ORDER_FIELDS.get(name) or (lambda r, name=name: str(r.document.get(name) or ""))
        found = sorted(found, key=value, reverse=term.startswith("-"))
    return found
