"""Forms of the editing pages. They only collect input: documents are built in the views and
checked by the services (the rules of claimsdb/rules/ run there, not here)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.forms import formset_factory

from claimsdb import choices, versions
from claimsdb.codes import AffectedCode, AttributionCode, EvidenceCode, RelationCode, RuleCode
from claimsdb.records import jsontext
from claimsdb.records.errors import RuleViolations

from .pickers import Picker, PickerField

PICKER_HELP = "Its key; type part of the key or title for suggestions."
DATE_INPUT = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
MARKDOWN_HELP = (
    "Markdown: *emphasis*, **strong**, [links](https://…), lists. HTML is shown as text."
)


class TextField(forms.CharField):
    """Multi-line text as typed: browsers send textarea lines ending in CRLF; documents keep
    LF, so an untouched field saves unchanged. Leading and trailing spaces are kept too."""

    def __init__(self, *, rows: int = 3, **kwargs):
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows}))
        kwargs.setdefault("strip", False)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n").replace("\r", "\n")


def with_current(options: list[tuple[str, str]], current: str | None) -> list[tuple[str, str]]:
    """Choices that still offer a value the record already has (so a save never drops it)."""
    if current and current not in {value for value, _ in options}:
        return [*options, (current, f"{current} (not available)")]
    return options


class ChoiceSelect(forms.Select):
    """A select whose ``disabled`` choices are shown, relabelled, but cannot be chosen."""

    def __init__(self, *args, disabled: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.disabled = disabled

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if value in self.disabled:
            option["label"] = self.disabled[value]
            option["attrs"]["disabled"] = True
        return option


class SaveForm(forms.Form):
    """What every save asks: a summary for the history, whether the change is material, and
    the revision the edit started from (a save based on an older one is refused)."""

    summary = forms.CharField(
        max_length=1000,
        label="Summary of the change",
        help_text="Shown in the history: what changed and why.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    material = forms.BooleanField(
        required=False,
        initial=True,
        label="Material change",
        help_text="It changes what the record states. Leave unticked for wording, order or "
        "formatting only (an editorial change).",
    )
    base_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class RevertForm(SaveForm):
    pass


class CaseForm(forms.Form):
    title = forms.CharField(max_length=500)
    status = forms.ChoiceField(choices=choices.CaseStatus.choices)
    summary = TextField(help_text="Plain text: the lede under the title.")
    scope_note = TextField(
        label="Scope note",
        help_text="What this case is not, and what must not be attributed to it. " + MARKDOWN_HELP,
    )
    basis = TextField(rows=10, label="Basis and provenance", help_text=MARKDOWN_HELP)
    limits = TextField(label="Limits and uncertainty (at a glance)", help_text=MARKDOWN_HELP)
    account = TextField(rows=10, label="Full account", help_text=MARKDOWN_HELP)
    tags = forms.CharField(required=False, help_text="Comma-separated, e.g. kv-cache, rdma.")

    def __init__(self, *args, may_set_ready: bool = True, current_status: str = "", **kwargs):
        """``may_set_ready``: the user is a reviewer. Others see ``ready`` as a disabled
        choice unless the case already is ready; the service refuses it from them anyway
        (``status.ready_needs_reviewer``; docs/releases.md, "Who sets a case ready")."""
        super().__init__(*args, **kwargs)
        if not may_set_ready and current_status != choices.CaseStatus.READY:
            self.fields["status"].widget = ChoiceSelect(
                choices=self.fields["status"].choices,
                disabled={choices.CaseStatus.READY: "ready (set by a reviewer)"},
            )
            self.fields["status"].help_text = (
                "Set it to in review to propose it for the next release; a reviewer sets it "
                "to ready."
            )

    def clean_tags(self) -> list[str]:
        return sorted({t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()})

    @staticmethod
    def initial_from(document: dict[str, Any]) -> dict[str, Any]:
        fields = ("title", "status", "summary", "scope_note", "basis", "limits", "account")
        return {**{f: document[f] for f in fields}, "tags": ", ".join(document["tags"])}


class NewCaseForm(CaseForm):
    key = forms.CharField(
        max_length=choices.KEY_MAX_LENGTH,
        help_text="Permanent, e.g. CP22-004: capital letters, digits and hyphens.",
    )
    field_order = ["key"]


class ClaimForm(forms.Form):
    id = forms.CharField(
        max_length=choices.ID_MAX_LENGTH,
        label="Claim ID",
        help_text="Permanent and never reused, e.g. CLM-CP22-003-D.",
    )
    statement = TextField(required=True, help_text="Plain text.")
    status = forms.ChoiceField(choices=choices.ClaimStatus.choices)
    status_note = forms.CharField(required=False, label="Status note")
    basis = forms.ChoiceField(choices=choices.ClaimBasis.choices)
    origin = forms.ChoiceField(choices=choices.ClaimOrigin.choices, initial="human")

    def __init__(self, *args, id_editable: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if not id_editable:
            self.fields["id"].disabled = True
            self.fields["id"].help_text = "Permanent: a claim's ID never changes."


class ClaimWithdrawForm(forms.Form):
    """Why a claim is withdrawn: kept as its status note and shown on its card."""

    reason = TextField(
        required=True,
        error_messages={"required": "Say why the claim is withdrawn."},
        label="Reason for withdrawing",
        help_text="Plain text, shown on the claim: “Withdrawn on <date>: <reason>”.",
    )

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"]
        if not reason.strip():
            raise forms.ValidationError("Say why the claim is withdrawn.", code="required")
        return reason.strip()


BLANK = [("", "—")]


class ListRowForm(forms.Form):
    """A row of a list editor; blank extra rows are ignored, ticked rows are removed.

    Every choice starts blank, so that an untouched extra row submits nothing and counts as
    unchanged (a preselected first choice would make every blank row look filled in)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, forms.ChoiceField) and not isinstance(
                field, forms.MultipleChoiceField
            ):
                options = list(field.choices)
                if not options or options[0][0] != "":
                    field.choices = BLANK + options


class EvidenceLinkForm(ListRowForm):
    source = PickerField(kind="source", code=EvidenceCode.SOURCE_UNKNOWN, help_text=PICKER_HELP)
    relation = forms.ChoiceField(choices=choices.EvidenceRelation.choices)
    locator = forms.CharField(
        required=False, help_text="Which part of the source, e.g. “Technical analysis”."
    )

    def __init__(self, *args, source_picker: Picker, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].use(source_picker)


class FigureForm(ListRowForm):
    id = forms.CharField(max_length=choices.ID_MAX_LENGTH, label="Figure ID")
    # a decimal, not a float: "1.20" is kept as typed (claimsdb.records.figures)
    value = forms.DecimalField(help_text="as the source gives it: 1.2, 1.20, 155")
    unit = forms.CharField(max_length=100)
    measure = forms.CharField(max_length=100, help_text="e.g. affected_responses")
    scope = forms.ChoiceField(choices=choices.FigureScope.choices)
    description = TextField(rows=2)
    claims = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Supporting claims",
    )

    def __init__(self, *args, claim_choices: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        options = list(claim_choices)
        for claim_id in self.initial.get("claims") or []:
            options = with_current(options, claim_id)
        self.fields["claims"].choices = options


class SelectSomeDisabled(forms.Select):
    """A select whose options in ``disabled`` cannot be chosen (they are listed, with the
    reason in their text, so that the analyst sees why), except the value already chosen."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.disabled: set[str] = set()

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if str(value) in self.disabled and not selected:
            option["attrs"]["disabled"] = True
        return option


class AttributionForm(ListRowForm):
    figure = PickerField(kind="figure", code=AttributionCode.FIGURE_UNKNOWN, help_text=PICKER_HELP)
    role = forms.ChoiceField(choices=choices.AttributionRole.choices)
    note = forms.CharField(required=False)

    def __init__(self, *args, figure_picker: Picker, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["figure"].use(figure_picker)


class RelationForm(ListRowForm):
    case = PickerField(
        kind="case", code=RelationCode.CASE_UNKNOWN, label="Other case", help_text=PICKER_HELP
    )
    kind = forms.ChoiceField(choices=choices.RelationKind.choices, label="Relation")
    note = forms.CharField(required=False)

    def __init__(self, *args, case_picker: Picker, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["case"].use(case_picker)


class ControlForm(ListRowForm):
    kind = forms.ChoiceField(choices=choices.ControlKind.choices)
    text = TextField(rows=2, required=True, help_text="Plain text.")


class UnknownForm(ListRowForm):
    kind = forms.ChoiceField(choices=choices.UnknownKind.choices)
    text = TextField(rows=2, required=True, help_text="Plain text.")


def ranges_text(ranges: list[dict[str, Any]]) -> str:
    """Ranges as the affected form shows them: a line per range, its events separated by
    commas, each its name and version (``introduced 0, fixed 0.5.3``)."""
    return "\n".join(
        ", ".join(f"{name} {value}" for event in r["events"] for name, value in event.items())
        for r in ranges
    )


def parse_ranges(text: str) -> list[dict[str, Any]]:
    """The ranges a line per range of ``ranges_text`` gives. A piece that is not a name and
    a version is kept as written (``{"fixed": ""}``, ``{"fixes": "1.0"}``), for the field
    rules to refuse with their code at this field, rather than dropped."""
    ranges = []
    for line in text.splitlines():
        if not line.strip():
            continue
        events = []
        for piece in line.split(","):
            name, _, version = piece.strip().partition(" ")
            if name:
                events.append({name: version.strip()})
        ranges.append({"events": events})
    return ranges


def split_list(text: str) -> list[str]:
    """Items written one per line or separated by commas, in order, blanks dropped."""
    return [item.strip() for line in text.splitlines() for item in line.split(",") if item.strip()]


class AffectedForm(ListRowForm):
    """One affected component of a case: which component, what the case says of it, its
    versions, and the claims of the case it rests on."""

    component = PickerField(
        kind="component", code=AffectedCode.COMPONENT_UNKNOWN, help_text=PICKER_HELP
    )
    status = forms.ChoiceField(choices=choices.AffectedStatus.choices)
    ranges = TextField(
        rows=2,
        help_text="One range a line, its events separated by commas, in the component's "
        "version scheme: introduced 0, fixed 0.5.3 (or last_affected 0.5.2; limit …). "
        "“introduced 0” is the first version.",
    )
    versions = forms.CharField(
        required=False, help_text="Explicit versions, separated by commas.", strip=False
    )
    claims = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Evidence: claims of this case",
        help_text="At least one supported claim, unless the status is under investigation.",
    )
    note = forms.CharField(required=False)

    def __init__(
        self,
        *args,
        component_picker: Picker,
        claim_choices: list[tuple[str, str]],
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.fields["component"].use(component_picker)
        options = list(claim_choices)
        for claim_id in self.initial.get("claims") or []:
            options = with_current(options, claim_id)
        self.fields["claims"].choices = options

    def entry(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "component": data["component"].strip(),
            "status": data["status"],
            "ranges": parse_ranges(data["ranges"]),
            "versions": split_list(data["versions"]),
            "claims": list(data["claims"]),
            "note": data["note"],
        }

    @staticmethod
    def initial_of(entry: dict[str, Any]) -> dict[str, Any]:
        return {
            **entry,
            "ranges": ranges_text(entry["ranges"]),
            "versions": ", ".join(entry["versions"]),
        }


class ComponentForm(forms.Form):
    name = forms.CharField(max_length=300)
    kind = forms.ChoiceField(choices=choices.ComponentKind.choices)
    purl = forms.CharField(
        max_length=1000,
        required=False,
        label="Package URL",
        help_text="Only when certain, e.g. pkg:pypi/sglang or pkg:github/kvcache-ai/mooncake.",
    )
    version_scheme = forms.ChoiceField(
        choices=[(name, name) for name in versions.SCHEME_NAMES],
        help_text="How its versions are ordered: pypi (PEP 440), semver, github (tags read as "
        "SemVer), npm, deb, rpm, golang, generic…",
    )
    homepage = forms.CharField(max_length=2000, required=False, help_text="http(s) address")
    aliases = TextField(
        rows=2, help_text="Names other tools use for it, one a line (the harness writes mooncake)."
    )
    relations = TextField(
        rows=2,
        label="Same component as",
        help_text="Component keys, one a line, each optionally followed by a colon and a note: "
        "CMP-OTHER: the same project under its old name. Related, never merged.",
    )
    status = forms.ChoiceField(choices=choices.RecordStatus.choices, initial="active")

    @staticmethod
    def relations_text(relations: list[dict[str, Any]]) -> str:
        return "\n".join(
            r["component"] + (f": {r['note']}" if r["note"] else "") for r in relations
        )

    def component_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        relations = []
        for line in data["relations"].splitlines():
            if line.strip():
                key, _, note = line.partition(":")
                relations.append(
                    {"component": key.strip(), "kind": "same_component", "note": note.strip()}
                )
        return {
            "name": data["name"],
            "kind": data["kind"],
            "purl": data["purl"].strip(),
            "version_scheme": data["version_scheme"],
            "homepage": data["homepage"].strip(),
            "aliases": [line.strip() for line in data["aliases"].splitlines() if line.strip()],
            "relations": sorted(relations, key=lambda r: (r["component"], r["kind"])),
            "status": data["status"],
        }


class NewComponentForm(ComponentForm):
    key = forms.CharField(max_length=choices.KEY_MAX_LENGTH, help_text="e.g. CMP-MOONCAKE")
    field_order = ["key"]


def list_formset(form_class: type[forms.Form], extra: int = 3):
    return formset_factory(form_class, extra=extra, can_order=True, can_delete=True)


EvidenceLinkFormSet = list_formset(EvidenceLinkForm, extra=2)
FigureFormSet = list_formset(FigureForm, extra=2)
AttributionFormSet = list_formset(AttributionForm)
RelationFormSet = list_formset(RelationForm)
ControlFormSet = list_formset(ControlForm)
UnknownFormSet = list_formset(UnknownForm)
AffectedFormSet = list_formset(AffectedForm, extra=2)


UNGRADED = ""


class DefinedChoice:
    """A radio group with a definition beside each option (``options``: the radio and its
    definition, "" where the method gives none)."""

    def __init__(self, field: forms.BoundField, definitions: dict[str, str]):
        self.field = field
        self.options = [(radio, definitions.get(str(radio.data["value"]), "")) for radio in field]


class AssessmentForm(forms.Form):
    """An assessment driven by its method: one choice per dimension, the method's impact
    scale (or ungraded, with a reason), and an evidence basis from the case."""

    method = forms.CharField(widget=forms.HiddenInput)
    assessed_on = forms.DateField(widget=DATE_INPUT, label="Assessed on")
    assessor = forms.CharField(max_length=200, required=False)
    impact = forms.ChoiceField(required=False)
    impact_ungraded_reason = TextField(
        label="Why the impact is ungraded",
        help_text="Required when the impact is ungraded; leave empty when it is graded.",
    )
    narrative = TextField(rows=10, help_text=MARKDOWN_HELP)
    basis_claims = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Evidence basis: claims"
    )
    basis_sources = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Evidence basis: sources"
    )

    def __init__(
        self,
        *args,
        method,
        claim_choices: list[tuple[str, str]],
        source_choices: list[tuple[str, str]],
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.method = method
        self.dimension_fields: list[str] = []
        # the method's definition of each choice, by field name and value: shown beside it
        self.definitions: dict[str, dict[str, str]] = {}
        for dimension in method.dimensions:
            name = f"value_{dimension['key']}"
            current = (self.initial.get("values") or {}).get(dimension["key"])
            options = [(v["key"], v["label"]) for v in dimension["values"]]
            self.fields[name] = forms.ChoiceField(
                label=dimension["label"],
                choices=with_current(options, current),
                initial=current,
                widget=forms.RadioSelect,
            )
            self.definitions[name] = {
                v["key"]: v.get("definition", "") for v in dimension["values"]
            }
            self.dimension_fields.append(name)
        scale = method.impact or {}
        labels = scale.get("labels", {})
        grades = [str(n) for n in range(int(scale.get("min", 0)), int(scale.get("max", 0)) + 1)]
        self.fields["impact"].choices = [(UNGRADED, "ungraded")] + [
            (n, f"{n} — {labels[n]}" if n in labels else n) for n in grades
        ]
        self.fields["impact"].widget = forms.RadioSelect(choices=self.fields["impact"].choices)
        self.definitions["impact"] = {
            UNGRADED: "No grade on this scale: say why below.",
            **scale.get("definitions", {}),
        }
        self.fields["impact"].label = f"Impact ({method.key} scale)"
        self.fields["basis_claims"].choices = self._keep(
            claim_choices, (self.initial.get("basis_claims") or [])
        )
        self.fields["basis_sources"].choices = self._keep(
            source_choices, (self.initial.get("basis_sources") or [])
        )
        order = ["method", "assessed_on", "assessor", *self.dimension_fields]
        self.order_fields(order)

    @staticmethod
    def _keep(options, current):
        for value in current:
            options = with_current(options, value)
        return options

    def dimension_bound_fields(self):
        return [self[name] for name in self.dimension_fields]

    def defined_choices(self) -> list[DefinedChoice]:
        """The dimensions, then the impact: each a radio group whose options carry the
        method's definitions (the vocabulary where it is chosen)."""
        return [
            DefinedChoice(self[name], self.definitions[name])
            for name in [*self.dimension_fields, "impact"]
        ]

    def clean_impact(self) -> int | None:
        value = self.cleaned_data["impact"]
        return None if value in (None, UNGRADED) else int(value)

    @staticmethod
    def initial_from(assessment: dict[str, Any]) -> dict[str, Any]:
        return {
            "method": assessment["method"],
            "assessed_on": assessment["assessed_on"],
            "assessor": assessment["assessor"],
            "values": assessment["values"],
            "impact": UNGRADED if assessment["impact"] is None else str(assessment["impact"]),
            "impact_ungraded_reason": assessment["impact_ungraded_reason"],
            "narrative": assessment["narrative"],
            "basis_claims": assessment["evidence_basis"]["claims"],
            "basis_sources": assessment["evidence_basis"]["sources"],
        }

    def assessment(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "method": data["method"],
            "assessed_on": data["assessed_on"].isoformat(),
            "assessor": data["assessor"],
            "values": {
                name.removeprefix("value_"): data[name]
                for name in self.dimension_fields
                if data.get(name)
            },
            "impact": data["impact"],
            "impact_ungraded_reason": data["impact_ungraded_reason"],
            "narrative": data["narrative"],
            "evidence_basis": {
                "claims": sorted(data["basis_claims"]),
                "sources": sorted(data["basis_sources"]),
            },
        }


class SourceForm(forms.Form):
    title = forms.CharField(max_length=500)
    kind = forms.ChoiceField(choices=choices.SourceKind.choices)
    publisher = forms.CharField(max_length=300, required=False)
    url = forms.CharField(max_length=2000, required=False, label="URL")
    published_on = forms.DateField(required=False, widget=DATE_INPUT, label="Published on")
    accessed_on = forms.DateField(required=False, widget=DATE_INPUT, label="Accessed on")
    reliability = forms.ChoiceField(
        choices=choices.Reliability.choices, required=False, label="Reliability (Admiralty)"
    )
    notes = TextField(help_text="Plain text.")
    status = forms.ChoiceField(choices=choices.RecordStatus.choices, initial="active")

    def source_fields(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        for name in ("published_on", "accessed_on"):
            data[name] = data[name].isoformat() if data[name] else None
        return {k: data[k] for k in self.base_fields}


class NewSourceForm(SourceForm):
    key = forms.CharField(max_length=choices.KEY_MAX_LENGTH, help_text="e.g. SRC-VENDOR-2026-01")
    field_order = ["key"]


class RuleForm(forms.Form):
    kind = forms.ChoiceField(choices=choices.RuleKind.choices)
    status = forms.ChoiceField(choices=choices.RecordStatus.choices, initial="active")
    figure = PickerField(
        kind="figure",
        code=RuleCode.FIGURE_UNKNOWN,
        help_text="The figure that must not be attributed…",
    )
    case = PickerField(kind="case", code=RuleCode.CASE_UNKNOWN, help_text="…to this case.")
    reason = TextField(required=True, help_text="Shown with every refusal this rule causes.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["figure"].use(Picker.of("figure"))
        self.fields["case"].use(Picker.of("case"))


class NewRuleForm(RuleForm):
    key = forms.CharField(max_length=choices.KEY_MAX_LENGTH, help_text="e.g. RULE-FIG-X-NOT-Y")
    field_order = ["key"]


class JSONField(forms.CharField):
    widget = forms.Textarea(attrs={"rows": 14, "class": "code"})

    def prepare_value(self, value):
        if isinstance(value, dict | list):
            return json.dumps(value, indent=2, ensure_ascii=False)
        return value

    def to_python(self, value):
        value = super().to_python(value)
        try:
            return jsontext.loads(value)
        except RuleViolations as refused:
            raise forms.ValidationError(
                [f"{v.path}: {v.message}" if v.path else v.message for v in refused.violations]
            ) from refused


class MethodForm(forms.Form):
    title = forms.CharField(max_length=300)
    status = forms.ChoiceField(choices=choices.RecordStatus.choices, initial="active")
    dimensions = JSONField(
        help_text='A list of {"key", "label", "values": [{"key", "label"}]}. A method that an '
        "assessment uses cannot change: create a new version instead."
    )
    impact = JSONField(help_text='{"min": 0, "max": 4, "labels": {"0": "…"}}')


class NewMethodForm(MethodForm):
    key = forms.CharField(max_length=100, help_text="name/version, e.g. diggingbeagle.assessment/2")
    field_order = ["key"]
