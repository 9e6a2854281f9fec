"""Malformed documents on every write path: valid documents with one field dropped, retyped or
nested (at any depth) are refused with a stable code and a path, or accepted — never a 5xx,
never a traceback."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from claimsdb.codes import CODES
from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.records import RuleViolations, record_document
from claimsdb.records.documents import parse_document
from claimsdb.services import bundle_load, record_update

from .repro_examples import VALID_SMALL
from .support import token_client

pytestmark = pytest.mark.django_db

EXAMPLES = 25
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
# what a field may be replaced with: every JSON type, and a few hostile values
REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.just("\x00"),
    st.just([]),
    st.just({}),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
RECORDS = {
    "case": "CP22-003",
    "source": "SRC-SGLANG-KV-TRANSFER-SAFETY",
    "rule": None,  # the seed's first rule, looked up at run time
    "method": "diggingbeagle.assessment/1",
}


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (the value itself included)."""
    found = [prefix]
    if isinstance(value, dict):
        for name, item in value.items():
            found += paths(item, (*prefix, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def mutate(document: Any, path: tuple, how: str, replacement: Any) -> Any:
    """The document with the value at ``path`` dropped, replaced, or nested one level."""
    document = copy.deepcopy(document)
    if not path:
        return replacement if how == "retype" else [document]
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "drop":
        del parent[last]
    elif how == "retype":
        parent[last] = replacement
    elif how == "nest_list":
        parent[last] = [parent[last]]
    else:
        parent[last] = {"value": parent[last]}
    return document


@st.composite
def mutations(draw, document: Any) -> Any:
    path = draw(st.sampled_from(paths(document)))
    how = draw(st.sampled_from(["drop", "retype", "nest_list", "nest_object"]))
    return mutate(document, path, how, draw(REPLACEMENTS))


def documents(seed_bundle: dict) -> dict[str, dict]:
    lists = {"case": "cases", "source": "sources", "rule": "rules", "method": "methods"}
    found = {}
    for kind, key in RECORDS.items():
        items = seed_bundle[lists[kind]]
        found[kind] = next(d for d in items if key is None or d["key"] == key)
    return found


def assert_refusal_shape(violations) -> None:
    for violation in violations:
        code = violation["code"] if isinstance(violation, dict) else violation.code
        assert code in CODES or code in DRF_CODES, violation


# refusals that are about the request, not a record: namespaced as every code the API reports
DRF_CODES = {"request.invalid", "request.not_found", "request.method_not_allowed"}


@pytest.fixture
def api(seeded, reviewer) -> APIClient:
    return token_client(reviewer)


def rolled_back(function):
    """Run ``function`` in a savepoint that is always rolled back: one example writes
    nothing the next one sees."""
    with transaction.atomic():
        try:
            return function()
        finally:
            transaction.set_rollback(True)


@pytest.mark.parametrize("kind", list(RECORDS))
def test_structural_check_reports_every_mutation(seeded, kind):
    """The document checker itself: a refusal (with paths) or a normalized document."""
    original = documents(seeded)[kind]

    @SETTINGS
    @given(document=mutations(original))
    def check(document):
        try:
            parse_document(document, kind)
        except RuleViolations as refused:
            assert refused.violations
            assert_refusal_shape(refused.violations)
            for violation in refused.violations:
                assert violation.message

    check()


FIXED_REPLACEMENTS = (None, True, 7, 2.5, "x", "\x00", [], {}, [1], {"a": 1})


@pytest.mark.parametrize("kind", list(RECORDS))
def test_structural_check_handles_every_single_mutation(seeded, kind):
    """Exhaustively: every field of the document, dropped, nested, or replaced by a value of
    every JSON type, gives a refusal (or a valid document) — never another exception."""
    original = documents(seeded)[kind]
    checked = 0
    for path in paths(original):
        variants = [
            mutate(original, path, how, None)
            for how in ("drop", "nest_list", "nest_object")
            if path
        ]
        variants += [mutate(original, path, "retype", value) for value in FIXED_REPLACEMENTS]
        for document in variants:
            try:
                parse_document(document, kind)
            except RuleViolations as refused:
                assert_refusal_shape(refused.violations)
            checked += 1
    assert checked > 20


def test_relation_without_kind_or_case_is_a_missing_field(seeded):
    document = documents(seeded)["case"]
    for dropped in ("kind", "case"):
        broken = copy.deepcopy(document)
        broken["relations"] = [{"case": "HX-201", "kind": "same_event", "note": ""}]
        del broken["relations"][0][dropped]
        with pytest.raises(RuleViolations) as refused:
            parse_document(broken, "case")
        assert [(v.code, v.path) for v in refused.value.violations] == [
            ("document.missing_field", f"relations[0].{dropped}")
        ]


@pytest.mark.parametrize("format", [["claimsdb.case/1"], {"format": "claimsdb.bundle/1"}])
def test_a_format_that_is_not_text_is_refused_as_a_format(seeded, reviewer, format):
    """A list or an object where a bundle or a document names its format is refused with
    the format's code, like any format claimsdb does not read."""
    with pytest.raises(RuleViolations) as refused:
        bundle_load(user=reviewer, bundle={"format": format, "cases": []}, summary="x")
    assert [(v.code, v.path) for v in refused.value.violations] == [("document.format", "format")]


@pytest.mark.parametrize("method", ["put", "patch", "post"])
@pytest.mark.parametrize("kind", list(RECORDS))
def test_api_writes_never_fail_on_malformed_documents(seeded, api, kind, method):
    original = documents(seeded)[kind]
    base = f"/api/v1/{kind}s/"

    @SETTINGS
    @given(document=mutations(original))
    def write(document):
        if method == "post":
            url, extra = f"{base}?summary=fuzz", {}
        else:
            url = f"{base}{original['key']}/?summary=fuzz"
            extra = {"HTTP_IF_MATCH": "*"}
        body = json.dumps(document)
        content_type = "application/json"
        if method == "patch":
            content_type = "application/merge-patch+json"
        response = rolled_back(
            lambda: getattr(api, method)(url, body, content_type=content_type, **extra)
        )
        assert response.status_code < 500, response.content
        if response.status_code >= 400:
            payload = response.json()
            assert set(payload) == {"status", "title", "errors"}
            assert_refusal_shape(payload["errors"])

    write()


def test_api_claim_writes_never_fail_on_malformed_claims(seeded, api):
    claim = documents(seeded)["case"]["claims"][0]

    @SETTINGS
    @given(document=mutations(claim), method=st.sampled_from(["put", "patch", "post"]))
    def write(document, method):
        if method == "post":
            url = "/api/v1/cases/CP22-003/claims/?summary=fuzz"
        else:
            url = f"/api/v1/claims/{claim['id']}/?summary=fuzz"
        content_type = "application/merge-patch+json" if method == "patch" else "application/json"
        response = rolled_back(
            lambda: getattr(api, method)(
                url, json.dumps(document), content_type=content_type, HTTP_IF_MATCH="*"
            )
        )
        assert response.status_code < 500, response.content

    write()


def test_services_and_load_records_never_fail_on_malformed_bundles(seeded, reviewer, tmp_path):
    """bundle_load, record_update and the load_records command: a refusal, never another
    exception."""
    bundle = copy.deepcopy(seeded)
    # keep the bundle small: one record of each kind, so mutations land everywhere
    small = {"format": bundle["format"]}
    for kind, document in documents(seeded).items():
        small[f"{kind}s"] = [document]
    path = tmp_path / "bundle.json"

    @SETTINGS
    @given(mutated=mutations(small), via=st.sampled_from(["service", "update", "command"]))
    def load(mutated, via):
        def run():
            if via == "service":
                bundle_load(user=reviewer, bundle=mutated, summary="fuzz")
            elif via == "update":
                document = mutated.get("cases", [None])
                document = document[0] if isinstance(document, list) and document else document
                record_update(
                    user=reviewer,
                    kind="case",
                    key="CP22-003",
                    document=document,
                    summary="fuzz",
                )
            else:
                path.write_text(json.dumps(mutated), encoding="utf-8")
                err = io.StringIO()
                try:
                    call_command(
                        "load_records",
                        str(path),
                        user=reviewer.username,
                        stdout=io.StringIO(),
                        stderr=err,
                    )
                except CommandError:
                    assert "Traceback" not in err.getvalue()

        try:
            rolled_back(run)
        except RuleViolations as refused:
            assert refused.violations
            assert_refusal_shape(refused.violations)

    load()


def test_importer_never_fails_on_malformed_results_files(seeded, analyst):
    results = json.loads(VALID_SMALL.read_text(encoding="utf-8"))

    @SETTINGS
    @given(mutated=mutations(results))
    def load(mutated):
        source = io.BytesIO(json.dumps(mutated).encode())
        report = rolled_back(
            lambda: ResultsImporter(user=analyst).import_file(source, filename="fuzz.json")
        )
        for problem in report.problems:
            assert problem.code in CODES, problem

    load()


def test_record_document_still_round_trips(seeded):
    """The checker's normalization is unchanged for valid documents."""
    document = record_document("case", "CP22-003")
    assert parse_document(document, "case")[1] == document
