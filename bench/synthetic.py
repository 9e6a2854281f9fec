"""Synthetic, valid ``claimsdb.bundle/1`` files for the write-path benchmark and tests.

Each case has 8 claims with 2 evidence links each (16 links), one production figure, one
graded assessment resting on it, a control and an unknown. Cases come in pairs: the second
of a pair is ``same_event`` with the first and attributes the first one's figure, so the
load exercises relations and attributions that point at a case written later or earlier
in the same bundle. There is one source per two cases (at least ten).

The file is written the way ``export_records`` writes it (sorted keys, 2-space indent),
so ``cases`` comes first in the file, before the methods and sources it refers to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

METHOD_KEY = "bench.assessment/1"
CLAIMS_PER_CASE = 8
LINKS_PER_CLAIM = 2


def method_document() -> dict[str, Any]:
    return {
        "format": "claimsdb.method/1",
        "key": METHOD_KEY,
        "title": "Benchmark assessment",
        "dimensions": [
            {
                "key": "setting",
                "label": "Setting",
                "values": [
                    {"key": "production_incident", "label": "production incident"},
                    {"key": "lab_only", "label": "lab only"},
                ],
            }
        ],
        "impact": {"min": 0, "max": 4, "labels": {"0": "none", "4": "severe"}},
        "status": "active",
    }


def source_count(cases: int) -> int:
    return max(10, cases // 2)


def source_key(index: int) -> str:
    return f"SRC-BENCH-{index:07d}"


def source_document(index: int) -> dict[str, Any]:
    return {
        "format": "claimsdb.source/1",
        "key": source_key(index),
        "title": f"Benchmark source {index}",
        "kind": "secondary_report",
        "publisher": "claimsdb bench",
        "url": f"https://example.org/bench/{index}",
        "published_on": "2026-01-02",
        "accessed_on": None,
        "reliability": "B",
        "notes": "",
        "status": "active",
    }


def case_key(index: int, prefix: str = "BENCH") -> str:
    return f"{prefix}-{index:07d}"


def case_document(index: int, cases: int, prefix: str = "BENCH") -> dict[str, Any]:
    key = case_key(index, prefix)
    sources = source_count(cases)
    claims = []
    for number in range(CLAIMS_PER_CASE):
        claims.append(
            {
                "id": f"CLM-{key}-{number}",
                "statement": f"Claim {number} of case {key}: a statement of some length "
                "about what was observed, where and by whom.",
                "status": "supported",
                "status_note": "",
                "basis": "reported_finding",
                "origin": "human",
                "evidence": [
                    {
                        "source": source_key((index * 3 + number + link) % sources),
                        "relation": "supports",
                        "locator": f"Section {number}.{link}",
                    }
                    for link in range(LINKS_PER_CLAIM)
                ],
            }
        )
    figure_id = f"FIG-{key}"
    document = {
        "format": "claimsdb.case/1",
        "key": key,
        "title": f"Benchmark case {index}",
        "status": "ready",
        "summary": f"Summary of benchmark case {index}.",
        "scope_note": "",
        "account": "An account of the case, a paragraph long. " * 4,
        "basis": "Basis and provenance.",
        "limits": "Limits and uncertainty.",
        "tags": ["bench", f"group-{index % 10}"],
        "claims": claims,
        "assessments": [
            {
                "method": METHOD_KEY,
                "assessed_on": "2026-02-03",
                "assessor": "bench",
                "values": {"setting": "production_incident"},
                "impact": 2,
                "impact_ungraded_reason": "",
                "narrative": "Graded on the case's own production figure.",
                "evidence_basis": {"claims": [f"CLM-{key}-0"], "sources": [source_key(0)]},
            }
        ],
        "controls": [{"kind": "mitigation", "text": "Drain writes before reuse."}],
        "unknowns": [{"kind": "unknown", "text": "The exact number of targets."}],
        "figures": [
            {
                "id": figure_id,
                "value": 100 + index,
                "unit": "responses",
                "measure": "affected_responses",
                "scope": "production",
                "description": "Responses affected.",
                "claims": [f"CLM-{key}-0"],
            }
        ],
        "attributions": [],
        "relations": [],
        "reproduction_runs": [],
    }
    partner = index + 1 if index % 2 == 0 else index - 1
    if partner < cases:
        document["relations"] = [
            {"case": case_key(partner, prefix), "kind": "same_event", "note": "One event."}
        ]
        if index % 2 == 1:
            document["attributions"] = [
                {"figure": f"FIG-{case_key(partner, prefix)}", "role": "context", "note": ""}
            ]
    return document


def iter_cases(cases: int, prefix: str = "BENCH") -> Iterator[dict[str, Any]]:
    for index in range(cases):
        yield case_document(index, cases, prefix)


def write_bundle(path: Path, cases: int, prefix: str = "BENCH") -> Path:
    """Write a bundle of ``cases`` cases to ``path``, streaming (bounded memory)."""

    def dump(document: dict[str, Any]) -> str:
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
        return "\n".join("    " + line for line in text.splitlines())

    with open(path, "w", encoding="utf-8") as out:
        out.write('{\n  "cases": [\n')
        for index, document in enumerate(iter_cases(cases, prefix)):
            out.write((",\n" if index else "") + dump(document))
        out.write('\n  ],\n  "format": "claimsdb.bundle/1",\n  "methods": [\n')
        out.write(dump(method_document()))
        out.write('\n  ],\n  "rules": [],\n  "sources": [\n')
        for index in range(source_count(cases)):
            out.write((",\n" if index else "") + dump(source_document(index)))
        out.write("\n  ]\n}\n")
    return path
