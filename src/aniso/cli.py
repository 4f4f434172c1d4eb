"""The ``aniso`` command: list the claims and models, run the claims on a model, compare runs, measure a model's
layers, time the suite.

The main job is ``pytest claims/``, which ``aniso run`` wraps; its help text is :data:`DESCRIPTION`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

__all__ = ["main", "DESCRIPTION"]


def __getattr__(name: str):
    """``RUN_EXIT_CODES`` and ``run_exit_code``, re-exported from :mod:`aniso.api` on first use: importing this
    module loads the standard library only (argparse, pathlib), so that the console script (:func:`entry`) answers a
    Ctrl-C from the moment it runs, also while the rest (pydantic, torch, transformers) loads."""
    if name in ("RUN_EXIT_CODES", "run_exit_code"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: What ``aniso --help`` says first (plain text: a terminal shows it as it is).
DESCRIPTION = """\
aniso measures the anisotropy of a model's hidden states layer by layer and checks published
claims about it, each claim a test over the models of a registry (models.yaml). The families:
  G  Godey et al. 2024, Anisotropy Is Inherent to Self-Attention in Transformers (EACL)
  R  Razzhigaev et al. 2024, The Shape of Learning (EACL Findings)
  M  Machina & Mercer 2024, Anisotropy is Not Inherent to Transformers (NAACL)
  X  later work that explains G and R: massive activations, attention sinks, rogue dimensions
  S  this suite's own controlled experiments on models it trains
A verdict is: holds, does not hold, expected not to hold (a recorded finding), differs on these
inputs, fragile (its interval straddles the threshold), or underpowered at this size.

Start with `aniso list`, then `aniso run MODEL`; each command's --help ends with an example."""

#: Settings a user sets for the data the claims read, with what happens without each (``aniso list`` names the
#: unset ones).
_DATA_SETTINGS = (
    ("corpus", "ANISO_CORPUS", "text models read WikiText-103 through datasets when online, else an embedded "
     "fallback text (labelled FALLBACK CORPUS)"),
    ("speech_dir", "ANISO_SPEECH_DIR", "speech models read LibriSpeech through datasets when online, else are "
     "skipped as inputs missing"),
    ("image_dir", "ANISO_IMAGE_DIR", "vision models read scikit-image's sample photographs (FALLBACK IMAGES); the "
     "vision miniatures are skipped"),
    ("train_text", "ANISO_TRAIN_TEXT", "the text miniatures cannot be trained and are skipped"),
    ("models_dir", "ANISO_MODELS_DIR", "models whose files are relative to the models folder are missing"),
)


#: How ``aniso list`` words :func:`aniso.sources.weights_here` beside the source kind (``package: here``).
_WHERE = {"here (package)": "here", "here (folder)": "here", "here (hub cache)": "here (in the hub cache)",
          "hub only (not cached)": "not cached here", "trained by the suite on first use": "trained on first use"}


def _open(args: argparse.Namespace, options: dict | None = None, check_paths: bool = True):
    """The settings (``options``, then the ``ANISO_*`` variables) and the registry (``--registry``, else as every
    door finds it: :mod:`aniso.registry.locate`). Raises ValueError (one line)."""
    from .registry.locate import settings_and_registry

    return settings_and_registry(options, registry=getattr(args, "registry", None), check_paths=check_paths)


def _report(args: argparse.Namespace) -> int:
    from .common.files import through_descriptor
    from .judge.results import NOT_STANDARD_INPUT
    from .report import check_report_target, html_name_problem, write_html_report

    if args.out == "-":  # the convention for standard output: not a file named "-" written without a word
        print("aniso report: --out -: the report is an HTML file written to disk, not to standard output; name it, "
              "e.g. --out report.html", file=sys.stderr)
        return 2
    if args.results == "-":  # before the report file is looked at
        print(f"aniso report: {NOT_STANDARD_INPUT}", file=sys.stderr)
        return 2
    stream = through_descriptor(args.results) if not args.out else None
    if stream is not None:  # report.html beside it would land in /dev or /proc: a folder of no file of the user's
        print(f"aniso report: {_shown(args.results)} is {stream}, not a file in a folder, so the report has no "
              "folder beside it to go in; name the HTML file to write with --out (e.g. --out report.html)",
              file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.results).with_name("report.html")
    named = f"--out {_shown(str(out))}" if args.out else f"the report file {_shown(str(out))}"
    try:  # a name the system refuses (too long, a loop of links): one line before anything is read
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):  # a file to make; a file on the way: check_report_target says it
        pass
    except OSError as exc:
        print(f"aniso report: {named}: cannot be written ({exc.strerror or exc}); name another file",
              file=sys.stderr)
        return 2
    if out.is_dir() or (args.out and args.out.endswith(("/", os.sep)) and not out.is_symlink()):
        # a folder named as an HTML file (report.html beside the results) asks for another file, not one inside it
        other = (f"pass --out FILE.html to write the report elsewhere (e.g. --out "
                 f"{_shown(str(out.with_name('report-' + Path(args.results).parent.name + '.html')))})"
                 if not args.out else f"name the HTML file to write, not a folder (e.g. --out "
                 f"{_shown(str(out.with_name(out.stem + '-report.html')))})" if out.suffix.lower() in (".html", ".htm")
                 else f"name the HTML file to write (e.g. {out / 'report.html'})")
        print(f"aniso report: {named} {'is' if out.is_dir() else 'names'} a folder; {other}", file=sys.stderr)
        return 2
    if args.out:  # after the checks of the file there (the results file, a file no report), before writing
        try:
            check_report_target(out, Path(args.results))
        except ValueError as exc:
            print(f"aniso report: {exc}", file=sys.stderr)
            return 2
        problem = html_name_problem(out)
        if problem is not None:
            print(f"aniso report: {named}: {problem}", file=sys.stderr)
            return 2
    unsealed: list[str] = []
    before = _file_identity(out)
    try:
        write_html_report(Path(args.results), out, unsealed)  # whole or not at all (a temporary file, then a rename)
        for note in unsealed:  # also at the top of the page
            print(f"aniso report: warning: {note}", file=sys.stderr)
        print(out)
    except ValueError as exc:
        print(f"aniso report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"aniso report: cannot write {named}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line saying whether the report is there, 130
        now = _file_identity(out)
        shown = _shown(str(out))
        print("aniso report: interrupted (Ctrl-C) " + (
            f"once the report {shown} was written whole" if now is not None and now != before else
            f"before the report {shown} was written; the earlier file there is as it was" if now is not None else
            f"before the report {shown} was written; nothing was written"), file=sys.stderr)
        return 130
    return 0


def _file_identity(path: Path) -> tuple | None:
    """Which file ``path`` is, and its version (device, inode, size, modification time), or None where there is
    none: a file replaced by a rename is another."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _shown(path: str, most: int = 120) -> str:
    """``path`` as a line shows it: whole up to ``most`` characters, else its start and end around an ellipsis with
    its length (a name of thousands of characters would fill the screen)."""
    if len(path) <= most:
        return path
    return f"{path[:most // 2]}…{path[-most // 4:]} ({len(path):,} characters)"


def _stats(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .stats.pipeline import StatsProvider
    from .registry.entries import RegistryError
    from .registry.locate import check_corpus
    from .sources import ModelRefused, ModelUnavailable, SourceContext, declared_files_problem

    typed = {"corpus": "--corpus" if args.corpus is not None else None,
             "n_sequences": "--n-sequences" if args.n_sequences is not None else None}
    try:
        settings, registry = _open(args, {"corpus": args.corpus, "n_sequences": args.n_sequences}, check_paths=False)
        entry, registry = _stats_entry(args.model, registry)
        declared = declared_files_problem(entry, SourceContext(
            registry_dir=registry.path.parent if registry.path else None, models_dir=settings.models_dir))
        if declared:  # the row's fields are not its model's: before its modality judges the options
            raise ModelRefused(declared)
        form = _inputs_form(entry, {"--corpus": args.corpus, "--n-sequences": args.n_sequences})
        settings.check_paths()  # once the options are known to apply to this model
        check_corpus(settings)
        stats = StatsProvider(settings, registry).get(entry)
    except (RegistryError, KeyError, ValueError, ModelUnavailable) as exc:
        print(f"aniso stats: {_as_typed(str(exc), typed)}", file=sys.stderr)
        return 2
    rows = [[name, s.dim, s.count, s.mean_cosine, s.q95, s.drift_norm, s.svd_anisotropy, s.twonn, s.isoscore]
            for name, s in zip(stats.layer_names, stats.summaries())]
    noun = form.noun if form is not None and form.items else "sequences"
    from .stats.results import copies_note

    print(f"{entry.id} on {stats.meta['corpus']['label']}{copies_note(stats.meta)} ({stats.meta['n_sequences']} "
          f"{noun})")
    print(tabulate(rows, headers=["layer", "d", "vectors", "avg cos", "q95(d)", "drift norm", "SVD aniso", "TwoNN",
                                 "IsoScore"],
                   floatfmt=".4f"))
    from .stats.results import rank_limited

    for line in [*_missing_columns(stats.summaries(), settings, entry), *rank_limited(stats.summaries())]:
        print(line)
    return 0


def _stats_entry(model: str, registry):
    """The entry ``aniso stats MODEL`` measures, and the registry it is measured in: a registry id's row; else, for a
    folder here or a hub id (``org/name``), the entry detected from its files as ``aniso run`` and
    :func:`aniso.measure` detect it (:func:`aniso.api._entry`), in a registry of that entry alone. Raises ValueError
    (one line) naming ``model``: an unknown registry id as the registry says it, a folder or hub id that cannot be
    detected as the detection says it."""
    from .api import _entry, _id_and_path, _is_path_here
    from .registry.entries import Registry

    if any(e.id == model for e in registry) or not (_is_path_here(model) or "/" in model):
        note = _id_and_path(model, registry) if any(e.id == model for e in registry) else None
        if note is not None:
            print(f"aniso stats: {note}", file=sys.stderr)
        return registry.get(model), registry
    entry = _entry(model, registry)
    return entry, Registry([entry], registry.path, registry.recorded_inputs, registry.recorded_profile,
                           profile_stated=registry.profile_stated)


def _missing_columns(summaries, settings, entry=None) -> list[str]:
    """Why ``aniso stats`` shows ``nan`` in a layer's SVD anisotropy, TwoNN or IsoScore
    (:func:`aniso.stats.results.nan_columns`); a model whose modality keeps no second-order statistics (CNN maps)
    is said so."""
    from .extract.modalities import modality_of
    from .stats.results import nan_columns

    row = modality_of(entry) if entry is not None else None
    return nan_columns(summaries, settings.second_order_max_dim, second_order=row is None or row.second_order)


def _as_typed(message: str, typed: dict[str, str | None]) -> str:
    """``message`` with the settings' name of each setting of ``typed`` (``setting n_sequences (ANISO_N_SEQUENCES,
    --aniso-n-sequences)``, as :mod:`aniso.common.settings` words it) replaced by the option that gave it at this
    door (``--n-sequences``), where that option was given (not None): the line names what the user typed."""
    for name, option in typed.items():
        if option is not None:
            message = message.replace(f"setting {name} (ANISO_{name.upper()}, --aniso-{name.replace('_', '-')})",
                                      option)
    return message


#: ``aniso stats``' options and the settings they give: the model's inputs must be counted (named) by that setting.
_STATS_OPTIONS = {"--corpus": ("setting", "corpus", "names the text corpus"),
                  "--n-sequences": ("size", "n_sequences", "counts the corpus's paragraphs")}


def _inputs_form(entry, given: dict[str, object]):
    """How ``entry``'s inputs are given (:data:`aniso.inputs.forms.INPUT_FORMS`, by the modality table's
    :func:`~aniso.extract.modalities.inputs_kind`), None for a model measured over no inputs. Raises ValueError
    naming an option of ``given`` (``--corpus``, ``--n-sequences``: :data:`_STATS_OPTIONS`) that was given (not
    None) though the model's inputs are not read or counted by its setting, and the setting that is."""
    from .extract.modalities import INPUT_FORMS, inputs_kind

    kind = inputs_kind(entry)
    form = INPUT_FORMS.get(kind) if kind is not None else None
    for option, (field, setting, what) in _STATS_OPTIONS.items():
        if given.get(option) is None or (form is not None and getattr(form, field) == setting):
            continue
        if form is None:
            raise ValueError(f"{option}: {entry.id} is measured over no inputs, so {option} does not apply")
        theirs = getattr(form, field)
        how = "named" if field == "setting" else "counted"
        raise ValueError(f"{option} {what} (setting {setting}); {entry.id} reads {form.noun}, {how} by setting "
                         f"{theirs} (ANISO_{theirs.upper()}); set that instead")
    return form


def _each_once(models: list[str]) -> None:
    """Raise ValueError (one line) naming the models given more than once on a command line of registry ids."""
    twice = sorted({m for m in models if models.count(m) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)} named more than once; name each model once")


def _extract(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from .stats.distributed import TooFewInputs, process_group, shard_of
    from .stats.pipeline import StatsProvider
    from .registry.entries import RegistryError
    from .sources import InputsMissing, ModelRefused, ModelUnavailable

    try:
        shard = shard_of()
        _each_once(args.models or [])
        settings, registry = _open(args)
        entries = [registry.get(m) for m in args.models]
        _check_shards(settings.shards, shard.world, args.models)
        if settings.no_cache:  # the command's one product is the cache: refused before anything is measured
            raise ValueError("setting no_cache is on (ANISO_NO_CACHE), and extract only computes statistics to cache "
                             "them: unset it, or measure without caching with aniso stats")
    except (RegistryError, KeyError, ValueError) as exc:
        print(f"aniso extract: {exc}", file=sys.stderr)
        return 2
    from .extract.modalities import modality_of

    failed, bad_input = 0, 0
    with ExitStack() as group:
        try:
            group.enter_context(process_group(shard))
        except ValueError as exc:  # torchrun's variables missing, or a rank that never joined
            print(f"aniso extract: {exc}", file=sys.stderr)
            return 2
        provider = StatsProvider(settings, registry, shard=shard)
        for entry in entries:  # one model's failure does not lose the others' statistics
            if modality_of(entry) is None:  # asked of a model that has none, as `aniso stats` refuses it: exit 2
                failed += 1
                bad_input += 1
                print(f"aniso extract: {entry.id}: no hidden-state statistics for modality {entry.modality!r} (an "
                      f"untrained block is measured by aniso block-sweep {entry.id})", file=sys.stderr)
                continue
            try:
                stats = provider.get(entry)
            except TooFewInputs as exc:  # raised on every rank alike, before any forward pass
                failed += 1
                bad_input += 1
                print(f"aniso extract: {entry.id}: {exc}", file=sys.stderr)
                continue
            except ModelUnavailable as exc:
                failed += 1
                bad_input += isinstance(exc, (InputsMissing, ModelRefused))  # a data setting, or the model's files
                print(f"aniso extract: {exc}", file=sys.stderr)
                continue
            if shard.rank == 0:
                cache = stats.meta.get("cache", {})
                said = ("hit" if cache.get("hit") else "written" if cache.get("written")
                        else f"not written: {cache.get('why', 'unknown why')}")
                print(f"{entry.id}: {stats.meta.get('n_tokens')} vectors x {len(stats.layers)} layers over "
                      f"{shard.world} shard(s), cache {cache.get('key')} ({said})")
    return 2 if bad_input else 1 if failed else 0


def _check_shards(shards: int, world: int, models: list[str]) -> None:
    """Raise ValueError (one line naming ``ANISO_SHARDS``) when setting ``shards`` asks ``aniso extract`` for another
    number of processes than torchrun started (``world``; 1 when not under torchrun): extraction runs over the
    processes there are, so the setting would otherwise be ignored, or read a cache entry instead of extracting."""
    if shards in (1, world):
        return
    how = ("this process is not under torchrun" if world == 1 else f"torchrun started {world} processes")
    raise ValueError(f"setting shards (ANISO_SHARDS={shards}) asks for statistics extracted over {shards} "
                     f"processes, but {how}; run `torchrun --nproc-per-node {shards} -m aniso.cli extract "
                     f"{' '.join(models)}`, or unset ANISO_SHARDS")


def _block_sweep(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .stats.pipeline import BlockSweepProvider
    from .registry.entries import RegistryError

    try:
        _each_once(args.models or [])
        settings, registry = _open(args)
        entries = [registry.get(m) for m in args.models] if args.models else registry.select(("untrained-block",))
        if not entries:  # nothing to sweep: said, not an empty success
            raise ValueError(f"{registry.path or 'the registry'} has no row tagged untrained-block (an untrained "
                             "block of G §4, source kind init), so there is nothing to sweep; name the rows to sweep, "
                             "or add one")
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


def _list(args: argparse.Namespace) -> int:
    from .api import claims, models
    from .common.tables import print_lines, print_table

    try:  # a listing computes nothing: no device to resolve (which would import torch), no path to check
        if args.models is not None and args.what == "claims":
            raise ValueError(f"--models {args.models}: marks the models of a listing, and `aniso list claims` "
                             "lists none (use aniso list models, or all)")
        from .registry.locate import settings_and_registry

        # a set the user names must select a row; the default one may select none of a registry's rows: the
        # listing shows every row and marks the set's
        named = args.models is not None or bool(os.environ.get("ANISO_MODELS"))
        settings, registry = settings_and_registry({"device": "cpu", "models": args.models}, registry=args.registry,
                                                   check_paths=False, check_models=named, require_rows=True)
        set_name = settings.models
        chosen, _ = registry.model_set(set_name)
    except ValueError as exc:  # a RegistryError too
        said = _as_typed(str(exc), {'models': '--models' if args.models is not None else None})
        here, sep, rest = said.partition(" (the models.yaml in this folder is not this run's registry: ")
        if sep:  # the working folder's models.yaml: a registry given on purpose needs no word on it; else the
            # option this command takes
            said = here if args.registry is not None else (
                here + sep + rest.replace("give --aniso-registry ", "give --registry ", 1))
        print(f"aniso list: {said}", file=sys.stderr)
        return 2
    if args.what in ("claims", "all"):
        rows = [[c["claim"], f"{c['section']} {c['figure']}".strip(),
                 c["statement"] + ("" if c["executable"] else " (not yet executable)")]
                for c in claims(as_frame=False)]
        print_table(rows, ["claim", "where", "statement"], no_wrap=["claim"], max_width={"where": 16},
                    title=f"{len(rows)} claims (G Godey, R Razzhigaev, M Machina & Mercer, X later work, S this "
                          "suite); run some with aniso run MODEL --claims G.")
    if args.what in ("models", "all"):
        if args.what == "all":
            print()
        in_set = {e.id for e in chosen}
        # every row, the set marked in its own column
        listed = models(settings.registry, as_frame=False, settings={"device": "cpu", "models": "all"})
        rows = [[m["model"] + (f"\n  for {m['stands_for']} ({m['relation']})" if m["stands_for"] else ""),
                 f"{m['modality']} {m['role']}", f"{m['params_m']:g}M" if m["params_m"] else None,
                 "yes" if m["model"] in in_set else "no", f"{m['source']}: {_WHERE.get(w, w)}"]
                for m in listed for w in [m["weights_here"]]]
        print_table(rows, ["model", "kind", "params", "in set", "source: weights"],
                    no_wrap=["model", "params", "in set"], max_width={"kind": 15},
                    title=f"{len(rows)} models in {settings.registry}; {len(in_set)} in the set {set_name!r} "
                          "(--models or ANISO_MODELS: small, paper, all, a tag or ids); \"for\" names the papers' "
                          "model a row stands for")
        unset = [f"  {variable}: {effect}" for name, variable, effect in _DATA_SETTINGS if not getattr(settings, name)]
        if unset:
            print_lines(["Data settings not set here, and what the claims do without them:", *unset])
        for e in registry:  # rows the locked libraries cannot run: what stops each, and what would make it run
            if e.cannot_run is not None:
                print_lines([f"{e.id} cannot run with the locked libraries: {e.cannot_run.why}; it would run with "
                             f"{e.cannot_run.would_run_with}"])
    return 0


def _cache_dir_problem(path: str) -> str | None:
    """Why ``path`` cannot be a hub cache folder to write in (``aniso hub import --cache-dir``): it is a file, or a
    folder above it is, or it is another folder (:func:`aniso.sources.hubcache.not_a_hub_cache`); None when it is a
    folder or can be created."""
    from .sources.hubcache import not_a_hub_cache

    where = Path(os.path.expanduser(path))
    if where.exists():
        return not_a_hub_cache(where) if where.is_dir() else "is not a folder: it is a file"
    above = next((p for p in where.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        return f"cannot be created: {above} is a file"
    return None


def _hub_variable_problem(cache_dir: str | None) -> str | None:
    """Where no ``--cache-dir`` is given, why the hub cache folder the environment names (``HF_HUB_CACHE``, else
    ``HF_HOME``/hub: :func:`aniso.sources.hubcache.cache_root`) cannot be one, naming the variable: it or a folder
    above it is a file. None when it is a folder, does not exist yet, or ``cache_dir`` is given."""
    if cache_dir is not None:
        return None
    from .sources.hubcache import cache_root, hub_variable_problem

    empty = hub_variable_problem()  # HF_HUB_CACHE='' would make the working folder the cache
    if empty is not None:
        return empty
    variable = next((v for v in ("HF_HUB_CACHE", "HF_HOME") if os.environ.get(v)), None)
    root = (Path(os.path.expanduser(os.environ[variable])) / ("hub" if variable == "HF_HOME" else "")
            if variable else cache_root(None))  # (as huggingface_hub reads them when it is imported)
    file = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), None)
    if file is None:
        return None
    named = f"environment variable {variable} ({os.environ[variable]})" if variable else "the hub cache folder"
    return f"{named}: {root} cannot be the hub cache: {file} is a file, not a folder"


def _model_folder_problem(folder: str) -> str | None:
    """Why ``folder`` given to ``aniso hub import`` is no folder where it is a file (the folder's config.json or
    weights named instead of the folder); None otherwise (a missing folder is named by the import itself)."""
    from .sources import SOURCE_KINDS
    from .sources.detect import file_kind

    where = Path(os.path.expanduser(folder))
    if where.is_file():
        kind = file_kind(where)
        # a model file a source kind reads that is no transformers folder (an ONNX graph, GGUF…): never in a hub cache
        if kind is not None and SOURCE_KINDS[kind[0]].transformers_folder is None:
            return (f"is a file, {kind[1] if kind[2] else 'a model file of source kind ' + kind[0]}: the hub cache "
                    f"holds transformers model folders only; such a file is measured where it is: `aniso run "
                    f"{folder}`, or a registry row with source: {{kind: {kind[0]}, path: {folder}}}")
        if (where.parent / "config.json").is_file():
            return f"is a file; give the model folder (the folder holding config.json, e.g. {where.parent})"
        return "is a file; give the model folder (the folder holding config.json)"
    return None


class _Terminated(BaseException):
    """A signal that ends the process (SIGTERM, SIGHUP, SIGUSR1, SIGXCPU...: :data:`aniso.api.ENDING_SIGNALS`), raised inside :func:`_sigterm_raised` where the
    signal arrives, so that the code's own clean-up (``except``, ``finally``) runs before the process ends."""

    def __init__(self, signum: int | None = None) -> None:
        import signal

        super().__init__(signum)
        self.signum = signal.SIGTERM if signum is None else signum

    @property
    def name(self) -> str:
        import signal

        return signal.Signals(self.signum).name

    def end(self) -> None:
        """End the process by its signal itself, as it would have ended without the block (as a twin run does once
        its temporary folder is removed, :func:`aniso.api._removed_on_sigterm`)."""
        import signal

        signal.signal(self.signum, signal.SIG_DFL)
        os.kill(os.getpid(), self.signum)


@contextlib.contextmanager
def _sigterm_raised():
    """The signals that end the process (:data:`aniso.api.ENDING_SIGNALS`) raise :class:`_Terminated` inside the block, where no other handler than the
    default is set (a handler set before decides what its signal does; an ignored signal, SIGHUP under ``nohup``, stays
    ignored), and in the main thread only (elsewhere the block runs as it is); the handlers before come back after."""
    import signal
    import threading

    from .common.signals import ENDING_SIGNALS, handling

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):
        raise _Terminated(signum)

    with handling(on_signal, [signum for signum in ENDING_SIGNALS if signal.getsignal(signum) is signal.SIG_DFL]):
        yield


def _registry_edits(doc, registry: Path) -> str:
    """What differs between the registry file ``registry`` as it is now and the copy of its rows a run kept in its
    results ``doc`` (:class:`aniso.judge.results.RegistryRow`: the labelling fields of each row the run took), for
    ``aniso record``'s refusal: ``"; row 'm': description differs from the run's copy"``; where the copy holds
    none of the change (another field, a comment, the layout) or there is no copy, a clause saying that any edit
    of the file counts."""
    from .judge.results import RegistryRow
    from .registry.entries import RegistryError, load_registry

    if not doc.registry:
        return "; the run kept no copy of its rows to compare with: any edit of the file counts"
    try:
        now = {e.id: RegistryRow.of(e) for e in load_registry(registry)}
    except (RegistryError, OSError, ValueError):
        return ""
    changes = []
    for model_id, then in doc.registry.items():
        if model_id not in now:
            changes.append(f"row {model_id!r} is gone")
            continue
        fields = [f for f in RegistryRow.model_fields if getattr(then, f) != getattr(now[model_id], f)]
        if fields:
            changes.append(f"row {model_id!r}: {', '.join(fields)}")
    if changes:
        more = f" (and {len(changes) - 3} more)" if len(changes) > 3 else ""
        return f"; changed since the run: {'; '.join(changes[:3])}{more}"
    return ("; the fields the run kept of its rows (modality, granularity, architecture, role, family, description, "
            "…) are as they were, so the edit is in another field of a row the run measured (its source, tags or "
            "records; a comment or the layout elsewhere does not count)")


def _hub_row_problem(args: argparse.Namespace) -> str | None:
    """Why ``aniso hub import HUB_ID FOLDER`` is refused where ``HUB_ID`` is a registry hub row's: the folder is
    another model than the row says (:func:`aniso.sources.hubrow.row_problem`), or the settings or registry that
    say which rows there are cannot be read. None otherwise (no registry here, no row of that hub id)."""
    from .registry.locate import settings_and_registry
    from .sources.hubrow import hub_rows, row_problem

    try:  # as every door finds the registry; the import needs none where there is none
        _, registry = settings_and_registry({"device": "cpu"}, registry=args.registry, check_paths=False,
                                            required=False)
    except ValueError as exc:
        return str(exc)
    folder = Path(os.path.expanduser(args.folder))
    for entry in hub_rows(registry, args.hub_id):
        problem = row_problem(entry, folder)
        if problem is not None:
            return f"{args.folder}: {problem}; not imported, the cache is as it was"
    return None


def _hub_import(args: argparse.Namespace) -> int:
    from .sources.hub import import_problem
    from .sources.hubcache import HubCacheError, cache_inside_folder, import_folder

    cache_dir = _cache_dir_problem(args.cache_dir) if args.cache_dir is not None else None
    if cache_dir is None and args.cache_dir is not None and Path(os.path.expanduser(args.folder)).is_dir() \
            and cache_inside_folder(args.folder, args.cache_dir) is not None:  # before the cache folder is made
        cache_dir = (f"is inside the folder being imported ({args.folder}); give a cache folder outside it (an import "
                     "copies every file of the folder)")
    folder = _model_folder_problem(args.folder)
    variable = _hub_variable_problem(args.cache_dir)
    if cache_dir is not None or folder is not None or variable is not None:
        said = (f"--cache-dir {args.cache_dir} {cache_dir}" if cache_dir is not None else variable
                if variable is not None else f"{args.folder} {folder}")
        print(f"aniso hub import: {said}", file=sys.stderr)
        return 2
    problem = _hub_row_problem(args)
    if problem is not None:
        print(f"aniso hub import: {problem}", file=sys.stderr)
        return 2
    if args.cache_dir is not None:  # made once the rest is known good (a file given as the folder creates nothing)
        try:
            Path(os.path.expanduser(args.cache_dir)).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"aniso hub import: --cache-dir {args.cache_dir} cannot be created ({exc.strerror or exc})",
                  file=sys.stderr)
            return 2
    try:
        with _sigterm_raised():  # the import takes back what it wrote (import_folder), then the signal ends it
            done = import_folder(args.hub_id, args.folder, revision=args.revision, cache_dir=args.cache_dir,
                                 allow_pickle=args.allow_pickle, check=import_problem)
    except (HubCacheError, OSError) as exc:
        print(f"aniso hub import: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _Terminated) as exc:
        print(f"aniso hub import: interrupted ({exc.name if isinstance(exc, _Terminated) else 'Ctrl-C'}); nothing "
              f"was imported, the cache is as it was", file=sys.stderr)
        if isinstance(exc, _Terminated):
            exc.end()
        return 130
    print(f"{args.hub_id}@{done.revision} -> commit {done.commit} ({len(done.files)} files, "
          f"{done.size / 1e6:.1f} MB) in {done.repo}")
    if done.replaced:
        print(f"refs/{done.revision} named commit {done.replaced} before; that snapshot stays in the cache")
    if done.skipped:
        print(f"left out (pickle; the safetensors weights are used): {', '.join(done.skipped)}")
    if done.caches:
        print(f"left out (a hub cache inside the folder, no file of the model): {', '.join(done.caches)}")
    return 0


def _check_ref(hub_id: str, revision: str, cache_dir: str | None) -> None:
    """Raise :class:`~aniso.sources.hubcache.HubCacheError` naming the ref file of ``hub_id`` at ``revision`` in the
    hub cache when it holds no commit (40 hex digits: a damaged or hand-edited ref, perhaps a path such as
    ``../../etc``), which the cache's reader would take for a revision that is not cached. Nothing when there is no
    such ref or it holds a commit."""
    import re

    from .sources.hubcache import HubCacheError, repo_dir

    ref = repo_dir(hub_id, cache_dir) / "refs" / revision
    if not ref.is_file():
        return
    try:
        text = ref.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise HubCacheError(f"{ref} cannot be read ({exc.strerror or exc})") from None
    if not re.fullmatch(r"[0-9a-f]{40}", text):
        raise HubCacheError(f"{ref} holds {text[:60]!r}, not a commit (40 hex digits); import the model again "
                            "(aniso hub import) to rewrite it")


def _hub_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from .sources.hubcache import (HubCacheError, cache_root, cached_repos, cached_revisions, cached_state,
                                   not_a_hub_cache, repo_dir, unnamed_snapshot_fix, unnamed_snapshots)
    from .sources.hubrow import row_problem

    try:
        settings, registry = _open(args, {"device": "cpu"}, check_paths=False)
    except ValueError as exc:
        print(f"aniso hub list: {exc}", file=sys.stderr)
        return 2
    if args.cache_dir is not None and not Path(args.cache_dir).is_dir():
        what = "is not a folder" if Path(args.cache_dir).exists() else "does not exist"
        print(f"aniso hub list: --cache-dir {args.cache_dir} {what}", file=sys.stderr)
        return 2
    other = not_a_hub_cache(args.cache_dir, listing=True) if args.cache_dir is not None else None
    if other is not None:  # read as a cache it would list nothing cached
        print(f"aniso hub list: --cache-dir {args.cache_dir} {other}", file=sys.stderr)
        return 2
    problem = _hub_variable_problem(args.cache_dir)
    if problem is not None:
        print(f"aniso hub list: {problem}", file=sys.stderr)
        return 2
    rows, named = [], set()

    def row(model_id: str, repo: str, revision: str, entry=None) -> list:
        try:
            _check_ref(repo, revision, args.cache_dir)
            state = cached_state(repo, revision, args.cache_dir)
        except HubCacheError as exc:
            return [model_id, repo, revision, "-", f"unreadable: {exc}", "-"]
        if state is None:
            return [model_id, repo, revision, "-", "not cached", "-"]
        origin = state["origin"] + (f"; {state['missing']}" if state["missing"] else "")
        if entry is not None:  # another model under the row's hub id: the load refuses it, the list says it
            problem = row_problem(entry, repo_dir(repo, args.cache_dir) / "snapshots" / state["commit"], twins=True)
            origin += f"; not the row's model, refused at load: {problem}" if problem is not None else ""
        return [model_id, repo, revision, state["commit"], origin, f"{state['size'] / 1e6:.1f} MB"]

    for e in registry:
        if e.source.kind == "hub":
            named.add((e.source.repo, e.source.revision))
            state_row = row(e.id, e.source.repo, e.source.revision, e)
            if args.all or state_row[3] != "-" or state_row[4].startswith("unreadable"):
                rows.append(state_row)
    for repo in cached_repos(args.cache_dir):  # revisions in the cache that no registry row names
        rows.extend(row("-", repo, rev) for rev in cached_revisions(repo, args.cache_dir) if (repo, rev) not in named)
        rows.extend(["-", repo, "-", commit, "a snapshot no refs/ file names: only the commit as revision reaches "
                     f"it; if its ref was deleted, {unnamed_snapshot_fix(repo, 'main', args.cache_dir)}", "-"]
                    for commit in unnamed_snapshots(repo, args.cache_dir) if (repo, commit) not in named)
    print(f"hub cache: {cache_root(args.cache_dir)}")
    print(tabulate(rows, headers=["registry id", "hub id", "revision", "commit", "origin", "size"], tablefmt="github")
          if rows else "nothing cached for the registry's hub rows" + ("" if args.all else " (--all lists them all)"))
    return 0


def _run_one(model: str, args: argparse.Namespace) -> int:
    """``aniso run MODEL`` (or its twin, ``--twin``): its exit code, having said in one line why when it is not 0
    or 1."""
    from .api import nothing_measured, run_claims, run_twins

    say = lambda line: print(f"aniso run: {line}", file=sys.stderr)  # noqa: E731
    try:
        if getattr(args, "twin", False):
            done = run_twins(model, args.claims, registry=args.registry, claims_dir=args.claims_dir,
                             pytest_args=list(args.pytest_args or []), say=say, keep=args.keep_twins,
                             full_size=args.full_size, _claims_dir_option="--claims-dir")
        else:
            done = run_claims(model, args.claims, registry=args.registry, claims_dir=args.claims_dir,
                              pytest_args=list(args.pytest_args or []), say=say, _claims_dir_option="--claims-dir")
    except ValueError as exc:  # settings, corpus, claims filter, registry, claims folder, undetectable model
        print(f"aniso run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # a twin run stopped while its twins were built: its own line, what is kept
        if not str(exc).startswith("interrupted (Ctrl-C) while the twins"):
            raise
        print(f"aniso run: {exc}", file=sys.stderr)
        return 130
    if done.refused and not getattr(args, "twin", False):  # files here that cannot be loaded faithfully
        for line in done.refused:
            print(f"aniso run: refused: {line}", file=sys.stderr)
    if done.stopped:
        print(f"aniso run: {done.stopped}", file=sys.stderr)
        if done.interrupted or done.stopped.startswith(("interrupted (Ctrl-C)", "interrupted while writing")):
            return 130  # Ctrl-C: 128 + SIGINT, as every command (what is kept is said in the line above)
    elif (said := nothing_measured(done)) is not None:
        print(f"aniso run: nothing measured: {said}; exit code 3", file=sys.stderr)
    return done.exit_code


def _run(args: argparse.Namespace) -> int:
    if args.model is not None and args.changed_since is not None:
        print("aniso run: give a model (registry id, folder or hub id) or --changed-since REF, not both",
              file=sys.stderr)
        return 2
    if args.model is None and args.changed_since is None:
        after = next((a for a in args.pytest_args[:1] if not a.startswith("-")), None)
        print("aniso run: " + (f"no model given before `--`; {after} after `--` is passed to pytest, not read as "
                               f"the model: give it before `--` (aniso run {after} [options] -- [pytest options])"
                               if after is not None else
                               "give a model (registry id, folder or hub id) or --changed-since REF"), file=sys.stderr)
        return 2
    if args.model is not None:
        problem = None if args.twin else _several_models(args.model)
        if problem is not None:
            print(f"aniso run: {problem}", file=sys.stderr)
            return 2
        return _run_one(args.model, args)
    from .api import _claims_run_options
    from .registry.changes import changed_rows

    try:
        settings, _ = _open(args, {"device": "cpu"}, check_paths=False)
        ids = changed_rows(settings.registry, args.changed_since)
        if ids:  # the options every row runs with, checked once: a bad one is one line, not one a row
            _claims_run_options("each changed row", args.claims, args.registry, args.claims_dir,
                                list(args.pytest_args or []), None, "aniso run --changed-since REF", "--claims-dir")
    except ValueError as exc:
        print(f"aniso run: {exc}", file=sys.stderr)
        return 2
    if not ids:
        print(f"aniso run: no registry row of {settings.registry} was added or changed since {args.changed_since}; "
              "nothing to run", file=sys.stderr)
        return 0
    print(f"aniso run: {len(ids)} registry row(s) added or changed since {args.changed_since}: {', '.join(ids)}",
          file=sys.stderr)
    codes = {}
    for model_id in ids:
        codes[model_id] = _run_one(model_id, args)
        if codes[model_id] == 130:  # Ctrl-C stops the command, not one row: the rows after it are not run
            break
    # The worst outcome decides: Ctrl-C (130), a claim that did not hold (1), then bad input (2), then nothing
    # measured (3).
    code = next((c for c in (130, 1, 2) if c in codes.values()), 3 if all(c == 3 for c in codes.values()) else 0)
    print("aniso run: " + ", ".join(f"{m}: exit {c}" for m, c in codes.items()) + f"; exit code {code}",
          file=sys.stderr)
    return code


def _several_models(model: str) -> str | None:
    """Why ``aniso run MODEL`` is refused where ``model`` is a comma-separated list of models (and no path here):
    it runs one model; pytest's ``--aniso-models`` takes several. None otherwise."""
    from .api import _is_path_here

    if "," not in model or _is_path_here(model):
        return None
    ids = [part.strip() for part in model.split(",")]
    return (f"{model!r} names {len(ids)} models; aniso run runs the claims on one model: run it once per model, or "
            f"all of them in one run with pytest claims/ --aniso-models {model}")


def _diff(args: argparse.Namespace) -> int:
    from .report.diff import diff_results, format_diff, left_aside, model_sets
    from .judge.results import read_results

    unsealed: list[str] = []
    try:
        old, new = read_results(Path(args.old), unsealed=unsealed), read_results(Path(args.new), unsealed=unsealed)
    except ValueError as exc:
        print(f"aniso diff: {exc}", file=sys.stderr)
        return 2
    for note in unsealed:  # a file edited with its digest recomputed reads as a run's: said before what it shows
        print(f"aniso diff: warning: {note}", file=sys.stderr)
    mine, theirs = model_sets(old, new)
    common_only = not args.all and mine != theirs
    changes = diff_results(old, new, common_only=common_only, notes=True)
    only_old, only_new = left_aside(old, new)
    if not old.results and not new.results:
        print(f"{args.old} -> {args.new}: nothing compared: neither file holds a result")
    elif common_only and only_new == len(new.results):
        print(f"{args.old} -> {args.new}: nothing compared: the files have no result (claim, model, test) in common")
    else:
        print(format_diff(changes, args.old, args.new))
    if _run_after(old.provenance.time, new.provenance.time):  # OLD run after NEW: every change above reads backwards
        print(f"note: {args.old} was run after {args.new} ({old.provenance.time} and {new.provenance.time}): the "
              "changes above read from the later run to the earlier one; give the earlier run first to read them "
              "forwards", file=sys.stderr)
    if common_only:
        print(f"the runs cover different models ({len(mine)} and {len(theirs)}); compared the "
              f"{len(new.results) - only_new} result(s) both have, left aside {only_old} only in {args.old} and "
              f"{only_new} only in {args.new} (--all lists them as removed and added)")
    return 1 if any(c.kind == "verdict" or (c.kind == "record" and c.new.startswith("stale")) for c in changes) else 0


def _run_after(first: str, second: str) -> bool:
    """Whether the run of provenance time ``first`` (ISO 8601) was made after that of ``second``; False where either
    does not read as a time with its offset."""
    import datetime as _dt

    try:
        return _dt.datetime.fromisoformat(first) > _dt.datetime.fromisoformat(second)
    except (TypeError, ValueError):  # a time without an offset beside one with it, or no time
        return False


def _record(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from .common.files import atomic_write, line_ending, rewriting, through_descriptor
    from .common.settings import DEFAULT_SEED, Settings
    import yaml

    from .api import DETECTED_BASE, DETECTED_ENTRY, DETECTED_REGISTRY
    from .judge.records import contradicted_records, record_new_findings, refresh_records
    from .judge.results import file_digest, read_results, unsealed_lines
    from .registry.entries import RegistryError, load_registry
    from .registry.locate import open_registry, registry_path, registry_source

    stream = through_descriptor(args.results) if args.results != "-" else None
    if stream is not None:  # the run's folder is read as well: the row of a detected model sealed beside the results
        print(f"aniso record: {_shown(args.results)} is {stream}, not a file in a run's folder (aniso record reads "
              f"what the run wrote beside its results.json); give the path of the results.json a run wrote",
              file=sys.stderr)
        return 2
    with ExitStack() as lock:  # held from the registry's digest check to its rewrite (see rewriting)
        try:
            doc = read_results(Path(args.results), require_digest=True, require_seal=True)  # as a run here wrote it
            if doc.provenance.twin is not None:
                raise ValueError(f"{args.results} holds the verdicts of a twin run (random weights, code path only), "
                                 "which are never recorded; record the results of a run on the model's own weights")
            seed = doc.provenance.settings.get("seed", DEFAULT_SEED)
            if seed != DEFAULT_SEED:  # its numbers would make every run at the default seed read the record stale
                raise ValueError(f"{args.results} was measured at seed {seed}; the registry's records hold numbers "
                                 f"measured at the default seed {DEFAULT_SEED}, which the runs compare theirs with: "
                                 "record the results of a run without --aniso-seed (ANISO_SEED)")
            beside = Path(args.results).with_name(DETECTED_ENTRY)  # the row of a detected model, as the run sealed it
            detected_text = unsealed_lines(beside, beside.read_text(encoding="utf-8")) if beside.is_file() else None
            comments = {key: line.split(": ", 1)[1].strip() for line in (detected_text or "").splitlines()
                        for key in (DETECTED_BASE, DETECTED_REGISTRY) if line.startswith(f"# {key}:")}
            base = comments.get(DETECTED_BASE)  # a first run of a detected model ran on this registry plus its row
            setting = Settings.from_sources({"device": "cpu"}).registry
            run_read = _run_registry(doc, comments.get(DETECTED_REGISTRY))
            registry = registry_path(args.registry, setting or run_read)
            if registry is not None and registry.is_file():  # another aniso record into it waits, then reads it anew
                lock.enter_context(rewriting(registry))
            named = (registry_source(args.registry, setting) if args.registry is not None or setting is not None
                     else f"the registry {args.results} was run on" if run_read is not None else None)
            # its own problem (not YAML, no registry, a results file) named, not a digest that differs
            open_registry(registry, named)
            # numbers go into the registry they ran on
            results, already = doc.results, False
            rows_then = doc.provenance.registry_rows_sha256 if base is None else None
            rows_state = (_rows_state(rows_then, registry.read_text(encoding="utf-8"))
                          if rows_then and file_digest(registry) != doc.provenance.registry_sha256 else None)
            if rows_state is not None:  # the rows it ran (and the fields outside rows) as run, or as it recorded them
                done = {i for i, state in rows_state.items() if state == "recorded"}
                results = [r for r in doc.results if r.model_id not in done]
                already = bool(done) and not results
            elif file_digest(registry) not in (doc.provenance.registry_sha256, base):
                import hashlib

                raw = registry.read_bytes()
                same = _registry_as_run(raw, {doc.provenance.registry_sha256, base} - {None})
                if same is not None:  # the same registry, checked out or saved otherwise
                    raise ValueError(f"{args.results} was written by a run of {registry} as it was before {same} "
                                     "changed: put it back and record again; nothing else differs")
                raise ValueError(f"{args.results} was not written by a run of {registry} as it is now (the run read "
                                 + (f"a registry of sha256 {doc.provenance.registry_sha256[:12]}…"
                                    if doc.provenance.registry_sha256 else "no registry file")
                                 + f", this one is {str(file_digest(registry))[:12]}…"
                                 + f"{_registry_edits(doc, registry)}); re-run the claims on it")
            newline = line_ending(registry.read_bytes())  # the registry's own, kept by the rewrite
            new, notes = refresh_records(registry.read_text(encoding="utf-8"), results)
            detected = yaml.safe_load(detected_text) if detected_text is not None else None
            new, added = record_new_findings(new, results, detected)
            notes += added
        except (OSError, ValueError, yaml.YAMLError) as exc:
            print(f"aniso record: {exc}", file=sys.stderr)
            return 2
        if already:
            print(f"aniso record: {args.results} is already recorded in {registry} (its rows are as recording it "
                  "left them): unchanged")
            return 0
        contradicted = contradicted_records(results)
        if not notes and not contradicted:
            unchecked = [r.record_check.split(": ", 1)[1] for r in results
                         if (r.record_check or "").startswith("record's numbers not compared: ")]
            print(f"aniso record: no stale record and no new finding in {args.results}: {registry} unchanged"
                  + (f"; but {len(unchecked)} record(s) were not compared by this run ({unchecked[0]}"
                     + (", …" if len(set(unchecked)) > 1 else "") + "), so they could not be checked: a run at "
                     "their sizes and inputs checks them" if unchecked else ""))
            return 0
        from .common.tables import printable

        for line in notes:
            print(printable(line))  # (text from the results file: no escape sequence reaches the terminal)
        if contradicted:  # a verdict is never rewritten here: named, and the command fails as the run did
            print(f"aniso record: {len(contradicted)} record(s) in {registry} contradicted by the verdicts of "
                  f"{args.results}, not rewritten: edit each by hand (verdict, numbers and reason)")
            for line in contradicted:
                print(printable(f"  {line}"))
        if not notes:
            print(f"aniso record: nothing else to record: {registry} unchanged")
            return 1
        if args.dry_run:
            print(f"aniso record: --dry-run: {registry} unchanged")
            return 1 if contradicted else 0
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:  # validate before the registry is touched
            trial = Path(tmp) / registry.name
            try:
                trial.write_text(new, encoding="utf-8")
                load_registry(trial)
            except RegistryError as exc:
                print(f"aniso record: {registry} would no longer validate ({exc}); unchanged: fix the record by hand",
                      file=sys.stderr)
                return 2
            except OSError as exc:  # a full disk, a file-size limit: the registry is not touched
                print(f"aniso record: cannot write the new {registry.name} ({exc.strerror or exc}); {registry} "
                      "unchanged", file=sys.stderr)
                return 2
        try:  # through a link, never over it
            atomic_write(registry.resolve(), lambda path: path.write_text(new, encoding="utf-8", newline=newline))
        except OSError as exc:
            print(f"aniso record: cannot write {registry} ({exc.strerror or exc}); unchanged", file=sys.stderr)
            return 2
        print(f"aniso record: {len(notes)} record(s) rewritten or added in {registry}"
              + (f" (a link to {registry.resolve()})" if registry.is_symlink() else "")
              + ("; the contradicted record(s) above are left as they were" if contradicted else ""))
        return 1 if contradicted else 0


def _rows_state(rows_then: dict[str, list[str]], text: str) -> dict[str, str] | None:
    """For ``aniso record``: each row a run took (:attr:`aniso.judge.results.Provenance.registry_rows_sha256`) in the
    registry ``text`` as it is now: ``"as run"``, or ``"recorded"`` (as recording that run's results left it, and not
    as the run read it); None where one of them (or the fields outside the rows) is neither, or is gone: an edit
    that may decide the run's verdicts, so its results are refused."""
    from .judge.records import row_digests

    try:
        now = row_digests(text)
    except (ValueError, TypeError, KeyError):
        return None
    state = {}
    for row_id, (as_run, as_recorded) in rows_then.items():
        if now.get(row_id) == as_run:
            state[row_id] = "as run"
        elif now.get(row_id) == as_recorded:
            state[row_id] = "recorded"
        else:
            return None
    return {k: v for k, v in state.items() if k}


def _run_registry(doc, detected: str | None) -> str | None:
    """The registry file the run of ``doc`` (a results document) read, where it is still a file: for the first run of
    a detected model the one its row was added to (``detected``, JSON text, from the sealed row beside the results),
    else the run's setting ``registry``; None otherwise (``aniso record`` then looks where every command looks)."""
    import json

    try:
        path = json.loads(detected) if detected is not None else doc.provenance.settings.get("registry")
    except ValueError:
        return None
    return path if isinstance(path, str) and Path(path).is_file() else None


#: The settings ``aniso bench extraction`` gives from its options (always: each option has a default).
_BENCH_OPTIONS = {"n_sequences": "--paragraphs", "max_length": "--max-length", "batch_size": "--batch-size"}


def _bench_extraction(args: argparse.Namespace) -> int:
    import json

    from .bench.extraction import bench_extraction, best_device, format_table, llama_subject, load_subject
    from .inputs.text import CorpusError
    from .registry.entries import RegistryError
    from .sources import ModelUnavailable

    if (args.model is None) == (args.config is None):
        print("aniso bench extraction: give a registry id (MODEL) or --config" +
              (", not both" if args.model is not None else " (e.g. all-MiniLM-L6-v2, or --config llama-7b "
                                                          "--random-init)"), file=sys.stderr)
        return 2
    if args.random_init != (args.config is not None):
        print("aniso bench extraction: " + (
            f"--random-init builds random weights of a --config (llama-7b, llama-13b or llama-tiny), not of "
            f"{args.model}; give --config NAME instead of {args.model}, or leave out --random-init to time its own "
            "weights" if args.random_init else
            "--config builds random weights: give it with --random-init"), file=sys.stderr)
        return 2
    device = args.device or best_device()
    sizes = dict(paragraphs=args.paragraphs, max_length=args.max_length, batch_size=args.batch_size, device=device)
    try:
        if args.config is not None:
            subject = llama_subject(args.config, layers=args.layers, dtype=args.dtype, **sizes)
        else:
            subject = load_subject(args.model, registry=args.registry, **sizes)
        result = bench_extraction(subject, repeats=args.repeats, warmup=not args.no_warmup, memory=not args.no_memory,
                                  embedding_isotropy=not args.no_embedding_isotropy)
    except (RegistryError, KeyError, ValueError, CorpusError, ModelUnavailable, RuntimeError) as exc:
        print(f"aniso bench extraction: {_as_typed(str(exc), _BENCH_OPTIONS)}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


def _bench_twonn(args: argparse.Namespace) -> int:
    import json

    try:
        from .bench.twonn import bench_twonn
    except ImportError as exc:
        print(f"aniso bench twonn: aniso.bench.twonn is not available ({exc})", file=sys.stderr)
        return 2
    from .bench.extraction import best_device
    from .bench.twonn import DATA_KINDS, SUBSPACE_DIM, PeerFailed, memory_parts, memory_problem, work_problem

    if args.data == "subspace" and args.d < SUBSPACE_DIM:  # named as typed, not as the function's parameters
        print(f"aniso bench twonn: argument --d: --data subspace needs at least {SUBSPACE_DIM} dimensions, got "
              f"{args.d}", file=sys.stderr)
        return 2
    device = args.device or best_device()
    if args.n >= 3 and args.d >= 1 and args.data in DATA_KINDS:  # before any point is made
        problem = memory_problem(args.n, args.d, args.data, not args.no_peers)
        if problem is not None:
            peers = "peers" in memory_parts(args.n, args.d, args.data, not args.no_peers)
            print(f"aniso bench twonn: --n {args.n} --d {args.d}: the points and their copies {problem}; give a "
                  "smaller --n or --d" + (" (--no-peers leaves out the peers' float64 copies)" if peers else ""),
                  file=sys.stderr)
            return 2
        problem = work_problem(args.n, device)
        if problem is not None:
            print(f"aniso bench twonn: --n {args.n}: each nearest-neighbour pass {problem}; give a smaller "
                  "--n", file=sys.stderr)
            return 2
    try:
        result = bench_twonn(args.n, args.d, args.data, args.seed, device, not args.no_peers)
    except PeerFailed as exc:  # ANISO_PEER_PYTHON checked before any point is made
        print(f"aniso bench twonn: {PeerFailed(exc.problem, 'give --no-peers to leave the peers out')}",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"aniso bench twonn: {exc}", file=sys.stderr)
        return 2
    not_run = result.get("peers_not_run") or []
    if not_run:  # the command is "against the bound and the peers": say which peers are missing, and why
        print(f"aniso bench twonn: peer(s) {', '.join(not_run)} not run: not installed here and ANISO_PEER_PYTHON "
              "is unset; set it to a Python that has them (docs/performance.md), or give --no-peers to leave them "
              "out", file=sys.stderr)
    failed = result.get("peers_failed") or {}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        from tabulate import tabulate

        rows = [["suite", result.get("suite_s"), result.get("estimate")], ["bound", result.get("bound_s"), None]]
        rows += [[name, peer.get("s"), peer.get("estimate")] for name, peer in (result.get("peers") or {}).items()]
        print(f"TwoNN on {result.get('n')} x {result.get('d')} {result.get('data')} points, {result.get('device')}: "
              f"suite / bound = {result.get('ratio_to_bound')}")
        print(tabulate(rows, headers=["estimator", "seconds", "estimate"], floatfmt=".4g"))
    if failed:  # the timings above are kept; the peer that failed is named, and the exit code says so
        name, problem = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more peer(s))" if len(failed) > 1 else ""
        print(f"aniso bench twonn: peer {name} failed after the suite's timings above: "
              f"{PeerFailed(problem, 'give --no-peers to leave the peers out')}{more}", file=sys.stderr)
        return 2
    return 0


def _bench_command(args: argparse.Namespace) -> int:
    import json

    from .bench.command import bench_command
    from .inputs.text import CorpusError
    from .registry.entries import RegistryError
    from .sources import ModelUnavailable

    try:
        with _sigterm_raised():  # the timed process is ended (subprocess.run kills it) and the temporary folder removed
            result = bench_command(args.model, paragraphs=args.paragraphs, repeats=args.repeats,
                                   registry=args.registry)
    except (RegistryError, KeyError, ValueError, CorpusError, ModelUnavailable, RuntimeError) as exc:
        print(f"aniso bench command: {_as_typed(str(exc), {'n_sequences': '--paragraphs'})}", file=sys.stderr)
        return 2
    except _Terminated as exc:
        print(f"aniso bench command: interrupted ({exc.name}); the timed process was ended and its temporary folder "
              "removed", file=sys.stderr)
        exc.end()
        return 143
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"aniso stats {result['model']} --n-sequences {result['paragraphs']}: {result['command_s']} s; the "
              f"same forward passes in a bare script: {result['script_s']} s; ratio {result['ratio']} (best of "
              f"{len(result['rounds'])})")
    return 0


#: The attribute of the parsed arguments that holds the options given on the command line (their long names).
_GIVEN = "_options_given"


def _record_given(namespace: argparse.Namespace, option: str) -> bool:
    """Record that ``option`` was given; True when it had been given already in this parse."""
    given = namespace.__dict__.setdefault(_GIVEN, set())
    again = option in given
    given.add(option)
    return again


class _Store(argparse._StoreAction):
    """argparse's ``store``, refusing what it would otherwise take without a word: an option given twice (the last
    value would win) and an empty value (an option given ``''`` would read as if it were not given, a positional
    ``''`` as the current folder). Raises :class:`argparse.ArgumentError` naming the option (the parser's one line,
    exit code 2)."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = values if isinstance(values, list) else [values]
        if any(isinstance(v, str) and not v.strip() for v in items):
            raise argparse.ArgumentError(self, f"empty value {values!r}; give a value"
                                               + (" or leave the option out" if self.option_strings else ""))
        if self.option_strings and _record_given(namespace, self.option_strings[-1]):
            raise argparse.ArgumentError(self, f"given more than once ({getattr(namespace, self.dest)!r}, then "
                                               f"{values!r}); give it once")
        super().__call__(parser, namespace, values, option_string)


class _Flag(argparse._StoreTrueAction):
    """argparse's ``store_true``, recording that the flag was given (for :func:`_needs`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        _record_given(namespace, self.option_strings[-1])
        super().__call__(parser, namespace, values, option_string)


def _needs(parser: argparse.ArgumentParser, option: str, needed: str, why: str) -> None:
    """Declare that ``option`` of ``parser`` only applies with ``needed`` (both long option names): given without
    it, the command stops with one line (``--keep-twins needs --twin: why``), exit code 2, instead of ignoring it."""
    needs = parser.get_default("_needs") or ()
    parser.set_defaults(_needs=(*needs, (option, needed, why)))


def _check_needs(used: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit through ``used.error`` (one line) when an option declared by :func:`_needs` is given without the option
    it needs."""
    given = getattr(args, _GIVEN, set())
    for option, needed, why in getattr(args, "_needs", None) or ():
        if option in given and needed not in given:
            used.error(f"{option} needs {needed}: {why}")


def _integer(setting: str | None = None, lo: int | None = None, hi: int | None = None):
    """An argparse ``type``: an integer within the bounds of ``setting`` (:data:`aniso.common.settings.BOUNDS`,
    looked up when an option is parsed) or within ``lo`` .. ``hi``. Raises :class:`argparse.ArgumentTypeError`
    naming the value and what is allowed; the parser prefixes the option as typed (``argument --n-sequences: must
    be an integer from 1 to 1000000000, got 0``)."""

    def parse(text: str) -> int:
        low, high = lo, hi
        if setting is not None:
            from .common.settings import BOUNDS

            low, high = BOUNDS[setting]
        allowed = (f"an integer from {low} to {high}" if high is not None else f"an integer of at least {low}"
                   if low is not None else "an integer")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def _device(text: str) -> str:
    """An argparse ``type``: a torch device present here (:func:`aniso.common.devices.resolve_device`, the check
    the ``device`` setting makes; ``auto`` becomes the best one). Raises :class:`argparse.ArgumentTypeError` naming
    the device and what is present."""
    from .common.devices import resolve_device

    try:
        return resolve_device(text)
    except ValueError as exc:
        said = str(exc)
        cut = said.find("; set device")  # the setting's advice; at this door the option is --device
        raise argparse.ArgumentTypeError(said[:cut] + "; give one that is, e.g. --device cpu" if cut >= 0 else said)\
            from None


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the (sub)command, with a "did you mean" for a
    misspelt command or option (:mod:`difflib`), instead of argparse's usage and error lines. An option given twice
    or given an empty value is refused (:class:`_Store`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):
            self.register("action", name, _Store)
        self.register("action", "store_true", _Flag)

    def error(self, message: str):
        if self.prog == "aniso hub import" and message.endswith("required: folder") and \
                _looks_like_folder(_positionals(self, getattr(self, "_given", None) or [])):
            self.exit(2, "aniso hub import: give the hub id before the folder: aniso hub import ORG/NAME FOLDER\n")
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            what = ("command" if isinstance(action, argparse._SubParsersAction)
                    else f"{action.option_strings[-1] if action.option_strings else action.dest} value")
            raise argparse.ArgumentError(None, f"unknown {what} {value!r}{_did_you_mean(str(value), choices)} "
                                               f"(one of: {', '.join(choices)})")

    def parse_known_args(self, args=None, namespace=None):
        # '--n-sequences 8' quoted as one word reads, for argparse, as a positional (the model), and the word the
        # user typed right is then blamed: named first, as an option of this (sub)command and its value
        from .common.settings import quoted_option

        quoted = next(filter(None, (quoted_option(a, self._option_string_actions) for a in args or ())), None)
        if quoted is not None:
            self.error(quoted)
        self._given = list(args) if args is not None else None  # what error() reads of the words given
        return super().parse_known_args(args, namespace)

    def unrecognized(self, extras: list[str]):
        """Exit with one line naming the arguments this (sub)command does not know, with the closest option."""
        options = [a.split("=", 1)[0] for a in extras if a.startswith("-")]
        hint = _did_you_mean(options[0], list(self._option_string_actions)) if options else ""
        if options and self.prog == "aniso run" and not options[0].startswith("--aniso-"):
            setting = _setting_after_dashes(next(a for a in extras if a.startswith("-")), extras)
            if setting is not None:  # '--n-sequences 8' (aniso stats's option): the run's settings go after --
                hint = f"; aniso run takes the settings after --, as pytest options: aniso run MODEL -- {setting}"
        if not hint and options and options[0].startswith("--aniso-") and self.prog == "aniso run":
            hint = f"; pytest's {options[0]} goes after --, e.g. aniso run MODEL -- {options[0]} VALUE"
        self.error(f"unrecognized argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}{hint}")


def _positionals(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """The words of ``args`` that are no option of ``parser`` and no option's value (``--revision main``: neither)."""
    words, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            break
        elif arg.startswith("-") and len(arg) > 1:
            action = parser._option_string_actions.get(arg)
            skip = action is not None and action.nargs != 0 and "=" not in arg
        else:
            words.append(arg)
    return words


def _looks_like_folder(words: list[str]) -> bool:
    """Whether ``words`` is one word naming an existing folder or written as a path (``./m``, ``/m``, ``~/m``,
    ``a/b/c``), not a hub id (``ORG/NAME``)."""
    if len(words) != 1:
        return False
    word = words[0]
    return Path(word).expanduser().is_dir() or word.startswith((".", "/", "~", "\\")) or word.count("/") > 1 or \
        "\\" in word


def _setting_after_dashes(option: str, extras: list[str]) -> str | None:
    """The pytest option (and value) that gives ``aniso run`` the setting an unknown ``option`` names
    (``--n-sequences`` or ``--aniso-n-sequences``, as ``--n-sequences=8`` or with its value the next of ``extras``):
    ``"--aniso-n-sequences 8"``; None when ``option`` names no setting."""
    from .common.settings import setting_options

    name, _, value = option.partition("=")
    bare = name.removeprefix("--")
    found = next(((flag_name, is_flag) for setting, flag_name, is_flag, _ in setting_options()
                  if setting == bare.replace("-", "_")), None)
    if found is None:
        return None
    flag_name, is_flag = found
    if is_flag:
        return flag_name
    if not value:
        given = option in extras and extras.index(option) + 1 < len(extras)
        value = extras[extras.index(option) + 1] if given else "VALUE"
    return f"{flag_name} {value}"


#: The settings a command other than ``aniso run`` takes as its own options: ``{command: {setting: option}}``.
_OWN_SETTING_OPTIONS = {"aniso stats": {"corpus": "--corpus", "n_sequences": "--n-sequences"},
                        "aniso bench extraction": {v: k for k, v in _BENCH_OPTIONS.items()} | {"device": "--device"},
                        "aniso bench command": {"n_sequences": "--paragraphs"},
                        "aniso bench twonn": {"seed": "--seed", "device": "--device"}}


def _after_dashes(used: _Parser, extra: list[str]) -> str:
    """Why the arguments after ``--`` (``extra``) are refused by ``used``, a command other than ``aniso run`` (the
    only one that passes them on, to pytest), with what to give instead for the first option among them: the
    command's own option of that name (``--out``) or of that setting (``--aniso-n-sequences``: ``--n-sequences``),
    else the setting's variable (``--aniso-seed 3``: ``ANISO_SEED=3``)."""
    from .common.settings import setting_options

    flags = {name for name, _, flag, _ in setting_options() if flag}
    shown = " ".join(extra)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    said = f"{shown} after `--`: only aniso run passes what follows `--` (to pytest), {used.prog} takes nothing there"
    first = next((a for a in extra if a.startswith("-")), None)
    if first is None:
        return said + "; give its arguments before `--`"
    option, _, value = first.partition("=")
    name = option[len("--aniso-"):].replace("-", "_") if option.startswith("--aniso-") else None
    after = extra[extra.index(first) + 1:]
    if value == "" and name not in flags and after and not after[0].startswith("-"):
        value = after[0]
    if option in used._option_string_actions:
        return said + f"; give {option} before `--`"
    if name not in {n for n, *_ in setting_options()}:
        return said
    own = _OWN_SETTING_OPTIONS.get(used.prog, {}).get(name)
    if own is not None:
        return said + f"; give {own}" + (f" {value}" if value else "") + " before `--`"
    return said + f"; set the variable ANISO_{name.upper()}" + (f"={value}" if value else "") + " instead"


def _innermost(parser: _Parser, args: argparse.Namespace) -> _Parser:
    """The (sub)command parser that parsed ``args``: ``aniso bench twonn``'s for ``aniso bench twonn ...``."""
    used = parser
    while used._subparsers is not None:
        action = next(a for a in used._subparsers._group_actions if isinstance(a, argparse._SubParsersAction))
        chosen = getattr(args, action.dest, None)
        if chosen not in action.choices:
            break
        used = action.choices[chosen]
    return used


def _did_you_mean(word: str, choices: list[str]) -> str:
    """``"; did you mean X?"`` with the closest of ``choices`` to ``word``, or ``""`` when none is close."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


class _Help(argparse.RawDescriptionHelpFormatter):
    """Help whose descriptions and examples are wrapped to the terminal's width (:func:`shutil.get_terminal_size`,
    100 columns where the output is no terminal): each line of a description is a paragraph, wrapped with the
    indentation it has (continuation lines of an indented line two spaces further in)."""

    def __init__(self, prog: str, **kwargs):
        import shutil

        kwargs.setdefault("width", shutil.get_terminal_size((100, 24)).columns - 2)
        super().__init__(prog, **kwargs)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for line in text.splitlines():
            lead = indent + " " * (len(line) - len(line.lstrip(" ")))
            out.append(textwrap.fill(line.strip(), width, initial_indent=lead,
                                     subsequent_indent=lead + ("  " if lead else ""), break_on_hyphens=False,
                                     break_long_words=False) if line.strip() else "")
        return "\n".join(out)


def _command(sub, name: str, help_text: str, example: str, func, description: str = ""):
    """One subcommand whose --help ends with an example."""
    parser = sub.add_parser(name, help=help_text, description=description or help_text,
                            epilog=f"example:\n  {example}", formatter_class=_Help)
    parser.set_defaults(func=func)
    return parser


def _profile_sizes(name: str) -> str:
    """A size setting's value in each run profile, for a help text: "128 in quick, ... (the default profile quick)"."""
    from .common.settings import DEFAULT_PROFILE, PROFILES

    return ", ".join(f"{PROFILES[p][name]:,} in {p}" for p in PROFILES) + f"; the default profile is {DEFAULT_PROFILE}"


def _path_text(value: str) -> str:
    """An argparse type for a path argument: ``value`` with a leading ``~`` expanded (as the path settings and
    ``--corpus`` are: ``--out "~/r.html"``, quoted past the shell, writes to the home folder, never to a folder
    named ``~``), or ArgumentTypeError (argparse's one line naming
    the argument) where :func:`aniso.common.files.path_text_problem` refuses it: a control or invisible character, or
    blanks at its ends, which would read or write another file or folder than the one meant (``--out 'r.html\\r'``
    writes a file whose name ends in a line end; ``--out ' /abs/r.html'`` a folder named with a blank), or a path
    through a loop of symbolic links (:func:`aniso.common.files.link_loop`)."""
    from .common.files import link_loop, path_text_problem

    if not value.strip():  # an empty value: named as such where the command reads it
        return value
    problem = path_text_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    loop = link_loop(value)
    if loop is not None:  # (Path.resolve would raise RuntimeError on it, deep in a command)
        raise argparse.ArgumentTypeError(f"{loop} is a symbolic link to itself, or one of a loop of links: remove it, "
                                         "or give another path")
    return os.path.expanduser(value)


def _written_path_text(value: str) -> str:
    """:func:`_path_text` for a path a command writes (``--out``, ``--keep-twins``, a hub cache), refusing a URL too
    (:func:`aniso.common.files.url_path_problem`: ``--out https://x/r.html`` wrote ``./https:/x/r.html``; a path
    that is read names a URL where it is read, saying to download it)."""
    from .common.files import url_path_problem

    url = url_path_problem(value, either=True) if value.strip() else None
    if url is not None:
        raise argparse.ArgumentTypeError(url)
    return _path_text(value)


def _registry_as_run(raw: bytes, digests: set[str]) -> str | None:
    """What differs between the registry file's bytes ``raw`` and the registry a run read (one of ``digests``,
    SHA-256) where only its line ends or a byte-order mark do (a checkout with other line ends, an editor's save):
    ``"its line ends (the run read LF, this file has CRLF; e.g. dos2unix)"``, ``"a byte-order mark at its start
    (remove it)"``, both joined; None when the file differs otherwise."""
    import hashlib

    bom = b"\xef\xbb\xbf"
    text = raw.removeprefix(bom)
    lf = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    ends = "CRLF" if b"\r\n" in text else "CR" if b"\r" in text else "LF"
    for read, body in (("LF", lf), ("CRLF", lf.replace(b"\n", b"\r\n")), ("CR", lf.replace(b"\n", b"\r"))):
        for mark in (b"", bom):
            if hashlib.sha256(mark + body).hexdigest() in digests and mark + body != raw:
                what = ([f"its line ends (the run read {read}, this file has {ends}; e.g. dos2unix)"]
                        if read != ends else [])
                if raw.startswith(bom) != bool(mark):
                    what.append("a byte-order mark at its start (" + ("remove it" if raw.startswith(bom) else
                                                                      "the run read one") + ")")
                return " and ".join(what)
    return None


def _registry_option(parser) -> None:
    parser.add_argument("--registry", default=None, help="registry file (default: models.yaml or ANISO_REGISTRY)")


class _Output:
    """Standard output for the length of one command, where writing may fail: the reader went away (``aniso list |
    head``: BrokenPipeError) or the file cannot take it (``> /dev/full``: no space left). The first such error is
    kept in :attr:`failed` and the rest of the output goes nowhere (the descriptor is pointed at ``os.devnull``,
    for what writes to it directly), so the command runs to its end and keeps what it computes (cache entries,
    reports); :func:`main` then says it in one line, or nothing for a closed pipe. Everything else is the
    stream's."""

    def __init__(self, stream):
        self.stream = stream
        self.failed: OSError | None = None

    @classmethod
    def closed(cls) -> "_Output":
        """The output of a command started with its standard output closed (``aniso list >&-``: ``sys.stdout`` is
        None): failed from the start (:func:`main` says so in one line), its writes going to ``os.devnull``, which
        also takes descriptor 1, so that no file the command opens is taken for standard output."""
        import errno

        output = cls(open(os.devnull, "w", encoding="utf-8"))
        output.failed = OSError(errno.EBADF, "standard output is closed")
        return output

    def _gone(self, exc: OSError) -> None:
        self.failed = self.failed or exc
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no descriptor (a test's captured output): writes are dropped
            pass

    def write(self, text: str) -> int:
        if self.failed is None:
            try:
                return self.stream.write(text)
            except UnicodeEncodeError:  # a stream in a locale's narrow encoding (LC_ALL=C: ASCII): escaped, not lost
                encoding = getattr(self.stream, "encoding", None) or "ascii"
                return self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
            except OSError as exc:
                self._gone(exc)
        return len(text)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self._gone(exc)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _version() -> str:
    """The installed aniso's version (its distribution's metadata), or the package's own where it is not installed
    (run from a source tree)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("aniso")
    except importlib.metadata.PackageNotFoundError:
        from . import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``aniso`` command. Returns the exit code: the command's; where standard output cannot be
    written (a full disk: one line on standard error) at least 1, an environment fault rather than bad input (2);
    a reader that closed the pipe (``aniso list | head``) ends the output quietly, with the command's code; a
    Ctrl-C that stops a command is one line ("aniso COMMAND: interrupted (Ctrl-C)", or the command's own) and 130,
    ``aniso run`` included (its other codes: :data:`aniso.api.RUN_EXIT_CODES`)."""
    from .api import RUN_EXIT_CODES

    parser = _Parser(prog="aniso", description=DESCRIPTION,
                                     epilog="example:\n  aniso list models\n  aniso run all-MiniLM-L6-v2\n  "
                                     "aniso run --changed-since origin/main\n  "
                                     "aniso diff reports/run-A/results.json reports/run-B/results.json",
                                     formatter_class=_Help)
    parser.add_argument("--version", action="version", version=f"aniso {_version()}",
                        help="print the installed aniso's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ls = _command(sub, "list", "list the claims (executable or not) and the models (tags, source, weights here)",
                  "aniso list models --models offline", _list)
    ls.add_argument("what", nargs="?", choices=("claims", "models", "all"), default="all")
    ls.add_argument("--models", default=None, help="model set to mark (default: setting models, 'small')")
    _registry_option(ls)
    run = _command(sub, "run", "run the claims on one model: a registry id, a local model folder or a hub id",
                   "aniso run ./my-bert --claims G.token-nlp-anisotropic,G.drift-correlation-spearman", _run,
                   "Run the claims (pytest claims/) on one model and write the report. A model that is not in the "
                   "registry gets an entry detected from its files (modality, granularity, architecture, role), or "
                   "a clear error saying which fields to write into models.yaml; a claim that does not hold on it is "
                   "a new finding, which does not fail the run and which `aniso record RESULTS` records. Settings "
                   "come from the ANISO_* "
                   "variables (corpus, data folders, profile); pytest options follow `--` (e.g. `-- "
                   "--aniso-n-sequences 64`).\n\nexit codes:\n"
                   + "\n".join(f"  {k}  {v}" for k, v in RUN_EXIT_CODES.items())
                   + "\n  130  stopped by Ctrl-C (128 + SIGINT, as every command): one line says what is cached and "
                   "what was written")
    run.add_argument("model", nargs="?", default=None,
                     help="registry id, hub id, or a file or folder in a format a source kind reads: a transformers "
                          "folder (config.json), a llama2.c checkpoint (its Hugging Face tokenizer beside it), an "
                          "ONNX CNN file")
    run.add_argument("--changed-since", metavar="REF", default=None,
                     help="instead of MODEL: every registry row added or changed since git ref REF (a branch, tag or "
                          "commit), each run as `aniso run ID` runs it; the worst exit code is the command's")
    run.add_argument("--claims", default=None, help="comma-separated claim ids or prefixes (e.g. 'G.', 'R.')")
    run.add_argument("--claims-dir", type=_path_text, default=None, help="folder of the claim tests (default: claims/ beside the registry)")
    run.add_argument("--twin", action="store_true",
                     help="run the claims on twins of the registry's hub rows MODEL names (an id, ids and tags, or a "
                          "model set such as paper): the row's own architecture and preprocessing files with seeded "
                          "random weights, imported into a temporary hub cache and loaded offline as a download "
                          "would be; verdicts labelled 'twin: random weights, code path only', never findings")
    run.add_argument("--keep-twins", type=_written_path_text, default=None, metavar="FOLDER",
                     help="with --twin: keep the twins' folders and hub cache in FOLDER")
    _needs(run, "--keep-twins", "--twin", "it keeps the folders of a twin run; without --twin there are none")
    run.add_argument("--full-size", action="store_true",
                     help="with --twin: build each twin at its registry row's 'full' config (the real model's sizes, "
                          "in the row's dtype) instead of its tiny one; verdicts labelled 'twin, full size: random "
                          "weights, code path only'")
    _needs(run, "--full-size", "--twin", "it sets the size of the twins; without --twin the row's own weights run")
    _registry_option(run)
    rep = _command(sub, "report", "render report.html from a results.json",
                   "aniso report reports/run-20261123-131230/results.json", _report)
    rep.add_argument("results", type=_path_text, help="path to a results.json written by `pytest claims/`")
    rep.add_argument("--out", type=_written_path_text,
                     help="output HTML file, named *.html or *.htm (default: report.html beside results.json)")
    df = _command(sub, "diff", "which verdicts and numbers changed between two runs (exit code 1 on a changed verdict)",
                  "aniso diff reports/run-A/results.json reports/run-B/results.json", _diff,
                  "Compare two results.json files claim by claim and model by model: changed verdicts, deciding "
                  "statistics that moved beyond their bootstrap intervals, results that appeared or went away. When "
                  "the runs cover different models (a one-model `aniso run` against a full run), only the results both have "
                  "are compared and the rest is counted; --all compares everything. "
                  "Exit code 1 when a verdict changed (for CI), else 0; 2 when a file cannot be read.")
    df.add_argument("old", type=_path_text, help="results.json of the earlier run")
    df.add_argument("new", type=_path_text, help="results.json of the later run")
    df.add_argument("--all", action="store_true",
                    help="compare every result, listing those only one run has as added or removed (the default "
                         "when both runs cover the same models; otherwise only the results both have are compared)")
    rec = _command(sub, "record", "re-measure the registry's stale records: their numbers from a run's results.json",
                   "aniso record reports/run-A/results.json --dry-run", _record,
                   "For every registry record that the run found stale (its numbers differ from the run's beyond "
                   "their tolerance, on the record's inputs at the recorded profile's sizes), replace the record's "
                   "measured numbers by the run's, keeping its keys. The reasons, whose numbers are placeholders into "
                   "measured, then read the new numbers. A changed verdict is not rewritten: each record the run's "
                   "verdict contradicts is named (recorded verdict and numbers, measured ones) to be edited by hand, "
                   "left as it is, and the command exits 1 (as the run did). A claim that does not hold on a model with no record (the first run of a model, "
                   "`aniso run PATH`) is a new finding: it is added as a record (does-not-hold, with its numbers and "
                   "inputs, and a reason to rewrite), with the model's detected row where the registry lacks it. "
                   "Exit code 1 when a record is contradicted, 2 when a file cannot be read or the result does not "
                   "validate.")
    rec.add_argument("results", type=_path_text, help="results.json of a run on the recorded inputs and profile")
    rec.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    _registry_option(rec)
    st = _command(sub, "stats", "print the layer-wise statistics of one model",
                  "aniso stats all-MiniLM-L6-v2 --n-sequences 64", _stats)
    st.add_argument("model", help="registry id (e.g. all-MiniLM-L6-v2), model folder or hub id, as for aniso run")
    _registry_option(st)
    st.add_argument("--corpus", default=None, help="corpus file (default: ANISO_CORPUS, else the fallback)")
    st.add_argument("--n-sequences", type=_integer("n_sequences"), default=None,
                    help="paragraphs sampled, for a text model (default: ANISO_N_SEQUENCES, else the run profile's: "
                         f"{_profile_sizes('n_sequences')})")
    bs = _command(sub, "block-sweep", "run and cache the untrained-block sweeps (G §4) of registry entries",
                  "aniso block-sweep untrained-bert-block -v", _block_sweep)
    bs.add_argument("models", nargs="*", help="registry ids (default: every entry tagged untrained-block)")
    _registry_option(bs)
    bs.add_argument("-v", "--verbose", action="store_true", help="print one line per bias norm")
    ex = _command(sub, "extract", "compute and cache the statistics of registry models (sharded under torchrun)",
                  "torchrun --nproc-per-node 2 -m aniso.cli extract all-MiniLM-L6-v2", _extract,
                  "Compute and cache the layer statistics of registry models. Under torchrun each process takes a "
                  "contiguous shard of the inputs and the statistics are merged exactly. Settings come from the "
                  "ANISO_* variables, as for pytest claims/.")
    ex.add_argument("models", nargs="+", help="registry ids")
    _registry_option(ex)
    bench = _command(sub, "bench", "time extraction and statistics, or the TwoNN estimator",
                     "aniso bench extraction all-MiniLM-L6-v2 --paragraphs 256 --json", None)
    bench_sub = bench.add_subparsers(dest="bench", required=True, metavar="COMMAND")
    be = _command(bench_sub, "extraction", "time extraction and statistics against a bare forward pass",
                  "aniso bench extraction all-MiniLM-L6-v2 --paragraphs 256 --json\n  "
                  "aniso bench extraction --config llama-7b --random-init --layers 2 --paragraphs 4 --max-length 16",
                  _bench_extraction,
                  "Time, over the same paragraphs in the same batches, a bare forward pass (output_hidden_states, "
                  "inference mode), the hidden states with padding removed, and the statistics: first order, "
                  "first and second order ('all'), and every streamed statistic ('every': also first-token-excluded, "
                  "final norm, attention sink, per-input sums). Each time is the best of --repeats interleaved "
                  "rounds after a warm-up round, and is reported as a multiple of the forward pass. Peak memory of "
                  "'every' at 1x and 8x the paragraphs is measured in fresh processes (ru_maxrss on the CPU, "
                  "torch.cuda.max_memory_allocated on CUDA). The corpus is the run's (ANISO_CORPUS).")
    be.add_argument("model", nargs="?", default=None, help="registry id of a text model, e.g. all-MiniLM-L6-v2")
    be.add_argument("--config", choices=("llama-7b", "llama-13b", "llama-tiny"), default=None, metavar="NAME",
                    help="build this configuration with random weights instead of a registry model: llama-7b, "
                         "llama-13b (use --layers 40 for all its blocks) or llama-tiny")
    be.add_argument("--random-init", action="store_true", help="random weights (required with --config)")
    be.add_argument("--layers", type=int, default=32, help="blocks of the --config model (default 32; at most its own: 32, or 40 for llama-13b)")
    be.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16",
                    help="weights of the --config model (default bfloat16; the statistics are float32)")
    be.add_argument("--paragraphs", type=_integer("n_sequences"), default=256,
                    help="paragraphs of the corpus (default 256; at most those it holds)")
    be.add_argument("--max-length", type=_integer("max_length"), default=128,
                    help="tokens per paragraph at most (default 128)")
    be.add_argument("--batch-size", type=_integer("batch_size"), default=16,
                    help="paragraphs per forward pass (default 16)")
    be.add_argument("--device", type=_device, default=None, help="torch device (default: cuda, else mps, else cpu)")
    be.add_argument("--repeats", type=_integer(lo=1), default=3,
                    help="timed rounds; each variant's best is kept (default 3)")
    be.add_argument("--no-warmup", action="store_true", help="no warm-up round before the timed ones")
    be.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes (1x and 8x)")
    be.add_argument("--no-embedding-isotropy", action="store_true",
                    help="skip timing the embedding matrices' partition isotropy (once per model)")
    be.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    _registry_option(be)
    for option in ("--layers", "--dtype"):
        _needs(be, option, "--config", "it shapes the random-weight model of --config; a registry model has its own")
    bc = _command(bench_sub, "command", "time the whole 'aniso stats' command against a bare script",
                  "aniso bench command all-MiniLM-L6-v2 --paragraphs 256 --json", _bench_command,
                  "Time 'aniso stats MODEL --n-sequences N' on an empty cache, as a user waits for it (imports, "
                  "model, corpus, every statistic, summaries, cache entry), against a script that imports torch and "
                  "transformers, loads the same model folder and runs the same forward passes; both in fresh "
                  "processes, interleaved, best of --repeats rounds. The corpus is the run's (ANISO_CORPUS).")
    bc.add_argument("model", help="registry id of a text model read from a transformers folder, e.g. all-MiniLM-L6-v2")
    bc.add_argument("--paragraphs", type=_integer("n_sequences"), default=256,
                    help="paragraphs of the corpus (default 256)")
    bc.add_argument("--repeats", type=_integer(lo=1), default=3, help="rounds; each side's best is kept (default 3)")
    bc.add_argument("--json", action="store_true", help="print one JSON object instead of a line")
    _registry_option(bc)
    bt = _command(bench_sub, "twonn", "time the suite's TwoNN against the matrix-product bound and the peers",
                  "aniso bench twonn --n 16384 --d 768 --data massive --json", _bench_twonn)
    bt.add_argument("--n", type=_integer(lo=3), default=16_384,
                    help="points (default 16,384; at least 3, at most 131,072 on the CPU and 1,048,576 elsewhere)")
    bt.add_argument("--d", type=_integer(lo=1), default=768, help="dimensions (default 768; at least 1)")
    bt.add_argument("--data", choices=("gaussian", "subspace", "massive"), default="gaussian", metavar="KIND",
                    help="kind of points: gaussian, subspace or massive (default gaussian)")
    bt.add_argument("--seed", type=_integer("seed"), default=0, help="seed of the points (default 0)")
    bt.add_argument("--device", type=_device, default=None, help="torch device (default: cuda, else mps, else cpu)")
    bt.add_argument("--no-peers", action="store_true", help="time the suite and the bound only")
    bt.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    hub = _command(sub, "hub", "put a model folder into the local Hugging Face cache, or list what it holds",
                   "aniso hub import sentence-transformers/all-MiniLM-L6-v2 ./all-MiniLM-L6-v2", None)
    hub_sub = hub.add_subparsers(dest="hub", required=True, metavar="COMMAND")
    hi = _command(hub_sub, "import", "write a model folder into the Hugging Face cache as a hub id at a revision",
                  "aniso hub import sentence-transformers/all-MiniLM-L6-v2 ./all-MiniLM-L6-v2 --revision main",
                  _hub_import,
                  "Write a transformers model folder into the standard Hugging Face cache layout (blobs/, "
                  "snapshots/<commit>/, refs/<revision>), so that the registry's hub row and "
                  "from_pretrained(HUB_ID) with HF_HUB_OFFLINE=1 find it as they find a downloaded model. The commit "
                  "is no hub commit: the sha1 of the sorted (path, sha256) list of the files, so the same files give "
                  "the same commit; .aniso-import.json beside the snapshots records the folder they came from. "
                  "Safetensors weights only; pickle files (.bin, .pt, ...) are left out, and a folder with pickle "
                  "weights only is refused without --allow-pickle.")
    hi.add_argument("hub_id", help="hub id, as the registry row's repo (e.g. sentence-transformers/all-MiniLM-L6-v2)")
    hi.add_argument("folder", type=_path_text, help="transformers model folder (config.json, *.safetensors, tokenizer files)")
    hi.add_argument("--revision", default="main", help="branch or tag whose ref is written (default main)")
    hi.add_argument("--cache-dir", type=_written_path_text, default=None, help="hub cache (default: HF_HUB_CACHE, else HF_HOME/hub, else "
                    "~/.cache/huggingface/hub)")
    hi.add_argument("--allow-pickle", action="store_true",
                    help="import a folder whose only weights are pickle files (the hub source still loads "
                         "safetensors only)")
    _registry_option(hi)  # a hub id of a registry row: the folder is checked against the row
    hl = _command(hub_sub, "list", "what the Hugging Face cache holds for the registry's hub rows",
                  "aniso hub list --all", _hub_list,
                  "One line per registry hub row the cache holds (registry id, hub id, revision, commit, imported "
                  "from a folder or downloaded, size), then the cached models no row names. Reads the cache only.")
    hl.add_argument("--all", action="store_true", help="also list the hub rows that are not cached")
    hl.add_argument("--cache-dir", type=_written_path_text, default=None, help="hub cache (default: HF_HUB_CACHE)")
    _registry_option(hl)
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []  # pytest arguments of `aniso run ... -- ...`
    args, unknown = parser.parse_known_args(argv[: argv.index("--")] if "--" in argv else argv)
    used = _innermost(parser, args)  # errors are named by the subcommand given them, not by aniso's top-level usage
    if unknown:
        used.unrecognized(unknown)
    _check_needs(used, args)
    if extra and args.command != "run":  # only aniso run hands them on (to pytest); never dropped without a word
        used.error(_after_dashes(used, extra))
    args.pytest_args = extra
    given = sys.stdout
    output = _Output(given) if given is not None else _Output.closed()
    sys.stdout = output
    try:
        code = args.func(args)
        output.flush()
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (a claims run handles its own, see aniso run)
        print(f"aniso {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    finally:
        sys.stdout = given
        if given is None:
            output.stream.close()
    if output.failed is None or isinstance(output.failed, BrokenPipeError):
        return code  # a reader that went away (`aniso list | head`) is a normal end
    try:
        print(f"aniso {args.command}: cannot write the output: {output.failed.strerror or output.failed}",
              file=sys.stderr)
    except OSError:  # pragma: no cover - standard error is gone as well
        pass
    return max(code or 0, 1)  # the environment's fault, not bad input: 1, or the command's own worse code


def entry() -> int:
    """The ``aniso`` console script: :func:`main`, then the interpreter's exit. A Ctrl-C from the moment it runs
    ends in one line and exit code 130 (128 + SIGINT, as a shell reports a process Ctrl-C ended), not a traceback:
    also while the options are read and pydantic, torch and transformers load (their first second or two), before a
    command answers Ctrl-C itself ("aniso COMMAND: interrupted (Ctrl-C)", also 130). A Ctrl-C arriving once the
    command is done (during libraries' exit hooks, torch's among them) ends the process at once with the command's
    code instead of printing those hooks' traceback; a second Ctrl-C while the first is answered ends it at once
    with 130."""
    code = None
    try:
        code = main()
        _ends_at_ctrl_c(code)
    except KeyboardInterrupt:  # before main() returned: the command did not end; after: it did, with its code
        if code is not None:
            _ends_at_ctrl_c(code)
        else:
            _ends_at_ctrl_c(130)
            code = 130
            try:
                print("aniso: interrupted (Ctrl-C)", file=sys.stderr)
            except (OSError, ValueError):  # pragma: no cover - standard error is gone
                pass
    return code


def _ends_at_ctrl_c(code: int) -> None:
    """From now on a Ctrl-C ends the process at once with ``code``, its output flushed (:func:`entry`)."""
    import signal

    def done(*_):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # pragma: no cover - closed, gone or None
                pass
        os._exit(code)

    signal.signal(signal.SIGINT, done)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
