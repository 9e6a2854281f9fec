"""The importer's API: POST/GET /api/v1/imports/, /api/v1/runs/…, trials.csv, the schema."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rest_framework.test import APIClient

from claimsdb.models import ImportReport, ReproductionRun, Revision, TrialRow

from .repro_examples import EXAMPLES, FIXTURES, VALID_SMALL
from .support import api_client

IMPORTS = "/api/v1/imports/"
RUN_ID = "pd-abort-h200x2-20261021-0007"


def post_raw(client: APIClient, path, query: str = ""):
    return client.post(IMPORTS + query, data=path.read_bytes(), content_type="application/json")


def post_multipart(client: APIClient, path, **fields):
    with path.open("rb") as upload:
        return client.post(IMPORTS, {"file": upload, **fields}, format="multipart")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_the_examples_import_as_their_readme_says(example, seeded, analyst):
    response = post_raw(api_client(analyst), example.path, f"?filename={example.name}")

    body = response.json()
    if example.accepted:
        assert response.status_code == 201, body
        assert body["outcome"] == "imported"
        assert body["filename"] == example.name
        assert body["scenarios"] == example.scenarios
        assert body["trial_rows"] == example.trial_rows
        # absolute, as every URL the API gives (docs/api.md)
        assert response["Location"] == f"http://testserver/api/v1/runs/{example.run_id}/"
        assert body["run_url"] == response["Location"]
        assert Revision.objects.get(number=body["revision"]).action == "import"
    else:
        assert response.status_code == 400
        assert body["status"] == 400
        assert {(e["code"], e["path"]) for e in body["errors"]} == set(example.problems)
        assert body["report"]["outcome"] == "refused"
        assert body["report"]["url"] == f"http://testserver{IMPORTS}{body['report']['id']}/"
        assert not ReproductionRun.objects.exists()


def test_multipart_upload_with_form_options(seeded, analyst):
    response = post_multipart(api_client(analyst), VALID_SMALL, dry_run="true")
    assert response.status_code == 200
    body = response.json()
    assert (body["outcome"], body["filename"], body["dry_run"]) == (
        "would_import",
        "valid-small.json",
        True,
    )
    assert not ReproductionRun.objects.exists()

    response = post_multipart(api_client(analyst), VALID_SMALL, summary="From the lab")
    assert response.status_code == 201
    assert Revision.objects.get(number=response.json()["revision"]).summary == "From the lab"


def test_same_file_again_is_200_unchanged(seeded, analyst):
    client = api_client(analyst)
    assert post_raw(client, VALID_SMALL).status_code == 201
    revisions = Revision.objects.count()

    response = post_raw(client, VALID_SMALL)

    assert response.status_code == 200
    assert response.json()["outcome"] == "unchanged"
    assert Revision.objects.count() == revisions


def test_other_content_is_409_unless_replace_is_asked_for(seeded, analyst):
    client = api_client(analyst)
    post_raw(client, VALID_SMALL)
    replacement = FIXTURES / "db" / "replacement.json"

    conflict = post_raw(client, replacement)
    assert conflict.status_code == 409
    assert [e["code"] for e in conflict.json()["errors"]] == ["import.run_conflict"]
    assert conflict.json()["errors"][0]["path"] == "run_id"
    assert TrialRow.objects.count() == 80

    replaced = post_raw(client, replacement, "?replace=true")
    assert replaced.status_code == 201
    assert replaced.json()["outcome"] == "replaced"
    assert TrialRow.objects.count() == 9


def test_bad_parameters_and_missing_file(seeded, analyst):
    client = api_client(analyst)
    response = post_raw(client, VALID_SMALL, "?dry_run=perhaps")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "dry_run"
    response = client.post(IMPORTS, {"summary": "no file"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "import.no_file"
    response = client.post(IMPORTS, data=b"", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "import.no_file"
    response = client.post(IMPORTS, data=b"[1, 2", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "repro.malformed"
    response = client.post(IMPORTS, data="x", content_type="text/plain")
    assert response.status_code == 415
    # a form value is checked even when the query string gives the same parameter
    for value in ("{}", "0", "yes"):
        with VALID_SMALL.open("rb") as upload:
            response = client.post(
                IMPORTS + "?replace=true", {"file": upload, "replace": value}, format="multipart"
            )
        assert response.status_code == 400
        assert response.json()["errors"][0]["path"] == "replace"
    assert not ReproductionRun.objects.exists()


def test_permissions(seeded, analyst, reviewer, viewer, nobody):
    assert post_raw(api_client(), VALID_SMALL).status_code == 401
    assert api_client().get(IMPORTS).status_code == 401
    assert api_client().get("/api/v1/runs/").status_code == 401
    for user in (viewer, nobody):
        response = post_raw(api_client(user), VALID_SMALL)
        assert response.status_code == 403
        assert response.json()["errors"][0]["code"] == "permission.denied"
    assert not ReproductionRun.objects.exists()
    assert api_client(viewer).get(IMPORTS).status_code == 200
    assert api_client(nobody).get(IMPORTS).status_code == 403
    assert post_raw(api_client(reviewer), VALID_SMALL).status_code == 201


def test_list_and_read_reports(seeded, analyst, viewer):
    client = api_client(analyst)
    for example in EXAMPLES:
        post_raw(client, example.path)
    reader = api_client(viewer)

    listing = reader.get(IMPORTS).json()
    assert listing["count"] == 4
    assert [r["outcome"] for r in listing["results"]] == [
        "refused",
        "refused",
        "imported",
        "imported",
    ]
    refused = reader.get(IMPORTS + "?outcome=refused").json()
    assert refused["count"] == 2
    one = refused["results"][0]
    detail = reader.get(one["url"])
    assert detail.status_code == 200
    assert detail.json() == one
    assert reader.get(IMPORTS + "99999/").status_code == 404
    assert reader.get(IMPORTS + f"?run_id={RUN_ID}").json()["count"] == 1
    paged = reader.get(IMPORTS + "?page_size=1").json()
    assert len(paged["results"]) == 1 and paged["next"]


def test_runs_list_detail_and_wilson_intervals(seeded, analyst, viewer):
    post_raw(api_client(analyst), VALID_SMALL)
    reader = api_client(viewer)

    runs = reader.get("/api/v1/runs/?case=CP22-003").json()
    assert runs["count"] == 1
    item = runs["results"][0]
    assert (item["run_id"], item["scenarios"], item["stored_trial_rows"]) == (RUN_ID, 2, 80)

    detail = reader.get(item["url"]).json()
    assert detail["summary"]["run_id"] == RUN_ID
    assert "trials" not in detail["summary"]
    first, second = detail["scenario_stats"]
    assert first["stale_read_rate"]["rate"] == pytest.approx(1 / 40)
    assert first["stale_read_rate"]["ci95_lower"] == pytest.approx(0.004427, abs=1e-6)
    assert first["stale_read_rate"]["ci95_upper"] == pytest.approx(0.128814, abs=1e-6)
    assert (first["mitigated"], second["mitigated"]) == (False, True)
    assert second["stale_read_rate"]["ci95_lower"] == 0.0
    assert reader.get("/api/v1/runs/no-such-run/").status_code == 404


def test_trial_rows_as_csv(seeded, analyst, viewer):
    post_raw(api_client(analyst), VALID_SMALL)

    response = api_client(viewer).get(f"/api/v1/runs/{RUN_ID}/trials.csv")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 80
    assert rows[0]["scenario"] == "mooncake-none-lifo" and rows[0]["n"] == "1"
    assert rows[40]["scenario"] == "mooncake-deferred_release-lifo"
    assert sum(r["checksum_mismatch"] == "true" for r in rows[:40]) == 1
    assert api_client().get(f"/api/v1/runs/{RUN_ID}/trials.csv").status_code == 401
    missing = api_client(viewer).get("/api/v1/runs/nope/trials.csv")
    assert missing.status_code == 404


def test_trial_rows_as_json_and_errors_always_json(seeded, analyst, viewer):
    post_raw(api_client(analyst), VALID_SMALL)
    reader = api_client(viewer)

    for asked in ({"format": "json"}, {"HTTP_ACCEPT": "application/json"}):
        query = asked if "format" in asked else {}
        headers = {} if query else asked
        response = reader.get(f"/api/v1/runs/{RUN_ID}/trials.csv", query, **headers)
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json"
        rows = json.loads(b"".join(response.streaming_content))
        assert len(rows) == 80
        assert rows[0] == {
            **rows[0],
            "scenario": "mooncake-none-lifo",
            "n": 1,
            "checksum_mismatch": rows[0]["checksum_mismatch"] is True,
        }
        assert isinstance(rows[0]["aborted"], bool) and isinstance(rows[0]["extra"], dict)
        assert sum(r["checksum_mismatch"] for r in rows[:40]) == 1

    # errors are JSON whatever was asked for: CSV, anything, or a type the view has not
    for accept in ("text/csv", "*/*", "application/json", "image/png"):
        missing = reader.get("/api/v1/runs/nope/trials.csv", HTTP_ACCEPT=accept)
        assert missing.status_code in (404, 406)
        assert missing["Content-Type"] == "application/json", accept
        assert missing.json()["errors"][0]["code"]
    missing = reader.get("/api/v1/runs/nope/trials.csv", {"format": "csv"})
    assert (missing.status_code, missing["Content-Type"]) == (404, "application/json")
    assert api_client().get(f"/api/v1/runs/{RUN_ID}/trials.csv")["Content-Type"] == (
        "application/json"
    )


def test_trial_rows_csv_keeps_extensions(seeded, analyst, viewer):
    post_raw(api_client(analyst), FIXTURES / "valid" / "trials-first-with-extensions.json")
    response = api_client(viewer).get(f"/api/v1/runs/{RUN_ID}/trials.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["extra"] == '{"x-gpu": 1}'
    assert rows[1]["latency_us"] == ""


def test_the_schema_documents_the_endpoints(db):
    response = api_client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    for path in (
        "/api/v1/imports/",
        "/api/v1/imports/{id}/",
        "/api/v1/runs/",
        "/api/v1/runs/{run_id}/",
        "/api/v1/runs/{run_id}/trials.csv",
    ):
        assert path in paths, path
    create = paths["/api/v1/imports/"]["post"]
    assert set(create["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"200", "201", "400", "401", "403", "409"} <= set(create["responses"])
    assert create["responses"]["409"]["content"]["application/json"]["examples"]
    assert (
        "text/csv"
        in paths["/api/v1/runs/{run_id}/trials.csv"]["get"]["responses"]["200"]["content"]
    )


def test_every_attempt_is_recorded(seeded, analyst):
    post_raw(api_client(analyst), EXAMPLES[2].path)
    post_raw(api_client(analyst), VALID_SMALL, "?dry_run=1")
    assert list(ImportReport.objects.values_list("outcome", "dry_run")) == [
        ("would_import", True),
        ("refused", False),
    ]
