"""Field rules: checks on one document before it is written (codes: claimsdb/codes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from claimsdb.codes import (
    AssessmentCode,
    AttributionCode,
    CaseCode,
    ClaimCode,
    EvidenceCode,
    FigureCode,
    MethodCode,
    RelationCode,
    RuleCode,
)
from claimsdb.models import AssessmentMethod
from claimsdb.records import RuleViolation

from .context import DocumentContext
from .registry import field_rule

Violations = Iterator[RuleViolation]

EVIDENCE_NEEDED = {
    "supported": "supports",
    "partially_supported": "supports",
    "refuted": "contradicts",
}


@field_rule("case", ClaimCode.ID_TAKEN, ClaimCode.ID_DUPLICATE)
def claim_ids_never_reused(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Claim IDs are unique across the knowledge base and never reused, even after removal."""
    seen: set[str] = set()
    for index, claim in enumerate(document["claims"]):
        claim_id = claim["id"]
        path = f"claims[{index}].id"
        if claim_id in seen:
            yield RuleViolation(
                ClaimCode.ID_DUPLICATE, f"{claim_id} appears more than once in this case", path
            )
            continue
        seen.add(claim_id)
        owner = context.reserved_claims.get(claim_id) or context.live_claims.get(claim_id)
        if owner is None:
            continue
        if owner != context.key:
            yield RuleViolation(
                ClaimCode.ID_TAKEN,
                f"{claim_id} is already used by case {owner}; claim IDs are never reused",
                path,
            )
        elif context.live_claims.get(claim_id) != context.key and context.action != "revert":
            yield RuleViolation(
                ClaimCode.ID_TAKEN,
                f"{claim_id} belonged to a claim that was removed from this case; claim IDs are "
                "never reused (restore the old claim by reverting, or choose a new ID)",
                path,
            )


@field_rule("case", ClaimCode.EVIDENCE_REQUIRED, EvidenceCode.SOURCE_UNKNOWN)
def claims_have_evidence(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Supported claims need a supporting source; refuted ones a contradicting source."""
    for index, claim in enumerate(document["claims"]):
        for link_index, link in enumerate(claim["evidence"]):
            if link["source"] not in context.sources:
                yield RuleViolation(
                    EvidenceCode.SOURCE_UNKNOWN,
                    f"there is no source {link['source']}",
                    f"claims[{index}].evidence[{link_index}].source",
                )
        needed = EVIDENCE_NEEDED.get(claim["status"])
        if needed and not any(link["relation"] == needed for link in claim["evidence"]):
            yield RuleViolation(
                ClaimCode.EVIDENCE_REQUIRED,
                f"{claim['id']} is {claim['status'].replace('_', ' ')}, so it needs at least one "
                f"evidence link that {needed} it",
                f"claims[{index}].evidence",
            )


@field_rule(
    "case",
    AssessmentCode.METHOD_UNKNOWN,
    AssessmentCode.VALUE_MISSING,
    AssessmentCode.VALUE_UNKNOWN,
    AssessmentCode.IMPACT_REASON,
    AssessmentCode.IMPACT_RANGE,
)
def assessments_follow_method(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Assessment values follow the method's vocabulary exactly; impact is graded or explained."""
    for index, assessment in enumerate(document["assessments"]):
        path = f"assessments[{index}]"
        method = context.methods.get(assessment["method"])
        if method is None:
            yield RuleViolation(
                AssessmentCode.METHOD_UNKNOWN,
                f"there is no assessment method {assessment['method']}",
                f"{path}.method",
            )
        else:
            yield from _values_follow(method, assessment, path)
        reason = assessment["impact_ungraded_reason"].strip()
        if assessment["impact"] is None and not reason:
            yield RuleViolation(
                AssessmentCode.IMPACT_REASON,
                "an ungraded impact needs a reason why it is left ungraded",
                f"{path}.impact_ungraded_reason",
            )
        if assessment["impact"] is not None and reason:
            yield RuleViolation(
                AssessmentCode.IMPACT_REASON,
                "a graded impact takes no ungraded reason: clear the reason or the impact",
                f"{path}.impact_ungraded_reason",
            )


def _values_follow(method: AssessmentMethod, assessment: dict[str, Any], path: str) -> Violations:
    dimensions = method.dimension_labels()
    for key, (label, allowed) in dimensions.items():
        value = assessment["values"].get(key)
        if value is None:
            yield RuleViolation(
                AssessmentCode.VALUE_MISSING,
                f"{method.key} needs a value for {label} ({key})",
                f"{path}.values.{key}",
            )
        elif value not in allowed:
            yield RuleViolation(
                AssessmentCode.VALUE_UNKNOWN,
                f"{value!r} is not a value of {label} in {method.key} "
                f"(allowed: {', '.join(allowed)})",
                f"{path}.values.{key}",
            )
    for key in assessment["values"]:
        if key not in dimensions:
            yield RuleViolation(
                AssessmentCode.VALUE_UNKNOWN,
                f"{method.key} has no dimension {key!r}",
                f"{path}.values.{key}",
            )
    impact = assessment["impact"]
    low, high = method.impact.get("min", 0), method.impact.get("max", 0)
    if impact is not None and not low <= impact <= high:
        yield RuleViolation(
            AssessmentCode.IMPACT_RANGE,
            f"impact {impact} is outside {method.key}'s scale {low}–{high}",
            f"{path}.impact",
        )


@field_rule("case", AssessmentCode.BASIS_FOREIGN)
def basis_belongs_to_case(document: dict[str, Any], context: DocumentContext) -> Violations:
    """The evidence basis names claims of this case and sources that exist."""
    own = {claim["id"] for claim in document["claims"]}
    for index, assessment in enumerate(document["assessments"]):
        basis = assessment["evidence_basis"]
        for claim_index, claim_id in enumerate(basis["claims"]):
            if claim_id not in own:
                owner = context.live_claims.get(claim_id)
                where = f"a claim of case {owner}" if owner else "not a claim of this case"
                yield RuleViolation(
                    AssessmentCode.BASIS_FOREIGN,
                    f"{claim_id} is {where}; an evidence basis names this case's own claims",
                    f"assessments[{index}].evidence_basis.claims[{claim_index}]",
                )
        for source_index, source_key in enumerate(basis["sources"]):
            if source_key not in context.sources:
                yield RuleViolation(
                    AssessmentCode.BASIS_FOREIGN,
                    f"there is no source {source_key}",
                    f"assessments[{index}].evidence_basis.sources[{source_index}]",
                )


@field_rule(
    "case",
    FigureCode.ID_DUPLICATE,
    FigureCode.ID_TAKEN,
    FigureCode.CLAIM_UNKNOWN,
    FigureCode.IN_USE,
    AttributionCode.FIGURE_UNKNOWN,
)
def figures_are_consistent(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Figure IDs are unique; figures name existing claims; a figure in use is not removed."""
    seen: set[str] = set()
    own_claims = {claim["id"] for claim in document["claims"]}
    for index, figure in enumerate(document["figures"]):
        figure_id = figure["id"]
        if figure_id in seen:
            yield RuleViolation(
                FigureCode.ID_DUPLICATE,
                f"{figure_id} appears more than once",
                f"figures[{index}].id",
            )
        seen.add(figure_id)
        owner = context.figures.get(figure_id)
        if owner is not None and owner != context.key:
            yield RuleViolation(
                FigureCode.ID_TAKEN,
                f"{figure_id} belongs to case {owner}; a figure belongs to one case "
                "(attribute it instead)",
                f"figures[{index}].id",
            )
        for claim_index, claim_id in enumerate(figure["claims"]):
            if claim_id not in own_claims and claim_id not in context.live_claims:
                yield RuleViolation(
                    FigureCode.CLAIM_UNKNOWN,
                    f"there is no claim {claim_id}",
                    f"figures[{index}].claims[{claim_index}]",
                )
    for figure_id, user in sorted(context.figures_in_use.items()):
        yield RuleViolation(
            FigureCode.IN_USE,
            f"{figure_id} cannot be removed: it is {user}",
            "figures",
        )
    for index, attribution in enumerate(document["attributions"]):
        figure_id = attribution["figure"]
        if figure_id not in seen and figure_id not in context.figures:
            yield RuleViolation(
                AttributionCode.FIGURE_UNKNOWN,
                f"there is no figure {figure_id}",
                f"attributions[{index}].figure",
            )


@field_rule("case", RelationCode.CASE_UNKNOWN, RelationCode.DUPLICATE)
def relations_name_cases(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Relations point at other existing cases, once per kind."""
    seen: set[tuple[str, str]] = set()
    for index, relation in enumerate(document["relations"]):
        other = relation["case"]
        path = f"relations[{index}].case"
        if other == context.key:
            yield RuleViolation(RelationCode.CASE_UNKNOWN, "a case is not related to itself", path)
        elif other not in context.cases:
            yield RuleViolation(RelationCode.CASE_UNKNOWN, f"there is no case {other}", path)
        if (other, relation["kind"]) in seen:
            yield RuleViolation(
                RelationCode.DUPLICATE,
                f"the {relation['kind']} relation to {other} is listed twice",
                f"relations[{index}]",
            )
        seen.add((other, relation["kind"]))


@field_rule("case", CaseCode.REPRODUCTION_RUNS_READONLY)
def runs_are_kept(document: dict[str, Any], context: DocumentContext) -> Violations:
    """Imported reproduction runs are written only by the importer and never dropped by an edit."""
    if context.current_runs is None or context.action in {"import", "revert"}:
        return
    if document["reproduction_runs"] != context.current_runs:
        have = ", ".join(r.get("run_id", "?") for r in context.current_runs) or "none"
        yield RuleViolation(
            CaseCode.REPRODUCTION_RUNS_READONLY,
            "reproduction runs are written only by the importer: the document must carry "
            f"exactly the runs the case has ({have})",
            "reproduction_runs",
        )


@field_rule("method", MethodCode.INVALID, MethodCode.IN_USE)
def method_is_well_formed(document: dict[str, Any], context: DocumentContext) -> Violations:
    """A method's dimensions and values are unique and its impact scale is sound."""
    dimension_keys: set[str] = set()
    for index, dimension in enumerate(document["dimensions"]):
        if dimension["key"] in dimension_keys:
            yield RuleViolation(
                MethodCode.INVALID,
                f"dimension {dimension['key']!r} appears twice",
                f"dimensions[{index}].key",
            )
        dimension_keys.add(dimension["key"])
        if not dimension["values"]:
            yield RuleViolation(
                MethodCode.INVALID, "a dimension needs at least one value", f"dimensions[{index}]"
            )
        value_keys: set[str] = set()
        for value_index, value in enumerate(dimension["values"]):
            if value["key"] in value_keys:
                yield RuleViolation(
                    MethodCode.INVALID,
                    f"value {value['key']!r} appears twice",
                    f"dimensions[{index}].values[{value_index}].key",
                )
            value_keys.add(value["key"])
    impact = document["impact"]
    if impact["min"] > impact["max"]:
        yield RuleViolation(MethodCode.INVALID, "impact min is above max", "impact.min")
    for field_name, what in (("labels", "label"), ("definitions", "definition")):
        for grade in impact.get(field_name, {}):
            on_scale = grade.lstrip("-").isdigit() and impact["min"] <= int(grade) <= impact["max"]
            if not on_scale:
                yield RuleViolation(
                    MethodCode.INVALID,
                    f"impact {what} {grade!r} is not a grade of the scale",
                    f"impact.{field_name}.{grade}",
                )
    if context.method_in_use:
        yield RuleViolation(
            MethodCode.IN_USE,
            f"{document['key']} is used by assessments and can no longer change; "
            "publish the change as a new version of the method",
            "",
        )


@field_rule("rule", RuleCode.FIGURE_UNKNOWN, RuleCode.CASE_UNKNOWN)
def rule_names_records(document: dict[str, Any], context: DocumentContext) -> Violations:
    """A scope rule names an existing figure and an existing case."""
    if document["figure"] not in context.figures:
        yield RuleViolation(
            RuleCode.FIGURE_UNKNOWN, f"there is no figure {document['figure']}", "figure"
        )
    if document["case"] not in context.cases:
        yield RuleViolation(RuleCode.CASE_UNKNOWN, f"there is no case {document['case']}", "case")
