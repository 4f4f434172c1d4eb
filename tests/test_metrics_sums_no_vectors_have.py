"""Moments and sums that no set of vectors has: a Σxxᵀ whose centred scatter has a negative eigenvalue (its trace
above 0) gave an SVD anisotropy of 1.0 and an IsoScore of 0.3, where `isoscore_from_eigenvalues` of the same
eigenvalues refuses; Σu and Σu∘u of which one dimension breaks Cauchy–Schwarz gave a contribution of 2 to avg cos."""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics


@pytest.mark.parametrize("gram, ratio", [(np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]), "-0.333"),
                                         (np.diag([-1.0, 2.0]), "-1")], ids=["indefinite", "negative-diagonal"])
@pytest.mark.parametrize("measure", [metrics.svd_anisotropy_from_moments, metrics.isoscore_from_moments])
def test_a_centred_scatter_with_a_negative_eigenvalue_is_refused(gram, ratio, measure):
    with pytest.raises(ValueError, match=rf"^gram: the centred scatter Σxxᵀ − ssᵀ/n has a negative eigenvalue "
                                         rf"\({ratio} times its trace\), which no vectors' scatter has"):
        measure(np.zeros(gram.shape[0]), gram, 5)


def test_moments_of_real_vectors_with_a_rank_deficient_scatter_are_still_read():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 8)) + 100.0  # 3 vectors in 8 dimensions: 6 eigenvalues of the scatter are 0 (rounding)
    s, g = x.sum(axis=0), x.T @ x
    assert metrics.svd_anisotropy_from_moments(s, g, 3) == pytest.approx(metrics.svd_anisotropy(x), abs=1e-6)
    assert 0.0 <= metrics.isoscore_from_moments(s, g, 3) <= 1.0


def test_unit_sums_that_break_cauchy_schwarz_in_a_dimension_are_refused():
    with pytest.raises(ValueError, match=r"^unit_sum and unit_square_sum: dimension 0 has \(Σu\)² = 4 > n·\(Σu∘u\) = 0"):
        metrics.dimension_contributions(np.array([2.0, 0.0]), np.array([0.0, 2.0]), 2)
    assert metrics.dimension_contributions(np.array([2.0, 0.0]), np.array([2.0, 0.0]), 2).tolist() == [1.0, 0.0]
