"""`twonn_dimension(x, discard_fraction=0.9)` of 100 points kept 9 neighbour ratios, not 10 (n(1 − f) in float64 is
9.999999999999998), about 8% off; a measurement and the same one read back from the cache compared unequal
(`meta["cache"]` differs), against `LayerStats.__eq__`'s docstring."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aniso import metrics
from aniso.api import LayerStats


@pytest.mark.parametrize("fraction, n", [(0.9, 100), (0.8, 20), (0.55, 60)])
def test_a_discard_fraction_keeps_the_share_it_says(fraction, n):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 5))
    keep = round(n * (1 - fraction))
    assert math.floor(n * (1 - fraction)) == keep - 1  # what float64 alone gives: one ratio short
    # the reference: TwoNN's fit on the `keep` smallest ratios, through the origin (Facco et al. 2017)
    from scipy.spatial import cKDTree

    distances = cKDTree(x).query(x, k=3)[0]
    mu = np.sort(distances[:, 2] / distances[:, 1])
    f = np.arange(1, n + 1) / n
    xs, ys = np.log(mu[:keep]), -np.log(1 - f[:keep])
    assert metrics.twonn_dimension(x, discard_fraction=fraction) == pytest.approx(float(xs @ ys / (xs @ xs)), rel=1e-9)


def test_the_default_fraction_keeps_what_it_kept():
    for n in range(3, 20001):  # the statistics' own TwoNN (0.1): not one count moves
        assert math.floor(round(n * (1 - 0.1), 6)) == math.floor(n * (1 - 0.1))


def test_a_measurement_read_back_from_the_cache_equals_the_first():
    first = LayerStats("m", ("0",), (), {"label": "t"}, {"seed": 0}, {"seconds": 3.0, "cache": {"key": "k",
                                                                      "hit": False, "written": True}}, None)
    again = LayerStats("m", ("0",), (), {"label": "t"}, {"seed": 0}, {"seconds": 0.1, "cache": {"key": "k",
                                                                      "hit": True}}, None)
    assert first == again
    assert first != LayerStats("m", ("0",), (), {"label": "t"}, {"seed": 1}, {"cache": {"hit": True}}, None)
