"""The OSV schema, version 1.6, as a JSON Schema (draft 2020-12) written from the
specification (https://ossf.github.io/osv-schema/, "Field Details"), for the tests of
claimsdb's OSV export (tests/test_osv_export.py).

Where the specification says "must", the schema holds it: `id` and `modified` required,
and `schema_version` for versions above 1.0.0; `id` of the form `<DB>-<ENTRYID>`; times
RFC 3339 in UTC ending in "Z"; an affected package's `ecosystem` (one of the defined
ecosystems, optionally with a `:suffix`) and `name`; a `purl` without its `@version`; range
`type` one of GIT, SEMVER, ECOSYSTEM, with `repo` for GIT; each event exactly one of
introduced, fixed, last_affected, limit; at least one `introduced`; not both `fixed` and
`last_affected`; the known reference types; `credits[].name`.
"""

from __future__ import annotations

from typing import Any

# "Defined ecosystems" of the 1.6 specification (each may carry a ":<suffix>").
ECOSYSTEMS = (
    "AlmaLinux", "Alpaquita", "Alpine", "Android", "BellSoft Hardened Containers",
    "Bioconductor", "Bitnami", "Chainguard", "ConanCenter", "CRAN", "crates.io", "Debian",
    "GHC", "GitHub Actions", "Go", "Hackage", "Hex", "Julia", "Kubernetes", "Linux",
    "Mageia", "Maven", "MinimOS", "npm", "NuGet", "openEuler", "openSUSE", "OSS-Fuzz",
    "Packagist", "Photon OS", "Pub", "PyPI", "Red Hat", "Rocky Linux", "RubyGems", "SUSE",
    "SwiftURL", "Ubuntu", "Wolfi",
)  # fmt: skip
REFERENCE_TYPES = (
    "ADVISORY", "ARTICLE", "DETECTION", "DISCUSSION", "REPORT", "FIX", "INTRODUCED",
    "GIT", "PACKAGE", "EVIDENCE", "WEB",
)  # fmt: skip
CREDIT_TYPES = (
    "FINDER", "REPORTER", "ANALYST", "COORDINATOR", "REMEDIATION_DEVELOPER",
    "REMEDIATION_REVIEWER", "REMEDIATION_VERIFIER", "TOOL", "SPONSOR", "OTHER",
)  # fmt: skip
SEVERITY_TYPES = ("CVSS_V2", "CVSS_V3", "CVSS_V4", "Ubuntu")

_TIME = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"}
_ID = {"type": "string", "pattern": r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*-[A-Za-z0-9._:-]+$"}
_ECOSYSTEM = "|".join(name.replace(".", r"\.") for name in ECOSYSTEMS)
_SEVERITY = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"type": {"enum": list(SEVERITY_TYPES)}, "score": {"type": "string"}},
        "required": ["type", "score"],
    },
}


def _event(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "minLength": 1}},
        "required": [name],
        "additionalProperties": False,
    }


_RANGE = {
    "type": "object",
    "properties": {
        "type": {"enum": ["GIT", "SEMVER", "ECOSYSTEM"]},
        "repo": {"type": "string", "minLength": 1},
        "events": {
            "type": "array",
            "minItems": 1,
            "items": {
                "oneOf": [_event(n) for n in ("introduced", "fixed", "last_affected", "limit")]
            },
            "contains": {"required": ["introduced"]},
        },
        "database_specific": {"type": "object"},
    },
    "required": ["type", "events"],
    "allOf": [
        {"if": {"properties": {"type": {"const": "GIT"}}}, "then": {"required": ["repo"]}},
        {
            "if": {"properties": {"events": {"contains": {"required": ["last_affected"]}}}},
            "then": {"not": {"properties": {"events": {"contains": {"required": ["fixed"]}}}}},
        },
    ],
}

OSV_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "OSV 1.6 (claimsdb's tests)",
    "type": "object",
    "properties": {
        "schema_version": {"type": "string", "pattern": r"^1\.6\.\d+$"},
        "id": _ID,
        "modified": _TIME,
        "published": _TIME,
        "withdrawn": _TIME,
        "aliases": {"type": "array", "items": _ID, "uniqueItems": True},
        "upstream": {"type": "array", "items": _ID, "uniqueItems": True},
        "related": {"type": "array", "items": _ID, "uniqueItems": True},
        "summary": {"type": "string", "pattern": r"^[^\n]*$"},
        "details": {"type": "string"},
        "severity": _SEVERITY,
        "affected": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "package": {
                        "type": "object",
                        "properties": {
                            "ecosystem": {"type": "string", "pattern": rf"^({_ECOSYSTEM})(:.+)?$"},
                            "name": {"type": "string", "minLength": 1},
                            "purl": {"type": "string", "pattern": r"^pkg:[a-z.+-]+/[^@]+$"},
                        },
                        "required": ["ecosystem", "name"],
                        "additionalProperties": False,
                    },
                    "severity": _SEVERITY,
                    "ranges": {"type": "array", "items": _RANGE},
                    "versions": {"type": "array", "items": {"type": "string"}},
                    "ecosystem_specific": {"type": "object"},
                    "database_specific": {"type": "object"},
                },
                "additionalProperties": False,
                # an ECOSYSTEM or SEMVER range reads versions of a package's ecosystem
                "if": {
                    "properties": {
                        "ranges": {
                            "contains": {"properties": {"type": {"enum": ["SEMVER", "ECOSYSTEM"]}}}
                        }
                    },
                    "required": ["ranges"],
                },
                "then": {"required": ["package"]},
            },
        },
        "references": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"enum": list(REFERENCE_TYPES)},
                    "url": {"type": "string", "pattern": r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$"},
                },
                "required": ["type", "url"],
                "additionalProperties": False,
            },
        },
        "credits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "contact": {"type": "array", "items": {"type": "string"}},
                    "type": {"enum": list(CREDIT_TYPES)},
                },
                "required": ["name"],
            },
        },
        "database_specific": {"type": "object"},
    },
    "required": ["schema_version", "id", "modified"],
    "additionalProperties": False,
}
