"""Operators dispatched and host synchronisations of the extraction and statistics variants, counted on the CPU
(``python -m aniso.bench.dispatch``; ``benchmarks/test_bench_dispatch.py`` calls the same code).

On a GPU the statistics are launch- and sync-bound: every operator is a kernel launch, and every value the host
reads from the device (a ``bool()`` of a tensor, ``.item()``, ``nonzero``, a boolean-mask index, a copy to the
host) waits for every kernel queued before it. Both can be counted on a CPU, where nothing waits:

- **operators**: top-level ``aten`` operators recorded by the torch profiler (``torch.profiler.profile``; an
  operator called inside another is not counted again), as the GPU profile of the engine counted them;
- **launching operators**: those of the top-level operators that do work on the device (a kernel or a copy), i.e.
  all but views (an operator whose every tensor-returning schema returns an alias of its input: ``slice``,
  ``select``, ``reshape`` of a contiguous tensor, ``transpose``, ``to`` of a tensor already of that dtype and device)
  and the operators that only allocate or set metadata (:data:`NO_KERNEL`); a view-kind operator that calls one that
  works (``reshape`` that copies, ``to`` that converts) is counted. On a GPU these are the launches;
- **host synchronisations** (:class:`HostSyncCounter`): the operators that need a device value on the host —
  ``aten::_local_scalar_dense`` (``.item()``, ``bool()``, ``int()``, ``float()`` of a tensor), ``aten::nonzero``,
  ``aten::masked_select``, ``aten::index`` / ``index_put_`` with a boolean mask, ``aten::bincount``,
  ``aten::repeat_interleave`` without its output size, ``aten::unique`` — and the copies to the host
  (``.cpu()``, ``.numpy()``, ``.tolist()``).

Work the code marks as done on host tensors (:func:`aniso.waits.on_host`: the tokenizer's mask, values read back
in one copy) is left out of both counts: on a GPU it launches nothing and waits for nothing, while on a CPU every
tensor is a host tensor. The read that brings a value to the host is outside such a block, and is counted.

Counts are per layer-batch (divided by layers × batches) for each variant of :data:`aniso.bench.extraction.VARIANTS`,
on the update paths a GPU takes (``path`` "device": where the CPU has a cheaper path that reads a value back, e.g.
which rows carry a massive activation, the GPU's path that reads nothing is forced) and on the CPU's own ("cpu").
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..waits import working_on_host

__all__ = ["HostSyncCounter", "count_variant", "count_variants", "count_svd_close", "SYNC_OPERATORS", "HOST_COPIES",
           "PATHS", "NO_KERNEL", "is_view_operator", "launches"]

#: ``aten`` operators whose result (or whose output's size) needs a value from the device on the host.
SYNC_OPERATORS = frozenset({"_local_scalar_dense", "nonzero", "masked_select", "bincount", "unique_dim",
                            "_unique2", "_unique", "unique_consecutive", "nonzero_static"})

#: ``aten`` operators that launch nothing on the device by themselves (allocation and metadata only).
NO_KERNEL = frozenset({"empty", "empty_strided", "empty_like", "detach", "detach_", "lift_fresh",
                       "_has_compatible_shallow_copy_type", "size", "stride", "dim", "result_type", "is_same_size",
                       "set_", "is_floating_point", "is_complex"})

#: Tensor methods that copy a tensor to the host.
HOST_COPIES = frozenset({"cpu", "numpy", "tolist"})

#: The update paths counted (:func:`count_variant`): a GPU's (nothing read back where the CPU reads cheaply) and the
#: CPU's own.
PATHS = ("device", "cpu")


def _bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (indices or ()) if i is not None)


class _Dispatch(TorchDispatchMode):
    def __init__(self, counts: Counter):
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if working_on_host():  # host tensors only (aniso.waits.on_host): nothing waits
            return func(*args, **(kwargs or {}))
        name = func._schema.name.split("::", 1)[-1]
        if name in SYNC_OPERATORS:
            self.counts[name] += 1
        elif name in ("index", "index_put_", "index_put") and _bool_index(args):
            self.counts[f"{name} (boolean mask)"] += 1
        elif name == "repeat_interleave" and (kwargs or {}).get("output_size") is None:
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


class _Function(TorchFunctionMode):
    def __init__(self, counts: Counter):
        super().__init__()
        self.counts = counts

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in HOST_COPIES and not working_on_host():
            self.counts[f".{name}()"] += 1
        return func(*args, **(kwargs or {}))


class HostSyncCounter:
    """Context manager counting the host synchronisations (see the module docstring) of the torch code run inside
    it, by kind: ``counts`` (a :class:`collections.Counter`), ``total``; nothing inside :func:`aniso.waits.on_host`."""

    def __init__(self):
        self.counts: Counter = Counter()
        self._modes = None

    def __enter__(self) -> "HostSyncCounter":
        self._modes = (_Function(self.counts), _Dispatch(self.counts))
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _top_level_operators(prof) -> int:
    return sum(1 for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::"))


@functools.cache
def is_view_operator(name: str) -> bool:
    """Whether the ``aten`` operator ``name`` (without ``aten::``) is a view: every overload of it that returns
    tensors returns aliases of its input, read from its schema (``Tensor(a)``), so it launches nothing itself.
    False for an unknown name."""
    op = getattr(torch.ops.aten, name, None)
    if op is None:
        return False
    schemas = [getattr(op, overload)._schema for overload in op.overloads()]
    tensors = [s for s in schemas if s.returns and all(str(r.type) == "Tensor" for r in s.returns)]
    return bool(tensors) and all(r.alias_info is not None and not r.alias_info.is_write
                                 for s in tensors for r in s.returns)


def launches(event) -> bool:
    """Whether a profiler event of an ``aten`` operator does work on the device: it is neither a view
    (:func:`is_view_operator`) nor one of :data:`NO_KERNEL`, or an ``aten`` operator it calls does (other events
    below it, such as those of a dispatch mode watching the run, are looked through)."""
    name = event.name.split("::", 1)[-1]
    if event.name.startswith("aten::") and not (is_view_operator(name) or name in NO_KERNEL):
        return True
    return any(launches(child) for child in event.cpu_children)


def _launching_operators(prof) -> int:
    return sum(1 for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::") and launches(e))


def count_variant(subject, variant: str, path: str = "device") -> dict:
    """Run ``variant`` (:data:`aniso.bench.extraction.VARIANTS`) once on ``subject`` under the profiler and the
    :class:`HostSyncCounter`: ``operators`` (top-level aten operators), ``launching`` (those that do work on the
    device, :func:`launches`), ``syncs`` (by kind and ``total``), and each per layer-batch (``layers`` hidden states × ``batches``). ``path`` (:data:`PATHS`): ``"device"`` counts the update
    paths a GPU takes (``wait_free``: nothing read back to the host where the CPU has a cheaper path that reads),
    ``"cpu"`` those the CPU takes by default (the same statistics).

    Raises ValueError for an unknown path."""
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; one of {', '.join(PATHS)}")
    from torch.profiler import ProfilerActivity, profile

    from .extraction import _batch_order, run_variant

    batches = _batch_order(subject)
    layers = subject.model.config.num_hidden_layers + 1
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with HostSyncCounter() as syncs:
            run_variant(subject, variant, batches, wait_free=path == "device")
    operators = _top_level_operators(prof)
    launching = _launching_operators(prof)
    per = layers * len(batches)
    return {"variant": variant, "path": path, "batches": len(batches), "layers": layers, "operators": operators,
            "launching": launching, "syncs": dict(syncs.counts) | {"total": syncs.total},
            "operators_per_layer_batch": round(operators / per, 2),
            "launching_per_layer_batch": round(launching / per, 2),
            "syncs_per_layer_batch": round(syncs.total / per, 2)}


def count_variants(subject, variants=None, paths=PATHS) -> list[dict]:
    """:func:`count_variant` of each variant (default every one of :data:`aniso.bench.extraction.VARIANTS`) on each
    of ``paths``, after one untimed warm-up of each variant (first calls initialise caches)."""
    from .extraction import VARIANTS, run_variant

    variants = tuple(variants or VARIANTS)
    for v in variants:
        run_variant(subject, v)
    return [count_variant(subject, v, path) for path in paths for v in variants]


def count_svd_close(dim: int = 384, rows: int = 1024, seed: int = 0) -> dict:
    """Operators and host synchronisations of one layer update that completes an SVD batch with both left-out sets
    (the first token of each sequence, the massive-activation rows), on the device path (``wait_free``): what the
    statistics do once per ``rows`` tokens per layer in ``every`` beyond a plain update. ``dim`` (d > 128 takes the
    Lanczos iteration, :data:`aniso.metrics.LANCZOS_MIN_SIZE`) and ``rows`` (the SVD batch) set the size; random rows
    with a common direction, a first token every 64 rows and a massive activation (800) every 97th row. Returns
    ``operators``, ``launching`` (:func:`launches`), ``products`` (top-level ``mv``/``mm``/``bmm``/``matmul``), ``syncs`` (by kind and ``total``) and
    the SVD anisotropies formed (the batch's, then each left-out set's)."""
    from torch.profiler import ProfilerActivity, profile

    from ..stats.accumulators import LayerAccumulator

    gen = torch.Generator().manual_seed(seed)
    complements = ("first-token", "massive-activations")
    acc = LayerAccumulator(dim, reservoir_size=0, svd_batch_size=rows, complements=complements, wait_free=True)
    x = torch.randn(rows, dim, generator=gen) + 3 * torch.randn(1, dim, generator=gen)
    positions = torch.arange(rows) % 64
    massive = torch.zeros(rows, dtype=torch.bool)
    massive[::97] = True
    x[::97, 5] = 800.0
    exclude = dict(zip(complements, (positions == 0, massive)))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with HostSyncCounter() as syncs:
            acc.update(x, None, None, positions, exclude)
    top = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    return {"dim": dim, "rows": rows, "operators": len(top), "launching": sum(map(launches, top)),
            "products": sum(e.name in ("aten::mv", "aten::mm", "aten::bmm", "aten::matmul") for e in top),
            "syncs": dict(syncs.counts) | {"total": syncs.total},
            "svd_anisotropy": [float(acc.summary().svd_anisotropy_batch_mean)]
            + [float(acc.complement(name).summary().svd_anisotropy_batch_mean) for name in complements]}


def main(argv: list[str] | None = None) -> int:
    """``python -m aniso.bench.dispatch [--layers 2] [--paragraphs 128] [--max-length 128] [--batch-size 16]
    [--config llama-tiny]``: the counts of every variant on a random-weight LLaMA-shaped model, as JSON lines."""
    import argparse

    from .extraction import CONFIGS, llama_subject

    p = argparse.ArgumentParser(prog="python -m aniso.bench.dispatch")
    p.add_argument("--config", choices=CONFIGS, default="llama-tiny")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--paragraphs", type=int, default=128)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    subject = llama_subject(args.config, layers=args.layers, dtype="float32", paragraphs=args.paragraphs,
                            max_length=args.max_length, batch_size=args.batch_size, device="cpu")
    for row in count_variants(subject):
        print(json.dumps(row | {"config": args.config, "paragraphs": args.paragraphs,
                                "max_length": args.max_length, "batch_size": args.batch_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
