"""What a `repro-results/1` file is (docs/repro-results-1.md): its name, its vocabularies,
the counters of a scenario and the flags of a trial row, and the patterns of its own
identifiers. The case key and claim ID patterns are the records' (claimsdb/choices.py)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, TypeGuard

FORMAT = "repro-results/1"
# repro-results/1.1 is /1 with the backends' versions stated (docs/repro-results-1.md, "1.1"):
# every /1 file is a /1.1 file once relabelled, and a /1.1 file without its new fields is a /1
# file. A file keeps saying /1 when it states no version, so a /1 reader still reads it.
FORMAT_1_1 = "repro-results/1.1"
SUPPORTED_FORMATS = (FORMAT, FORMAT_1_1)
# The fields /1.1 adds: to a scenario, and to the environment.
SCENARIO_EXTENSION = ("backend_version", "backend_commit", "backend_purl")
ENVIRONMENT_EXTENSION = ("backends",)
EXTENSION_KEYS = frozenset((*SCENARIO_EXTENSION, *ENVIRONMENT_EXTENSION))

BACKENDS = ("mooncake", "nixl", "mori")
MITIGATIONS = ("abort_ack", "deferred_release", "generation_token", "kv_checksum")
FREE_LIST_ORDERS = ("fifo", "lifo")
OUTCOMES = ("reproduced", "not_reproduced", "inconclusive", "error")
COUNTERS = (
    "trials",
    "aborts_injected",
    "aborts_mid_transfer",
    "reuse_while_in_flight",
    "late_writes_landed",
    "checksum_mismatches",
    "wrong_outputs",
    "timeout_forced_releases",
    "stale_generation_dropped",
    "held_slots_peak",
    "rejected_backpressure",
)
# (smaller, larger): each scenario must have smaller <= larger.
COUNTER_ORDER = (
    ("aborts_injected", "trials"),
    ("aborts_mid_transfer", "aborts_injected"),
    ("reuse_while_in_flight", "aborts_mid_transfer"),
    ("late_writes_landed", "aborts_mid_transfer"),
    ("checksum_mismatches", "trials"),
    ("wrong_outputs", "trials"),
)
# Trial-row flag -> the scenario counter its true values add up to.
TRIAL_FLAGS = (
    ("aborted", "aborts_injected"),
    ("mid_transfer", "aborts_mid_transfer"),
    ("reused_in_flight", "reuse_while_in_flight"),
    ("late_write", "late_writes_landed"),
    ("checksum_mismatch", "checksum_mismatches"),
    ("wrong_output", "wrong_outputs"),
)
FLAG_NAMES = tuple(flag for flag, _ in TRIAL_FLAGS)
ROW_REQUIRED = ("scenario", "n", *FLAG_NAMES)
ROW_KEYS = frozenset((*ROW_REQUIRED, "latency_us"))

RUN_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}"
SCENARIO_ID_PATTERN = r"[a-z0-9][a-z0-9._-]{0,63}"
COMMIT_PATTERN = r"[0-9a-fA-F]{4,64}"
SHA256_PATTERN = r"[0-9a-fA-F]{64}"
BACKEND_PATTERN = "|".join(
    [*(re.escape(backend) for backend in BACKENDS), r"other:[A-Za-z0-9][A-Za-z0-9._+-]{0,63}"]
)
# A string with something other than white space in it (str.strip() leaves it non-empty).
NON_BLANK_PATTERN = r"(?s).*\S.*"
_TIMESTAMP = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[Tt](?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def parse_timestamp(value: Any) -> datetime | None:
    """An aware datetime for an RFC 3339 timestamp with a zone, else None."""
    if not isinstance(value, str):
        return None
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        return None
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    zone = "+00:00" if match["zone"] in ("Z", "z") else match["zone"]
    try:
        return datetime.fromisoformat(f"{match['date']}T{match['time']}.{fraction}{zone}")
    except ValueError:
        return None


def is_count(value: Any) -> TypeGuard[int]:
    """A whole number of 0 or more (not a boolean, not 1.0)."""
    return type(value) is int and value >= 0
