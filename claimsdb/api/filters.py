"""Filters of the list endpoints (django-filter), documented in the schema from here.

Readers of the working state are filtered in the database (the FilterSets' querysets).
Everyone else reads the released record, whose documents are revision snapshots rather
than rows: ``filter_released`` validates the same query parameters with the same
FilterSets (the same 400s) and applies each filter to the latest release's entries instead
(``filter_entries``, through what each release records of the revisions it publishes), with
the same meaning — every filter of every list works on both, in the database.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import django_filters as filters
from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django_filters.utils import translate_validation
from rest_framework.filters import OrderingFilter

from claimsdb import release_facets
from claimsdb.choices import (
    AffectedStatus,
    CaseStatus,
    ComponentKind,
    RecordKind,
    RecordStatus,
    Reliability,
    RevisionAction,
    SourceKind,
)
from claimsdb.codes import DrfCode
from claimsdb.models import (
    AffectedEntry,
    Assessment,
    AssessmentMethod,
    Case,
    CaseTag,
    Claim,
    Component,
    ComponentName,
    Relation,
    ReleasedTerm,
    ReleaseEntry,
    Revision,
    ScopeRule,
    Source,
)
from claimsdb.public import ReleasedRecords
from claimsdb.records.schema import normalize_tag

from .common import MAX_INT
from .visibility import released_method_dimensions

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


RELEASED = "revision__released__"  # the columns of a release entry's ReleasedRevision


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
        raise forms.ValidationError("must be true or false", code=DrfCode.INVALID)


class StrictBooleanFilter(filters.BooleanFilter):
    field_class = StrictBooleanField


class ReleasedDocumentFilter:
    """FilterSet mixin: the filters applied to the released record, whose documents are
    revision snapshots. They run in the database on the release's entries, through what a
    release records of each revision it publishes (``ReleasedRevision``, ``ReleasedTerm``;
    see ``claimsdb.release_facets``).

    ``equal_fields`` are filters comparing one document field with the value; ``q`` looks
    for the text, case-insensitively, in the fields the kind's ``text_fields`` name
    (``claimsdb.records.kinds``).
    """

    equal_fields: tuple[str, ...] = ()

    def filter_entries(self, entries: QuerySet[ReleaseEntry]) -> QuerySet[ReleaseEntry]:
        data = self.form.cleaned_data
        for name in self.equal_fields:
            if data.get(name) not in (None, ""):
                entries = entries.filter(**{f"{RELEASED}{name}": data[name]})
        text = (data.get("q") or "").strip().casefold()
        if text:
            if release_facets.TEXT_SEPARATOR in text:
                return entries.none()  # it would match across two fields
            entries = entries.filter(**{f"{RELEASED}text__contains": text})
        return entries


def released_term(name: str, value: str) -> QuerySet[ReleasedTerm]:
    """The entry's revision has this term (for ``Exists``)."""
    return ReleasedTerm.objects.filter(revision=OuterRef("revision"), name=name, value=value)


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
    component = filters.CharFilter(
        method="filter_nothing",
        help_text="cases whose affected list names this component key (CMP-…); with "
        "affected_status, with that status",
    )
    affected_status = filters.ChoiceFilter(
        choices=AffectedStatus.choices,
        method="filter_nothing",
        help_text="cases with an affected entry of this status (for the component named by "
        "component, if given)",
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
        for tag in map(normalize_tag, value):  # tags are stored in their normal form
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
        queryset = self.filter_affected(queryset)
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

    def filter_affected(self, queryset: QuerySet) -> QuerySet:
        """``component`` and ``affected_status``, held by the same entry: one ``EXISTS``
        along the entries' (component, status, case) index."""
        component = (self.form.cleaned_data.get("component") or "").strip()
        status = self.form.cleaned_data.get("affected_status") or ""
        if not component and not status:
            return queryset
        entries = AffectedEntry.objects.filter(case=OuterRef("pk"))
        if component:
            entries = entries.filter(component__key=component)
        if status:
            entries = entries.filter(status=status)
        return queryset.filter(Exists(entries))

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

    # --- the same filters on the released record ---------------------------------------

    equal_fields = ("status",)

    def filter_entries(self, entries: QuerySet[ReleaseEntry]) -> QuerySet[ReleaseEntry]:
        entries = super().filter_entries(entries)
        data = self.form.cleaned_data
        for tag in map(normalize_tag, data.get("tag") or []):
            entries = entries.filter(Exists(released_term("tag", tag)))
        other = data.get("related_to")
        if other:
            # a directed relation appears in its subject's document only: look both ways
            named_by_other = ReleasedTerm.objects.filter(
                name="related",
                value=OuterRef("record_key"),
                revision__release_entries__release=OuterRef("release"),
                revision__release_entries__record_kind="case",
                revision__release_entries__record_key=other,
            )
            entries = entries.filter(
                Exists(released_term("related", other)) | Exists(named_by_other)
            )
        component = (data.get("component") or "").strip()
        status = data.get("affected_status") or ""
        if component and status:
            entries = entries.filter(
                Exists(released_term("component_status", f"{component}:{status}"))
            )
        elif component:
            entries = entries.filter(Exists(released_term("component", component)))
        elif status:
            entries = entries.filter(
                Exists(
                    ReleasedTerm.objects.filter(
                        revision=OuterRef("revision"),
                        name="component_status",
                        value__endswith=f":{status}",
                    )
                )
            )
        wanted = self.dimension_values(released_method_dimensions)
        if wanted:
            entries = entries.filter(assessed(wanted, anyone=data.get("assessment") == "any"))
        return entries


def assessed(wanted: dict[str, str], *, anyone: bool) -> Q:
    """The case's current (newest) assessment, or any with ``anyone``, has every dimension
    value wanted: several dimensions must hold for the same assessment."""
    pairs = [release_facets.dimension_value(name, value) for name, value in sorted(wanted.items())]
    if not anyone:
        condition = Q()
        for pair in pairs:
            condition &= Exists(released_term("current", pair))
        return condition
    first, *others = pairs
    matching = released_term("assessment", first)
    for pair in others:
        same_assessment = ReleasedTerm.objects.filter(
            revision=OuterRef("revision"), name="assessment", value=pair, number=OuterRef("number")
        )
        matching = matching.filter(Exists(same_assessment))
    return Q(Exists(matching))


class SourceFilter(ReleasedDocumentFilter, filters.FilterSet):
    kind = filters.ChoiceFilter(choices=SourceKind.choices)
    status = filters.ChoiceFilter(choices=RecordStatus.choices)
    reliability = filters.ChoiceFilter(choices=[c for c in Reliability.choices if c[0]])
    q = filters.CharFilter(
        method="filter_text", help_text="free text in the key, title, publisher, URL and notes"
    )

    equal_fields = ("kind", "status", "reliability")

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


class ComponentFilter(ReleasedDocumentFilter, filters.FilterSet):
    kind = filters.ChoiceFilter(choices=ComponentKind.choices)
    status = filters.ChoiceFilter(choices=RecordStatus.choices)
    q = filters.CharFilter(
        method="filter_text",
        help_text="free text in the key, name, Package URL, homepage and aliases",
    )

    equal_fields = ("kind", "status")

    class Meta:
        model = Component
        fields: list[str] = []

    def filter_text(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        text = value.strip()
        condition = Q()
        for field_name in ("key", "name", "purl", "homepage"):
            condition |= Q(**{f"{field_name}__icontains": text})
        # names and aliases, case-folded as ComponentName keeps them
        folded = " ".join(text.casefold().split())
        condition |= Exists(
            ComponentName.objects.filter(component=OuterRef("pk"), name__contains=folded)
        )
        return queryset.filter(condition)


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
# The columns the released lists order by (each view's ``ordering_fields``).
ORDER_COLUMNS = {
    "key": "record_key",
    "revision": "revision__number",
    "title": f"{RELEASED}title",
    "status": f"{RELEASED}status",
    "kind": f"{RELEASED}kind",
}


def filter_released(view, request, records: ReleasedRecords) -> ReleasedRecords:
    """The released records a list view shows: its filters (``view.filterset_class``)
    applied to the released record, then its ordering (``?ordering=``, else the view's
    default), as DjangoFilterBackend and OrderingFilter do for querysets — in the
    database, on the release's entries, so a page costs the same whatever the size.

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
    entries = filterset.filter_entries(records.entries)
    if filterset.form.cleaned_data.get("status") != WITHDRAWN:
        entries = entries.filter(withdrawn=False)
    ordering = OrderingFilter().get_ordering(request, records, view) or ["key"]
    columns = [
        f"{'-' if term.startswith('-') else ''}{ORDER_COLUMNS[term.lstrip('-')]}"
        for term in ordering
        if term.lstrip("-") in ORDER_COLUMNS
    ]
    return records.with_entries(entries.order_by(*columns, "record_key"))
