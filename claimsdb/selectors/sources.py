"""Reads of evidence sources: the list with its link counts, sources by key (live or as of
a revision), and the claims citing one."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Max, OuterRef, QuerySet

from claimsdb.models import EvidenceLink, Revision, Source
from claimsdb.records import source_document

from .pages import count_of


def source_list() -> QuerySet[Any]:
    """Sources by key, each with how many evidence links of claims not withdrawn cite it
    (``link_count``)."""
    links = EvidenceLink.objects.filter(source=OuterRef("pk")).exclude(claim__status="withdrawn")
    return Source.objects.annotate(link_count=count_of(links, "source")).order_by("key")


def sources_by_key(keys: set[str] | list[str]) -> dict[str, dict[str, Any]]:
    """The live documents of the named sources."""
    return {s.key: source_document(s) for s in Source.objects.filter(key__in=set(keys))}


def sources_as_of(keys: set[str] | list[str], number: int) -> dict[str, dict[str, Any]]:
    """The named sources as they were at revision ``number`` (from their snapshots)."""
    latest = (
        Revision.objects.filter(record_kind="source", record_key__in=set(keys), number__lte=number)
        .values("record_key")
        .annotate(last=Max("number"))
        .values_list("last", flat=True)
    )
    return {
        r.record_key: json.loads(r.snapshot)
        for r in Revision.objects.filter(number__in=list(latest)).only("record_key", "snapshot")
    }


def claims_citing_source(key: str) -> QuerySet[Any]:
    """The claims with an evidence link to a source, with their cases and the links."""
    return (
        EvidenceLink.objects.filter(source__key=key)
        .select_related("claim__case")
        .order_by("claim__case__key", "claim__position", "position")
    )
