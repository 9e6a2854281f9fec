"""The save cycle every editing page shares.

A page shows forms for part of a record. On save it calls ONE service with the revision the
form was opened on: most pages build a whole new document from the record's current
document and their forms, a page that changes one claim calls that claim's service. What
comes back is shown in place: each rule violation next to the field its path points to (the
rest at the top), a stale edit as a conflict with the other person's change as a diff.
Whatever the analyst typed stays in the form.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.forms.formsets import BaseFormSet
from django.forms.utils import ErrorDict
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views import View

from claimsdb.records import (
    PermissionDenied as ServicePermissionDenied,
)
from claimsdb.records import (
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
    loads,
    record_document,
)
from claimsdb.selectors.revisions import latest_revision_number, record_revision
from claimsdb.services import WriteOutcome, record_create, record_update

from . import stash
from .access import request_has_role
from .diffs import document_changes
from .forms import SaveForm
from .pickers import PickerField
from .presenters import sentence_end

ADD_ROW = "add_row"  # the "Add another row" button: its value names the list (formset prefix)
ROWS_MAX = 200  # rows a list editor can grow to by "Add another row"
SAVE_AND_ADD = "save_add"  # "Save and add another": saved, then an empty form of the kind
DISCARD_DRAFT = "discard_draft"  # the button that lets a draft go (``stash``)


@dataclass
class _Target:
    prefix: str
    form: forms.Form
    fields: dict[str, str]
    catch_all: bool


@dataclass
class ViolationPlacer:
    """Maps violation paths (``claims[3].evidence[0].source``) to the form fields that hold
    them. Register each form with the document path it edits; ``place`` puts each violation
    on its field (or on the form, or on a named section) and returns the ones that fit none.
    """

    targets: list[_Target] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    section_errors: dict[str, list[RuleViolation]] = field(default_factory=dict)

    def add(
        self,
        prefix: str,
        form: forms.Form,
        fields: dict[str, str] | None = None,
        *,
        catch_all: bool = True,
    ) -> None:
        """``fields`` maps a path below ``prefix`` to a form field; by default each form field
        answers for the document field of the same name."""
        if fields is None:
            fields = {name: name for name in form.fields}
        self.targets.append(_Target(prefix, form, fields, catch_all))

    def section(self, path: str, name: str) -> None:
        """Violations at exactly ``path`` are shown in the section ``name`` of the page."""
        self.sections[path] = name

    def place(self, violations: list[RuleViolation]) -> list[RuleViolation]:
        unplaced = []
        targets = sorted(self.targets, key=lambda t: len(t.prefix), reverse=True)
        for violation in violations:
            if violation.record or not self._place_one(violation, targets):
                unplaced.append(violation)
        return unplaced

    def _place_one(self, violation: RuleViolation, targets: list[_Target]) -> bool:
        path = violation.path
        if path in self.sections:
            self.section_errors.setdefault(self.sections[path], []).append(violation)
            return True
        for target in targets:
            relative = _below(path, target.prefix)
            if relative is None:
                continue
            name = _field_for(relative, target.fields)
            if name is not None and name in target.form.fields:
                target.form.add_error(name, violation.message)
                return True
            if target.catch_all and target.prefix:
                target.form.add_error(None, violation.message)
                return True
        return False


def _below(path: str, prefix: str) -> str | None:
    if not prefix:
        return path
    if path == prefix:
        return ""
    for joiner in (".", "["):
        if path.startswith(prefix + joiner):
            return path[len(prefix) + (1 if joiner == "." else 0) :]
    return None


def _field_for(relative: str, fields: dict[str, str]) -> str | None:
    if relative in fields:
        return fields[relative]
    best = None
    for doc_path in fields:
        if relative.startswith((doc_path + ".", doc_path + "[")) and (
            best is None or len(doc_path) > len(best)
        ):
            best = doc_path
    return fields[best] if best is not None else None


def list_rows(formset) -> list[forms.Form]:
    """The rows of a list editor that make up the new list, in the order asked for
    (blank extra rows and rows ticked for removal left out)."""
    return list(formset.ordered_forms)


def row_data(form: forms.Form) -> dict[str, Any]:
    return {k: v for k, v in form.cleaned_data.items() if k not in ("ORDER", "DELETE")}


@dataclass
class Conflict:
    """Someone saved the record after this form was opened."""

    base: int | None
    current: int | None
    rows: list
    message: str


class RecordEditView(View):
    """One editing page of one record. Subclasses say which forms it shows and how they
    change the document; this class runs the save cycle.

    ``mode``: ``update`` edits an existing record (``record_update`` with the form's base
    revision), ``create`` makes a new one (``record_create``). A page that changes a record
    through another service overrides ``write``.
    """

    kind = "case"
    role = "analyst"
    mode = "update"
    template_name = ""
    page_title = ""
    default_summary = ""
    default_material = True
    keeps_drafts = False  # its empty page offers the user's drafts of it (``stash``)

    # --- for subclasses ----------------------------------------------------------------
    def record_key(self) -> str:
        return self.kwargs["key"]

    def build_forms(self, data, document: dict[str, Any] | None) -> dict[str, Any]:
        raise NotImplementedError

    def build_document(
        self, document: dict[str, Any] | None, section: dict[str, Any], placer: ViolationPlacer
    ) -> dict[str, Any]:
        raise NotImplementedError

    def success_url(self, document: dict[str, Any]) -> str:
        raise NotImplementedError

    def review_scope(self) -> str:
        """The part of the record this page edits, for placing review comments at its
        fields (``claims[CLM-X]`` on a claim's page; empty: the record's own fields)."""
        return ""

    def cancel_url(self) -> str:
        return self.success_url(self.document) if self.document else "/"

    def another_url(self, document: dict[str, Any]) -> str:
        """Where *Save and add another* leads (an empty form for the next record); "" for
        a page without that button."""
        return ""

    def save_and_add_label(self) -> str:
        return "Save and add another" if self.another_url(self.document or {}) else ""

    def extra_context(self) -> dict[str, Any]:
        return {}

    def resumed(self, data, parked: dict[str, Any]) -> str:
        """Adjust form data coming back from a stash (``claimsdb/web/stash.py``); returns a
        message for the analyst."""
        return "Your input is back in the form; nothing has been saved yet."

    # --- the cycle -----------------------------------------------------------------------
    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            from django.contrib.auth.views import redirect_to_login

            return redirect_to_login(request.get_full_path())
        if not request_has_role(request, self.role):
            raise PermissionDenied(f"this page needs the {self.role} role")
        self.document = None
        if self.mode == "update":
            self.document = record_document(self.kind, self.record_key())
            if self.document is None:
                raise Http404(f"no {self.kind} {self.record_key()}")
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if "resume" in request.GET:
            return self.resume(request, request.GET["resume"])
        section = self.build_forms(None, self.document)
        save = SaveForm(
            initial={
                "summary": self.default_summary,
                "material": self.default_material,
                "base_revision": self.current_revision(),
            }
        )
        return self.render_page(section, save)

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        draft = request.POST.get(stash.TOKEN, "")
        if DISCARD_DRAFT in request.POST:
            stash.discard(request, draft)
            messages.info(request, "The draft is discarded.")
            return HttpResponseRedirect(request.path)
        if ADD_ROW in request.POST:
            data = with_blank_row(request.POST, request.POST[ADD_ROW])
            self.keep_draft(data)
            return self.render_input(data)
        section = self.build_forms(request.POST, self.document)
        save = SaveForm(request.POST)
        if not (save.is_valid() and _all_valid(section)):
            self.keep_draft(request.POST)
            return self.render_page(section, save, invalid=True, status=400)
        placer = ViolationPlacer()
        placer.add("", save, {"summary": "summary"}, catch_all=False)
        try:
            outcome = self.write(section, placer, save.cleaned_data)
        except StaleRevision as stale:
            self.keep_draft(request.POST)
            return self.render_conflict(section, save, stale)
        except RuleViolations as refused:
            self.keep_draft(request.POST)
            top = placer.place(refused.violations)
            return self.render_page(
                section,
                save,
                top=top,
                section_errors=placer.section_errors,
                refused=True,
                status=422,
            )
        except (ServicePermissionDenied, PermissionError) as denied:
            raise PermissionDenied(str(denied)) from denied
        except RecordNotFound as missing:
            raise Http404(str(missing)) from missing
        stash.discard(request, draft)  # saved: the draft has served
        if outcome.revision is None:
            messages.info(request, "Nothing changed, so no revision was written.")
        else:
            messages.success(
                request, f"Saved as revision {outcome.revision.number}: {outcome.revision.summary}"
            )
        another = self.another_url(outcome.document) if SAVE_AND_ADD in request.POST else ""
        return HttpResponseRedirect(another or self.success_url(outcome.document))

    def render_input(self, data) -> HttpResponse:
        """The page again with ``data`` in its forms and nothing checked or written: for
        "Add another row" and for input coming back from a stash."""
        section = self.build_forms(data, self.document)
        return self.render_page(unchecked(section), unchecked(SaveForm(data)))

    def resume(self, request: HttpRequest, token: str) -> HttpResponse:
        """The form as it was when the analyst left it to create another record (or last
        posted it): its draft, kept until the form is saved or the draft discarded."""
        parked = stash.reopen(request, token, path=request.path)
        if parked is None:
            messages.warning(
                request,
                "There is no draft of this form at that link: it was saved or discarded, or "
                f"was left for more than {stash.DRAFT_SECONDS // 86400} days. "
                "This is an empty form.",
            )
            return HttpResponseRedirect(request.path)
        messages.info(request, self.resumed(parked["data"], parked))
        return self.render_input(parked["data"])

    def keep_draft(self, data) -> None:
        """A form that is a draft keeps its latest input in it (see ``stash``)."""
        token = data.get(stash.TOKEN, "")
        if token:
            stash.keep(self.request, token, data)

    def write(
        self, section: dict[str, Any], placer: ViolationPlacer, save: dict[str, Any]
    ) -> WriteOutcome:
        """The save's one service call: the document rebuilt from the forms
        (``build_document``), written whole."""
        document = self.build_document(copy.deepcopy(self.document), section, placer)
        if self.mode == "create":
            return record_create(
                user=self.request.user,
                kind=self.kind,
                document=document,
                summary=save["summary"],
                material=save["material"],
            )
        return record_update(
            kind=self.kind, key=self.record_key(), document=document, **self.service_arguments(save)
        )

    def draft_token(self, section, save: SaveForm) -> str:
        """The token of the draft the form is (carried by the form, in ``draft``)."""
        data = save.data if save.is_bound else {}
        token = data.get(stash.TOKEN, "") if hasattr(data, "get") else ""
        return token if isinstance(token, str) else ""

    def drafts_offered(self, section, save: SaveForm) -> list[dict[str, Any]]:
        """A page that ``keeps_drafts`` offers, when opened empty, the user's drafts of it."""
        if not self.keeps_drafts or save.is_bound:
            return []
        return stash.drafts_of(self.request, self.request.path)

    def service_arguments(self, save: dict[str, Any]) -> dict[str, Any]:
        """What every service call of a save is given: the user, the summary and whether the
        change is material, and the revision the form was opened on (a save based on an
        older one is refused as stale, and shown as a conflict)."""
        return {
            "user": self.request.user,
            "summary": save["summary"],
            "material": save["material"],
            "expected_revision": save["base_revision"],
        }

    def current_revision(self) -> int | None:
        if self.mode == "create":
            return None
        return latest_revision_number(self.kind, self.record_key())

    def render_conflict(self, section, save: SaveForm, stale: StaleRevision) -> HttpResponse:
        """Show the other person's change and keep this person's input.

        A three-way merge of the form's values: a field this person left as it was when they
        opened the form takes the other person's new value; a field they changed keeps their
        input; a field both changed keeps their input and is marked with the other value.
        Saving again (having seen the other change) then applies only their own edits.
        """
        base = save.cleaned_data["base_revision"]
        old = None
        if base is not None:
            revision = record_revision(self.kind, self.record_key(), base)
            old = loads(revision.snapshot) if revision else None
        current = record_document(self.kind, self.record_key())
        conflict = Conflict(
            base=base,
            current=stale.current,
            rows=document_changes(old, current) if old is not None else [],
            message=stale.what,
        )
        data = self.request.POST.copy()
        both_changed: dict[str, list[str]] = {}
        if old is not None and current is not None:
            data, both_changed = merge_form_data(
                data,
                form_values(self.build_forms(None, old)),
                form_values(self.build_forms(None, current)),
            )
        data["base_revision"] = "" if stale.current is None else str(stale.current)
        self.document = current
        section = self.build_forms(data, current)
        _all_valid(section)
        fields = bound_fields_by_name(section)
        for name, theirs in both_changed.items():
            if name in fields:
                form, field_name = fields[name]
                shown = " / ".join(v for v in theirs if v) or "(empty)"
                form.add_error(
                    field_name,
                    f"Also changed in revision {stale.current}, to: {sentence_end(shown)} "
                    "Your value is kept here; saving again keeps it.",
                )
        return self.render_page(section, SaveForm(data), conflict=conflict, status=409)

    def render_page(
        self,
        section: dict[str, Any],
        save: SaveForm,
        *,
        top: list[RuleViolation] | None = None,
        section_errors: dict[str, list[RuleViolation]] | None = None,
        conflict: Conflict | None = None,
        refused: bool = False,
        invalid: bool = False,
        status: int = 200,
    ) -> HttpResponse:
        context = {
            "page_title": self.page_title,
            "record_kind": self.kind,
            "record_key": self.record_key() if self.mode == "update" else "",
            "review_scope": self.review_scope(),
            "document": self.document,
            "forms": section,
            "save_form": save,
            "top_violations": top or [],
            "section_errors": section_errors or {},
            "conflict": conflict,
            "refused": refused,
            "invalid": invalid,
            "cancel_url": self.cancel_url(),
            "draft_token": self.draft_token(section, save),
            "save_and_add": self.save_and_add_label(),
            "drafts": self.drafts_offered(section, save),
            # picker.js fills the pickers' suggestions as keys are typed
            "uses_pickers": any(
                isinstance(field, PickerField)
                for form in _forms_of(section)
                for field in form.fields.values()
            ),
            **self.extra_context(),
        }
        return render(self.request, self.template_name, context, status=status)


SAVE_FIELDS = {"csrfmiddlewaretoken", "summary", "material", "base_revision"}


def _forms_of(section: dict[str, Any]) -> list[forms.Form]:
    found = []
    for item in section.values():
        if isinstance(item, BaseFormSet):
            found.append(item.management_form)
            found.extend(item.forms)
        else:
            found.append(item)
    return found


def _normalized(values: list[str]) -> list[str]:
    return [v.replace("\r\n", "\n").replace("\r", "\n") for v in values]


def form_values(section: dict[str, Any]) -> dict[str, list[str]]:
    """What a browser would submit for unbound forms, by field name (widgets' own rendering
    of each initial value)."""
    values: dict[str, list[str]] = {}
    for form in _forms_of(section):
        for bound in form:
            if bound.field.disabled:
                continue
            value = bound.value()
            widget = bound.field.widget
            if isinstance(widget, forms.CheckboxInput):
                values[bound.html_name] = ["on"] if value else []
            elif getattr(widget, "allow_multiple_selected", False):
                values[bound.html_name] = [str(v) for v in (value or [])]
            else:
                formatted = widget.format_value(value)
                values[bound.html_name] = ["" if formatted is None else str(formatted)]
    return values


def merge_form_data(
    mine, base: dict[str, list[str]], theirs: dict[str, list[str]]
) -> tuple[Any, dict[str, list[str]]]:
    """Three-way merge of submitted form data (see ``RecordEditView.render_conflict``).

    Lists edited as rows merge row by row only when both sides have the same rows; if the
    other person added or removed rows, this person's rows are kept as they are."""
    merged = mine.copy()
    both: dict[str, list[str]] = {}
    unstable = {
        name.removesuffix("-INITIAL_FORMS")
        for name in base
        if name.endswith("-INITIAL_FORMS") and base[name] != theirs.get(name)
    }
    for name in set(base) | set(theirs):
        if name in SAVE_FIELDS or any(name.startswith(prefix + "-") for prefix in unstable):
            continue
        submitted = _normalized(mine.getlist(name))
        was, now = _normalized(base.get(name, [])), _normalized(theirs.get(name, []))
        if was == now or submitted == now:
            continue
        if submitted == was:
            merged.setlist(name, now)
        else:
            both[name] = now
    return merged, both


def bound_fields_by_name(section: dict[str, Any]) -> dict[str, tuple[forms.Form, str]]:
    return {bound.html_name: (form, bound.name) for form in _forms_of(section) for bound in form}


def with_blank_row(data, prefix: str):
    """Form data with one more (blank) row in the list ``prefix``, while it has fewer than
    ``ROWS_MAX`` rows (a longer list keeps all its rows, with none added)."""
    data = data.copy()
    total = f"{prefix}-TOTAL_FORMS"
    count = data.get(total, "")
    if count.isdigit() and int(count) < ROWS_MAX:
        data[total] = str(int(count) + 1)
    return data


def unchecked(item):
    """Bound forms (or a section of them) shown with their input but without checking it: a
    form re-shown for "Add another row" lists no errors for fields not yet filled in."""
    if isinstance(item, dict):
        for value in item.values():
            unchecked(value)
    elif isinstance(item, BaseFormSet):
        item._errors, item._non_form_errors = [], item.error_class()
        for form in item.forms:
            unchecked(form)
    else:
        item._errors = ErrorDict()
    return item


def _all_valid(section: dict[str, Any]) -> bool:
    results = [form.is_valid() for form in section.values() if hasattr(form, "is_valid")]
    return all(results)


def simple_service_call(
    request: HttpRequest, call: Callable[[], Any], *, on_refused: Callable[[RuleViolations], Any]
):
    """Run one service call from a small action page (withdraw, move, revert)."""
    try:
        return call()
    except (ServicePermissionDenied, PermissionError) as denied:
        raise PermissionDenied(str(denied)) from denied
    except RecordNotFound as missing:
        raise Http404(str(missing)) from missing
    except RuleViolations as refused:
        return on_refused(refused)
