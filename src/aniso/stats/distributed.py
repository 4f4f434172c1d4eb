"""Sharded extraction: each process of a ``torch.distributed`` group takes a contiguous shard of the inputs, streams
its hidden states into its own accumulators, and the accumulators are merged exactly (they are sums, plus a
mergeable reservoir; :meth:`aniso.stats.accumulators.LayerAccumulator.merge`).

Launch one process per CPU core group or GPU with ``torchrun`` (``torchrun --nproc-per-node 2 -m aniso.cli extract
MODEL``): :func:`process_group` starts the group from torchrun's environment (gloo on CPU, NCCL on GPUs). States
travel between processes as safetensors bytes, never as pickles.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from .accumulators import LayerAccumulator
from .results import ModelStats

__all__ = ["Shard", "shard_of", "process_group", "reduce_model_stats", "gather_bytes"]


@dataclass(frozen=True)
class Shard:
    """Process ``rank`` of ``world`` processes."""

    rank: int = 0
    world: int = 1

    def __post_init__(self):
        if self.world < 1 or not 0 <= self.rank < self.world:
            raise ValueError(f"shard rank must be in [0, world) with world >= 1, got rank {self.rank} of {self.world}")

    def items(self, items: Sequence) -> Sequence:
        """This shard's contiguous slice of ``items`` (shards differ in length by at most one)."""
        n = len(items)
        start, stop = (n * self.rank) // self.world, (n * (self.rank + 1)) // self.world
        return items[start:stop]

    def seed(self, seed: int) -> int:
        """The reservoir seed of this shard: ``seed`` itself for one process, else distinct per rank."""
        return seed if self.world == 1 else seed * 1_000_003 + self.rank + 1


def shard_of() -> Shard:
    """This process's shard from torchrun's environment (``RANK``, ``WORLD_SIZE``), else the single shard. Raises
    ValueError (one line naming the variables and their values) when they are no whole numbers, or the rank is not
    one of the world's (0 .. WORLD_SIZE − 1)."""
    rank, world = os.environ.get("RANK", "0"), os.environ.get("WORLD_SIZE", "1")
    try:
        return Shard(int(rank), int(world))
    except ValueError:
        raise ValueError(f"environment variables RANK {rank!r} and WORLD_SIZE {world!r} (set by torchrun): WORLD_SIZE "
                         "must be a whole number of at least 1 and RANK one from 0 to WORLD_SIZE − 1; unset both "
                         "to run in one process") from None


@contextmanager
def process_group(shard: Shard, backend: str | None = None, init_method: str | None = None) -> Iterator[None]:
    """Start the default process group for ``shard`` (from torchrun's ``MASTER_ADDR``/``MASTER_PORT``, or from
    ``init_method`` such as ``file:///tmp/rendezvous``), gloo on CPU or NCCL where CUDA is present, and tear it down
    once every rank is done (a barrier, then ``destroy_process_group``: a rank that exits with its group alive can
    abort in gloo's threads); nothing for a single process. A group started by the caller is left to the caller."""
    if shard.world == 1:
        yield
        return
    import torch
    import torch.distributed as dist

    owned = not dist.is_initialized()
    if owned:
        dist.init_process_group(backend or ("nccl" if torch.cuda.is_available() else "gloo"), rank=shard.rank,
                                world_size=shard.world, init_method=init_method)
    completed = False
    try:
        yield
        completed = True
    finally:
        if owned:
            if completed:
                dist.barrier()
            dist.destroy_process_group()


def gather_bytes(payload: bytes) -> list[bytes]:
    """Every rank's ``payload``, in rank order, on every rank of the default process group."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    size = torch.tensor([len(payload)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    mine = torch.zeros(longest, dtype=torch.uint8, device=device)
    mine[: len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else mine[:0]
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    return [bytes(t[: int(s.item())].cpu().numpy().tobytes()) for t, s in zip(everyone, sizes)]


def _to_bytes(layers: list[LayerAccumulator]) -> bytes:
    from safetensors.numpy import save

    arrays = {f"{i}.{name}": np.ascontiguousarray(v) for i, acc in enumerate(layers)
              for name, v in acc.transfer_state().items()}
    return save(arrays)


def _from_bytes(data: bytes, n_layers: int) -> list[LayerAccumulator]:
    from safetensors.numpy import load

    arrays = load(data)
    return [LayerAccumulator.from_state({k.split(".", 1)[1]: v for k, v in arrays.items()
                                         if k.split(".", 1)[0] == str(i)}) for i in range(n_layers)]


def reduce_model_stats(stats: ModelStats) -> ModelStats:
    """Merge every rank's statistics of the same model, in rank order, into one :class:`ModelStats` (the same on
    every rank). ``meta`` counts (``n_sequences``, ``n_tokens``) are summed, ``seconds`` is the slowest rank's,
    ``shards`` the number of ranks. Raises ValueError if the ranks disagree on the layers."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return stats
    payloads = gather_bytes(_to_bytes(stats.layers))
    merged = _from_bytes(payloads[0], len(stats.layers))
    for data in payloads[1:]:
        other = _from_bytes(data, len(stats.layers))
        if len(other) != len(merged):
            raise ValueError(f"{stats.model_id}: ranks disagree on the number of layers")
        for acc, more in zip(merged, other):
            acc.merge(more)
    import json

    metas = [json.loads(m) for m in gather_bytes(json.dumps({k: stats.meta.get(k) for k in
                                                             ("n_sequences", "seconds")}).encode())]
    meta = dict(stats.meta, n_sequences=sum(m["n_sequences"] or 0 for m in metas), n_tokens=merged[0].count,
                seconds=max(m["seconds"] or 0 for m in metas), shards=len(payloads))
    return ModelStats(stats.model_id, stats.layer_names, merged, meta)
