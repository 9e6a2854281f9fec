"""The schema's examples are real responses: this test makes each request over the seed,
records what the API answered, and fails while claimsdb/api/schema/examples.json (which
the schema reads, ``openapi.recorded``) holds anything else. After changing what the API
answers, record them again and commit the file:

    CLAIMSDB_RECORD_EXAMPLES=1 python -m pytest tests/test_api_examples.py -n 0

What changes from run to run (times, hashes chained over them, tokens, import ids) is
replaced by fixed values before comparing, in both.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from claimsdb.api.openapi import EXAMPLES_PATH, RECORDED_NAMES
from claimsdb.records import record_document

from .support import FORBIDDEN_FIGURE, ROOT, source_document, token_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "spool")]

API = "/api/v1"
RESULTS = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
REPLACEMENT = ROOT / "fixtures" / "repro" / "db" / "replacement.json"
REFUSED = ROOT / "fixtures" / "repro" / "invalid" / "counter-disagrees-with-rows.json"
VOLATILE = {
    "created_at": "2026-10-21T10:02:11.412093Z",
    "published_at": "2026-10-21T12:00:00Z",
    "chain_hash": "9b0d…",
    "previous_hash": "5c1e…",
    "token": "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
}


def steady(value: Any) -> Any:
    """``value`` with what changes from run to run replaced by fixed values."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key in VOLATILE and item is not None:
                result[key] = VOLATILE[key]
            elif key == "id" and isinstance(item, int):
                result[key] = 7  # an import report's id
            else:
                result[key] = steady(item)
        return result
    if isinstance(value, list):
        return [steady(item) for item in value]
    if isinstance(value, str):
        value = re.sub(r"/imports/\d+/", "/imports/7/", value)
        return re.sub(r"available in \d+ seconds", "available in 900 seconds", value)
    return value


def recorded_responses(seeded, viewer, analyst, reviewer) -> dict[str, dict[str, Any]]:
    """Every example the schema shows, each as the API answered it."""
    viewer_api, analyst_api = token_client(viewer), token_client(analyst)
    reviewer_api, anonymous = token_client(reviewer), APIClient()
    found: dict[str, dict[str, Any]] = {}

    def keep(name: str, response, status: int) -> None:
        assert response.status_code == status, (name, response.status_code, response.content)
        found[name] = {"status": status, "body": steady(response.json())}

    case = record_document("case", "CP22-003")
    case_tag = f'"{analyst_api.get(f"{API}/cases/CP22-003/")["ETag"].strip(chr(34))}"'
    stale = f'"{int(case_tag.strip(chr(34))) - 1}"'

    # records: refusals of each kind's own writes
    keep(
        "case.400",
        analyst_api.patch(
            f"{API}/cases/CP22-003/?summary=Attribute",
            {"attributions": [{"figure": FORBIDDEN_FIGURE, "role": "impact_basis", "note": ""}]},
            format="json",
        ),
        400,
    )
    for kind in ("sources", "rules", "methods"):
        document = {
            "sources": source_document,
            "rules": lambda: record_document("rule", seeded["rules"][0]["key"]),
            "methods": lambda: record_document("method", seeded["methods"][0]["key"]),
        }[kind]()
        document["colour"] = "red"
        response = reviewer_api.put(
            f"{API}/{kind}/{document['key']}/?summary=Edit",
            document,
            format="json",
            HTTP_IF_MATCH="*",
        )
        if response.status_code == 404:  # a new source: create it instead
            response = reviewer_api.post(f"{API}/{kind}/?summary=New", document, format="json")
        keep(f"{kind[:-1]}.400", response, 400)
    for kind in ("case", "source", "rule", "method", "revision"):
        keep(f"{kind}.404", analyst_api.get(f"{API}/{kind}s/NOPE-999/"), 404)
    keep(
        "case.409",
        analyst_api.post(f"{API}/cases/?summary=Again", case, format="json"),
        409,
    )
    keep(
        "case.412",
        analyst_api.put(
            f"{API}/cases/CP22-003/?summary=Edit", case, format="json", HTTP_IF_MATCH=stale
        ),
        412,
    )
    keep(
        "any.428", analyst_api.put(f"{API}/cases/CP22-003/?summary=Edit", case, format="json"), 428
    )
    keep("withdraw.400", analyst_api.delete(f"{API}/cases/CP22-003/?summary="), 400)
    claim = copy.deepcopy(case["claims"][0])
    claim.update(id="CLM-CP22-003-Z", evidence=[])
    keep(
        "claim.400",
        analyst_api.post(f"{API}/cases/CP22-003/claims/?summary=Add", claim, format="json"),
        400,
    )
    keep("claim.404", analyst_api.get(f"{API}/claims/CLM-NOPE/"), 404)
    keep("list.400", viewer_api.get(f"{API}/cases/?page_size=0"), 400)
    keep("read.400", viewer_api.get(f"{API}/cases/CP22-003/?view=%00"), 400)
    keep("feed.400", viewer_api.get(f"{API}/revisions/?cursor=bm90LWEtY3Vyc29y"), 400)
    keep("diff.400", viewer_api.get(f"{API}/cases/CP22-003/diff/?from=1"), 400)
    keep(
        "revert.400", reviewer_api.post(f"{API}/cases/CP22-003/revert/?summary=R", {}, "json"), 400
    )

    # who is asking
    keep("any.401", anonymous.post(f"{API}/cases/?summary=New", case, format="json"), 401)
    keep("read.401", anonymous.get(f"{API}/cases/", HTTP_AUTHORIZATION="Token nope"), 401)
    keep("any.403", viewer_api.post(f"{API}/cases/?summary=New", case, format="json"), 403)
    keep(
        "any.415",
        analyst_api.post(f"{API}/cases/?summary=New", "text", content_type="text/plain"),
        415,
    )
    keep(
        "token.400",
        anonymous.post(
            f"{API}/auth/token/", {"username": "analyst", "password": "wrong"}, format="json"
        ),
        400,
    )
    for _ in range(10):
        locked = anonymous.post(
            f"{API}/auth/token/", {"username": "analyst", "password": "wrong"}, format="json"
        )
        if locked.status_code == 429:
            break
    keep("token.429", locked, 429)
    keep(
        "token.200",
        anonymous.post(
            f"{API}/auth/token/",
            {"username": "viewer", "password": "pw-viewer"},
            format="json",
        ),
        200,
    )

    # imports and runs
    def post_file(path, query: str = ""):
        return analyst_api.post(
            f"{API}/imports/{query}", path.read_bytes(), content_type="application/json"
        )

    keep("import.201", post_file(RESULTS, "?filename=pd-abort-h200x2-20261021-0007.json"), 201)
    keep("import.200", post_file(RESULTS, "?filename=pd-abort-h200x2-20261021-0007.json"), 200)
    keep("import.409", post_file(REPLACEMENT, "?filename=replacement.json"), 409)
    keep("import.400", post_file(REFUSED, "?filename=counter-disagrees-with-rows.json"), 400)
    keep("import.202", post_file(REPLACEMENT, "?background=true&replace=true"), 202)
    keep("import.404", viewer_api.get(f"{API}/imports/999999/"), 404)
    keep("run.404", viewer_api.get(f"{API}/runs/no-such-run/"), 404)
    run = "pd-abort-h200x2-20261021-0007"
    keep("runs.200", viewer_api.get(f"{API}/runs/"), 200)
    keep("run.200", viewer_api.get(f"{API}/runs/{run}/"), 200)

    # releases
    keep("release.400", reviewer_api.post(f"{API}/releases/", {"notes": ""}, format="json"), 400)
    keep(
        "release.201",
        reviewer_api.post(f"{API}/releases/?page_size=2", {"notes": "Release 1"}, format="json"),
        201,
    )
    keep("release.404", viewer_api.get(f"{API}/releases/99/"), 404)
    keep("releases.200", viewer_api.get(f"{API}/releases/"), 200)

    # webhooks: a subscription to a loopback address, one that is not there
    keep(
        "webhook.400",
        reviewer_api.post(
            f"{API}/webhooks/",
            {"url": "http://127.0.0.1:9/hook", "events": ["revision.written"]},
            format="json",
        ),
        400,
    )
    keep("webhook.404", reviewer_api.get(f"{API}/webhooks/999999/"), 404)
    return found


def test_the_schema_examples_are_the_responses_the_api_gives(seeded, viewer, analyst, reviewer):
    found = recorded_responses(seeded, viewer, analyst, reviewer)
    assert set(found) == set(RECORDED_NAMES)  # every example the schema shows, and no other
    text = json.dumps(found, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("CLAIMSDB_RECORD_EXAMPLES"):
        EXAMPLES_PATH.write_text(text, encoding="utf-8")
    assert EXAMPLES_PATH.read_text(encoding="utf-8") == text, (
        "the API answers otherwise than the schema's examples: record them again "
        "(CLAIMSDB_RECORD_EXAMPLES=1 python -m pytest tests/test_api_examples.py -n 0)"
    )


def test_the_schema_shows_the_recorded_examples():
    schema = APIClient().get(f"{API}/schema/?format=json").json()
    recorded = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    shown = []
    for item in schema["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                for content in response.get("content", {}).values():
                    for example in content.get("examples", {}).values():
                        if str(status).startswith(("4", "5")):
                            shown.append(example["value"])
                            assert example["value"]["status"] == int(status)
    bodies = [entry["body"] for entry in recorded.values()]
    for value in shown:
        assert value in bodies, value  # no error example that the API did not give
    put = schema["paths"]["/api/v1/sources/{key}/"]["put"]["responses"]["400"]
    (example,) = put["content"]["application/json"]["examples"].values()
    assert example["value"]["errors"][0]["code"] == "document.unknown_field"
    token = schema["paths"]["/api/v1/auth/token/"]["post"]["responses"]
    (throttled,) = token["429"]["content"]["application/json"]["examples"].values()
    assert throttled["value"]["errors"][0]["code"] == "signin.throttled"
    assert "Retry-After" in token["429"]["headers"]
