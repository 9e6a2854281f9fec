"""The OpenAPI description of a case's coverage matrix and a release's OSV export."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import serializers

from claimsdb.api import openapi

from .imports import RateSerializer


class StatedEntrySerializer(serializers.Serializer):
    status = serializers.CharField(help_text="affected, fixed, not_affected, under_investigation")
    ranges = serializers.ListField(
        child=serializers.DictField(), help_text="OSV event ranges, as the record states them"
    )
    ranges_text = serializers.ListField(child=serializers.CharField())
    versions = serializers.ListField(child=serializers.CharField())
    claims = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField()


class TestedGroupSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["framework", "backend"])
    name = serializers.CharField(help_text="as the results files write it")
    version = serializers.CharField(allow_null=True, help_text="null: the runs state none")
    mitigations = serializers.ListField(child=serializers.CharField())
    runs = serializers.IntegerField()
    runs_reproduced = serializers.IntegerField()
    runs_not_reproduced = serializers.IntegerField()
    scenarios = serializers.IntegerField()
    scenarios_reproduced = serializers.IntegerField()
    scenarios_not_reproduced = serializers.IntegerField()
    scenarios_other = serializers.IntegerField(help_text="inconclusive or error")
    stale_read_rate = RateSerializer()
    standing = serializers.CharField(help_text="what the record states of this version")


class CoverageRowSerializer(serializers.Serializer):
    component = serializers.CharField(allow_null=True, help_text="null: no component matched")
    name = serializers.CharField()
    version_scheme = serializers.CharField(allow_null=True)
    purl = serializers.CharField(allow_null=True)
    stated = StatedEntrySerializer(many=True)
    runs = serializers.IntegerField()
    runs_reproduced = serializers.IntegerField()
    tested = TestedGroupSerializer(many=True)
    gaps = serializers.ListField(child=serializers.CharField())


class CaseCoverageSerializer(serializers.Serializer):
    case = serializers.CharField()
    runs = serializers.IntegerField(help_text="the runs the case lists")
    components = CoverageRowSerializer(many=True)
    gaps = serializers.ListField(child=serializers.CharField(), help_text="every row's gaps")


_SEED_EXAMPLE = {
    "case": "CP22-003",
    "runs": 0,
    "components": [
        {
            "component": "CMP-MOONCAKE",
            "name": "Mooncake",
            "version_scheme": "github",
            "purl": "pkg:github/kvcache-ai/mooncake",
            "stated": [
                {
                    "status": "affected",
                    "ranges": [],
                    "ranges_text": [],
                    "versions": [],
                    "claims": ["CLM-CP22-003-B"],
                    "note": "",
                }
            ],
            "runs": 0,
            "runs_reproduced": 0,
            "tested": [],
            "gaps": ["Mooncake: no runs"],
        }
    ],
    "gaps": ["Mooncake: no runs", "NIXL: no runs", "MORI: no runs"],
}

CASE_COVERAGE = extend_schema_view(
    get=extend_schema(
        operation_id="cases_coverage_retrieve",
        summary="Read a case's coverage matrix",
        description="For each component the case's `affected` list names, and each backend "
        "its runs ran: what the record states (status, ranges, versions, claims), what the "
        "runs tested (by version and mitigation set: runs and scenarios reproduced and not, "
        "the stale-read rate with its 95 % Wilson interval) and the gaps in words. Built "
        "from the case as the caller sees it (the released revision without a role) and "
        "aggregate queries; lab evidence, never an impact grade (docs/coverage.md).",
        tags=["cases"],
        auth=openapi.PUBLIC_READ,
        parameters=[openapi.key_parameter("case")],
        responses={
            200: CaseCoverageSerializer,
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS),
        },
        examples=[OpenApiExample("the seed", value=_SEED_EXAMPLE, response_only=True)],
    ),
)


RELEASE_OSV = extend_schema_view(
    get=extend_schema(
        operation_id="releases_osv_retrieve",
        summary="Read a release as OSV documents",
        description="Every case of release `n` whose affected list names a component with a "
        "Package URL, as one OSV 1.6 document (`CLAIMSDB-<case key>`), in one JSON array in "
        "case key order: the same bytes as `manage.py export_records --release n --format "
        "osv`. Streamed, and cacheable for ever (a release never changes). See "
        "docs/coverage.md for how a case maps to OSV.",
        tags=["releases"],
        auth=openapi.PUBLIC_READ,
        responses={
            (200, "application/json"): OpenApiResponse(description="a JSON array of OSV documents"),
            **openapi.error_responses(404),
        },
    ),
)


class ComponentRunsRowSerializer(serializers.Serializer):
    case = serializers.CharField()
    role = serializers.ChoiceField(choices=["framework", "backend"])
    version = serializers.CharField(allow_null=True)
    runs = serializers.IntegerField()
    runs_reproduced = serializers.IntegerField()
    scenarios = serializers.IntegerField()
    scenarios_reproduced = serializers.IntegerField()
    stale_read_rate = RateSerializer()


class ComponentRunsSerializer(serializers.Serializer):
    component = serializers.CharField()
    runs = serializers.IntegerField()
    versions_tested = serializers.ListField(child=serializers.CharField())
    by_case_and_version = ComponentRunsRowSerializer(many=True)


COMPONENT_RUNS = extend_schema_view(
    get=extend_schema(
        operation_id="components_runs_retrieve",
        summary="Read the runs on a component",
        description="What the imported reproduction runs tested of the component, by case "
        "and version: runs and scenarios reproduced, the stale-read rate with its 95 % "
        "Wilson interval. Without a role, only the runs the released cases list. Lab "
        "evidence (docs/coverage.md).",
        tags=["components"],
        auth=openapi.PUBLIC_READ,
        parameters=[openapi.key_parameter("component")],
        responses={
            200: ComponentRunsSerializer,
            **openapi.error_responses(*openapi.PUBLIC_READ_ERRORS),
        },
    ),
)
