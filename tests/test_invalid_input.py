"""Text no database stores (NUL, lone surrogates), repeated JSON keys and bodies of unknown
length: refused where they enter, with a code and the place, never a 500."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from claimsdb.limits import DOCUMENT_MAX_BYTES
from claimsdb.records import RuleViolations, record_document
from claimsdb.services.bundles import bundle_load_file

from .support import (
    body,
    create_source,
    edit_form,
    field_block,
    signed_in,
    state,
    submit,
    text_of,
    token_client,
)

API = "/api/v1"
CASE = f"{API}/cases/CP22-003/"


def errors(response) -> list[tuple[str, str]]:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return [(e["code"], e["path"]) for e in body(response)["errors"]]


def send(client, method: str, url: str, text: str | bytes, **extra):
    payload = text.encode() if isinstance(text, str) else text
    return client.generic(method, url, payload, content_type="application/json", **extra)


def test_a_lone_surrogate_in_a_json_string_is_refused_with_its_path(seeded, analyst):
    client = token_client(analyst)
    before = state()
    patched = send(client, "PATCH", f"{CASE}?summary=s", '{"title": "\\ud800"}')
    assert patched.status_code == 400, patched.content
    assert errors(patched) == [("input.invalid_text", "title")]
    assert "surrogate" in body(patched)["errors"][0]["message"]
    source = record_document("source", "SRC-SGLANG-PR-35049")
    text = json.dumps({**source, "key": "SRC-NEW", "notes": "x"}).replace('"x"', '"a\\udfffb"')
    posted = send(client, "POST", f"{API}/sources/?summary=s", text)
    assert posted.status_code == 400, posted.content
    assert errors(posted) == [("input.invalid_text", "notes")]
    # a key of an object, and a pair that is a character, not two
    keyed = send(client, "PATCH", f"{CASE}?summary=s", '{"\\udc00": 1}')
    assert errors(keyed) == [("input.invalid_text", "\\udc00")]
    assert state() == before
    emoji = send(client, "PATCH", f"{CASE}?summary=s", '{"title": "A \\ud83d\\ude00 title"}')
    assert emoji.status_code == 200, emoji.content
    assert record_document("case", "CP22-003")["title"] == "A \U0001f600 title"


def test_nul_in_a_json_string_is_refused_where_it_is(seeded, analyst):
    client = token_client(analyst)
    before = state()
    response = send(client, "PATCH", f"{CASE}?summary=s", '{"tags": ["ok", "a\\u0000b"]}')
    assert response.status_code == 400
    assert errors(response) == [("input.invalid_text", "tags[1]")]
    assert state() == before


@pytest.mark.parametrize(
    "url, path",
    [
        ("/cases/%00/", ""),
        ("/cases/CP22-003/history/%00/", ""),
        ("/cases/?q=a%00b", "q"),
        ("/search/?q%00=1", "q\\u0000"),
        (f"{API}/cases/%00/", ""),
        (f"{API}/cases/CP22-003/", ""),
        (f"{API}/cases/?q=a%00b", "q"),
        (f"{API}/imports/?run_id=a%00b", "run_id"),
    ],
)
def test_nul_in_the_path_or_the_query_string_is_a_400_not_a_crash(seeded, analyst, url, path):
    client = token_client(analyst) if url.startswith(API) else Client()
    response = client.get(url if "%00" in url else url.replace("CP22-003", "CP22%00003"))
    assert response.status_code == 400, response.content[:300]
    if url.startswith(API):
        assert errors(response) == [("input.invalid_text", path)]
    else:
        assert "NUL" in response.content.decode()


def test_nul_in_a_form_field_is_refused_before_any_view(seeded, analyst):
    client = signed_in(analyst)
    before = state()
    response = submit(client, "/cases/CP22-003/edit/", {"title": "a\x00b", "summary": "s"})
    assert response.status_code == 400
    assert response.content.decode().startswith("Title: ") or "title" in response.content.decode()
    assert "NUL" in response.content.decode()
    assert state() == before


def test_a_bundle_file_with_a_lone_surrogate_or_a_repeated_key_is_refused(
    seeded, reviewer, tmp_path
):
    source = record_document("source", "SRC-SGLANG-PR-35049")
    text = json.dumps({**source, "notes": "x"}).replace('"x"', '"\\ud800"')
    path = tmp_path / "one.json"
    path.write_text(text)
    before = state()
    with pytest.raises(RuleViolations) as refused:
        bundle_load_file(user=reviewer, path=path, summary="s")
    assert [(v.code, v.path) for v in refused.value.violations] == [("input.invalid_text", "notes")]
    path.write_text(json.dumps(source)[:-1] + ', "notes": "again"}')
    with pytest.raises(RuleViolations) as repeated:
        bundle_load_file(user=reviewer, path=path, summary="s")
    assert [(v.code, v.path) for v in repeated.value.violations] == [
        ("document.duplicate_key", "notes")
    ]
    assert state() == before


def test_a_repeated_key_in_an_api_body_is_refused_with_its_path(seeded, analyst):
    client = token_client(analyst)
    before = state()
    response = send(
        client,
        "PATCH",
        f"{CASE}?summary=s",
        '{"title": "First", "controls": [{"kind": "mitigation", "text": "a", "text": "b"}],'
        ' "title": "Second"}',
    )
    assert response.status_code == 400, response.content
    assert errors(response) == [
        ("document.duplicate_key", "title"),
        ("document.duplicate_key", "controls[0].text"),
    ]
    assert state() == before


def test_a_repeated_key_in_a_web_json_field_is_refused(seeded, reviewer):
    client = signed_in(reviewer)
    page = client.get("/methods/new/?from=diggingbeagle.assessment/1").content.decode()
    impact = '{"min": 0, "min": 1, "max": 4, "labels": {}}'
    data = edit_form(page).data(
        {"method-key": "x/3", "method-impact": impact, "summary": "Repeated"}
    )
    response = client.post("/methods/new/", data)
    assert response.status_code == 400
    block = text_of(field_block(response.content.decode(), "method-impact"))
    assert "min: the key 'min' is given more than once in this object" in block


def chunked(client, method: str, url: str, payload: bytes, content_type: str, **extra):
    """A request whose body comes in chunks: no Content-Length."""
    return client.generic(
        method,
        url,
        b"",
        content_type=content_type,
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(payload)},
        **extra,
    )


def test_a_chunked_body_is_read_and_one_over_the_limit_is_a_413(seeded, analyst):
    client = token_client(analyst)
    before = state()
    big = json.dumps({"title": "x" * (DOCUMENT_MAX_BYTES + 1024 * 1024)}).encode()
    response = chunked(client, "PATCH", f"{CASE}?summary=s", big, "application/json")
    assert response.status_code == 413, response.content[:300]
    assert errors(response) == [("request.too_large", "")]
    assert state() == before
    small = json.dumps({"title": "Sent in chunks"}).encode()
    response = chunked(client, "PATCH", f"{CASE}?summary=s", small, "application/json")
    assert response.status_code == 200, response.content[:300]
    assert record_document("case", "CP22-003")["title"] == "Sent in chunks"


def test_a_chunked_web_form_over_the_limit_is_a_413(seeded, analyst):
    create_source(analyst, "SRC-CHUNKED")
    client = signed_in(analyst)
    form = b"title=" + b"x" * (DOCUMENT_MAX_BYTES + 10)
    response = chunked(
        client, "POST", "/sources/SRC-CHUNKED/edit/", form, "application/x-www-form-urlencoded"
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    "change, found",
    [
        # a repeated key inside a record of the bundle, and at its top level
        (
            lambda text: text.replace('"title": ', '"title": "First", "title": ', 1),
            ("document.duplicate_key", "cases[0].title"),
        ),
        (
            lambda text: '{"rules": [], ' + text[1:],
            ("document.duplicate_key", "rules"),
        ),
        # a lone surrogate and a NUL, kept as they are to be refused (not turned into "?")
        (
            lambda text: text.replace('"title": "', '"title": "\\udbff', 1),
            ("input.invalid_text", "cases[0].title"),
        ),
        (
            lambda text: text.replace('"title": "', '"title": "\\u0000', 1),
            ("input.invalid_text", "cases[0].title"),
        ),
    ],
)
def test_a_streamed_bundle_refuses_repeats_surrogates_and_nul(
    db, reviewer, seed_bundle, tmp_path, change, found
):
    path = tmp_path / "bundle.json"
    text = change(json.dumps(seed_bundle))
    path.write_text(text)
    before = state()
    with pytest.raises(RuleViolations) as refused:
        bundle_load_file(user=reviewer, path=path, summary="s", batch_size=3)
    assert found in [(v.code, v.path) for v in refused.value.violations]
    assert state() == before
