"""Sources (analysts), scope rules and assessment methods (reviewers)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from claimsdb import choices, public
from claimsdb.access import VisibleDocument
from claimsdb.records.figures import figure_words
from claimsdb.selectors import methods as method_reads
from claimsdb.selectors import revisions as revision_reads
from claimsdb.selectors import scope as scope_reads
from claimsdb.selectors import sources as source_reads

from .. import stash
from ..access import document_or_404, reads_released, request_has_role
from ..editing import RecordEditView
from ..forms import (
    MethodForm,
    NewMethodForm,
    NewRuleForm,
    NewSourceForm,
    RuleForm,
    SourceForm,
)
from ..pagination import paginate, paginate_rows
from ..presenters import (
    label,
    material_history_rows,
    revision_rows,
    source_view,
)

SOURCE_FIELDS = tuple(SourceForm.base_fields)
DETAIL_HISTORY = 10


def record_history_context(visible: VisibleDocument, kind: str, key: str) -> dict:
    """The History section of a source, rule or method page: its latest revisions, or for
    the public its material revisions up to the released one (published ones linked)."""
    if visible.released:
        history = public.material_history(kind, key, public=True)[:DETAIL_HISTORY]
        return {
            "released": True,
            "released_history": material_history_rows(kind, key, history, released=True),
        }
    revisions = list(revision_reads.record_revisions(kind, key)[:DETAIL_HISTORY])
    return {"history": revision_rows(kind, key, revisions, None, full=False)}


def _listed(pages, released: bool) -> list:
    """The rows of a page: the released records' documents, or the working state's rows."""
    return [record.document for record in pages.items] if released else pages.items


# --- sources --------------------------------------------------------------------------------


def source_list(request: HttpRequest) -> HttpResponse:
    kind = request.GET.get("kind", "")
    if kind not in choices.SourceKind.values:
        kind = ""
    if reads_released(request):
        records = public.released_records("source")
        if kind:
            # the released documents are filtered here, not in the database
            records = [r for r in records if r.document["kind"] == kind]
        pages = paginate(request, records, noun="source")
        counts = public.released_link_counts()
        rows = [{**document, "link_count": counts.get(key, 0)} for key, document, _ in pages.items]
    else:
        sources = source_reads.source_list()
        if kind:
            sources = sources.filter(kind=kind)
        pages = paginate_rows(request, sources, noun="source")
        fields = ("key", "title", "kind", "publisher", "reliability", "status", "link_count")
        rows = [{name: getattr(s, name) for name in fields} for s in pages.items]
    for row in rows:
        row["kind_label"] = label("source_kind", row["kind"])
    return render(
        request,
        "sources/list.html",
        {
            "rows": rows,
            "pages": pages,
            "kinds": choices.SourceKind.choices,
            "kind": kind,
            "can_edit": request_has_role(request, "analyst"),
        },
    )


def source_detail(request: HttpRequest, key: str) -> HttpResponse:
    visible = document_or_404(request, "source", key)
    if visible.released:
        citations = public.released_citations(key)
    else:
        citations = [
            {
                "case": link.claim.case.key,
                "claim_id": link.claim.claim_id,
                "statement": link.claim.statement,
                "relation": link.relation,
                "locator": link.locator,
                "withdrawn": link.claim.status == "withdrawn",
            }
            for link in source_reads.claims_citing_source(key)
        ]
    for citation in citations:
        citation["relation_label"] = label("relation", citation["relation"])
    return render(
        request,
        "sources/detail.html",
        {
            "source": source_view(key, visible.document),
            "revision": visible.revision,
            "links": citations,
            **record_history_context(visible, "source", key),
            "can_edit": request_has_role(request, "analyst"),
        },
    )


class SourceEditView(RecordEditView):
    kind = "source"
    template_name = "records/edit.html"
    page_title = "Edit source"

    @property
    def default_summary(self) -> str:
        return f"Edit source {self.record_key()}"

    def build_forms(self, data, document):
        initial = {k: document[k] for k in SOURCE_FIELDS}
        return {"record": SourceForm(data, initial=initial, prefix="source")}

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        document.update(form.source_fields())
        return document

    def success_url(self, document):
        return reverse("source-detail", args=[document["key"]])


class SourceCreateView(SourceEditView):
    """/sources/new/. Opened from a form that needs the new source (``?return=<token>``, see
    ``claimsdb/web/stash.py``), a save or a cancel leads back to that form."""

    mode = "create"
    page_title = "New source"
    default_summary = "New source"

    def dispatch(self, request, *args, **kwargs):
        self.return_token = request.GET.get("return", "")
        self.parked = stash.peek(request, self.return_token)
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, *args, **kwargs):
        if self.return_token and self.parked is None:
            messages.warning(
                request,
                "There is no draft of the form you came from any more (it was saved or "
                "discarded): this source will be saved on its own.",
            )
        return super().get(request, *args, **kwargs)

    def success_url(self, document):
        if self.parked is not None:
            stash.note(self.request, self.return_token, source=document["key"])
            return stash.resume_url(self.parked, self.return_token)
        return super().success_url(document)

    def extra_context(self):
        back = stash.resume_url(self.parked, self.return_token) if self.parked else ""
        return {"returns_to": back}

    def build_forms(self, data, document):
        return {"record": NewSourceForm(data, prefix="source")}

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        return {
            "format": "claimsdb.source/1",
            "key": form.cleaned_data["key"].strip(),
            **form.source_fields(),
        }

    def cancel_url(self):
        if self.parked is not None:
            return stash.resume_url(self.parked, self.return_token)
        return reverse("source-list")

    def another_url(self, document):
        # a source made for a form goes back to that form; otherwise, the next source
        return "" if self.return_token else reverse("source-new")


# --- scope rules ----------------------------------------------------------------------------


def rule_list(request: HttpRequest) -> HttpResponse:
    released = reads_released(request)
    records = public.released_records("rule") if released else scope_reads.rule_list()
    pages = paginate(request, records, noun="scope rule")
    rules = _listed(pages, released)
    return render(
        request,
        "rules/list.html",
        {"rules": rules, "pages": pages, "can_review": request_has_role(request, "reviewer")},
    )


def rule_detail(request: HttpRequest, key: str) -> HttpResponse:
    visible = document_or_404(request, "rule", key)
    wanted = [visible.document["figure"]]
    if visible.released:
        figures = public.released_figures(wanted)
    else:
        figures = scope_reads.figures_by_id(wanted)
    figure = figures.get(visible.document["figure"])
    return render(
        request,
        "rules/detail.html",
        {
            "rule": visible.document,
            "figure": figure,
            "figure_words": figure_words(figure["value"], figure["unit"], figure["scope"])
            if figure
            else "",
            "revision": visible.revision,
            **record_history_context(visible, "rule", key),
            "can_review": request_has_role(request, "reviewer"),
        },
    )


class RuleEditView(RecordEditView):
    kind = "rule"
    role = "reviewer"
    template_name = "records/edit.html"
    page_title = "Edit scope rule"

    @property
    def default_summary(self) -> str:
        return f"Edit scope rule {self.record_key()}"

    def form_class(self):
        return RuleForm

    def build_forms(self, data, document):
        initial = (
            {k: document[k] for k in ("kind", "status", "figure", "case", "reason")}
            if document
            else {"kind": "non_attribution", "status": "active"}
        )
        return {
            "record": self.form_class()(
                data,
                initial=initial,
                prefix="rule",
            )
        }

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        data = form.cleaned_data
        return {
            "format": "claimsdb.rule/1",
            "key": data["key"].strip() if "key" in data else document["key"],
            **{k: data[k] for k in ("kind", "status", "figure", "case", "reason")},
        }

    def success_url(self, document):
        return reverse("rule-detail", args=[document["key"]])


class RuleCreateView(RuleEditView):
    mode = "create"
    page_title = "New scope rule"
    default_summary = "New scope rule"

    def form_class(self):
        return NewRuleForm

    def cancel_url(self):
        return reverse("rule-list")

    def another_url(self, document):
        return reverse("rule-new")


# --- assessment methods ---------------------------------------------------------------------


def method_list(request: HttpRequest) -> HttpResponse:
    released = reads_released(request)
    records = public.released_records("method") if released else method_reads.method_list()
    pages = paginate(request, records, noun="assessment method")
    methods = _listed(pages, released)
    return render(
        request,
        "methods/list.html",
        {"methods": methods, "pages": pages, "can_review": request_has_role(request, "reviewer")},
    )


def method_detail(request: HttpRequest, key: str) -> HttpResponse:
    visible = document_or_404(request, "method", key)
    impact = visible.document["impact"]
    scale = [
        (n, impact.get("labels", {}).get(str(n), ""))
        for n in range(int(impact.get("min", 0)), int(impact.get("max", 0)) + 1)
    ]
    return render(
        request,
        "methods/detail.html",
        {
            "method": visible.document,
            "scale": scale,
            "revision": visible.revision,
            **record_history_context(visible, "method", key),
            "can_review": request_has_role(request, "reviewer"),
        },
    )


class MethodEditView(RecordEditView):
    kind = "method"
    role = "reviewer"
    template_name = "records/edit.html"
    page_title = "Edit assessment method"

    @property
    def default_summary(self) -> str:
        return f"Edit method {self.record_key()}"

    def build_forms(self, data, document):
        initial = {k: document[k] for k in ("title", "status", "dimensions", "impact")}
        return {"record": MethodForm(data, initial=initial, prefix="method")}

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        document.update(
            {k: form.cleaned_data[k] for k in ("title", "status", "dimensions", "impact")}
        )
        return document

    def success_url(self, document):
        return reverse("method-detail", args=[document["key"]])


class MethodCreateView(MethodEditView):
    """/methods/new/ (``?from=<key>`` starts from an existing method: a new version)."""

    mode = "create"
    page_title = "New assessment method"
    default_summary = "New assessment method"

    def build_forms(self, data, document):
        initial = {
            "status": "active",
            "dimensions": [],
            "impact": {"min": 0, "max": 4, "labels": {}},
        }
        base_key = self.request.GET.get("from", "")
        base = method_reads.methods_by_key([base_key]).get(base_key) if base_key else None
        if base is not None:
            name, _, version = base.key.rpartition("/")
            initial.update(
                key=f"{name}/{int(version) + 1}" if version.isdigit() else "",
                title=base.title,
                dimensions=base.dimensions,
                impact=base.impact,
            )
        return {"record": NewMethodForm(data, initial=initial, prefix="method")}

    def build_document(self, document, section, placer):
        form = section["record"]
        placer.add("", form)
        data = form.cleaned_data
        return {
            "format": "claimsdb.method/1",
            "key": data["key"].strip(),
            **{k: data[k] for k in ("title", "status", "dimensions", "impact")},
        }

    def cancel_url(self):
        return reverse("method-list")
