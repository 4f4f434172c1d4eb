"""Miniature pre-training on bytes: a BERT-style masked-LM encoder and a GPT-style causal decoder ("model
organisms" for the training-dynamics claims of Godey et al. 2024 §5 and Razzhigaev et al. 2024 §4.2-4.3).

Both are transformers' own classes (``BertForMaskedLM``, ``GPT2LMHeadModel``) with the same width, depth, heads,
context, data, batch order, optimiser and budget; only the objective and the attention mask differ. Inputs are
bytes, with ByT5's ids (byte b → b + 3; 0 pad, 1 end of line, 2 unknown) so that :class:`transformers.ByT5Tokenizer`
tokenises the measured text exactly as the training stream was built; the encoder's mask token is id 259.

One training run saves its checkpoints at log-spaced steps, 0 (the initialisation) and every power of two from 4 up to
the last step (:func:`checkpoint_steps`), as safetensors in the cache with the training log (loss curve, seconds) in
the file's metadata; asking for any of them trains the run once and reads the others from the cache afterwards.
The loop is deliberately short (after nanoGPT): warm-up then cosine decay, AdamW, gradient clipping.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..common.files import atomic_write, exclusive
from ..common.settings import MINIATURE_HEADS, MINIATURE_WINDOW
from . import warmup_cosine_lr

log = logging.getLogger(__name__)

__all__ = ["ARCHS", "TextRecipe", "checkpoint_steps", "byte_stream", "byte_tokenizer", "build_model",
           "training_batch", "train_run", "load_checkpoint", "MASK_ID", "VOCAB_SIZE"]

#: ByT5's special ids: pad 0, end of sequence 1, unknown 2; bytes are b + 3; the encoder's [MASK] is 259.
PAD_ID, EOS_ID, MASK_ID = 0, 1, 259
VOCAB_SIZE = 260

#: Miniature architecture → registry role.
from .names import TEXT_ARCHS as ARCHS  # noqa: E402 - the one table, read by the registry schema


@dataclass(frozen=True)
class TextRecipe:
    """How one miniature text run is trained.

    Attributes
    ----------
    arch : ``bert`` (masked LM, 15% of positions: 80% [MASK], 10% random byte, 10% kept) or ``gpt2`` (causal LM)
    seed : seeds the initialisation and the batch order
    total_steps : optimiser steps of the run (the schedule's length)
    hidden_size, num_layers, num_heads : width, depth and heads (head dimension = hidden_size / num_heads)
    seq_len : bytes per training window
    batch_size, lr, weight_decay, warmup_fraction : AdamW; linear warm-up, then cosine decay to lr / 10
    """

    arch: str
    seed: int = 0
    total_steps: int = 256
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = MINIATURE_HEADS
    seq_len: int = MINIATURE_WINDOW
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_fraction: float = 0.05

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"unknown miniature text architecture {self.arch!r}; known: {sorted(ARCHS)}")
        if self.total_steps < 1 or self.batch_size < 1 or self.seq_len < 2 or self.hidden_size % self.num_heads:
            raise ValueError(f"miniature text recipe needs total_steps >= 1, batch_size >= 1, seq_len >= 2 and "
                             f"hidden_size divisible by num_heads; got {self}")


def checkpoint_steps(total_steps: int) -> list[int]:
    """The steps a run saves: 0, then 4, 8, 16, … (powers of two) below ``total_steps``, then ``total_steps``."""
    steps, s = [0], 4
    while s < total_steps:
        steps.append(s)
        s *= 2
    return steps + [total_steps]


def byte_stream(text: bytes) -> np.ndarray:
    """The training stream of ``text``: each non-empty line as its bytes + 3, followed by the end id 1 (int64).

    Raises ValueError if the text has no non-empty line.
    """
    ids: list[np.ndarray] = []
    for line in text.split(b"\n"):
        if line.strip():
            ids += [np.frombuffer(line, dtype=np.uint8).astype(np.int64) + 3, np.array([EOS_ID])]
    if not ids:
        raise ValueError("the training text has no non-empty line")
    return np.concatenate(ids)


def byte_tokenizer():
    """The tokenizer that reads measured text as the miniatures were trained: ByT5's (bytes + 3, end id 1)."""
    from transformers import ByT5Tokenizer

    return ByT5Tokenizer(extra_ids=0)


def build_model(recipe: TextRecipe):
    """A randomly initialised ``BertForMaskedLM`` or ``GPT2LMHeadModel`` of the recipe, float32, eager attention
    (so attention probabilities can be returned), initialised from ``recipe.seed`` on a forked RNG."""
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    common = dict(vocab_size=VOCAB_SIZE, pad_token_id=PAD_ID, eos_token_id=EOS_ID, bos_token_id=EOS_ID)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.seed)
        if recipe.arch == "bert":
            cfg = BertConfig(hidden_size=recipe.hidden_size, num_hidden_layers=recipe.num_layers,
                             num_attention_heads=recipe.num_heads, intermediate_size=4 * recipe.hidden_size,
                             max_position_embeddings=recipe.seq_len, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0, attn_implementation="eager", **common)
            model = BertForMaskedLM(cfg)
        else:
            cfg = GPT2Config(n_embd=recipe.hidden_size, n_layer=recipe.num_layers, n_head=recipe.num_heads,
                             n_positions=recipe.seq_len, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                             attn_implementation="eager", **common)
            model = GPT2LMHeadModel(cfg)
    return model.float()


def training_batch(stream: np.ndarray, recipe: TextRecipe, generator: torch.Generator
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch: random windows of ``seq_len`` ids from ``stream``; returns ``(input_ids, labels)``, both
    (batch_size, seq_len) int64. Causal: labels = inputs (the model shifts them). Masked LM: 15% of positions
    are predicted (label = the id, else -100); of those 80% become [MASK], 10% a random byte, 10% stay."""
    starts = torch.randint(len(stream) - recipe.seq_len + 1, (recipe.batch_size,), generator=generator)
    ids = torch.from_numpy(np.stack([stream[s:s + recipe.seq_len] for s in starts.tolist()]))
    if recipe.arch == "gpt2":
        return ids, ids.clone()
    chosen = torch.rand(ids.shape, generator=generator) < 0.15
    labels = ids.masked_fill(~chosen, -100)
    roll = torch.rand(ids.shape, generator=generator)
    inputs = ids.masked_fill(chosen & (roll < 0.8), MASK_ID)
    random_bytes = torch.randint(3, 259, ids.shape, generator=generator)
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs = torch.where(swap, random_bytes, inputs)
    return inputs, labels


#: The output projections tied to the input embeddings: one tensor, saved under the embeddings' name only.
_TIED = ("lm_head.weight", "cls.predictions.decoder.weight")


def _path(cache_dir: Path | str, key: str, step: int) -> Path:
    return Path(cache_dir) / "miniatures" / key / f"step{step:07d}.safetensors"


def _save(model, recipe: TextRecipe, step: int, log_doc: dict, path: Path) -> None:
    from safetensors.torch import save_file

    state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    # Tied input/output embeddings are one tensor: keep one name (safetensors refuses shared storage).
    state = {k: v for k, v in state.items() if not k.endswith(_TIED)}
    meta = {"recipe": json.dumps(asdict(recipe)), "step": str(step), "log": json.dumps(log_doc)}
    atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata=meta))


def train_run(recipe: TextRecipe, stream: np.ndarray, cache_dir: Path | str, key: str,
              progress: Callable[[str], None] | None = None, device: str = "cpu") -> dict:
    """Train the run of ``recipe`` on ``stream`` (see :func:`byte_stream`) and save every checkpoint of
    :func:`checkpoint_steps` to ``cache_dir/miniatures/<key>/``; returns the training log (``loss``: [step, mean
    training loss since the previous entry] pairs, ``parameters``, ``seconds``, ``n_train_ids``).

    ``key`` must identify the recipe, the training text, the device and the library versions. ``progress`` receives
    a line at every saved checkpoint; ``device`` is the torch device that trains (checkpoints are saved from the
    CPU). Trains at a fixed number of CPU threads (:func:`aniso.common.devices.training_threads`). Raises ValueError
    if the stream is shorter than one window.
    """
    if len(stream) <= recipe.seq_len:
        raise ValueError(f"the training stream has {len(stream)} ids, fewer than one window of {recipe.seq_len}")
    from ..common.devices import training_threads

    with training_threads():  # the same run on any number of cores
        return _train_run(recipe, stream, cache_dir, key, progress, device)


def _train_run(recipe: TextRecipe, stream: np.ndarray, cache_dir: Path | str, key: str,
               progress: Callable[[str], None] | None, device: str) -> dict:
    """:func:`train_run`'s loop, at :data:`aniso.common.devices.TRAINING_THREADS` CPU threads."""
    t0 = time.perf_counter()
    model = build_model(recipe).to(device)
    gen = torch.Generator().manual_seed(recipe.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay, betas=(0.9, 0.98))
    saves = set(checkpoint_steps(recipe.total_steps))
    doc = {"parameters": sum(p.numel() for p in model.parameters()), "n_train_ids": int(len(stream)), "loss": []}
    losses: list[float] = []
    from ..common.progress import bar

    for step in bar(range(recipe.total_steps + 1), desc=f"miniature {recipe.arch} seed {recipe.seed}: training",
                    unit="step"):
        if step in saves:
            if losses:
                doc["loss"].append([step, round(float(np.mean(losses)), 4)])
                losses = []
            doc["seconds"] = round(time.perf_counter() - t0, 1)
            model.eval()
            _save(model, recipe, step, doc, _path(cache_dir, key, step))
            model.train()
            if progress is not None:
                last = doc["loss"][-1][1] if doc["loss"] else float("nan")
                progress(f"miniature {recipe.arch} seed {recipe.seed}: step {step}/{recipe.total_steps}, "
                         f"loss {last:.3f}, {doc['seconds']:.0f} s")
        if step == recipe.total_steps:
            break
        for group in opt.param_groups:
            group["lr"] = warmup_cosine_lr(step, recipe.total_steps, recipe.lr, recipe.warmup_fraction, floor=0.1)
        inputs, labels = training_batch(stream, recipe, gen)
        loss = model(input_ids=inputs.to(device), labels=labels.to(device)).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return doc


def load_checkpoint(recipe: TextRecipe, step: int, stream_of: Callable[[], np.ndarray], cache_dir: Path | str,
                    key: str, progress: Callable[[str], None] | None = None, device: str = "cpu"):
    """The model of the run ``recipe`` at ``step`` (eval mode) and its training log, from the cache, or after
    training the run on ``device`` (``stream_of()`` gives the training stream only then).

    A cache file that cannot be read is reported with a warning and the run is trained again. Raises ValueError if
    ``step`` is not one of :func:`checkpoint_steps`.
    """
    if step not in checkpoint_steps(recipe.total_steps):
        raise ValueError(f"step {step} is not a checkpoint of a {recipe.total_steps}-step run; checkpoints: "
                         f"{checkpoint_steps(recipe.total_steps)}")
    path = _path(cache_dir, key, step)
    for attempt in (0, 1):
        if path.exists():
            try:
                return _read(recipe, path)
            except Exception as exc:  # noqa: BLE001 - any defect means: train again
                from ..common.files import warn_as_file

                warn_as_file(str(path), f"miniature checkpoint {path} cannot be used ({exc}); training the run "
                             "again", RuntimeWarning, __name__)
        if attempt == 0:
            with exclusive(path.parent):  # processes sharing the cache train a run once
                if not _readable(recipe, path):  # (another process may have trained it meanwhile)
                    train_run(recipe, stream_of(), cache_dir, key, progress, device)
    raise RuntimeError(f"miniature checkpoint {path} was not written by its training run")


def _readable(recipe: TextRecipe, path: Path) -> bool:
    try:
        _read(recipe, path)
    except Exception:  # noqa: BLE001 - missing or defective: not readable
        return False
    return True


def _read(recipe: TextRecipe, path: Path):
    from safetensors import safe_open

    model = build_model(recipe)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        state = {name: f.get_tensor(name) for name in f.keys()}
    if json.loads(meta["recipe"]) != asdict(recipe):
        raise ValueError("recipe in the file differs")
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith(_TIED)]
    if missing or unexpected:
        raise ValueError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.eval()
    return model, json.loads(meta["log"]) | {"step": int(meta["step"])}
