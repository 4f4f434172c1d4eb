"""Sharded extraction: two gloo processes on the CPU give the statistics of one, and accumulators merge exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aniso.stats.distributed import Shard
from aniso.stats.accumulators import LayerAccumulator


def _stream(seed=0, n=1000, d=6):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32) + 0.5


@pytest.mark.parametrize("cut", [1, 300, 400, 999])
def test_merge_equals_one_pass(cut):
    """First-order sums equal one pass over the stream within float64 rounding, Σxxᵀ within its float32 batch
    products' rounding (float64's where the shards' batches are the same as one pass's); the SVD batches of the two shards are the
    shards' own consecutive batches (equal to one pass when the cut falls on a batch boundary); the reservoir is
    full and drawn from the stream."""
    x = _stream()
    one = LayerAccumulator(6, reservoir_size=64, svd_batch_size=100, seed=3)
    one.update(x)
    a = LayerAccumulator(6, reservoir_size=64, svd_batch_size=100, seed=3)
    b = LayerAccumulator(6, reservoir_size=64, svd_batch_size=100, seed=4)
    a.update(x[:cut])
    b.update(x[cut:])
    a.merge(LayerAccumulator.from_state(b.transfer_state()))
    assert a.count == one.count and a.n_zero == one.n_zero
    for name in ("unit_sum", "vector_sum"):
        assert np.allclose(getattr(a, name), getattr(one, name), rtol=1e-12, atol=1e-9)
    # Σxxᵀ gathers each complete SVD batch's float32 products (centred_batch_products): the same batches give the
    # same products, other batches agree to the products' 1e-6.
    rel = 1e-12 if cut % 100 == 0 else 1e-6
    assert np.allclose(a.gram, one.gram, rtol=rel, atol=rel * np.abs(one.gram).max())
    assert a.summary().mean_cosine == pytest.approx(one.summary().mean_cosine, rel=1e-12)
    assert len(a.batch_svd) >= len(one.batch_svd) - 1
    if cut % 100 == 0:
        assert a.batch_svd == pytest.approx(one.batch_svd, rel=1e-9)
    res = a.reservoir_sample()
    assert res.shape == (64, 6)
    rows = {r.tobytes() for r in x}
    assert all(r.tobytes() in rows for r in res)
    assert len({r.tobytes() for r in res}) == 64


def test_merged_reservoir_is_uniform():
    """Over many merges of a 100-vector shard into a 900-vector one, each shard's share of a 50-vector reservoir is
    its share of the stream (0.1) on average."""
    x = np.arange(1000, dtype=np.float32)[:, None] + 1
    shares = []
    for seed in range(200):
        a = LayerAccumulator(1, reservoir_size=50, seed=seed)
        b = LayerAccumulator(1, reservoir_size=50, seed=seed + 10_000)
        a.update(x[:100])
        b.update(x[100:])
        a.merge(LayerAccumulator.from_state(b.transfer_state()))
        shares.append(float((a.reservoir_sample() <= 100).mean()))
    assert np.mean(shares) == pytest.approx(0.1, abs=0.015)


def test_merge_refuses_what_it_cannot_merge():
    a = LayerAccumulator(6, reservoir_size=8, svd_batch_size=100)
    with pytest.raises(ValueError, match="different settings"):
        a.merge(LayerAccumulator(5, reservoir_size=8, svd_batch_size=100))
    b = LayerAccumulator(6, reservoir_size=8, svd_batch_size=100)
    b.update(_stream(n=50))
    with pytest.raises(ValueError, match="partial SVD batch"):
        a.merge(LayerAccumulator.from_state(b.state()))


def test_shards_split_the_items():
    items = list(range(11))
    parts = [Shard(r, 3).items(items) for r in range(3)]
    assert sum(parts, []) == items and {len(p) for p in parts} <= {3, 4}
    assert Shard().items(items) == items and Shard().seed(5) == 5 and Shard(0, 2).seed(5) != Shard(1, 2).seed(5)
    with pytest.raises(ValueError, match="rank"):
        Shard(2, 2)


def _extract(rank: int, world: int, init: str, out: str) -> None:
    from aniso.stats.distributed import process_group
    from aniso.inputs.text import load_corpus
    from aniso.extract.modalities import MODALITIES, _subword_tokenizer
    from aniso.stats.pipeline import compute_model_stats
    from aniso.registry.entries import ModelEntry
    from aniso.common.settings import Settings
    from aniso.sources import LoadedModel
    from transformers import BertConfig, BertModel

    if world > 1:  # a spawned rank of its own (never the pytest process itself): one thread each
        torch.set_num_threads(1)
    torch.manual_seed(0)
    model = BertModel(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                                 vocab_size=300, max_position_embeddings=128)).eval()
    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="subword",
                                           architecture="transformer", role="encoder", family="bert",
                                           source=dict(kind="hub", repo="none/none")))
    loaded = LoadedModel(entry, model, _subword_tokenizer(300), "tiny random BERT", None)
    settings = Settings.from_sources({"reservoir_size": 128, "svd_batch_size": 200, "batch_size": 4,
                                      "max_length": 64}, environ={})
    corpus = load_corpus(None, 24, 0)
    shard = Shard(rank, world)
    with process_group(shard, backend="gloo", init_method=init or None):
        stats = compute_model_stats(loaded, MODALITIES["text"], corpus, settings, "tiny", shard=shard)
    # the group it started is torn down (a rank exiting with a live gloo group can abort: SIGABRT at exit)
    assert not torch.distributed.is_initialized()
    if rank == 0:
        arrays = {f"{i}.{k}": v for i, acc in enumerate(stats.layers) for k, v in acc.state().items()}
        np.savez(out, **arrays, tokens=np.array([stats.meta["n_tokens"]]),
                 cos=np.array([s.mean_cosine for s in stats.summaries()]))


def test_two_gloo_ranks_give_the_statistics_of_one(tmp_path):
    """A 2-rank sharded extraction (torch.distributed, gloo, CPU) of a tiny BERT over 24 paragraphs: the same
    token count, Σu, Σx and avg cos per layer as one process, within float64 rounding, and Σxxᵀ within the rounding
    of its float32 batch products."""
    import torch.multiprocessing as mp

    _extract(0, 1, "", str(tmp_path / "one.npz"))
    mp.spawn(_extract, args=(2, f"file://{tmp_path / 'rendezvous'}", str(tmp_path / "two.npz")), nprocs=2,
             join=True)
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert int(one["tokens"][0]) == int(two["tokens"][0]) > 200
    for key in one.files:
        if key.endswith((".unit_sum", ".vector_sum", ".norm_sum")) or key == "cos":
            assert np.allclose(one[key], two[key], rtol=1e-10, atol=1e-8), key
        if key.endswith(".gram"):  # each shard's own SVD batches, each batch's products float32 (errors relative
            # to the entries' |y|ᵀ|y|, so an entry near 0 is held to the matrix's scale)
            assert np.allclose(one[key], two[key], rtol=1e-6, atol=1e-6 * np.abs(one[key]).max()), key
        if key.endswith(".count"):
            assert one[key][:2].tolist() == two[key][:2].tolist(), key


def test_reading_sharded_statistics_that_were_not_extracted_names_the_command(tmp_path):
    """A run set to read statistics extracted over N shards does not extract them itself in one process: the model
    is unavailable, with the torchrun command that extracts them."""
    from aniso.stats.pipeline import StatsProvider
    from aniso.registry.entries import ModelEntry, Registry
    from aniso.common.settings import Settings
    from aniso.sources import ModelUnavailable

    entry = ModelEntry.model_validate(dict(id="tiny", modality="text", granularity="subword",
                                           architecture="transformer", role="encoder", family="bert",
                                           source=dict(kind="hub", repo="none/none")))
    settings = Settings.from_sources({"shards": 2, "cache_dir": str(tmp_path), "n_sequences": 4}, environ={})
    with pytest.raises(ModelUnavailable, match=r"torchrun --nproc-per-node 2 -m aniso.cli extract tiny"):
        StatsProvider(settings, Registry([entry])).get(entry)
