"""Offline verification of the extraction path on a tiny, randomly initialised model of each registry family.

Pre-trained weights of most registry models cannot be had offline. The
registry's ``tiny`` field gives a transformers config (``model_type`` plus a
few small sizes) of the same architecture; :func:`check_pipeline` builds it
with random weights (seeded), runs it through the very iterators that produce
the claims' statistics, and checks what can go wrong there: the number of
layers, the vector shapes, that padding is excluded (a padded batch gives the
same vectors as the inputs one at a time), and, for Transformers, that the
queries and keys of every attention layer are captured. Such a result says
"pipeline verified offline"; it is never a verdict on a claim.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .extract import (capture_queries_keys, iter_speech_hidden_states, iter_text_hidden_states,
                      iter_vision_hidden_states, layer_names, speech_layer_names)
from .registry import ModelEntry

__all__ = ["PipelineCheck", "check_pipeline", "build_tiny_model", "CHECK_TEXTS"]

#: Sentences of different lengths for the text check (padding must not change any vector).
CHECK_TEXTS = (
    "The tower is 324 metres tall, about the same height as an 81-storey building.",
    "Anisotropy of hidden states.",
    "During its construction, the Eiffel Tower surpassed the Washington Monument to become the tallest man-made "
    "structure in the world, a title it held for 41 years until the Chrysler Building was finished in 1930.",
)


@dataclass
class PipelineCheck:
    """What :func:`check_pipeline` found for one registry entry.

    ``checks`` maps each check to (passed, detail); ``passed`` is True when all pass.
    """

    model_id: str
    model_type: str
    n_layers: int = 0
    layer_dims: list[int] = field(default_factory=list)
    n_vectors: list[int] = field(default_factory=list)
    n_attention_sites: int = 0
    checks: dict[str, tuple[bool, str]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(ok for ok, _ in self.checks.values())

    def to_dict(self) -> dict:
        return {"model_id": self.model_id, "model_type": self.model_type, "n_layers": self.n_layers,
                "layer_dims": self.layer_dims, "n_vectors": self.n_vectors,
                "n_attention_sites": self.n_attention_sites, "passed": self.passed,
                "checks": {k: {"passed": ok, "detail": d} for k, (ok, d) in self.checks.items()},
                "seconds": self.seconds}


def _subword_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer trained on :data:`CHECK_TEXTS` (no files, no hub)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=min(vocab_size, 300), special_tokens=["<pad>", "<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(CHECK_TEXTS), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")


def build_tiny_model(entry: ModelEntry, seed: int = 0):
    """The entry's ``tiny`` config with random weights, and its tokenizer / feature extractor / image processor.

    Returns ``(model, tokenizer, processor)``. Weights are drawn under
    ``torch.manual_seed(seed)`` inside a forked RNG (the global stream is
    untouched). Raises ValueError naming the entry if it has no ``tiny``
    config or transformers does not know its ``model_type``.
    """
    from transformers import AutoConfig, AutoModel

    if entry.miniature:  # the suite's own miniature: its architecture at initialisation is already tiny
        from .experiments.miniature_vision import build_model, image_processor, recipe_of

        recipe = recipe_of(entry.source)
        return build_model(recipe.arch, recipe.image_size, seed).eval(), None, image_processor(recipe.image_size)
    if entry.tiny is None:
        raise ValueError(f"{entry.id}: registry entry has no 'tiny' config")
    fields_ = dict(entry.tiny)
    model_type = fields_.pop("model_type")
    try:
        config = AutoConfig.for_model(model_type, **fields_)
    except ValueError as exc:
        raise ValueError(f"{entry.id}: transformers {__import__('transformers').__version__} cannot build "
                         f"model_type {model_type!r}: {str(exc)[:120]}") from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModel.from_config(config, attn_implementation="eager").eval()
    tokenizer = processor = None
    if entry.modality == "text":
        if entry.granularity == "byte":
            from transformers import ByT5Tokenizer

            tokenizer = ByT5Tokenizer()
        elif model_type == "canine":
            from transformers import CanineTokenizer

            tokenizer = CanineTokenizer()
        else:
            tokenizer = _subword_tokenizer(config.vocab_size)
    elif entry.modality == "speech":
        from transformers import Wav2Vec2FeatureExtractor, WhisperFeatureExtractor

        processor = (WhisperFeatureExtractor(feature_size=config.num_mel_bins) if model_type == "whisper"
                     else Wav2Vec2FeatureExtractor(return_attention_mask=config.feat_extract_norm == "layer"))
    elif entry.modality == "vision":
        from .inputs.processors import pil_image_processor

        size = getattr(config, "image_size", 32)
        size = size if isinstance(size, int) else 32
        processor = pil_image_processor("ViTImageProcessor", size={"height": size, "width": size})
    return model, tokenizer, processor


def _check_inputs(entry: ModelEntry, seed: int):
    rng = np.random.Generator(np.random.PCG64(seed))
    if entry.modality == "speech":
        out = []
        for seconds in (0.6, 1.0):
            t = np.arange(int(16_000 * seconds)) / 16_000
            out.append((0.1 * np.sin(2 * np.pi * 220 * t) + 0.01 * rng.standard_normal(t.size)).astype(np.float32))
        return out
    if entry.modality == "vision":
        from PIL import Image

        return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB") for h, w in ((40, 48), (64, 64))]
    return list(CHECK_TEXTS)


def _run(entry, model, tokenizer, processor, inputs, batch_size):
    if entry.modality == "speech":
        return list(iter_speech_hidden_states(model, processor, inputs, batch_size=batch_size))
    if entry.modality == "vision":
        return list(iter_vision_hidden_states(model, processor, inputs, per_image=entry.architecture == "cnn",
                                              batch_size=batch_size))
    return list(iter_text_hidden_states(model, tokenizer, inputs, batch_size=batch_size, max_length=64))


def _expected_layers(entry: ModelEntry, model) -> int | None:
    cfg = model.config
    if entry.modality == "text":
        return len(layer_names(model))
    if entry.modality == "speech":
        return len(speech_layer_names(model))
    if entry.architecture == "transformer" and isinstance(getattr(cfg, "num_hidden_layers", None), int) \
            and cfg.model_type != "segformer":
        return cfg.num_hidden_layers + 1
    if cfg.model_type == "segformer":
        return cfg.num_encoder_blocks
    if cfg.model_type in ("resnet", "convnext"):
        return len(cfg.depths) + 1
    if cfg.model_type == "cvt":
        return len(cfg.depth)
    return None


def check_pipeline(entry: ModelEntry, seed: int = 0) -> PipelineCheck:
    """Run the entry's tiny random model through the extraction path and check it (see the module docstring).

    Checks: ``layers`` (as many hidden states as the architecture has
    layers, embedding output included); ``shapes`` (one row per real token /
    real frame / patch, or per image for CNNs, of the layer's width);
    ``masking`` (a padded batch gives the same vectors as one input at a time,
    within 1e-4 relative); ``queries-keys`` (Transformers: every attention
    module's Q and K are captured, one pair per forward, width
    heads × head_dim). Raises ValueError as :func:`build_tiny_model` does.
    """
    t0 = time.perf_counter()
    model, tokenizer, processor = build_tiny_model(entry, seed)
    res = PipelineCheck(entry.id, model.config.model_type)
    inputs = _check_inputs(entry, seed)
    with capture_queries_keys(model) as qk:
        together = _run(entry, model, tokenizer, processor, inputs, batch_size=len(inputs))
    alone = [b for x in inputs for b in _run(entry, model, tokenizer, processor, [x], batch_size=1)]
    batch = type(together[0])([torch.cat([b.layers[i] for b in together]) for i in range(len(together[0].layers))],
                              len(inputs))
    res.n_layers = len(batch.layers)
    res.layer_dims = [int(h.shape[1]) for h in batch.layers]
    res.n_vectors = [int(h.shape[0]) for h in batch.layers]
    expected = _expected_layers(entry, model)
    res.checks["layers"] = (expected is None or res.n_layers == expected,
                            f"{res.n_layers} hidden states" + (f", expected {expected}" if expected else ""))
    rows_alone = [sum(b.layers[i].shape[0] for b in alone) for i in range(res.n_layers)]
    if entry.architecture == "cnn":
        want_rows = [len(inputs)] * res.n_layers
    else:
        want_rows = rows_alone
    shapes_ok = res.n_vectors == want_rows and len(set(res.n_vectors)) >= 1 and all(d > 0 for d in res.layer_dims)
    if entry.modality == "text":
        real = [len(ids) for ids in tokenizer(list(inputs), truncation=True, max_length=64)["input_ids"]]
        shapes_ok &= (entry.role == "encoder-decoder" or res.n_vectors[0] == sum(real))
    res.checks["shapes"] = (bool(shapes_ok), f"rows per layer {res.n_vectors[:3]}..., one input at a time "
                                             f"{rows_alone[:3]}..., widths {sorted(set(res.layer_dims))}")
    worst = 0.0
    for i in range(res.n_layers):
        a = batch.layers[i].double()
        b = torch.cat([x.layers[i] for x in alone]).double()
        if a.shape != b.shape:
            worst = float("inf")
            break
        for stat_a, stat_b in ((a.sum(0), b.sum(0)), (a.norm(dim=1).sort().values, b.norm(dim=1).sort().values)):
            scale = max(float(stat_b.abs().max()), 1e-6)
            worst = max(worst, float((stat_a - stat_b).abs().max()) / scale)
    res.checks["masking"] = (worst <= 1e-4, f"max relative difference batch vs one at a time {worst:.2e}")
    if entry.architecture == "transformer":
        caps = qk.captured
        res.n_attention_sites = len(caps)
        n_layers_cfg = (getattr(model.config, "num_hidden_layers", None) or getattr(model.config, "n_layer", None)
                        or getattr(model.config, "num_layers", None) or getattr(model.config, "encoder_layers", None))
        if isinstance(getattr(model.config, "depths", None), (list, tuple)):
            n_layers_cfg = sum(model.config.depths)
        calls = sum(len(v) for v in caps.values()) // max(len(together), 1)  # per forward; ALBERT shares one module
        idle = [name for name, v in caps.items() if not v]  # e.g. Whisper's decoder: speech runs the encoder
        ok = len(idle) < len(caps)
        ok &= n_layers_cfg is None or calls >= n_layers_cfg
        widths = set()
        for site in qk.sites:
            for q, k in caps[site.name]:
                ok &= q.shape[-1] == site.n_heads * site.head_dim and k.shape[-1] % site.head_dim == 0
                widths.add((q.shape[-1], k.shape[-1]))
        res.checks["queries-keys"] = (bool(ok), f"{len(caps)} attention modules, {calls} Q/K captures per forward "
                                                f"(config layers {n_layers_cfg}; {len(idle)} not run), "
                                                f"Q/K widths {sorted(widths)}")
    res.seconds = round(time.perf_counter() - t0, 2)
    return res
