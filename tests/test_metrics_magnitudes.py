"""aniso.metrics at extreme but finite magnitudes: the scale-free measures (avg cos, SVD anisotropy, IsoScore, unit
rows, the top eigenvector) give the same value at any finite scale, the scale-equivariant ones (drift norm, λ_max)
scale with it or are refused in one line where the answer itself is beyond float64's range, and the moment forms
refuse sums whose common offset leaves the answer to rounding (Σxxᵀ − ssᵀ/n cancels) instead of giving it wrong."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aniso import metrics


@st.composite
def points(draw, min_n=3, max_n=30, min_d=2, max_d=8):
    n, d = draw(st.integers(min_n, max_n)), draw(st.integers(min_d, max_d))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d) + draw(st.floats(-2.0, 2.0))


powers = st.integers(-300, 300)


@given(points(), powers)
def test_mean_cosine_is_scale_invariant_at_any_magnitude(x, k):
    assert metrics.mean_cosine(x * 10.0**k) == pytest.approx(metrics.mean_cosine(x), abs=1e-12)


@given(points(), powers)
def test_svd_anisotropy_and_isoscore_are_scale_invariant_at_any_magnitude(x, k):
    assert metrics.svd_anisotropy(x * 10.0**k) == pytest.approx(metrics.svd_anisotropy(x), rel=1e-7, abs=1e-9)
    assert metrics.isoscore(x * 10.0**k) == pytest.approx(metrics.isoscore(x), rel=1e-7, abs=1e-9)


@given(points(), powers)
def test_drift_norm_scales_with_the_points_at_any_magnitude(x, k):
    expected = 10.0**k * metrics.drift_norm(x)
    assert metrics.drift_norm(x * 10.0**k) == pytest.approx(expected, rel=1e-9)
    assert metrics.drift_norm_from_sum((x * 10.0**k).sum(0), len(x)) == pytest.approx(expected, rel=1e-9)


@given(points(), powers)
def test_isoscore_from_eigenvalues_is_scale_invariant_at_any_magnitude(x, k):
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    assert metrics.isoscore_from_eigenvalues(lam * 10.0**k) == pytest.approx(metrics.isoscore_from_eigenvalues(lam),
                                                                              rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_the_scale_free_measures_at_1e200_and_1e_200(scale, as_tensor):
    x = np.random.default_rng(0).standard_normal((30, 5)) + 0.5
    given_x = torch.from_numpy(x * scale) if as_tensor else x * scale
    assert metrics.mean_cosine(given_x) == pytest.approx(metrics.mean_cosine(x), abs=1e-12)
    assert metrics.svd_anisotropy(given_x) == pytest.approx(metrics.svd_anisotropy(x), rel=1e-9)
    assert metrics.isoscore(given_x) == pytest.approx(metrics.isoscore(x), rel=1e-9)
    assert metrics.drift_norm(given_x) == pytest.approx(scale * metrics.drift_norm(x), rel=1e-9)


def test_unit_rows_of_subnormal_rows_are_unit_rows():
    x = np.array([[1e-320, 2e-320], [3e-320, 0.0], [0.0, 0.0], [-4e-321, 1e-322]])
    u, n_zero = metrics.unit_rows(x)
    assert n_zero == 1 and u.shape == (3, 2)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(u, metrics.unit_rows(np.ldexp(x[[0, 1, 3]], 1070))[0])  # exactly, as scaled up
    tiny = torch.tensor([[1e-44, 2e-44], [3e-44, -1e-45]], dtype=torch.float32)  # subnormal float32 rows
    np.testing.assert_allclose(np.linalg.norm(metrics.unit_rows(tiny)[0], axis=1), 1.0, rtol=1e-15)
    assert metrics.mean_cosine(x) == pytest.approx(metrics.mean_cosine(np.ldexp(x, 1070)), abs=1e-15)


def test_drift_norm_near_the_largest_float():
    assert metrics.drift_norm(np.full((4, 1), 1.5e308)) == 1.5e308
    assert metrics.drift_norm_from_sum(np.array([1.5e308, -1.5e308]), 2) == pytest.approx(math.hypot(0.75e308,
                                                                                                      0.75e308))
    with pytest.raises(ValueError, match=r"drift norm: .*beyond the largest float64"):
        metrics.drift_norm(np.full((4, 4), 1.5e308))  # ‖x̄‖ = 3e308
    with pytest.raises(ValueError, match=r"drift norm: .*beyond the largest float64"):
        metrics.drift_norm_from_sum(np.full(4, 1.5e308), 1)


def test_isoscore_from_trace_and_frobenius_where_trace_squared_overflows():
    # 100 equal eigenvalues 1e153: trace 1e155, ‖C‖²_F = 1e308; trace² is beyond float64 but the ratio is 100
    assert metrics.isoscore_from_trace_and_frobenius(1e155, 1e308, 100) == pytest.approx(1.0)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_largest_eigenvalue_scales_with_the_matrix(scale):
    x = np.random.default_rng(1).standard_normal((300, 200)) * np.linspace(0.5, 2.0, 200)
    c = np.cov(x, rowvar=False)  # above LANCZOS_MIN_SIZE: the Lanczos iteration
    top = float(metrics.largest_eigenvalue(c))
    assert float(metrics.largest_eigenvalue(c * scale)) == pytest.approx(top * scale, rel=1e-9)
    value, vector = metrics.largest_eigenpair(torch.from_numpy(c * scale))
    assert float(value) == pytest.approx(top * scale, rel=1e-9)
    assert float(torch.linalg.vector_norm(vector)) == pytest.approx(1.0)
    both = torch.stack([torch.from_numpy(c), torch.from_numpy(c * scale)])
    values, _ = metrics.largest_eigenpairs(both, vector=False, lockstep=True)
    assert values.tolist() == pytest.approx([top, top * scale], rel=1e-9)


def test_largest_eigenvalue_beyond_the_largest_float_is_refused():
    with pytest.raises(ValueError, match=r"largest eigenvalue: .*beyond the largest float64"):
        metrics.largest_eigenvalue(np.full((4, 4), 1e308))  # λ_max = 4e308


def test_partition_isotropy_at_extreme_magnitudes():
    """The principal directions are those of W at any scale (WᵀW overflowed, and its eigendecomposition failed);
    Z itself depends on the scale: the ± axes have I = 1 at any scale, 40 random points at 1e200 have
    I = exp(−(the spread of their largest projections) · 1e200) = 0, and at 1e-200 every Z is V: I = 1."""
    axes = np.concatenate([np.eye(4), -np.eye(4)])
    assert metrics.partition_isotropies(axes * 1e200) == (1.0, 1.0)
    w = np.random.default_rng(3).standard_normal((40, 4))
    assert metrics.partition_isotropies(w * 1e200) == (0.0, 0.0)
    assert metrics.partition_isotropies(w * 1e-200) == (1.0, 1.0)


OFFSET_POINTS = np.random.default_rng(4).standard_normal((200, 4)) * np.array([3.0, 1.0, 1.0, 0.5])


@pytest.mark.parametrize("form", ["svd_anisotropy", "isoscore"])
def test_moments_with_a_large_common_offset_are_refused(form):
    p = 1e8 + OFFSET_POINTS  # Σxxᵀ − ssᵀ/n cancels 16 digits: the answer is rounding
    with pytest.raises(ValueError, match=r"vector_sum and gram: .*cannot give .* centre the vectors"):
        getattr(metrics, f"{form}_from_moments")(p.sum(0), p.T @ p, len(p))
    centred = p - p.mean(0)  # the same vectors about their mean: the exact answer
    got = getattr(metrics, f"{form}_from_moments")(centred.sum(0), centred.T @ centred, len(p))
    assert got == pytest.approx(getattr(metrics, form)(p), abs=1e-9)


@pytest.mark.parametrize("form", ["svd_anisotropy", "isoscore"])
def test_moments_with_a_massive_activation_offset_are_not_refused(form):
    """Massive activations (10³-10⁴ in a few features, unit spread elsewhere) leave the answer within tolerance."""
    p = OFFSET_POINTS + np.array([3e3, 0.0, -1e4, 0.0])
    got = getattr(metrics, f"{form}_from_moments")(p.sum(0), p.T @ p, len(p))
    assert got == pytest.approx(getattr(metrics, form)(p), abs=metrics.MOMENTS_TOLERANCE)


@given(points(min_n=5), st.integers(0, 14), st.integers(-100, 100), st.sampled_from(["svd_anisotropy", "isoscore"]))
def test_moments_are_within_their_tolerance_or_refused(x, offset, k, form):
    """At any offset (10⁰-10¹⁴ times the spread) and any scale, the moment forms give the centred answer to within
    their stated tolerance, or refuse: never a wrong number."""
    p = (x + 10.0**offset) * 10.0**k
    try:
        got = getattr(metrics, f"{form}_from_moments")(p.sum(0), p.T @ p, len(p))
    except ValueError as e:
        assert "centre the vectors" in str(e)
        return
    assert got == pytest.approx(getattr(metrics, form)(p), abs=metrics.MOMENTS_TOLERANCE)


def test_moments_of_identical_vectors_are_still_nan():
    same = np.ones((3, 4))
    assert math.isnan(metrics.svd_anisotropy_from_moments(same.sum(0), same.T @ same, 3))
    assert math.isnan(metrics.isoscore_from_moments(same.sum(0), same.T @ same, 3))
