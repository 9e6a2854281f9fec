"""A record list as CSV: ``GET /api/v1/cases.csv`` (``sources.csv``, ``rules.csv``,
``methods.csv``) with the list's own filters gives every record they select as the first
table of its kind (docs/exports.md, "A filtered list as CSV"), streamed by key a batch at
a time. Errors (a bad filter) answer in JSON, whatever the client accepts.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.request import Request

from claimsdb.access import visible_records
from claimsdb.exports.lists import list_csv, released_list_batches, working_list_batches
from claimsdb.public import ReleasedRecords
from claimsdb.records.kinds import record_kinds
from claimsdb.records.stream import utf8_chunks

from . import filters, views
from .common import CanonicalJSONRenderer, ErrorsAsJSON
from .schema import records as schema


class RecordListCSV:
    """Mixed into a kind's list view: its filters, permissions and access, as CSV."""

    kind = ""
    http_method_names = ["get", "head", "options"]
    renderer_classes = [CanonicalJSONRenderer]
    content_negotiation_class = ErrorsAsJSON
    pagination_class = None
    filter_backends = [DjangoFilterBackend]  # rows come by key: no ?ordering=

    def get(self, request: Request) -> StreamingHttpResponse:
        records = visible_records(request.user, self.kind)
        if isinstance(records, ReleasedRecords):  # the released record, filtered as such
            filtered = filters.filter_released(self, request, records)
            batches = released_list_batches(filtered.entries)
            released = True
        else:
            rows = self.filter_queryset(records)  # type: ignore[attr-defined]
            batches = working_list_batches(self.kind, rows)
            released = False
        # a bad filter was refused above, before the response starts
        response = StreamingHttpResponse(
            utf8_chunks(list_csv(self.kind, batches, released=released)),
            content_type="text/csv; charset=utf-8",
        )
        plural = record_kinds.get(self.kind).plural
        response["Content-Disposition"] = f'attachment; filename="{plural}.csv"'
        return response


@schema.record_list_csv("case")
class CaseListCSVView(RecordListCSV, views.CaseListView):
    kind = "case"


@schema.record_list_csv("source")
class SourceListCSVView(RecordListCSV, views.SourceListView):
    kind = "source"


@schema.record_list_csv("rule")
class RuleListCSVView(RecordListCSV, views.RuleListView):
    kind = "rule"


@schema.record_list_csv("method")
class MethodListCSVView(RecordListCSV, views.MethodListView):
    kind = "method"
