"""Registry → model source → inputs → extraction → streamed statistics (cached).

:class:`StatsProvider` is what claims ask for statistics: it loads a model only
when its statistics are not cached, streams its hidden states into one
:class:`~aniso.stats.accumulators.LayerAccumulator` per layer, and caches the result.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..inputs.media import InputsUnavailable
from ..extract.hidden import tokens_read
from ..extract.modalities import INPUTS, Modality, modality_of, sample_names
from ..registry.entries import ModelEntry, Registry
from ..common.settings import Settings, _where
from ..sources import (HubStatus, InputsMissing, LoadedModel, ModelRefused, ModelUnavailable, SourceContext,
                       declared_files_problem, load_model, source_fingerprint)
from .distributed import Shard
from ..common.devices import HostMemoryRelease, release_freed_host_memory
from ..common.files import exclusive, warn_as_file
from .accumulators import INPUT_GROUPS, AttentionSink, LayerAccumulator, ShuffledBatches, massive_rows, read_checks
from .parts.second_order import SecondOrder
from .stack import LayerStack
from .results import ModelStats, summary_dict
from .cache import JsonCache, StatsCache
from ..common.versions import cache_key

log = logging.getLogger(__name__)

__all__ = ["FIRST_ORDER", "SECOND_ORDER", "FIRST_TOKEN_EXCLUDED", "ALL_STATISTICS", "compute_stats", "compute_model_stats", "StatsProvider", "remembered",
           "BlockSweepProvider", "block_sweep_specs", "ModelUnavailable", "InputsMissing"]

#: Where the checks that refuse a model or its inputs live: the functions named ``*_problem`` in the source kinds
#: (:mod:`aniso.sources`: a folder, weights, tokenizer or config that cannot be measured faithfully) and ``_check_*``
#: in this module (the tokens and vectors its inputs give). Their source text is part of every statistics cache key
#: (:func:`refusal_checks_digest`).
REFUSAL_CHECK_FILES = (("sources", "*.py", "_problem"), ("stats", "pipeline.py", "_check_"))


@functools.cache
def refusal_checks_digest(root: Path | None = None) -> str:
    """A digest of the source text of every refusal check (:data:`REFUSAL_CHECK_FILES`), read from the files (nothing
    imported). It is part of the statistics cache key: an entry computed before a check was added or changed is not
    served, so a model or inputs that a check now refuses are refused even where an older entry for them exists (a
    cache hit never loads the model, so a check that runs at load would otherwise never see them). ``root``: the
    package folder read (default: this one's)."""
    import ast
    import hashlib

    root = root or Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder, pattern, marker in REFUSAL_CHECK_FILES:
        for path in sorted((root / folder).glob(pattern)):
            text = path.read_text(encoding="utf-8")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        node.name.endswith(marker) if marker == "_problem" else node.name.startswith(marker)):
                    digest.update(f"{path.name}:{node.name}:{ast.get_source_segment(text, node)}".encode())
    return digest.hexdigest()[:16]


#: Bumped when the untrained-block measurements change meaning, so old cache entries are not reused.
BLOCK_SWEEP_FORMAT = 1

#: The statistics a claim can read (its ``statistics`` in :mod:`aniso.registry.catalog`): ``first-order`` (count, Σ of unit
#: vectors, Σx, Σ‖x‖: avg cos, drift norm, mean norm; O(d) memory) and ``second-order`` (also Σxxᵀ, the batch-wise
#: SVD anisotropy and the reservoir sample: SVD anisotropy, TwoNN, sampled pairs; O(d²) memory per layer).
FIRST_ORDER = "first-order"
SECOND_ORDER = "second-order"
#: Also every statistic of text layers without the first token of each sequence (decoders' attention sink; R's
#: profiles are reported with and without it).
FIRST_TOKEN_EXCLUDED = "first-token-excluded"
#: Also the states entering and leaving the model's final normalisation (Machina & Mercer 2024).
FINAL_NORM = "final-norm"
#: Also the attention each head pays to the first token (text encoders and decoders; Gu et al. 2025).
ATTENTION_SINK = "attention-sink"
#: Also the partition-function isotropy of the input (and output) embedding matrix (Machina & Mercer 2024 §3).
EMBEDDING_ISOTROPY = "embedding-isotropy"
ALL_STATISTICS = frozenset({FIRST_ORDER, SECOND_ORDER, FIRST_TOKEN_EXCLUDED, FINAL_NORM, ATTENTION_SINK,
                            EMBEDDING_ISOTROPY})
#: Widest layer whose sums are also kept per input (for bootstrap intervals over the inputs): 16,384 keeps them for
#: every Transformer layer and for CNN maps from 7 x 7 x 320 down, at <= 128 KiB per input and layer, in at most
#: :data:`~aniso.stats.accumulators.INPUT_GROUPS` rows (32 MiB per layer at most, whatever the number of inputs).
PER_INPUT_MAX_DIM = 16_384
#: The fields of the inputs' description that name them (file or folder, label) rather than follow from their
#: content: a cache entry read back takes them from this run's inputs.
NAMING_FIELDS = ("name", "label", "origin")
#: The key of a model's statistics meta that records the registry source they were computed from (its fields and the
#: registry's folder): a cache entry read back for another folder or hub id with the same weights names the one this
#: run was given (:func:`origin_for`), not the one it was computed from.
SOURCE_META = "source"


def source_record(entry: ModelEntry, registry_dir: Path | str | None) -> dict:
    """What names where ``entry``'s weights come from: its source's fields and the registry's folder (against which a
    relative path is read)."""
    return {"fields": entry.source.model_dump(mode="json"),
            "registry_dir": None if registry_dir is None else str(registry_dir)}


def _named(record: dict) -> dict[str, str]:
    """The texts of a :func:`source_record` that an origin may name, by field: each text field as given, and a
    relative path also as read against the registry's folder (``field@``)."""
    import os

    names, base = {}, record.get("registry_dir")
    for name, value in (record.get("fields") or {}).items():
        if name == "kind" or not isinstance(value, str) or not value:
            continue
        names[name] = value
        expanded = os.path.expandvars(os.path.expanduser(value))
        names[f"{name}@"] = expanded if os.path.isabs(expanded) or base is None else os.path.join(base, expanded)
    return names


def origin_for(origin: str, was: dict | None, now: dict) -> str | None:
    """``origin`` (the origin of statistics computed from the source ``was``, a :func:`source_record`) as this run,
    whose source is ``now``, names it: each path, hub id or revision of ``was`` it names replaced by ``now``'s. None
    when it cannot be told: ``was`` was not recorded (a cache entry written before it was) and ``origin`` names none of
    ``now``'s texts."""
    import re

    if was is None:
        return origin if not _named(now) or any(v in origin for v in _named(now).values()) else None
    old, new = _named(was), _named(now)
    pairs = {old[k]: new[k] for k in old if k in new and old[k] != new[k] and old[k]}
    if not pairs:
        return origin
    pattern = re.compile("|".join(re.escape(k) for k in sorted(pairs, key=len, reverse=True)))
    return pattern.sub(lambda m: pairs[m.group(0)], origin)


def _refuse(entry: ModelEntry, name: str, exc: Exception, batch, n_seq: int) -> None:
    """Raise for a layer whose update failed its check: :class:`NonFiniteInputs` naming the inputs where some of a
    batch's inputs (or its only one) give NaN/inf hidden states, else :class:`ModelRefused` naming the model, the
    layer and the fault (one line)."""
    message = (f"{entry.id}: layer {name}: {exc}; the model cannot be measured (its weights or its inputs give "
               "non-finite states)" if "NaN or infinite" in str(exc) else f"{entry.id}: layer {name}: {exc}")
    bad = _non_finite_inputs(batch) if "NaN or infinite" in str(exc) else None
    if bad is not None and (len(bad) < batch.n_sequences or batch.n_sequences == 1):  # some inputs: name them
        items = (tuple(n_seq + i for i in bad) if getattr(batch, "sources", None) is None
                 else tuple(sorted(int(batch.sources[i]) for i in bad)))  # texts run in order of length
        raise NonFiniteInputs(message, items, f"layer {name}: {exc}") from None
    raise ModelRefused(message) from None


def compute_stats(entry: ModelEntry, batches, names: list[str] | None, settings: Settings, meta: dict,
                  second_order: bool = True, first_token_excluded: bool = False, shard: Shard = Shard(),
                  wait_free: bool | None = None) -> ModelStats:
    """Stream hidden-state batches (:class:`~aniso.extract.hidden.Batch`) into one accumulator per layer, every
    layer's updated at once on the paths a GPU takes (:class:`~aniso.stats.stack.LayerStack`: layers of one width).

    Memory is bounded by one batch of hidden states plus the accumulators'
    fixed state, whatever the number of inputs. With ``second_order`` False, and
    for layers wider than ``settings.second_order_max_dim``, only first-order
    statistics are kept (avg cos, drift norm, mean norm; no SVD anisotropy,
    TwoNN or sampled pairs). ``names`` are the layer names (None: numbered
    from the first batch). Speech batches' all-frames states go into
    ``meta["all_frames_mean_cosine"]`` (padding frames included), per layer. With ``first_token_excluded``,
    text batches' statistics without the first token of each sequence go into ``meta["first_token_excluded"]`` (one
    :func:`~aniso.stats.results.summary_dict` per layer), and without the rows that carry massive activations
    (:func:`~aniso.stats.accumulators.massive_rows`) into ``meta["massive_excluded"]`` (criterion, rows left out per layer,
    summaries); both are complements of the layer accumulators (rows left out by subtraction), without a reservoir:
    their TwoNN, sampled-pair cosine, standardised cosine and massive ratio are None, and their batch-wise SVD
    anisotropy is that of each SVD batch without its left-out rows. With ``settings.twonn_batches`` > 0, each
    second-order layer's rows also go into that many shuffled batches of ``settings.svd_batch_size`` vectors
    (:class:`~aniso.stats.accumulators.ShuffledBatches`), whose TwoNN mean ± std lands in ``meta["twonn_shuffled_batches"]`` (R
    §2.4's protocol over the whole corpus). ``shard``: this process's part of a sharded extraction
    (:mod:`aniso.stats.distributed`), whose reservoirs get a seed of their own. ``wait_free``: the update paths
    that read nothing back to the host, also on the CPU (default: off the CPU only; the same statistics either way;
    :mod:`aniso.bench.dispatch` sets it to count on the CPU what a GPU runs).

    Raises RuntimeError naming the model if there are no batches or the number of layers is not ``len(names)``.
    """
    layers: list[LayerAccumulator] | None = None
    stack: LayerStack | None = None
    norm_stack: LayerStack | None = None  # the final normalisation's input and output, updated at once
    frames_stack: LayerStack | None = None  # the all-frames states, updated at once
    norm_pair: list[LayerAccumulator] | None = None
    sink: AttentionSink | None = None
    all_frames: list[LayerAccumulator] | None = None
    complements: tuple[str, ...] = ()
    shuffled: list[ShuffledBatches | None] | None = None
    n_seq = 0
    t0 = time.perf_counter()
    release = HostMemoryRelease() if settings.release_host_memory else None
    from ..common.progress import bar

    for batch in bar(batches, desc=f"{entry.id}: hidden states", unit="batch"):
        if layers is None:
            if names is None:
                names = [str(i) for i in range(len(batch.layers))]
            if len(batch.layers) != len(names):
                if names == [str(i) for i in range(len(names))]:  # numbered from the config's num_hidden_layers
                    raise ModelRefused(
                        f"{entry.id}: the model runs {len(batch.layers) - 1} layers ({len(batch.layers)} hidden "
                        f"states: the embeddings' and each layer's), its config says num_hidden_layers "
                        f"{len(names) - 1}: a model whose layers were cut or added sets config.num_hidden_layers to "
                        "the layers it runs")
                raise RuntimeError(f"{entry.id}: expected {len(names)} hidden states, got {len(batch.layers)}")
            device = batch.layers[0].device  # the statistics live where the model put its hidden states
            # Without the first token of each sequence, and without the rows carrying massive activations: rows
            # the accumulators leave out by subtraction (no second pass, no second Gram matrix per batch).
            complements = COMPLEMENTS if first_token_excluded and batch.without_first_states is not None else ()
            layers = [
                LayerAccumulator(h.shape[1], settings.reservoir_size, settings.svd_batch_size,
                                 shard.seed(settings.seed + i),
                                 second_order=second_order and h.shape[1] <= settings.second_order_max_dim,
                                 per_input=h.shape[1] <= PER_INPUT_MAX_DIM, device=device, complements=complements,
                                 input_groups=INPUT_GROUPS, group_seed=settings.seed, wait_free=wait_free)
                for i, h in enumerate(batch.layers)
            ]
            unit = "input" if batch.inputs is not None else f"batch of up to {settings.batch_size} inputs"
            if settings.twonn_batches:
                shuffled = [ShuffledBatches(acc.dim, settings.twonn_batches, settings.svd_batch_size,
                                            shard.seed(settings.seed + 7919 * (i + 1)), device=device)
                            if acc.second_order else None for i, acc in enumerate(layers)]
            if batch.all_frames is not None:
                all_frames = [LayerAccumulator(h.shape[1], second_order=False, device=device, wait_free=wait_free)
                              for h in batch.all_frames]
                frames_stack = LayerStack.over(all_frames)
            stack = LayerStack.over(layers)  # every layer's statistics updated at once where they can be
        labels = batch.inputs if batch.inputs is not None else [None] * len(layers)
        positions = batch.positions if batch.positions is not None else [None] * len(layers)
        checks = []
        if stack is not None and not stack.takes(batch.layers, labels, positions):
            stack = None  # layer by layer from here on
        if stack is not None:
            pos = positions[0]
            exclude = {FIRST_TOKEN: pos == 0, MASSIVE: functools.partial(massive_rows, wait_free=True)} \
                if complements and pos is not None else None  # (the massive rows of each group of layers, as stacked)
            try:
                checks = stack.update(batch.layers, labels[0], batch.n_sequences if labels[0] is not None else None,
                                      pos, exclude)
            except ValueError as exc:  # bad labels (NaN/inf is read below, for every layer at once)
                _refuse(entry, names[0], exc, batch, n_seq)
        else:
            for name, acc, h, rows, pos in zip(names, layers, batch.layers, labels, positions):
                exclude = {FIRST_TOKEN: pos == 0, MASSIVE: massive_rows(h, wait_free=wait_free)} if complements and pos is not None else None
                try:
                    checks.append(acc.update(h, rows, batch.n_sequences if rows is not None else None, pos,
                                             exclude, wait=False))
                except ValueError as exc:  # a bad shape or bad marks (NaN/inf is read below, for every layer at once)
                    _refuse(entry, name, exc, batch, n_seq)
        extra = []  # (accumulator, its check, its batch) of the final norm's and the all-frames' updates
        if batch.final_norm is not None:
            if norm_pair is None:
                norm_pair = [LayerAccumulator(h.shape[1], second_order=False, device=h.device, wait_free=wait_free)
                             for h in batch.final_norm]
                norm_stack = LayerStack.over(norm_pair)
            updated, norm_stack = _first_order_updates(norm_stack, norm_pair, list(batch.final_norm))
            extra += updated
        if all_frames is not None:
            updated, frames_stack = _first_order_updates(frames_stack, all_frames, batch.all_frames)
            extra += updated
        # Every update's check (finite values) read at once, with what the SVD batches completed by this batch need:
        # one wait for the device per batch, not one per layer. NaN/inf hidden states: name the model and the first
        # such layer, never go on silently (no SVD batch is formed from them).
        failed = read_checks(list(zip(layers, checks)) + [(acc, check) for acc, check, _ in extra])
        for name, acc, h, bad in zip(names, layers, batch.layers, failed):
            if bad:
                _refuse(entry, name, acc.update_error(h), batch, n_seq)
        for (acc, _, h), bad in zip(extra, failed[len(layers):]):
            if bad:  # (the final norm's and the frames' states: the layer's own error, as their update raised it)
                raise acc.update_error(h)
        for bins, h in zip(shuffled or [], batch.layers):
            if bins is not None:
                bins.update(h)
        sums = batch.attention_sums
        if sums is not None and batch.mask is not None and sums and all(isinstance(x, tuple) for x in sums):
            if sink is None:
                sink = AttentionSink(n_layers=len(sums))
            for layer, (token_sum, sequence_sum) in enumerate(sums):
                sink.add_sums(layer, token_sum, sequence_sum)
            sink.add_batch(batch.mask)
        n_seq += batch.n_sequences
        # this batch's tensors are freed before the trim and the next forward pass, not after it
        batch = labels = positions = h = rows = pos = exclude = sums = token_sum = sequence_sum = extra = None
        if release is not None:  # freed memory back to the system when the resident set grew: no creeping peak RSS
            release.after_batch()
    if layers is None:
        raise RuntimeError(f"{entry.id}: the inputs gave no batches")
    meta = dict(meta, n_sequences=n_seq, n_tokens=layers[0].count, settings=settings.extraction_key(),
                seconds=round(time.perf_counter() - t0, 2), bootstrap_unit=unit)
    if all_frames is not None:
        meta["all_frames_mean_cosine"] = [a.summary().mean_cosine for a in all_frames]
        meta["all_frames_count"] = all_frames[0].count
    if complements:
        first = _complement_summaries(layers, FIRST_TOKEN)
        if first is not None:
            meta["first_token_excluded"] = first
        meta["massive_excluded"] = {
            "criterion": "rows with an activation above 100 and above 1000 x the median |activation| of the layer's "
                         "batch (Sun et al. 2024, §2), left out layer by layer",
            "rows": [acc.excluded_count(MASSIVE) for acc in layers],
            "layers": _complement_summaries(layers, MASSIVE)}
    if shuffled is not None:
        meta["twonn_shuffled_batches"] = [_twonn_batches(bins) for bins in shuffled]
    if norm_pair is not None and norm_pair[0].count >= 2:
        meta["final_norm"] = {"before": summary_dict(norm_pair[0].summary()),
                              "after": summary_dict(norm_pair[1].summary())}
    if sink is not None:
        meta["attention_sink"] = sink.result()
    return ModelStats(entry.id, names, layers, meta)


def _first_order_updates(stack: LayerStack | None, accs: list[LayerAccumulator], hs: list) -> tuple[list, LayerStack | None]:
    """Update ``accs`` (accumulators of first-order statistics, without labels, positions or marks) with ``hs``, one
    (m, d) tensor each: at once where ``stack`` takes them, else one by one (and the stack is dropped). Returns each
    update's (accumulator, its check, its rows) and the stack kept."""
    if stack is not None and stack.takes(hs, [None] * len(hs), [None] * len(hs)):
        return list(zip(accs, stack.update(hs), hs)), stack
    return [(acc, acc.update(h, wait=False), h) for acc, h in zip(accs, hs)], None


#: The rows a text model's statistics are also reported without: the first token of each sequence (the attention
#: sink of decoders) and the tokens carrying massive activations (Sun et al. 2024).
FIRST_TOKEN, MASSIVE = "first-token", "massive-activations"
COMPLEMENTS = (FIRST_TOKEN, MASSIVE)


def _complement_summaries(layers: list[LayerAccumulator], name: str) -> list[dict] | None:
    """Per layer, the :func:`~aniso.stats.results.summary_dict` of the rows left after leaving out complement ``name``, with
    ``batch_svd``: the SVD anisotropy of each complete SVD batch without those rows (the same batches as the whole
    stream's, so a bootstrap over batches resamples both coherently); None if some layer keeps fewer than two
    non-zero rows (nothing to measure)."""
    rests = []
    for acc in layers:
        rest = acc.complement(name)
        if rest.n_nonzero < 2:
            return None
        rests.append(rest)
    SecondOrder.find_spectra(rests)  # (on a GPU's paths: every layer's λ_max in one iteration)
    return [summary_dict(rest.summary()) | {"batch_svd": [float(v) for v in rest.batch_svd]} for rest in rests]


def _twonn_batches(bins: ShuffledBatches | None) -> dict | None:
    """R §2.4's intrinsic dimension of one layer: TwoNN over its full shuffled batches, mean ± std."""
    if bins is None:
        return None
    mean, std, n = bins.twonn()
    return {"mean": None if n == 0 else mean, "std": None if n == 0 else std, "n_batches": n,
            "batch_size": int(bins.bins.shape[1])}


def embedding_isotropy(model, model_id: str = "the model") -> dict:
    """Partition isotropy I(W) (:func:`aniso.metrics.partition_isotropy`) of the model's input embedding matrix and,
    where loaded and not tied to it (the same tensor or equal values, read from the weights and not from the
    config's ``tie_word_embeddings``), its output embedding matrix: raw and mean-centred, with the mean row norm (I(W)
    depends on the scale of W), the vocabulary size and the dimension. Machina & Mercer 2024 §3. Raises
    :class:`ModelRefused` (one line naming ``model_id``, the matrix, how many of its rows are not finite and the
    first one's token id) where a matrix holds NaN or infinite values: its weights are broken, whatever the inputs."""
    from .. import metrics

    out = {}
    try:
        emb = model.get_input_embeddings()
    except NotImplementedError:  # no vocabulary matrix (CANINE hashes code points into several small tables)
        out["input_embeddings"] = f"not available: {type(model).__name__} has no input embedding matrix"
        return out
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and not isinstance(getattr(head, "weight", None), torch.Tensor):
        head = None
    tied = head is not None and _same_matrix(head.weight, emb)
    for name, module in (("input", emb), ("output", None if tied else head)):
        if module is None or not hasattr(module, "weight"):
            continue  # a tied output matrix is the input one: measured once
        w = module.weight.detach()  # measured on its device, in float64 block by block
        try:
            raw, centred = metrics.partition_isotropies(w)
        except ValueError as exc:
            if "NaN or infinite" not in str(exc):
                raise
            bad = (~torch.isfinite(w).all(dim=1)).nonzero().flatten()  # (an error's path: the rows, for the message)
            raise ModelRefused(f"{model_id}: its {name} embedding matrix ({w.shape[0]:,} x {w.shape[1]}) holds NaN or "
                               f"infinite values in {len(bad):,} row{'s' * (len(bad) != 1)} (the first: token id "
                               f"{int(bad[0])}); the model cannot be measured (its weights are not finite)") from None
        norms = torch.cat([torch.linalg.vector_norm(w[i:i + 8192].to(torch.float64), dim=1)
                           for i in range(0, w.shape[0], 8192)])
        out[name] = {"raw": raw, "centred": centred, "mean_norm": float(norms.mean()), "vocab": int(w.shape[0]),
                     "dim": int(w.shape[1])}
    out["output_embeddings"] = ("tied to the input embeddings" if tied else
                                "measured" if "output" in out else "not loaded (base model without its LM head)")
    return out


def _same_matrix(head: torch.Tensor, emb) -> bool:
    """Whether an output embedding matrix ``head`` is the input one ``emb`` (its ``weight``): the same storage
    (tied, as ``tie_word_embeddings`` ties them) or equal values (tied, then saved and loaded as two copies). Read
    from the tensors, not from the config: a head replaced by weights of its own is measured although the config
    says tied, and one sharing the input matrix is tied although the config says not."""
    w = getattr(emb, "weight", None)
    if not isinstance(w, torch.Tensor) or head.shape != w.shape:
        return False
    if head is w or head.is_meta or w.is_meta:  # (a meta tensor holds no values to compare)
        return head is w
    if head.data_ptr() == w.data_ptr() and head.stride() == w.stride() and head.device == w.device:
        return True
    return head.dtype == w.dtype and head.device == w.device and bool(torch.equal(head, w))


def _attention_measurable(loaded: LoadedModel) -> bool:
    """Whether a model's attention probabilities are measured for the attention sink: a decoder's always (X.attention-
    sink reads decoders; one whose attention cannot be found is an error), an encoder's where its code gives them per
    layer (not CANINE's chunked local attention, which is then left unmeasured rather than failing the model)."""
    from ..extract.hidden import attention_modules

    return getattr(loaded.entry, "role", None) == "decoder" or bool(attention_modules(loaded.model))


def compute_model_stats(loaded: LoadedModel, modality: Modality, inputs, settings: Settings, fingerprint: str,
                        statistics: frozenset[str] = ALL_STATISTICS, shard: Shard = Shard(),
                        wait_free: bool | None = None) -> ModelStats:
    """Run ``inputs`` (a corpus, recordings or photographs) through ``loaded`` as its modality row says, and
    stream the hidden states into statistics (see :func:`compute_stats`); ``statistics`` says which are kept.

    With a ``shard`` of several processes, this process runs its contiguous part of the inputs and the statistics
    of every process are merged (:func:`aniso.stats.distributed.reduce_model_stats`; every process must call this). The
    per-layer summaries without the first token and with padding frames (``meta``) are not merged and are left out.
    ``wait_free``: see :func:`compute_stats`.
    """
    copies, counts = 0, {}
    if modality.tokens and loaded.tokenizer is not None:
        copies = _check_real_tokens(loaded, inputs, settings.max_length, counts)
        _warn_unknown_share(loaded, counts)
        if settings.release_host_memory:  # what loading and the check freed goes back before the first batch
            release_freed_host_memory()
    for _ in range(MAX_NON_FINITE_PASSES):
        try:
            stats = _compute_model_stats(loaded, modality, inputs, settings, fingerprint, statistics, shard, wait_free)
            if copies:  # paragraphs this model reads as another one's copy: the verdict's inputs label says so
                stats.meta["copies_as_read"] = copies
            if "unknown_token_share" in counts:  # in the inputs' provenance, as read by this model's tokenizer
                stats.meta.setdefault("corpus", {})["unknown_token_share"] = counts["unknown_token_share"]
            return stats
        except NonFiniteInputs as exc:  # files or paragraphs that make the model non-finite: left out and named
            if shard.world > 1 or not hasattr(inputs, "without") or len(exc.items) >= len(inputs.items):
                raise ModelRefused(str(exc)) from None
            reason = f"makes {loaded.entry.id} produce non-finite hidden states ({exc.fault})"
            inputs = inputs.without(exc.items, reason)
    raise ModelRefused(f"{loaded.entry.id}: more than {MAX_NON_FINITE_PASSES - 1} batches of its inputs give "
                       "non-finite hidden states; the model cannot be measured")


#: Passes over the inputs at most when files that make a model's hidden states non-finite are left out one batch at a
#: time (each pass stops at the first such batch).
MAX_NON_FINITE_PASSES = 4


class NonFiniteInputs(ModelRefused):
    """Hidden states that are NaN or infinite for some inputs of a batch: ``items`` their indices in the inputs
    given to :func:`compute_stats`, ``fault`` what was found (layer, count)."""

    def __init__(self, message: str, items: tuple[int, ...], fault: str):
        super().__init__(message)
        self.items, self.fault = items, fault


def _non_finite_inputs(batch) -> tuple[int, ...] | None:
    """The labels (0 .. n_sequences - 1 within the batch) of the inputs whose rows are NaN or infinite in some layer
    of ``batch``, or None when its rows are not labelled by input."""
    if batch.inputs is None:
        return None
    bad: set[int] = set()
    for h, rows in zip(batch.layers, batch.inputs):
        if rows is None:
            return None
        finite = torch.isfinite(h).all(dim=1)
        bad |= {int(i) for i in rows[~finite].tolist()}
    return tuple(sorted(bad)) or None


def _compute_model_stats(loaded: LoadedModel, modality: Modality, inputs, settings: Settings, fingerprint: str,
                         statistics: frozenset[str], shard: Shard, wait_free: bool | None = None) -> ModelStats:
    """:func:`compute_model_stats`, one pass over ``inputs``."""
    batches = modality.run(loaded.model, loaded.tokenizer, loaded.processor, shard.items(inputs.items),
                           settings.batch_size, settings.device, settings.max_length,
                           attentions=ATTENTION_SINK in statistics and _attention_measurable(loaded),
                           final_norm=FINAL_NORM in statistics)
    sharded = shard.world > 1
    try:
        extra = {"embedding_isotropy": embedding_isotropy(loaded.model, loaded.entry.id)} \
            if EMBEDDING_ISOTROPY in statistics and modality.tokens else {}
        read = tokens_read(loaded.model, settings.max_length)
        if modality.tokens and read < settings.max_length:
            extra["max_length_read"] = {"asked": settings.max_length, "read": read}
        stats = compute_stats(loaded.entry, batches, modality.layer_names(loaded.model), settings,
                              {"origin": loaded.origin, "fingerprint": fingerprint, "corpus": inputs.describe(),
                               "device": str(settings.device)} | loaded.meta | extra,
                              second_order=modality.second_order and SECOND_ORDER in statistics,
                              first_token_excluded=FIRST_TOKEN_EXCLUDED in statistics and not sharded, shard=shard,
                              wait_free=wait_free)
    except torch.OutOfMemoryError:
        raise out_of_memory(loaded.entry.id, settings) from None
    except IndexError as exc:  # a token id past the embedding's rows: the tokenizer and the config disagree
        raise vocabulary_mismatch(loaded, exc) from None
    except ModelUnavailable:
        raise
    except RuntimeError as exc:
        if "out of memory" not in str(exc).lower():
            raise
        raise out_of_memory(loaded.entry.id, settings) from None
    if not sharded:
        _check_two_vectors(loaded.entry.id, modality, stats)
        return stats
    from .distributed import reduce_model_stats

    for name in ("all_frames_mean_cosine", "all_frames_count", "twonn_shuffled_batches"):
        stats.meta.pop(name, None)
    stats = reduce_model_stats(stats)
    _check_two_vectors(loaded.entry.id, modality, stats)
    return stats


#: Largest :attr:`~aniso.stats.accumulators.LayerAccumulator.spread` of a layer whose hidden states are one vector
#: repeated (rounding only): real hidden states spread by 10⁻³ of their squared norm or more, even at avg cos 0.999.
SAME_VECTOR_SPREAD = 1e-9


def _check_two_vectors(model_id: str, modality: Modality, stats: ModelStats) -> None:
    """InputsRefused naming the setting that counts the inputs when a layer has fewer than 2 non-zero vectors (a CNN
    pools one photograph into one vector: ``n_images`` 1 gives one per layer), where avg cos has no pair to take; a
    :class:`ModelRefused` naming the layer when the inputs gave it 2 vectors or more and the model made them zero,
    or made every one the same vector (:data:`SAME_VECTOR_SPREAD`)."""
    few = min((acc.n_nonzero for acc in stats.layers), default=2)
    if few >= 2:
        for name, acc in zip(stats.layer_names, stats.layers):
            if acc.spread <= SAME_VECTOR_SPREAD:  # one vector repeated: SVD anisotropy, TwoNN, IsoScore are 0/0
                raise ModelRefused(f"{model_id}: layer {name}: its {acc.count} hidden states are one vector "
                                   f"(spread {acc.spread:.1e} of their squared norm): the model ignores its inputs "
                                   "(weights zero but the norms'?), and every statistic of the layer would describe "
                                   "one point (avg cos 1 by construction)")
        return
    layer, acc = min(enumerate(stats.layers), key=lambda item: item[1].n_nonzero)
    if acc.count >= 2:  # the inputs gave vectors enough: the model made them zero
        raise ModelRefused(f"{model_id}: layer {stats.layer_names[layer]}: {acc.n_zero} of {acc.count} hidden states "
                           f"are the zero vector, leaving {few} for avg cos: the model makes them zero, not the "
                           "inputs (all-zero weights?)")
    from ..inputs.forms import INPUT_FORMS

    form = INPUT_FORMS.get(modality.inputs)
    what = f"setting {form.size}" if form is not None else "the inputs"
    raise InputsRefused(f"{model_id}: {few} non-zero vector(s) in a layer from the inputs measured ({what}): avg cos "
                        f"needs at least 2; give more {form.noun if form is not None else 'inputs'}")


class InputsRefused(ModelRefused, ValueError):
    """Inputs too few or too thin to measure: texts given to the Python API as ``inputs`` (a list) that the model's
    tokenizer reads as too little text (:func:`_check_real_tokens`), or inputs that leave a layer fewer than 2
    vectors (:func:`_check_two_vectors`): a ValueError naming the argument or setting, and a :class:`ModelRefused` as
    the same refusal of setting ``corpus`` is."""


#: The share of a corpus's text tokens (special ones aside) a model's tokenizer reads as its unknown-word token
#: above which a run warns (:func:`_warn_unknown_share`): WikiText read by its models' own tokenizers gives well under
#: 1%; a tokenizer that does not lowercase on an uncased vocabulary gives about 11% (every capitalised word).
UNKNOWN_SHARE_WARNED = 0.05


def _warn_unknown_share(loaded: LoadedModel, counts: dict) -> None:
    """A RuntimeWarning (one line, named by the model's id as its file, giving the share) when more than
    :data:`UNKNOWN_SHARE_WARNED` of the text tokens :func:`_check_real_tokens` counted (``counts``) are the
    tokenizer's unknown-word token: those words share one input vector, and the measure is partly of it. Not a
    refusal: a model measured on text of another domain (a SMILES vocabulary on English) does so by design."""
    share = counts.get("unknown_token_share")
    if share is None or share <= UNKNOWN_SHARE_WARNED:
        return
    from ..common.files import warn_as_file

    token = getattr(loaded.tokenizer, "unk_token", None) or "the unknown-word token"
    # Shown as the model's own line ("ID:0: RuntimeWarning: ..."), short enough for a 100-column console.
    warn_as_file(str(loaded.entry.id), f"{share:.1%} of its tokens ({counts['unknown']} of "
                 f"{counts['unknown'] + counts['known']}) are {token}, over {UNKNOWN_SHARE_WARNED:.0%}: unknown words",
                 RuntimeWarning)


def _check_real_tokens(loaded: LoadedModel, inputs, max_length: int | None = None,
                       counts: dict | None = None) -> int:
    """Refuse a corpus that gives the model's tokenizer too little text to measure: fewer known tokens (neither special
    ones, [CLS], [SEP], padding, ..., nor the unknown-word token [UNK]) than there are paragraphs, or more unknown-word
    tokens than known ones (every unknown word shares one input vector, so such a corpus measures the [UNK] embedding,
    not the text: a corpus of emoji read by a WordPiece vocabulary), or, with sequences cut at ``max_length`` tokens
    (the setting; the tokenizer's special tokens of each sequence included), more special-token vectors than known
    ones among those measured (``max_length`` 3 leaves BERT one word between [CLS] and [SEP]). Its vectors would be
    those of the special tokens or of [UNK], and any verdict on them about the text is wrong. Tokenizes in chunks of
    256 paragraphs. Returns how many paragraphs this tokenizer reads as a copy of an earlier one, in the tokens
    measured (cut at ``max_length``), beyond those that are the same text (which the inputs' label counts): texts an
    uncased vocabulary or a normalisation makes one ("The Cat", "THE CAT"), or texts alike in their first
    ``max_length`` tokens. Raises :class:`ModelRefused` too when
    it reads every paragraph as one (no two inputs to resample). Raises
    :class:`ModelRefused` naming the model, the corpus (or the setting) and the counts; for texts given to the Python
    API as a list (:func:`aniso.inputs.text.given_texts`), :class:`InputsRefused` (also a ValueError), beginning
    ``inputs:`` and naming no setting, since the caller set none. ``counts``, when given, receives the known and
    unknown-word tokens read and the unknown share (``unknown_token_share``), where the tokenizer has such a token."""
    from ..inputs.text import given_texts

    items = list(inputs.items)
    tokenizer = loaded.tokenizer
    unk = getattr(tokenizer, "unk_token_id", None)
    special = set(getattr(tokenizer, "all_special_ids", []) or []) - {unk}
    if not items or not callable(tokenizer):
        return 0
    try:  # the special tokens the tokenizer adds to each sequence ([CLS] and [SEP]: 2; a decoder's BOS: 1)
        added = int(tokenizer.num_special_tokens_to_add(pair=False))
    except (AttributeError, TypeError, ValueError, NotImplementedError):
        added = 0
    room = None if max_length is None else max(max_length - added, 0)  # text tokens of a sequence measured
    known = unknown = read = kept = 0
    # The sequences as measured (cut at max_length), and whole: a 16-byte digest each in one bytearray, not the
    # token ids (a set of tuples of Python ints held about 36 bytes per token, 12 MB for the WikiText-103
    # validation set, and left the heap that much larger for the extraction that follows).
    seen, whole = bytearray(), bytearray()
    for start in range(0, len(items), 256):
        try:  # (verbose=False: no warning that a paragraph is longer than the model reads; the extraction cuts it)
            ids = tokenizer(list(items[start:start + 256]), add_special_tokens=False, verbose=False)["input_ids"]
        except Exception:  # noqa: BLE001 - a tokenizer that cannot say: the extraction reads it as it does
            return 0
        read = min(start + 256, len(items))
        for row in ids:
            seen += _token_digest(row if room is None else row[:room])
            whole += _token_digest(row)
            for j, i in enumerate(row):
                if i == unk:
                    unknown += 1
                elif i not in special:
                    known += 1
                    kept += room is None or j < room
        ids = row = None  # this chunk's ids are freed before the next chunk is tokenized
    seen, whole = _distinct_digests(seen), _distinct_digests(whole)
    if counts is not None and unk is not None and known + unknown:  # (``counts``: filled for the caller)
        counts.update(known=known, unknown=unknown, unknown_token_share=round(unknown / (known + unknown), 4))
    label = getattr(inputs, "label", "")
    given = given_texts(getattr(inputs, "origin", None))
    refused, where = (InputsRefused, "inputs: ") if given else (ModelRefused, "")
    setting = "inputs" if given else "setting corpus"
    what = label if given and label.startswith("the ") else f"the {label}" if given else f"the corpus {label}"
    if known < len(items):
        raise refused(f"{where}{loaded.entry.id}: {what} gives {known} known token(s) (neither special nor "
                      f"unknown-word [UNK]; {unknown} [UNK]) in {len(items)} paragraph(s) with this model's "
                      f"tokenizer; at least one per paragraph is needed ({setting}: a text of words the "
                      "model's vocabulary holds, not of formatting characters or symbols)")
    if unknown > known:
        raise refused(f"{where}{loaded.entry.id}: {what} gives more unknown-word tokens than known ones with "
                      f"this model's tokenizer ({unknown} [UNK] against {known} known in its first {read} "
                      "paragraph(s)); every unknown word shares one input vector, so the measure would be of "
                      f"[UNK], not of the text ({setting}: a text in a script the model's vocabulary holds)")
    if added * read > known:  # short paragraphs: the tokenizer's own vectors outnumber the text's at any length
        raise refused(f"{where}{loaded.entry.id}: {what} gives {known} known token(s) against "
                      f"{added * read} special-token vectors ({added} per sequence) in its first {read} "
                      "paragraph(s): its paragraphs are so short that most vectors measured would be the "
                      f"tokenizer's own, not the text's ({setting}: paragraphs of sentences)")
    # setting max_length as the settings name it (``aniso bench`` and ``aniso stats`` put the option typed there in
    # its place), or, for texts given to the Python API, its argument max_length
    length = "max_length:" if given else f"{loaded.entry.id}: {_where('max_length')}"
    if room is not None and added * read > kept:
        texts = f"the {len(items)} texts given" if given else f"the first {read} paragraph(s) of the corpus"
        raise refused(f"{length} {max_length} tokens per sequence, the tokenizer's {added} special tokens of each "
                      f"included, leave {kept} known token(s) against {added * read} special-token vectors in {texts}: most "
                      f"vectors measured would be the tokenizer's own, not the text's; give at least {2 * added} "
                      "(the papers read 512)")
    if len(items) > 1 and whole == 1:
        raise refused(f"{where}{loaded.entry.id}: {what} gives {len(items)} paragraph(s) that this model's tokenizer "
                      f"reads as one and the same sequence: they are no {len(items)} inputs, and a verdict over "
                      f"copies of one input is none ({setting}: distinct paragraphs, not one text in several "
                      "spellings or cases)")
    if len(items) > 1 and seen == 1:  # distinct, but only after the tokens measured
        raise refused(f"{length} {max_length} tokens per text, special ones included, leave the {len(items)} "
                      f"paragraph(s) one and the same sequence (they differ only after their first {room} tokens): "
                      "a verdict over copies of one input is none; give a larger max_length")
    exact = len(items) - len(set(items)) if all(isinstance(t, str) for t in items) else 0  # said in the label
    return max(len(items) - seen - exact, 0)


def _token_digest(ids) -> bytes:
    """A 16-byte BLAKE2b digest of a sequence of token ids (equal sequences, equal digests; distinct ones collide
    with probability about 2**-128)."""
    return hashlib.blake2b(np.asarray(ids, dtype=np.int64).tobytes(), digest_size=16).digest()


def _distinct_digests(digests: bytearray) -> int:
    """How many distinct 16-byte digests :func:`_token_digest` wrote one after the other into ``digests``."""
    if not digests:
        return 0
    return len(np.unique(np.frombuffer(bytes(digests), dtype=np.uint64).reshape(-1, 2), axis=0))


class PadTokenRefused(ModelRefused, ValueError):
    """A tokenizer whose pad token has an id past the model's input embedding (a pad token added to the tokenizer,
    the embedding not resized): a ValueError about the tokenizer, and a :class:`ModelRefused` as any model whose
    tokenizer does not fit it is."""


def vocabulary_mismatch(loaded: LoadedModel, exc: IndexError) -> ModelRefused:
    """The one-line refusal of a model whose tokenizer gives ids its input embedding has no row for: the model, the
    embedding's rows, the config field that sets them (``vocab_size``) and the tokenizer's size; where the id past
    the rows is the tokenizer's pad token (met only in padded batches), a :class:`PadTokenRefused` naming that token,
    its id and the two remedies (resize the embedding, or pad with a token the model has)."""
    rows = field = None
    try:
        emb = loaded.model.get_input_embeddings()
        rows = getattr(emb, "num_embeddings", None)
    except (AttributeError, NotImplementedError):
        pass
    config = getattr(loaded.model, "config", None)
    if config is not None and getattr(config, "vocab_size", None) is not None:
        field = f"config field vocab_size {config.vocab_size}"
    size = len(loaded.tokenizer) if loaded.tokenizer is not None and hasattr(loaded.tokenizer, "__len__") else None
    pad = getattr(loaded.tokenizer, "pad_token_id", None)
    if isinstance(rows, int) and isinstance(pad, int) and pad >= rows:  # only padded batches (size > 1) carry it
        return PadTokenRefused(f"{loaded.entry.id}: the tokenizer pads with its pad token "
                               f"{loaded.tokenizer.pad_token!r}, id {pad}, past the input embedding's {rows} rows "
                               "(a batch of texts of unequal length is padded with it): resize the embedding to "
                               "the tokenizer, model.resize_token_embeddings(len(tokenizer)), or set "
                               "tokenizer.pad_token to a token the model has")
    return ModelRefused(f"{loaded.entry.id}: a token id is past the input embedding's "
                        f"{rows if rows is not None else '?'} rows ({field or 'its config'}), but the tokenizer has "
                        f"{size if size is not None else 'more'} ids; the config does not fit the tokenizer ({exc})")


def out_of_memory(model_id: str, settings: Settings) -> RuntimeError:
    """The one-line error for a model that ran out of memory: the model, the device, the batch size and the settings
    to lower (nothing was cached for it, so the cache is as it was)."""
    return RuntimeError(f"{model_id}: out of memory on {settings.device} with batch_size {settings.batch_size} x "
                        f"max_length {settings.max_length}: lower ANISO_BATCH_SIZE (--aniso-batch-size) or "
                        "ANISO_MAX_LENGTH, or set ANISO_DEVICE to a device with more memory; the statistics cache "
                        "is unchanged")


def remembered(memo: dict, key: str, compute):
    """``memo[key]``, else ``compute()`` stored there. A :class:`ModelUnavailable` raised by ``compute`` is stored
    too and raised again on every later call, so an unavailable model is tried and reported once per run."""
    got = memo.get(key)
    if got is None:
        try:
            got = compute()
        except ModelUnavailable as exc:
            got = exc
        memo[key] = got
    if isinstance(got, ModelUnavailable):
        raise got
    return got


@dataclass
class StatsProvider:
    """Statistics per registry model for one run (one set of inputs, one set of settings).

    Results are memoised for the run and cached on disk (unless
    ``settings.no_cache``). :meth:`get` raises :class:`ModelUnavailable` for a
    model that cannot be loaded (:class:`InputsMissing` for want of a data
    folder); the failure is remembered so it is reported once per model and
    not retried. ``statistics`` are the statistics the run's claims read
    (:data:`FIRST_ORDER`, :data:`SECOND_ORDER`): only those are computed. ``shard``: this process's part of a
    sharded extraction (every process of the group calls :meth:`get` for the same models in the same order; the
    merged statistics are cached by rank 0 under a key that names the number of shards, since their reservoir
    sample and SVD batches differ from a single process's).
    """

    settings: Settings
    registry: Registry
    hub: HubStatus = field(default_factory=HubStatus)
    statistics: frozenset[str] = ALL_STATISTICS
    shard: Shard = field(default_factory=Shard)
    _inputs: dict[str, object] = field(default_factory=dict, init=False)
    _memo: dict[str, ModelStats | ModelUnavailable] = field(default_factory=dict, init=False)

    def inputs(self, name: str):
        """The run's inputs of kind ``name`` (``text``, ``speech``, ``vision``, ``reactions``;
        :data:`aniso.extract.modalities.INPUTS`),
        loaded once. Raises :class:`~aniso.inputs.media.InputsUnavailable` (remembered) if there are none."""
        got = self._inputs.get(name)
        if got is None:
            try:
                got = INPUTS[name](self.settings, self.hub)
            except InputsUnavailable as exc:
                got = exc
            self._inputs[name] = got
        if isinstance(got, InputsUnavailable):
            raise got
        return got

    @property
    def source_context(self) -> SourceContext:
        """What the source kinds may need: the hub status, the registry's folder, the models and cache folders,
        and this run's media (for miniatures that train on the photographs not measured)."""
        return SourceContext(self.hub, self.registry.path.parent if self.registry.path else None,
                             self.settings.models_dir, self.settings.cache_dir, self.inputs, self.settings.train_text,
                             self.settings.miniature_sizes(), self.settings.device,
                             twin_manifest=self.settings.twin or None)

    @property
    def cache(self) -> StatsCache:
        return StatsCache(Path(self.settings.cache_dir))

    def computed(self) -> dict[str, ModelStats]:
        """Statistics obtained so far in this run, by model id."""
        return {k: v for k, v in self._memo.items() if isinstance(v, ModelStats)}

    def get(self, entry: ModelEntry) -> ModelStats:
        """The statistics of ``entry`` on this run's inputs (cached, else computed)."""
        return remembered(self._memo, entry.id, lambda: self._get_uncached(entry))

    def _get_uncached(self, entry: ModelEntry) -> ModelStats:
        ctx = self.source_context
        declared = declared_files_problem(entry, ctx)
        if declared:  # before the cache: an entry measured under another row's fields is not served to this one
            raise ModelRefused(declared)
        modality = modality_of(entry)
        if modality is None:
            raise ModelUnavailable(f"{entry.id}: no hidden-state statistics for modality {entry.modality!r}")
        fingerprint = source_fingerprint(entry, ctx)
        try:
            inputs = self.inputs(entry.measured_on or modality.inputs)
        except InputsUnavailable as exc:
            raise InputsMissing(f"{entry.id}: {exc}") from None
        shards = self.shard.world if self.shard.world > 1 else self.settings.shards

        def key_of(statistics: frozenset[str]) -> str:
            return cache_key({
                "model": entry.id,
                "fingerprint": fingerprint,
                "inputs": inputs.fingerprint,
                "sample": sample_names(inputs),
                "settings": self.settings.extraction_key(),
                "second_order": modality.second_order and SECOND_ORDER in statistics,
                "first_token_excluded": FIRST_TOKEN_EXCLUDED in statistics and shards == 1,
                "extras": sorted(statistics & {FINAL_NORM, ATTENTION_SINK, EMBEDDING_ISOTROPY}),
                "input_groups": INPUT_GROUPS,  # the per-input sums kept (one row per input up to it, groups beyond)
                "checks": refusal_checks_digest(),  # a model a check added since refuses is not served from the cache
            } | ({"shards": shards} if shards > 1 else {}))

        key = key_of(self.statistics)
        if self.settings.no_cache and shards == self.shard.world:
            stats = self._compute(entry, ctx, modality, inputs, fingerprint, key)
            stats.meta["cache"] |= {"written": False, "why": "setting no_cache"}
            return stats
        # An entry with every statistic (`aniso extract`, a full run) serves a run that reads fewer.
        for candidate in dict.fromkeys((key, key_of(ALL_STATISTICS))):
            cached = None if self.settings.no_cache else self._cached(entry, candidate, inputs)
            if cached is not None:
                return cached
        if shards > self.shard.world and self.settings.no_cache:
            raise ModelUnavailable(f"{entry.id}: setting shards {shards} reads statistics extracted over {shards} "
                                   "shards from the cache, and setting no_cache (ANISO_NO_CACHE) turns the cache off; "
                                   "unset one of them")
        if shards > self.shard.world:
            raise ModelUnavailable(f"{entry.id}: no statistics extracted over {shards} shards in the cache "
                                   f"{self.settings.cache_dir} (setting shards); extract them first with "
                                   f"`torchrun --nproc-per-node {shards} -m aniso.cli extract {entry.id}`")
        # One process computes an entry; others sharing the cache folder (pytest -n) wait for it, then read it.
        with nullcontext() if self.shard.world > 1 else exclusive(Path(self.settings.cache_dir) / key):
            cached = self._cached(entry, key, inputs)
            if cached is not None:
                return cached
            stats = self._compute(entry, ctx, modality, inputs, fingerprint, key)
            written, why = False, "written by another process of the run"
            if self.shard.rank == 0:
                try:
                    self.cache.save(key, stats)
                    written = True
                except OSError as exc:  # e.g. a full disk: the run goes on with the statistics in memory
                    why = f"could not be written: {exc.strerror or exc}"
                    warn_as_file(str(self.settings.cache_dir), f"{entry.id}: could not write the statistics "
                                 f"cache entry in {self.settings.cache_dir} ({exc}); this run keeps them in memory, "
                                 "the next computes them again", RuntimeWarning, __name__)
            stats.meta["cache"] |= {"written": written} | ({} if written else {"why": why})
        return stats

    def _cached(self, entry: ModelEntry, key: str, inputs) -> ModelStats | None:
        """The cache entry ``key``, or None. The entry is keyed by the inputs' content, not their names: the file or
        folder this run read (another copy of the same text, under another name) names them, not the one the entry
        was computed from."""
        cached = self.cache.load(key)
        if cached is not None:
            now = source_record(entry, self.registry.path.parent if self.registry.path else None)
            origin = cached.meta.get("origin")
            if isinstance(origin, str):
                named = origin_for(origin, cached.meta.get(SOURCE_META), now)
                if named is None:  # computed from a source it does not record, which this run's is not: computed again
                    log.info("%s: cache entry %s names another source (%s); computing again", entry.id, key, origin)
                    return None
                cached.meta["origin"] = named
            cached.meta[SOURCE_META] = now
            described = inputs.describe()
            corpus = cached.meta.setdefault("corpus", {})
            corpus.update({k: described[k] for k in NAMING_FIELDS if k in described})
            cached.meta["cache"] = {"key": key, "hit": True}
            log.info("%s: statistics from cache %s", entry.id, key)
        return cached

    def _compute(self, entry, ctx, modality, inputs, fingerprint, key) -> ModelStats:
        stats = compute_model_stats(load_model(entry, ctx), modality, inputs, self.settings, fingerprint,
                                    self.statistics, self.shard)
        stats.meta[SOURCE_META] = source_record(entry, ctx.registry_dir)
        stats.meta["cache"] = {"key": key, "hit": False}
        return stats


def block_sweep_specs(entry: ModelEntry, settings: Settings):
    """The :class:`~aniso.experiments.untrained_block.SweepSpec` of each seed for an untrained-block entry.

    Seeds are ``settings.seed + i`` for ``i < settings.block_seeds``. Raises
    ValueError naming the entry if its source is not an untrained block.
    """
    from ..experiments.untrained_block import SweepSpec, default_bias_norms

    if not entry.untrained_block:
        raise ValueError(f"{entry.id}: not an untrained block (source kind {entry.source.kind!r})")
    return [
        SweepSpec(entry.source.block, settings.seed + i, default_bias_norms(settings.n_bias_norms),
                  settings.block_sequences, settings.block_seq_len, tuple(sorted(entry.source.config.items())))
        for i in range(settings.block_seeds)
    ]


@dataclass
class BlockSweepProvider:
    """Untrained-block sweeps (G §4) per registry entry, one per seed, memoised and cached as JSON."""

    settings: Settings
    progress: object = None  # callable(str) or None
    _memo: dict[str, list] = field(default_factory=dict, init=False)

    @property
    def cache(self) -> JsonCache:
        return JsonCache(Path(self.settings.cache_dir) / "untrained-block")

    def computed(self) -> dict[str, list]:
        """Sweeps obtained so far in this run, by entry id (lists of BlockSweep, one per seed)."""
        return dict(self._memo)

    def get(self, entry: ModelEntry) -> list:
        """The sweeps of ``entry`` for every seed (cached, else computed; see :func:`block_sweep_specs`)."""
        if entry.id in self._memo:
            return self._memo[entry.id]
        from ..experiments.untrained_block import BlockSweep, run_sweep

        sweeps = []
        for spec in block_sweep_specs(entry, self.settings):
            key = cache_key({"experiment": "untrained-block", "format": BLOCK_SWEEP_FORMAT, "spec": spec.key()})
            cached = None if self.settings.no_cache else self.cache.load(key)
            if cached is not None:
                sweep = BlockSweep.from_dict(cached)
                sweep.meta["cache"] = {"key": key, "hit": True}
            else:
                sweep = run_sweep(spec, progress=self.progress)
                log.info("%s seed %d: sweep in %.0f s", entry.id, spec.seed, sweep.seconds)
                if not self.settings.no_cache:
                    self.cache.save(key, sweep.to_dict())
                sweep.meta["cache"] = {"key": key, "hit": False}
            sweeps.append(sweep)
        self._memo[entry.id] = sweeps
        return sweeps
