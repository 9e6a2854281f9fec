"""Components: the list, a component's page (the cases naming it, what each says of its
versions, a version timeline), and their create and edit pages (analysts)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from claimsdb import choices, public
from claimsdb.models import Component
from claimsdb.selectors import components as component_reads
from claimsdb.selectors.coverage import component_runs

from ..access import document_or_404, reads_released, request_has_role
from ..editing import RecordEditView
from ..forms import ComponentForm, NewComponentForm
from ..pagination import paginate
from ..presenters import affected_view, label
from .records import record_history_context

CASES_PER_PAGE = 25  # cases naming a component, on its page


def component_list(request: HttpRequest) -> HttpResponse:
    kind = request.GET.get("kind", "")
    if kind not in choices.ComponentKind.values:
        kind = ""
    if reads_released(request):
        records = public.released_records("component")
        if kind:
            records = records.with_entries(records.entries.filter(revision__released__kind=kind))
        pages = paginate(request, records, noun="component")
        rows = [dict(record.document) for record in pages.items]
    else:
        pages = paginate(request, component_reads.component_list(kind=kind), noun="component")
        rows = [
            {
                "key": c.key,
                "name": c.name,
                "kind": c.kind,
                "purl": c.purl,
                "aliases": c.aliases,
                "status": c.status,
            }
            for c in pages.items
        ]
    for row in rows:
        row["kind_label"] = label("component_kind", row["kind"])
    return render(
        request,
        "components/list.html",
        {
            "rows": rows,
            "pages": pages,
            "kinds": choices.ComponentKind.choices,
            "kind": kind,
            "can_edit": request_has_role(request, "analyst"),
        },
    )


def component_detail(request: HttpRequest, key: str) -> HttpResponse:
    """The component, every case naming it with what the case says of its versions (a page
    of them at a time), and the versions they name in the component's order."""
    visible = document_or_404(request, "component", key)
    document = visible.document
    if visible.released:
        pages = paginate(
            request,
            public.released_cases_naming(key),
            noun="case",
            per_page=CASES_PER_PAGE,
        )
        entries = [
            {
                **entry,
                "case": record.key,
                "case_title": record.document["title"],
                "case_status": record.document["status"],
            }
            for record in pages.items
            for entry in record.document.get("affected", [])
            if entry["component"] == key
        ]
        incoming: list[dict[str, Any]] = []
    else:
        pages = paginate(
            request, component_reads.entries_naming(key), noun="case", per_page=CASES_PER_PAGE
        )
        entries = [
            {
                "component": key,
                "status": row.status,
                "ranges": row.ranges,
                "versions": row.versions,
                "claims": row.claims,
                "note": row.note,
                "case": row.case.key,
                "case_title": row.case.title,
                "case_status": row.case.status,
            }
            for row in pages.items
        ]
        incoming = component_reads.related_to(key)
    scheme = document["version_scheme"]
    return render(
        request,
        "components/detail.html",
        {
            "component": {
                **document,
                "kind_label": label("component_kind", document["kind"]),
            },
            "entries": [{**entry, **affected_view(entry, scheme)} for entry in entries],
            "pages": pages,
            "timeline": component_reads.version_timeline(scheme, entries),
            "incoming": incoming,
            "component_runs": _runs_on(key, released=visible.released),
            "revision": visible.revision,
            **record_history_context(visible, "component", key),
            "can_edit": request_has_role(request, "analyst"),
        },
    )


def _runs_on(key: str, *, released: bool) -> Any:
    """The runs on the component, by case and version (docs/coverage.md); None for a
    component the public sees that no longer has a row."""
    row = Component.objects.filter(key=key).only("key", "version_scheme").first()
    return component_runs(row, released=released) if row is not None else None


COMPONENT_FIELDS = ("name", "kind", "purl", "version_scheme", "homepage", "status")


class ComponentEditView(RecordEditView):
    kind = "component"
    template_name = "records/edit.html"
    page_title = "Edit component"

    @property
    def default_summary(self) -> str:
        return f"Edit component {self.record_key()}"

    def build_forms(self, data, document):
        initial = {name: document[name] for name in COMPONENT_FIELDS}
        initial["aliases"] = "\n".join(document["aliases"])
        initial["relations"] = ComponentForm.relations_text(document["relations"])
        return {"record": ComponentForm(data, initial=initial, prefix="component")}

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        document.update(form.component_fields())
        return document

    def success_url(self, document):
        return reverse("component-detail", args=[document["key"]])


class ComponentCreateView(ComponentEditView):
    mode = "create"
    page_title = "New component"
    default_summary = "New component"

    def build_forms(self, data, document):
        return {
            "record": NewComponentForm(
                data, initial={"status": "active", "version_scheme": "generic"}, prefix="component"
            )
        }

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        return {
            "format": "claimsdb.component/1",
            "key": form.cleaned_data["key"].strip(),
            **form.component_fields(),
        }

    def cancel_url(self):
        return reverse("component-list")

    def another_url(self, document):
        return reverse("component-new")
