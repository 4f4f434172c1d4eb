"""Second-order statistics from float32 batch products (aniso.stats.accumulators.centred_batch_products) against a
float64 computation from the rows themselves: every second-order statistic the claims read (each SVD batch's
anisotropy, their mean, the whole set's SVD anisotropy; the same without the first tokens and without the
massive-activation rows) and IsoScore's participation ratio within 1e-6 relative (each batch's value within 1e-7,
their spread within 1e-7 of the largest value), on anisotropic rows with an offset mean and with massive activations on the first token of each sequence and on a
few others."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso import metrics
from aniso.stats.accumulators import LayerAccumulator, massive_rows

REL = 1e-6


def _svd(x: np.ndarray) -> float:
    if x.shape[0] < 2 or not np.ptp(x, axis=0).any():
        return math.nan
    return metrics.svd_anisotropy(x)


@st.composite
def decoder_like(draw):
    """Rows of sequences: Gaussian features with scales over three decades, a common offset, and (optionally) a
    massive activation (about 3,000, varying by 1%) on one feature of each sequence's first token and of a few
    later tokens, as decoders carry them (Sun et al. 2024)."""
    d = draw(st.integers(8, 96))
    batch = draw(st.sampled_from([33, 256, 1024]))
    n_rows = draw(st.integers(batch, 3 * batch + 40))
    seed = draw(st.integers(0, 2**16))
    massive = draw(st.booleans())
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_rows, d)) * np.logspace(0, draw(st.sampled_from([0.0, 1.5, 3.0])), d)
    x += draw(st.sampled_from([0.0, 30.0])) * rng.normal(size=d)
    lengths = []
    while sum(lengths) < n_rows:
        lengths.append(int(rng.integers(1, 120)))
    lengths[-1] -= sum(lengths) - n_rows
    pos = np.concatenate([np.arange(n) for n in lengths])
    if massive:
        feature = int(rng.integers(0, d))
        hot = (pos == 0) | (rng.random(n_rows) < 0.002)
        x[hot, feature] = 3e3 * (1 + 0.01 * rng.normal(size=int(hot.sum())))
    return x.astype(np.float32), pos, batch, seed


@settings(max_examples=25)
@given(decoder_like())
def test_second_order_statistics_from_float32_products_equal_float64(data):
    x, pos, batch, seed = data
    acc = LayerAccumulator(x.shape[1], reservoir_size=0, svd_batch_size=batch, seed=seed,
                           complements=("first", "massive"))
    out = {"first": pos == 0, "massive": np.zeros(len(x), bool)}
    for start in range(0, len(x), 200):  # updates of 200 rows, as the pipeline's batches of tokens
        part = slice(start, start + 200)
        h = torch.from_numpy(x[part])
        mark = massive_rows(h).numpy()
        out["massive"][part] = mark
        acc.update(h, positions=torch.from_numpy(pos[part]),
                   exclude={"first": torch.from_numpy(pos[part] == 0), "massive": torch.from_numpy(mark)})
    x64 = x.astype(np.float64)
    complete = len(x) // batch * batch
    sets = {None: np.ones(len(x), bool)} | {name: ~m for name, m in out.items()}
    for name, keep in sets.items():
        got = acc if name is None else acc.complement(name)
        if keep.sum() < 2:
            continue
        want_batches = [_svd(x64[s : s + batch][keep[s : s + batch]]) for s in range(0, complete, batch)]
        # each batch's value is a float64 Rayleigh quotient over its rows (BatchProducts.anisotropies): 1e-7
        np.testing.assert_allclose(got.batch_svd, want_batches, rtol=1e-7, atol=1e-12, err_msg=str(name))
        summary = got.summary()
        assert summary.svd_anisotropy == pytest.approx(_svd(x64[keep]), rel=REL, nan_ok=True), name
        if want_batches:
            assert summary.svd_anisotropy_batch_mean == pytest.approx(np.mean(want_batches), rel=REL, nan_ok=True)
            # the spread of the batches' values is as exact as the values, absolutely (relative to itself it is not
            # when the batches agree to 1e-4 or better, as these synthetic ones can)
            assert summary.svd_anisotropy_batch_std == pytest.approx(np.std(want_batches), rel=REL,
                                                                     abs=1e-7 * np.nanmax(want_batches), nan_ok=True)
        # IsoScore = (q - 1) / (d - 1), q = tr(C)^2 / ||C||_F^2 (the participation ratio, in [1, d]): its relative
        # error is q's times q / (q - 1), unbounded as IsoScore nears 0, so q is what is held to 1e-6 relative
        d = x.shape[1]
        assert 1 + summary.isoscore * (d - 1) == pytest.approx(1 + metrics.isoscore(x64[keep]) * (d - 1), rel=REL), name


def test_a_float64_batch_keeps_float64_products():
    """Rows given in float64 are multiplied in float64 (the exact path): equal to the SVD to 1e-12."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 20)) * np.logspace(0, 2, 20) + 5
    acc = LayerAccumulator(20, reservoir_size=0, svd_batch_size=100)
    acc.update(torch.from_numpy(x))
    np.testing.assert_allclose(acc.batch_svd, [_svd(x[s : s + 100]) for s in (0, 100, 200)], rtol=1e-12)
    assert acc.summary().svd_anisotropy == pytest.approx(_svd(x), rel=1e-12)


def test_identical_rows_have_no_direction_of_variance():
    """A batch of identical rows is centred exactly (its scatter is 0): NaN, with or without left-out rows."""
    x = np.ones((12, 5), np.float32) * 3.25
    x[[0, 6], 2] = 9.0  # the first rows of two sequences differ; without them every row is the same
    pos = np.array([0, 1, 2, 3, 4, 5] * 2)
    acc = LayerAccumulator(5, reservoir_size=0, svd_batch_size=6, complements=("first",))
    acc.update(x, positions=pos, exclude={"first": torch.from_numpy(pos == 0)})
    assert all(0 < v <= 1 for v in acc.batch_svd)
    assert all(math.isnan(v) for v in acc.complement("first").batch_svd)
