"""Field rules of components and of a case's affected components (codes: claimsdb/codes.py).

A case's ``affected`` entry says what the case holds of a component's versions; these rules
keep it answerable: the component exists and is active, its ranges and versions are
well-formed in the component's version scheme (claimsdb/versions.py), and an entry that
says more than "under investigation" rests on a supported claim of the case itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from claimsdb import versions
from claimsdb.codes import AffectedCode, ComponentCode
from claimsdb.records import RuleViolation

from .context import DocumentContext
from .registry import field_rule

Violations = Iterator[RuleViolation]

# The claim statuses that can support an affected entry.
SUPPORTING = frozenset({"supported", "partially_supported"})


@field_rule(
    "case",
    AffectedCode.COMPONENT_UNKNOWN,
    AffectedCode.COMPONENT_WITHDRAWN,
    AffectedCode.COMPONENT_DUPLICATE,
    AffectedCode.RANGE_INVALID,
    AffectedCode.VERSION_INVALID,
)
def affected_components_exist(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Each entry names an active component once; its ranges and versions are of its scheme."""
    seen: set[str] = set()
    for index, entry in enumerate(document.get("affected", [])):
        path = f"affected[{index}]"
        key = entry["component"]
        if key in seen:
            yield RuleViolation(
                AffectedCode.COMPONENT_DUPLICATE,
                f"{key} has an entry already: list every range of a component in one entry",
                f"{path}.component",
            )
        seen.add(key)
        facts = context.components.get(key)
        if facts is None:
            yield RuleViolation(
                AffectedCode.COMPONENT_UNKNOWN, f"there is no component {key}", f"{path}.component"
            )
            continue
        if facts.status != "active":
            yield RuleViolation(
                AffectedCode.COMPONENT_WITHDRAWN,
                f"component {key} is withdrawn: name the component that replaces it",
                f"{path}.component",
            )
        scheme = facts.version_scheme
        for range_index, range_ in enumerate(entry["ranges"]):
            for problem in versions.range_problems(scheme, range_["events"]):
                yield RuleViolation(
                    AffectedCode.RANGE_INVALID,
                    f"{problem.message} ({key} follows the {scheme} scheme)",
                    f"{path}.ranges[{range_index}].{problem.path}",
                )
        listed: set[str] = set()
        for version_index, version in enumerate(entry["versions"]):
            where = f"{path}.versions[{version_index}]"
            if versions.parse_version(scheme, version) is None:
                yield RuleViolation(
                    AffectedCode.VERSION_INVALID,
                    f"{version!r} is not a version of the {scheme} scheme ({key})",
                    where,
                )
            elif version in listed:
                yield RuleViolation(
                    AffectedCode.VERSION_INVALID, f"{version!r} is listed twice", where
                )
            listed.add(version)


@field_rule(
    "case",
    AffectedCode.EVIDENCE_REQUIRED,
    AffectedCode.EVIDENCE_WITHDRAWN,
    AffectedCode.CLAIM_FOREIGN,
)
def affected_rests_on_claims(document: dict[str, Any], context: DocumentContext) -> Violations:
    """An entry names claims of this case; one that is not under investigation needs a
    supported one among them, and a withdrawn claim is never the only evidence."""
    statuses = {claim["id"]: claim["status"] for claim in document["claims"]}
    for index, entry in enumerate(document.get("affected", [])):
        path = f"affected[{index}]"
        own = []
        for claim_index, claim_id in enumerate(entry["claims"]):
            if claim_id not in statuses:
                owner = context.live_claims.get(claim_id)
                where = f"a claim of case {owner}" if owner else "not a claim of this case"
                yield RuleViolation(
                    AffectedCode.CLAIM_FOREIGN,
                    f"{claim_id} is {where}; an affected entry rests on this case's own claims",
                    f"{path}.claims[{claim_index}]",
                )
            else:
                own.append(statuses[claim_id])
        if own and all(status == "withdrawn" for status in own):
            yield RuleViolation(
                AffectedCode.EVIDENCE_WITHDRAWN,
                "every claim this entry names is withdrawn: a withdrawn claim cannot be the only "
                "evidence (name a supported claim, or set the status to under_investigation and "
                "remove the claim)",
                f"{path}.claims",
            )
        elif entry["status"] != "under_investigation" and not SUPPORTING & set(own):
            yield RuleViolation(
                AffectedCode.EVIDENCE_REQUIRED,
                f"an entry that says {entry['status'].replace('_', ' ')} needs at least one "
                "supported claim of this case as its evidence",
                f"{path}.claims",
            )


@field_rule("component", ComponentCode.PURL_INVALID, ComponentCode.ALIAS_DUPLICATE)
def component_names_are_sound(document: dict[str, Any], context: DocumentContext) -> Violations:
    """A Package URL parses as one; aliases are distinct from each other and the name."""
    purl = document["purl"]
    if purl:
        why = versions.is_valid_purl(purl)
        if why is not None:
            yield RuleViolation(
                ComponentCode.PURL_INVALID,
                f"{purl[:200]!r} is not a Package URL ({why}); e.g. pkg:pypi/sglang",
                "purl",
            )
    # an alias records a spelling another tool writes (``mooncake`` of ``Mooncake``), so
    # only the same spelling twice is refused; lookups compare names case-folded
    seen = {document["name"].strip()}
    for index, alias in enumerate(document["aliases"]):
        if not alias.strip():
            yield RuleViolation(
                ComponentCode.ALIAS_DUPLICATE, "an alias cannot be empty", f"aliases[{index}]"
            )
        elif alias.strip() in seen:
            yield RuleViolation(
                ComponentCode.ALIAS_DUPLICATE,
                f"{alias!r} is the component's name or another alias already",
                f"aliases[{index}]",
            )
        seen.add(alias.strip())


@field_rule(
    "component",
    ComponentCode.RELATION_UNKNOWN,
    ComponentCode.RELATION_DUPLICATE,
    ComponentCode.IN_USE,
)
def component_relations_and_use(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Relations name other components that exist, once each; a component cases name is
    not withdrawn."""
    seen: set[tuple[str, str]] = set()
    for index, relation in enumerate(document["relations"]):
        other = relation["component"]
        path = f"relations[{index}].component"
        if other == context.key:
            yield RuleViolation(
                ComponentCode.RELATION_UNKNOWN, "a component is not related to itself", path
            )
        elif other not in context.components:
            yield RuleViolation(
                ComponentCode.RELATION_UNKNOWN, f"there is no component {other}", path
            )
        if (other, relation["kind"]) in seen:
            yield RuleViolation(
                ComponentCode.RELATION_DUPLICATE,
                f"the {relation['kind']} relation to {other} is listed twice",
                f"relations[{index}]",
            )
        seen.add((other, relation["kind"]))
    if context.component_cases:
        named = ", ".join(context.component_cases[:5])
        more = len(context.component_cases) - 5
        yield RuleViolation(
            ComponentCode.IN_USE,
            f"{context.key} cannot be withdrawn: affected entries of {named}"
            + (f" and {more} more" if more > 0 else "")
            + " name it",
            "status",
        )
