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
