"""The size limits of claimsdb, in one place (documented in docs/limits.md).

Every write path refuses input beyond them with a stable code before storing anything, so
that no record, request or page grows without bound.
"""

from __future__ import annotations

# A text field of a record document (summary, account, a claim's statement, a source's
# notes...) that has no shorter limit of its own. About 30 pages of prose.
TEXT_MAX_CHARS = 100_000
# One record document, serialized as compact UTF-8 JSON; also the largest request body the
# API and the web forms read (file uploads aside).
DOCUMENT_MAX_BYTES = 5 * 1024 * 1024
# One uploaded or imported results file (repro-results/1). Ten million trial rows of about
# 200 bytes each fit.
UPLOAD_MAX_BYTES = 4 * 1024 * 1024 * 1024
# One string of a results file outside its trial rows (notes, names, x- extensions).
RESULTS_TEXT_MAX_CHARS = 20_000
# Everything of a results file outside its trial rows, in characters of its strings and keys:
# it is held in memory while the rows stream, and summarized on the case page.
RESULTS_HEADER_MAX_CHARS = 1_000_000
# Trial rows of one run, and a scenario's `trials`.
TRIAL_ROWS_MAX = 10_000_000
# Characters of one text shown on a record page; longer texts are cut there, with a link to
# the whole record.
PAGE_TEXT_CHARS = 5_000
