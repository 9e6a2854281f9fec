"""The OpenAPI description of imports and imported runs (``api/imports.py``): the report and
run serializers (schema only: the views build their bodies from the importer's ``Report``
and the run reads), the examples, and each operation's description."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers

from claimsdb.importers import repro_results

from .. import openapi

TAG = "imports"
RUN_TAG = "runs"


# --- response bodies (the views build them from the importer's reads) ---------------------


class ProblemSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="stable: `repro.*`, `import.*`, or a rule code")
    message = serializers.CharField()
    path = serializers.CharField(
        help_text="JSON path into the file (`scenarios[0].late_writes_landed`); empty for "
        "the file as a whole"
    )


class RunComponentMatchSerializer(serializers.Serializer):
    """A framework or backend a run names, with its build and the component it matched."""

    role = serializers.ChoiceField(choices=["framework", "backend"])
    name = serializers.CharField(help_text="as the file writes it (`mooncake`, `other:ucx`)")
    version = serializers.CharField(help_text='the version the file states ("" if none)')
    commit = serializers.CharField()
    purl = serializers.CharField()
    path = serializers.CharField(help_text="where the file names it first")
    component = serializers.CharField(help_text='the key matched ("" when unmatched)')
    matched_by = serializers.CharField(help_text='"purl", "name", or "" when unmatched')
    reason = serializers.CharField(help_text="why nothing matched")
    scenarios = serializers.ListField(child=serializers.CharField())


class ImportReportSerializer(serializers.Serializer):
    """What one import did (schema of the report; the views build it from ``Report``)."""

    id = serializers.IntegerField(allow_null=True)
    url = serializers.URLField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    user = serializers.CharField()
    filename = serializers.CharField()
    outcome = serializers.ChoiceField(choices=repro_results.OUTCOMES)
    dry_run = serializers.BooleanField()
    replace = serializers.BooleanField()
    sha256 = serializers.CharField(
        help_text="the file's identity: SHA-256 of its canonical JSON (sorted keys, no "
        "whitespace; docs/importing.md), hex — the same for the file re-serialised"
    )
    file_sha256 = serializers.CharField(help_text="SHA-256 of the bytes received, hex")
    size = serializers.IntegerField(help_text="bytes")
    run_id = serializers.CharField()
    case = serializers.CharField()
    claims = serializers.ListField(child=serializers.CharField())
    scenarios = serializers.IntegerField()
    trial_rows = serializers.IntegerField()
    problems = ProblemSerializer(many=True)
    components = RunComponentMatchSerializer(
        many=True, help_text="the components the run bears on (docs/coverage.md)"
    )
    unmatched = RunComponentMatchSerializer(
        many=True, help_text="names no component matched: listed, never guessed"
    )
    revision = serializers.IntegerField(
        allow_null=True, help_text="the case's `import` revision (null when nothing was written)"
    )
    other_revisions = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="revisions of another case that lost the run to a replacement",
    )
    replaced_sha256 = serializers.CharField(help_text="the replaced file's SHA-256, if any")
    message = serializers.CharField()
    run_url = serializers.URLField(allow_null=True)
    progress = serializers.DictField(
        required=False,
        help_text="a background import while `queued`/`running`: `phase` (`checking`, "
        "`storing`), `bytes_done` and `bytes_total` of the checking pass",
    )


class ImportRefusalSerializer(serializers.Serializer):
    """The API's error shape, plus the refused import's report."""

    status = serializers.IntegerField()
    title = serializers.CharField()
    errors = ProblemSerializer(many=True)
    report = ImportReportSerializer(
        required=False, help_text="absent when the request itself was refused (no file…)"
    )


class RateSerializer(serializers.Serializer):
    events = serializers.IntegerField(help_text="checksum_mismatches")
    trials = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="events / trials")
    ci95_lower = serializers.FloatField(help_text="95 % Wilson score interval, lower bound")
    ci95_upper = serializers.FloatField(help_text="95 % Wilson score interval, upper bound")


class ScenarioStatsSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    id = serializers.CharField()
    backend = serializers.CharField()
    backend_version = serializers.CharField(
        allow_null=True, help_text="the backend's version as the file states it (repro-results/1.1)"
    )
    backend_commit = serializers.CharField(allow_null=True)
    backend_purl = serializers.CharField(allow_null=True, help_text="a Package URL")
    mitigations = serializers.ListField(child=serializers.CharField())
    mitigated = serializers.BooleanField()
    free_list_order = serializers.CharField()
    trials = serializers.IntegerField()
    checksum_mismatches = serializers.IntegerField()
    wrong_outputs = serializers.IntegerField()
    outcome = serializers.CharField()
    stale_read_rate = RateSerializer(allow_null=True)
    stored_rows = serializers.IntegerField(help_text="trial rows stored (0 or `trials`)")


class HarnessSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()


class RunSerializer(serializers.Serializer):
    run_id = serializers.CharField()
    case = serializers.CharField()
    sha256 = serializers.CharField()
    started_at = serializers.CharField(allow_null=True)
    finished_at = serializers.CharField(allow_null=True)
    harness = HarnessSerializer()
    claims = serializers.ListField(child=serializers.CharField())
    scenarios = serializers.IntegerField(help_text="number of scenarios")
    stored_trial_rows = serializers.IntegerField()
    url = serializers.URLField()
    trials_csv = serializers.URLField()


class RunDetailSerializer(RunSerializer):
    summary = serializers.JSONField(
        help_text="the run as the case document lists it: the file but its trial rows, plus "
        "`sha256`"
    )
    scenario_stats = ScenarioStatsSerializer(many=True)


# --- what a request sends -----------------------------------------------------------------


UPLOAD = inline_serializer(
    name="ImportUpload",
    fields={
        "file": serializers.FileField(help_text="the repro-results/1 file"),
        "dry_run": serializers.BooleanField(required=False),
        "replace": serializers.BooleanField(required=False),
        # blank means the default summary ("Imported <run_id>"), as the query parameter
        "summary": serializers.CharField(required=False, allow_blank=True),
    },
)

IMPORT_PARAMETERS = [
    OpenApiParameter(
        "dry_run",
        OpenApiTypes.BOOL,
        OpenApiParameter.QUERY,
        description="check everything and write nothing but the report",
    ),
    OpenApiParameter(
        "replace",
        OpenApiTypes.BOOL,
        OpenApiParameter.QUERY,
        description="replace a run imported before from another file with the same run_id "
        "(otherwise 409 `import.run_conflict`)",
    ),
    OpenApiParameter(
        "summary",
        OpenApiTypes.STR,
        OpenApiParameter.QUERY,
        description='the import revision\'s summary (default "Imported <run_id>")',
    ),
    OpenApiParameter(
        "filename",
        OpenApiTypes.STR,
        OpenApiParameter.QUERY,
        description="the name the report gives a raw-body upload (default `request body`)",
    ),
    OpenApiParameter(
        "background",
        OpenApiTypes.BOOL,
        OpenApiParameter.QUERY,
        description="queue the import as a background job (202) even when the file is small; "
        "files larger than the server's threshold always are",
    ),
]

RUN_ID_PARAMETER = OpenApiParameter(
    "run_id",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="the run's run_id",
    examples=[
        OpenApiExample("pd-abort-h200x2-20261021-0007", value="pd-abort-h200x2-20261021-0007")
    ],
)

# --- examples -----------------------------------------------------------------------------


# Request examples only: every response example is a recorded response (openapi.recorded).
_FILE_EXAMPLE = {
    "format": "repro-results/1",
    "run_id": "pd-abort-h200x2-20261021-0007",
    "case": "CP22-003",
    "claims": ["CLM-CP22-003-B"],
    "setting": "lab",
    "harness": {"name": "pd-abort-race", "version": "0.3.2", "commit": "9f1c2ab0d4e5"},
    "started_at": "2026-10-21T09:14:03Z",
    "finished_at": "2026-10-21T09:52:40Z",
    "environment": {
        "gpus": [
            {"model": "NVIDIA H200", "memory_gib": 141, "role": "prefill"},
            {"model": "NVIDIA H200", "memory_gib": 141, "role": "decode"},
        ],
        "framework": {"name": "sglang", "version": "0.5.4"},
    },
    "scenarios": [
        {
            "id": "mooncake-none-lifo",
            "backend": "mooncake",
            "mitigations": [],
            "free_list_order": "lifo",
            "write_delay_us": 500,
            "seed": 7,
            "trials": 2,
            "aborts_injected": 1,
            "aborts_mid_transfer": 1,
            "reuse_while_in_flight": 1,
            "late_writes_landed": 1,
            "checksum_mismatches": 1,
            "wrong_outputs": 0,
            "timeout_forced_releases": 0,
            "stale_generation_dropped": 0,
            "held_slots_peak": 0,
            "rejected_backpressure": 0,
            "outcome": "reproduced",
        }
    ],
    "trials": [
        {
            "scenario": "mooncake-none-lifo",
            "n": 1,
            "aborted": True,
            "mid_transfer": True,
            "reused_in_flight": True,
            "late_write": True,
            "checksum_mismatch": True,
            "wrong_output": False,
            "latency_us": 812.5,
        },
        {
            "scenario": "mooncake-none-lifo",
            "n": 2,
            "aborted": False,
            "mid_transfer": False,
            "reused_in_flight": False,
            "late_write": False,
            "checksum_mismatch": False,
            "wrong_output": False,
            "latency_us": 640.0,
        },
    ],
}


def _paginated(name: str, item: type[serializers.Serializer]) -> Any:
    return inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": item(many=True),
        },
    )


LIST_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY),
    OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
    openapi.IF_NONE_MATCH,
    *openapi.LIST_HEADERS,
]
RESULTS_FILE = openapi.component(
    "ResultsFile",
    {
        "type": "object",
        "description": "A `repro-results/1` file (docs/repro-results-1.md), checked whole by "
        "the importer.",
        "additionalProperties": True,
    },
)


# --- operations ---------------------------------------------------------------------------

IMPORT_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="imports_list",
        summary="List imports",
        description="Past import attempts, newest first, each with its report (dry runs and "
        "refusals included). Filters: `run_id`, `case`, `outcome`.",
        tags=[TAG],
        parameters=[
            OpenApiParameter("run_id", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter("case", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter(
                "outcome",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                enum=list(repro_results.OUTCOMES),
            ),
            *LIST_PARAMETERS,
        ],
        responses={
            200: _paginated("ImportReportPage", ImportReportSerializer),
            304: openapi.LIST_NOT_MODIFIED,
            **openapi.error_responses(400, 401, 403, 404, examples=openapi.LIST_ERRORS),
        },
    ),
    post=extend_schema(
        operation_id="imports_create",
        summary="Import a results file",
        description=(
            "Import one `repro-results/1` file (analysts and reviewers): send it as the raw "
            "body (`Content-Type: application/json`) or as the multipart field `file`. The "
            "file is checked whole before anything is written; a refused file writes "
            "nothing, and its report lists every problem with its JSON path.\n\n"
            "* **201** `imported` or `replaced`: one `import` revision of the case;\n"
            "* **200** `unchanged` (this very file was imported before: nothing is written) "
            "or a dry run (`would_import`, `would_replace`);\n"
            "* **400** refused: the error shape plus `report`;\n"
            "* **409** `import.run_conflict`: the run_id was imported from other content; "
            "send `replace=true` to replace it;\n"
            "* **202** `queued`: the file is larger than the server's threshold, or "
            "`background=true` was sent. It is stored and imported by a worker; poll the "
            "report at `Location` (`url`): `queued`, `running` (with `progress`), then its "
            "outcome.\n\n"
            "Every attempt, dry runs and refusals included, is kept as an import report."
        ),
        tags=[TAG],
        parameters=[
            *IMPORT_PARAMETERS,
            openapi.location_header(
                201, 202, what="the imported run (201), or the import report to poll (202)"
            ),
        ],
        request={"application/json": RESULTS_FILE, "multipart/form-data": UPLOAD},
        examples=[
            OpenApiExample("A results file (two trials)", value=_FILE_EXAMPLE, request_only=True)
        ],
        responses={
            201: OpenApiResponse(
                ImportReportSerializer,
                description="imported or replaced",
                examples=openapi.recorded_example("import.201"),
            ),
            200: OpenApiResponse(
                ImportReportSerializer,
                description="unchanged (already imported), or a dry run",
                examples=openapi.recorded_example("import.200"),
            ),
            400: OpenApiResponse(
                ImportRefusalSerializer,
                description="refused: every problem with its path; nothing was written",
                examples=openapi.recorded_example("import.400"),
            ),
            202: OpenApiResponse(
                ImportReportSerializer,
                description="queued as a background job: poll `url`",
                examples=openapi.recorded_example("import.202"),
            ),
            409: OpenApiResponse(
                ImportRefusalSerializer,
                description="the run_id was imported from another file (`import.run_conflict`)",
                examples=openapi.recorded_example("import.409"),
            ),
            **openapi.error_responses(401, 403, 415),
        },
    ),
)


IMPORT_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="imports_retrieve",
        summary="Read an import report",
        tags=[TAG],
        # the URL's ``pk`` is published as ``id`` (drf-spectacular's SCHEMA_COERCE_PATH_PK):
        # declaring it under that name describes the one path parameter, never a second
        parameters=[
            OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="its id")
        ],
        responses={
            200: OpenApiResponse(
                ImportReportSerializer, examples=openapi.recorded_example("import.201", 200)
            ),
            **openapi.error_responses(401, 403, 404, family="import"),
        },
    ),
)


RUN_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="runs_list",
        summary="List imported runs",
        description="Imported reproduction runs, newest first. Filter: `case`.",
        tags=[RUN_TAG],
        parameters=[
            OpenApiParameter("case", OpenApiTypes.STR, OpenApiParameter.QUERY),
            *LIST_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(
                _paginated("RunPage", RunSerializer),
                examples=openapi.recorded_example("runs.200"),
            ),
            304: openapi.LIST_NOT_MODIFIED,
            **openapi.error_responses(400, 401, 403, 404, examples=openapi.LIST_ERRORS),
        },
    ),
)


RUN_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="runs_retrieve",
        summary="Read an imported run",
        parameters=[RUN_ID_PARAMETER],
        description="The run's summary (as the case document lists it) and each scenario's "
        "stale-read rate (`checksum_mismatches / trials`) with its 95 % Wilson score interval. "
        "These are lab observations of a reproduction: never production figures, never an "
        "impact basis.",
        tags=[RUN_TAG],
        responses={
            200: OpenApiResponse(RunDetailSerializer, examples=openapi.recorded_example("run.200")),
            **openapi.error_responses(401, 403, 404, family="run"),
        },
    ),
)


TRIAL_ROW = openapi.component(
    "TrialRow",
    {
        "type": "object",
        "description": "One trial row of a run, as the JSON form of trials.csv gives it",
        "properties": {
            "scenario": {"type": "string"},
            "n": {"type": "integer"},
            **{
                flag: {"type": "boolean"}
                for flag in (
                    "aborted",
                    "mid_transfer",
                    "reused_in_flight",
                    "late_write",
                    "checksum_mismatch",
                    "wrong_output",
                )
            },
            "latency_us": {"type": "number", "nullable": True},
            "extra": {
                "type": "object",
                "additionalProperties": True,
                "description": "the row's `x-` keys",
            },
        },
        "required": [
            "scenario",
            "n",
            "aborted",
            "mid_transfer",
            "reused_in_flight",
            "late_write",
            "checksum_mismatch",
            "wrong_output",
            "latency_us",
            "extra",
        ],
    },
)

RUN_TRIALS = extend_schema_view(
    get=extend_schema(
        operation_id="runs_trials_csv",
        summary="Download a run's trial rows (CSV)",
        parameters=[
            RUN_ID_PARAMETER,
            OpenApiParameter(
                "format",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                enum=["csv", "json"],
                description="`json` for the rows as a JSON array (as `Accept: "
                "application/json`); CSV by default",
            ),
        ],
        description="Every stored trial row of the run, scenario by scenario, streamed: "
        "`scenario,n,aborted,mid_transfer,reused_in_flight,late_write,checksum_mismatch,"
        "wrong_output,latency_us,extra` (flags `true`/`false`; `extra` the row's `x-` keys as "
        "JSON). A run imported without trial rows gives the header line only. With "
        "`?format=json` (or `Accept: application/json` without `text/csv`) the same rows as "
        "a JSON array of `TrialRow`. Errors are always JSON in the `Error` shape.",
        tags=[RUN_TAG],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                examples=[
                    OpenApiExample(
                        "rows",
                        value="scenario,n,aborted,mid_transfer,reused_in_flight,late_write,"
                        "checksum_mismatch,wrong_output,latency_us,extra\n"
                        "mooncake-none-lifo,1,true,true,true,true,true,false,812.5,\n",
                        response_only=True,
                    )
                ],
            ),
            (200, "application/json"): {"type": "array", "items": TRIAL_ROW},
            **openapi.error_responses(401, 403, 404, family="run"),
        },
    ),
)
