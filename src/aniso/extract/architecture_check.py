"""The offline architecture check: a tiny, randomly initialised model of each registry family through the
extraction path.

Pre-trained weights of most registry models cannot be had offline. The
registry's ``tiny`` field gives a transformers config (``model_type`` plus a
few small sizes) of the same architecture; :func:`check_architecture` builds it
with random weights (seeded), runs it through the very modality row
(:mod:`aniso.extract.modalities`) that produces the claims' statistics, and checks what
can go wrong there: the number of layers, the vector shapes, that padding is
excluded (a padded batch gives the same vectors as the inputs one at a time),
and, for Transformers, that the queries and keys of every attention layer are
captured. Such a result says "pipeline verified offline"; it is never a verdict
on a claim.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from .hidden import capture_queries_keys
from .modalities import modality_of
from ..registry.entries import ModelEntry

__all__ = ["ArchitectureCheck", "ArchitectureChecks", "check_architecture", "build_tiny_model"]

@dataclass
class ArchitectureCheck:
    """What :func:`check_architecture` found for one registry entry.

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


def build_tiny_model(entry: ModelEntry, seed: int = 0):
    """The entry's ``tiny`` config with random weights, and its tokenizer / feature extractor / image processor.

    Returns ``(model, tokenizer, processor)``. Weights are drawn under
    ``torch.manual_seed(seed)`` inside a forked RNG (the global stream is
    untouched). A miniature of the suite is built at its own initialisation.
    Raises ValueError naming the entry if it has no ``tiny`` config, transformers
    does not know its ``model_type``, its modality is not measured over inputs, its ``model_type`` is not a
    Transformer while the entry says it is one and is not tagged ``control`` (:func:`aniso.sources.detect.transformer_problem`),
    its ``model_type`` is not of the entry's ``family`` (:func:`aniso.sources.twin.family_problem`), or its
    ``vocab_size`` is below the ids of the tiny text model's tokenizer.
    """
    from transformers import AutoConfig, AutoModel

    from ..sources import SOURCE_KINDS

    initialised = SOURCE_KINDS[entry.source.kind].initialised
    if initialised is not None:  # the suite's own miniatures: their architecture at initialisation, small
        return initialised(entry, seed)
    if entry.tiny is None:
        raise ValueError(f"{entry.id}: registry entry has no 'tiny' config")
    modality = modality_of(entry)
    if modality is None:
        raise ValueError(f"{entry.id}: modality {entry.modality!r} is not measured over inputs")
    fields_ = dict(entry.tiny)
    model_type = fields_.pop("model_type")
    from ..sources.detect import transformer_problem

    from ..sources.twin import family_problem

    problem = transformer_problem(entry, model_type) or family_problem(entry, model_type)
    if problem:
        raise ValueError(problem)
    if entry.needs_remote_code:  # its repository's code (opted in): here, the code its twin carries
        from ..sources.twin import TwinError, remote_code_model

        try:
            model = remote_code_model(entry, seed)
        except TwinError as exc:
            raise ValueError(str(exc)) from None
        tokenizer, processor = modality.tiny_preprocessors(entry, model.config)
        return model, tokenizer, processor
    try:
        config = AutoConfig.for_model(model_type, **fields_)
    except ValueError as exc:
        raise ValueError(f"{entry.id}: transformers {__import__('transformers').__version__} cannot build "
                         f"model_type {model_type!r}: {str(exc)[:120]}") from None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModel.from_config(config, attn_implementation="eager").eval()
    tokenizer, processor = modality.tiny_preprocessors(entry, config)
    return model, tokenizer, processor


def check_architecture(entry: ModelEntry, seed: int = 0) -> ArchitectureCheck:
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
    modality = modality_of(entry)
    res = ArchitectureCheck(entry.id, model.config.model_type)
    inputs = modality.check_items(seed)

    def run(items, batch_size):
        return list(modality.run(model, tokenizer, processor, items, batch_size, "cpu", 64))

    with capture_queries_keys(model) as qk:
        together = run(inputs, len(inputs))
    alone = [b for x in inputs for b in run([x], 1)]
    batch = type(together[0])([torch.cat([b.layers[i] for b in together]) for i in range(len(together[0].layers))],
                              len(inputs))
    res.n_layers = len(batch.layers)
    res.layer_dims = [int(h.shape[1]) for h in batch.layers]
    res.n_vectors = [int(h.shape[0]) for h in batch.layers]
    expected = modality.expected_layers(model)
    res.checks["layers"] = (expected is not None and res.n_layers == expected,
                            f"{res.n_layers} hidden states, expected "
                            + (str(expected) if expected is not None else
                               f"an unknown number: no rule for model_type {model.config.model_type!r} in "
                               "aniso.extract.modalities (add one)"))
    rows_alone = [sum(b.layers[i].shape[0] for b in alone) for i in range(res.n_layers)]
    want_rows = [len(inputs)] * res.n_layers if modality.one_vector_per_input else rows_alone
    # every layer of a stack keeps every vector (padding aside): one row count per stack, none empty. A stack is the
    # layers of one width in one part of the model (an encoder-decoder's encoder and decoder layers, named enc.i and
    # dec.i, are two; a hierarchical vision model's stages, of growing width and fewer patches, one each); CNN maps:
    # one row per image
    names = modality.layer_names(model) or [str(i) for i in range(res.n_layers)]
    stacks: dict[tuple[str, int], set[int]] = {}
    for name, rows, dim in zip(names, res.n_vectors, res.layer_dims):
        stacks.setdefault((name.split(".")[0] if "." in name else "", dim), set()).add(rows)
    shapes_ok = (res.n_vectors == want_rows and len(names) == res.n_layers and min(res.n_vectors) > 0
                 and all(len(counts) == 1 for counts in stacks.values()) and all(d > 0 for d in res.layer_dims))
    if tokenizer is not None:  # text: one row per real token of the encoder
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
    if modality.queries_keys:
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


@dataclass
class ArchitectureChecks:
    """The offline architecture checks of one run: each distinct tiny configuration is checked once, and every
    registry entry's result (or the reason it could not be built) is recorded by id for the report."""

    seed: int = 0
    results: dict[str, dict] = field(default_factory=dict)
    _memo: dict[str, ArchitectureCheck] = field(default_factory=dict)

    def check(self, entry: ModelEntry) -> ArchitectureCheck:
        """:func:`check_architecture` for ``entry``, memoised by its tiny config. Raises ValueError (no buildable
        tiny config) after recording the reason."""
        import json

        key = json.dumps({"tiny": entry.tiny, "family": entry.family, "modality": entry.modality,
                          "architecture": entry.architecture,
                          "granularity": entry.granularity,
                          "miniature": [entry.source.arch, entry.source.config] if entry.miniature else None},
                         sort_keys=True)
        if key not in self._memo:
            try:
                self._memo[key] = check_architecture(entry, seed=self.seed)
            except ValueError as exc:
                self.results[entry.id] = {"model_id": entry.id, "passed": None, "reason": str(exc)}
                raise
        result = self._memo[key]
        self.results[entry.id] = dict(result.to_dict(), model_id=entry.id)
        return result
