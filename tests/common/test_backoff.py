"""hermes_common.backoff: exponential, capped, jittered, honouring retry-after."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_common.backoff import Backoff

attempts = st.integers(min_value=1, max_value=5000)
shares = st.floats(min_value=0.0, max_value=1.0)


def test_nominal_doubles_from_the_base_until_the_cap() -> None:
    policy = Backoff(base_s=0.5, cap_s=5.0, jitter=0.0)
    assert [policy.nominal(a) for a in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.nominal(0) == policy.nominal(-3) == 0.5
    assert policy.delay(3, 0.7) == 2.0  # no jitter, whatever the draw


def test_jitter_takes_at_most_its_share_off() -> None:
    policy = Backoff(base_s=2.0, cap_s=60.0, jitter=0.25)
    assert policy.delay(2, 0.0) == 4.0
    assert policy.delay(2, 1.0) == 3.0
    assert policy.delay(2, 0.5) == 3.5
    assert policy.delay(2, 7.0) == 3.0 and policy.delay(2, -1.0) == 4.0  # draws are clamped


@given(attempt=attempts, share=shares, base=st.floats(0.0, 100.0), cap=st.floats(0.0, 1e6),
       jitter=st.floats(0.0, 1.0))
def test_delay_stays_between_the_jittered_floor_and_the_cap(
    attempt: int, share: float, base: float, cap: float, jitter: float
) -> None:
    policy = Backoff(base_s=base, cap_s=cap, jitter=jitter)
    nominal = policy.nominal(attempt)
    d = policy.delay(attempt, share)
    assert 0.0 <= d <= min(cap, nominal) + 1e-9
    assert d >= nominal * (1.0 - jitter) - 1e-9
    assert math.isfinite(d)


@given(shares=st.lists(shares, min_size=12, max_size=12), jitter=st.floats(0.0, 0.49))
def test_delays_strictly_grow_until_the_cap_when_jitter_is_below_half(
    shares: list[float], jitter: float
) -> None:
    policy = Backoff(base_s=0.5, cap_s=30.0, jitter=jitter)
    delays = [policy.delay(i + 1, r) for i, r in enumerate(shares)]
    uncapped = [d for i, d in enumerate(delays) if 0.5 * 2**i < 30.0]
    assert all(a < b for a, b in zip(uncapped, uncapped[1:], strict=False))


def test_random_draws_when_none_is_given() -> None:
    policy = Backoff(base_s=1.0, cap_s=10.0, jitter=0.5)
    draws = {policy.delay(4) for _ in range(200)}
    assert all(4.0 <= d <= 8.0 for d in draws)
    assert len(draws) > 100  # jittered, not a constant


@given(hint=st.floats(min_value=-10.0, max_value=1e6, allow_nan=False), attempt=attempts)
def test_a_server_retry_after_wins_clamped_to_its_cap(hint: float, attempt: int) -> None:
    policy = Backoff(base_s=1.0, cap_s=2.0, jitter=0.5, retry_after_cap_s=60.0)
    assert policy.delay(attempt, 0.3, retry_after=hint) == min(max(hint, 0.0), 60.0)
    assert Backoff().delay(1, retry_after=600.0) == 600.0  # uncapped by default


def test_a_huge_attempt_does_not_overflow() -> None:
    assert Backoff(base_s=1.0, cap_s=300.0).nominal(10**6) == 300.0


@pytest.mark.parametrize("kwargs", [{"base_s": -1.0}, {"cap_s": -0.1}, {"jitter": 1.5},
                                    {"jitter": -0.1}, {"retry_after_cap_s": -1.0}])
def test_nonsense_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)
