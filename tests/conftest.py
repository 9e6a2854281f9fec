"""Shared fixtures: users in each role and the seed knowledge base."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from claimsdb.services import bundle_load

ROOT = Path(__file__).resolve().parent.parent
SEED_PATH = ROOT / "fixtures" / "seed.json"


def load_seed_bundle() -> dict:
    return json.loads(SEED_PATH.read_text(encoding="utf-8"))


def make_user(username: str, role: str | None) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username)
    if role:
        # transactional tests flush the tables, migration-made groups included
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def viewer(db) -> User:
    return make_user("viewer", "viewer")


@pytest.fixture
def analyst(db) -> User:
    return make_user("analyst", "analyst")


@pytest.fixture
def reviewer(db) -> User:
    return make_user("reviewer", "reviewer")


@pytest.fixture
def nobody(db) -> User:
    """Signed in, but in no role."""
    return make_user("nobody", None)


@pytest.fixture
def seed_bundle() -> dict:
    return load_seed_bundle()


@pytest.fixture
def seeded(db, reviewer, seed_bundle):
    """The seed fixture loaded through the services, as ``make run`` loads it."""
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    return seed_bundle


def new_case(key: str = "CP99-001", **fields) -> dict:
    """A minimal draft case document, every field present; ``fields`` override."""
    document = {
        "format": "claimsdb.case/1",
        "key": key,
        "title": f"Case {key}",
        "status": "draft",
        **{name: "" for name in ("summary", "scope_note", "account", "basis", "limits")},
        **{
            name: []
            for name in (
                "tags",
                "claims",
                "assessments",
                "controls",
                "unknowns",
                "figures",
                "attributions",
                "relations",
                "reproduction_runs",
            )
        },
    }
    document.update(fields)
    return document


def case_doc(bundle: dict, key: str) -> dict:
    return copy.deepcopy(next(c for c in bundle["cases"] if c["key"] == key))
