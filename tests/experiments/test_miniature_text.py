"""The text miniatures: byte stream, batches, checkpoint grid, training run, checkpoint cache."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from aniso.experiments import miniature_text as mt

TEXT = b"The quick brown fox.\n\nJumps over the lazy dog; " + bytes(range(32, 127)) * 3 + b"\n"


def _tiny(arch: str, **kw) -> mt.TextRecipe:
    return mt.TextRecipe(arch, seed=kw.pop("seed", 0), total_steps=kw.pop("total_steps", 8), hidden_size=16,
                         num_layers=2, num_heads=2, seq_len=16, batch_size=4, **kw)


def test_checkpoint_steps_are_zero_then_powers_of_two_then_the_last():
    assert mt.checkpoint_steps(512) == [0, 4, 8, 16, 32, 64, 128, 256, 512]
    assert mt.checkpoint_steps(100) == [0, 4, 8, 16, 32, 64, 100]
    assert mt.checkpoint_steps(3) == [0, 3]


def test_byte_stream_matches_the_byt5_tokenizer_line_by_line():
    stream = mt.byte_stream(TEXT)
    tok = mt.byte_tokenizer()
    expected = [i for line in TEXT.decode().split("\n") if line.strip() for i in tok(line)["input_ids"]]
    assert stream.tolist() == expected
    assert (stream == mt.EOS_ID).sum() == 2 and stream.max() < mt.MASK_ID
    with pytest.raises(ValueError, match="no non-empty line"):
        mt.byte_stream(b"\n \n")


def test_causal_batches_are_windows_of_the_stream_and_their_own_labels():
    stream = mt.byte_stream(TEXT)
    recipe = _tiny("gpt2")
    x, y = mt.training_batch(stream, recipe, torch.Generator().manual_seed(0))
    assert x.shape == (4, 16) and torch.equal(x, y)
    windows = {tuple(stream[s:s + 16]) for s in range(len(stream) - 15)}
    assert all(tuple(row.tolist()) in windows for row in x)


def test_masked_batches_predict_about_15_percent_mostly_masked():
    stream = mt.byte_stream(TEXT * 20)
    recipe = mt.TextRecipe("bert", batch_size=256, seq_len=64, hidden_size=16, num_heads=2)
    x, y = mt.training_batch(stream, recipe, torch.Generator().manual_seed(1))
    chosen = y != -100
    assert 0.13 < chosen.float().mean() < 0.17
    masked = (x == mt.MASK_ID)
    assert not (masked & ~chosen).any()
    assert 0.75 < masked[chosen].float().mean() < 0.85


def test_recipe_rejects_bad_values():
    with pytest.raises(ValueError, match="unknown miniature text architecture"):
        mt.TextRecipe("t5")
    with pytest.raises(ValueError, match="divisible"):
        mt.TextRecipe("bert", hidden_size=30, num_heads=4)


def test_a_run_saves_every_checkpoint_and_they_load_back_identically(tmp_path):
    stream = mt.byte_stream(TEXT)
    recipe = _tiny("gpt2")
    log = mt.train_run(recipe, stream, tmp_path, "k", progress=None)
    assert [s for s, _ in log["loss"]] == [4, 8] and log["parameters"] > 0
    files = sorted(p.name for p in (tmp_path / "miniatures" / "k").iterdir())
    assert files == [f"step{s:07d}.safetensors" for s in (0, 4, 8)]
    ids = torch.from_numpy(stream[:16]).unsqueeze(0)
    first, _ = mt.load_checkpoint(recipe, 0, lambda: pytest.fail("must not train again"), tmp_path, "k")
    last, meta = mt.load_checkpoint(recipe, 8, lambda: pytest.fail("must not train again"), tmp_path, "k")
    assert meta["step"] == 8
    fresh = mt.build_model(recipe).eval()
    with torch.no_grad():
        assert torch.allclose(first(ids).logits, fresh(ids).logits)  # step 0 is the seeded initialisation
        assert not torch.allclose(last(ids).logits, fresh(ids).logits)
    assert last.get_output_embeddings().weight.data_ptr() == last.get_input_embeddings().weight.data_ptr()


def test_training_is_reproducible_from_the_seed(tmp_path):
    stream = mt.byte_stream(TEXT)
    a = mt.train_run(_tiny("bert"), stream, tmp_path, "a", progress=None)
    b = mt.train_run(_tiny("bert"), stream, tmp_path, "b", progress=None)
    c = mt.train_run(_tiny("bert", seed=1), stream, tmp_path, "c", progress=None)
    assert a["loss"] == b["loss"] and a["loss"] != c["loss"]


def test_a_corrupt_checkpoint_is_reported_and_the_run_trained_again(tmp_path):
    stream = mt.byte_stream(TEXT)
    recipe = _tiny("bert", total_steps=4)
    mt.train_run(recipe, stream, tmp_path, "k", progress=None)
    path = tmp_path / "miniatures" / "k" / "step0000004.safetensors"
    path.write_bytes(path.read_bytes()[:50])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, meta = mt.load_checkpoint(recipe, 4, lambda: stream, tmp_path, "k")
    assert any("cannot be used" in str(w.message) for w in caught) and meta["step"] == 4


def test_only_saved_steps_can_be_asked_for(tmp_path):
    with pytest.raises(ValueError, match="not a checkpoint"):
        mt.load_checkpoint(_tiny("gpt2"), 5, lambda: np.zeros(0), tmp_path, "k")


def test_the_shared_schedule_warms_up_linearly_then_decays_to_its_floor():
    from aniso.experiments import warmup_cosine_lr

    lrs = [warmup_cosine_lr(s, 100, 1e-3, 0.1, floor=0.1) for s in range(101)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)  # 10 warm-up steps
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))  # then never rises
    assert lrs[100] == pytest.approx(1e-4)  # cosine down to floor x lr
    assert warmup_cosine_lr(100, 100, 1e-3, 0.1) == pytest.approx(0.0)


def test_a_run_trains_at_the_fixed_thread_count_and_puts_the_callers_back(tmp_path, monkeypatch):
    """As the vision miniatures: TRAINING_THREADS intra-op threads during the run, the caller's count after it."""
    from aniso.common.devices import TRAINING_THREADS

    seen = []
    batch = mt.training_batch
    monkeypatch.setattr(mt, "training_batch", lambda *a, **k: (seen.append(torch.get_num_threads()), batch(*a, **k))[1])
    before = torch.get_num_threads()
    torch.set_num_threads(TRAINING_THREADS + 1)
    try:
        mt.train_run(_tiny("gpt2", total_steps=4), mt.byte_stream(TEXT), tmp_path, "k", progress=None)
        assert torch.get_num_threads() == TRAINING_THREADS + 1
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {TRAINING_THREADS}
