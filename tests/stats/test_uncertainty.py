"""Per-input sums, bootstrap resamples of a model's statistics, and the fragile flag (aniso.stats.uncertainty)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso import metrics
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.results import ModelStats
from aniso.stats.uncertainty import bootstrap_stats, interval


def _inputs(rng, n_inputs=12, d=8, shift=1.0):
    return [rng.normal(size=(int(rng.integers(1, 6)), d)) + shift for _ in range(n_inputs)]


def _stats(groups, per_batch=3, d=8):
    acc = LayerAccumulator(d, reservoir_size=8, svd_batch_size=4, per_input=True)
    for start in range(0, len(groups), per_batch):
        chunk = groups[start : start + per_batch]
        x = np.concatenate(chunk)
        labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(chunk)])
        acc.update(x, labels, len(chunk))
    return acc


@given(st.integers(0, 2**31 - 1), st.integers(1, 5))
@settings(max_examples=25, deadline=None)
def test_per_input_sums_add_up_to_the_totals_whatever_the_batching(seed, per_batch):
    rng = np.random.default_rng(seed)
    groups = _inputs(rng)
    acc = _stats(groups, per_batch)
    units, vectors, counts = acc.input_sums()
    assert units.shape == (len(groups), 8) and counts[:, 0].tolist() == [len(g) for g in groups]
    np.testing.assert_allclose(units.sum(0), acc.unit_sum, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(vectors.sum(0), acc.vector_sum, rtol=1e-5, atol=1e-4)
    for g, u in zip(groups, units):  # each input's own Σ u
        np.testing.assert_allclose(u, (g / np.linalg.norm(g, axis=1, keepdims=True)).sum(0), rtol=1e-5, atol=1e-5)


def test_per_input_sums_come_back_in_order_when_read_between_updates():
    """Per-input rows go into rows allocated as they fill (doubling): 150 inputs in updates of 1 to 7, read midway
    and at the end, equal the inputs' own sums in input order."""
    rng = np.random.default_rng(5)
    groups = _inputs(rng, 150)
    acc = LayerAccumulator(8, reservoir_size=8, svd_batch_size=4, per_input=True)
    start, sizes, read = 0, iter([1, 7, 3, 5, 2, 6, 4] * 30), False
    while start < len(groups):
        chunk = groups[start : start + next(sizes)]
        acc.update(np.concatenate(chunk), np.concatenate([np.full(len(g), i) for i, g in enumerate(chunk)]),
                   len(chunk))
        start += len(chunk)
        if start >= 70 and not read:
            assert acc.input_sums()[2].shape[0] == start
            read = True
    assert read and 150 <= acc._inputs.unit.shape[0] <= 256
    units, vectors, counts = acc.input_sums()
    assert counts[:, 0].tolist() == [len(g) for g in groups]
    np.testing.assert_allclose(vectors, [g.sum(0) for g in groups], rtol=1e-5, atol=1e-5)


def test_per_input_sums_survive_the_cache_state_and_a_merge():
    rng = np.random.default_rng(0)
    a, b = _stats(_inputs(rng)), _stats(_inputs(rng))
    again = LayerAccumulator.from_state(a.state())
    np.testing.assert_array_equal(again.input_sums()[0], a.input_sums()[0])
    n = a.input_sums()[2].shape[0] + b.input_sums()[2].shape[0]
    a.merge(LayerAccumulator.from_state(b.transfer_state()))
    assert a.input_sums()[2].shape[0] == n


def test_a_resample_with_every_input_once_is_the_measurement():
    """Weights of one per input give back avg cos and drift norm exactly: the resample formula is the estimator's."""
    rng = np.random.default_rng(1)
    groups = _inputs(rng, 20)
    acc = _stats(groups)
    stats = ModelStats("m", ["0"], [acc])
    res = bootstrap_stats(stats, 400, seed=3)
    cos = np.array([r.summaries()[0].mean_cosine for r in res.replicates])
    full = acc.summary().mean_cosine
    x = np.concatenate(groups)
    assert math.isclose(full, metrics.mean_cosine(x), rel_tol=1e-9)
    # the resamples scatter around the measurement, and are not all equal to it
    assert cos.std() > 0 and abs(np.median(cos) - full) < 3 * cos.std()
    assert res.unit == "batch" and res.n_units == 20 and res.fixed_layers == []


def test_resamples_are_seeded_and_name_their_unit():
    rng = np.random.default_rng(2)
    stats = ModelStats("m", ["0"], [_stats(_inputs(rng, 10))], meta={"bootstrap_unit": "input"})
    a = bootstrap_stats(stats, 50, seed=7)
    b = bootstrap_stats(stats, 50, seed=7)
    assert [r.summaries()[0].mean_cosine for r in a.replicates] == [r.summaries()[0].mean_cosine for r in b.replicates]
    assert a.unit == "input" and math.isnan(a.replicates[0].summaries()[0].twonn)


def test_no_per_input_sums_gives_no_resamples():
    acc = LayerAccumulator(4, reservoir_size=4, svd_batch_size=2)
    acc.update(np.ones((5, 4)))
    assert bootstrap_stats(ModelStats("m", ["0"], [acc]), 10, 0) is None
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_stats(ModelStats("m", ["0"], [acc]), 0, 0)


def test_interval_is_fragile_exactly_when_it_straddles_the_threshold_or_the_verdict_flips():
    v = np.linspace(0.15, 0.25, 101)
    straddles = interval(0.2, v, v < 0.2, 0.2, "<")
    assert straddles.fragile and straddles.low < 0.2 < straddles.high
    clear = interval(0.1, v - 0.1, v - 0.1 < 0.2, 0.2, "<")
    assert not clear.fragile and clear.holds_share == 1.0
    flips = interval(0.1, v - 0.1, np.arange(101) % 10 != 0, 0.2, "<")  # 10% of resamples fail the whole rule
    assert flips.fragile
    with pytest.raises(ValueError, match="holds_if"):
        interval(0.1, v, v > 0, 0.2, "!=")
    with pytest.raises(ValueError, match="finite"):
        interval(0.1, [math.nan] * 3, [True] * 3, 0.2, "<")


def test_labels_must_match_the_rows():
    acc = LayerAccumulator(3, reservoir_size=3, svd_batch_size=2, per_input=True)
    with pytest.raises(ValueError, match="input labels"):
        acc.update(np.ones((4, 3)), np.array([0, 1, 2]), 2)
    with pytest.raises(ValueError, match="input labels"):
        acc.update(np.ones((2, 3)), np.array([0, 5]), 2)


def test_resampled_avg_cos_does_not_pair_copies_of_one_input():
    """With one vector per input (CNN maps), pairing a duplicated input with its copy would add cos = 1 pairs and bias
    avg cos up by about (1 − avg cos)/inputs; the resamples centre on the measurement instead."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(20, 6)) + 0.3
    acc = LayerAccumulator(6, reservoir_size=4, svd_batch_size=2, per_input=True)
    acc.update(x, np.arange(20), 20)
    full = acc.summary().mean_cosine
    res = bootstrap_stats(ModelStats("m", ["0"], [acc]), 4000, seed=0)
    mean = np.mean([r.summaries()[0].mean_cosine for r in res.replicates])
    bias_if_paired = (1 - full) / 20
    assert abs(mean - full) < 0.25 * bias_if_paired


def _with_first_token_complement(rng, n_inputs=16, d=6):
    """Sequences of 3-6 tokens whose first token is far from the rest, with the profile without it in ``meta``."""
    from aniso.stats.pipeline import FIRST_TOKEN, _complement_summaries

    acc = LayerAccumulator(d, reservoir_size=8, svd_batch_size=8, per_input=True, complements=(FIRST_TOKEN,))
    for start in range(0, n_inputs, 4):
        groups = [rng.normal(size=(int(rng.integers(3, 7)), d)) + 0.5 for _ in range(4)]
        for g in groups:
            g[0] += 20.0
        x = np.concatenate(groups)
        labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
        positions = np.concatenate([np.arange(len(g)) for g in groups])
        acc.update(x, labels, 4, positions, {FIRST_TOKEN: positions == 0})
    return acc, _complement_summaries([acc], FIRST_TOKEN)


def test_the_profile_without_the_first_token_is_resampled_over_the_same_svd_batches():
    """The interval of a claim on the first-token-excluded profile (X.sink-token-and-profiles) resamples its SVD
    batches with the picks of the whole stream's: with identical batch values both resampled means agree in every
    resample; the real complement's resamples scatter around its own measurement."""
    rng = np.random.default_rng(11)
    acc, first = _with_first_token_complement(rng)
    b = len(acc.batch_svd)
    assert b >= 2 and len(first[0]["batch_svd"]) == b
    assert first[0]["batch_svd"] != acc.batch_svd  # the first tokens change every batch's anisotropy
    mirror = [dict(first[0], batch_svd=list(acc.batch_svd))]
    res = bootstrap_stats(ModelStats("m", ["0"], [acc], meta={"first_token_excluded": mirror}), 200, seed=4)
    main = [r.summaries()[0].svd_anisotropy_batch_mean for r in res.replicates]
    aside = [r.meta["first_token_excluded"][0]["svd_anisotropy_batch_mean"] for r in res.replicates]
    np.testing.assert_allclose(aside, main, rtol=1e-12)
    assert np.std(main) > 0 and all(r.meta["first_token_excluded"][0]["svd_anisotropy"] is None
                                    for r in res.replicates)
    real = bootstrap_stats(ModelStats("m", ["0"], [acc], meta={"first_token_excluded": first}), 200, seed=4)
    values = np.array([r.meta["first_token_excluded"][0]["svd_anisotropy_batch_mean"] for r in real.replicates])
    assert values.std() > 0
    assert values.min() <= first[0]["svd_anisotropy_batch_mean"] <= values.max()


def test_a_complement_without_batch_values_stays_at_its_measurement():
    """A cache entry from before the batch values were kept: the profile without the first token is not resampled
    (the claim's interval then spans one value), never resampled with made-up batches."""
    rng = np.random.default_rng(12)
    acc, first = _with_first_token_complement(rng)
    stale = [{k: v for k, v in first[0].items() if k != "batch_svd"}]
    res = bootstrap_stats(ModelStats("m", ["0"], [acc], meta={"first_token_excluded": stale}), 20, seed=4)
    assert all(r.meta["first_token_excluded"] is stale for r in res.replicates)


def _grouped_pair(groups_data, groups: int, seed: int = 0):
    """The same inputs into an accumulator keeping ``groups`` rows and one keeping a row per input."""
    x = np.concatenate(groups_data)
    labels = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups_data)])
    out = []
    for budget in (groups, len(groups_data)):
        acc = LayerAccumulator(x.shape[1], second_order=False, per_input=True, input_groups=budget, group_seed=seed)
        acc.update(x, labels, len(groups_data))
        out.append(acc)
    return out


def test_up_to_the_group_budget_the_bootstrap_is_the_per_input_one():
    """With no more inputs than groups, each input is its own row, in order: the same sums, the same resamples,
    the same interval as a per-input bootstrap; the unit is the input."""
    rng = np.random.default_rng(21)
    data = _inputs(rng, 40)
    grouped, per_input = _grouped_pair(data, 40)
    for a, b in zip(grouped.input_sums(), per_input.input_sums()):
        np.testing.assert_array_equal(a, b)
    wide = LayerAccumulator(8, second_order=False, per_input=True, input_groups=1000)
    wide.update(np.concatenate(data), np.concatenate([np.full(len(g), i) for i, g in enumerate(data)]), 40)
    meta = {"bootstrap_unit": "input"}
    runs = [bootstrap_stats(ModelStats("m", ["0"], [acc], meta), 300, seed=5) for acc in (grouped, wide)]
    values = [[r.summaries()[0].mean_cosine for r in res.replicates] for res in runs]
    assert values[0] == values[1]
    assert all(res.unit == "input" and res.n_units == res.n_inputs == 40 for res in runs)


def test_past_the_budget_inputs_go_to_random_groups_whose_sums_add_up():
    """500 inputs in 32 groups, fed in updates of 1 to 7 inputs and merged from two shards: 32 rows whose sums are
    the totals, each input in the group :func:`input_group` names, every group used, memory of 32 rows."""
    from aniso.stats.accumulators import input_group

    rng = np.random.default_rng(22)
    data = _inputs(rng, 500)
    acc = LayerAccumulator(8, second_order=False, per_input=True, input_groups=32, group_seed=9)
    start, sizes = 0, iter([1, 7, 3, 5, 2, 6, 4] * 200)
    while start < len(data):
        chunk = data[start : start + next(sizes)]
        acc.update(np.concatenate(chunk), np.concatenate([np.full(len(g), i) for i, g in enumerate(chunk)]),
                   len(chunk))
        start += len(chunk)
    units, vectors, counts = acc.input_sums()
    assert units.shape == (32, 8) and acc._inputs.unit.shape[0] == 32 and acc.n_inputs == 500
    group = input_group(np.arange(500), 32, 9)
    assert group[:32].tolist() == list(range(32)) and set(group.tolist()) == set(range(32))
    expected = np.zeros((32, 8))
    np.add.at(expected, group, [g.sum(0) for g in data])
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-4)
    assert counts[:, 0].tolist() == np.bincount(group, weights=[len(g) for g in data]).astype(int).tolist()
    again = LayerAccumulator.from_state(acc.state())
    assert again.n_inputs == 500 and again.input_groups == 32
    np.testing.assert_array_equal(again.input_sums()[1], vectors)
    other = LayerAccumulator(8, second_order=False, per_input=True, input_groups=32, group_seed=9)
    other.update(np.concatenate(data[:40]), np.concatenate([np.full(len(g), i) for i, g in enumerate(data[:40])]), 40)
    again.merge(LayerAccumulator.from_state(other.transfer_state()))
    assert again.n_inputs == 540 and again.input_sums()[0].shape == (32, 8)
    np.testing.assert_allclose(again.input_sums()[1].sum(0), vectors.sum(0) + sum(g.sum(0) for g in data[:40]),
                               rtol=1e-5, atol=1e-3)
    res = bootstrap_stats(ModelStats("m", ["0"], [acc], {"bootstrap_unit": "input"}), 20, seed=1)
    assert res.unit == "input group" and res.n_units == 32 and res.n_inputs == 500


def _topic_inputs(rng, n, d=4, tau=0.6):
    """Inputs of 1-5 vectors around an input's own offset (the tokens of a paragraph are not independent)."""
    out = []
    for _ in range(n):
        centre = 0.5 + tau * rng.normal(size=d)
        out.append(centre + rng.normal(size=(int(rng.integers(1, 6)), d)))
    return out


def test_the_bootstrap_over_groups_covers_as_the_per_input_one():
    """Seeded simulation: 160 data sets of 192 inputs (vectors correlated within an input); 90% percentile intervals
    of avg cos from 100 resamples over 32 random groups and over the 192 inputs. The share of intervals that hold
    the population's avg cos (from 20,000 inputs) agrees between the two within 3 Monte Carlo standard errors, and
    each is within 4 of the nominal 90%."""
    rng = np.random.default_rng(23)
    population = np.concatenate(_topic_inputs(rng, 20_000))
    u = population / np.linalg.norm(population, axis=1, keepdims=True)
    s, n = u.sum(0), u.shape[0]
    truth = (s @ s - n) / (n * (n - 1))
    hits = np.zeros((2, 160), bool)
    for r in range(160):
        grouped, per_input = _grouped_pair(_topic_inputs(rng, 192), 32, seed=r)
        for j, acc in enumerate((grouped, per_input)):
            res = bootstrap_stats(ModelStats("m", ["0"], [acc]), 100, seed=r)
            low, high = np.quantile([x.summaries()[0].mean_cosine for x in res.replicates], [0.05, 0.95])
            hits[j, r] = low <= truth <= high
        assert res.n_units == 192 and grouped.input_sums()[0].shape[0] == 32
    coverage = hits.mean(1)
    se = math.sqrt(0.9 * 0.1 / 160)
    print("coverage (groups, inputs):", coverage)
    assert abs(coverage[0] - coverage[1]) <= 3 * math.sqrt(2) * se, coverage
    assert np.all(np.abs(coverage - 0.9) <= 4 * se), coverage
