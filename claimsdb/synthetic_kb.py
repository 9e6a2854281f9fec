"""Synthetic knowledge bases of any size, valid by construction, for the scale benchmark.

``write_bundle`` streams one ``claimsdb.bundle/1`` to a file (memory does not grow with the
number of cases) that ``manage.py load_records`` loads with no violation. It holds the
seed's assessment method, ``cases // 2`` sources, and per case:

* 8 claims with 16 evidence links (two per claim, to sources near the case), statuses
  that have the links they need (supported/partially supported: ``supports``; refuted:
  ``contradicts``);
* a production figure and a lab figure, each resting on one of its claims;
* attributions only where they are allowed: its own production figure as impact basis and
  its own lab figure as context; a ``same_event`` partner's production figure as context;
* relations within blocks of four cases: cases 0 and 1 of a block are ``same_event``,
  cases 2 and 3 ``related_distinct``;
* for each ``related_distinct`` pair, a non-attribution rule forbidding the first case's
  production figure on the second (which never attributes it);
* one assessment with the seed's method: every second case graded (its evidence basis
  names the claim its own production figure rests on), the others ungraded with a reason;
* controls, unknowns and tags;
* three affected components (of ``cases // 10`` components, at least three: 10,000 in a
  knowledge base of 100,000 cases, each named by about 30 cases), with statuses in turn,
  each resting on its first (supported) claim, with a range in the component's scheme and
  an explicit version.

A case's document depends only on the seed, its index and (for the sources it cites) the
number of sources, so case ``SYN-000500`` reads the same in a knowledge base of 1,000
cases and one of 100,000. Every title, summary, claim statement and source title carries
one of ``TOPIC_WORDS`` (case ``i`` has ``TOPIC_WORDS[i % 100]``), so a search for one
word matches about 1% of the records.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CLAIMS_PER_CASE = 8
LINKS_PER_CLAIM = 2
METHOD_KEY = "diggingbeagle.assessment/1"


def _value(key: str, label: str, definition: str) -> dict[str, str]:
    return {"key": key, "label": label, "definition": definition}


# The seed's assessment method (fixtures/seed.json), so that generated assessments use the
# vocabulary real ones do; a test checks the two agree.
METHOD: dict[str, Any] = {
    "format": "claimsdb.method/1",
    "key": METHOD_KEY,
    "title": "DiggingBeagle assessment method, version 1",
    "status": "active",
    "dimensions": [
        {
            "key": "setting",
            "label": "Setting",
            "values": [
                _value(
                    "production_incident",
                    "production incident",
                    "It happened to real users of a deployed service.",
                ),
                _value(
                    "research_demonstration",
                    "research demonstration",
                    "Researchers or maintainers showed it on their own systems; no production "
                    "victims are known.",
                ),
                _value(
                    "lab_only",
                    "lab only",
                    "Seen only in a controlled test set-up, not shown against a real deployment.",
                ),
            ],
        },
        {
            "key": "exploitation",
            "label": "Exploitation",
            "values": [
                _value(
                    "theoretical",
                    "theoretical",
                    "Described as possible; nobody has shown it working.",
                ),
                _value(
                    "proof_of_concept",
                    "proof of concept",
                    "A minimal working demonstration exists.",
                ),
                _value(
                    "demonstrated",
                    "demonstrated",
                    "Shown working end to end against a realistic target.",
                ),
                _value(
                    "in_the_wild",
                    "in the wild",
                    "Used or observed outside any test, against real targets.",
                ),
            ],
        },
        {
            "key": "evidence_grade",
            "label": "Evidence",
            "values": [
                _value("A", "Grade A", "Confirmed by independent replication or primary data."),
                _value(
                    "B",
                    "Grade B",
                    "A primary disclosure by the affected party or maintainers, not "
                    "independently confirmed.",
                ),
                _value("C", "Grade C", "Credible secondary reports that agree with each other."),
                _value("D", "Grade D", "A single secondary report or vendor statement."),
                _value("E", "Grade E", "Unsourced or contradicted."),
            ],
        },
        {
            "key": "remediation",
            "label": "Remediation",
            "values": [
                _value("none", "none", "No fix or mitigation is known."),
                _value("partial", "partial", "Mitigations reduce the risk; the cause remains."),
                _value(
                    "fixed_reported",
                    "fixed reported",
                    "A fix is reported by the maintainers or vendor, not verified here.",
                ),
                _value(
                    "fixed_verified",
                    "fixed verified",
                    "A fix exists and was verified (for example by a reproduction that no longer"
                    " fails).",
                ),
                _value("unknown", "unknown", "The sources do not say."),
            ],
        },
        {
            "key": "ai_role",
            "label": "AI role",
            "values": [
                _value(
                    "against_ai",
                    "against AI",
                    "The AI system or its infrastructure is the target or the failing part.",
                ),
                _value("by_ai", "by AI", "An AI system caused or carried out the harm."),
                _value(
                    "incidental",
                    "incidental",
                    "AI infrastructure is involved, but not central to what went wrong.",
                ),
            ],
        },
    ],
    "impact": {
        "min": 0,
        "max": 4,
        "labels": {
            "0": "none",
            "1": "minimal",
            "2": "moderate",
            "3": "significant",
            "4": "severe",
        },
        "definitions": {
            "0": "No effect on users, data or service.",
            "1": "Minor degradation; no data exposed or corrupted.",
            "2": "Noticeable harm to some users or responses, contained and recoverable.",
            "3": "Wide or lasting harm: many users affected, or data exposed or corrupted.",
            "4": "Severe harm at scale: broad data exposure, corruption or loss of service.",
        },
    },
}

_PREFIXES = ("aero", "bolt", "cinder", "drift", "ember", "frost", "glint", "harbor", "iron", "jade")
_SUFFIXES = ("field", "gate", "hollow", "lark", "mire", "nook", "pike", "quill", "rook", "spire")
# 100 distinct words that no generated text uses otherwise: the search benchmark's queries.
TOPIC_WORDS: tuple[str, ...] = tuple(p + s for p in _PREFIXES for s in _SUFFIXES)

_COMPONENTS = (
    "KV cache",
    "RDMA transfer",
    "scheduler",
    "tokenizer",
    "prefix cache",
    "sampler",
    "allocator",
    "batching queue",
    "router",
    "speculative decoder",
    "weight loader",
)
_FAULTS = (
    "stale write",
    "use after release",
    "race on cancellation",
    "double free",
    "cross-request leak",
    "silent truncation",
    "lost update",
    "ordering bug",
)
_SYSTEMS = ("SGLang", "vLLM", "TensorRT-LLM", "llama.cpp", "Triton", "TGI", "Ray Serve")
_CLAIM_STATUSES = (
    "supported",
    "partially_supported",
    "supported",
    "disputed",
    "refuted",
    "unverified",
    "supported",
    "partially_supported",
)
# the two evidence relations of a claim, by status (the first satisfies the status)
_LINK_RELATIONS = {
    "supported": ("supports", "context"),
    "partially_supported": ("supports", "context"),
    "disputed": ("supports", "contradicts"),
    "refuted": ("contradicts", "context"),
    "unverified": ("context", "context"),
}
_CLAIM_BASES = (
    "reported_finding",
    "independent_replication",
    "vendor_statement",
    "analyst_inference",
)
_SOURCE_KINDS = (
    "primary_disclosure",
    "secondary_report",
    "vendor_advisory",
    "upstream_issue",
    "upstream_fix",
    "reproduction",
    "dataset",
    "other",
)
_TAGS = (
    "kv-cache",
    "rdma",
    "scheduling",
    "memory-safety",
    "production-incident",
    "lab-reproduction",
    "inference",
    "multi-tenant",
    "gpu",
)


def case_key(index: int) -> str:
    return f"SYN-{index:06d}"


def source_key(index: int) -> str:
    return f"SRC-SYN-{index:06d}"


def source_count(cases: int) -> int:
    """Sources of a knowledge base of ``cases`` cases: half as many, at least two."""
    return max(2, cases // 2)


def component_key(index: int) -> str:
    return f"CMP-SYN-{index:06d}"


def component_count(cases: int) -> int:
    """Components of a knowledge base of ``cases`` cases: a tenth as many, at least three
    (a case names three)."""
    return max(AFFECTED_PER_CASE, cases // 10)


AFFECTED_PER_CASE = 3
_SCHEMES = ("pypi", "semver", "generic")
_COMPONENT_KINDS = ("library", "transfer_backend", "project", "service", "model", "hardware")
_AFFECTED_STATUSES = ("affected", "fixed", "not_affected", "under_investigation")


def component_document(index: int, *, seed: int = 1) -> dict[str, Any]:
    rnd = random.Random(f"{seed}:component:{index}")
    scheme = _SCHEMES[index % len(_SCHEMES)]
    name = f"{rnd.choice(_PREFIXES).title()}{rnd.choice(_SUFFIXES)} {index}"
    return {
        "format": "claimsdb.component/1",
        "key": component_key(index),
        "name": name,
        "kind": _COMPONENT_KINDS[index % len(_COMPONENT_KINDS)],
        "purl": f"pkg:pypi/syn-{index}" if scheme == "pypi" else "",
        "version_scheme": scheme,
        "homepage": f"https://example.org/synthetic/components/{index}",
        "aliases": [f"syn-{index}"],
        "relations": [],
        "status": "active",
    }


def _named_components(index: int) -> list[int]:
    """The three components case ``index`` names: the three before its tenth (so every
    knowledge base that holds the case holds them, whatever its size), or the first three."""
    tenth = index // 10
    if tenth < AFFECTED_PER_CASE:
        return list(range(AFFECTED_PER_CASE))
    return [tenth - 1 - k for k in range(AFFECTED_PER_CASE)]


def _affected(index: int, claim: str) -> list[dict[str, Any]]:
    """Case ``index``'s three entries: three distinct components, each with a range and an
    explicit version valid in every scheme of ``_SCHEMES``."""
    entries = []
    for k, component in enumerate(_named_components(index)):
        status = _AFFECTED_STATUSES[(index + k) % len(_AFFECTED_STATUSES)]
        minor = 1 + (index + k) % 9
        entries.append(
            {
                "component": component_key(component),
                "status": status,
                "ranges": [{"events": [{"introduced": "0"}, {"fixed": f"1.{minor}.0"}]}],
                "versions": [f"1.{minor - 1}.{index % 10}"],
                "claims": [claim],
                "note": "" if k else f"Synthetic entry of case {index}.",
            }
        )
    return entries


def _date(rnd: random.Random) -> str:
    return f"20{rnd.randint(20, 26)}-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}"


def source_document(index: int, *, seed: int = 1) -> dict[str, Any]:
    rnd = random.Random(f"{seed}:source:{index}")
    topic = TOPIC_WORDS[index % len(TOPIC_WORDS)]
    return {
        "format": "claimsdb.source/1",
        "key": source_key(index),
        "title": f"{rnd.choice(_SYSTEMS)} {rnd.choice(_COMPONENTS)} report on {topic} "
        f"{rnd.choice(_FAULTS)} (synthetic {index})",
        "kind": _SOURCE_KINDS[index % len(_SOURCE_KINDS)],
        "publisher": rnd.choice(_SYSTEMS) + " maintainers",
        "url": f"https://example.org/synthetic/sources/{index}",
        "published_on": _date(rnd),
        "accessed_on": None if index % 3 else _date(rnd),
        "reliability": "ABCDEF"[index % 6] if index % 4 else "",
        "notes": f"Synthetic source {index}, generated for load and scale tests.",
        "status": "active",
    }


def _partner(index: int, cases: int) -> tuple[int, str] | None:
    """The case related to ``index`` in its block of four, and how, if it exists."""
    block, slot = divmod(index, 4)
    other = block * 4 + (slot ^ 1)
    if other >= cases:
        return None
    return other, ("same_event" if slot < 2 else "related_distinct")


def _relation_note(a: int, b: int, kind: str) -> str:
    low, high = sorted((a, b))
    if kind == "same_event":
        return f"Cases {case_key(low)} and {case_key(high)} record one event."
    return f"Cases {case_key(low)} and {case_key(high)} share a mechanism but are distinct events."


def rule_key(index: int) -> str:
    """The rule forbidding case ``index``'s production figure on its related_distinct partner."""
    return f"RULE-SYN-{index:06d}-P"


def case_document(index: int, *, cases: int, seed: int = 1) -> dict[str, Any]:
    """Case ``index`` of a knowledge base of ``cases`` cases (a valid ``claimsdb.case/1``)."""
    rnd = random.Random(f"{seed}:case:{index}")
    sources = source_count(cases)
    key = case_key(index)
    topic = TOPIC_WORDS[index % len(TOPIC_WORDS)]
    system, component = rnd.choice(_SYSTEMS), rnd.choice(_COMPONENTS)
    fault = rnd.choice(_FAULTS)
    first_source = (index // 2) % sources
    claims = []
    for c in range(CLAIMS_PER_CASE):
        status = _CLAIM_STATUSES[c]
        evidence = [
            {
                "source": source_key((first_source + c + k) % sources),
                "relation": relation,
                "locator": f"Section {c + 1}.{k + 1}",
            }
            for k, relation in enumerate(_LINK_RELATIONS[status])
        ]
        claims.append(
            {
                "id": f"CLM-{key}-{chr(ord('A') + c)}",
                "statement": f"The {topic} {component} in {system} shows a {fault} "
                f"under condition {c + 1} (synthetic claim {c + 1} of case {index}).",
                "status": status,
                "status_note": "" if c % 3 else f"Checked against source {c + 1}.",
                "basis": "lab_reproduction" if c == 1 else _CLAIM_BASES[c % len(_CLAIM_BASES)],
                "origin": "human" if c % 4 else "machine",
                "evidence": evidence,
            }
        )
    production, lab = f"FIG-{key}-P", f"FIG-{key}-L"
    figures = [
        {
            "id": production,
            "value": rnd.randint(1, 5000),
            "unit": "responses",
            "measure": "affected_responses",
            "scope": "production",
            "description": f"Production responses affected in case {key}.",
            "claims": [claims[0]["id"]],
        },
        {
            "id": lab,
            "value": round(rnd.uniform(0.5, 99.5), 1),
            "unit": "percent of trials",
            "measure": "corrupted_trials",
            "scope": "lab",
            "description": f"Share of lab trials corrupted in case {key}.",
            "claims": [claims[1]["id"]],
        },
    ]
    attributions = [
        {"figure": production, "role": "impact_basis", "note": ""},
        {"figure": lab, "role": "context", "note": "Lab observation, never an impact basis."},
    ]
    relations = []
    partner = _partner(index, cases)
    if partner is not None:
        other, kind = partner
        relations.append(
            {"case": case_key(other), "kind": kind, "note": _relation_note(index, other, kind)}
        )
        if kind == "same_event":
            attributions.append(
                {
                    "figure": f"FIG-{case_key(other)}-P",
                    "role": "context",
                    "note": "The same event, recorded from the other side.",
                }
            )
    graded = index % 2 == 0
    assessment = {
        "method": METHOD_KEY,
        "assessed_on": _date(rnd),
        "assessor": "" if index % 5 else "synthetic assessor",
        "values": {
            "setting": rnd.choice(("production_incident", "research_demonstration", "lab_only")),
            "exploitation": rnd.choice(("theoretical", "proof_of_concept", "demonstrated")),
            "evidence_grade": rnd.choice("ABCDE"),
            "remediation": rnd.choice(("none", "partial", "fixed_reported", "unknown")),
            "ai_role": rnd.choice(("against_ai", "by_ai", "incidental")),
        },
        "impact": rnd.randint(0, 4) if graded else None,
        "impact_ungraded_reason": ""
        if graded
        else "No calibrated basis for actual affected targets is held.",
        "narrative": f"The {component} {fault} in {system} was assessed from its claims.",
        "evidence_basis": {
            "claims": sorted({claims[0]["id"], claims[2]["id"]}),
            "sources": sorted({claims[0]["evidence"][0]["source"]}),
        },
    }
    return {
        "format": "claimsdb.case/1",
        "key": key,
        "title": f"{system} {component} {fault} ({topic}, synthetic {index})",
        "status": "ready",
        "summary": f"A {fault} in the {component} of {system}, filed under {topic}.",
        "scope_note": "Synthetic record: its figures belong to this event only.",
        "account": f"A synthetic account of the {component} {fault}.\n\n"
        f"It was generated for scale tests (case {index}).",
        "basis": "Generated; every claim cites the synthetic sources listed.",
        "limits": "Nothing here describes a real system.",
        "tags": sorted(set(rnd.sample(_TAGS, 3))),
        "claims": claims,
        "assessments": [assessment],
        "controls": [
            {"kind": "mitigation", "text": f"Defer release of the {component} slot."},
            {"kind": "detection", "text": "Checksum outputs across requests."},
        ],
        "unknowns": [
            {"kind": "unknown", "text": "How many deployments run the affected version."},
            {"kind": "open_question", "text": f"Whether {system} backports the fix."},
        ],
        "figures": figures,
        "attributions": attributions,
        "relations": relations,
        "reproduction_runs": [],
        "affected": _affected(index, claims[0]["id"]),
    }


def rule_documents(*, cases: int) -> Iterator[dict[str, Any]]:
    """A non-attribution rule per related_distinct pair (that the data does not break)."""
    for index in range(2, cases, 4):
        if index + 1 >= cases:
            break
        yield {
            "format": "claimsdb.rule/1",
            "key": rule_key(index),
            "kind": "non_attribution",
            "status": "active",
            "figure": f"FIG-{case_key(index)}-P",
            "case": case_key(index + 1),
            "reason": f"{case_key(index)} and {case_key(index + 1)} are distinct events: the "
            f"responses counted in {case_key(index)} did not happen in {case_key(index + 1)}.",
        }


_LISTS = ("methods", "sources", "components", "cases", "rules")


def write_bundle(path: str | Path, *, cases: int, seed: int = 1) -> dict[str, int]:
    """Stream a valid ``claimsdb.bundle/1`` of ``cases`` cases to ``path``; return the counts.

    The lists come in load order (methods, sources, components, cases, rules), one record
    a line.
    """
    if cases < 1:
        raise ValueError("a knowledge base needs at least one case")
    counts = {
        "methods": 1,
        "sources": source_count(cases),
        "components": component_count(cases),
        "cases": cases,
        "rules": 0,
    }

    def dump(document: dict[str, Any]) -> str:
        return json.dumps(document, ensure_ascii=False, sort_keys=True)

    with open(path, "w", encoding="utf-8") as out:
        out.write('{"format": "claimsdb.bundle/1",\n"methods": [\n')
        out.write(dump(METHOD))
        out.write('\n],\n"sources": [\n')
        for index in range(counts["sources"]):
            out.write((",\n" if index else "") + dump(source_document(index, seed=seed)))
        out.write('\n],\n"components": [\n')
        for index in range(counts["components"]):
            out.write((",\n" if index else "") + dump(component_document(index, seed=seed)))
        out.write('\n],\n"cases": [\n')
        for index in range(cases):
            out.write((",\n" if index else "") + dump(case_document(index, cases=cases, seed=seed)))
        out.write('\n],\n"rules": [\n')
        for rule in rule_documents(cases=cases):
            out.write((",\n" if counts["rules"] else "") + dump(rule))
            counts["rules"] += 1
        out.write("\n]}\n")
    counts["records"] = sum(counts[name] for name in _LISTS)
    return counts


def main(argv: list[str] | None = None) -> int:
    """``python -m claimsdb.synthetic_kb OUT --cases N [--seed S]``"""
    import argparse

    parser = argparse.ArgumentParser(description="Write a synthetic claimsdb.bundle/1.")
    parser.add_argument("out", help="the bundle file to write")
    parser.add_argument("--cases", type=int, required=True, help="number of cases")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args(argv)
    counts = write_bundle(options.out, cases=options.cases, seed=options.seed)
    print(", ".join(f"{counts[name]:,} {name}" for name in _LISTS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
