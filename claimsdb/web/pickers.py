"""Pickers: a source, figure, case or component chosen by typing its key, with suggestions.

A picker is a text input tied to a ``<datalist>``. The page fills the list with a page of
the most recently added records of the kind; ``static/claimsdb/picker.js`` (loaded from a
file, as the Content-Security-Policy wants) replaces it as the analyst types with what
``/suggest/<kind>/?q=…`` finds: records whose key, title (and a source's publisher) hold
the typed text, keys that start with it first. Without JavaScript the input still takes a
typed key. Whatever the size of the knowledge base, a page of suggestions is one query of
at most ``PAGE`` rows, and checking a typed key one query.

A key that names no record is refused at its field, naming the nearest keys there are.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.db.models import Case as Cases
from django.db.models import IntegerField, Model, Q, QuerySet, Value, When
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from claimsdb.models import Case, Component, Figure, Source
from claimsdb.rules.scoped import same_event_closure
from claimsdb.selectors.scope import forbidding_rules

from .access import role_required

PAGE = 20  # suggestions shown at a time
NEAREST = 3  # keys named when a typed key is unknown
CANDIDATES = 200  # keys compared with an unknown one, at most
KEY_PREFIXES = {"SRC", "FIG", "CLM", "RULE"}  # too common to tell keys apart
ANOTHER_EVENT = "another event: not attributable to this case"


@dataclass(frozen=True)
class PickerKind:
    name: str  # source, figure, case
    model: type[Model]
    key: str  # the model field holding the key
    texts: tuple[str, ...]  # other fields the typed text is looked for in

    def rows(self) -> QuerySet[Any]:
        rows = self.model.objects.all()
        return rows.select_related("case") if self.model is Figure else rows

    def label(self, row: Any) -> str:
        if self.model is Source:
            return f"{row.title}" + (f" — {row.publisher}" if row.publisher else "")
        if self.model is Figure:
            text = row.description or row.measure
            return f"{row.case.key}: {text[:80]}"
        if self.model is Component:
            return row.name + (" (withdrawn)" if row.status == "withdrawn" else "")
        return row.title


KINDS = {
    "source": PickerKind("source", Source, "key", ("title", "publisher")),
    "figure": PickerKind("figure", Figure, "figure_id", ("description", "measure")),
    "case": PickerKind("case", Case, "key", ("title",)),
    "component": PickerKind("component", Component, "key", ("name", "purl")),
}


def kind_of(name: str) -> PickerKind:
    if name not in KINDS:
        raise Http404(f"no picker for {name!r}")
    return KINDS[name]


def suggestions(
    kind: PickerKind, typed: str, *, case: str = "", limit: int = PAGE
) -> list[tuple[str, str]]:
    """(key, label) of at most ``limit`` records matching ``typed``: the key itself, then
    keys starting with it, then keys, titles (publishers) holding it; with nothing typed,
    the newest records. One query.

    A figure chosen for ``case`` is one that case may be given by an attribution: its own
    figures are left out, figures of another event (a case not joined to it by a chain of
    ``same_event``, as the scope rules' ``same_event_closure`` finds them) are marked
    "another event", those a non-attribution rule bars are marked with the rule, and the
    attributable ones come first. That adds the rules naming ``case`` (one query) and the
    closure (one query per round, rounds bounded by the event's diameter), never a query
    per figure. (A case chosen for ``case`` leaves ``case`` itself out.)"""
    typed = typed.strip()
    rows = kind.rows()
    barred: dict[str, str] = {}
    event: set[str] | None = None  # the cases of ``case``'s event, for a figure
    order: list[Any] = []
    if case and kind.model is Figure:
        rows = rows.exclude(case__key=case)
        barred = forbidding_rules(case)
        event = same_event_closure([case])
        order = [
            Cases(
                When(figure_id__in=list(barred), then=Value(1)),
                When(case__key__in=sorted(event), then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        ]
    elif case and kind.model is Case:
        rows = rows.exclude(key=case)
    if not typed:
        found = rows.order_by(*order, "-pk")[:limit]
    else:
        where = Q(**{f"{kind.key}__icontains": typed})
        for name in kind.texts:
            where |= Q(**{f"{name}__icontains": typed})
        rank = Cases(
            When(**{f"{kind.key}__iexact": typed}, then=Value(0)),
            When(**{f"{kind.key}__istartswith": typed}, then=Value(1)),
            When(**{f"{kind.key}__icontains": typed}, then=Value(2)),
            default=Value(3),
            output_field=IntegerField(),
        )
        # the key typed in full first, then the attributable figures, each by rank
        exact = Cases(
            When(**{f"{kind.key}__iexact": typed}, then=Value(0)),
            default=Value(1),
            output_field=IntegerField(),
        )
        found = (
            rows.filter(where)
            .annotate(rank=rank)
            .order_by(*([exact, *order] if order else []), "rank", kind.key)[:limit]
        )
    options = []
    for row in found:
        key = getattr(row, kind.key)
        label = kind.label(row)
        if event is not None and row.case.key not in event:
            label += f" — {ANOTHER_EVENT}"
        if key in barred:
            label += f" — barred by {barred[key]}"
        options.append((key, label))
    return options


def exists(kind: PickerKind, key: str) -> bool:
    return kind.model.objects.filter(**{kind.key: key}).exists()


def nearest(kind: PickerKind, typed: str, *, n: int = NEAREST) -> list[str]:
    """The keys most like ``typed``: among keys sharing a part of it (at most
    ``CANDIDATES``, one query), the closest by difflib's ratio."""
    parts = {
        part[:4]
        for part in re.split(r"[^A-Za-z0-9]+", typed.upper())
        if len(part) >= 3 and part not in KEY_PREFIXES
    }
    if not parts:
        return []
    where = Q()
    for part in parts:
        where |= Q(**{f"{kind.key}__icontains": part})
    candidates = list(
        kind.model.objects.filter(where)
        .order_by(kind.key)
        .values_list(kind.key, flat=True)[:CANDIDATES]
    )
    return difflib.get_close_matches(typed.strip(), candidates, n=n, cutoff=0.4)


@dataclass
class Picker:
    """The suggestions of one kind for one page: the default page is read once, however
    many inputs show it."""

    kind: PickerKind
    case: str = ""  # the case the choice is made for (see ``suggestions``)
    _default: list[tuple[str, str]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, name: str, *, case: str = "") -> Picker:
        return cls(kind_of(name), case)

    def default(self) -> list[tuple[str, str]]:
        if self._default is None:
            self._default = suggestions(self.kind, "", case=self.case)
        return self._default

    def url(self) -> str:
        url = reverse("suggest", args=[self.kind.name])
        return f"{url}?{urlencode({'case': self.case})}" if self.case else url


class PickerInput(forms.TextInput):
    """A text input with its own ``<datalist>`` of suggestions."""

    template_name = "includes/picker_input.html"

    def __init__(self, picker: Picker | None = None, attrs=None):
        super().__init__(attrs)
        self.picker = picker

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        widget = context["widget"]
        list_id = f"{widget['attrs'].get('id') or name}-suggestions"
        widget["attrs"].update({"list": list_id, "autocomplete": "off", "spellcheck": "false"})
        if self.picker is not None:
            widget["attrs"]["data-suggest"] = self.picker.url()
        widget["list_id"] = list_id
        widget["options"] = self.picker.default() if self.picker is not None else []
        return context

    def render(self, name, value, attrs=None, renderer=None):
        # the project's templates (the form renderer looks only in Django's and the apps')
        return mark_safe(render_to_string(self.template_name, self.get_context(name, value, attrs)))


class PickerField(forms.CharField):
    """A key typed (or picked from the suggestions); refused at the field, with the nearest
    keys named, when no record has it."""

    widget = PickerInput

    def __init__(self, *, kind: str, code: str, **kwargs):
        """``code``: the registered code of the rule that refuses the unknown key when a
        document names it (``evidence.source_unknown``…), given to the form error."""
        kwargs.setdefault("max_length", 200)
        super().__init__(**kwargs)
        self.kind = kind_of(kind)
        self.code = code

    def use(self, picker: Picker) -> None:
        """Show ``picker``'s suggestions (shared by the inputs of one page)."""
        self.widget.picker = picker

    def clean(self, value):
        value = super().clean(value)
        if value and not exists(self.kind, value):
            close = nearest(self.kind, value)
            message = f"There is no {self.kind.name} {value}."
            if close:
                message += " Nearest: " + ", ".join(close) + "."
            else:
                message += " Type its key, or part of its key or title to see suggestions."
            raise forms.ValidationError(message, code=self.code)
        return value


@role_required("viewer")
def suggest(request: HttpRequest, kind: str) -> HttpResponse:
    """``/suggest/<kind>/?q=…``: the ``<option>`` elements of a picker's datalist."""
    found = suggestions(
        kind_of(kind), request.GET.get("q", "")[:200], case=request.GET.get("case", "")[:200]
    )
    html = render_to_string("includes/picker_options.html", {"options": found})
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "private, no-store"
    return response
