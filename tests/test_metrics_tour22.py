"""The public functions of aniso.metrics refuse arguments outside their domain in one line naming the parameter,
and take what they document (tensors, int seeds); TwoNN is scale invariant at any finite magnitude."""

import numpy as np
import pytest
import torch

from aniso import metrics


def _x():
    return np.random.default_rng(0).standard_normal((50, 8)) + 1


def _one_line(excinfo, *words):
    text = str(excinfo.value)
    assert "\n" not in text
    for word in words:
        assert word in text, (word, text)


def test_mean_cosine_from_unit_sum_refuses_what_is_no_sum_of_unit_vectors():
    x = _x()
    with pytest.raises(ValueError) as e:  # the raw sum: was 1.0 (clamped)
        metrics.mean_cosine_from_unit_sum(x.sum(0), 50)
    _one_line(e, "unit_sum", "2500", "unit vectors")
    with pytest.raises(TypeError) as e:  # was 0.1333
        metrics.mean_cosine_from_unit_sum(np.ones(3), 2.5)
    _one_line(e, "n", "2.5")
    with pytest.raises(TypeError) as e:
        metrics.mean_cosine_from_unit_sum(np.ones(3), True)
    _one_line(e, "n", "True")
    with pytest.raises(ValueError) as e:  # was numpy's "only 0-dimensional arrays …"
        metrics.mean_cosine_from_unit_sum(np.ones((3, 3)), 3)
    _one_line(e, "unit_sum", "(3, 3)")
    u, _ = metrics.unit_rows(x)  # the sum of unit vectors is taken as before, rounding included
    assert metrics.mean_cosine_from_unit_sum(u.sum(0), 50) == metrics.mean_cosine(x)
    same = np.tile(u[:1], (50, 1))
    assert metrics.mean_cosine_from_unit_sum(same.sum(0) * (1 + 1e-9), 50) == 1.0


def test_mean_cosine_takes_tensors_and_refuses_complex_input():
    x = _x()
    expected = metrics.mean_cosine(x)
    assert metrics.mean_cosine(torch.tensor(x, requires_grad=True)) == expected
    bf16 = torch.tensor(x).bfloat16()
    assert metrics.mean_cosine(bf16) == metrics.mean_cosine(bf16.float().numpy())
    with pytest.raises(TypeError) as e:
        metrics.mean_cosine(x * (1 + 1j))
    _one_line(e, "x", "complex")
    with pytest.raises(TypeError) as e:
        metrics.twonn_dimension(torch.randn(100, 4, dtype=torch.complex64))
    _one_line(e, "x", "complex")


def test_mean_cosine_sampled_takes_an_int_seed_and_bounds_n_pairs():
    x = _x()
    assert metrics.mean_cosine_sampled(x, 100, 0) == metrics.mean_cosine_sampled(x, 100, np.random.default_rng(0))
    with pytest.raises(TypeError) as e:
        metrics.mean_cosine_sampled(x, 100, "0")
    _one_line(e, "rng", "Generator")
    with pytest.raises(ValueError) as e:  # was a MemoryError (7.28 TiB)
        metrics.mean_cosine_sampled(x, 10**12, np.random.default_rng(0))
    _one_line(e, "n_pairs", "1000000000000")


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # numpy.matrix, refused
def test_a_matrix_that_is_not_symmetric_is_refused():
    x = _x()
    gram = x.T @ x
    with pytest.raises(ValueError) as e:  # was 0.42498
        metrics.svd_anisotropy_from_moments(x.sum(0), gram + 100 * np.triu(np.ones((8, 8))), 50)
    _one_line(e, "gram", "symmetric")
    assert metrics.svd_anisotropy_from_moments(x.sum(0), gram, 50) == pytest.approx(metrics.svd_anisotropy(x))
    with pytest.raises(ValueError) as e:  # was 6.0
        metrics.largest_eigenvalue(torch.tensor([[1.0, 0.0], [5.0, 1.0]]))
    _one_line(e, "c", "symmetric")
    assert float(metrics.largest_eigenvalue(np.eye(4) * 2)) == 2.0  # a NumPy array is read as a tensor
    with pytest.raises(TypeError) as e:
        metrics.largest_eigenvalue(np.matrix(np.eye(4)))
    _one_line(e, "c", "matrix")


def test_twonn_refuses_a_discard_fraction_that_leaves_too_few_ratios_or_is_no_number():
    p = np.random.default_rng(1).standard_normal((200, 8))
    with pytest.raises(ValueError) as e:  # was 2.866, a fit through one ratio
        metrics.twonn_dimension(p, discard_fraction=0.995)
    _one_line(e, "discard_fraction", "keeps 1 of 200", str(metrics.TWONN_MIN_RATIOS))
    with pytest.raises(TypeError) as e:
        metrics.twonn_dimension(p, "0.1")
    _one_line(e, "discard_fraction", "'0.1'")
    with pytest.raises(ValueError) as e:  # was "at least 3 distinct points, got 1"
        metrics.twonn_dimension(np.zeros((100, 0)))
    _one_line(e, "x", "column", "(100, 0)")
    assert metrics.twonn_dimension(p[:3]) > 0  # the fewest points still give their 2 ratios


def test_twonn_is_scale_invariant_at_any_finite_magnitude():
    p = np.random.default_rng(2).standard_normal((500, 4))
    base = metrics.twonn_dimension(p)
    assert metrics.twonn_dimension(p * 2.0**60) == base
    assert metrics.twonn_dimension(p * 2.0**-100) == base
    for scale in (1e20, 1e-30, 1e-160, 1e150):  # were 4.34 at 1e20, 3.39 at 1e-30
        assert metrics.twonn_dimension(p * scale) == pytest.approx(base, rel=1e-9), scale
    r1, r2 = metrics.two_nearest_neighbours(p * 1e20)
    s1, s2 = metrics.two_nearest_neighbours(p)
    assert r1 == pytest.approx(s1 * 1e20, rel=1e-12) and r2 == pytest.approx(s2 * 1e20, rel=1e-12)


def test_isotropic_cos_quantile_needs_a_whole_dimension():
    assert metrics.isotropic_cos_quantile(384.0) == metrics.isotropic_cos_quantile(384)
    for d in (2.5, float("nan")):
        with pytest.raises(TypeError) as e:
            metrics.isotropic_cos_quantile(d)
        _one_line(e, "d", str(d))
    with pytest.raises(TypeError) as e:
        metrics.isotropic_cos_std(2.5)
    _one_line(e, "d", "2.5")
    with pytest.raises(ValueError) as e:
        metrics.isotropic_cos_quantile(1)
    _one_line(e, "d", "1")


def test_correlation_test_checks_its_orderings_settings():
    x = np.arange(15.0)
    y = np.random.default_rng(3).standard_normal(15)
    for bad in (0, -3):  # 0 was read as "not given" (9,999 orderings); -3 was numpy's concatenate error
        with pytest.raises(ValueError) as e:
            metrics.correlation_test(x, y, n_resamples=bad)
        _one_line(e, "n_resamples", str(bad))
    with pytest.raises(ValueError) as e:
        metrics.correlation_test(x, y, seed=-1)
    _one_line(e, "seed", "-1")
    with pytest.raises(TypeError) as e:
        metrics.correlation_test(x, y, seed=1.5)
    _one_line(e, "seed", "1.5")
    with pytest.raises(ValueError) as e:  # was silently capped at 10
        metrics.correlation_test(np.arange(12.0), y[:12], exact_max_n=12)
    _one_line(e, "exact_max_n", "12", str(metrics.EXACT_MAX_N))
    with pytest.raises(ValueError) as e:
        metrics.correlation_tests(x[None], y[None], n_resamples=0)
    _one_line(e, "n_resamples", "0")
    c = metrics.correlation_test(x, y, seed=np.int64(4), n_resamples=999)
    assert c.n_permutations == 999 and c.seed == 4


def test_mc_orderings_for_and_derive_seed_refuse_values_outside_their_domain():
    for bad in (float("nan"), -0.5, 1.5):  # NaN and -0.5 gave 1,598,400
        with pytest.raises(ValueError) as e:
            metrics.mc_orderings_for(bad)
        _one_line(e, "p_value")
    assert metrics.mc_orderings_for(0.5) == metrics.mc_orderings_for(0.5, metrics.N_PERMUTATIONS)
    with pytest.raises(TypeError) as e:  # was the seed of base 1
        metrics.derive_seed(1.5, "a")
    _one_line(e, "base", "1.5")
    assert metrics.derive_seed(np.int64(1), "a") == metrics.derive_seed(1, "a")


def test_a_constant_series_has_no_correlation_and_leaves_its_claim_undecided():
    from aniso.judge.rules import underpowered

    c = metrics.correlation_test(np.ones(6), np.arange(6.0))  # was coefficient 0, p-value 1 (scipy: nan, nan)
    assert np.isnan(c.coefficient) and np.isnan(c.p_value) and "constant" in c.p_method
    assert np.isnan(metrics.monotonic_trend(np.arange(12.0), np.full(12, 0.5), "greater").p_value)
    assert np.isnan(metrics.drift_correlation(np.arange(5.0), np.ones(5), "pearson").p_value)
    why, _ = underpowered(c, "layers", 0.7)  # the deciding callers state it: no verdict "holds" or "does not hold"
    assert why is not None and "constant" in why and "\n" not in why
    from scipy import stats

    x, y = np.arange(6.0), np.array([1.0, 3, 2, 5, 4, 6])  # a series that varies: as before, scipy's exact p
    expected = stats.permutation_test((y,), lambda v, axis=-1: np.corrcoef(x, v)[0, 1], vectorized=False,
                                      permutation_type="pairings", n_resamples=np.inf).pvalue
    assert metrics.correlation_test(x, y).p_value == pytest.approx(expected, rel=1e-12)
