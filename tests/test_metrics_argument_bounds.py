"""aniso.metrics arguments that bound the work a call does, or that choose its path: refused in one line naming the
parameter and what is allowed, never a hang, an allocation error or a value read as something else."""

import pytest

from aniso import metrics


def _one_line(info) -> str:
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("n", [10**6, metrics.POWER_MAX_N + 1])
def test_correlation_power_refuses_more_points_than_its_maximum(n):
    """``correlation_power(10**6, 0.3)`` ended in numpy's MemoryError (298 GiB for the simulated samples)."""
    with pytest.raises(ValueError, match=rf"^n: {n}; give a whole number from 3 to {metrics.POWER_MAX_N}") as info:
        metrics.correlation_power(n, 0.3)
    _one_line(info)


@pytest.mark.parametrize("effect", [0.99, 0.05])
def test_points_for_power_refuses_a_limit_above_the_maximum(effect):
    """``points_for_power(0.05, limit=10**6)`` ran for minutes; the limit is refused before any estimate."""
    with pytest.raises(ValueError, match=rf"^limit: 1000000; give a whole number from 0 to {metrics.POWER_MAX_N}"):
        metrics.points_for_power(effect, limit=10**6)
    with pytest.raises(TypeError, match="^limit: 'many'"):
        metrics.points_for_power(effect, limit="many")


def test_points_for_power_at_the_maximum_limit_still_answers():
    assert metrics.points_for_power(0.99, limit=metrics.POWER_MAX_N) == 6
    assert metrics.points_for_power(0.99, start=50, limit=10) is None
