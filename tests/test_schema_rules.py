"""The OpenAPI schema states what the views check about requests (claimsdb/api/schema_rules.py),
and the views refuse what the schema calls invalid instead of ignoring it. The live check of
both, all four schemathesis phases, is .ci/schemathesis."""

from __future__ import annotations

import json
import re

import pytest
from rest_framework.test import APIClient

from claimsdb.api.schema_rules import ENTITY_TAGS, NOT_BLANK

from .support import api_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema() -> dict:
    return json.loads(APIClient().get("/api/v1/schema/?format=json").content)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_write_parameters_say_what_is_refused(schema):
    put = schema["paths"]["/api/v1/cases/{key}/"]["put"]
    parameters = {p["name"]: p["schema"] for p in put["parameters"]}
    assert parameters["summary"]["minLength"] == 1
    assert re.search(NOT_BLANK, "a summary") and not re.search(NOT_BLANK, " \t ")
    assert parameters["If-Match"]["pattern"] == ENTITY_TAGS
    assert all(re.search(ENTITY_TAGS, v) for v in ['"14"', "*", 'W/"1", "2"'])
    assert not any(re.search(ENTITY_TAGS, v) for v in ["", "14", "0"])


def test_every_body_is_required_and_query_parameters_are_bounded(schema):
    for path, method, operation in operations(schema):
        if "requestBody" in operation:
            assert operation["requestBody"]["required"] is True, (method, path)
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and parameter["name"] in {"page", "page_size"}:
                assert parameter["schema"]["minimum"] == 1, (method, path)
        if any(p["in"] == "query" for p in operation.get("parameters", [])):
            assert "400" in operation["responses"], (method, path)


def test_a_patch_cannot_remove_a_required_field(schema):
    patch = schema["components"]["schemas"]["CasePatch"]["properties"]
    assert "nullable" not in patch["title"] and "nullable" not in patch["claims"]
    source = schema["components"]["schemas"]["SourcePatch"]["properties"]
    assert source["status"]["nullable"] is True  # status may be left out: it defaults


def test_the_token_endpoint_documents_its_codes(schema):
    token = schema["components"]["schemas"]["TokenRequest"]["properties"]
    assert token["username"]["minLength"] == 1 and token["password"]["minLength"] == 1
    assert "`signin.failed`" in schema["components"]["schemas"]["ErrorItem"]["description"]
    assert "`signin.throttled`" in schema["components"]["schemas"]["ErrorItem"]["description"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/cases/?page_size=0",
        "/api/v1/cases/?page_size=null&page_size=null",
        "/api/v1/revisions/?material=null",
        "/api/v1/imports/?outcome=AAA",
        "/api/v1/runs/?page_size=-1",
    ],
)
def test_malformed_query_parameters_are_refused_not_ignored(seeded, reviewer, url):
    response = api_client(reviewer).get(url)
    assert response.status_code == 400, response.content
    assert json.loads(response.content)["errors"][0]["code"] == "request.invalid"


def test_integer_filters_are_bounded_and_an_empty_choice_is_no_filter(schema):
    revisions = schema["paths"]["/api/v1/revisions/"]["get"]
    parameters = {p["name"]: p["schema"] for p in revisions["parameters"]}
    assert parameters["since"]["minimum"] == 0
    assert parameters["since"]["maximum"] == 2**63 - 1
    sources = schema["paths"]["/api/v1/sources/"]["get"]
    reliability = {p["name"]: p["schema"] for p in sources["parameters"]}["reliability"]
    assert "" in reliability["enum"]
