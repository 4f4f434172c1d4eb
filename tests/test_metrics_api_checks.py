"""aniso.metrics at the edges of its input: the Pearson test at any scale, arrays that are not plain dense arrays
(masked, sparse, meta-device, complex), degenerate sizes and misspelt options. Each gives the value of the data or
one line naming the parameter, never a value that silently drops part of the input."""

import math

import numpy as np
import pytest
import scipy.stats
import torch

from aniso import metrics

X6 = np.arange(6.0)
Y6 = np.array([1, 3, 2, 5, 4, 6.0])


@pytest.mark.parametrize("scale", [1e-13, 1e-150, 1e-310])
def test_pearson_of_a_series_of_small_values_is_not_constant(scale):
    expected = scipy.stats.pearsonr(X6, Y6).statistic
    one = metrics.correlation_test(X6 * scale, Y6, "pearson")
    assert one.coefficient == pytest.approx(expected, rel=1e-12) and one.p_value == pytest.approx(1 / 30)
    assert one.p_method.startswith("exact")
    coef, p = metrics.correlation_tests(np.array([X6 * scale]), np.array([Y6]), "pearson")
    assert coef[0] == pytest.approx(expected, rel=1e-12) and p[0] == pytest.approx(1 / 30)


@pytest.mark.parametrize("scale", [1e200, 1e307, 1e-200])
def test_pearson_is_scale_invariant_at_any_magnitude(scale):
    reference = metrics.correlation_test(X6, Y6, "pearson")
    for c in (metrics.correlation_test(X6 * scale, Y6 * scale, "pearson"),
              metrics.drift_correlation(X6 * scale, Y6 * scale, "pearson")):
        assert c.coefficient == pytest.approx(reference.coefficient, rel=1e-12)
        assert c.p_value == pytest.approx(reference.p_value)


@pytest.mark.parametrize("value", [1e-13, 3.3e200, 0.0, 1.0])
def test_pearson_of_a_constant_series_is_nan_at_any_magnitude(value):
    c = metrics.correlation_test(np.full(6, value), Y6, "pearson")
    assert math.isnan(c.coefficient) and math.isnan(c.p_value) and c.p_method.startswith("none")
    rounded = np.array([0.1 + 0.2, 0.3, 0.3, 0.1 * 3, 0.3, 0.3])  # equal to rounding
    assert math.isnan(metrics.correlation_test(rounded, Y6, "pearson").coefficient)


RNG = np.random.default_rng(7)
X = RNG.normal(size=(20, 4)) + 1
MASKED = np.ma.masked_array(np.vstack([X, 1e6 * np.ones((2, 4))]),
                            mask=np.vstack([np.zeros((20, 4), bool), np.ones((2, 4), bool)]))
C = X.T @ X
#: Every public function of aniso.metrics that reads an array, with how it is called on ``a`` (the argument named).
ARRAY_ENTRIES = {
    "mean_cosine": (lambda a: metrics.mean_cosine(a), "x"),
    "mean_cosine_sampled": (lambda a: metrics.mean_cosine_sampled(a, 10, 0), "x"),
    "unit_rows": (lambda a: metrics.unit_rows(a), "x"),
    "drift_norm": (lambda a: metrics.drift_norm(a), "x"),
    "svd_anisotropy": (lambda a: metrics.svd_anisotropy(a), "x"),
    "isoscore": (lambda a: metrics.isoscore(a), "x"),
    "twonn_dimension": (lambda a: metrics.twonn_dimension(a), "x"),
    "two_nearest_neighbours": (lambda a: metrics.two_nearest_neighbours(a), "x"),
    "unique_rows": (lambda a: metrics.unique_rows(a), "x"),
    "partition_isotropy": (lambda a: metrics.partition_isotropy(a), "W"),
    "partition_isotropies": (lambda a: metrics.partition_isotropies(a), "W"),
    "largest_eigenvalue": (lambda a: metrics.largest_eigenvalue(a), "c"),
}
VECTOR_ENTRIES = {
    "mean_cosine_from_unit_sum": (lambda v: metrics.mean_cosine_from_unit_sum(v, 50), "unit_sum"),
    "drift_norm_from_sum": (lambda v: metrics.drift_norm_from_sum(v, 4), "vector_sum"),
    "isoscore_from_eigenvalues": (lambda v: metrics.isoscore_from_eigenvalues(v), "eigenvalues"),
    "svd_anisotropy_from_moments": (lambda v: metrics.svd_anisotropy_from_moments(v, np.eye(v.shape[0]), 4),
                                    "vector_sum"),
    "dimension_contributions": (lambda v: metrics.dimension_contributions(v, np.ones(v.shape[0]), 4), "unit_sum"),
    "correlation_test": (lambda v: metrics.correlation_test(v, np.arange(v.shape[0])), "x"),
    "drift_correlation": (lambda v: metrics.drift_correlation(v, np.arange(v.shape[0])), "drift_norms"),
    "monotonic_trend": (lambda v: metrics.monotonic_trend(v, np.arange(v.shape[0])), "along"),
    "correlation_tests": (lambda v: metrics.correlation_tests(v.reshape(1, -1), np.arange(v.shape[0])[None]), "x"),
}


@pytest.mark.parametrize("entry", sorted(ARRAY_ENTRIES))
def test_a_masked_array_with_masked_values_is_refused_at_every_array_entry(entry):
    call, name = ARRAY_ENTRIES[entry]
    with pytest.raises(TypeError, match=rf"^{name}: a numpy masked array with 8 masked value\(s\)"):
        call(MASKED)
    assert metrics.mean_cosine(np.ma.masked_array(X)) == metrics.mean_cosine(X)  # nothing masked: the values


@pytest.mark.parametrize("entry", sorted(VECTOR_ENTRIES))
def test_a_masked_vector_is_refused_at_every_vector_entry(entry):
    call, name = VECTOR_ENTRIES[entry]
    v = np.ma.masked_array([0.5, 1.0, 0.25, 2.0], mask=[0, 0, 0, 1])
    with pytest.raises(TypeError, match=rf"^{name}: a numpy masked array with 1 masked value\(s\)"):
        call(v)


@pytest.mark.parametrize("entry", sorted(ARRAY_ENTRIES))
def test_a_sparse_matrix_is_refused_at_every_array_entry(entry):
    import scipy.sparse

    call, name = ARRAY_ENTRIES[entry]
    for sparse in (scipy.sparse.csr_matrix(X), scipy.sparse.coo_array(X)):
        with pytest.raises(TypeError, match=rf"^{name}: a scipy.sparse \w+; give a dense array \({name}.toarray\(\)\)"):
            call(sparse)
    with pytest.raises(TypeError, match=rf"^{name}: a sparse tensor \(sparse_coo\); give a dense one"):
        call(torch.tensor(X).to_sparse())


@pytest.mark.parametrize("entry", sorted(ARRAY_ENTRIES))
def test_a_meta_tensor_is_refused_at_every_array_entry(entry):
    call, name = ARRAY_ENTRIES[entry]
    with pytest.raises(ValueError, match=rf"^{name}: a tensor on the meta device, which holds no values"):
        call(torch.empty(4, 4, device="meta"))


@pytest.mark.parametrize("entry", sorted(ARRAY_ENTRIES))
def test_a_ragged_list_is_refused_naming_the_argument(entry):
    call, name = ARRAY_ENTRIES[entry]
    with pytest.raises(ValueError, match=rf"^{name}: a list whose rows differ in length"):
        call([[1.0, 2.0], [3.0]])


@pytest.mark.parametrize("entry", sorted(VECTOR_ENTRIES))
def test_a_meta_or_sparse_vector_is_refused_naming_the_argument(entry):
    import scipy.sparse

    call, name = VECTOR_ENTRIES[entry]
    with pytest.raises(ValueError, match=rf"^{name}: a tensor on the meta device"):
        call(torch.empty(4, device="meta"))
    with pytest.raises(TypeError, match=rf"^{name}: a scipy.sparse"):
        call(scipy.sparse.csr_array(np.ones((1, 4))))


@pytest.mark.parametrize("w", [np.array([[1 + 1j, 0], [0, 1]]), torch.tensor([[1 + 1j, 0], [0, 1]])])
def test_partition_isotropy_refuses_complex_input(w):
    with pytest.raises(TypeError, match=r"^W: a complex (array|tensor); give real vectors"):
        metrics.partition_isotropy(w)
    with pytest.raises(TypeError, match=r"^W: a complex"):
        metrics.partition_isotropies(w)


def test_twonn_counts_a_point_given_with_minus_zero_once():
    """-0.0 and 0.0 are one point: the NumPy path de-duplicates by value, as the torch path does."""
    z = np.random.default_rng(2).normal(size=(400, 5))
    z[0, 0] = 0.0
    twice = np.vstack([z, z[:1] * np.array([-1.0, 1, 1, 1, 1])])  # the first point again, with -0.0
    assert np.signbit(twice[-1, 0]) and not np.signbit(twice[0, 0])
    expected = metrics.twonn_dimension(z)
    assert metrics.twonn_dimension(twice) == pytest.approx(expected, rel=1e-12)
    assert metrics.twonn_dimension(torch.tensor(twice)) == pytest.approx(expected, rel=1e-12)
    assert metrics.unique_rows(twice).shape == (400, 5)


@pytest.mark.parametrize("x", [np.array([1.0, 2.0, 1.0]), torch.tensor([1.0, 1.0, 2.0])])
def test_unique_rows_of_a_vector_is_refused(x):
    with pytest.raises(ValueError, match=r"^x must be a 2-D array of shape \(n, d\), got shape \(3,\)"):
        metrics.unique_rows(x)


def test_dimension_contributions_refuses_what_is_not_a_sum_of_squared_unit_vectors():
    a = np.random.default_rng(2).normal(size=(100, 6)) * np.array([5, 1, 1, 1, 0.1, 0.1])
    u = a / np.linalg.norm(a, axis=1, keepdims=True)
    assert metrics.dimension_contributions(u.sum(0), (u * u).sum(0), 100).sum() == pytest.approx(metrics.mean_cosine(a))
    u32 = u.astype(np.float32)  # float32 unit vectors: rounding is taken
    assert metrics.dimension_contributions(u32.sum(0), (u32 * u32).sum(0), 100).sum() == pytest.approx(
        metrics.mean_cosine(a), abs=1e-6)
    with pytest.raises(ValueError, match=r"^unit_square_sum: its entries sum to 2551.7.*summing to n"):
        metrics.dimension_contributions(u.sum(0), (a * a).sum(0), 100)
    with pytest.raises(ValueError, match=r"^unit_square_sum: its entries sum to -100 and one is -69.17"):
        metrics.dimension_contributions(u.sum(0), -(u * u).sum(0), 100)


@pytest.mark.parametrize("call", [lambda c: metrics.largest_eigenvalue(c), lambda c: metrics.largest_eigenpair(c),
                                  lambda c: metrics.largest_eigenpairs(c.reshape(1, 0, 0))])
def test_a_0_by_0_matrix_is_refused_naming_c(call):
    with pytest.raises(ValueError, match=r"^c: a 0 × 0 matrix has no eigenvalue"):
        call(torch.ones(0, 0))
    assert metrics.largest_eigenpairs(torch.ones(0, 3, 3))[0].shape == (0,)  # an empty stack: nothing to refuse


@pytest.mark.parametrize("steps", [-1, 0])
def test_max_steps_below_1_is_refused(steps):
    c = torch.tensor(np.random.default_rng(1).normal(size=(200, 200))).matmul(
        torch.tensor(np.random.default_rng(1).normal(size=(200, 200))).T)
    for call in (metrics.largest_eigenpair, metrics.largest_eigenvalue,
                 lambda c, **k: metrics.largest_eigenpairs(c[None], **k)):
        with pytest.raises(ValueError, match=rf"^max_steps: {steps}; give a whole number >= 1"):
            call(c, max_steps=steps)


def test_a_misspelt_option_of_largest_eigenvalue_is_named_with_the_one_meant():
    with pytest.raises(TypeError, match=r"^largest_eigenvalue: no option 'tol' \(did you mean 'rtol'\?\); its options "
                                        r"are rtol, max_steps, seed, min_size"):
        metrics.largest_eigenvalue(torch.eye(3), tol=1e-3)
    assert float(metrics.largest_eigenvalue(torch.eye(3, dtype=torch.float64) * 2, rtol=1e-3)) == 2.0


def test_isotropic_cos_std_at_any_whole_dimension():
    assert metrics.isotropic_cos_std(10**400) == pytest.approx(1e-200, rel=1e-15, abs=0)
    assert metrics.isotropic_cos_std(10**200) == pytest.approx(1e-100, rel=1e-15, abs=0)
    assert metrics.isotropic_cos_std(2**300) == metrics.isotropic_cos_std(2**300 - 1) == pytest.approx(
        2.0**-150, rel=1e-15, abs=0)
    assert metrics.isotropic_cos_std(10**1000) == 0.0
    assert metrics.isotropic_cos_std(384) == pytest.approx(1 / math.sqrt(384), rel=1e-15)
    with pytest.raises(ValueError, match=r"^d: about 10\^399; give a whole number below 2\^1023"):
        metrics.isotropic_cos_quantile(10**399)


@pytest.mark.parametrize("x, said", [
    (np.zeros((0, 5)), "got 0 rows$"),
    (np.zeros((5, 0)), r"got 5 rows, all 5 of them zero \(a zero row has no direction\)"),
    (np.zeros((4, 3)), r"got 4 rows, all 4 of them zero"),
    (np.array([[1.0, 0.0], [0.0, 0.0]]), r"got 2 rows, 1 of them zero"),
    (np.array([[1.0, 0.0]]), "got 1 row$")])
def test_mean_cosine_of_too_few_non_zero_rows_names_x(x, said):
    for call in (metrics.mean_cosine, lambda x: metrics.mean_cosine_sampled(x, 10, 0)):
        with pytest.raises(ValueError, match=rf"^x: mean cosine needs at least 2 non-zero rows, {said}"):
            call(x)


def test_a_read_only_array_is_measured_without_a_warning():
    import warnings

    x = np.random.default_rng(0).normal(size=(50, 4))
    for dtype in (np.float32, np.float64):
        ro = x.astype(dtype)
        ro.flags.writeable = False
        c = (x.T @ x).astype(dtype)
        c.flags.writeable = False
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert metrics.twonn_dimension(ro) == metrics.twonn_dimension(x.astype(dtype).copy())
            assert float(metrics.largest_eigenvalue(c)) == pytest.approx(float(np.linalg.eigvalsh(x.T @ x)[-1]),
                                                                         rel=1e-5)
            metrics.partition_isotropy(ro)


def test_svd_anisotropy_says_why_distinct_rows_within_rounding_give_nan():
    x = np.ones((5, 3)) + np.random.default_rng(5).normal(size=(5, 3)) * 1e-13
    with pytest.warns(RuntimeWarning, match=r"^x: the rows differ, but their centred spread is [0-9.e-]+ of their "
                                            r"size, below 1e-12"):
        assert math.isnan(metrics.svd_anisotropy(x))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(metrics.svd_anisotropy(np.ones((5, 3))))  # identical rows: NaN, as documented


@pytest.mark.parametrize("seed", [2, 3])
def test_isoscore_of_rows_without_spread_is_nan_as_svd_anisotropy(seed):
    import warnings

    rng = np.random.default_rng(seed)
    identical = np.tile(rng.normal(size=5), (5, 1))  # a mean that is not exact: the covariance is rounding alone
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(metrics.isoscore(identical))
        assert math.isnan(metrics.svd_anisotropy(identical))
    within = np.tile(rng.normal(size=5) * 1e3, (50, 1)) + rng.normal(size=(50, 5)) * 1e-13
    for measure, name in ((metrics.isoscore, "IsoScore"), (metrics.svd_anisotropy, "SVD anisotropy")):
        with pytest.warns(RuntimeWarning, match=r"^x: the rows differ, but their centred spread is [0-9.e-]+ of "
                                                rf"their size, below 1e-12: .*; {name} NaN$"):
            assert math.isnan(measure(within))
    assert 0.5 < metrics.isoscore(rng.normal(size=(50, 5)) * 1e-13) <= 1  # the spread itself is measured


@pytest.mark.parametrize("d", [2**32, 10**12, 10**30, 10**300])
@pytest.mark.parametrize("q", [0.95, 0.05, 0.7])
def test_isotropic_cos_quantile_keeps_its_precision_at_huge_widths(d, q):
    expected = scipy.stats.norm.ppf(q) / math.sqrt(d)  # the normal limit: cos ≈ N(0, 1/d), error O(1/d)
    assert metrics.isotropic_cos_quantile(d, q) == pytest.approx(expected, rel=1e-9, abs=0)


def test_isotropic_cos_quantile_below_2_to_the_32_is_unchanged():
    from scipy.special import betaincinv

    for d in (2, 3, 384, 4096, 10**6, 2**32 - 1):
        a = (d - 1) / 2
        assert metrics.isotropic_cos_quantile(d) == float(2 * betaincinv(a, a, 0.95) - 1)


def test_correlation_tests_of_two_1d_series_says_they_are_1d_and_points_to_correlation_test():
    """It said "need two (B, n) arrays of equal shape, got (6,) and (6,)": equal shapes, refused as unequal."""
    with pytest.raises(ValueError) as caught:
        metrics.correlation_tests(X6, Y6)
    assert str(caught.value) == ("x, y: shapes (6,) and (6,) are 1-D; correlation_tests takes batches of series (B, n):"
                                 " give x[None] and y[None], or use correlation_test for one pair")
