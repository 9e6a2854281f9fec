"""Rates of imported reproduction runs, with their uncertainty.

A scenario's stale-read rate is ``checksum_mismatches / trials``. A scenario of 40 trials
with one mismatch and one of 5,000 trials with 125 share a rate of 2.5 % but not its
certainty, so the record page shows each rate with a 95 % Wilson score interval, which,
unlike the normal approximation, stays inside [0, 1] and is usable at 0 and n events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z_95 = 1.959964  # the two-sided 95 % quantile of the standard normal distribution


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion of ``k`` events in ``n`` trials.

    With no trials nothing is known and the interval is the whole of [0, 1]. The bounds are
    exactly 0 when ``k`` is 0 and exactly 1 when ``k`` is ``n`` (no rounding residue).
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if z < 0:
        raise ValueError(f"z must be 0 or more, got {z}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    lower = 0.0 if k == 0 else max(0.0, centre - half)
    upper = 1.0 if k == n else min(1.0, centre + half)
    return lower, upper


@dataclass(frozen=True)
class Rate:
    """``events`` out of ``trials``, with its 95 % Wilson interval (``rate`` None if no trials)."""

    events: int
    trials: int
    rate: float | None
    lower: float
    upper: float

    @classmethod
    def of(cls, events: int, trials: int) -> Rate:
        lower, upper = wilson_interval(events, trials)
        return cls(events, trials, events / trials if trials else None, lower, upper)

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "events": self.events,
            "trials": self.trials,
            "rate": self.rate,
            "ci95_lower": self.lower,
            "ci95_upper": self.upper,
        }


def percent(value: float | None, digits: int = 2) -> str:
    """``0.0251`` → ``"2.51 %"``; None (no trials) → ``"–"``."""
    if value is None:
        return "–"
    return f"{value * 100:.{digits}f} %"
