"""The device-resident statistics engine against the numpy float64 host accumulator it replaced.

:class:`reference_stats.ReferenceLayerAccumulator` is the previous implementation, kept verbatim. Every
statistic of :class:`aniso.stats.accumulators.LayerAccumulator` must agree with it to 1e-6 relative, on random data (Hypothesis:
dimensions, batch splits, dtypes, zero rows, one massive feature) and on MiniLM's hidden states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso.extract.hidden import first_token_attention_sums
from aniso.stats.accumulators import AttentionSink, LayerAccumulator, batch_svd_anisotropy
from reference_stats import ReferenceLayerAccumulator

REL = 1e-6


def _feed(acc, chunks, labels, positions, torch_in: bool, dtype=torch.float32, device="cpu"):
    for x, lab, pos, k in zip(chunks, labels, positions, [int(lab.max()) + 1 for lab in labels]):
        if torch_in:
            acc.update(torch.from_numpy(x).to(device, dtype), torch.from_numpy(lab).to(device), k,
                       torch.from_numpy(pos).to(device))
        else:
            acc.update(x, lab, k, pos)


def _assert_same(new: LayerAccumulator, ref: ReferenceLayerAccumulator) -> None:
    for name in ("unit_sum", "vector_sum", "unit_sq_sum", "sq_sum", "abs_max", "first_sum", "first_sq_sum"):
        np.testing.assert_allclose(getattr(new, name), getattr(ref, name), rtol=REL, atol=1e-9, err_msg=name)
    np.testing.assert_array_equal(new.abs_max_pos, ref.abs_max_pos)
    assert (new.count, new.n_zero, new.n_first) == (ref.count, ref.n_zero, ref.n_first)
    assert new.norm_sum == pytest.approx(ref.norm_sum, rel=REL)
    if ref.second_order:
        scale = np.abs(ref.gram).max()
        np.testing.assert_allclose(new.gram, ref.gram, rtol=REL, atol=REL * scale)
        np.testing.assert_allclose(new.batch_svd, ref.batch_svd, rtol=REL, atol=1e-12)
        np.testing.assert_array_equal(new.reservoir_sample(), ref.reservoir_sample())
    if ref.per_input:
        for a, b in zip(new.input_sums(), ref.input_sums()):
            np.testing.assert_allclose(a, b, rtol=REL, atol=REL * max(1.0, float(np.abs(b).max(initial=0))))
    try:
        s_ref = ref.summary()
    except ValueError as exc:  # e.g. a reservoir holding fewer than two non-zero vectors: the engine says so too
        with pytest.raises(ValueError, match=str(exc)[:30]):
            new.summary()
        return
    s_new = new.summary()
    for field, value in vars(s_ref).items():
        got = getattr(s_new, field)
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got), field
        elif isinstance(value, float):
            # A batch's anisotropy comes from float32 products (aniso.stats.accumulators.centred_batch_products):
            # within 1e-6 relative, but the spread of identical ratios (batches of two rows: all exactly 1) is 0
            # in float64 and a few 1e-9 from float32 products.
            absolute = 1e-7 if field == "svd_anisotropy_batch_std" else 1e-9
            assert got == pytest.approx(value, rel=REL, abs=absolute), field
        else:
            assert got == value, field


@st.composite
def streams(draw):
    d = draw(st.integers(2, 24))
    n_chunks = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    chunks, labels, positions = [], [], []
    for _ in range(n_chunks):
        seqs = draw(st.integers(1, 4))
        lengths = rng.integers(1, 9, size=seqs)
        x = rng.normal(size=(int(lengths.sum()), d)).astype(np.float32)
        if draw(st.booleans()):  # one massive feature on the first token of each sequence, as in decoders
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            x[starts, draw(st.integers(0, d - 1))] = 3e3
        if draw(st.booleans()):
            x[rng.integers(0, x.shape[0])] = 0.0  # an all-zero row: left out of the cosine
        chunks.append(x)
        labels.append(np.repeat(np.arange(seqs), lengths))
        positions.append(np.concatenate([np.arange(n) for n in lengths]))
    return d, chunks, labels, positions, seed


@settings(max_examples=40)
@given(streams(), st.booleans(), st.integers(2, 9), st.integers(0, 7))
def test_engine_matches_reference_on_random_streams(torch_device, stream, torch_in, svd_batch, reservoir):
    """On the CPU, and on a GPU where present: the engine's state lives on the device of the accumulator (NumPy
    input is moved there), and agrees with the float64 host reference to 1e-6."""
    d, chunks, labels, positions, seed = stream
    kwargs = dict(reservoir_size=reservoir, svd_batch_size=svd_batch, seed=seed, per_input=True)
    new, ref = LayerAccumulator(d, device=torch_device, **kwargs), ReferenceLayerAccumulator(d, **kwargs)
    _feed(new, chunks, labels, positions, torch_in, device=torch_device)
    assert new.gram_tensor().device.type == torch.device(torch_device).type
    _feed(ref, chunks, labels, positions, False)
    if ref.n_nonzero >= 2:  # fewer non-zero vectors have no avg cos (both raise, tested in test_stats)
        _assert_same(new, ref)


def test_engine_first_order_only_and_bf16_inputs_upcast():
    """Without second order only O(d) state is kept; bf16 batches are upcast once and agree with their float32
    values (bf16 is exact in float32)."""
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.normal(size=(50, 8)).astype(np.float32)).to(torch.bfloat16)
    new, ref = LayerAccumulator(8, second_order=False), ReferenceLayerAccumulator(8, second_order=False)
    new.update(x)
    ref.update(x.float().numpy())
    assert new.gram is None and new.reservoir.size == 0
    _assert_same(new, ref)


def test_engine_state_round_trip_and_merge_match_reference():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(37, 6)).astype(np.float32), rng.normal(size=(29, 6)).astype(np.float32)
    kw = dict(reservoir_size=16, svd_batch_size=10, seed=3)
    new, other = LayerAccumulator(6, **kw), LayerAccumulator(6, **kw)
    ref, ref_other = ReferenceLayerAccumulator(6, **kw), ReferenceLayerAccumulator(6, **kw)
    for acc, x in ((new, a), (other, b), (ref, a), (ref_other, b)):
        acc.update(x)
    new.merge(LayerAccumulator.from_state(other.transfer_state()))
    ref.merge(ReferenceLayerAccumulator.from_state(ref_other.transfer_state()))
    _assert_same(new, ref)
    again = LayerAccumulator.from_state(new.state())
    assert again.summary() == new.summary()
    # Reference states and engine states are the same arrays: a cache written by one is read by the other.
    assert set(new.state()) == set(ref.state())


def test_batch_svd_anisotropy_uses_the_smaller_gram_and_agrees_both_ways():
    """d > b takes the centred b × b Gram matrix, d <= b the d × d scatter: same spectrum, same ratio."""
    rng = np.random.default_rng(4)
    wide = torch.from_numpy(rng.normal(size=(5, 40)))
    ratio, gram = batch_svd_anisotropy(wide)
    centred = wide - wide.mean(0)
    s = torch.linalg.svdvals(centred)
    assert float(ratio) == pytest.approx(float(s[0] ** 2 / (s**2).sum()), rel=1e-12)
    torch.testing.assert_close(gram, wide.T @ wide)
    assert math.isnan(float(batch_svd_anisotropy(torch.ones(4, 3))[0]))


def test_attention_sums_token_weighted_and_per_sequence():
    """Two sequences of 3 and 1 real tokens: token-weighted mean over 4 rows, per-sequence mean of the 2 means."""
    probs = torch.zeros(2, 1, 3, 3)
    probs[0, 0, :, 0] = torch.tensor([1.0, 0.5, 0.0])  # sequence 0: first token at 0
    probs[1, 0, 0, 0] = 0.2  # sequence 1: one real token
    mask = torch.tensor([[True, True, True], [True, False, False]])
    tok, seq = first_token_attention_sums(probs, mask)
    assert tok.tolist() == pytest.approx([1.7])
    assert seq.tolist() == pytest.approx([0.5 + 0.2])
    sink = AttentionSink([1])
    sink.update([probs], mask)
    out = sink.result(eps=0.3)
    assert out["per_head"] == [[pytest.approx(1.7 / 4)]] and out["per_sequence"]["per_head"] == [[pytest.approx(0.35)]]
    assert out["share"] == 1.0 and out["per_sequence"]["share"] == 1.0


def test_engine_matches_reference_on_minilm_hidden_states():
    """MiniLM's real hidden states (packaged weights), every layer, labelled by paragraph with positions."""
    from aniso.extract.hidden import iter_text_hidden_states
    from aniso.registry.entries import load_registry
    from aniso.sources import load_model
    from pathlib import Path

    registry = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")
    loaded = load_model(registry.get("all-MiniLM-L6-v2"), None)
    texts = [f"The {w} of the river rose after the storm, and the town council met on {d}." for w, d in
             zip(["level", "colour", "temperature", "speed", "noise", "width"], range(6))] * 3
    kw = dict(reservoir_size=64, svd_batch_size=40, seed=5, per_input=True)
    new = ref = None
    for batch in iter_text_hidden_states(loaded.model, loaded.tokenizer, texts, batch_size=6, max_length=32):
        if new is None:
            new = [LayerAccumulator(h.shape[1], **kw) for h in batch.layers]
            ref = [ReferenceLayerAccumulator(h.shape[1], **kw) for h in batch.layers]
        for a, r, h, lab, pos in zip(new, ref, batch.layers, batch.inputs, batch.positions):
            a.update(h, lab, batch.n_sequences, pos)
            r.update(h.float().cpu().numpy(), lab.cpu().numpy(), batch.n_sequences, pos.cpu().numpy())
    for a, r in zip(new, ref):
        _assert_same(a, r)


@settings(max_examples=40)
@given(st.integers(2, 12), st.integers(3, 9), st.integers(0, 2**16), st.booleans(), st.booleans())
def test_complement_equals_a_pass_over_the_rows_kept(d, svd_batch, seed, massive, ties):
    """Leaving rows out by subtraction gives what a second accumulator fed only the kept rows gives (every sum,
    the whole-set SVD anisotropy, IsoScore, the massive-activation maximum and the position of the first row reaching
    it), and each SVD batch's anisotropy is that of the batch without its excluded rows. Two complements whose rows
    overlap (the first tokens, and random rows), on continuous values or on small integers (ties everywhere)."""
    rng = np.random.default_rng(seed)
    names = ("first", "some")
    main = LayerAccumulator(d, reservoir_size=5, svd_batch_size=svd_batch, seed=seed, complements=names)
    kept_accs = {name: LayerAccumulator(d, reservoir_size=0, svd_batch_size=10_000, seed=seed) for name in names}
    rows, marks = [], {name: [] for name in names}
    for _ in range(rng.integers(1, 5)):
        lengths = rng.integers(1, 7, size=rng.integers(1, 4))
        m = int(lengths.sum())
        x = (rng.integers(-3, 4, size=(m, d)) if ties else rng.normal(size=(m, d))).astype(np.float32)
        pos = np.concatenate([np.arange(n) for n in lengths])
        if massive:
            x[pos == 0, 0] = 2e3
        exclude = {"first": pos == 0, "some": rng.random(m) < 0.3}
        main.update(x, positions=pos, exclude={name: torch.from_numpy(mask) for name, mask in exclude.items()})
        for name, mask in exclude.items():
            if (~mask).any():
                kept_accs[name].update(x[~mask], positions=pos[~mask])
            marks[name].append(mask)
        rows.append(x)
    for name, kept_acc in kept_accs.items():
        if kept_acc.n_nonzero < 2:
            continue
        comp = main.complement(name)
        assert main.excluded_count(name) == int(np.concatenate(marks[name]).sum())
        for field in ("unit_sum", "vector_sum", "unit_sq_sum", "sq_sum", "abs_max", "first_sum", "first_sq_sum"):
            np.testing.assert_allclose(getattr(comp, field), getattr(kept_acc, field), rtol=1e-9, atol=1e-9,
                                       err_msg=field)
        np.testing.assert_array_equal(comp.abs_max_pos, kept_acc.abs_max_pos)
        assert comp.n_first == kept_acc.n_first
        a, b = comp.summary(), kept_acc.summary()
        # Subtracting the left-out rows' Gram matrix from the whole one cancels: with massive rows (2e3² = 4e6 against
        # entries of about 1) float64 leaves about 4e6·2⁻⁵² ≈ 1e-9 of each entry, which IsoScore's squares double.
        rel = 1e-7 if massive else 1e-9
        fields = ["count", "n_zero", "mean_cosine", "drift_norm", "mean_norm", "massive_value", "massive_feature",
                  "massive_position"]
        # The rogue dimensions' share divides by avg cos: where the kept rows' avg cos is 0 up to rounding (integer
        # rows can make it exactly 0, then the share is NaN), the subtraction's rounding decides it.
        fields += ["rogue_top3_share"] if abs(b.mean_cosine) > 1e-9 else []
        for field in fields:
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=rel, abs=1e-12, nan_ok=True), field
        # Complete SVD batches' products are float32 (centred_batch_products; the kept rows' accumulator has only a
        # partial batch): the second-order statistics agree to the float32 products' 1e-6. IsoScore, (S₁²/S₂ − 1) /
        # (d − 1), is 0 for two kept rows (one direction), where the products' relative error in tr C and ‖C‖²_F
        # (about 1e-7) is what is left of it: held to REL absolutely.
        assert a.svd_anisotropy == pytest.approx(b.svd_anisotropy, rel=REL, abs=1e-12, nan_ok=True)
        assert a.isoscore == pytest.approx(b.isoscore, rel=REL, abs=REL, nan_ok=True)
        x_all, m_all = np.concatenate(rows), np.concatenate(marks[name])
        expected = []
        for start in range(0, x_all.shape[0] - svd_batch + 1, svd_batch):
            kept = x_all[start : start + svd_batch][~m_all[start : start + svd_batch]]
            expected.append(metrics_svd(kept))
        np.testing.assert_allclose(comp.batch_svd, expected, rtol=REL, atol=1e-12)


def metrics_svd(x: np.ndarray) -> float:
    from aniso.metrics import svd_anisotropy

    if x.shape[0] < 2 or not np.ptp(x, axis=0).any():
        return math.nan
    return svd_anisotropy(x.astype(np.float64))


def test_massive_rows_follow_sun_et_al():
    """Above 100 and above 1000 x the median |activation|: a row with one 5,000 among values ~1 is massive; a row
    whose largest value is 50 is not (below 100), nor is one of 500 when the median is 1 ... 0.9 (below 1000 x)."""
    from aniso.stats.accumulators import massive_rows

    h = torch.ones(6, 32)
    h[1, 3] = 5000.0
    h[2, 0] = 50.0
    h[3, 5] = 500.0
    assert massive_rows(h).tolist() == [False, True, False, False, False, False]
    assert massive_rows(h.to(torch.bfloat16)).tolist() == [False, True, False, False, False, False]


def test_engine_matches_reference_when_batches_take_the_lanczos_path(torch_device):
    """SVD batches larger than :data:`aniso.metrics.LANCZOS_MIN_SIZE` on both sides (the d x d scatter of 200 x
    300 rows is 200 x 200 via the b x b Gram matrix; 400 rows of 300 take the d x d one): λ_max from the Lanczos
    iteration, every statistic still equal to the host reference's (dense SVD) to 1e-6."""
    from aniso.metrics import LANCZOS_MIN_SIZE

    rng = np.random.default_rng(7)
    for svd_batch in (200, 400):
        assert min(svd_batch, 300) > LANCZOS_MIN_SIZE
        kw = dict(reservoir_size=32, svd_batch_size=svd_batch, seed=1, per_input=True)
        new, ref = LayerAccumulator(300, device=torch_device, **kw), ReferenceLayerAccumulator(300, **kw)
        chunks = [(rng.normal(size=(n, 300)) + 4 * rng.normal(size=(1, 300))).astype(np.float32)
                  for n in (150, 330, 270)]
        labels = [np.repeat(np.arange(3), [n // 3, n // 3, n - 2 * (n // 3)]) for n in (150, 330, 270)]
        positions = [np.arange(len(lab)) % 7 for lab in labels]
        _feed(new, chunks, labels, positions, True, device=torch_device)
        _feed(ref, chunks, labels, positions, False)
        assert len(ref.batch_svd) >= 1
        _assert_same(new, ref)


@pytest.mark.parametrize("k", [3, 200])
def test_per_input_sums_by_one_hot_gemm_or_segment_sum(k):
    """Per-input sums agree with the reference whether they come from one-hot rows of the update's GEMM (few inputs
    in an update) or from a segment sum (more than ``_ONE_HOT_INPUTS``)."""
    from aniso.stats import accumulators

    assert (k <= accumulators._ONE_HOT_INPUTS) == (k == 3)
    rng = np.random.default_rng(k)
    labels = np.sort(rng.integers(0, k, size=600))
    x = rng.normal(size=(600, 7)).astype(np.float32) + 1
    new, ref = LayerAccumulator(7, per_input=True), ReferenceLayerAccumulator(7, per_input=True)
    for part in (slice(0, 250), slice(250, 600)):
        new.update(x[part], labels[part], k)
        ref.update(x[part], labels[part], k)
    _assert_same(new, ref)
