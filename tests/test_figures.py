"""A figure's value is kept and shown as the analyst typed it (``1.20`` stays ``1.20``),
with its unit placed as people write it, and in the same words on every page."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from claimsdb.models import Figure
from claimsdb.records import dumps_compact, dumps_pretty, record_document
from claimsdb.records.canonical import loads
from claimsdb.records.figures import FigureNumber, figure_text, figure_words, number_literal
from claimsdb.services import case_update, record_create

from .support import latest_revision, signed_in, submit, text_of

CASE = "CP22-003"
OTHER = "CP22-002"


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        ("1.2", "%", "1.2 %"),
        ("1.20", "%", "1.20 %"),
        ("155", "responses", "155 responses"),
        ("155.0", "responses", "155 responses"),
        (9, "h", "9 h"),
        (1.2, "%", "1.2 %"),
        ("50000", "requests", "50,000 requests"),
        ("0.25", "", "0.25"),
    ],
)
def test_a_figure_reads_as_people_write_it(value, unit, text):
    assert figure_text(value, unit) == text


def test_scope_follows_the_figure_not_inside_it():
    assert figure_words("1.2", "%", "production") == "1.2 % (production)"


def test_the_literal_of_values_written_as_floats_is_the_text_they_always_had():
    # what the canonical documents held before the literal was kept: json.dumps of the
    # float, an integer when integral
    for value in (1.2, 0.1 + 0.2, 1e-07, 2.5e-05, 123456.789, 155.0, -3.75):
        expected = json.dumps(int(value) if value.is_integer() else value)
        assert number_literal(value) == expected
        assert number_literal(FigureNumber(expected)) == expected


def test_canonical_dumps_write_the_number_as_typed():
    document = loads('{"format": "claimsdb.case/1", "figures": [{"value": 1.20}, {"value": 155}]}')
    assert dumps_compact(document) == (
        '{"figures":[{"value":1.20},{"value":155}],"format":"claimsdb.case/1"}'
    )
    assert '"value": 1.20' in dumps_pretty({"cases": [document]})
    # other numbers are written as before
    run = loads('{"format": "claimsdb.case/1", "figures": [], "x": 2.50}')
    assert dumps_compact(run) == '{"figures":[],"format":"claimsdb.case/1","x":2.5}'


def _with_figure(reviewer, value, unit="%"):
    document = record_document("case", CASE)
    document["figures"] = [
        {
            "id": "FIG-CP22-003-SHARE",
            "value": value,
            "unit": unit,
            "measure": "share_of_subscribers",
            "scope": "production",
            "description": "",
            "claims": [],
        }
    ]
    case_update(user=reviewer, key=CASE, document=document, summary="A figure")


def test_a_figure_entered_on_the_page_keeps_its_digits_everywhere(seeded, analyst, reviewer):
    client = signed_in(analyst)
    response = submit(
        client,
        f"/cases/{CASE}/figures/edit/",
        {
            "figures-0-id": "FIG-CP22-003-SHARE",
            "figures-0-value": "1.20",
            "figures-0-unit": "%",
            "figures-0-measure": "share_of_subscribers",
            "figures-0-scope": "production",
            "summary": "The share of subscribers",
        },
    )
    assert response.status_code == 302
    # the table, the document, the snapshot and the record's JSON keep "1.20"
    assert Figure.objects.get(figure_id="FIG-CP22-003-SHARE").value == "1.20"
    snapshot = latest_revision("case", CASE).snapshot
    assert '"value":1.20' in snapshot
    assert '"value": 1.20' in client.get(f"/cases/{CASE}/record.json").content.decode()
    # the case page says it as typed, unit after the number
    page = text_of(client.get(f"/cases/{CASE}/").content.decode())
    assert "1.20 %" in page
    # the form shows it as typed, and saving it again changes nothing
    form = client.get(f"/cases/{CASE}/figures/edit/").content.decode()
    assert 'value="1.20"' in form
    before = latest_revision("case", CASE).number
    submit(client, f"/cases/{CASE}/figures/edit/", {"summary": "Again"})
    assert latest_revision("case", CASE).number == before
    # a value retyped with another precision is a change
    response = submit(
        client, f"/cases/{CASE}/figures/edit/", {"figures-0-value": "1.2", "summary": "Fewer"}
    )
    assert response.status_code == 302
    assert '"value":1.2}' in latest_revision("case", CASE).snapshot


def test_the_scope_box_and_the_rule_page_say_a_figure_the_same_way(seeded, reviewer, viewer):
    # a rule protecting a figure of 1.2 % of CP22-003 from CP22-002
    _with_figure(reviewer, FigureNumber("1.2"))
    record_create(
        user=reviewer,
        kind="rule",
        document={
            "format": "claimsdb.rule/1",
            "key": "RULE-CP22-003-SHARE-NOT-CP22-002",
            "kind": "non_attribution",
            "status": "active",
            "figure": "FIG-CP22-003-SHARE",
            "case": OTHER,
            "reason": "Another event.",
        },
        summary="Keep the share",
    )
    client = signed_in(viewer)
    own = text_of(client.get(f"/cases/{CASE}/").content.decode())
    assert "this case's 1.2 % (production) ( FIG-CP22-003-SHARE )" in own
    assert "1.20" not in own and "production %" not in own
    other = text_of(client.get(f"/cases/{OTHER}/").content.decode())
    assert "the 1.2 % (production) of CP22-003" in other
    rule = text_of(client.get("/rules/RULE-CP22-003-SHARE-NOT-CP22-002/").content.decode())
    assert "The 1.2 % (production) of CP22-003" in rule


def test_the_api_keeps_the_number_as_sent(seeded, reviewer):
    from .support import api_client

    client = api_client(reviewer)
    document = json.loads(client.get(f"/api/v1/cases/{CASE}/").content)
    text = json.dumps(document)
    figure = (
        '{"id": "FIG-CP22-003-SHARE", "value": 1.20, "unit": "%", "measure": "share", '
        '"scope": "production", "description": "", "claims": []}'
    )
    text = text.replace('"figures": []', f'"figures": [{figure}]')
    revision = latest_revision("case", CASE).number
    response = client.generic(
        "PUT",
        f"/api/v1/cases/{CASE}/?summary=A+figure",
        text.encode(),
        content_type="application/json",
        HTTP_IF_MATCH=f'"{revision}"',
    )
    assert response.status_code in (200, 201), response.content
    assert b'"value":1.20' in client.get(f"/api/v1/cases/{CASE}/").content


# --- the migration ---------------------------------------------------------------------------


@pytest.fixture
def at_latest_afterwards(transactional_db):
    yield
    executor = MigrationExecutor(connection)
    (leaf,) = executor.loader.graph.leaf_nodes("claimsdb")
    executor.migrate([leaf])


def test_the_migration_keeps_every_value_as_its_document_wrote_it(at_latest_afterwards):
    executor = MigrationExecutor(connection)
    executor.migrate([("claimsdb", "0011_reads")])
    old = executor.loader.project_state(("claimsdb", "0011_reads")).apps
    Case = old.get_model("claimsdb", "Case")
    OldFigure = old.get_model("claimsdb", "Figure")
    case = Case.objects.create(key="CP99-001", title="t", status="draft")
    values = [155.0, 1.2, 0.1 + 0.2, 1e-07, 12345678.5]
    for position, value in enumerate(values):
        OldFigure.objects.create(
            case=case,
            figure_id=f"FIG-{position}",
            position=position,
            value=value,
            unit="u",
            measure="m",
            scope="production",
        )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("claimsdb", "0012_figure_value_as_written")])
    new = executor.loader.project_state(("claimsdb", "0012_figure_value_as_written")).apps
    stored = list(
        new.get_model("claimsdb", "Figure").objects.order_by("position").values_list("value")
    )
    assert [text for (text,) in stored] == [
        "155",
        "1.2",
        "0.30000000000000004",
        "1e-07",
        "12345678.5",
    ]
    assert [text for (text,) in stored] == [
        json.dumps(int(v) if v.is_integer() else v) for v in values
    ]
