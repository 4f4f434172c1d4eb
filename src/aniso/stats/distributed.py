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

__all__ = ["Shard", "TooFewInputs", "shard_of", "process_group", "RENDEZVOUS_SECONDS", "reduce_model_stats",
           "gather_bytes"]

#: How long :func:`process_group` waits for every rank to join (seconds) before it names the ones missing: torchrun
#: starts them together, so they join within seconds; torch's own default would wait 30 minutes without a word.
RENDEZVOUS_SECONDS = 120.0


class TooFewInputs(ValueError):
    """Fewer inputs than processes: a rank would get none (raised by :meth:`Shard.items` on every rank alike)."""


@dataclass(frozen=True)
class Shard:
    """Process ``rank`` of ``world`` processes."""

    rank: int = 0
    world: int = 1

    def __post_init__(self):
        if self.world < 1 or not 0 <= self.rank < self.world:
            raise ValueError(f"shard rank must be in [0, world) with world >= 1, got rank {self.rank} of {self.world}")

    def items(self, items: Sequence) -> Sequence:
        """This shard's contiguous slice of ``items`` (shards differ in length by at most one). Raises
        :class:`TooFewInputs` (one line) when there are fewer items than processes, on every rank: a rank without
        inputs has no statistics to merge (one process keeps its empty slice)."""
        n = len(items)
        if 1 < self.world and n < self.world:
            empty = [r for r in range(self.world) if (n * r) // self.world == (n * (r + 1)) // self.world]
            raise TooFewInputs(f"{n} input(s) over WORLD_SIZE={self.world} processes: rank(s) "
                               f"{', '.join(map(str, empty))} would get none; give at least {self.world} inputs, "
                               f"or start at most {max(n, 1)} process(es)")
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


def _reachable(host: str, port: str, seconds: float) -> bool:
    """Whether ``host:port`` accepts a connection within ``seconds`` (tried every half second): asked before torch's
    own client tries, which logs a C++ stack on every failed try."""
    import socket
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
                return True
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)


def _rendezvous(shard: Shard, init_method: str | None, seconds: float):
    """The store every rank of ``shard``'s world meets at, within ``seconds``. Raises ValueError (one line naming
    the variables) when torchrun's ``MASTER_ADDR``/``MASTER_PORT`` are not set, or when not every rank joined."""
    from datetime import timedelta

    import torch.distributed as dist

    where = init_method
    if init_method is None:
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
        if missing:
            raise ValueError(f"environment variables RANK={shard.rank} and WORLD_SIZE={shard.world} ask for "
                             f"{shard.world} processes, but {' and '.join(missing)} (set by torchrun) "
                             f"{'is' if len(missing) == 1 else 'are'} not set; launch with torchrun "
                             f"--nproc-per-node {shard.world}, or unset RANK and WORLD_SIZE to run in one process")
        where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        if shard.rank != 0 and not _reachable(os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], seconds):
            raise ValueError(f"rank {shard.rank} of WORLD_SIZE={shard.world} waited {seconds:g} s at {where}: rank 0 "
                             f"was not reached; start all {shard.world} processes together (torchrun "
                             f"--nproc-per-node {shard.world}), or unset RANK and WORLD_SIZE to run in one process")
    try:
        store, _, _ = next(dist.rendezvous(init_method or "env://", shard.rank, shard.world,
                                           timeout=timedelta(seconds=seconds)))
    except (RuntimeError, ValueError, OSError) as exc:  # torch's DistStoreError, DistNetworkError, TimeoutError
        said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        waited = ("the other ranks did not join" if shard.rank == 0 else "rank 0 was not reached")
        raise ValueError(f"rank {shard.rank} of WORLD_SIZE={shard.world} waited {seconds:g} s at {where}: {waited} "
                         f"({said}); start all {shard.world} processes together (torchrun --nproc-per-node "
                         f"{shard.world}), or unset RANK and WORLD_SIZE to run in one process") from None
    return store


@contextmanager
def process_group(shard: Shard, backend: str | None = None, init_method: str | None = None,
                  rendezvous_seconds: float | None = None) -> Iterator[None]:
    """Start the default process group for ``shard`` (from torchrun's ``MASTER_ADDR``/``MASTER_PORT``, or from
    ``init_method`` such as ``file:///tmp/rendezvous``), gloo on CPU or NCCL where CUDA is present, and tear it down
    once every rank is done (a barrier, then ``destroy_process_group``: a rank that exits with its group alive can
    abort in gloo's threads); nothing for a single process. A group started by the caller is left to the caller.

    Raises ValueError (one line) when ``MASTER_ADDR``/``MASTER_PORT`` are not set (without ``init_method``), or when
    not every rank joined within ``rendezvous_seconds`` (default :data:`RENDEZVOUS_SECONDS`; the collectives keep
    torch's default timeout)."""
    if shard.world == 1:
        yield
        return
    import torch
    import torch.distributed as dist

    owned = not dist.is_initialized()
    if owned:
        store = _rendezvous(shard, init_method, RENDEZVOUS_SECONDS if rendezvous_seconds is None
                            else rendezvous_seconds)
        dist.init_process_group(backend or ("nccl" if torch.cuda.is_available() else "gloo"), rank=shard.rank,
                                world_size=shard.world, store=dist.PrefixStore("default_pg", store))
        from torch.distributed.constants import default_pg_timeout

        store.set_timeout(default_pg_timeout)  # the bound was the rendezvous's; later waits are torch's
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
