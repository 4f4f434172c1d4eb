"""Every layer's statistics of a batch updated together (aniso.stats.stack.LayerStack) are those of the layers
updated one by one: the same sums (to the rounding of a batched product), the same reservoir draws, the same SVD
batches; a batch the stack cannot take, a non-finite layer and an accumulator read on its own keep their meaning;
and the kernels an update launches do not grow with the number of layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from aniso.bench.dispatch import HostSyncCounter, launches
from aniso.stats import stack as stack_module
from aniso.stats.accumulators import LayerAccumulator, read_checks
from aniso.stats.parts.base import rows_of_one
from aniso.stats.stack import LayerStack

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def _layers(n, d, *, svd=8, reservoir=10, per_input=True, wait_free=True, complements=()):
    return [LayerAccumulator(d, reservoir_size=reservoir, svd_batch_size=svd, seed=3 + i, per_input=per_input,
                             input_groups=5, wait_free=wait_free, complements=complements) for i in range(n)]


def _batches(rng, n_layers, d, dtype, n_batches, max_inputs=4, zero_row=True, together=False):
    """(every layer's rows, labels, inputs, positions) per batch: sequences of 2-8 tokens, each layer its own scale;
    one all-zero row in the second batch; ``together``: the layers' rows as views of one tensor (the extraction's)."""
    for b in range(n_batches):
        lengths = rng.integers(2, 9, size=int(rng.integers(1, max_inputs + 1)))
        m = int(lengths.sum())
        x = torch.as_tensor(rng.normal(size=(n_layers, m, d)) * np.arange(1, n_layers + 1)[:, None, None]
                            + rng.normal(size=d), dtype=dtype)
        if zero_row and b == 1:
            x[n_layers // 2, 0] = 0.0
        hs = [x[i] for i in range(n_layers)] if together else [x[i].clone() for i in range(n_layers)]
        labels = torch.as_tensor(np.repeat(np.arange(len(lengths)), lengths))
        positions = torch.as_tensor(np.concatenate([np.arange(k) for k in lengths]))
        yield hs, labels, len(lengths), positions


COMPLEMENTS = ("first", "large")


def _marks(hs, pos):
    """The complements' marks of a batch: the first token of each sequence (every layer's), and the rows whose
    first feature is above 1 (each layer's own), as :func:`aniso.stats.pipeline.compute_stats` marks the first
    tokens and the massive-activation rows."""
    return {"first": pos == 0, "large": torch.stack([h[:, 0].double() > 1.0 for h in hs])}


def _one_by_one(accs, batches):
    for hs, labels, k, pos in batches:
        marks = _marks(hs, pos) if accs[0].layout.complements else None
        checks = [acc.update(h, labels, k, pos, None if marks is None else
                             {"first": marks["first"], "large": marks["large"][i]}, wait=False)
                  for i, (acc, h) in enumerate(zip(accs, hs))]
        assert not any(read_checks(list(zip(accs, checks))))


def _together(accs, batches):
    stack = LayerStack.over(accs)
    assert stack is not None
    for hs, labels, k, pos in batches:
        assert stack.takes(hs, [labels] * len(hs), [pos] * len(hs))
        checks = stack.update(hs, labels, k, pos, _marks(hs, pos) if accs[0].layout.complements else None)
        assert not any(read_checks(list(zip(accs, checks))))


def _assert_same(accs, others, rtol=1e-6):
    """The same state and summary: whole numbers and the reservoir equal, sums within ``rtol`` of the array's scale
    (the float32 products of an SVD batch, batched, round differently: ~1e-7 of the Gram matrix; the rows here are
    of scale 1)."""
    for a, b in zip(accs, others):
        sa, sb = a.transfer_state(), b.transfer_state()
        assert sa.keys() == sb.keys()
        for key in sa:
            u, v = np.asarray(sa[key]), np.asarray(sb[key])
            assert u.shape == v.shape, key
            if u.dtype.kind in "iub" or key == "reservoir":
                np.testing.assert_array_equal(u, v, err_msg=key)
            else:
                u, v = u.astype(np.float64), v.astype(np.float64)
                scale = np.nanmax(np.abs(u)) if u.size and not np.all(np.isnan(u)) else 0.0
                # (a sum that cancels to about 0, Σu of ±1 at d = 1, is judged on the rows' scale: 1e-6 of 1)
                np.testing.assert_allclose(u, v, rtol=rtol, atol=rtol * max(scale, 1e-6), equal_nan=True,
                                           err_msg=key)
        _same_summary(a, b, rtol)
        for name in a.layout.complements:
            ca, cb = a.complement(name), b.complement(name)
            assert ca.count == cb.count
            np.testing.assert_allclose(ca.batch_svd, cb.batch_svd, rtol=rtol, atol=rtol)
            if ca.count >= 2:
                _same_summary(ca, cb, rtol)


def _same_summary(a, b, rtol):
    """The same summary, or the same refusal (a reservoir of too few directions, say)."""
    outcomes = []
    for acc in (a, b):
        try:
            outcomes.append(acc.summary())
        except ValueError as exc:
            outcomes.append(str(exc))
    fa, fb = outcomes
    if isinstance(fa, str) or isinstance(fb, str):
        assert fa == fb
        return
    for name in fa.__dataclass_fields__:
        p, q = getattr(fa, name), getattr(fb, name)
        if isinstance(p, float):
            assert (math.isnan(p) and math.isnan(q)) or abs(p - q) <= rtol * max(1.0, abs(p)), (name, p, q)
        else:
            assert p == q, (name, p, q)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_layers=st.integers(2, 4), d=st.integers(1, 6), dtype=st.sampled_from(sorted(DTYPES)),
       per_input=st.booleans(), svd=st.integers(2, 14), reservoir=st.integers(0, 15), n_batches=st.integers(1, 5),
       wait_free=st.booleans(), budget=st.sampled_from([1, 1 << 30]), together=st.booleans(),
       complements=st.booleans(), seed=st.integers(0, 99))
def test_updated_together_is_updated_layer_by_layer(n_layers, d, dtype, per_input, svd, reservoir, n_batches,
                                                     wait_free, budget, together, complements, seed):
    """Any widths, dtypes, SVD batch sizes (wide and long), reservoirs, layer groups (``budget`` 1: one layer per
    group) and complements (rows left out: the first tokens, every layer's; rows marked in each layer), against the
    layers one by one on either path (the GPU's, ``wait_free``, or the CPU's)."""
    make = lambda wait_free: _layers(n_layers, d, svd=svd, reservoir=reservoir,  # noqa: E731
                                     per_input=per_input, wait_free=wait_free,
                                     complements=COMPLEMENTS if complements else ())
    batches = list(_batches(np.random.default_rng(seed), n_layers, d, DTYPES[dtype], n_batches, together=together))
    alone, together_ = make(wait_free), make(True)
    _one_by_one(alone, batches)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stack_module, "STACK_BYTES", budget)
        _together(together_, batches)
    _assert_same(alone, together_)


def test_many_inputs_and_long_svd_batches():
    """More inputs in one update than one-hot rows (a segment sum), more than the input groups, and SVD batches of
    more rows than one block of products, on both paths."""
    for wait_free in (False, True):
        rng = np.random.default_rng(5)
        batches = list(_batches(rng, 3, 24, torch.float32, 6, max_inputs=80))
        alone = [LayerAccumulator(24, reservoir_size=64, svd_batch_size=1100, seed=i, per_input=True,
                                  input_groups=50, wait_free=wait_free) for i in range(3)]
        together = [LayerAccumulator(24, reservoir_size=64, svd_batch_size=1100, seed=i, per_input=True,
                                     input_groups=50, wait_free=True) for i in range(3)]
        _one_by_one(alone, batches)
        _together(together, batches)
        assert len(alone[0].batch_svd) >= 1
        _assert_same(alone, together)


@pytest.mark.parametrize("budget", [1, 1 << 40])
def test_marked_svd_batches_of_a_lanczos_width_closed_together(monkeypatch, budget):
    """SVD batches with marked rows (both complements) at a width that takes the Lanczos iteration (d > 128): every
    layer's sets' top directions found in one iteration (or one layer per run: ``budget`` 1 byte) give each layer's
    values as the layers one by one, on either path."""
    from aniso.stats.parts import second_order

    monkeypatch.setattr(second_order, "MARKED_CLOSE_BYTES", budget)
    batches = list(_batches(np.random.default_rng(11), 3, 160, torch.float32, 20, max_inputs=10, zero_row=False))
    for wait_free in (False, True):
        alone = _layers(3, 160, svd=176, reservoir=0, per_input=False, wait_free=wait_free, complements=COMPLEMENTS)
        together = _layers(3, 160, svd=176, reservoir=0, per_input=False, complements=COMPLEMENTS)
        _one_by_one(alone, batches)
        _together(together, batches)
        assert len(together[0].batch_svd) >= 2
        _assert_same(alone, together)


def test_stacked_after_the_stack_the_layers_go_on_alone():
    """A stack that stops (a batch it cannot take) leaves accumulators that take updates one by one: the same
    statistics as layers updated one by one throughout."""
    rng = np.random.default_rng(8)
    batches = list(_batches(rng, 3, 5, torch.float32, 6))
    alone, mixed = _layers(3, 5), _layers(3, 5)
    _one_by_one(alone, batches)
    _together(mixed, batches[:3])
    _one_by_one(mixed, batches[3:])
    _assert_same(alone, mixed)


@pytest.mark.parametrize("complements", [(), COMPLEMENTS])
def test_a_non_finite_layer_is_named_and_forms_no_svd_batch(complements):
    """A NaN in one layer of a batch that completes the SVD batches: that layer's check fails, the others' pass;
    the read forms no SVD batch, that layer never forms one (its next use raises), and the others form theirs from
    their checked rows at their next use, as layers updated one by one do."""
    hs = [torch.randn(7, 4) for _ in range(3)]
    hs[2][3, 1] = float("nan")
    pos = torch.tensor([0, 1, 2, 0, 1, 0, 1])
    marks = _marks(hs, pos) if complements else None
    formed = {}
    for how in ("alone", "together"):
        accs = _layers(3, 4, svd=6, complements=complements)
        if how == "alone":
            checks = [acc.update(h, None, None, pos, None if marks is None else
                                 {"first": marks["first"], "large": marks["large"][i]}, wait=False)
                      for i, (acc, h) in enumerate(zip(accs, hs))]
        else:
            checks = LayerStack.over(accs).update(hs, None, None, pos, marks)
        assert read_checks(list(zip(accs, checks))) == [False, False, True]
        assert [len(acc._parts["second-order"]._batch_svd) for acc in accs] == [0, 0, 0]
        with pytest.raises(ValueError, match="1 with NaN"):
            accs[2].summary()
        assert accs[2]._parts["second-order"]._batch_svd == []
        formed[how] = [acc.batch_svd for acc in accs[:2]]
    assert [len(v) for v in formed["together"]] == [1, 1]
    np.testing.assert_allclose(formed["together"], formed["alone"], rtol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("complements", [(), COMPLEMENTS])
def test_a_layer_read_on_its_own_forms_its_own_svd_batch(complements, dtype):
    """A layer read before the checks of the others (its summary) forms its own SVD batch alone; the others are then
    formed one by one, with the same values as layers updated one by one (float64 rows too, whose SVD buffers
    become float64 before the first rows, every layer's at once)."""
    rng = np.random.default_rng(9)
    batches = list(_batches(rng, 3, 4, dtype, 4))
    alone, together = _layers(3, 4, svd=6, complements=complements), _layers(3, 4, svd=6, complements=complements)
    _one_by_one(alone, batches)
    stack = LayerStack.over(together)
    for hs, labels, k, pos in batches:
        checks = stack.update(hs, labels, k, pos, _marks(hs, pos) if complements else None)
        together[1].summary()  # settles layer 1 alone
        assert not any(read_checks(list(zip(together, checks))))
    _assert_same(alone, together)


@pytest.mark.parametrize("why", ["the CPU's path", "one layer", "widths", "complements", "used", "reservoir"])
def test_layers_that_are_not_stacked(why):
    if why == "the CPU's path":  # (there a launch costs nothing and a layer alone stays in the cache)
        accs = _layers(3, 4, wait_free=False)
    elif why == "one layer":
        accs = _layers(1, 4)
    elif why == "widths":
        accs = [LayerAccumulator(4, wait_free=True), LayerAccumulator(5, wait_free=True)]
    elif why == "complements":  # (not the same ones)
        accs = _layers(2, 4, complements=("first-token",))[:1] + _layers(2, 4, complements=("other",))[1:]
    elif why == "used":
        accs = _layers(2, 4)
        accs[0].update(torch.randn(3, 4))
    else:
        accs = [LayerAccumulator(4, reservoir_size=10, wait_free=True),
                LayerAccumulator(4, reservoir_size=11, wait_free=True)]
    assert LayerStack.over(accs) is None


def test_a_batch_the_stack_does_not_take():
    accs = _layers(2, 4)
    stack = LayerStack.over(accs)
    x, labels = torch.randn(5, 4), torch.zeros(5, dtype=torch.long)
    assert stack.takes([x, x.clone()], [labels, labels], [None, None])
    assert not stack.takes([x, torch.randn(6, 4)], [labels, labels], [None, None])  # rows differ
    assert not stack.takes([x, x.double()], [labels, labels], [None, None])  # dtypes differ
    assert not stack.takes([x, x], [labels, labels.clone()], [None, None])  # labels differ (as objects)
    assert not stack.takes([x[:0], x[:0]], [labels, labels], [None, None])  # no rows
    assert not stack.takes([x], [labels], [None])  # not every layer
    stack.live = False
    assert not stack.takes([x, x.clone()], [labels, labels], [None, None])


def test_rows_of_one_tensor_are_found_without_a_copy():
    x = torch.randn(4, 3, 2)
    assert torch.equal(rows_of_one([x[i] for i in range(4)]), x)
    assert torch.equal(rows_of_one([x[1], x[2]]), x[1:3])
    assert torch.equal(rows_of_one([x[0], x[2]]), x[::2])
    assert rows_of_one([x[1], x[0]]) is None  # out of order
    assert rows_of_one([x[0], x[0]]) is None  # the same rows twice
    assert rows_of_one([x[0], x[1].clone()]) is None  # another storage
    assert rows_of_one([x[0]]) is None
    flags = torch.tensor([True, False, True])
    assert torch.equal(rows_of_one([flags[i] for i in range(3)]), flags)  # 0-d checks
    with torch.inference_mode():
        y = torch.randn(3, 2)
        views = [y[i] for i in range(3)]
    assert torch.equal(rows_of_one(views), y)  # inference tensors keep no _base


def test_the_extraction_gives_every_layers_rows_in_one_tensor():
    from aniso.extract.hidden import _rows_of_each

    states = [torch.randn(2, 5, 3) for _ in range(4)]
    flat = torch.tensor([0, 1, 2, 5, 6])
    rows = _rows_of_each(states, flat)
    assert rows_of_one(rows) is not None
    for r, h in zip(rows, states):
        assert torch.equal(r, h.reshape(-1, 3)[flat])
    mixed = _rows_of_each(states[:2] + [states[2].double()], flat)  # dtypes differ: a tensor each
    assert rows_of_one(mixed) is None and torch.equal(mixed[2], states[2].double().reshape(-1, 3)[flat])


def _launching(fn) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::") and launches(e))


def test_the_kernels_of_an_update_do_not_grow_with_the_layers():
    """One batch for every layer (per-input sums, an SVD batch completed, the reservoir): the same number of
    launching operators for 2 layers as for 8, and one wait for the device (the read of the checks)."""
    wait_free = True
    counts, waits = {}, {}
    for n in (2, 8):
        accs = _layers(n, 16, svd=32, reservoir=20, wait_free=wait_free)
        stack = LayerStack.over(accs)
        rng = np.random.default_rng(0)
        first = next(_batches(rng, n, 16, torch.float32, 1, together=True))
        stack.update(*first)  # (the first update also allocates)
        read_checks([(acc, None) for acc in accs])
        hs, labels, k, pos = next(_batches(np.random.default_rng(1), n, 16, torch.float32, 1, max_inputs=6,
                                           together=True))
        while hs[0].shape[0] < 32:
            hs, labels, k, pos = next(_batches(rng, n, 16, torch.float32, 1, max_inputs=6, together=True))

        def update():
            checks = stack.update(hs, labels, k, pos)
            read_checks(list(zip(accs, checks)))

        with HostSyncCounter() as sync:
            counts[n] = _launching(update)
        waits[n] = sync.total
        assert accs[0].batch_svd  # an SVD batch was completed
    assert counts[2] == counts[8], counts
    assert waits[2] == waits[8] == 1, waits


def _same_numbers(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same_numbers(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (p, q) in enumerate(zip(a, b)):
            _same_numbers(p, q, f"{where}[{i}]")
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1.0, abs(a)), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("variant", ["all", "every"])
def test_a_model_measured_with_the_layers_together_as_one_by_one(monkeypatch, variant):
    """The whole path (a LLaMA-shaped model of width 64 with random weights, 48 paragraphs in batches of 16: the
    extraction's rows of every layer in one tensor, the stack, per-input sums, SVD batches, the summaries; with
    ``every``, the statistics without the first tokens and without the massive-activation rows too): every layer's
    numbers on the path a GPU takes, the layers together, as on the CPU's, one by one."""
    from aniso.bench.extraction import _batch_order, llama_subject, run_variant
    from aniso.stats.results import summary_dict

    made = []
    original = LayerStack.over

    def spy(layers):
        made.append(original(layers))
        return made[-1]

    monkeypatch.setattr(LayerStack, "over", staticmethod(spy))
    subject = llama_subject("llama-tiny", layers=2, dtype="float32", paragraphs=48, max_length=128, batch_size=16,
                            device="cpu")
    batches = _batch_order(subject)
    together = run_variant(subject, variant, batches, wait_free=True)
    assert made and made[0] is not None
    made.clear()
    alone = run_variant(subject, variant, batches, wait_free=False)
    assert made[0] is None
    for key in ("first_token_excluded", "massive_excluded", "final_norm"):
        assert (key in together.meta) == (key in alone.meta) == (variant == "every")
        if key in together.meta:
            _same_numbers(together.meta[key], alone.meta[key], key)
    assert together.layers[0].batch_svd  # SVD batches were completed
    for a, b in zip(together.layers, alone.layers):
        fa, fb = summary_dict(a.summary()), summary_dict(b.summary())
        assert fa.keys() == fb.keys()
        for key, p in fa.items():
            q = fb[key]
            if isinstance(p, float):
                assert (math.isnan(p) and math.isnan(q)) or abs(p - q) <= 1e-6 * max(1.0, abs(p)), (key, p, q)
            else:
                assert p == q, (key, p, q)
        ia, ib = a.input_sums(), b.input_sums()
        for u, v in zip(ia, ib):
            np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-6 * float(np.abs(v).max()))


def test_a_vision_transformers_layers_share_their_image_labels():
    """A vision batch labels every layer of one shape with the same tensor of images, so the stack takes it (one
    set of rows in every layer); a CNN's maps of other shapes keep their own."""
    from types import SimpleNamespace

    from aniso.extract.hidden import _vision_batch

    class Model(torch.nn.Module):
        def __init__(self, shapes):
            super().__init__()
            self.shapes = shapes

        def forward(self, pixel_values, output_hidden_states=True):
            b = pixel_values.shape[0]
            return SimpleNamespace(hidden_states=tuple(torch.randn(b, *s) for s in self.shapes))

    processor = lambda chunk, return_tensors: {"pixel_values": torch.zeros(len(chunk), 3, 4, 4)}  # noqa: E731
    vit = _vision_batch(Model([(5, 8)] * 4), processor, [0, 1, 2], False, "cpu")
    assert all(r is vit.inputs[0] for r in vit.inputs) and vit.inputs[0].tolist() == [i // 5 for i in range(15)]
    accs = _layers(4, 8)
    assert LayerStack.over(accs).takes(vit.layers, vit.inputs, [None] * 4)
    cnn = _vision_batch(Model([(2, 3, 3), (4, 2, 2), (4, 2, 2)]), processor, [0, 1], True, "cpu")
    assert cnn.inputs[0] is not cnn.inputs[1] and cnn.inputs[1] is cnn.inputs[2]
    assert [r.tolist() for r in cnn.inputs] == [[0, 1]] * 3


def test_first_order_accumulators_updated_at_once():
    """The final normalisation's input and output (and a speech model's all-frames states): accumulators of
    first-order statistics only, without labels or positions, updated at once as one by one
    (aniso.stats.pipeline._first_order_updates); a batch of another shape drops the stack."""
    from aniso.stats.pipeline import _first_order_updates

    rng = np.random.default_rng(4)
    make = lambda: [LayerAccumulator(6, second_order=False, wait_free=True) for _ in range(2)]  # noqa: E731
    alone, together = make(), make()
    stack = LayerStack.over(together)
    assert stack is not None
    for b in range(4):
        hs = [torch.as_tensor(rng.normal(size=(5 + b, 6)), dtype=torch.float32) for _ in range(2)]
        mine, stack = _first_order_updates(stack, together, hs)
        assert stack is not None
        assert not any(read_checks([(acc, check) for acc, check, _ in mine]))
        assert not any(read_checks([(acc, acc.update(h, wait=False)) for acc, h in zip(alone, hs)]))
    mixed = [torch.randn(3, 6), torch.randn(4, 6)]
    mine, stack = _first_order_updates(stack, together, mixed)
    assert stack is None
    read_checks([(acc, check) for acc, check, _ in mine])
    for acc, h in zip(alone, mixed):
        acc.update(h)
    _assert_same(alone, together)


def test_marks_of_the_wrong_shape_are_refused():
    """Marks given as a tensor or as a function of a group of layers' rows must mark every row: else one line, and
    nothing added."""
    accs = _layers(2, 4, complements=COMPLEMENTS)
    stack = LayerStack.over(accs)
    hs = [torch.randn(5, 4) for _ in range(2)]
    pos = torch.arange(5)
    for bad in (torch.zeros(4, dtype=torch.bool), torch.zeros(3, 5, dtype=torch.bool)):
        with pytest.raises(ValueError, match=r"exclude\['large'\] must mark 5 rows"):
            stack.update(hs, None, None, pos, {"first": pos == 0, "large": bad})
    with pytest.raises(ValueError, match=r"must give \(2, 5\) bool"):
        stack.update(hs, None, None, pos, {"first": pos == 0, "large": lambda x: x[0, :, 0] > 0})  # one layer's
    assert [acc.count for acc in accs] == [0, 0]
    checks = stack.update(hs, None, None, pos, {"first": pos == 0, "large": lambda x: x[..., 0] > 0})
    assert not any(read_checks(list(zip(accs, checks))))
    assert [acc.excluded_count("large") for acc in accs] == [int((h[:, 0] > 0).sum()) for h in hs]


def test_float64_rows_after_a_layer_read_on_its_own_stay_in_its_buffer():
    """Float64 rows whose first batch completes an SVD batch, one layer read on its own before the checks: its
    buffer turns float64 as every layer's does (views of one tensor still), so the rows of the next batch, taken for
    every layer at once, reach it."""
    rng = np.random.default_rng(2)
    sizes = [10, 3, 4, 6]
    batches = [[torch.as_tensor(rng.normal(size=(m, 4)) + i, dtype=torch.float64) for i in range(2)] for m in sizes]
    alone, together = _layers(2, 4, svd=8, reservoir=0), _layers(2, 4, svd=8, reservoir=0)
    for hs in batches:
        assert not any(read_checks([(acc, acc.update(h, wait=False)) for acc, h in zip(alone, hs)]))
    stack = LayerStack.over(together)
    for b, hs in enumerate(batches):
        checks = stack.update(hs)
        if b == 0:
            together[0].summary()  # settles layer 0 alone
        assert not any(read_checks(list(zip(together, checks))))
    assert len(together[0].batch_svd) == 2
    _assert_same(alone, together)


def test_the_layers_spectra_found_together_are_each_layers_own(monkeypatch):
    """The whole-set SVD anisotropy and IsoScore of several layers (d = 160: the Lanczos iteration), their λ_max
    found in one lockstep iteration (SecondOrder.find_spectra, the GPU's paths; runs of one layer with a budget of
    one byte), are each layer's own summary to 1e-12; on the CPU's paths nothing is formed ahead; an update drops
    what was formed; the left-out sets' summaries take the same path."""
    from aniso.stats.parts import second_order
    from aniso.stats.parts.second_order import SecondOrder
    from aniso.stats.pipeline import _complement_summaries

    batches = list(_batches(np.random.default_rng(12), 3, 160, torch.float32, 20, max_inputs=10, zero_row=False))
    layers = _layers(3, 160, svd=176, reservoir=0, per_input=False, complements=COMPLEMENTS)
    _together(layers, batches)
    alone = [acc.summary() for acc in layers]
    for budget in (1, 1 << 40):
        monkeypatch.setattr(second_order, "SPECTRA_BYTES", budget)
        for acc in layers:
            acc._second._cache.pop("spectrum", None)
        SecondOrder.find_spectra(layers)
        assert all("spectrum" in acc._second._cache for acc in layers)
        for acc, own in zip(layers, alone):
            got = acc.summary()
            assert got.svd_anisotropy == pytest.approx(own.svd_anisotropy, rel=1e-12)
            assert got.isoscore == pytest.approx(own.isoscore, rel=1e-12)
    hs, labels, k, pos = batches[0]
    read_checks([(layers[0], layers[0].update(hs[0], labels, k, pos, {name: torch.zeros(len(labels), dtype=torch.bool)
                                                                      for name in COMPLEMENTS}, wait=False))])
    assert "spectrum" not in layers[0]._second._cache
    cpu = _layers(3, 160, svd=176, reservoir=0, per_input=False, wait_free=False)
    _one_by_one(cpu, batches)
    SecondOrder.find_spectra(cpu)
    assert not any("spectrum" in acc._second._cache for acc in cpu)
    together = _complement_summaries(layers, "first")
    for acc, got in zip(layers, together):
        own = acc.complement("first").summary()
        assert got["svd_anisotropy"] == pytest.approx(own.svd_anisotropy, rel=1e-12)
