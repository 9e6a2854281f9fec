"""What each revision changed and the record's own date: computed on write, filled for old
revisions by the migration, shown on the history lists (grouped by release for the public)."""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import re

from django.apps import apps

from claimsdb.models import Revision
from claimsdb.records import changed_fields, record_date, record_document
from claimsdb.services import bundle_load, case_update
from claimsdb.web.presenters import CHANGED_SHOWN, changed_text

from .support import get_queries, latest_revision, publish, signed_in, text_of

CASE = "CP22-003"
SEED_DATE = dt.date(2026, 10, 28)


def test_changed_fields_name_top_level_fields_and_items_compactly(seed_bundle):
    old = next(c for c in seed_bundle["cases"] if c["key"] == CASE)
    new = copy.deepcopy(old)
    new["status"] = "draft"
    new["claims"][0]["statement"] += " Reworded."
    new["claims"][1]["evidence"][0]["locator"] = "elsewhere"
    new["assessments"][0]["narrative"] = "Changed."
    new["tags"].append("new-tag")
    new["claims"].append({**new["claims"][0], "id": "CLM-NEW-1"})
    first, second = old["claims"][0]["id"], old["claims"][1]["id"]
    assert changed_fields(old, new) == [
        "assessments",
        f"claims[{first}].statement",
        f"claims[{second}].evidence",
        "claims[CLM-NEW-1]",
        "status",
        "tags",
    ]
    reordered = copy.deepcopy(old)
    reordered["claims"].reverse()
    assert changed_fields(old, reordered) == ["claims"]
    assert changed_fields(None, new) == [] and changed_fields(old, old) == []


def test_record_date_is_the_date_the_document_gives_itself(seed_bundle):
    case = next(c for c in seed_bundle["cases"] if c["key"] == CASE)
    assert record_date("case", case) == SEED_DATE
    later = copy.deepcopy(case)
    later["assessments"].append({**case["assessments"][0], "assessed_on": "2026-11-30"})
    assert record_date("case", later) == dt.date(2026, 11, 30)
    assert record_date("case", {**case, "assessments": []}) is None
    source = next(s for s in seed_bundle["sources"] if s["accessed_on"])
    assert record_date("source", source) == SEED_DATE
    # a source's publication dates the source, not the record
    unread = {**source, "accessed_on": None, "published_on": "2026-01-02"}
    assert record_date("source", unread) is None
    assert record_date("rule", seed_bundle["rules"][0]) is None


def test_changed_text_names_the_first_fields_and_counts_the_rest():
    paths = [f"claims[CLM-{n}].statement" for n in range(CHANGED_SHOWN + 3)]
    assert changed_text(paths[:2]) == "claims[CLM-0].statement, claims[CLM-1].statement"
    assert changed_text(paths).endswith(f"claims[CLM-{CHANGED_SHOWN - 1}].statement and 3 more")
    assert changed_text([]) == ""


def test_the_write_path_stores_what_changed_and_the_record_date(seeded, analyst, reviewer):
    created = latest_revision("case", CASE)
    assert created.action == "create" and created.changed == []
    assert created.dated_on == SEED_DATE  # loaded from the seed: its assessment's date
    assert latest_revision("case", "CP22-002").dated_on is None  # the seed gives it no date
    assert latest_revision("source", "SRC-SGLANG-KV-TRANSFER-SAFETY").dated_on == SEED_DATE

    document = record_document("case", CASE)
    document["title"] = "A new title"
    document["claims"][0]["status_note"] = "Noted."
    claim = document["claims"][0]["id"]
    edited = case_update(user=analyst, key=CASE, document=document, summary="Edit").revision
    edited.refresh_from_db()
    assert edited.changed == [f"claims[{claim}].status_note", "title"]
    assert edited.dated_on is None  # an edit on the web is dated by its recording alone

    # a symmetric relation's note, written through one case, changes the other's too
    document = record_document("case", CASE)
    (relation,) = [r for r in document["relations"] if r["case"] == "CP22-002"]
    relation["note"] += " Still distinct."
    case_update(user=analyst, key=CASE, document=document, summary="Relation note")
    assert latest_revision("case", CASE).changed == ["relations[CP22-002].note"]
    assert latest_revision("case", "CP22-002").changed == ["relations[CP22-003].note"]

    # a bundle load that updates a record keeps the document's own date
    bundle = {"format": "claimsdb.bundle/1", "methods": [], "sources": [], "rules": []}
    bundle["cases"] = [record_document("case", CASE)]
    bundle["cases"][0]["assessments"][0]["assessed_on"] = "2026-11-02"
    bundle_load(user=reviewer, bundle=bundle, summary="Reassessed elsewhere")
    loaded = latest_revision("case", CASE)
    assert loaded.changed == ["assessments"] and loaded.dated_on == dt.date(2026, 11, 2)


def test_the_migration_fills_old_revisions_as_the_write_path_does(seeded, analyst):
    document = record_document("case", CASE)
    document["summary"] = "Another summary."
    case_update(user=analyst, key=CASE, document=document, summary="Edit")
    stored = {r.number: (r.changed, r.dated_on) for r in Revision.objects.all()}
    assert any(changed for changed, _ in stored.values())
    Revision.objects.update(changed=[], dated_on=None)
    migration = importlib.import_module("claimsdb.migrations.0010_revision_changes")
    migration.fill(apps, None)
    assert {r.number: (r.changed, r.dated_on) for r in Revision.objects.all()} == stored


def test_the_full_history_says_what_each_revision_changed(seeded, analyst, viewer):
    created = latest_revision("case", CASE).number
    document = record_document("case", CASE)
    document["status"] = "draft"
    document["scope_note"] += " More."
    case_update(user=analyst, key=CASE, document=document, summary="Back to draft")
    html = signed_in(viewer).get(f"/cases/{CASE}/history/").content.decode()
    text = text_of(html)
    edited = latest_revision("case", CASE).number
    assert f"Revision {edited} · update material · Back to draft · by analyst" in text
    assert "Changed: scope_note, status" in text
    assert re.search(
        rf"Revision {created} · create material · Seed · by reviewer "
        r"recorded \w{3} \d+, \d{4} \d\d:\d\d UTC · record dated Oct 28, 2026",
        text,
    )
    assert "Canonical change recorded" not in text
    # the revision number is each line's only number: no ordered list
    assert "<ol" not in html.split("<main", 1)[1]


def test_public_history_is_grouped_by_release(seeded, analyst, reviewer, client):
    first = latest_revision("case", CASE).number
    publish(reviewer, notes="1")
    document = record_document("case", CASE)
    document["summary"] = "Edited for release 2."
    case_update(user=analyst, key=CASE, document=document, summary="Summary edit")
    second = latest_revision("case", CASE).number
    publish(reviewer, notes="2")
    html = client.get(f"/cases/{CASE}/history/").content.decode()
    main = html.split("<main", 1)[1]
    headings = re.findall(
        r'<h2 class="release-heading"><a href="(/releases/\d+/)">'
        r"Release (\d+)</a> · published <time",
        main,
    )
    assert headings == [("/releases/2/", "2"), ("/releases/1/", "1")]
    assert main.index("Release 2") < main.index(f"Revision {second}") < main.index("Release 1")
    assert main.index("Release 1") < main.index(f"Revision {first}")
    text = text_of(main)
    assert f"Revision {second} · update · Summary edit Changed: summary" in text
    assert "by analyst" not in text and "by reviewer" not in text  # no authors for the public
    assert "<ol" not in main


def test_history_pages_run_a_fixed_number_of_queries(seeded, analyst, reviewer, viewer, client):
    """Changed fields are stored with each revision: more of them cost no query."""

    reader = signed_in(viewer)
    reader.get("/")
    publish(reviewer, notes="1")
    urls = [f"/cases/{CASE}/", f"/cases/{CASE}/history/"]
    few = [get_queries(reader, u) for u in urls] + [get_queries(client, u) for u in urls]
    for n in range(3):
        document = record_document("case", CASE)
        for claim in document["claims"]:
            claim["status_note"] = f"Round {n}."
        case_update(user=analyst, key=CASE, document=document, summary=f"Round {n}")
        publish(reviewer, notes=f"{n + 2}")
    many = [get_queries(reader, u) for u in urls] + [get_queries(client, u) for u in urls]
    assert few == many


def test_record_pages_and_recent_revisions_name_the_changed_fields(seeded, analyst, viewer):
    from claimsdb.services import source_update

    key = "SRC-SGLANG-KV-TRANSFER-SAFETY"
    document = record_document("source", key)
    document["title"] += " (retitled)"
    source_update(user=analyst, key=key, document=document, summary="Retitle the source")
    reader = signed_in(viewer)
    page = text_of(reader.get(f"/sources/{key}/").content.decode())
    number = latest_revision("source", key).number
    assert f"Revision {number} · update · Retitle the source · by analyst Changed: title" in page
    assert "record dated Oct 28, 2026" in page  # its creation, loaded from the seed
    home = text_of(reader.get("/").content.decode())
    assert "Retitle the source Changed: title" in home
