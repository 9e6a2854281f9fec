"""Every stable violation code claimsdb reports, with what it means.

Tools match on these codes; the messages beside them may be reworded, the codes never.
"""

CODES: dict[str, str] = {
    # documents
    "document.malformed": "the input is not valid JSON (or not UTF-8)",
    "document.format": "the document's `format` is not one this endpoint or loader reads",
    "document.missing_field": "a field of the record format is missing",
    "document.unknown_field": "a field that is not part of the record format",
    "document.type": "a field has the wrong JSON type",
    "document.invalid_value": "a value outside the field's vocabulary, pattern, or length",
    "document.duplicate_key": "the same record twice in one bundle",
    "document.too_large": "a document larger than a document may be (docs/limits.md)",
    "document.invalid_key": "an object key with a control character (NUL included)",
    "document.inconsistent": "two documents of one change disagree (e.g. the two sides of a "
    "relation)",
    # records
    "record.key_format": "a record key does not match its pattern",
    "record.exists": "creating a record whose key is taken (HTTP 409)",
    "record.key_mismatch": "the document's key (or a claim's ID) differs from the one addressed",
    "revision.summary_required": "every change needs a summary",
    "revision.stale": "the edit is based on an older revision than the record's latest (HTTP 412)",
    "permission.denied": "the acting user's role does not allow this change",
    "status.ready_needs_reviewer": "only a reviewer may set a case's status to ready; analysts "
    "propose a case for release by setting in_review",
    # claims and evidence
    "claim.id_format": "a claim ID does not match ^CLM-[A-Z0-9]+(-[A-Z0-9]+)*$",
    "claim.id_taken": "a claim ID is used by another case, or belonged to a removed claim: "
    "IDs are never reused",
    "claim.id_duplicate": "the same claim ID twice in one case",
    "claim.evidence_required": "supported/partially_supported claims need a `supports` link; "
    "refuted claims a `contradicts` link",
    "evidence.source_unknown": "an evidence link names a source that does not exist",
    "source.url_scheme": "a source's url is neither empty nor an http:// or https:// address",
    # assessments
    "assessment.method_unknown": "the assessment names a method that does not exist",
    "assessment.value_missing": "a dimension of the method has no value",
    "assessment.value_unknown": "a value (or dimension) that is not in the method's vocabulary",
    "assessment.impact_reason": "impact is null exactly when a non-empty ungraded reason is given",
    "assessment.impact_range": "impact lies outside the method's scale",
    "assessment.impact_basis": "a graded impact needs, in the evidence basis, a claim "
    "supporting a production figure attributable to this case",
    "assessment.basis_foreign": "evidence-basis claims must belong to this case and its "
    "sources must exist",
    # figures, attributions, relations
    "figure.id_format": "a figure ID does not match ^FIG-[A-Z0-9]+(-[A-Z0-9]+)*$",
    "figure.id_duplicate": "the same figure ID twice in one case",
    "figure.id_taken": "a figure ID that belongs to another case",
    "figure.claim_unknown": "a figure names a claim that does not exist",
    "figure.in_use": "removing a figure that another case attributes or a scope rule names",
    "attribution.figure_unknown": "an attribution names a figure that does not exist",
    "relation.case_unknown": "a relation names a case that does not exist (or the case itself)",
    "relation.duplicate": "the same relation listed twice",
    "case.reproduction_runs_readonly": "a document must carry exactly the imported runs the "
    "case has: runs are written only by the importer",
    # scope
    "scope.non_attribution": "a figure named by a non-attribution rule is attributed to the "
    "case the rule names",
    "scope.cross_case_figure": "a figure is attributed to a case other than its own and its "
    "same_event cases",
    "scope.lab_not_impact": "a lab figure is used as an impact basis",
    "scope.relation_conflict": "two cases are both same_event and related_distinct, or a "
    "same_event relation bridges a non-attribution rule",
    "scope.rule_conflict": "a new or reactivated rule that existing data already breaks (every "
    "offending record and path is listed)",
    # rule and method records
    "rule.figure_unknown": "a scope rule names a figure that does not exist",
    "rule.case_unknown": "a scope rule names a case that does not exist",
    "method.invalid": "a method's dimensions, values or impact scale are malformed",
    "method.in_use": "a method used by assessments is immutable: publish a new version",
    # reproduction-results files (repro-results/1), reported by the importer with the JSON
    # path into the file (`scenarios[2].late_writes_landed`)
    "repro.malformed": "the file is empty, truncated, not JSON, not one JSON object, nested too "
    "deeply, or repeats a key",
    "repro.format_unsupported": "`format` is not a format this importer reads (it reads "
    "repro-results/1)",
    "repro.missing": "a required field is missing",
    "repro.unknown_key": "a key the format does not define (only keys beginning with `x-` may "
    "be added)",
    "repro.type": "a value has the wrong JSON type",
    "repro.invalid": "a value outside its field's vocabulary, pattern or range",
    "repro.time_order": "finished_at is before started_at",
    "repro.setting_not_lab": "`setting` is not `lab`: imported results are lab observations and "
    "never production figures",
    "repro.duplicate_scenario": "two scenarios share an id",
    "repro.counter_inconsistent": "a scenario counter exceeds the one that bounds it (e.g. "
    "late_writes_landed > aborts_mid_transfer)",
    "repro.outcome_inconsistent": "`outcome` disagrees with checksum_mismatches + wrong_outputs",
    "repro.trial_unknown_scenario": "a trial row names a scenario the file does not have",
    "repro.trial_repeated": "a scenario's trial number n appears twice",
    "repro.trial_count": "a scenario's number of trial rows differs from its `trials`",
    "repro.trial_counter_mismatch": "a scenario counter differs from the number of its trial "
    "rows with the matching flag true",
    "repro.too_many_problems": "more problems than are listed; fix the listed ones first",
    "repro.too_large": "the file, one of its strings, or its fields outside the trial rows are "
    "larger than allowed (docs/limits.md)",
    "repro.too_many_trials": "more trial rows (or scenarios' trials) than one run may have "
    "(docs/limits.md)",
    # importing a results file
    "import.case_unknown": "the file's `case` names no existing case",
    "import.claim_unknown": "a claim of `claims` does not exist (or was removed)",
    "import.claim_foreign": "a claim of `claims` belongs to another case than the file's "
    "`case` (the message names it)",
    "import.run_conflict": "the run_id was imported before from a different file; replacing it "
    "must be asked for explicitly (HTTP 409)",
    "import.file_changed": "the file changed between the importer's check and its storage "
    "pass; nothing was written",
    "import.no_file": "an import request without a results file",
    "import.filename_invalid": "a results file's name with a control character (NUL included)",
    # the API (HTTP status in brackets)
    "record.not_found": "no record (case, source, rule, method, claim, revision) by that key "
    "(HTTP 404)",
    "revision.precondition_required": "a whole-record PUT without If-Match (HTTP 428)",
    "revision.precondition_invalid": "an If-Match header that is not * or quoted revisions",
    "revision.material_invalid": "?material= is neither true nor false",
    "revision.not_of_record": "a diff or revert names a revision of another record",
    "pagination.cursor_invalid": "?cursor= is not a place in the revision feed: take it from a "
    "response's next or previous link",
    "server.error": "an unexpected error, logged on the server (HTTP 500)",
    "request.too_large": "a request body larger than allowed (HTTP 413; docs/limits.md)",
    "signin.throttled": "too many failed sign-ins for the account: even the right password is "
    "refused for a while (HTTP 429; docs/limits.md)",
    # releases
    "release.notes_required": "publishing a release needs notes",
    "release.nothing_changed": "nothing changed since the previous release: no release is made",
    "release.not_found": "there is no release with that number (HTTP 404)",
}
