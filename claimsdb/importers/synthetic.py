"""Synthetic `repro-results/1` files of any size, for the benchmark and the scale tests.

The file is streamed to disk (memory does not grow with the number of rows), scenarios
first as the harness writes them, with counters that agree with the rows: the rows are
drawn twice from the same seed, once to count and once to write.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BACKENDS = ("mooncake", "nixl", "mori")
_FLAGS = (True, False)


def _rows(seed: int, trials: int, mitigated: bool) -> Iterator[tuple[int, tuple[bool, ...], float]]:
    rnd = random.Random(seed)
    random_value = rnd.random
    for n in range(1, trials + 1):
        aborted = random_value() < 0.5
        mid = aborted and random_value() < 0.6
        reused = mid and not mitigated and random_value() < 0.25
        late = mid and not mitigated and random_value() < 0.3
        mismatch = late and random_value() < 0.3
        wrong = mismatch and random_value() < 0.8
        latency = round(200 + random_value() * 1300, 1)
        yield n, (aborted, mid, reused, late, mismatch, wrong), latency


def write_results_file(
    path: str | Path,
    *,
    rows: int,
    run_id: str = "synthetic-0001",
    case: str = "CP22-003",
    claims: tuple[str, ...] = ("CLM-CP22-003-B",),
    scenarios: int = 4,
    seed: int = 1,
) -> dict[str, Any]:
    """Write a valid results file with ``rows`` trial rows spread over ``scenarios``.

    Returns the header (the file but its trial rows).
    """
    per = [rows // scenarios + (1 if i < rows % scenarios else 0) for i in range(scenarios)]
    described: list[dict[str, Any]] = []
    for i, trials in enumerate(per):
        mitigated = i % 2 == 1
        sums = [0] * 6
        for _, flags, _ in _rows(seed + i, trials, mitigated):
            for k, flag in enumerate(flags):
                sums[k] += flag
        stale = sums[4] + sums[5]
        described.append(
            {
                "id": f"s{i:02d}-{BACKENDS[i // 2 % len(BACKENDS)]}",
                "backend": BACKENDS[i // 2 % len(BACKENDS)],
                "mitigations": ["deferred_release"] if mitigated else [],
                "free_list_order": "lifo",
                "write_delay_us": 500,
                "seed": seed + i,
                "trials": trials,
                "aborts_injected": sums[0],
                "aborts_mid_transfer": sums[1],
                "reuse_while_in_flight": sums[2],
                "late_writes_landed": sums[3],
                "checksum_mismatches": sums[4],
                "wrong_outputs": sums[5],
                "timeout_forced_releases": 0,
                "stale_generation_dropped": 0,
                "held_slots_peak": 0,
                "rejected_backpressure": 0,
                "outcome": "reproduced" if stale else ("not_reproduced" if trials else "error"),
            }
        )
    header = {
        "format": "repro-results/1",
        "run_id": run_id,
        "case": case,
        "claims": list(claims),
        "setting": "lab",
        "harness": {"name": "pd-abort-race", "version": "0.3.2", "commit": "9f1c2ab0d4e5"},
        "started_at": "2026-10-21T09:14:03Z",
        "finished_at": "2026-10-21T09:52:40Z",
        "environment": {
            "host": "lab-h200-a",
            "gpus": [
                {"model": "NVIDIA H200", "memory_gib": 141, "role": "prefill"},
                {"model": "NVIDIA H200", "memory_gib": 141, "role": "decode"},
            ],
            "framework": {"name": "sglang", "version": "0.5.4"},
        },
        "scenarios": described,
    }
    words = ("false", "true")
    with open(path, "w", encoding="utf-8") as out:
        text = json.dumps(header, indent=1)
        out.write(text[: text.rindex("}")].rstrip() + ',\n "trials": [')
        first = True
        for i, scenario in enumerate(described):
            name = scenario["id"]
            prefix = '\n  {"scenario": "' + name + '", "n": '
            lines = []
            for n, flags, latency in _rows(seed + i, scenario["trials"], i % 2 == 1):
                a, m, r, lw, c, w = (words[f] for f in flags)
                lines.append(
                    f'{prefix}{n}, "aborted": {a}, "mid_transfer": {m}, "reused_in_flight": {r}, '
                    f'"late_write": {lw}, "checksum_mismatch": {c}, "wrong_output": {w}, '
                    f'"latency_us": {latency}}}'
                )
                if len(lines) >= 10_000:
                    out.write(("" if first else ",") + ",".join(lines))
                    first = False
                    lines.clear()
            if lines:
                out.write(("" if first else ",") + ",".join(lines))
                first = False
        out.write("\n ]\n}\n")
    return header
