"""The OpenAPI schema and its docs: valid, complete, public, served without a CDN — and the
live API checked against it with schemathesis."""

from __future__ import annotations

import json
import re

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from claimsdb.codes import CODES
from claimsdb.records import record_document
from claimsdb.services import case_create, case_update
from claimsdb.services.releases import release_publish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

SCHEMA_URL = "/api/v1/schema/?format=json"
# Endpoints of the records: anyone reads (the released record without a role), writes need a
# role.
RECORD_PATHS = tuple(
    f"/api/v1/{name}/" for name in ("cases", "claims", "sources", "rules", "methods", "revisions")
)


def get_schema() -> dict:
    response = APIClient().get(SCHEMA_URL)
    assert response.status_code == 200
    return json.loads(response.content)


def test_schema_is_public_and_valid_openapi_3():
    schema = get_schema()
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    yaml = APIClient().get("/api/v1/schema/")
    assert yaml.status_code == 200
    assert b"openapi: 3" in yaml.content


def test_schema_lists_every_endpoint():
    paths = set(get_schema()["paths"])
    assert {
        "/api/v1/auth/token/",
        "/api/v1/cases/",
        "/api/v1/cases/{key}/",
        "/api/v1/cases/{key}/claims/",
        "/api/v1/cases/{key}/revisions/",
        "/api/v1/cases/{key}/diff/",
        "/api/v1/cases/{key}/revert/",
        "/api/v1/claims/{claim_id}/",
        "/api/v1/sources/",
        "/api/v1/sources/{key}/",
        "/api/v1/rules/",
        "/api/v1/rules/{key}/",
        "/api/v1/methods/",
        "/api/v1/methods/{key}/",
        "/api/v1/revisions/",
        "/api/v1/revisions/{number}/",
    } <= paths


def test_every_operation_is_named_tagged_and_documents_its_errors():
    schema = get_schema()
    operation_ids = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            operation_ids.append(operation["operationId"])
            assert operation.get("tags"), (method, path)
            assert operation.get("summary"), (method, path)
            errors = [code for code in operation["responses"] if code >= "400"]
            assert errors, (method, path)
            for code in errors:
                content = operation["responses"][code]["content"]["application/json"]
                # the Error shape, or a component that extends it (an import's refusal)
                name = content["schema"]["$ref"].rsplit("/", 1)[-1]
                properties = schema["components"]["schemas"][name]["properties"]
                assert {"status", "title", "errors"} <= set(properties), (method, path, code)
            if path.startswith(RECORD_PATHS):
                # anyone reads (a 401 only for bad credentials); writes need a role
                assert "401" in operation["responses"], (method, path)
                if method == "get":
                    assert {} in operation["security"], (method, path)
                else:
                    assert "403" in operation["responses"], (method, path)
                    assert {} not in operation["security"], (method, path)
    assert len(operation_ids) == len(set(operation_ids))


def test_error_shape_is_a_component_listing_the_codes():
    components = get_schema()["components"]["schemas"]
    assert components["Error"]["required"] == ["status", "title", "errors"]
    item = components["ErrorItem"]
    assert item["required"] == ["code", "message", "path"]
    for code in CODES:
        assert f"`{code}`" in item["description"]


def test_document_components_follow_the_record_format():
    components = get_schema()["components"]["schemas"]
    case = components["CaseDocument"]
    assert case["additionalProperties"] is False
    # every field is required but ``affected``, written only when a case names a component
    assert set(case["required"]) == set(case["properties"]) - {"affected"}
    assert case["properties"]["format"]["enum"] == ["claimsdb.case/1"]
    component = components["ComponentDocument"]
    assert component["properties"]["key"]["pattern"].startswith("^CMP-")
    assert "pypi" in component["properties"]["version_scheme"]["enum"]
    assert case["properties"]["claims"]["items"] == {"$ref": "#/components/schemas/Claim"}
    assert components["Claim"]["properties"]["id"]["pattern"].startswith("^CLM-")
    assert components["MethodDocument"]["properties"]["key"]["pattern"].endswith("/[1-9][0-9]*$")
    # status of sources and methods may be left out (it defaults to active)
    assert "status" not in components["SourceDocument"]["required"]
    assert components["RevisionDetail"]["properties"]["snapshot"]["discriminator"][
        "propertyName"
    ] == ("format")


def test_examples_show_the_seed_case_and_a_refusal():
    operation = get_schema()["paths"]["/api/v1/cases/{key}/"]
    example = operation["get"]["responses"]["200"]["content"]["application/json"]["examples"]
    (document,) = [e["value"] for e in example.values()]
    assert document["key"] == "CP22-003"
    assert document["format"] == "claimsdb.case/1"
    put = operation["put"]
    request_examples = put["requestBody"]["content"]["application/json"]["examples"]
    assert any(e["value"]["key"] == "CP22-003" for e in request_examples.values())
    refusal = put["responses"]["400"]["content"]["application/json"]["examples"]
    (error,) = [e["value"] for e in refusal.values()]
    assert error["errors"][0]["code"] == "scope.non_attribution"
    assert error["errors"][0]["path"] == "attributions[0].figure"
    headers = operation["get"]["responses"]["200"]["headers"]
    assert "ETag" in headers
    parameters = {(p["in"], p["name"]): p for p in put["parameters"]}
    assert parameters[("header", "If-Match")]["required"] is True
    assert parameters[("query", "summary")]["required"] is True


def test_security_schemes_token_and_session():
    schema = get_schema()
    schemes = schema["components"]["securitySchemes"]
    assert schemes["tokenAuth"]["type"] == "apiKey"
    assert schemes["tokenAuth"]["in"] == "header"
    assert "cookieAuth" in schemes
    token = schema["paths"]["/api/v1/auth/token/"]["post"]
    assert token.get("security", [{}]) == [{}] or {} in token["security"]


CDN = re.compile(rb"https?://(?!testserver)[^\s\"'<>]+", re.IGNORECASE)


@pytest.mark.parametrize("url", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_docs_are_public_and_load_nothing_from_outside(url):
    response = APIClient().get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert CDN.findall(response.content) == []
    assert b"/static/drf_spectacular_sidecar/" in response.content
    assert "script-src 'self';" in response["Content-Security-Policy"]
    assert b"<script>" not in response.content  # no inline script


def test_swagger_init_script_is_served_by_the_app():
    page = APIClient().get("/api/v1/docs/")
    (script_url,) = re.findall(rb'<script src="([^"]*script[^"]*)"', page.content)
    script = APIClient().get(script_url.decode().replace("&amp;", "&"))
    assert script.status_code == 200
    assert b"/api/v1/schema/" in script.content
    assert CDN.findall(script.content) == []
    assert b'"validatorUrl": null' in script.content  # no call-out to validator.swagger.io


# --- schemathesis -----------------------------------------------------------------------

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 15
CONFIG = {
    "generation": {"mode": "positive", "deterministic": True},
    "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
}


@pytest.fixture
def reviewer_token(seeded, reviewer) -> str:
    return Token.objects.create(user=reviewer).key


@pytest.fixture
def live_app(reviewer_token):
    """The project's WSGI application, run inside the test's transaction.

    Django closes "old" connections when a request starts and ends; inside a test that would
    close the connection holding the test's transaction, so those handlers are set aside.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(live_app):
    return schemathesis.openapi.from_wsgi(
        SCHEMA_URL, live_app, config=SchemathesisConfig.from_dict(CONFIG)
    )


OWN_PATHS = (*RECORD_PATHS, "/api/v1/auth/")
PARTS = {
    # records, claims, revisions and tokens
    "records": lambda operation: operation.path.startswith(OWN_PATHS),
    # everything else the schema describes: imports, releases, whatever comes next
    "others": lambda operation: not operation.path.startswith(OWN_PATHS),
    # the released record, read without credentials
    "public": lambda operation: (
        operation.path.startswith(RECORD_PATHS) and operation.method.upper() == "GET"
    ),
}


def release_and_edit(reviewer) -> None:
    """Release 1 of the seed, then a draft edit of CP22-003 and a new, unreleased case."""
    release_publish(user=reviewer, notes="Release 1")
    document = record_document("case", "CP22-003")
    document["title"] = "A draft title"
    case_update(user=reviewer, key="CP22-003", document=document, summary="Draft")
    document.update(key="CP22-077", claims=[], assessments=[], relations=[], attributions=[])
    case_create(user=reviewer, document=document, summary="Unreleased case")


@pytest.mark.slow
@pytest.mark.parametrize("part", list(PARTS))
def test_live_api_conforms_to_its_schema(api_schema, reviewer_token, reviewer, part):
    """Generated requests (positive and negative, and the schema's own examples) as a
    reviewer — and, for the reads of the released record, without credentials — a few per
    operation: never a 5xx, and every response — status code, content type, headers and
    body — is one the schema describes."""
    headers = {"Authorization": f"Token {reviewer_token}"}
    if part == "public":
        release_and_edit(reviewer)
        headers = {}
    failures = []
    operations = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if not PARTS[part](operation):
            continue
        operations += 1
        strategy = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE),
            operation.as_strategy(GenerationMode.NEGATIVE),
            *operation.get_strategies_from_examples(),
        )

        @given(case=strategy)
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            sent = dict(headers)
            if case.headers and "If-Match" in case.headers:
                # a random tag is refused with 412 before the body is looked at: let the
                # generated documents reach the services' rules instead
                sent["If-Match"] = "*"
            case.call_and_validate(headers=sent, checks=CHECKS)

        try:
            check()
        except (Exception, FailureGroup) as exc:  # check every operation, report all failures
            failures.append(f"{operation.label}: {exc}")
    assert operations >= {"records": 30, "public": 12}.get(part, 1)
    assert not failures, "\n\n".join(failures)
