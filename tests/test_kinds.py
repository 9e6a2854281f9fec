"""Every record kind, tested alike.

Each test here runs once per kind of the registry (``claimsdb.records.kinds``), on the
kind's example record in the seed (``RecordKind.example_key``): a kind gets these tests by
being registered (docs/development.md, "Adding a record kind"). Each asserts what every
kind owes the rest of claimsdb: its document round-trips, it travels in bundles, exports
and releases, its pages and API endpoints answer at the paths and names the registry
gives, and its write role is enforced.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import resolve, reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from claimsdb import choices, public
from claimsdb.models import ReleaseEntry, Revision
from claimsdb.records import (
    PermissionDenied,
    bundle_document,
    dumps_compact,
    parse_bundle,
    parse_document,
    record_document,
)
from claimsdb.records.kinds import RecordKind, record_kinds
from claimsdb.services import record_update, record_withdraw
from claimsdb.services.permissions import RANK, ROLES

from .support import make_user, publish

KINDS = list(record_kinds)
each_kind = pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])


def example(seed_bundle: dict, kind: RecordKind) -> dict:
    """The kind's example record as the seed gives it, normalized as a write stores it."""
    (written,) = [d for d in seed_bundle[kind.plural] if d["key"] == kind.example_key]
    name, document = parse_document(written)
    assert name == kind.name
    return document


def latest_revision(kind: RecordKind, key: str) -> Revision:
    return Revision.objects.filter(record_kind=kind.name, record_key=key).latest("number")


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_the_registry_names_every_kind_of_the_ledger_once():
    assert sorted(record_kinds.names()) == sorted(choices.RecordKind.values)
    for what in ("format", "plural", "write_rank", "component"):
        values = [getattr(kind, what) for kind in KINDS]
        assert len(set(values)) == len(values), what
    assert sorted(record_kinds.in_write_order(), key=KINDS.index) == KINDS
    assert [kind.plural for kind in record_kinds.in_bundle_file_order()] == sorted(
        kind.plural for kind in KINDS
    )
    for kind in KINDS:
        assert record_kinds.get(kind.name) is kind
        assert record_kinds.by_format(kind.format) is kind
        assert record_kinds.by_plural(kind.plural) is kind
        assert kind.schema.fields["format"].values == (kind.format,)
        assert kind.label == choices.RecordKind(kind.name).label
        assert RANK[kind.write_role] > RANK["viewer"]  # viewers read; some role writes
    with pytest.raises(ValueError, match="unknown record kind"):
        record_kinds.get("component-of-nothing")


@each_kind
def test_its_documents_round_trip(seeded, seed_bundle, kind):
    """The document a write stores is the document every read gives back, and the one the
    ledger keeps."""
    document = example(seed_bundle, kind)
    key = document["key"]
    assert record_document(kind.name, key) == document
    assert kind.read([key, "NO-SUCH-KEY"]) == {key: document}
    rows = list(kind.rows().filter(key=key))
    assert kind.documents(rows) == [document]
    assert latest_revision(kind, key).snapshot == dumps_compact(document)
    assert parse_document(json.loads(dumps_compact(document))) == (kind.name, document)
    # written back as read, it changes nothing and leaves no revision
    before = Revision.objects.count()
    reviewer = make_user("kind-round-trip", "reviewer")
    outcome = record_update(
        user=reviewer, kind=kind.name, key=key, document=document, summary="Unchanged."
    )
    assert (outcome.outcome, Revision.objects.count()) == ("unchanged", before)


@each_kind
def test_it_travels_in_bundles_exports_and_releases(seeded, seed_bundle, reviewer, tmp_path, kind):
    document = example(seed_bundle, kind)
    bundle = bundle_document()
    assert document in bundle[kind.plural]
    assert document in parse_bundle(bundle)[kind.plural]
    assert parse_bundle(document)[kind.plural] == [document]  # a document is a bundle of one
    out = tmp_path / "export.json"
    call_command("export_records", out=str(out), stderr=io.StringIO())
    assert document in json.loads(out.read_text(encoding="utf-8"))[kind.plural]
    # the example is publishable: a release publishes it, new, at its latest revision
    assert document["status"] == kind.published_status
    release = publish(reviewer, notes="Every kind.")
    entry = ReleaseEntry.objects.get(
        release=release, record_kind=kind.name, record_key=document["key"]
    )
    assert (entry.change, entry.revision) == ("new", latest_revision(kind, document["key"]))
    assert document in public.release_bundle(release)[kind.plural]
    assert public.released_document(kind.name, document["key"]) == document


@each_kind
def test_it_has_its_pages_and_endpoints(seeded, seed_bundle, viewer, kind):
    document = example(seed_bundle, kind)
    key = document["key"]
    number = latest_revision(kind, key).number
    pages = {
        "detail": ([key], kind.record_path(key)),
        "history": ([key], f"{kind.record_path(key)}history/"),
        "revision": ([key, number], kind.revision_path(key, number)),
        "diff": ([key, number, number], kind.diff_path(key, number, number)),
    }
    reader = Client()
    reader.force_login(viewer)
    for page, (args, path) in pages.items():
        assert reverse(kind.url_name(page), args=args) == path, page
        assert resolve(path).url_name == kind.url_name(page)
        assert reader.get(path).status_code == 200, path
    endpoint = reverse(f"api:{kind.url_name('detail')}", kwargs={"key": key})
    assert endpoint == f"/api/v1/{kind.plural}/{key}/"
    client = api_client(viewer)
    response = client.get(endpoint)
    assert response.status_code == 200
    assert (json.loads(response.content), response["ETag"]) == (document, f'"{number}"')
    listed = json.loads(client.get(reverse(f"api:{kind.url_name('list')}")).content)
    assert {"key": key, "revision": number, "document": document} in listed["results"]


@each_kind
def test_its_write_role_is_enforced(seeded, kind):
    """A user one role short of the kind's write role is refused, by the service and by
    the API, and nothing is written; a user with the role withdraws the record."""
    key = kind.example_key
    short = ROLES[RANK[kind.write_role] - 1]
    below, holder = (
        make_user(f"below-{kind.name}", short),
        make_user(f"holder-{kind.name}", kind.write_role),
    )
    before = Revision.objects.count()
    with pytest.raises(PermissionDenied, match=f"needs the {kind.write_role} role"):
        record_withdraw(user=below, kind=kind.name, key=key, summary="Not mine to withdraw.")
    endpoint = f"/api/v1/{kind.plural}/{key}/?summary=Withdrawn"
    refused = api_client(below).delete(endpoint)
    assert refused.status_code == 403
    assert json.loads(refused.content)["errors"][0]["code"] == "permission.denied"
    assert Revision.objects.count() == before
    written = api_client(holder).delete(endpoint)
    assert written.status_code == 200, written.content
    revision = latest_revision(kind, key)
    assert (revision.number, revision.action, revision.author) == (before + 1, "withdraw", holder)
    assert record_document(kind.name, key)["status"] == "withdrawn"
