"""The Wilson score interval behind every stale-read rate on the record page and the API."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claimsdb.importers.stats import Z_95, Rate, percent, wilson_interval


def test_known_values():
    # 1 of 40 (the sample file's unmitigated scenario), checked against the closed form.
    lower, upper = wilson_interval(1, 40)
    assert lower == pytest.approx(0.004426831, abs=1e-9)
    assert upper == pytest.approx(0.128813691, abs=1e-9)
    # 50 of 100: symmetric around one half
    lower, upper = wilson_interval(50, 100)
    assert lower == pytest.approx(1 - upper)
    assert lower == pytest.approx(0.403831, abs=1e-6)


def test_no_trials_means_nothing_is_known():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert Rate.of(0, 0).rate is None
    assert percent(Rate.of(0, 0).rate) == "–"


def test_no_events_has_a_lower_bound_of_exactly_zero():
    lower, upper = wilson_interval(0, 40)
    assert lower == 0.0
    # z²/(n+z²): the "rule of three"-like upper bound for zero events
    assert upper == pytest.approx(Z_95**2 / (40 + Z_95**2))


def test_all_events_has_an_upper_bound_of_exactly_one():
    lower, upper = wilson_interval(40, 40)
    assert upper == 1.0
    assert lower == pytest.approx(40 / (40 + Z_95**2))


def test_one_trial():
    assert wilson_interval(0, 1)[0] == 0.0
    assert wilson_interval(1, 1)[1] == 1.0


@pytest.mark.parametrize("k, n", [(-1, 5), (6, 5), (0, -1)])
def test_impossible_counts_are_refused(k, n):
    with pytest.raises(ValueError):
        wilson_interval(k, n)


def test_z_zero_collapses_to_the_point_estimate():
    assert wilson_interval(3, 12, z=0) == pytest.approx((0.25, 0.25))


@given(
    st.integers(min_value=1, max_value=10**9).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_interval_holds_the_estimate_and_stays_in_the_unit_interval(kn):
    k, n = kn
    lower, upper = wilson_interval(k, n)
    assert 0.0 <= lower <= k / n <= upper <= 1.0
    assert not math.isnan(lower) and not math.isnan(upper)


@given(st.integers(min_value=0, max_value=1000))
def test_more_trials_narrow_the_interval(k):
    narrow = wilson_interval(2 * k, 2000)
    wide = wilson_interval(k, 1000)
    assert narrow[1] - narrow[0] <= wide[1] - wide[0] + 1e-12


def test_rate_as_dict():
    assert Rate.of(1, 4).as_dict() == {
        "events": 1,
        "trials": 4,
        "rate": 0.25,
        "ci95_lower": pytest.approx(wilson_interval(1, 4)[0]),
        "ci95_upper": pytest.approx(wilson_interval(1, 4)[1]),
    }
    assert percent(0.02512) == "2.51 %"
