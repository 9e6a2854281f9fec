"""REST API under /api/v1/ (docs/api.md).

Keys are matched with the ``key`` converter, which takes any non-empty text: method keys
contain a slash (``methods/diggingbeagle.assessment/1/``, or ``…assessment%2F1/``), and an
unknown key of any shape still reaches a view, which answers 404 in the API's error shape
rather than the site's HTML page.
"""

from django.urls import path, register_converter

from . import (
    approval_views,
    auth_views,
    coverage,
    docs_views,
    list_csv,
    review_views,
    revision_views,
    views,
)
from .approval_views import RECORD_APPROVAL_VIEWS


class AnyKeyConverter:
    """Any non-empty text, slashes and newlines included."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyKeyConverter, "key")

app_name = "api"

urlpatterns = [
    path("auth/token/", auth_views.TokenView.as_view(), name="token"),
    path("schema/", docs_views.SchemaView.as_view(), name="schema"),
    path("docs/", docs_views.SwaggerView.as_view(), name="docs"),
    path("redoc/", docs_views.redoc, name="redoc"),
    # cases, with their claims, history, diffs and reverts
    # before the records' own URLs: a method's key holds slashes
    *[
        path(
            f"{plural}/<key:key>/approvals/",
            RECORD_APPROVAL_VIEWS[kind].as_view(),
            name=f"{kind}-approvals",
        )
        for kind, plural in (
            ("case", "cases"),
            ("source", "sources"),
            ("rule", "rules"),
            ("method", "methods"),
        )
    ],
    path("approvals/", approval_views.ApprovalListView.as_view(), name="approval-list"),
    path("cases/", views.CaseListView.as_view(), name="case-list"),
    # each list, with its filters, as CSV (docs/exports.md)
    path("cases.csv", list_csv.CaseListCSVView.as_view(), name="case-list-csv"),
    path("sources.csv", list_csv.SourceListCSVView.as_view(), name="source-list-csv"),
    path("rules.csv", list_csv.RuleListCSVView.as_view(), name="rule-list-csv"),
    path("methods.csv", list_csv.MethodListCSVView.as_view(), name="method-list-csv"),
    path("cases/<key:key>/claims/", views.CaseClaimsView.as_view(), name="case-claims"),
    path(
        "cases/<key:key>/revisions/",
        revision_views.CaseRevisionsView.as_view(),
        name="case-revisions",
    ),
    path("cases/<key:key>/diff/", revision_views.CaseDiffView.as_view(), name="case-diff"),
    path("cases/<key:key>/revert/", revision_views.CaseRevertView.as_view(), name="case-revert"),
    path("cases/<key:key>/coverage/", coverage.CaseCoverageView.as_view(), name="case-coverage"),
    path(
        "components/<key:key>/runs/",
        coverage.ComponentRunsView.as_view(),
        name="component-runs",
    ),
    path("cases/<key:key>/", views.CaseDetailView.as_view(), name="case-detail"),
    path("claims/<key:claim_id>/", views.ClaimDetailView.as_view(), name="claim-detail"),
    path("sources/", views.SourceListView.as_view(), name="source-list"),
    path("sources/<key:key>/", views.SourceDetailView.as_view(), name="source-detail"),
    path("rules/", views.RuleListView.as_view(), name="rule-list"),
    path("rules/<key:key>/", views.RuleDetailView.as_view(), name="rule-detail"),
    path("methods/", views.MethodListView.as_view(), name="method-list"),
    path("methods/<key:key>/", views.MethodDetailView.as_view(), name="method-detail"),
    path("review-queue/", review_views.ReviewQueueView.as_view(), name="review-queue"),
    path(
        "review-queue/<str:kind>/<key:key>/comments/",
        review_views.RecordCommentsView.as_view(),
        name="review-comments",
    ),
    path("components/", views.ComponentListView.as_view(), name="component-list"),
    path("components/<key:key>/", views.ComponentDetailView.as_view(), name="component-detail"),
    path("revisions/", revision_views.RevisionListView.as_view(), name="revision-list"),
    path(
        "revisions/<key:number>/",
        revision_views.RevisionDetailView.as_view(),
        name="revision-detail",
    ),
]
