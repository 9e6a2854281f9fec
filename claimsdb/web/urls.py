"""Web pages (docs/web-ui.md)."""

from django.urls import path

from claimsdb.records.kinds import CASE, COMPONENT, METHOD, RULE, SOURCE, RecordKind

from . import pickers
from .views import case_edit, claims_batch, components, lists, reading, records


def history_routes(record_kind: RecordKind) -> list:
    """History, one revision, a diff and a revert for one kind of record: under its URL
    segment, named after it (``case-history``), its keys matched as paths if they hold
    slashes."""
    prefix, kind = record_kind.plural, record_kind.name
    key = "<path:key>" if record_kind.keys_hold_slashes else "<str:key>"
    return [
        path(
            f"{prefix}/{key}/history/",
            reading.record_history,
            {"kind": kind},
            name=record_kind.url_name("history"),
        ),
        path(
            f"{prefix}/{key}/revisions/<int:number>/revert/",
            reading.revision_revert_page,
            {"kind": kind},
            name=record_kind.url_name("revert"),
        ),
        path(
            f"{prefix}/{key}/revisions/<int:number>/",
            reading.record_revision,
            {"kind": kind},
            name=record_kind.url_name("revision"),
        ),
        path(
            f"{prefix}/{key}/diff/<int:a>/<int:b>/",
            reading.record_diff,
            {"kind": kind},
            name=record_kind.url_name("diff"),
        ),
        path(
            f"{prefix}/{key}/diff/",
            reading.record_diff_form,
            {"kind": kind},
            name=record_kind.url_name("diff-form"),
        ),
    ]


urlpatterns = [
    path("", lists.index, name="index"),
    path("suggest/<str:kind>/", pickers.suggest, name="suggest"),
    # cases
    path("cases/", lists.case_list, name="case-list"),
    path("cases/new/", case_edit.CaseCreateView.as_view(), name="case-new"),
    path("cases/<str:key>/", reading.case_detail, name="case-detail"),
    path("cases/<str:key>/record.json", reading.case_record_json, name="case-record-json"),
    path(
        "cases/<str:key>/revisions/<int:number>/record.json",
        reading.case_revision_json,
        name="case-revision-json",
    ),
    path("cases/<str:key>/edit/", case_edit.CaseFieldsEditView.as_view(), name="case-edit"),
    path("cases/<str:key>/claims/", case_edit.ClaimsArrangeView.as_view(), name="case-claims"),
    path("cases/<str:key>/claims/new/", case_edit.ClaimEditView.as_view(), name="claim-new"),
    path("cases/<str:key>/claims/add/", claims_batch.ClaimsBatchView.as_view(), name="claims-add"),
    path(
        "cases/<str:key>/claims/<str:claim_id>/edit/",
        case_edit.ClaimEditView.as_view(),
        name="claim-edit",
    ),
    path(
        "cases/<str:key>/claims/<str:claim_id>/move/",
        case_edit.ClaimMoveView.as_view(),
        name="claim-move",
    ),
    path(
        "cases/<str:key>/claims/<str:claim_id>/withdraw/",
        case_edit.ClaimWithdrawView.as_view(),
        name="claim-withdraw",
    ),
    path(
        "cases/<str:key>/assessments/new/",
        case_edit.AssessmentEditView.as_view(),
        name="assessment-new",
    ),
    path(
        "cases/<str:key>/assessments/<int:number>/edit/",
        case_edit.AssessmentEditView.as_view(),
        name="assessment-edit",
    ),
    path("cases/<str:key>/lists/edit/", case_edit.CaseListsEditView.as_view(), name="lists-edit"),
    path("cases/<str:key>/figures/edit/", case_edit.FiguresEditView.as_view(), name="figures-edit"),
    path(
        "cases/<str:key>/attributions/edit/",
        case_edit.AttributionsEditView.as_view(),
        name="attributions-edit",
    ),
    path(
        "cases/<str:key>/relations/edit/",
        case_edit.RelationsEditView.as_view(),
        name="relations-edit",
    ),
    path(
        "cases/<str:key>/affected/edit/",
        case_edit.AffectedEditView.as_view(),
        name="affected-edit",
    ),
    path(
        "cases/<str:key>/controls/edit/", case_edit.ControlsEditView.as_view(), name="controls-edit"
    ),
    path(
        "cases/<str:key>/unknowns/edit/", case_edit.UnknownsEditView.as_view(), name="unknowns-edit"
    ),
    *history_routes(CASE),
    # sources
    path("sources/", records.source_list, name="source-list"),
    path("sources/new/", records.SourceCreateView.as_view(), name="source-new"),
    path("sources/<str:key>/", records.source_detail, name="source-detail"),
    path("sources/<str:key>/edit/", records.SourceEditView.as_view(), name="source-edit"),
    *history_routes(SOURCE),
    # scope rules
    path("rules/", records.rule_list, name="rule-list"),
    path("rules/new/", records.RuleCreateView.as_view(), name="rule-new"),
    path("rules/<str:key>/", records.rule_detail, name="rule-detail"),
    path("rules/<str:key>/edit/", records.RuleEditView.as_view(), name="rule-edit"),
    *history_routes(RULE),
    # components
    path("components/", components.component_list, name="component-list"),
    path("components/new/", components.ComponentCreateView.as_view(), name="component-new"),
    path("components/<str:key>/", components.component_detail, name="component-detail"),
    path(
        "components/<str:key>/edit/",
        components.ComponentEditView.as_view(),
        name="component-edit",
    ),
    *history_routes(COMPONENT),
    # assessment methods: keys hold a slash (diggingbeagle.assessment/1), so the more
    # specific routes come before the record page
    path("methods/", records.method_list, name="method-list"),
    path("methods/new/", records.MethodCreateView.as_view(), name="method-new"),
    *history_routes(METHOD),
    path("methods/<path:key>/edit/", records.MethodEditView.as_view(), name="method-edit"),
    path("methods/<path:key>/", records.method_detail, name="method-detail"),
]
