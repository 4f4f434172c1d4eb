"""Every public function of aniso.metrics checks its arguments: one-line TypeError/ValueError naming the parameter,
its value and what is allowed, instead of a silent wrong number, a clipped value or a library's traceback. The
statistics call unchecked private forms, so nothing they pass is refused and no check runs per batch."""

import math

import numpy as np
import pytest
import torch

from aniso import metrics

X = np.random.default_rng(0).standard_normal((50, 8)) + 1
U = X / np.linalg.norm(X, axis=1, keepdims=True)
G = X.T @ X


@pytest.mark.parametrize("n, error, match", [(2.5, TypeError, "n: 2.5"), (True, TypeError, "n: True"),
                                             ("50", TypeError, "n: '50'"), (0, ValueError, "n: 0")])
def test_drift_norm_from_sum_refuses_n(n, error, match):
    with pytest.raises(error, match=match):
        metrics.drift_norm_from_sum(X.sum(0), n)


def test_drift_norm_from_sum_refuses_the_sum():
    with pytest.raises(ValueError, match=r"vector_sum must be 1-D .*\(50, 8\)"):
        metrics.drift_norm_from_sum(X, 50)
    with pytest.raises(TypeError, match="vector_sum: a complex array"):
        metrics.drift_norm_from_sum(X.sum(0) + 1j, 50)
    with pytest.raises(ValueError, match="vector_sum contains NaN"):
        metrics.drift_norm_from_sum(np.full(8, np.nan), 50)
    assert metrics.drift_norm_from_sum(X.sum(0), np.int64(50)) == pytest.approx(metrics.drift_norm(X), rel=1e-12)


def test_svd_anisotropy_from_moments_names_the_argument_at_fault():
    with pytest.raises(ValueError, match="gram contains NaN"):
        metrics.svd_anisotropy_from_moments(X.sum(0), np.where(np.eye(8) > 0, np.nan, G), 50)
    with pytest.raises(ValueError, match="vector_sum must be 1-D"):
        metrics.svd_anisotropy_from_moments(X, G, 50)
    with pytest.raises(ValueError, match="n = 5 and gram do not fit"):
        metrics.svd_anisotropy_from_moments(X.sum(0), G, 5)
    with pytest.raises(ValueError, match="n = 50 and gram do not fit"):
        metrics.svd_anisotropy_from_moments(X.sum(0), -G, 50)
    same = np.ones((3, 4))  # identical vectors: the trace is 0 up to rounding, NaN as documented
    assert math.isnan(metrics.svd_anisotropy_from_moments(same.sum(0), same.T @ same, 3))


def test_isoscore_from_eigenvalues_refuses_what_no_covariance_has():
    with pytest.raises(ValueError, match="eigenvalues: -5 is below zero"):
        metrics.isoscore_from_eigenvalues(np.array([1.0, 1.0, -5.0, 1.0]))
    with pytest.raises(ValueError, match=r"eigenvalues must be 1-D .*\(4, 4\)"):
        metrics.isoscore_from_eigenvalues(np.eye(4))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="eigenvalues contains NaN or infinite"):
            metrics.isoscore_from_eigenvalues(np.array([1.0, bad, 1.0]))
    with pytest.raises(TypeError, match="eigenvalues: a complex array"):
        metrics.isoscore_from_eigenvalues(np.array([1 + 1j, 1, 1]))
    # rounding below zero is still clipped
    assert metrics.isoscore_from_eigenvalues(np.array([1.0, 1.0, -1e-12])) == metrics.isoscore_from_eigenvalues(
        np.array([1.0, 1.0, 0.0]))


def test_isoscore_from_trace_and_frobenius_refuses_impossible_pairs():
    with pytest.raises(TypeError, match="n: 2.5"):
        metrics.isoscore_from_trace_and_frobenius(4.0, 4.0, 2.5)
    with pytest.raises(ValueError, match="trace: nan"):
        metrics.isoscore_from_trace_and_frobenius(float("nan"), 4.0, 4)
    with pytest.raises(ValueError, match=r"trace² / frobenius_sq = 100 is outside \[1, n = 4\]"):
        metrics.isoscore_from_trace_and_frobenius(10.0, 1.0, 4)
    with pytest.raises(ValueError, match=r"trace² / frobenius_sq = 0.1 is outside"):
        metrics.isoscore_from_trace_and_frobenius(1.0, 10.0, 4)
    assert metrics.isoscore_from_trace_and_frobenius(4.0, 4.0, np.int64(4)) == pytest.approx(1.0)


def test_isoscore_from_moments_checks_as_svd_anisotropy_from_moments():
    with pytest.raises(ValueError, match="gram is not symmetric"):
        metrics.isoscore_from_moments(X.sum(0), G + 100 * np.triu(np.ones((8, 8))), 50)
    with pytest.raises(TypeError, match="n: 2.5"):
        metrics.isoscore_from_moments(X.sum(0), G, 2.5)
    with pytest.raises(ValueError, match=r"gram must have shape \(8, 8\), got \(5, 5\)"):
        metrics.isoscore_from_moments(X.sum(0), np.eye(5), 50)
    with pytest.raises(TypeError, match="n: True"):
        metrics.isoscore_from_moments(X.sum(0), G, True)
    assert metrics.isoscore_from_moments(X.sum(0), G, 50) == pytest.approx(metrics.isoscore(X), rel=1e-9)


def test_dimension_contributions_refuses_what_is_not_unit_sums():
    with pytest.raises(ValueError, match=r"unit_square_sum must have shape \(8,\), got \(5,\)"):
        metrics.dimension_contributions(U.sum(0), (U * U).sum(0)[:5], 50)
    with pytest.raises(ValueError, match="unit_sum: its norm² .* exceeds n²"):
        metrics.dimension_contributions(X.sum(0), (X * X).sum(0), 50)
    with pytest.raises(TypeError, match="n: 2.5"):
        metrics.dimension_contributions(U.sum(0), (U * U).sum(0), 2.5)
    assert metrics.dimension_contributions(U.sum(0), (U * U).sum(0), 50).sum() == pytest.approx(
        metrics.mean_cosine(X), rel=1e-12)


@pytest.mark.parametrize("chunk, error", [(0, ValueError), (-5, ValueError), (2.5, TypeError)])
def test_partition_isotropy_refuses_chunk(chunk, error):
    with pytest.raises(error, match=f"chunk: {chunk}"):
        metrics.partition_isotropy(X, chunk=chunk)
    with pytest.raises(error, match=f"chunk: {chunk}"):
        metrics.partition_isotropies(X, chunk=chunk)


def test_partition_isotropy_refuses_a_centre_that_is_not_a_bool():
    with pytest.raises(TypeError, match="centre: 'no'"):
        metrics.partition_isotropy(X, centre="no")
    assert metrics.partition_isotropy(X, centre=np.True_) == metrics.partition_isotropy(X, centre=True)


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((2.5, 0.5), {}, TypeError, "n: 2.5"), ((5.5, 0.5), {}, TypeError, "n: 5.5"),
    ((5, 0.5), {"seed": -1}, ValueError, "seed: -1"), ((5, 0.5), {"seed": 1.5}, TypeError, "seed: 1.5"),
    ((5, [0.5]), {}, TypeError, r"effect: \[0.5\]")])
def test_correlation_power_refuses(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        metrics.correlation_power(*args, **kwargs)


def test_correlation_power_takes_numpy_numbers():
    assert metrics.correlation_power(np.int64(7), np.float64(0.9)) == metrics.correlation_power(7, 0.9)


@pytest.mark.parametrize("power", [1.5, float("nan"), 0.0])
def test_points_for_power_refuses_a_power_outside_0_1(power):
    with pytest.raises(ValueError, match="power: "):
        metrics.points_for_power(0.5, power=power)


def test_largest_eigenpair_reads_or_refuses_its_input():
    value, vector = metrics.largest_eigenpair(np.eye(200) * 3)  # a NumPy array is read as a tensor
    assert float(value) == pytest.approx(3.0) and vector.shape == (200,)
    c = torch.tensor(np.cov(np.random.default_rng(2).standard_normal((300, 200)), rowvar=False))
    with pytest.raises(TypeError, match="rtol: 'tight'"):
        metrics.largest_eigenvalue(c, rtol="tight")
    with pytest.raises(ValueError, match="rtol: -1"):
        metrics.largest_eigenpair(c, rtol=-1.0)
    with pytest.raises(ValueError, match="c contains NaN or infinite"):
        metrics.largest_eigenvalue(torch.tensor(np.where(np.eye(8) > 0, np.nan, G)))
    want = float(np.linalg.eigvalsh(G)[-1])
    # integers are read through float64, bfloat16 through float32
    assert float(metrics.largest_eigenvalue(torch.tensor(G.round(), dtype=torch.int64))) == pytest.approx(
        float(np.linalg.eigvalsh(G.round())[-1]), rel=1e-12)
    g16 = torch.tensor(G, dtype=torch.bfloat16)
    got = metrics.largest_eigenvalue(g16)
    assert got.dtype == torch.float32 and float(got) == pytest.approx(want, rel=1e-2)


def test_largest_eigenpairs_refuses_an_asymmetric_matrix_of_the_stack():
    g = torch.tensor(G)
    with pytest.raises(ValueError, match=r"c\[1\] is not symmetric"):
        metrics.largest_eigenpairs(torch.stack([g, g + torch.triu(torch.ones(8, 8)) * 100]))
    values, _ = metrics.largest_eigenpairs(torch.stack([g, 2 * g]))
    assert values.tolist() == pytest.approx([float(np.linalg.eigvalsh(G)[-1]) * k for k in (1, 2)], rel=1e-12)


def test_mean_cosine_sampled_refuses_a_negative_seed():
    with pytest.raises(ValueError, match="rng: -1"):
        metrics.mean_cosine_sampled(X, 10, -1)
