"""aniso.metrics arguments that bound the work a call does, or that choose its path: refused in one line naming the
parameter and what is allowed, never a hang, an allocation error or a value read as something else."""

import pytest

from aniso import metrics


def _one_line(info) -> str:
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("n", [10**6, 501])
def test_correlation_power_refuses_more_points_than_its_maximum(n):
    """``correlation_power(10**6, 0.3)`` ended in numpy's MemoryError (298 GiB for the simulated samples)."""
    with pytest.raises(ValueError, match=rf"^n: {n}; give a whole number from 3 to 500") as info:
        metrics.correlation_power(n, 0.3)
    _one_line(info)


@pytest.mark.parametrize("effect", [0.99, 0.05])
def test_points_for_power_refuses_a_limit_above_the_maximum(effect):
    """``points_for_power(0.05, limit=10**6)`` ran for minutes; the limit is refused before any estimate."""
    with pytest.raises(ValueError, match=rf"^limit: 1000000; give a whole number from 0 to 500"):
        metrics.points_for_power(effect, limit=10**6)
    with pytest.raises(TypeError, match="^limit: 'many'"):
        metrics.points_for_power(effect, limit="many")


@pytest.mark.parametrize("call", [lambda **k: metrics.correlation_power(10, 0.5, **k),
                                  lambda **k: metrics.points_for_power(0.5, **k),
                                  lambda **k: metrics.points_for_power(0.5, start=50, limit=10, **k)],
                         ids=["correlation_power", "points_for_power", "points_for_power-no-estimate"])
def test_power_names_only_the_method_or_alternative_that_is_wrong(call):
    """``correlation_power(10, 0.5, method='kendall')`` said "unknown method 'kendall' or alternative 'two-sided'",
    naming a valid alternative; each is named alone with what is allowed, as :func:`correlation_test` names it."""
    with pytest.raises(ValueError, match=r"^method must be 'spearman' or 'pearson', got 'kendall'$"):
        call(method="kendall")
    with pytest.raises(ValueError, match=r"^alternative must be one of \('two-sided', 'greater', 'less'\), "
                                         r"got 'larger'$"):
        call(alternative="larger")


def test_points_for_power_at_the_maximum_limit_still_answers():
    assert metrics.points_for_power(0.99, limit=500) == 6
    assert metrics.points_for_power(0.99, start=50, limit=10) is None


def _spd(d=150, n=300):
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    return torch.tensor(np.cov(rng.normal(size=(n, d)).T))


@pytest.mark.parametrize("seed, error", [(1.5, TypeError), (None, TypeError), (True, TypeError), ("3", TypeError),
                                         (2**70, ValueError)])
def test_largest_eigenpair_names_a_bad_seed(seed, error):
    """A seed of the wrong type reached torch's manual_seed ("manual_seed expected a long, but got float"; np.int64:
    "an integer is required"; 2**70: "Overflow when unpacking long long"), which never named ``seed``."""
    c = _spd()
    with pytest.raises(error, match=r"^seed: ") as info:
        metrics.largest_eigenpair(c, seed=seed, vector=False)
    _one_line(info)
    with pytest.raises(error, match=r"^seed: "):
        metrics.largest_eigenpairs(c[None], seed=seed, vector=False)


def test_largest_eigenpair_takes_a_numpy_integer_seed():
    import numpy as np

    c = _spd()
    assert float(metrics.largest_eigenpair(c, seed=np.int64(3), vector=False)[0]) == pytest.approx(
        float(metrics.largest_eigenpair(c, seed=3, vector=False)[0]), rel=1e-12)


@pytest.mark.parametrize("value", ["no", "false", 0, None])
def test_largest_eigenpair_names_a_vector_or_lockstep_that_is_no_bool(value):
    """``largest_eigenpair(c, vector='no')`` returned the eigenvector ('no' read as True); ``lockstep='no'`` was
    taken."""
    c = _spd()
    with pytest.raises(TypeError, match=r"^vector: .*give True or False") as info:
        metrics.largest_eigenpair(c, vector=value)
    _one_line(info)
    with pytest.raises(TypeError, match=r"^vector: "):
        metrics.largest_eigenpairs(c[None], vector=value)
    if value is not None:
        with pytest.raises(TypeError, match=r"^lockstep: .*give True or False or None"):
            metrics.largest_eigenpairs(c[None], lockstep=value)


def test_texts_given_as_numbers_are_refused_naming_the_argument():
    """``monotonic_trend(along=['enc.0', …])`` (an encoder-decoder's layer names) and ``mean_cosine`` of a DataFrame
    with a text column ended in numpy's "could not convert string to float", naming no parameter."""
    import numpy as np
    import pandas as pd

    values = [1, 3, 2, 5, 4, 7, 8, 6.0]
    with pytest.raises(ValueError, match=r"^along: 'enc\.0' \(str\) is no number; give an array of numbers") as info:
        metrics.monotonic_trend([f"enc.{i}" for i in range(8)], values)
    _one_line(info)
    frame = pd.DataFrame(np.random.default_rng(1).normal(size=(30, 4)) + 1, columns=list("abcd"))
    frame["e"] = "x"
    with pytest.raises(ValueError, match=r"^x: 'x' \(str\) is no number"):
        metrics.mean_cosine(frame)
    assert metrics.monotonic_trend([str(i) for i in range(8)], values).coefficient == pytest.approx(0.8809523809523808)


def test_points_for_power_is_the_fewest_points_not_the_first_step_that_reaches_the_power():
    """``points_for_power(0.55)`` answered 27 (its steps above 16 points went 24, 27, 30) where 26 points already
    have power 0.80 >= 0.8: the fewest is now searched point by point back from the step that reached it."""
    n = metrics.points_for_power(0.55)
    assert metrics.correlation_power(n, 0.55) >= metrics.POWER_REQUIRED > metrics.correlation_power(n - 1, 0.55)
    assert n == 26


@pytest.mark.parametrize("effect", [5.0, float("nan"), -1.0])
def test_points_for_power_refuses_an_effect_outside_a_correlation_even_where_no_estimate_is_made(effect):
    with pytest.raises(ValueError, match="effect"):
        metrics.points_for_power(effect, start=10, limit=5)
