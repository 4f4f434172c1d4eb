"""Command line: ``aniso report`` re-renders a report, ``aniso stats`` prints a model's layer table,
``aniso block-sweep`` runs (and caches) the untrained-block sweeps of G §4, ``aniso extract`` fills the statistics
cache for registry models, sharded over the processes of a ``torchrun`` launch.

The main job is ``pytest claims/``; this CLI is for looking at its outputs and
at one model's statistics without running the claims.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]


def _report(args: argparse.Namespace) -> int:
    from .report import write_html_report

    out = Path(args.out) if args.out else Path(args.results).with_name("report.html")
    try:
        write_html_report(Path(args.results), out)
    except ValueError as exc:
        print(f"aniso report: {exc}", file=sys.stderr)
        return 2
    print(out)
    return 0


def _stats(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .pipeline import StatsProvider
    from .registry import RegistryError, load_registry
    from .settings import Settings
    from .sources import ModelUnavailable

    try:
        settings = Settings.from_sources({"registry": args.registry, "corpus": args.corpus,
                                          "n_sequences": args.n_sequences})
        registry = load_registry(settings.registry)
        entry = registry.get(args.model)
        stats = StatsProvider(settings, registry).get(entry)
    except (RegistryError, KeyError, ValueError, ModelUnavailable) as exc:
        print(f"aniso stats: {exc}", file=sys.stderr)
        return 2
    rows = [[name, s.dim, s.count, s.mean_cosine, s.q95, s.drift_norm, s.svd_anisotropy, s.twonn]
            for name, s in zip(stats.layer_names, stats.summaries())]
    print(f"{entry.id} on {stats.meta['corpus']['label']} ({stats.meta['n_sequences']} sequences)")
    print(tabulate(rows, headers=["layer", "d", "vectors", "avg cos", "q95(d)", "drift norm", "SVD aniso", "TwoNN"],
                   floatfmt=".4f"))
    return 0


def _extract(args: argparse.Namespace) -> int:
    from .distributed import process_group, shard_of
    from .pipeline import StatsProvider
    from .registry import RegistryError, load_registry
    from .settings import Settings
    from .sources import ModelUnavailable

    shard = shard_of()
    try:
        settings = Settings.from_sources({"registry": args.registry})
        registry = load_registry(settings.registry)
        entries = [registry.get(m) for m in args.models]
    except (RegistryError, KeyError, ValueError) as exc:
        print(f"aniso extract: {exc}", file=sys.stderr)
        return 2
    failed = 0
    with process_group(shard):
        provider = StatsProvider(settings, registry, shard=shard)
        for entry in entries:
            try:
                stats = provider.get(entry)
            except ModelUnavailable as exc:
                failed += 1
                print(f"aniso extract: {exc}", file=sys.stderr)
                continue
            if shard.rank == 0:
                cache = stats.meta.get("cache", {})
                print(f"{entry.id}: {stats.meta.get('n_tokens')} vectors x {len(stats.layers)} layers over "
                      f"{shard.world} shard(s), cache {cache.get('key')} ({'hit' if cache.get('hit') else 'written'})")
    return 1 if failed else 0


def _block_sweep(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .pipeline import BlockSweepProvider
    from .registry import RegistryError, load_registry
    from .settings import Settings

    try:
        settings = Settings.from_sources({"registry": args.registry})
        registry = load_registry(settings.registry)
        entries = [registry.get(m) for m in args.models] if args.models else registry.select(("untrained-block",))
        provider = BlockSweepProvider(settings, progress=print if args.verbose else None)
        for entry in entries:
            sweeps = provider.get(entry)
            rows = [[s.spec.seed, s.fixed_point.n_star, s.fixed_point.sign_changes, s.seconds,
                     s.meta.get("cache", {}).get("hit")] for s in sweeps]
            print(f"{entry.id}: {len(sweeps)} seed(s), {len(sweeps[0].points)} bias norms, "
                  f"{settings.block_sequences} x {settings.block_seq_len} inputs")
            print(tabulate(rows, headers=["seed", "N*", "sign changes", "seconds", "cached"], floatfmt=".4g"))
    except (RegistryError, KeyError, ValueError) as exc:
        print(f"aniso block-sweep: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``aniso`` command."""
    parser = argparse.ArgumentParser(prog="aniso", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="render report.html from a results.json")
    rep.add_argument("results", help="path to a results.json written by `pytest claims/`")
    rep.add_argument("--out", help="output HTML file (default: report.html beside results.json)")
    rep.set_defaults(func=_report)
    st = sub.add_parser("stats", help="print the layer-wise statistics of one registry model")
    st.add_argument("model", help="registry id, e.g. all-MiniLM-L6-v2")
    st.add_argument("--registry", default=None, help="registry file (default: models.yaml or ANISO_REGISTRY)")
    st.add_argument("--corpus", default=None, help="corpus file (default: ANISO_CORPUS, else the fallback)")
    st.add_argument("--n-sequences", type=int, default=None, help="paragraphs sampled (default 256)")
    st.set_defaults(func=_stats)
    bs = sub.add_parser("block-sweep", help="run and cache the untrained-block sweeps (G §4) of registry entries")
    bs.add_argument("models", nargs="*", help="registry ids (default: every entry tagged untrained-block)")
    bs.add_argument("--registry", default=None, help="registry file (default: models.yaml or ANISO_REGISTRY)")
    bs.add_argument("-v", "--verbose", action="store_true", help="print one line per bias norm")
    bs.set_defaults(func=_block_sweep)
    ex = sub.add_parser("extract", help="compute and cache the statistics of registry models (sharded under torchrun)",
                        description="Compute and cache the layer statistics of registry models. Under torchrun each "
                        "process takes a contiguous shard of the inputs and the statistics are merged exactly, e.g. "
                        "`torchrun --nproc-per-node 2 -m aniso.cli extract all-MiniLM-L6-v2`. Settings come from the "
                        "ANISO_* variables, as for pytest claims/.")
    ex.add_argument("models", nargs="+", help="registry ids")
    ex.add_argument("--registry", default=None, help="registry file (default: models.yaml or ANISO_REGISTRY)")
    ex.set_defaults(func=_extract)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
