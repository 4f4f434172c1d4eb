"""A full-size twin's weights are drawn once each (aniso.sources.twin._drawn_once): the modules' own initialisation
is skipped while the model is built and transformers' init_weights draws them, so a 13 B twin does not draw 26
billion numbers on the CPU's one random-number stream before it is written."""

from __future__ import annotations

import pytest
import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

from aniso.sources.twin import _drawn_once

#: The aten operators that draw random numbers into a tensor in place.
_DRAWS = {"normal_", "uniform_", "random_", "bernoulli_", "exponential_", "log_normal_", "cauchy_", "geometric_"}


class _CountDraws(TorchDispatchMode):
    """Counts the numbers drawn by in-place random operators while active."""

    def __init__(self):
        super().__init__()
        self.drawn = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in _DRAWS:
            self.drawn += args[0].numel()
        return func(*args, **(kwargs or {}))


def _llama_config():
    return transformers.AutoConfig.for_model("llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             num_key_value_heads=4, intermediate_size=96, vocab_size=300)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_each_weight_is_drawn_once_as_transformers_initialises_it(dtype):
    config = _llama_config()
    torch.manual_seed(0)
    with _CountDraws() as usual:
        reference = transformers.LlamaModel._from_config(config, dtype=dtype)
    torch.manual_seed(0)
    with _CountDraws() as once:
        model = _drawn_once(transformers.LlamaModel, config, dtype)
    parameters = sum(p.numel() for p in model.parameters())
    assert usual.drawn > 1.5 * parameters  # the usual build draws the matrices twice
    assert once.drawn <= parameters
    assert all(p.dtype == dtype and torch.isfinite(p).all() for p in model.parameters())
    ref = dict(reference.named_parameters())
    for name, p in model.named_parameters():  # transformers' own init: N(0, 0.02²) matrices, norm weights 1
        if p.ndim == 1:
            assert torch.equal(p, ref[name]), name
        else:
            assert p.float().std().item() == pytest.approx(config.initializer_range, rel=0.1), name
    torch.manual_seed(0)
    again = _drawn_once(transformers.LlamaModel, config, dtype)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))  # seeded


def test_a_weight_transformers_leaves_is_drawn_by_its_module_or_the_model_is_built_the_usual_way(monkeypatch):
    """A weight init_weights does not draw is drawn by its module's reset_parameters; where one is drawn by neither
    (a weight-norm parametrisation's parts), the model is built the usual way: every weight drawn, none left NaN."""
    config = _llama_config()
    norm_class = type(transformers.LlamaModel(config).norm)

    def norms_only(self, module):
        if isinstance(module, norm_class):
            module.weight.data.fill_(1.0)

    monkeypatch.setattr(transformers.LlamaModel, "_init_weights", norms_only)
    model = _drawn_once(transformers.LlamaModel, config, torch.float32)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert model.embed_tokens.weight.std().item() == pytest.approx(1.0, rel=0.1)  # nn.Embedding's own N(0, 1)
    monkeypatch.setattr(transformers.LlamaModel, "_init_weights", lambda self, module: None)
    with _CountDraws() as count:
        model = _drawn_once(transformers.LlamaModel, config, torch.float32)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert count.drawn >= sum(p.numel() for p in model.parameters() if p.ndim > 1)  # the modules' own draws


def test_a_weight_norm_convolution_gets_the_usual_build():
    """wav2vec2's positional convolution is weight-normed: its parts are derived from the weight drawn as the
    module is built, which no later pass draws again; the twin is then built the usual way, every weight finite."""
    config = transformers.AutoConfig.for_model("wav2vec2", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                               intermediate_size=37, conv_dim=[8, 8], conv_stride=[5, 2],
                                               conv_kernel=[10, 3], num_conv_pos_embeddings=16,
                                               num_conv_pos_embedding_groups=2)
    model = _drawn_once(transformers.Wav2Vec2Model, config, torch.float32)
    assert all(torch.isfinite(p).all() for p in model.parameters())
