"""How aniso.metrics reads its array and tensor arguments as numbers (one place for every public metric): a tensor
that requires grad, a low-precision float tensor (bfloat16, float16, float8) or a quantized tensor is read as its
values; a structured array of several fields, or integers that float64 cannot hold exactly, are refused in one line
naming the argument."""

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso import metrics

RNG = np.random.default_rng(0)
POINTS = RNG.normal(size=(40, 6)) + 0.5
SERIES = np.array([1.0, 3, 2, 5, 4, 6])


def _series_metrics(x, y):
    """(name, value) of every metric of two series, for comparing how arguments are read."""
    return [
        ("correlation_test", metrics.correlation_test(x, y).coefficient),
        ("correlation_test pearson", metrics.correlation_test(x, y, "pearson").coefficient),
        ("drift_correlation", metrics.drift_correlation(x, y).coefficient),
        ("monotonic_trend", metrics.monotonic_trend(x, y).coefficient),
        ("correlation_tests", metrics.correlation_tests(x[None], y[None])[0][0]),
    ]


def _matrix_metrics(x):
    return [
        ("mean_cosine", metrics.mean_cosine(x)),
        ("svd_anisotropy", metrics.svd_anisotropy(x)),
        ("isoscore", metrics.isoscore(x)),
        ("drift_norm", metrics.drift_norm(x)),
        ("twonn_dimension", metrics.twonn_dimension(x)),
        ("partition_isotropy", metrics.partition_isotropy(x)),
    ]


def test_a_tensor_that_requires_grad_is_read_as_its_values():
    x = torch.arange(6.0, requires_grad=True)
    y = torch.tensor(SERIES)
    assert _series_metrics(x, y) == _series_metrics(x.detach(), y)
    assert _series_metrics(y, x) == _series_metrics(y, x.detach())
    p = torch.tensor(POINTS, requires_grad=True)
    assert _matrix_metrics(p) == _matrix_metrics(p.detach())
    s, g = p.sum(0), p.T @ p
    assert metrics.svd_anisotropy_from_moments(s, g, 40) == metrics.svd_anisotropy_from_moments(
        s.detach(), g.detach(), 40)
    assert metrics.drift_norm_from_sum(s, 40) == metrics.drift_norm_from_sum(s.detach(), 40)
    lam = torch.tensor([3.0, 2.0, 1.0], requires_grad=True)
    assert metrics.isoscore_from_eigenvalues(lam) == metrics.isoscore_from_eigenvalues(lam.detach())
    assert metrics.unique_rows(p).shape == (40, 6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_a_low_precision_float_tensor_is_read_as_its_values(dtype):
    x = torch.arange(6).to(dtype)
    y = torch.tensor(SERIES).to(dtype)
    assert _series_metrics(x, y) == _series_metrics(x.double(), y.double())
    p = torch.tensor(POINTS).to(dtype)
    assert metrics.correlation_test(p[:, 0], p[:, 1]).coefficient == metrics.correlation_test(
        p[:, 0].double(), p[:, 1].double()).coefficient
    assert metrics.isoscore_from_eigenvalues(p[:3, 0].abs()) == metrics.isoscore_from_eigenvalues(
        p[:3, 0].abs().double())


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_a_quantized_tensor_is_read_as_its_dequantized_values():
    x = torch.tensor(POINTS, dtype=torch.float32)
    q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    assert _matrix_metrics(q) == _matrix_metrics(q.dequantize())
    y = torch.quantize_per_tensor(torch.tensor(SERIES, dtype=torch.float32), 0.5, 0, torch.quint8)
    assert _series_metrics(torch.arange(6.0), y) == _series_metrics(torch.arange(6.0), y.dequantize())


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_unique_rows_of_a_float8_tensor(dtype):
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]]).to(dtype)
    assert metrics.unique_rows(x).double().tolist() == [[1.0, 2.0], [3.0, 4.0]]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2**10), st.integers(2**53 + 1, 2**63 - 1), st.booleans(), st.booleans())
def test_integers_beyond_2_53_are_refused_naming_the_argument(k, big, negative, as_tensor):
    big = -big if negative else big
    y = np.array([big, 1, 2, 3, k], dtype=np.int64)
    y = torch.from_numpy(y) if as_tensor else y
    with pytest.raises(ValueError, match=r"^y: the integer -?\d+ is beyond ±2\*\*53 .*give floats, or subtract an "
                                         r"offset"):
        metrics.correlation_test([1.0, 2, 3, 4, 5], y)
    points = np.array([[big, i * i % 7] for i in range(10)], dtype=np.int64)
    for f in (metrics.twonn_dimension, metrics.mean_cosine, metrics.svd_anisotropy):
        with pytest.raises(ValueError, match=r"^x: the integer"):
            f(torch.from_numpy(points) if as_tensor else points)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-2**53, 2**53), min_size=5, max_size=5, unique=True))
def test_integers_within_2_53_read_exactly(values):
    y = np.array(values, dtype=np.int64)
    along = [1.0, 2, 3, 4, 5]
    assert metrics.correlation_test(along, y).coefficient == metrics.correlation_test(
        along, y.astype(np.float64)).coefficient


@pytest.mark.parametrize("prefix", [None, 1, b"x_"])
def test_correlation_as_dict_prefix_must_be_a_str(prefix):
    result = metrics.correlation_test([1, 2, 3, 4], [1, 3, 2, 4])
    with pytest.raises(TypeError, match=r"^prefix: .*give a str \(''"):
        result.as_dict(prefix=prefix)
    assert list(result.as_dict("a_"))[0] == "a_coefficient" and list(result.as_dict())[0] == "coefficient"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_mean_cosine_from_unit_sum_says_a_sum_holding_nan_or_inf(bad):
    with pytest.raises(ValueError, match=r"^unit_sum contains NaN or infinite values$"):
        metrics.mean_cosine_from_unit_sum(np.array([bad, 1.0]), 4)


def test_a_structured_array_is_refused_naming_its_fields():
    s = np.zeros(5, dtype=[("a", "f8"), ("b", "f8")])
    s["a"], s["b"] = [1, 2, 3, 4, 5], [2, 1, 2, 1, 2]
    for f in (metrics.mean_cosine, metrics.svd_anisotropy, metrics.twonn_dimension, metrics.unique_rows):
        with pytest.raises(ValueError, match=r"^x: a structured array \(fields a, b\); give a plain \(n, d\) array "
                                             "of numbers"):
            f(s)
    one = np.zeros(5, dtype=[("a", "f8")])
    one["a"] = [1, 3, 2, 5, 4]
    assert metrics.correlation_test(one, [1.0, 2, 3, 4, 5]).coefficient == pytest.approx(0.8)


@settings(max_examples=20, deadline=None)
@given(st.integers(6, 10), st.integers(0, 2**32 - 1), st.sampled_from(["svd", "isoscore"]))
def test_the_moments_refusal_quotes_no_ratio_that_cancellation_made(exponent, seed, which):
    x = np.random.default_rng(seed).normal(size=(1000, 5)) * np.array([3, 1, 1, 1, 1]) + 10.0**exponent
    centred = x - x.mean(0)
    true_ratio = len(x) * np.sum(x.mean(0) ** 2) / np.sum(centred * centred)
    f = metrics.svd_anisotropy_from_moments if which == "svd" else metrics.isoscore_from_moments
    with pytest.raises(ValueError, match=r"^vector_sum and gram: the vectors' common offset") as refusal:
        f(x.sum(0), x.T @ x, len(x))
    quoted = re.search(r"is ([0-9.e+]+) times the centred scatter's trace", str(refusal.value))
    if quoted is not None:
        assert float(quoted.group(1)) == pytest.approx(true_ratio, rel=0.2)
    else:
        assert "leaves no digit of that trace" in str(refusal.value)


def test_n_resamples_beyond_the_bound_is_refused_naming_it():
    """`correlation_test(x, y, n_resamples=10**9)` ran past 300 s and 2.6 GB with no word; the bound is said."""
    import numpy as np

    from aniso import metrics

    x = np.arange(30.0)
    with pytest.raises(ValueError, match=r"^n_resamples: 1000000000; give a whole number from 1 to 10000000$"):
        metrics.correlation_test(x, x[::-1], n_resamples=10**9)
