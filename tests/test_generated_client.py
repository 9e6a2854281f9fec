"""A Python client generated from the live schema with openapi-python-client, without a
single warning, and a short day of a tool's work through it against a live server: a
token, a case created, an If-Match update and the stale one refused, a results file
imported in the background and polled to its end (and the same file re-serialised by the
client found unchanged), and the revision feed followed with its cursor.

The generator is a test dependency (pyproject.toml); where it is missing the test is
skipped, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from claimsdb.models import ImportReport

from .support import ROOT, new_case

pytestmark = [
    # the live server needs committed data; the flush afterwards takes the role groups,
    # which roles_kept puts back for the tests that follow
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("spool", "empty_cache", "roles_kept"),
]

BIN = Path(sys.executable).parent
GENERATOR = shutil.which("openapi-python-client", path=f"{BIN}{os.pathsep}{os.environ['PATH']}")
# the generator's configuration, as .ci/generated-client passes it (a release's zip as bytes)
CONFIG = ROOT / ".ci" / "openapi-python-client.yaml"
RESULTS_FILE = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
PACKAGE = "claimsdb_api_client"
PENDING = {"queued", "running"}


def generate_client(schema: dict, into: Path) -> str:
    """Generate the client package from ``schema`` under ``into``; the generator's output.

    ``--fail-on-warning`` makes any warning an error; ruff (which the generator runs over
    what it writes) is looked for beside the interpreter.
    """
    if GENERATOR is None:
        if os.environ.get("CI"):
            pytest.fail("openapi-python-client is not installed (pip install -e '.[test]')")
        pytest.skip("openapi-python-client is not installed")
    path = into / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    result = subprocess.run(
        [
            GENERATOR,
            "generate",
            "--path",
            str(path),
            "--config",
            str(CONFIG),
            "--output-path",
            str(into / PACKAGE),
            "--meta",
            "none",
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower(), output
    # one class per resource, none named after an operation and its status
    models = {path.stem for path in (into / PACKAGE / "models").glob("*.py")}
    assert not [name for name in models if "_response_" in name or "_json_body" in name]
    assert {"release", "release_detail", "import_report", "revision_page", "case_page"} <= models
    return output


@pytest.fixture
def client_package(tmp_path):
    schema = APIClient().get("/api/v1/schema/?format=json").json()
    generate_client(schema, tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda name: importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def work() -> None:
    """What ``manage.py db_worker`` does, until the queue is empty."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0", verbosity=0)


def test_a_day_of_work_through_the_generated_client(client_package, seeded, analyst, live_server):
    api = client_package("api")
    models = client_package("models")
    client_module = client_package("client")
    auth = importlib.import_module(f"{api.__name__}.auth.auth_token_create")
    cases_create = importlib.import_module(f"{api.__name__}.cases.cases_create")
    cases_retrieve = importlib.import_module(f"{api.__name__}.cases.cases_retrieve")
    cases_update = importlib.import_module(f"{api.__name__}.cases.cases_update")
    cases_list = importlib.import_module(f"{api.__name__}.cases.cases_list")
    imports_create = importlib.import_module(f"{api.__name__}.imports.imports_create")
    imports_retrieve = importlib.import_module(f"{api.__name__}.imports.imports_retrieve")
    revisions_list = importlib.import_module(f"{api.__name__}.revisions.revisions_list")

    anonymous = client_module.Client(base_url=live_server.url, raise_on_unexpected_status=True)
    token = auth.sync(
        client=anonymous,
        body=models.TokenRequest(username="analyst", password="pw-analyst"),
    )
    assert isinstance(token, models.Token), token
    anonymous.get_httpx_client().close()  # a kept-alive connection would outlive the server
    client = client_module.AuthenticatedClient(
        base_url=live_server.url,
        token=token.token,
        prefix="Token",
        raise_on_unexpected_status=True,
    )

    # the feed from the start: where the tool begins to follow it
    first = revisions_list.sync(client=client, page_size=200)
    assert isinstance(first, models.RevisionPage), first
    assert first.results and first.results[0].number == 1
    seen = [revision.number for revision in first.results]
    cursor = first.next_cursor

    # create a case
    document = models.CaseDocument.from_dict(new_case("CP99-042", title="Made by a tool"))
    created = cases_create.sync_detailed(client=client, body=document, summary="From a tool")
    assert created.status_code == 201, created.content
    assert created.headers["Location"] == f"{live_server.url}/api/v1/cases/CP99-042/"
    etag = created.headers["ETag"]

    # an If-Match update, then the same (now stale) ETag refused with 412 revision.stale
    read = cases_retrieve.sync_detailed(client=client, key="CP99-042")
    assert read.status_code == 200 and read.headers["ETag"] == etag
    changed = read.parsed
    changed.title = "Renamed by a tool"
    updated = cases_update.sync_detailed(
        client=client, key="CP99-042", body=changed, summary="Rename", if_match=etag
    )
    assert updated.status_code == 200, updated.content
    assert updated.parsed.title == "Renamed by a tool"
    assert updated.headers["ETag"] != etag
    changed.title = "A lost update"
    stale = cases_update.sync_detailed(
        client=client, key="CP99-042", body=changed, summary="Stale", if_match=etag
    )
    assert stale.status_code == 412
    assert isinstance(stale.parsed, models.Error)
    assert [e.code for e in stale.parsed.errors] == ["revision.stale"]
    assert cases_retrieve.sync(client=client, key="CP99-042").title == "Renamed by a tool"
    # without If-Match a whole-record PUT is 428, as documented (the argument is optional)
    required = cases_update.sync_detailed(
        client=client, key="CP99-042", body=changed, summary="Blind"
    )
    assert required.status_code == 428
    assert [e.code for e in required.parsed.errors] == ["revision.precondition_required"]

    # a list page: its Link header and its ETag
    page = cases_list.sync_detailed(client=client, page_size=1)
    assert page.status_code == 200
    assert 'rel="next"' in page.headers["Link"] and page.headers["ETag"]
    assert (
        cases_list.sync_detailed(client=client, page_size=1).headers["ETag"]
        == (page.headers["ETag"])
    )

    # a results file imported in the background, polled to its end
    raw = json.loads(RESULTS_FILE.read_text(encoding="utf-8"))
    queued = imports_create.sync_detailed(
        client=client,
        body=models.ResultsFile.from_dict(raw),
        background=True,
        filename="valid-small.json",
    )
    assert queued.status_code == 202, queued.content
    report = queued.parsed
    assert isinstance(report, models.ImportReport)
    assert report.outcome in PENDING
    assert queued.headers["Location"] == report.url
    assert report.url.startswith(live_server.url)
    for _ in range(5):
        report = imports_retrieve.sync(client=client, id=report.id)
        if report.outcome not in PENDING:
            break
        work()
    assert report.outcome == "imported", report
    assert report.revision is not None

    # the same results as the harness wrote them, sent as raw bytes: the same import,
    # whatever the client's serialisation did to whitespace and key order
    again = client.get_httpx_client().post(
        "/api/v1/imports/",
        content=RESULTS_FILE.read_bytes(),
        headers={"Content-Type": "application/json"},
    )
    assert again.status_code == 200, again.text
    assert again.json()["outcome"] == "unchanged"
    assert again.json()["sha256"] == report.sha256

    # follow the feed from where the tool was: its new revisions, then the head (empty)
    new = []
    for _ in range(10):
        step = revisions_list.sync(client=client, cursor=cursor)
        new += [revision.number for revision in step.results]
        cursor = step.next_cursor
        if not step.results:
            break
    assert new and new[0] == seen[-1] + 1
    assert new[-1] == report.revision
    assert ImportReport.objects.filter(outcome="imported").count() == 1
    client.get_httpx_client().close()
