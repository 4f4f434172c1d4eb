"""What the streamed statistics keep: every tensor accounted for, and nothing but the SVD batches' scalars growing
with the number of inputs (aniso.stats.accounting)."""

from __future__ import annotations

import numpy as np
from aniso.stats import pipeline
from aniso.stats.accounting import GROWS_WITH_CORPUS, accounting, kept_tensors
from aniso.stats.accumulators import LayerAccumulator


def _full_accumulator(n_inputs: int, input_groups: int = 8) -> LayerAccumulator:
    rng = np.random.default_rng(n_inputs)
    acc = LayerAccumulator(6, reservoir_size=16, svd_batch_size=10, per_input=True, input_groups=input_groups,
                           complements=("first", "other"))
    for start in range(0, n_inputs, 4):
        lengths = rng.integers(1, 6, size=4)
        x = rng.normal(size=(int(lengths.sum()), 6))
        pos = np.concatenate([np.arange(n) for n in lengths])
        acc.update(x, np.repeat(np.arange(4), lengths), 4, pos, {"first": pos == 0, "other": pos == 2})
    return acc


def test_every_kept_tensor_is_accounted_for():
    """An accumulator with every part (second order, reservoir, per-input groups, two complements) whose readers have
    cached their results: each tensor it holds has a scaling in the table."""
    acc = _full_accumulator(40)
    acc.summary(), acc.input_sums(), acc.complement("first").summary()
    kept = kept_tensors(acc)
    assert [k.path for k in kept if k.scales_with is None] == []
    paths = {k.path for k in kept}
    assert {"_gram_done", "_reservoir", "_svd_buffer", "_inputs.unit", "_complements.*.gram_done", "_cache.*"} <= paths
    assert sum(k.bytes for k in kept) > 6 * 6 * 8


def test_only_the_svd_batch_scalars_grow_with_the_inputs():
    """The same accumulator after 24 and after 160 inputs (budget of 8 groups): every term but the SVD batches'
    scalars is the same size, and those are 8 bytes per SVD batch."""
    small, large = (accounting_of(_full_accumulator(n)) for n in (24, 160))
    assert {k for k in large if large[k] != small[k]} <= GROWS_WITH_CORPUS | {"total"}
    assert small["min(inputs, input_groups)·d"] == large["min(inputs, input_groups)·d"] == 2 * 8 * 6 * 4


def accounting_of(acc: LayerAccumulator) -> dict:
    from aniso.stats.results import ModelStats

    return accounting(ModelStats("m", ["0"], [acc]))


def test_a_tiny_llama_keeps_the_same_state_for_64_and_512_paragraphs(monkeypatch):
    """A LLaMA-shaped model (2 blocks of width 64, random weights) through the pipeline on 64 and on 512 paragraphs,
    with a budget of 32 input groups: the statistics' state (every layer, the first-token and massive-activation
    complements) is the same size but for the SVD batches' scalars."""
    from aniso.bench.extraction import byte_tokenizer, build_llama_7b
    from aniso.common.settings import Settings
    from aniso.extract.hidden import iter_text_hidden_states, layer_names
    from aniso.registry.entries import ModelEntry

    monkeypatch.setattr(pipeline, "INPUT_GROUPS", 32)
    model, tok = build_llama_7b(2, dtype="float32", config="llama-tiny"), byte_tokenizer()
    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="byte", architecture="transformer",
                                           role="decoder", family="llama", source=dict(kind="hub", repo="none/none")))
    rng = np.random.default_rng(0)
    words = ["anisotropy", "of", "the", "hidden", "states", "in", "a", "model", "layer", "token"]
    sizes = {}
    for n in (64, 512):
        texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 9)))) for _ in range(n)]
        settings = Settings(n_sequences=n, max_length=24, batch_size=32, reservoir_size=128, svd_batch_size=512)
        states = iter_text_hidden_states(model, tok, texts, batch_size=32, max_length=24)
        stats = pipeline.compute_stats(entry, states, layer_names(model), settings, {},
                                       first_token_excluded=True)
        assert stats.layers[0].n_inputs == n and stats.layers[0].input_sums()[0].shape[0] == 32
        sizes[n] = accounting(stats)
    assert sizes[512]["svd batches"] > sizes[64]["svd batches"]
    assert {k: v for k, v in sizes[64].items() if k not in GROWS_WITH_CORPUS | {"total"}} == \
        {k: v for k, v in sizes[512].items() if k not in GROWS_WITH_CORPUS | {"total"}}
