"""A case's coverage matrix over REST (docs/coverage.md): what the record states of each
component's versions, what the runs tested, and the gaps."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.access import visible_document
from claimsdb.models import Component
from claimsdb.records import RecordNotFound
from claimsdb.selectors.coverage import case_coverage, component_runs

from .common import RefuseNul
from .permissions import PublicReads
from .schema import coverage as schema


@schema.CASE_COVERAGE
class CaseCoverageView(RefuseNul, APIView):
    """The coverage matrix of the case as the caller sees it: the released revision for
    the public, the working state for a role."""

    permission_classes = [PublicReads]

    def get(self, request: Request, key: str) -> Response:
        visible = visible_document(request.user, "case", key)
        if visible is None:
            raise RecordNotFound("case", key)
        return Response(case_coverage(visible.document, released=visible.released).as_dict())


@schema.COMPONENT_RUNS
class ComponentRunsView(RefuseNul, APIView):
    """The runs on a component, by case and version: every imported run for a role, the
    runs the released cases list for the public."""

    permission_classes = [PublicReads]

    def get(self, request: Request, key: str) -> Response:
        visible = visible_document(request.user, "component", key)
        component = Component.objects.filter(key=key).first() if visible else None
        if visible is None or component is None:
            raise RecordNotFound("component", key)
        return Response(component_runs(component, released=visible.released).as_dict())
