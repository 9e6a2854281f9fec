"""Editing a case: its fields, claims and evidence, assessments, and its lists."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from claimsdb.models import AssessmentMethod
from claimsdb.records.figures import figure_words
from claimsdb.selectors.cases import (
    suggested_case_key,
    suggested_claim_id,
    suggested_figure_id,
)
from claimsdb.selectors.methods import method_list, methods_by_key
from claimsdb.selectors.scope import figures_by_id, forbidding_rules
from claimsdb.selectors.sources import sources_by_key
from claimsdb.services import WriteOutcome, claim_add, claim_move, claim_update, claim_withdraw

from .. import stash
from ..access import request_has_role
from ..editing import RecordEditView, ViolationPlacer, list_rows, row_data
from ..forms import (
    AffectedForm,
    AffectedFormSet,
    AssessmentForm,
    AttributionFormSet,
    CaseForm,
    ClaimForm,
    ClaimWithdrawForm,
    ControlFormSet,
    EvidenceLinkFormSet,
    FigureFormSet,
    NewCaseForm,
    RelationFormSet,
    UnknownFormSet,
    list_formset,
)
from ..pickers import Picker
from ..presenters import cited_source_keys, vocabulary_legend

NEW_SOURCE = "new_source"  # the claim form's "Create a new source…" button (value: the row)
CASE_FIELDS = ("title", "status", "summary", "scope_note", "basis", "limits", "account", "tags")


def case_url(key: str, anchor: str = "") -> str:
    return reverse("case-detail", args=[key]) + (f"#{anchor}" if anchor else "")


def claim_choices(document: dict[str, Any]) -> list[tuple[str, str]]:
    def short(text: str) -> str:
        return text if len(text) <= 90 else text[:89] + "…"

    return [(c["id"], f"{c['id']} — {short(c['statement'])}") for c in document["claims"]]


class CaseFieldsEditView(RecordEditView):
    """/cases/<key>/edit/: title, status, lede, scope note, basis, limits, account, tags."""

    template_name = "cases/edit_fields.html"
    page_title = "Edit case"

    def build_forms(self, data, document):
        return {
            "case": CaseForm(
                data,
                initial=CaseForm.initial_from(document),
                prefix="case",
                may_set_ready=request_has_role(self.request, "reviewer"),
                current_status=document["status"],
            )
        }

    def build_document(self, document, section, placer: ViolationPlacer):
        form = section["case"]
        placer.add("", form, catch_all=False)
        document.update({name: form.cleaned_data[name] for name in CASE_FIELDS})
        return document

    def success_url(self, document):
        return case_url(document["key"])


class CaseCreateView(RecordEditView):
    """/cases/new/: a new case with its fields; claims and the rest are added afterwards."""

    mode = "create"
    template_name = "cases/edit_fields.html"
    page_title = "New case"
    default_summary = "New case"

    def build_forms(self, data, document):
        return {
            "case": NewCaseForm(
                data,
                initial={"status": "draft", "key": suggested_case_key()},
                prefix="case",
                may_set_ready=request_has_role(self.request, "reviewer"),
            )
        }

    def build_document(self, document, section, placer):
        form = section["case"]
        placer.add("", form, catch_all=False)
        return {
            "format": "claimsdb.case/1",
            "key": form.cleaned_data["key"].strip(),
            **{name: form.cleaned_data[name] for name in CASE_FIELDS},
            "claims": [],
            "assessments": [],
            "controls": [],
            "unknowns": [],
            "figures": [],
            "attributions": [],
            "relations": [],
            "reproduction_runs": [],
        }

    def success_url(self, document):
        return case_url(document["key"])

    def cancel_url(self):
        return reverse("case-list")


class ClaimEditView(RecordEditView):
    """/cases/<key>/claims/new/ and /cases/<key>/claims/<id>/edit/: a claim with its evidence
    links (a source, a relation and a locator per row)."""

    template_name = "cases/claim_form.html"
    keeps_drafts = True

    @property
    def claim_id(self) -> str | None:
        return self.kwargs.get("claim_id")

    @property
    def page_title(self) -> str:
        return f"Edit claim {self.claim_id}" if self.claim_id else "New claim"

    @property
    def default_summary(self) -> str:
        return f"Edit claim {self.claim_id}" if self.claim_id else "Add a claim"

    def claim_index(self, document) -> int:
        if self.claim_id is None:
            return len(document["claims"])
        for index, claim in enumerate(document["claims"]):
            if claim["id"] == self.claim_id:
                return index
        raise Http404(f"no claim {self.claim_id} in {document['key']}")

    def build_forms(self, data, document):
        index = self.claim_index(document)
        if self.claim_id is None:
            claim = {"id": suggested_claim_id(document["key"]), "origin": "human"}
            links: list[dict[str, Any]] = []
        else:
            claim = document["claims"][index]
            links = claim["evidence"]
        return {
            "claim": ClaimForm(
                data, initial=claim, id_editable=self.claim_id is None, prefix="claim"
            ),
            "evidence": EvidenceLinkFormSet(
                data,
                initial=[dict(link) for link in links],
                prefix="evidence",
                form_kwargs={"source_picker": Picker.of("source")},
            ),
        }

    def write(self, section, placer, save) -> WriteOutcome:
        claim = self.claim_from(section, placer, self.claim_index(self.document))
        if self.claim_id is None:
            return claim_add(
                case_key=self.record_key(), claim=claim, **self.service_arguments(save)
            )
        return claim_update(claim_id=self.claim_id, claim=claim, **self.service_arguments(save))

    def claim_from(self, section, placer: ViolationPlacer, index: int) -> dict[str, Any]:
        """The claim as the forms give it; its violations are placed on them (the claim is
        ``index`` in its case: added last, or where it stands)."""
        form = section["claim"]
        claim = {
            name: form.cleaned_data[name]
            for name in ("id", "statement", "status", "status_note", "basis", "origin")
        }
        claim["id"] = claim["id"].strip()
        claim["evidence"] = []
        placer.add(f"claims[{index}]", form)
        placer.section(f"claims[{index}].evidence", "evidence")
        for position, row in enumerate(list_rows(section["evidence"])):
            claim["evidence"].append(row_data(row))
            placer.add(f"claims[{index}].evidence[{position}]", row)
        return claim

    def success_url(self, document):
        return case_url(document["key"], "claims")

    def another_url(self, document):
        return reverse("claim-new", args=[self.record_key()])

    def post(self, request, *args, **kwargs):
        if NEW_SOURCE in request.POST:
            # nothing is saved: the input waits as a draft while the source is created
            token = stash.put(
                request,
                path=request.path,
                data=request.POST,
                row=request.POST[NEW_SOURCE],
                source="",
            )
            return HttpResponseRedirect(f"{reverse('source-new')}?{urlencode({'return': token})}")
        return super().post(request, *args, **kwargs)

    def resumed(self, data, parked):
        source = parked.get("source")
        if not source:
            return "Back from the new-source page: no source was created; your input is kept."
        count = data.get("evidence-TOTAL_FORMS", "")
        total = int(count) if count.isdigit() else 0
        row = parked.get("row", "")
        if not (row.isdigit() and int(row) < total):
            # asked from outside a row (or the row is gone): the source fills a new one
            row = str(total)
            data["evidence-TOTAL_FORMS"] = str(total + 1)
        data[f"evidence-{row}-source"] = source
        return (
            f"Source {source} is chosen in evidence link {int(row) + 1}; the rest of your "
            "input is as you left it. Nothing about the claim is saved yet."
        )


class ClaimsArrangeView(RecordEditView):
    """/cases/<key>/claims/: the claims in order, with move, edit and withdraw actions.

    The move buttons post to /cases/<key>/claims/<id>/move/ (``ClaimMoveView``)."""

    template_name = "cases/claims.html"
    page_title = "Arrange claims"
    default_summary = "Reorder claims"
    default_material = False

    def build_forms(self, data, document):
        return {}

    def extra_context(self):
        return {"claims": self.document["claims"]}

    def post(self, request, *args, **kwargs):
        return HttpResponseRedirect(reverse("case-claims", args=[self.record_key()]))

    def success_url(self, document):
        return reverse("case-claims", args=[document["key"]])


class ClaimMoveView(ClaimsArrangeView):
    """POST: move a claim one place up or down (``direction``)."""

    def get(self, request, *args, **kwargs):
        return HttpResponseRedirect(reverse("case-claims", args=[self.record_key()]))

    post = RecordEditView.post

    def write(self, section, placer, save) -> WriteOutcome:
        claim_id = self.kwargs["claim_id"]
        if claim_id not in {claim["id"] for claim in self.document["claims"]}:
            raise Http404(f"no claim {claim_id}")
        offset = -1 if self.request.POST.get("direction") == "up" else 1
        return claim_move(claim_id=claim_id, offset=offset, **self.service_arguments(save))


class ClaimWithdrawView(RecordEditView):
    """/cases/<key>/claims/<id>/withdraw/: the claim stays, with status ``withdrawn``."""

    template_name = "cases/claim_withdraw.html"
    page_title = "Withdraw claim"

    @property
    def default_summary(self) -> str:
        return f"Withdraw claim {self.kwargs['claim_id']}"

    def claim_index(self) -> int:
        for index, claim in enumerate(self.document["claims"]):
            if claim["id"] == self.kwargs["claim_id"]:
                return index
        raise Http404(f"no claim {self.kwargs['claim_id']}")

    def claim(self) -> dict[str, Any]:
        return self.document["claims"][self.claim_index()]

    def build_forms(self, data, document):
        self.claim()
        return {"withdraw": ClaimWithdrawForm(data, prefix="withdraw")}

    def extra_context(self):
        return {"claim": self.claim()}

    def write(self, section, placer, save) -> WriteOutcome:
        form = section["withdraw"]
        index = self.claim_index()
        # the reason becomes the withdrawn claim's status note (docs/record-format.md)
        placer.add(f"claims[{index}]", form, {"status_note": "reason"}, catch_all=False)
        placer.section(f"claims[{index}]", "claim")
        placer.section(f"claims[{index}].evidence", "claim")
        return claim_withdraw(
            claim_id=self.kwargs["claim_id"],
            reason=form.cleaned_data["reason"],
            **self.service_arguments(save),
        )

    def success_url(self, document):
        return case_url(document["key"], "claims")


class AssessmentEditView(RecordEditView):
    """/cases/<key>/assessments/new/ and /cases/<key>/assessments/<n>/edit/ (n counts from 1).

    The form follows the method's dimensions. A new assessment starts from the current one
    (if it uses the same method) and is added after it, so it becomes current."""

    template_name = "cases/assessment_form.html"

    @property
    def number(self) -> int | None:
        return self.kwargs.get("number")

    @property
    def page_title(self) -> str:
        return f"Edit assessment {self.number}" if self.number else "New assessment"

    @property
    def default_summary(self) -> str:
        return f"Edit assessment {self.number}" if self.number else "New assessment"

    def index(self, document) -> int:
        if self.number is None:
            return len(document["assessments"])
        if not 1 <= self.number <= len(document["assessments"]):
            raise Http404(f"no assessment {self.number}")
        return self.number - 1

    def method(self, document) -> AssessmentMethod:
        if self.number is not None:
            key = document["assessments"][self.index(document)]["method"]
        else:
            key = self.request.POST.get("assessment-method") or self.request.GET.get("method")
            if not key:
                current = document["assessments"][-1]["method"] if document["assessments"] else ""
                key = current or next((m.key for m in method_list() if m.status == "active"), "")
        method = methods_by_key([key]).get(key)
        if method is None:
            raise Http404(f"no assessment method {key!r}")
        return method

    def build_forms(self, data, document):
        method = self.method(document)
        self.active_method = method
        if self.number is not None:
            initial = AssessmentForm.initial_from(document["assessments"][self.index(document)])
        else:
            previous = [a for a in document["assessments"] if a["method"] == method.key]
            initial = AssessmentForm.initial_from(previous[-1]) if previous else {}
            initial.update(
                method=method.key,
                assessed_on=timezone.now().date().isoformat(),
                assessor=self.request.user.get_full_name() or self.request.user.get_username(),
            )
        cited = cited_source_keys(document)
        titles = sources_by_key(cited)
        return {
            "assessment": AssessmentForm(
                data,
                initial=initial,
                prefix="assessment",
                method=method,
                claim_choices=claim_choices(document),
                source_choices=[
                    (k, f"{titles[k]['title']} ({k})" if k in titles else k) for k in cited
                ],
            )
        }

    def extra_context(self):
        return {
            "method": getattr(self, "active_method", None),
            "methods": [m for m in method_list() if m.status == "active"],
            "is_new": self.number is None,
        }

    def build_document(self, document, section, placer):
        form = section["assessment"]
        index = self.index(document)
        fields = {
            "method": "method",
            "assessed_on": "assessed_on",
            "assessor": "assessor",
            "values": form.dimension_fields[0] if form.dimension_fields else "method",
            "impact": "impact",
            "impact_ungraded_reason": "impact_ungraded_reason",
            "narrative": "narrative",
            "evidence_basis": "basis_claims",
            "evidence_basis.claims": "basis_claims",
            "evidence_basis.sources": "basis_sources",
        }
        fields.update({f"values.{n.removeprefix('value_')}": n for n in form.dimension_fields})
        placer.add(f"assessments[{index}]", form, fields)
        if self.number is None:
            document["assessments"].append(form.assessment())
        else:
            document["assessments"][index] = form.assessment()
        return document

    def success_url(self, document):
        return case_url(document["key"], "assessment")


class ListEditView(RecordEditView):
    """A list of the case (figures, attributions, relations, controls, unknowns) edited as
    rows: change rows in place, renumber them to reorder, tick to remove, fill a blank row to
    add. Works without JavaScript."""

    template_name = "cases/list_form.html"
    list_name = ""
    formset_class: Any = None
    anchor = ""
    intro = ""
    # the field of a row that answers for the row as a whole (a refused relation: its kind)
    row_field = ""

    @property
    def default_summary(self) -> str:
        return f"Edit {self.list_name}"

    def form_kwargs(self, document) -> dict[str, Any]:
        return {}

    def initial_rows(self, document) -> list[dict[str, Any]]:
        return [dict(item) for item in document[self.list_name]]

    def build_forms(self, data, document):
        return {
            "rows": self.formset_class(
                data,
                initial=self.initial_rows(document),
                prefix=self.list_name,
                form_kwargs=self.form_kwargs(document),
            )
        }

    def to_item(self, data: dict[str, Any]) -> dict[str, Any]:
        return data

    def build_document(self, document, section, placer):
        items = []
        placer.section(self.list_name, "rows")
        for position, row in enumerate(list_rows(section["rows"])):
            items.append(self.to_item(row_data(row)))
            fields = {name: name for name in row.fields}
            if self.row_field:
                fields[""] = self.row_field
            placer.add(f"{self.list_name}[{position}]", row, fields)
        document[self.list_name] = items
        return document

    def extra_context(self):
        return {"intro": self.intro, "list_name": self.list_name}

    def success_url(self, document):
        return case_url(document["key"], self.anchor)


class FiguresEditView(ListEditView):
    list_name = "figures"
    formset_class = FigureFormSet
    page_title = "Edit figures"
    anchor = "scope"
    intro = (
        "Numbers that belong to this case's event, with the claims that support them. "
        "Other cases can use them only through an attribution, within the scope rules."
    )

    def form_kwargs(self, document):
        return {"claim_choices": claim_choices(document)}

    def build_forms(self, data, document):
        section = super().build_forms(data, document)
        rows = section["rows"]
        blank = rows.initial_form_count()
        if blank < len(rows.forms):
            # the first blank row offers the next free ID, as a new claim does; left as it
            # is, the row stays blank (its value is its initial one)
            taken = {f["id"] for f in document["figures"]}
            rows.forms[blank].fields["id"].initial = suggested_figure_id(document["key"], taken)
        return section

    def to_item(self, data):
        data["id"] = data["id"].strip()
        data["claims"] = list(data["claims"])
        return data


class AttributionsEditView(ListEditView):
    list_name = "attributions"
    formset_class = AttributionFormSet
    page_title = "Edit attributions"
    anchor = "scope"
    intro = (
        "Figures of other cases that this case uses, as impact basis or as context. "
        "Scope rules decide which figures may be attributed to this case: a figure only to "
        "its own case and to cases of its event (related as same_event), so the suggestions "
        "mark a figure of another event, and one a rule bars, and list the others first."
    )

    def form_kwargs(self, document):
        # the figures a rule bars from this case, said before the save is refused: two
        # queries however many figures there are (the rules naming the case, their figures)
        forbidden = forbidding_rules(document["key"])
        figures = figures_by_id(list(forbidden))
        self.barred = [
            {
                "figure": figure_id,
                "text": f"{figure_words(figure['value'], figure['unit'], figure['scope'])} "
                f"of {figure['case']}",
                "rule": rule,
            }
            for figure_id, rule in forbidden.items()
            if (figure := figures.get(figure_id)) is not None
        ]
        return {"figure_picker": Picker.of("figure", case=document["key"])}

    def extra_context(self):
        return {
            **super().extra_context(),
            "barred": getattr(self, "barred", []),
        }


class RelationsEditView(ListEditView):
    list_name = "relations"
    formset_class = RelationFormSet
    page_title = "Edit relations"
    anchor = "scope"
    row_field = "kind"

    def extra_context(self):
        return {**super().extra_context(), "legend": vocabulary_legend("case_relation")}

    intro = (
        "Relations to other cases. Symmetric relations (same event, related but distinct) "
        "show on both cases."
    )

    def form_kwargs(self, document):
        return {"case_picker": Picker.of("case", case=document["key"])}


class AffectedEditView(ListEditView):
    """/cases/<key>/affected/edit/: the components the case is about, what it says of
    their versions, and the claims each entry rests on."""

    list_name = "affected"
    formset_class = AffectedFormSet
    page_title = "Edit affected components"
    anchor = "affected"
    row_field = "component"
    intro = (
        "The components this case is about and which of their versions are affected or "
        "fixed, each resting on supported claims of this case (an entry under investigation "
        "may rest on none yet). Versions and ranges follow the component's version scheme."
    )

    def form_kwargs(self, document):
        return {
            "component_picker": Picker.of("component"),
            "claim_choices": claim_choices(document),
        }

    def initial_rows(self, document):
        return [AffectedForm.initial_of(entry) for entry in document.get("affected", [])]

    def build_document(self, document, section, placer):
        items = []
        placer.section(self.list_name, "rows")
        for position, row in enumerate(list_rows(section["rows"])):
            items.append(row.entry())
            fields = {name: name for name in row.fields}
            fields[""] = self.row_field
            placer.add(f"{self.list_name}[{position}]", row, fields)
        document[self.list_name] = items
        return document


class ControlsEditView(ListEditView):
    list_name = "controls"
    formset_class = ControlFormSet
    page_title = "Edit controls and mitigations"
    anchor = "controls"


class UnknownsEditView(ListEditView):
    list_name = "unknowns"
    formset_class = UnknownFormSet
    page_title = "Edit unknowns and contradictions"
    anchor = "unknowns"


BLANK_ROWS_MAX = 20  # blank rows a list can be opened with (``?blank=n``)


class CaseListsEditView(RecordEditView):
    """/cases/<key>/lists/edit/: the case's figures, relations, controls and unknowns on one
    page, saved as one revision; each list works as on its own page (``ListEditView``).
    ``?blank=n`` opens every list with ``n`` blank rows."""

    template_name = "cases/lists_form.html"
    page_title = "Edit figures, relations, controls and unknowns"
    default_summary = "Edit figures, relations, controls and unknowns"
    part_views = (FiguresEditView, RelationsEditView, ControlsEditView, UnknownsEditView)

    def parts(self) -> list[ListEditView]:
        if not hasattr(self, "_parts"):
            self._parts = []
            for view_class in self.part_views:
                part = view_class()
                part.setup(self.request, *self.args, **self.kwargs)
                self._parts.append(part)
        return self._parts

    def blank_rows(self, part: ListEditView) -> int | None:
        asked = self.request.GET.get("blank", "")
        return min(int(asked), BLANK_ROWS_MAX) if asked.isdigit() else None

    def build_forms(self, data, document):
        section = {}
        for part in self.parts():
            formset_class = part.formset_class
            blank = self.blank_rows(part)
            if blank is not None:
                formset_class = list_formset(formset_class.form, extra=blank)
            section[part.list_name] = formset_class(
                data,
                initial=part.initial_rows(document),
                prefix=part.list_name,
                form_kwargs=part.form_kwargs(document),
            )
        return section

    def build_document(self, document, section, placer):
        for part in self.parts():
            items = []
            placer.section(part.list_name, part.list_name)
            for position, row in enumerate(list_rows(section[part.list_name])):
                items.append(part.to_item(row_data(row)))
                placer.add(f"{part.list_name}[{position}]", row)
            document[part.list_name] = items
        return document

    def render_page(self, section, save, **kwargs):
        errors = kwargs.get("section_errors") or {}
        self.shown = [
            {
                "name": part.list_name,
                "title": part.page_title.removeprefix("Edit ").capitalize(),
                "intro": part.intro,
                "item_label": part.list_name.removesuffix("s").capitalize(),
                "rows": section[part.list_name],
                "errors": errors.get(part.list_name, []),
            }
            for part in self.parts()
        ]
        return super().render_page(section, save, **kwargs)

    def extra_context(self):
        return {"parts": self.shown}

    def success_url(self, document):
        return case_url(document["key"], "scope")
