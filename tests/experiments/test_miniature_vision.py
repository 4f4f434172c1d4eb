"""The vision miniatures: batches, seeding, training log, checkpoint cache, registry schema, training split."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from aniso.experiments import miniature_vision as mv
from aniso.inputs.media import InputsUnavailable, load_images, load_images_excluding
from aniso.registry.entries import RegistryError, load_registry


def _photos(n: int, seed: int = 0, size=(40, 52)) -> list:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8), "RGB") for _ in range(n)]


def test_rotation_batch_is_a_rotated_crop_of_a_training_image():
    pixels = torch.arange(3 * 3 * 20 * 20, dtype=torch.float32).reshape(3, 3, 20, 20)
    x, k = mv.rotation_batch(pixels, 12, 16, torch.Generator().manual_seed(0))
    assert x.shape == (12, 3, 16, 16) and k.dtype == torch.int64 and set(k.tolist()) <= {0, 1, 2, 3}
    for j in range(12):
        back = torch.rot90(x[j], -int(k[j]), dims=(1, 2))
        found = any(torch.equal(c, pixels[i, :, y:y + 16, xo:xo + 16])
                    for i in range(3) for y in range(5) for xo in range(5)
                    for c in (back, back.flip(-1)))
        assert found, f"sample {j} is not a rotated (flipped) crop"


def test_rotation_batch_depends_only_on_the_generator_seed():
    pixels = torch.randn(4, 3, 18, 18)
    a = mv.rotation_batch(pixels, 8, 16, torch.Generator().manual_seed(3))
    b = mv.rotation_batch(pixels, 8, 16, torch.Generator().manual_seed(3))
    c = mv.rotation_batch(pixels, 8, 16, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("arch", sorted(mv.ARCHITECTURES))
def test_build_model_is_seeded_and_leaves_the_global_rng(arch):
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    m1 = mv.build_model(arch, 32, seed=5)
    after = torch.rand(1)
    m2 = mv.build_model(arch, 32, seed=5)
    m3 = mv.build_model(arch, 32, seed=6)
    assert torch.equal(before, after)
    s1, s2, s3 = m1.state_dict(), m2.state_dict(), m3.state_dict()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    assert any(not torch.equal(s1[k], s3[k]) for k in s1 if s1[k].dtype.is_floating_point)
    out = m1.eval()(pixel_values=torch.randn(2, 3, 32, 32), output_hidden_states=True)
    assert out.logits.shape == (2, mv.N_ROTATIONS) and len(out.hidden_states) >= 2


def test_rotation_accuracy_of_a_constant_predictor_is_chance():
    class Always0(torch.nn.Module):
        def forward(self, pixel_values):
            logits = torch.zeros(len(pixel_values), 4)
            logits[:, 0] = 1
            return types.SimpleNamespace(logits=logits)

    assert mv.rotation_accuracy(Always0(), torch.randn(5, 3, 16, 16)) == pytest.approx(0.25)


def test_recipe_validation():
    with pytest.raises(ValueError, match="unknown miniature architecture"):
        mv.VisionRecipe("mlp")
    with pytest.raises(ValueError, match="multiple of 8"):
        mv.VisionRecipe("vit", image_size=30)
    src = types.SimpleNamespace(arch="vit", seed=0, steps=1, config={"depth": 3})
    with pytest.raises(ValueError, match="unknown field"):
        mv.recipe_of(src)


def test_train_then_cache_round_trip(tmp_path):
    recipe = mv.VisionRecipe("convnext", seed=0, steps=3, image_size=32, batch_size=4)
    train, held = _photos(6), _photos(3, seed=1)
    first = mv.load_or_train(recipe, train, held, tmp_path, "k1")
    assert first.log["cache_hit"] is False and first.log["steps"] == 3
    assert first.log["loss"][-1][0] == 3 and 0 <= first.log["heldout_rotation_accuracy"] <= 1
    assert first.log["n_train_images"] == 6 and first.log["parameters"] == mv.parameter_count(first.model)
    again = mv.load_or_train(recipe, train, held, tmp_path, "k1")
    assert again.log["cache_hit"] is True and again.log["loss"] == first.log["loss"]
    s1, s2 = first.model.state_dict(), again.model.state_dict()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    # Same seed, same steps: training is reproducible.
    fresh = mv.train(recipe, train, held)
    assert all(torch.allclose(s1[k].float(), v.float(), atol=1e-6) for k, v in fresh.model.state_dict().items())


def test_corrupt_checkpoint_is_retrained_with_a_warning(tmp_path):
    recipe = mv.VisionRecipe("resnet", seed=0, steps=1, image_size=32, batch_size=2)
    path = tmp_path / "miniatures" / "k2.safetensors"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a safetensors file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = mv.load_or_train(recipe, _photos(3), _photos(2, 1), tmp_path, "k2")
    assert got.log["cache_hit"] is False
    assert any("cannot be used" in str(w.message) for w in caught)
    assert mv.load_or_train(recipe, _photos(3), _photos(2, 1), tmp_path, "k2").log["cache_hit"] is True


def test_training_split_excludes_the_measured_photographs(tmp_path):
    for i, im in enumerate(_photos(7)):
        im.save(tmp_path / f"p{i}.png")
    measured = load_images(tmp_path, 3, seed=0)
    training = load_images_excluding(measured)
    assert len(training.items) == 4 and not set(training.names) & set(measured.names)
    assert set(training.names) | set(measured.names) == {f"p{i}.png" for i in range(7)}
    with pytest.raises(InputsUnavailable, match="none is left to train on"):
        load_images_excluding(load_images(tmp_path, 7, seed=0))


_ENTRY = """
models:
  - id: m
    source: {{kind: miniature, recipe: vision-rotation, arch: {arch}, steps: {steps}{extra}}}
    modality: vision
    granularity: patch
    architecture: {architecture}
    role: encoder
    family: x
"""


def _registry(tmp_path, **kw):
    fields = {"arch": "vit", "steps": 5, "extra": "", "architecture": "transformer"} | kw
    p = tmp_path / "models.yaml"
    p.write_text(_ENTRY.format(**fields))
    return load_registry(p)


def test_registry_miniature_entries(tmp_path):
    trained = _registry(tmp_path).get("m")
    assert trained.miniature and {"miniature", "pretrained"} <= trained.all_tags
    init = _registry(tmp_path, steps=0).get("m")
    assert not init.trained and "untrained" in init.all_tags
    with pytest.raises(RegistryError, match="architecture 'cnn'"):
        _registry(tmp_path, arch="convnext")
    with pytest.raises(RegistryError, match="unknown recipe field"):
        _registry(tmp_path, extra=", config: {depth: 2}")


def test_training_runs_at_the_fixed_thread_count_and_puts_the_callers_back(monkeypatch):
    """A miniature is trained at TRAINING_THREADS intra-op threads whatever the caller's count (the order of a
    reduction split over threads changes the last bits, which training amplifies), and the caller's count is back
    afterwards."""
    from aniso.common.devices import TRAINING_THREADS

    seen = []
    batch = mv.rotation_batch
    monkeypatch.setattr(mv, "rotation_batch", lambda *a, **k: (seen.append(torch.get_num_threads()), batch(*a, **k))[1])
    before = torch.get_num_threads()
    torch.set_num_threads(TRAINING_THREADS + 1)
    try:
        mv.train(mv.VisionRecipe("resnet", seed=0, steps=2, image_size=32, batch_size=2), _photos(3), _photos(2, 1))
        assert torch.get_num_threads() == TRAINING_THREADS + 1
    finally:
        torch.set_num_threads(before)
    assert seen == [TRAINING_THREADS] * 2
