"""Properties of the metric functions (Hypothesis) and a few exact cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import special_ortho_group

from aniso import metrics


@st.composite
def point_sets(draw, min_n=2, max_n=40, min_d=2, max_d=12):
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(min_d, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.floats(0.1, 10.0))
    shift = draw(st.floats(-3.0, 3.0))
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * scale + shift


def brute_force_mean_cosine(x: np.ndarray) -> float:
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = u @ u.T
    n = len(x)
    return float((c.sum() - np.trace(c)) / (n * (n - 1)))


def rotation(d: int, seed: int) -> np.ndarray:
    return special_ortho_group.rvs(d, random_state=seed) if d > 1 else np.eye(1)


@given(point_sets())
def test_mean_cosine_equals_brute_force(x):
    assert metrics.mean_cosine(x) == pytest.approx(brute_force_mean_cosine(x), abs=1e-10)


@given(point_sets(), st.integers(0, 1000), st.data())
def test_mean_cosine_invariant_to_rotation_and_positive_scaling(x, seed, data):
    scales = np.array(data.draw(st.lists(st.floats(1e-3, 1e3), min_size=len(x), max_size=len(x))))
    q = rotation(x.shape[1], seed)
    base = metrics.mean_cosine(x)
    assert metrics.mean_cosine(x @ q.T) == pytest.approx(base, abs=1e-9)
    assert metrics.mean_cosine(x * scales[:, None]) == pytest.approx(base, abs=1e-9)


@given(point_sets())
def test_mean_cosine_within_bounds(x):
    n = len(x)
    value = metrics.mean_cosine(x)
    assert -1 / (n - 1) - 1e-12 <= value <= 1 + 1e-12


@given(point_sets(min_n=3))
def test_mean_cosine_tends_to_one_as_common_bias_grows(x):
    rng = np.random.default_rng(0)
    b = rng.standard_normal(x.shape[1])
    b /= np.linalg.norm(b)
    values = [metrics.mean_cosine(x + t * b) for t in (1e2, 1e4, 1e6)]
    assert values[-1] > 1 - 1e-6
    assert values[0] <= values[1] + 1e-9 <= values[2] + 2e-9


def test_mean_cosine_excludes_zero_vectors():
    x = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    assert metrics.mean_cosine(x) == pytest.approx(1.0)
    assert metrics.unit_rows(x)[1] == 1
    with pytest.raises(ValueError, match="at least 2"):
        metrics.mean_cosine(np.array([[0.0, 0.0], [1.0, 2.0]]))


def test_mean_cosine_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        metrics.mean_cosine(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        metrics.mean_cosine(np.array([[1.0, np.nan], [1.0, 2.0]]))


def test_sampled_mean_cosine_is_close_to_exact():
    x = np.random.default_rng(1).standard_normal((300, 8)) + 0.5
    exact = metrics.mean_cosine(x)
    sampled = metrics.mean_cosine_sampled(x, 200_000, np.random.default_rng(2))
    assert sampled == pytest.approx(exact, abs=0.01)


@given(point_sets())
def test_drift_norm_is_norm_of_mean(x):
    assert metrics.drift_norm(x) == pytest.approx(float(np.linalg.norm(x.mean(axis=0))), rel=1e-12, abs=1e-12)
    assert metrics.drift_norm_from_sum(x.sum(axis=0), len(x)) == pytest.approx(metrics.drift_norm(x), rel=1e-12,
                                                                               abs=1e-12)


@given(point_sets(min_n=3))
def test_svd_anisotropy_bounds_and_moments(x):
    value = metrics.svd_anisotropy(x)
    rank = np.linalg.matrix_rank(x - x.mean(axis=0))
    assume(rank >= 1)
    assert 1 / rank - 1e-9 <= value <= 1 + 1e-12
    streamed = metrics.svd_anisotropy_from_moments(x.sum(axis=0), x.T @ x, len(x))
    assert streamed == pytest.approx(value, rel=1e-6, abs=1e-9)


@given(point_sets(min_n=3), st.integers(0, 1000), st.floats(1e-2, 1e2))
def test_svd_anisotropy_rotation_and_scale_invariant(x, seed, scale):
    q = rotation(x.shape[1], seed)
    base = metrics.svd_anisotropy(x)
    assert metrics.svd_anisotropy(x @ q.T) == pytest.approx(base, rel=1e-7, abs=1e-9)
    assert metrics.svd_anisotropy(x * scale) == pytest.approx(base, rel=1e-7, abs=1e-9)


@given(st.integers(3, 50), st.integers(2, 10), st.integers(0, 1000))
def test_svd_anisotropy_is_one_for_rank_one_data(n, d, seed):
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(n)
    assume(np.ptp(t) > 1e-3)
    x = rng.standard_normal(d) + t[:, None] * rng.standard_normal(d)
    assert metrics.svd_anisotropy(x) == pytest.approx(1.0, abs=1e-9)


def test_svd_anisotropy_of_identical_vectors_is_nan():
    assert math.isnan(metrics.svd_anisotropy(np.ones((5, 3))))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(0, 1000), st.sampled_from(["subspace", "sphere"]))
def test_twonn_recovers_known_dimension(k, seed, kind):
    """Points on a k-dim linear subspace or a k-sphere embedded in ℝ^30: TwoNN within 20% (+0.3) of k."""
    rng = np.random.default_rng(seed)
    n = 2000
    if kind == "subspace":
        z = rng.uniform(-1, 1, size=(n, k))
        true_dim = k
        emb = np.linalg.qr(rng.standard_normal((30, k)))[0]
    else:
        z = rng.standard_normal((n, k + 1))
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        true_dim = k
        emb = np.linalg.qr(rng.standard_normal((30, k + 1)))[0]
    x = z @ emb.T
    est = metrics.twonn_dimension(x)
    assert abs(est - true_dim) <= 0.2 * true_dim + 0.3


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 1000), st.floats(1e-2, 1e2))
def test_twonn_rotation_and_scale_invariant(seed, scale):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((400, 3)) @ rng.standard_normal((3, 8))
    q = rotation(8, seed)
    base = metrics.twonn_dimension(x)
    assert metrics.twonn_dimension(x @ q.T) == pytest.approx(base, rel=1e-6)
    assert metrics.twonn_dimension(x * scale) == pytest.approx(base, rel=1e-6)


def test_twonn_handles_duplicates():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 2)) @ rng.standard_normal((2, 10))
    with_dupes = np.concatenate([x, x[:100], x[:10]])
    est = metrics.twonn_dimension(with_dupes)
    assert math.isfinite(est)
    assert est == pytest.approx(metrics.twonn_dimension(x))
    with pytest.raises(ValueError, match="3 distinct"):
        metrics.twonn_dimension(np.ones((10, 4)))


def _brute_two_nearest(x):
    from scipy.spatial.distance import cdist

    dist = cdist(x, x)
    np.fill_diagonal(dist, np.inf)
    two = np.partition(dist, 1, axis=1)[:, :2]
    return two[:, 0], two[:, 1]


def _points_of_kind(rng, n, d, kind):
    """Hard cases for the float32 screening: far from the origin (cancellation), a grid (exact ties), a massive
    feature (one column 10³-10⁴ times the others on some or all rows, as in decoder models), duplicates."""
    if kind == "grid":
        return rng.integers(0, 4, size=(n, d)).astype(float)
    x = rng.standard_normal((n, d))
    if kind == "offset":
        return x * 1e-3 + 1e4
    if kind in ("massive", "massive-all"):
        rows = rng.random(n) < (1.0 if kind == "massive-all" else 0.5)
        x[rows, 0] = 10 ** rng.uniform(3, 4) * (1 + 0.01 * rng.standard_normal(rows.sum()))
        return x
    if kind == "duplicates":
        return np.concatenate([x, x[: n // 3]])
    return x


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 600), st.integers(1, 40),
       st.sampled_from(["gauss", "offset", "grid", "massive", "massive-all", "duplicates"]))
def test_two_nearest_neighbours_are_exact(seed, n, d, kind):
    """The float32 search with its float64 re-check gives the float64 brute-force distances to 1e-9, also far
    from the origin (cancellation), on a grid (many exact ties) and with a massive feature."""
    x = metrics.unique_rows(_points_of_kind(np.random.default_rng(seed), n, d, kind))
    assume(len(x) >= 3)
    r1, r2 = metrics.two_nearest_neighbours(x)
    b1, b2 = _brute_two_nearest(x)
    scale = np.abs(x - x.mean(0)).max() + 1
    assert np.allclose(r1, b1, rtol=1e-9, atol=1e-12 * scale) and np.allclose(r2, b2, rtol=1e-9, atol=1e-12 * scale)
    assert np.all(r1 <= r2)


def _brute_twonn(x, discard_fraction=0.1):
    """TwoNN from float64 brute-force distances (the definition, without the suite's search)."""
    x = metrics.unique_rows(np.asarray(x, dtype=float))
    r1, r2 = _brute_two_nearest(x)
    n = len(x)
    mu = np.sort(r2 / r1)
    keep = min(int(math.floor(n * (1 - discard_fraction))), n - 1)
    log_mu = np.log(mu[:keep])
    y = -np.log1p(-np.arange(1, n + 1)[:keep] / n)
    return float(log_mu @ y / (log_mu @ log_mu))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(20, 600), st.integers(2, 30),
       st.sampled_from(["gauss", "offset", "massive", "massive-all", "duplicates"]))
def test_twonn_equals_float64_brute_force(torch_device, seed, n, d, kind):
    """The estimate equals the one from exact float64 distances to 1e-9 (relative), from NumPy and from a
    torch tensor alike, on the CPU and on a GPU where present."""
    x = _points_of_kind(np.random.default_rng(seed), n, d, kind)
    want = _brute_twonn(x)
    assert metrics.twonn_dimension(x) == pytest.approx(want, rel=1e-9)
    assert metrics.twonn_dimension(torch.from_numpy(x).to(torch_device)) == pytest.approx(want, rel=1e-9)


def test_massive_feature_keeps_the_float32_screen(monkeypatch):
    """Points with a column ~10³ times the others that does not separate them into groups (its values spread
    continuously, 3,000 ± 30%): the massive column is split off, so few rows fail the float32 screen of 4
    candidates; left in the float32 product, most rows do. Both exact."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 64))
    x[:, 0] = 3e3 * (1 + 0.3 * rng.standard_normal(2000))
    b1, b2 = _brute_two_nearest(x)
    recheck = metrics._recheck
    for ratio, most in ((metrics._MASSIVE_RATIO, 100), (math.inf, 2000)):
        calls = []
        monkeypatch.setattr(metrics, "_MASSIVE_RATIO", ratio)
        monkeypatch.setattr(metrics, "_NN_WIDE", metrics._NN_CANDIDATES)  # every unsure row of the screen counted
        monkeypatch.setattr(metrics, "_recheck", lambda rows, *a: calls.append(rows.numel()) or recheck(rows, *a))
        r1, r2 = metrics.two_nearest_neighbours(x)
        monkeypatch.undo()
        assert np.allclose(r1, b1, rtol=1e-9) and np.allclose(r2, b2, rtol=1e-9)
        assert calls[0] <= most and (ratio != math.inf or calls[0] >= 1500), calls


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 500), st.integers(2, 24), st.sampled_from([1, 2]),
       st.sampled_from([6.0, 30.0, 3e3]), st.booleans())
def test_two_nearest_neighbours_in_separated_groups_are_exact(seed, n, d, columns, gap, float32):
    """Massive columns whose values fall into clusters (activations of 10³ on some rows, of several sizes, on one or
    two columns; groups of one or two points; clusters barely wider apart than the small features' spread, so
    that points near a cluster's edge have their neighbours across it): searched group by group, then checked
    against the other groups, the distances are the float64 brute-force ones."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    for j in range(columns):
        level = rng.integers(0, 4, size=n)  # four clusters per column, some possibly tiny or empty
        x[:, j] = np.where(level == 0, x[:, j], gap * level * (1 + 0.01 * rng.standard_normal(n)) + 4e3 * (level == 3))
    x = metrics.unique_rows(x.astype(np.float32) if float32 else x)
    assume(len(x) >= 3)
    r1, r2 = metrics.two_nearest_neighbours(x)
    b1, b2 = _brute_two_nearest(x.astype(np.float64))
    assert np.allclose(r1, b1, rtol=1e-9, atol=1e-12) and np.allclose(r2, b2, rtol=1e-9, atol=1e-12)


def test_separated_massive_rows_are_searched_group_by_group(monkeypatch):
    """The benchmark's decoder-like points (a massive feature of about 2,000 on half the rows): two groups, each
    searched on its own (two products of a quarter the size), no point re-checked against all; exact."""
    from aniso.bench.twonn import make_points

    x = make_points(3000, 32, "massive", seed=2)
    sizes, settled = [], []
    search, settle = metrics._two_nearest_squared, metrics._settle
    monkeypatch.setattr(metrics, "_two_nearest_squared", lambda p: sizes.append(p.shape[0]) or search(p))
    monkeypatch.setattr(metrics, "_settle", lambda rows, *a: settled.append(rows.numel()) or settle(rows, *a))
    r1, r2 = metrics.two_nearest_neighbours(x)
    assert sizes[0] == 3000 and sorted(sizes[1:]) == sorted([int((x[:, 0] > 1000).sum()), int((x[:, 0] < 1000).sum())])
    assert settled[-1] == 0
    b1, b2 = _brute_two_nearest(x.astype(np.float64))
    assert np.allclose(r1, b1, rtol=1e-9) and np.allclose(r2, b2, rtol=1e-9)


def test_twonn_on_a_tensor_stays_on_its_device(monkeypatch, torch_device):
    """A torch tensor is computed with torch on its device (nothing of the points' size goes to NumPy; the (n,)
    results only), the answer is that of the NumPy path, and a TF32/bfloat16 matrix-product precision still gives
    it exactly."""
    x = _points_of_kind(np.random.default_rng(1), 500, 16, "massive")
    want = metrics.two_nearest_neighbours(x)
    t = torch.from_numpy(x).to(torch_device)
    shapes = []
    to_numpy = torch.Tensor.numpy
    monkeypatch.setattr(torch.Tensor, "numpy", lambda self, *a, **k: shapes.append(self.shape) or to_numpy(self))
    got = metrics.two_nearest_neighbours(t)
    monkeypatch.undo()
    assert shapes and all(s.numel() <= 2 * 500 for s in shapes), shapes
    if torch_device == "cpu":  # the same float64 operations in the same order: the same bits
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    else:  # another device's float64 kernels round differently in the last bits
        assert np.allclose(got[0], want[0], rtol=1e-12) and np.allclose(got[1], want[1], rtol=1e-12)
    assert metrics.unique_rows(torch.cat([t, t[:7]])).shape == t.shape
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        low = metrics.two_nearest_neighbours(t)
    finally:
        torch.set_float32_matmul_precision(before)
    assert np.allclose(low[0], want[0], rtol=1e-12) and np.allclose(low[1], want[1], rtol=1e-12)
    with pytest.raises(ValueError, match="2-D"):
        metrics.twonn_dimension(t[0])
    with pytest.raises(ValueError, match="NaN"):
        metrics.twonn_dimension(torch.full((5, 2), float("nan")))


def test_two_nearest_neighbours_recheck_near_ties(monkeypatch):
    """Points whose float32 distances cannot separate the candidates from the rest (the corners of a simplex moved
    by 1e-7: every distance is 10·√2 to eight digits) are ranked again in float64; moved by 1e-13, not even float64
    separates them, and every row gets all its distances recomputed exactly, row by row. Both match brute force."""
    rng = np.random.default_rng(3)
    for noise, last_resort in ((1e-7, 0), (1e-13, 300)):
        x = np.eye(300) * 10 + rng.standard_normal((300, 300)) * noise
        calls = []
        every = metrics._all_distances
        monkeypatch.setattr(metrics, "_all_distances", lambda *a: calls.append(1) or every(*a))
        r1, r2 = metrics.two_nearest_neighbours(x)
        monkeypatch.undo()
        assert len(calls) == last_resort
        b1, b2 = _brute_two_nearest(x)
        assert np.allclose(r1, b1, rtol=1e-9) and np.allclose(r2, b2, rtol=1e-9)
    with pytest.raises(ValueError, match="at least 3"):
        metrics.two_nearest_neighbours(x[:2])


@given(st.integers(0, 1000), st.integers(1, 50), st.integers(0, 30))
@settings(max_examples=25, deadline=None)
def test_unique_rows_keeps_first_of_each(seed, n, extra):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    dupes = np.concatenate([x, x[rng.integers(0, n, extra)]])
    got = metrics.unique_rows(dupes)
    assert np.array_equal(got, x)


@pytest.mark.parametrize("d", [8, 64, 512])
def test_isotropic_quantile_matches_monte_carlo(d):
    rng = np.random.default_rng(d)
    a = rng.standard_normal((20000, d))
    b = rng.standard_normal((20000, d))
    cos = np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert np.quantile(cos, 0.95) == pytest.approx(metrics.isotropic_cos_quantile(d), abs=0.06 / np.sqrt(d))
    assert metrics.isotropic_cos_std(d) == pytest.approx(1 / np.sqrt(d), rel=1e-9)


def test_isotropic_quantile_shrinks_with_dimension():
    values = [metrics.isotropic_cos_quantile(d) for d in (4, 16, 64, 256, 1024, 4096)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(1.645 / math.sqrt(4096), rel=0.02)
    with pytest.raises(ValueError):
        metrics.isotropic_cos_quantile(1)


def _enumerated_p(x: np.ndarray, y: np.ndarray, method: str, alternative: str) -> float:
    """The permutation p-value by brute force: the coefficient of every one of the n! pairings (the textbook
    sum-of-products formula, of scipy's ranks for Spearman), counted as scipy.stats.permutation_test counts an exact
    test."""
    import itertools

    from scipy.stats import rankdata

    a, b = (rankdata(x), rankdata(y)) if method == "spearman" else (x, y)
    n = len(a)
    perms = np.array(list(itertools.permutations(range(n))))
    bp = b[perms]  # (n!, n): every pairing of a with b
    num = n * (bp @ a) - a.sum() * b.sum()
    den = np.sqrt((n * (a * a).sum() - a.sum() ** 2) * (n * (b * b).sum() - b.sum() ** 2))
    null = num / den
    obs = np.corrcoef(a, b)[0, 1]
    greater, less = np.mean(null >= obs - 1e-12), np.mean(null <= obs + 1e-12)
    return {"greater": greater, "less": less}.get(alternative, min(1.0, 2 * min(greater, less)))


@st.composite
def paired_series(draw, min_n=3, max_n=8):
    n = draw(st.integers(min_n, max_n))
    values = st.one_of(st.floats(-100, 100, allow_nan=False, allow_infinity=False), st.integers(-3, 3).map(float))
    x = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    y = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    assume(np.ptp(x) > 1e-6 and np.ptp(y) > 1e-6)
    return x, y


@settings(max_examples=60, deadline=None)
@given(paired_series(max_n=7), st.sampled_from(["spearman", "pearson"]), st.sampled_from(metrics.ALTERNATIVES))
def test_the_exact_p_value_is_the_enumeration_of_every_pairing(xy, method, alternative):
    """Up to EXACT_MAX_N points the p-value counts every one of the n! pairings (ties included): the same as a brute
    force enumeration and as scipy.stats.permutation_test's own exact test."""
    from scipy.stats import permutation_test, rankdata

    x, y = xy
    c = metrics.correlation_test(x, y, method, alternative)
    assert c.p_method.startswith("exact") and c.n_permutations == math.factorial(len(x))
    assert c.p_value == pytest.approx(_enumerated_p(x, y, method, alternative), abs=1e-12)
    a, b = (rankdata(x), rankdata(y)) if method == "spearman" else (x, y)

    def statistic(v, axis=-1):
        va = a - a.mean()
        vb = v - v.mean(axis=axis, keepdims=True)
        return (vb @ va) / (np.linalg.norm(vb, axis=axis) * np.linalg.norm(va))

    # scipy counts a permuted coefficient as a tie within about 1e-14 of the observed one, the suite within
    # metrics._TIE_TOL (1e-12): where one lies between the two (y = [1e-12, 0, ..., 2]), they count differently
    import itertools

    every = statistic(np.array(list(itertools.permutations(b))))
    gaps = np.abs(np.concatenate([every - statistic(b[None])[0], np.abs(every) - abs(statistic(b[None])[0])]))
    if np.any((gaps > 1e-14) & (gaps < 1e-11)):
        return
    ref = permutation_test((b,), statistic, permutation_type="pairings", alternative=alternative,
                           n_resamples=np.inf, vectorized=True)
    assert c.p_value == pytest.approx(ref.pvalue, abs=1e-9)


@settings(max_examples=5, deadline=None)
@given(paired_series(min_n=8, max_n=8), st.sampled_from(["spearman", "pearson"]))
def test_the_exact_p_value_at_eight_points(xy, method):
    x, y = xy
    assert metrics.correlation_test(x, y, method).p_value == pytest.approx(_enumerated_p(x, y, method, "two-sided"),
                                                                           abs=1e-12)


def test_the_issues_small_cases_have_their_exact_p_values():
    """4 layers with rho = 1: 2/24 (scipy's asymptotic value is 0); 5 points with rho = 1: 2/120; rho = 0.9 over 5
    points: 10/120 (asymptotic 0.037); the asymptotic value is reported beside, never decided on."""
    four = metrics.drift_correlation(np.arange(4.0), np.array([0.1, 0.2, 0.3, 0.5]), "spearman")
    assert four.p_value == pytest.approx(2 / 24) and four.p_value_asymptotic == pytest.approx(0.0, abs=1e-12)
    assert four.alternative == "two-sided" and four.seed is None
    five = metrics.drift_correlation(np.arange(5.0), np.array([0.0, 1, 2, 4, 3]), "spearman")
    assert five.coefficient == pytest.approx(0.9) and five.p_value == pytest.approx(10 / 120)
    assert five.p_value_asymptotic == pytest.approx(0.0374, abs=1e-3)
    assert metrics.drift_correlation(np.arange(5.0), np.arange(5.0) ** 2, "spearman").p_value == pytest.approx(2 / 120)
    with pytest.raises(ValueError, match="method"):
        metrics.drift_correlation(np.arange(5.0), np.arange(5.0), "kendall")
    with pytest.raises(ValueError, match="at least 3"):
        metrics.drift_correlation(np.arange(2.0), np.arange(2.0))
    with pytest.raises(ValueError, match="finite"):
        metrics.drift_correlation(np.array([0, 1, np.nan]), np.arange(3.0))
    with pytest.raises(ValueError, match="alternative"):
        metrics.correlation_test(np.arange(5.0), np.arange(5.0), alternative="bigger")


@settings(max_examples=5, deadline=None)
@given(paired_series(min_n=9, max_n=9), st.sampled_from(["spearman", "pearson"]))
def test_the_p_value_is_exact_up_to_ten_points(xy, method):
    """9 and 10 points are enumerated too (9! = 362,880; 10! = 3,628,800 orderings, in blocks)."""
    x, y = xy
    c = metrics.correlation_test(x, y, method)
    assert c.p_method.startswith("exact") and c.n_permutations == math.factorial(9)
    assert c.p_value == pytest.approx(_enumerated_p(x, y, method, "two-sided"), abs=1e-12)
    ten = metrics.correlation_test(np.arange(10.0), np.arange(10.0) ** 3, "spearman", "greater")
    assert ten.p_value == pytest.approx(1 / math.factorial(10)) and ten.n_permutations == math.factorial(10)


def test_every_ordering_once():
    for n in range(1, 8):
        every = metrics._all_orderings(n)
        assert every.shape == (math.factorial(n), n) and (every[0] == np.arange(n)).all()
        assert len({tuple(r) for r in every}) == math.factorial(n)


@pytest.mark.parametrize("n, two_sided, one_sided", [(6, 0.21, 0.31), (8, 0.41, 0.57)])
def test_the_power_of_the_spearman_test_at_a_strong_effect(n, two_sided, one_sided):
    """At r = 0.7 (bivariate normal) the exact Spearman test over 6-8 points has little power: 0.21 and 0.41
    two-sided, the figures a simulation of 200,000 samples gives; within 4 standard errors of the estimate."""
    se = 4 * math.sqrt(0.25 / metrics.POWER_SAMPLES) + 0.005
    assert metrics.correlation_power(n, 0.7) == pytest.approx(two_sided, abs=se)
    assert metrics.correlation_power(n, 0.7, alternative="greater") == pytest.approx(one_sided, abs=se)
    assert metrics.correlation_power(n, -0.7, alternative="greater") < 0.05  # the wrong direction
    assert metrics.points_for_power(0.7) == 15 and metrics.points_for_power(0.7, alternative="greater") == 13


def test_power_is_the_level_under_no_effect_and_grows_with_n():
    level = metrics.correlation_power(12, 0.0, alternative="greater")
    assert level <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / metrics.POWER_SAMPLES)
    powers = [metrics.correlation_power(n, 0.7) for n in (5, 8, 12, 20)]
    assert powers == sorted(powers) and powers[-1] > 0.9
    assert 0.3 < metrics.correlation_power(8, 0.7, "pearson") < 0.7
    for bad in (dict(n=2, effect=0.5), dict(n=5, effect=1.0), dict(n=5, effect=0.5, alpha=0.0)):
        with pytest.raises(ValueError):
            metrics.correlation_power(**bad)


def test_derive_seed_keeps_its_values_for_the_parts_it_takes():
    """Every run's null samples are drawn from these seeds: a change to derive_seed must leave them as they are."""
    assert metrics.derive_seed(0, "G.drift-correlation-spearman", "gpt2", "spearman") == 894428759168383784
    assert metrics.derive_seed(7, "untrained-block", "layer3") == 5208400873090674659
    assert metrics.derive_seed(1) == 3874038210105081456
    # parts that are no str (no caller passes one) are hashed as their tagged repr, told apart from their text
    assert metrics.derive_seed(3, 2, 1.5, True, None, b"x") == 3907639800405245405
    assert metrics.derive_seed(0, ("a", 1), ["b", 2.0]) == 291858463612251174


@pytest.mark.parametrize("one, other", [
    ((0, "a\x1fb"), None),  # refused: it would read as the parts 'a', 'b'
    ((0, None), (0, "None")),
    ((0, 1), (0, "1")),
    ((0, ("a", 1)), (0, "('a', 1)")),
    ((0, ["a"]), (0, ("a",))),
    ((0, 1), (0, True)),
    ((0, 1), (0, 1.0)),
])
def test_two_lists_of_parts_never_give_one_seed(one, other):
    """The parts were joined as text with \\x1f: 'a\\x1fb' gave the seed of 'a', 'b', None that of 'None' and a tuple
    that of its text."""
    if other is None:
        with pytest.raises(ValueError, match=r"^derive_seed: parts\[0\]: .* holds the control character"):
            metrics.derive_seed(*one)
        assert metrics.derive_seed(0, "a", "b") >= 0
        return
    assert metrics.derive_seed(*one) != metrics.derive_seed(*other)


def test_a_big_endian_matrix_is_read_by_the_eigen_solvers():
    """``largest_eigenvalue`` of a big-endian array stopped in torch's byte-order message; every other metric reads
    such arrays."""
    m = np.diag([1.0, 5.0, 2.0])
    assert float(metrics.largest_eigenvalue(m.astype(">f8"))) == pytest.approx(5.0)
    assert float(metrics.largest_eigenpair(m.astype(">f8"))[0]) == pytest.approx(5.0)


def test_derive_seed_refuses_a_part_whose_text_differs_between_processes():
    """A set's text follows the process's hash seed and an object's default text its address: each gave another
    seed in every process, while the docstring promised a rerun the same one."""
    for parts, where, kind in ((("a", {"alpha", "beta"}), r"parts\[1\]", "set"),
                               ((frozenset({"x", "y"}),), r"parts\[0\]", "frozenset"),
                               (("a", object()), r"parts\[1\]", "object"),
                               ((("a", {"b"}),), r"parts\[0\]\[1\]", "set")):
        with pytest.raises(TypeError, match=rf"^derive_seed: {where}: {kind} .*; give a str, int, float, bool, "
                                            r"bytes or None, or a tuple or list of these$") as e:
            metrics.derive_seed(0, *parts)
        assert "\n" not in str(e.value)


def test_each_test_has_a_seed_of_its_own():
    a = metrics.derive_seed(0, "G.drift-correlation-spearman", "gpt2", "spearman")
    assert a == metrics.derive_seed(0, "G.drift-correlation-spearman", "gpt2", "spearman")
    assert a != metrics.derive_seed(0, "G.drift-correlation-spearman", "bert", "spearman")
    assert a != metrics.derive_seed(1, "G.drift-correlation-spearman", "gpt2", "spearman")
    assert 0 <= a < 2 ** 63
    x = np.arange(12.0)
    y = x + np.random.default_rng(1).normal(scale=12, size=12)
    one, two = (metrics.correlation_test(x, y, seed=s, n_resamples=999) for s in (11, 12))
    assert one.p_value != two.p_value  # independent null samples, not one shared per size


@settings(max_examples=12, deadline=None)
@given(st.integers(11, 40), st.integers(0, 2**32 - 1), st.sampled_from(["spearman", "pearson"]))
def test_monte_carlo_p_values_are_seeded_and_never_zero(n, seed, method):
    """Above EXACT_MAX_N points: (count + 1) / (R + 1) over R seeded orderings, so never 0, the same for the same
    seed, and within 4 binomial standard errors of the asymptotic value for Gaussian data (where it is valid)."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n), rng.normal(size=n)
    a = metrics.correlation_test(x, y, method, seed=7)
    assert a == metrics.correlation_test(x, y, method, seed=7)
    assert a.p_method.startswith("Monte Carlo") and a.p_value >= 1 / (a.n_permutations + 1) and a.seed == 7
    if method == "pearson" and n >= 20 and a.p_value_asymptotic < 0.5:
        se = math.sqrt(a.p_value_asymptotic * (1 - a.p_value_asymptotic) / a.n_permutations)
        assert abs(a.p_value - a.p_value_asymptotic) <= 4 * se + 0.02


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.integers(9, 10), st.integers(0, 2**32 - 1), st.floats(0.3, 3.0), st.sampled_from(metrics.ALTERNATIVES))
def test_a_monte_carlo_p_value_is_within_ten_percent_of_the_exact_one(n, seed, noise, alternative):
    """The two-stage Monte Carlo test, forced at 9-10 points, against the enumeration of every ordering: within
    10% relative wherever the exact p-value is at least 0.001."""
    rng = np.random.default_rng(seed)
    x = np.arange(float(n))
    y = x + rng.normal(scale=noise * n, size=n)
    exact = metrics.correlation_test(x, y, "spearman", alternative)
    mc = metrics.correlation_test(x, y, "spearman", alternative, seed=seed, exact_max_n=8)
    assert mc.p_method.startswith("Monte Carlo") and exact.p_method.startswith("exact")
    if exact.p_value >= metrics.MC_P_FLOOR:
        assert mc.p_value == pytest.approx(exact.p_value, rel=metrics.MC_RELATIVE_ERROR)


@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_a_perfect_order_above_ten_points_gets_the_smallest_p_value(method):
    x = np.random.default_rng(3).normal(size=11)
    perfect = metrics.correlation_test(x, x, method)
    assert perfect.n_permutations == metrics.mc_orderings_for(0.0)  # sized for p = 0.001: 1,598,400
    assert perfect.p_value == pytest.approx(2 / (perfect.n_permutations + 1))


def test_the_orderings_of_a_monte_carlo_test_follow_its_p_value():
    """R = (4 / 0.1)^2 (1 - p) / p at the estimate's lower 4-SE bound, floored at p = 0.001, at least 9,999."""
    assert metrics.mc_orderings_for(0.5) == metrics.N_PERMUTATIONS
    assert metrics.mc_orderings_for(0.0) == math.ceil(1600 * 0.999 / 0.001)
    assert metrics.N_PERMUTATIONS < metrics.mc_orderings_for(0.05) < metrics.mc_orderings_for(0.01)


@settings(max_examples=20, deadline=None)
@given(st.integers(3, 12), st.integers(1, 6), st.integers(0, 2**32 - 1), st.sampled_from(["spearman", "pearson"]),
       st.sampled_from(metrics.ALTERNATIVES))
def test_many_series_at_once_equal_one_at_a_time(n, b, seed, method, alternative):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(b, n)), rng.normal(size=(b, n))
    y[0] = np.round(y[0])  # ties: the general path beside the untied ranks' shortcut
    coef, p = metrics.correlation_tests(x, y, method, alternative, seed=3)
    for i in range(b):
        one = metrics.correlation_test(x[i], y[i], method, alternative, seed=3, n_resamples=metrics.N_PERMUTATIONS)
        # a constant side (y rounded over 3 points) has no correlation: NaN in both
        assert coef[i] == pytest.approx(one.coefficient, abs=1e-12, nan_ok=True)
        assert p[i] == pytest.approx(one.p_value, abs=1e-12, nan_ok=True)


def _spectrum_matrix(rng, m: int, kind: str) -> np.ndarray:
    """A centred scatter (m, m) with the top of the spectrum ``kind`` describes."""
    if kind == "clustered-top":  # λ₁, λ₂, λ₃ within 1e-7 of each other: nothing separates the top
        u, _ = np.linalg.qr(rng.normal(size=(m, m)))
        lam = rng.uniform(0, 1, size=m)
        lam[:3] = [10.0, 10.0 - 1e-6, 10.0 - 2e-6][:m]
        return (u * lam) @ u.T
    x = rng.normal(size=(2 * m, m))
    if kind == "anisotropic":  # a common direction, as in hidden states
        x += 5 * rng.normal(size=(1, m))
    elif kind == "massive":
        x[:, int(rng.integers(m))] *= 1e3
    elif kind == "rank-deficient":
        x = rng.normal(size=(2 * m, 5)) @ rng.normal(size=(5, m))
    elif kind == "scaled":  # feature scales over several orders of magnitude
        x *= np.exp(2 * rng.normal(size=m))
    xc = x - x.mean(0)
    return xc.T @ xc


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 260),
       st.sampled_from(["isotropic", "anisotropic", "massive", "rank-deficient", "scaled", "clustered-top"]),
       st.sampled_from([0, 10**9]))
def test_largest_eigenvalue_equals_the_dense_solver(torch_device, seed, m, kind, min_size):
    """The Lanczos λ_max (and, below ``min_size``, the dense one) equals ``eigvalsh``'s to 1e-9 relative on every
    kind of spectrum, on the CPU and on a GPU where present; the seed fixes it bit for bit."""
    c = torch.from_numpy(_spectrum_matrix(np.random.default_rng(seed), m, kind)).to(torch_device)
    c = (c + c.T) / 2
    want = float(torch.linalg.eigvalsh(c.cpu())[-1])
    got = metrics.largest_eigenvalue(c, min_size=min_size)
    assert got.device == c.device and got.dtype == c.dtype
    assert float(got) == pytest.approx(want, rel=1e-9, abs=1e-12 * max(1.0, float(c.diagonal().sum())))
    assert float(metrics.largest_eigenvalue(c, min_size=min_size)) == float(got)


def test_largest_eigenvalue_falls_back_to_the_dense_solver_and_checks_its_input(monkeypatch):
    """Too few steps to meet the residual bound: the dense solver answers. A non-square input is refused."""
    c = torch.from_numpy(_spectrum_matrix(np.random.default_rng(3), 300, "isotropic"))
    calls = []
    dense = torch.linalg.eigvalsh
    monkeypatch.setattr(torch.linalg, "eigvalsh", lambda a: calls.append(a.shape) or dense(a))
    got = metrics.largest_eigenvalue(c, min_size=0, max_steps=4)
    assert (300, 300) in calls and float(got) == pytest.approx(float(dense(c)[-1]), rel=1e-12)
    calls.clear()
    metrics.largest_eigenvalue(c, min_size=0)
    assert (300, 300) not in calls  # converged: no dense solve of c
    with pytest.raises(ValueError, match="square matrix"):
        metrics.largest_eigenvalue(torch.zeros(3, 4))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 80),
       st.sampled_from(["isotropic", "anisotropic", "massive", "rank-deficient", "scaled", "clustered-top"]))
def test_isoscore_from_trace_and_frobenius_equals_rudmans_algorithm(seed, n, kind):
    """(tr² / ‖C‖²_F − 1) / (n − 1) equals Rudman et al.'s IsoScore of C's eigenvalues to 1e-9, on every kind of
    spectrum; the two ends: 1 for C = I, 1/(n − 1)·(k − 1) for k equal directions, NaN for C = 0."""
    c = _spectrum_matrix(np.random.default_rng(seed), n, kind)
    want = metrics.isoscore_from_eigenvalues(np.linalg.eigvalsh(c))
    got = metrics.isoscore_from_trace_and_frobenius(float(np.trace(c)), float(np.sum(c * c)), n)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert metrics.isoscore_from_trace_and_frobenius(float(n), float(n), n) == pytest.approx(1.0)
    k = max(1, n // 2)
    assert metrics.isoscore_from_trace_and_frobenius(float(k), float(k), n) == pytest.approx((k - 1) / (n - 1))
    assert math.isnan(metrics.isoscore_from_trace_and_frobenius(0.0, 0.0, n))
    with pytest.raises(ValueError, match="dimension >= 2"):
        metrics.isoscore_from_trace_and_frobenius(1.0, 1.0, 1)


@pytest.mark.parametrize("lockstep", [True, False])
def test_largest_eigenpairs_of_a_stack_are_each_matrixs_own(lockstep):
    """n matrices at once, in lockstep (a GPU's default: each leaves at its own convergence) or one after the other
    (the CPU's): each value and vector is the one :func:`largest_eigenpair` gives the matrix alone (1e-12 relative;
    bit for bit one after the other) and ``eigh``'s (1e-9), for spectra that converge after different numbers of
    steps; with too few steps every matrix takes the dense solver; a stack that is not of square matrices is
    refused."""
    rng = np.random.default_rng(11)
    kinds = ("isotropic", "anisotropic", "clustered-top", "massive")
    c = torch.stack([torch.from_numpy(_spectrum_matrix(rng, 300, kind)) for kind in kinds])
    values, vectors = metrics.largest_eigenpairs(c, min_size=0, lockstep=lockstep)
    for i in range(len(kinds)):
        alone, vector = metrics.largest_eigenpair(c[i], min_size=0)
        exact = torch.linalg.eigvalsh(c[i])[-1]
        assert float(values[i]) == pytest.approx(float(alone), rel=0 if not lockstep else 1e-12), kinds[i]
        assert float(values[i]) == pytest.approx(float(exact), rel=1e-9), kinds[i]
        assert float(torch.linalg.vector_norm(vectors[i])) == pytest.approx(1.0, rel=1e-9)
        assert float(torch.linalg.vector_norm(c[i] @ vectors[i] - values[i] * vectors[i])) <= 1e-6 * float(exact)
    few, none = metrics.largest_eigenpairs(c, min_size=0, max_steps=4, vector=False, lockstep=lockstep)
    torch.testing.assert_close(few, torch.linalg.eigvalsh(c)[:, -1], rtol=1e-12, atol=0)
    assert none is None
    with pytest.raises(ValueError, match="stack of square matrices"):
        metrics.largest_eigenpairs(c[0], lockstep=lockstep)
