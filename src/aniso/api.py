"""The Python API: measure a model's layers, run the claims on it, and list the claims and models, from a notebook.

Four functions, re-exported by ``import aniso`` (lazily: importing :mod:`aniso` does not import torch)::

    import aniso
    stats = aniso.measure("all-MiniLM-L6-v2", ["The cat sat on the mat.", "Anisotropy of hidden states."])
    stats.to_frame()                     # one row per layer: avg_cos, drift_norm, svd_anisotropy, twonn, q95, ...
    aniso.check("all-MiniLM-L6-v2", claims="G.token-nlp-anisotropic").to_frame()
    aniso.claims(); aniso.models()       # the catalogue and the registry, as DataFrames

They go the same way as the command line: a model argument is resolved as ``aniso run`` resolves it (a registry id,
else a local folder or hub id whose registry entry is detected from its config, :mod:`aniso.sources.detect`); statistics
come from :class:`aniso.stats.pipeline.StatsProvider` (the claims' provider, with its disk cache) and
:func:`aniso.stats.pipeline.compute_model_stats`; :func:`check` runs ``pytest claims/`` through :func:`run_claims`,
which ``aniso run`` calls too, and reads the ``results.json`` it writes (:mod:`aniso.judge.results`). Settings not given
as arguments come from the ``ANISO_*`` variables and the run profile (:class:`aniso.common.settings.Settings`).

Errors in arguments raise ValueError with one line that names the argument (``model``, ``inputs``,
``statistics``, ``settings``, ``claims``); a model whose weights cannot be had raises
:class:`aniso.sources.ModelUnavailable` saying why.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import math
import numbers
import os
import re
import signal
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from pluggy import HookimplMarker  # (pytest's hook marker, without importing pytest)

from .common.settings import numpy_bool, type_name
from .common.signals import ENDING_SIGNALS, handling, interrupted_line  # (the signals a run's clean-up answers)

__all__ = ["measure", "check", "claims", "models", "LayerStats", "ClaimResults", "ClaimsRun", "run_claims", "run_twins",
           "DEFAULT_STATISTICS", "RUN_EXIT_CODES", "run_exit_code"]

#: What :func:`measure` keeps unless told: avg cos, drift and mean norm (first order), and the d x d statistics (SVD
#: anisotropy, TwoNN, IsoScore, sampled pairs). The other kinds of :data:`aniso.stats.pipeline.ALL_STATISTICS` (e.g.
#: ``attention-sink``, the attention on the first token) are asked for by name, or with ``"all"``.
DEFAULT_STATISTICS = ("first-order", "second-order")

#: The file beside a run's ``results.json`` that holds the registry row detected for a model the registry lacks
#: (``aniso run PATH``), from which ``aniso record`` adds the row with its new findings.
DETECTED_ENTRY = "detected-entry.yaml"
#: The comment of :data:`DETECTED_ENTRY` naming the sha256 of the registry the detected row was added to for the run.
DETECTED_BASE = "added to the registry of sha256"
#: The comment of :data:`DETECTED_ENTRY` naming the registry file the detected row was added to (``aniso record``
#: writes into it when no registry is given).
DETECTED_REGISTRY = "added to the registry file"

#: The pytest options of ``aniso run`` (before the user's, which override them): quiet progress; a short summary of
#: failures and errors only (the aniso summary groups the skips by reason); no tracebacks (the verdict table and the
#: report have each result, ``-- --tb=short`` brings them back).
_DOOR_OPTIONS = ("-q", "-rfE", "--tb=no")
#: The pytest options of ``aniso run`` after the user's (:func:`_after_users`), which a user's option does not
#: override: no warning that modules imported before pytest started cannot be rewritten (this door runs pytest in the
#: process that imported them, and a plugin such as anyio's is one of them); a later ``-W`` filter wins, so a user's
#: ``-W error`` would turn that warning about the door itself into a traceback as pytest starts.
_LAST_OPTIONS = ("-W", "ignore::pytest.PytestAssertRewriteWarning")


def _after_users(pytest_args: Sequence[str]) -> list[str]:
    """``pytest_args`` (the user's) followed by :data:`_LAST_OPTIONS`, before a ``--`` among them (after which
    pytest reads paths only)."""
    args = list(pytest_args)
    at = args.index("--") if "--" in args else len(args)
    return args[:at] + list(_LAST_OPTIONS) + args[at:]


def _plugins_off(pytest_args: Sequence[str]) -> list[str]:
    """The pytest plugins a claims run switches off: pytest-benchmark (no claim test is a benchmark, and its storage
    leaves an empty ``.benchmarks/`` folder in the working folder), unless a ``--benchmark-*`` option is given."""
    if any(str(a).startswith("--benchmark") for a in pytest_args):
        return []
    return ["-p", "no:benchmark"]

#: Exit codes of ``aniso run`` and of :attr:`ClaimResults.exit_code` (also in ``aniso run --help`` and the README).
RUN_EXIT_CODES = {0: "at least one claim measured and none failed or errored (new findings on a model with no "
                     "record and underpowered verdicts do not fail)",
                  1: "a claim did not hold against its record, or errored",
                  2: "bad usage or input (an option, a setting, the registry, a model that cannot be detected)",
                  3: "nothing measured: every selected claim test was skipped (the report says why)"}

#: Column names of :meth:`LayerStats.to_frame` that differ from :class:`aniso.stats.results.LayerSummary`'s fields: the
#: papers' "avg cos" for the mean cosine similarity.
_COLUMN = {"mean_cosine": "avg_cos", "mean_cosine_sampled": "avg_cos_sampled",
           "mean_cosine_standardised": "avg_cos_standardised"}


# -- results ------------------------------------------------------------------------------------------------------


def _same_values(a: Any, b: Any) -> bool:
    """``a == b`` for nested dicts, lists and tuples of plain values and arrays, with NaN equal to NaN."""
    import numpy as np

    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_values(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
        except TypeError:  # arrays of objects
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


#: The keys of :attr:`LayerStats.meta` that record how this run got the statistics (its wall time, whether the
#: cache held them), which ``==`` leaves out.
_WALL_TIME_META = frozenset({"seconds", "cache"})


@dataclass(frozen=True)
class LayerStats:
    """The layer-wise statistics of one model on one set of inputs (what :func:`measure` returns).

    Attributes
    ----------
    model_id : the registry id (or the id detected for a folder or hub id, or the name of an in-memory model)
    layer_names : one name per hidden state, in order ("0" is the embedding output; encoder-decoder models list
        ``enc.i`` then ``dec.i``)
    layers : one :class:`aniso.stats.results.LayerSummary` per layer (avg cos and the rest, dimensionless; norms in the
        model's hidden-state units)
    inputs : provenance of the inputs (dataset, name, label, fingerprint, number of items; no data)
    settings : the settings that change the statistics (sample sizes, seed, reservoir and SVD batch sizes, the
        widest layer with second-order statistics), with ``max_length_read`` where the model read fewer tokens per
        text than ``max_length`` (its learnt positions; the inputs' label says so too)
    meta : everything else :func:`aniso.stats.pipeline.compute_stats` recorded (origin of the weights, the device in
        ``meta["device"]``, vectors per layer, seconds, cache key and hit, and the optional statistics asked for)
    stats : the underlying :class:`aniso.stats.results.ModelStats` (accumulators; for the claims' functions)
    """

    model_id: str
    layer_names: tuple[str, ...]
    layers: tuple[Any, ...] = field(repr=False)
    inputs: dict = field(repr=False)
    settings: dict = field(repr=False)
    meta: dict = field(repr=False)
    stats: Any = field(repr=False, compare=False)

    #: Not hashable (its inputs, settings and meta are dicts): ``hash()`` says so by the class's name.
    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__!r}")

    def __eq__(self, other: object) -> bool:
        """Equal when every field but ``stats`` is, a statistic that is NaN (not kept) equal to NaN: a copy read back
        from a pickle or joblib equals the original (``float('nan') != float('nan')`` otherwise makes it differ).
        The wall time and the cache's part in ``meta`` (:data:`_WALL_TIME_META`) take none: two measurements of one
        model on the same inputs are equal however long each took, and whether or not one was read from the cache."""
        if not isinstance(other, LayerStats):
            return NotImplemented
        fields_of = lambda x: (x.model_id, x.layer_names, [asdict(s) for s in x.layers], x.inputs, x.settings,
                               {k: v for k, v in x.meta.items() if k not in _WALL_TIME_META})  # noqa: E731
        return _same_values(fields_of(self), fields_of(other))

    @classmethod
    def of(cls, stats) -> "LayerStats":
        """Wrap a :class:`aniso.stats.results.ModelStats`. Raises TypeError naming ``stats`` when it is no
        ModelStats (a LayerStats is returned as it is); ValueError naming the model and layer if a layer has fewer
        than two non-zero vectors."""
        from .stats.results import ModelStats

        if isinstance(stats, LayerStats):
            return stats
        if not isinstance(stats, ModelStats):
            raise TypeError(f"stats: {stats!r:.40} ({type_name(stats)}); give the aniso.stats.results.ModelStats of a "
                            "model (what StatsProvider.get returns)")
        from .stats.results import copies_note, max_length_note, svd_batch_note

        meta = dict(stats.meta)
        inputs, settings = dict(meta.get("corpus") or {}), dict(meta.get("settings") or {})
        if meta.get("max_length_read"):  # the model read fewer tokens per text than max_length asks: said where read
            settings["max_length_read"] = meta["max_length_read"]["read"]
            if inputs.get("label"):
                inputs["label"] += max_length_note(meta)
        if inputs.get("label"):  # SVD batches narrower than a layer: rank-limited; texts read as copies
            inputs["label"] += svd_batch_note(stats.layers) + copies_note(meta)
        return cls(stats.model_id, tuple(str(n) for n in stats.layer_names), tuple(stats.summaries()), inputs,
                   settings, meta, stats)

    def to_frame(self):
        """A pandas DataFrame, one row per layer in order: column ``layer`` (its name, text: ``"0"``, ``"12"``, or a
        named output), ``layer_index`` (its position, an int from 0, the embeddings' output where the model gives
        one: the column to select, sort or plot layers by), then every field of
        :class:`aniso.stats.results.LayerSummary`, ``mean_cosine*`` named ``avg_cos*`` (``avg_cos``, ``drift_norm``,
        ``mean_norm``, ``svd_anisotropy``, ``svd_anisotropy_batch_mean``, ``twonn``, ``isoscore``, ``q95``, ``dim``,
        ``count``, ...). Statistics not kept (first order only) are NaN."""
        import pandas as pd

        rows = [{"layer": name, "layer_index": i} | {_COLUMN.get(k, k): v for k, v in asdict(s).items()}
                for i, (name, s) in enumerate(zip(self.layer_names, self.layers))]
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:  # a notebook shows the table
        return self.to_frame()._repr_html_()

    def to_dict(self) -> dict:
        """JSON-friendly: ``model_id``, ``layer_names``, ``layers`` (one :func:`aniso.stats.results.summary_dict` per layer;
        NaN as None), ``inputs``, ``settings``, ``meta``."""
        from .judge.results import _clean
        from .stats.results import summary_dict

        return _clean({"model_id": self.model_id, "layer_names": list(self.layer_names),
                       "layers": [summary_dict(s) for s in self.layers], "inputs": self.inputs,
                       "settings": self.settings, "meta": self.meta})

    def series(self, column: str):
        """One column across layers as a float64 numpy array of shape (n_layers,), e.g. ``series("avg_cos")``, or
        (n_layers, k) for a column that holds k numbers per layer (``rogue_dims``: its top dimensions); a
        column is also found by its key in :meth:`to_dict`'s layers (``"mean_cosine"`` for ``"avg_cos"``).
        Raises ValueError naming the column if there is no such column (with the one meant, where one is close), and
        TypeError naming ``column`` when it is no str (one column a call: a list is not read as several)."""
        import difflib

        import numpy as np

        if not isinstance(column, str):
            raise TypeError(f"column: {column!r:.60} ({type_name(column)}); give one column name, a str, e.g. "
                            "'avg_cos' (to_frame() has every column)")
        fields = list(self.layers[0].__dataclass_fields__) if self.layers else []
        names = {_COLUMN.get(k, k): k for k in fields}
        key = names.get(column, column if column in fields else None)
        if key is None:
            close = difflib.get_close_matches(str(column), list(names), n=1)
            raise ValueError(f"column {column!r} is not one of {sorted(names)}"
                             + (f"; did you mean {close[0]!r}?" if close else ""))
        return np.array([getattr(s, key) for s in self.layers], dtype=np.float64)


@dataclass(frozen=True)
class ClaimResults:
    """The verdicts of one claims run (what :func:`check` returns), read from the ``results.json`` it wrote.

    Attributes
    ----------
    path : the run's ``results.json`` (``report.html`` beside it)
    document : the whole :class:`aniso.judge.results.ResultsDocument`
    exit_code : as ``aniso run`` (:data:`RUN_EXIT_CODES`): 0 measured and nothing failed, 1 a claim did not hold
        against its record or errored, 3 nothing measured (:func:`check` warns why); the object itself has no truth
        value (``assert results.exit_code == 0``, not ``assert results``)
    model_id : the model's registry id (or the id detected for a folder or hub id)
    """

    path: Path
    document: Any = field(repr=False)
    exit_code: int
    model_id: str

    #: Not hashable (its document is not): ``hash()`` says so by the class's name.
    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__!r}")

    def __bool__(self) -> bool:
        """No truth value: ``assert aniso.check(...)`` would pass a run in which a claim failed or nothing was
        measured. Raises TypeError saying to test ``exit_code``."""
        raise TypeError(f"the truth value of a {type(self).__name__} is ambiguous: test its exit_code (0: measured, "
                        "nothing failed; 1: a claim did not hold against its record or errored; 3: nothing "
                        "measured), e.g. assert results.exit_code == 0")

    def __post_init__(self):
        """``path`` given as a str (or another ``os.PathLike``) is kept as a :class:`~pathlib.Path`; TypeError naming
        ``path`` for what is no path."""
        if not isinstance(self.path, Path):
            if isinstance(self.path, (bytes, bytearray)) or not isinstance(self.path, (str, os.PathLike)) or \
                    not isinstance(os.fspath(self.path), str):
                raise TypeError(f"path: {self.path!r:.60} ({type_name(self.path)}); give the run's results.json as a "
                                "str or pathlib.Path")
            object.__setattr__(self, "path", Path(os.fspath(self.path)))

    @property
    def results(self) -> list:
        """The :class:`aniso.judge.results.ClaimResult` of every claim test, in test order: copies, so that changing
        one changes neither :meth:`to_frame` nor :meth:`report` (both read this run's results as written)."""
        return [r.model_copy(deep=True) for r in self.document.results]

    def to_frame(self):
        """A pandas DataFrame, one row per claim test: ``claim``, ``model``, ``verdict``, ``statistic`` (the deciding
        statistic), ``value``, ``threshold``, ``holds_if``, ``ci_low``/``ci_high`` (its bootstrap interval over the
        inputs, at ``level``), ``interval_note`` (what the interval cannot show, or why it is not informative),
        ``fragile``, ``p_value``, ``reason``, ``inputs``, ``seconds``. A result without an interval (skipped, or a
        claim with no single deciding statistic), or with one that is not informative (every resample gave the same
        value), has None in ``ci_low``/``ci_high``."""
        import pandas as pd

        rows = []
        for r in self.document.results:
            u = r.uncertainty
            rows.append({"claim": r.claim_id, "model": r.model_id, "verdict": r.verdict,
                         "statistic": u.statistic if u else None, "value": u.value if u else None,
                         "threshold": u.threshold if u else None, "holds_if": u.holds_if if u else None,
                         "ci_low": u.low if u and u.informative else None,
                         "ci_high": u.high if u and u.informative else None,
                         "interval_note": u.note if u else None,
                         "level": u.level if u else None, "fragile": bool(u.fragile) if u else False,
                         "p_value": r.p_value, "reason": r.reason, "inputs": r.inputs, "seconds": r.seconds})
        columns = ["claim", "model", "verdict", "statistic", "value", "threshold", "holds_if", "ci_low", "ci_high",
                   "interval_note", "level", "fragile", "p_value", "reason", "inputs", "seconds"]
        return pd.DataFrame(rows, columns=columns)

    def report(self, path: str | Path | None = None) -> Path:
        """The HTML report of this run: written to ``path`` with :func:`aniso.report.write_html_report`, or, with no
        ``path``, to ``report.html`` beside ``results.json``, written anew from this run's results (a report.html found
        there may be another run's, copied beside it); returns its path. Raises ValueError naming ``path`` when it is
        a folder, a folder on its way is a file, or its name ends in neither ``.html`` nor ``.htm``
        (:func:`_report_path`), or naming :attr:`path` when that file no longer holds this run's results (replaced or
        edited since: its digest is not this run's); OSError if it cannot be written."""
        from .judge.results import read_results
        from .report import write_html_report

        target = _report_path(path) if path is not None else self.path.with_name("report.html")
        now = read_results(self.path).digest
        if self.document.digest is not None and now != self.document.digest:  # another run's file copied over it
            raise ValueError(f"{self.path} no longer holds this run's results (its digest is {str(now)[:12]}…, this "
                             f"run wrote {self.document.digest[:12]}…): replaced or edited since; its report would be "
                             "another run's")
        return write_html_report(self.path, target)


def _report_path(path: str | Path) -> Path:
    """``path`` as the HTML file :meth:`ClaimResults.report` writes. Raises TypeError naming ``path`` when it is no
    path, ValueError naming it when it is a folder or names one (a str ending in ``/``, as ``aniso report --out``
    refuses it), or the nearest part of it that exists is a file (``one.txt`` in
    ``one.txt/x.html``), which would otherwise fail deep in the writing with a bare FileExistsError, or when its name
    ends in neither ``.html`` nor ``.htm`` (:func:`aniso.report.html_name_problem`: the page is HTML whatever the
    name)."""
    path = _path_argument("path", path, "the HTML file to write")
    target = Path(os.path.expanduser(os.fspath(path)))
    folder = os.fspath(path).endswith(("/", os.sep)) and not target.is_symlink()  # 'out/new.html/': a folder meant
    if target.is_dir() or folder:
        here = " (the working folder; pathlib.Path('') is Path('.'))" if os.fspath(target) == "." else ""
        raise ValueError(f"path: {target}{here} {'is' if target.is_dir() else 'names'} a folder; name the HTML file "
                         f"to write (e.g. {target / 'report.html'})")
    above = next((p for p in target.parents if p.exists() or p.is_symlink()), None)
    if above is not None and not above.is_dir():
        raise ValueError(f"path: {above} is {'a link to nothing' if not above.exists() else 'a file'}, not a folder "
                         f"(in {target})")
    from .report import html_name_problem

    problem = html_name_problem(target)
    if problem is not None:
        raise ValueError(f"path: {target}: {problem}")
    return target


# -- settings, registry, inputs -----------------------------------------------------------------------------------


def _settings(options: dict[str, Any], settings: dict[str, Any] | None, check: bool = True,
              arguments: Mapping[str, str] | None = None):
    """:class:`aniso.common.settings.Settings` from the arguments (``options``; None = not given), then ``settings`` (a
    dict of setting names), then the ``ANISO_*`` variables and the profile; with ``check``, its paths checked
    (:meth:`~aniso.common.settings.Settings.check_paths`). ``arguments``: the argument that gave each of ``options``
    where it is not named as the setting (e.g. ``{"n_sequences": "n_inputs"}``). Raises ValueError naming the setting,
    or the argument and the setting when both give one setting different values (:func:`_one_value`); TypeError when
    ``settings`` is no mapping."""
    from .common.settings import SettingError, Settings, _where

    given = dict(_settings_argument(settings) or {})
    unknown = sorted(set(given) - set(Settings.__dataclass_fields__))
    if unknown:
        fields = list(Settings.__dataclass_fields__)
        # a setting given by its variable or option name (ANISO_SEED, aniso-seed, --aniso-batch-size, BATCH_SIZE)
        plain = re.sub(r"^(--)?aniso[-_]", "", str(unknown[0]).lower()).replace("-", "_")
        close = [plain] if plain in fields else difflib.get_close_matches(plain, fields, n=1)
        if unknown[0] == "n_inputs":  # measure's argument, whose setting depends on the model's modality
            close = ["n_sequences (text), n_clips (speech) or n_images (vision); or measure's argument n_inputs"]
        raise ValueError(f"settings: unknown setting {unknown[0]!r}" + (f"; did you mean {close[0]}?"
                                                                       if unknown[0] == "n_inputs" else
                                                                       f"; did you mean {close[0]!r}?" if close
                                                                       else "") + " (see aniso.common.settings.SETTING_HELP)")
    for name, value in options.items():
        if name in given:
            _one_value(name, [(f"{(arguments or {}).get(name, name)}=", value), (f"settings[{name!r}]=", given[name])])
    merged = given | {k: v for k, v in options.items() if v is not None}

    def by_argument(exc: SettingError) -> SettingError:
        """``exc`` naming the argument of another name that gave the setting (``inputs``, ``n_inputs``), if one did."""
        message = str(exc)
        for name, arg in (arguments or {}).items():
            if options.get(name) is not None and name not in given and message.startswith(_where(name)):
                return SettingError(f"{arg}{message[len(_where(name)):]} (setting {name})")
        return exc

    try:
        s = Settings.from_sources(merged)
    except SettingError as exc:  # a value an argument of another name gave (n_inputs): name the argument
        raise by_argument(exc) from None
    if check:
        from .inputs.media import DATA_FORMATS

        try:
            s.check_paths(DATA_FORMATS)
        except SettingError as exc:  # a file ``inputs`` named that is no text (a photograph for a text model)
            raise by_argument(exc) from None
    return s


def _settings_argument(settings: Any) -> Mapping[str, Any] | None:
    """``settings``, the API's argument of settings by name, when it is None or a mapping. Raises TypeError naming
    ``settings`` otherwise."""
    from .common.settings import Settings

    if isinstance(settings, Settings):  # the plan a run builds from settings by name (with the environment and
        # profile), whose every field is set: taken whole it would pass each default as a setting given
        raise TypeError("settings: a Settings object (aniso.common.settings.Settings), the plan a run builds from "
                        "settings by name; give a dict of the settings to change, e.g. {'seed': 1} (see "
                        "aniso.common.settings.SETTING_HELP)")
    if settings is not None and not isinstance(settings, Mapping):
        raise TypeError(f"settings: {settings!r:.40} ({type_name(settings)}); give a dict of setting names and "
                        "values, e.g. {'n_sequences': 64} (see aniso.common.settings.SETTING_HELP)")
    keys = [k for k in settings or {} if not isinstance(k, str)]
    if keys:
        key = keys[0]
        raise TypeError(f"settings: the key {key!r:.40} ({type_name(key)}); setting names are str, e.g. "
                        "{'n_sequences': 64} (see aniso.common.settings.SETTING_HELP)")
    return settings


def _one_value(name: str, routes: Sequence[tuple[str, Any]]) -> None:
    """Refuse setting ``name`` given through several routes (``(label, value)`` pairs: an argument, ``settings=``, a
    pytest option as typed; a value of None is not given) with different values, which would otherwise let one route
    win silently. Values are compared as the setting reads them (a number typed as text is the number; paths
    absolute). Raises ValueError naming both routes and values."""
    from .common.settings import PATH_SETTINGS, parse_text

    def read(label: str, value: Any) -> Any:
        value = os.fspath(value) if isinstance(value, os.PathLike) else value
        try:
            value = parse_text(name, value, label)
        except ValueError:  # refused, naming the route, where the settings are built
            return value
        return os.path.abspath(os.path.expanduser(value)) if name in PATH_SETTINGS and isinstance(value, str) else value

    given = [(label, value) for label, value in routes if value is not None]
    for label, value in given[1:]:
        first_label, first = given[0]
        if read(label, value) != read(first_label, first):
            raise ValueError(f"{first_label}{first!r} and {label}{value!r} both given for setting {name}; give one")


def _flag(name: str, value: Any) -> bool:
    """``value`` as a bool if it is True or False: a Python bool or a numpy one (``np.False_``, an element of a
    boolean array; :func:`aniso.common.settings.numpy_bool`). Raises TypeError naming argument ``name`` and the
    value's type otherwise (a word such as ``"no"`` is true to Python, and would be taken for yes; ``1`` is no
    answer either)."""
    if isinstance(value, bool) or numpy_bool(value):
        return bool(value)
    raise TypeError(f"{name}: {value!r:.40} ({type_name(value)}); give True or False")


def _pytest_arguments(pytest_args: Any) -> tuple[str, ...]:
    """``pytest_args`` as a tuple of texts. Raises TypeError naming ``pytest_args`` when it is a text (pytest would
    read ``'-x'`` as the files ``-`` and ``x``) or holds something that is no text."""
    if isinstance(pytest_args, (str, bytes)):
        raise TypeError(f"pytest_args: {pytest_args!r} is a {type(pytest_args).__name__}; give a list of arguments "
                        f"(e.g. {str(pytest_args).split()!r})")
    try:
        args = tuple(pytest_args)
    except TypeError:
        raise TypeError(f"pytest_args: a {type(pytest_args).__name__}; give a list of arguments") from None
    bad = next((a for a in args if not isinstance(a, str)), None)
    if bad is not None:
        raise TypeError(f"pytest_args: holds {bad!r} ({type(bad).__name__}); every argument is a text")
    return args


def _path_argument(name: str, value: Any, what: str) -> Any:
    """``value``, a path argument of the API named ``name`` (``registry``, ``claims_dir``, ``inputs`` as a path,
    ``path``), when it is None, a str or an ``os.PathLike`` that is not empty, as its text with a leading ``~``
    expanded (as the path settings are: ``"~/r.json"`` quoted past the shell is the home folder's, never a folder
    named ``~``). Raises TypeError naming ``name`` for
    bytes (a bytes path is refused rather than decoded, as the settings refuse it: ``os.fsdecode`` it first) or
    another type, ValueError naming it for an empty or blank path (``Path("")`` is the working folder, which the
    caller did not name), a path holding a NUL byte, or one :func:`aniso.common.files.path_text_problem` refuses
    (control or invisible characters, blanks at its ends). ``what``: what to give instead, for the message."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{name}: {type_name(value)} ({value!r:.60}); give a str or pathlib.Path ({what}; "
                        "os.fsdecode a bytes path)")
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: {value!r:.40} ({type_name(value)}); give a str or pathlib.Path ({what})")
    text = os.fspath(value)
    if isinstance(text, bytes):  # an os.PathLike whose __fspath__ gives bytes
        raise TypeError(f"{name}: a path of bytes ({text!r:.60}); give a str or pathlib.Path ({what})")
    if not text.strip():
        raise ValueError(f"{name}: an empty path ({text!r}); give {what}")
    if "\x00" in text:  # (the system would refuse it deep in the work, as a bare "embedded null byte")
        raise ValueError(f"{name}: the path {text!r:.120} holds a NUL byte, which no file name can hold; give {what}")
    from .common.files import path_text_problem

    problem = path_text_problem(text)  # 'report.html\r', ' /abs/path', a zero-width space: another path than meant
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    return os.path.expanduser(text)


def _model_argument(name: str, value: Any, what: str) -> str:
    """``value``, argument ``name`` naming a model by text (a registry id, a model folder or a hub id; a model set),
    as a str: a str, or an ``os.PathLike`` such as ``pathlib.Path`` (a folder). Raises TypeError naming ``name``,
    the value and ``what`` to give for anything else (an in-memory model, a number, bytes), ValueError for an empty
    or blank text."""
    if isinstance(value, os.PathLike) and not isinstance(value, (bytes, bytearray)):
        value = os.fspath(value)
    if not isinstance(value, str):
        shown = " ".join(repr(value).split())  # one line: an in-memory model's repr spans many
        raise TypeError(f"{name}: {shown:.40} ({type_name(value)}); give {what}")
    if not value.strip():
        raise ValueError(f"{name}: an empty text ({value!r}); give {what}")
    return value


def _callable_argument(name: str, value: Any, what: str) -> Callable:
    """``value``, argument ``name``, when it is callable (a function such as ``print``). Raises TypeError naming
    ``name``, the value and ``what`` it is called with otherwise (``say='loud'`` would fail only when a line is said,
    after work is done, or never)."""
    if not callable(value):
        raise TypeError(f"{name}: {value!r:.40} ({type_name(value)}); give a function that takes {what}, e.g. print")
    return value


def _is_path_here(model: str) -> bool:
    """Whether ``model`` names a file or folder here, or a symbolic link here (a dangling one, or a loop of links:
    a path the user gave, whose fault is the link's, not a registry id's). A name the system cannot take as a path
    (longer than a file name may be, :data:`errno.ENAMETOOLONG`; a NUL byte) is none: it is then no path here, never
    an OSError."""
    try:
        return os.path.lexists(Path(model).expanduser())
    except (OSError, ValueError):
        return False


def _path_problem(model: str) -> str | None:
    """Why ``model`` cannot be a path at all (a name longer than the system takes, or one holding a byte that is no
    UTF-8, which a registry row cannot name), in words, or None."""
    try:
        model.encode("utf-8")
    except UnicodeEncodeError as exc:  # a file name's undecodable byte, as Python gives it (surrogateescape)
        raw = model[exc.start:exc.end].encode("utf-8", "surrogateescape")
        return (f"its name holds a byte that is no UTF-8 ({raw!r} at character {exc.start + 1}), which a registry "
                "row cannot name; rename the file or folder")
    try:
        os.stat(os.path.expanduser(model))
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return f"too long for a file or folder name here ({exc.strerror}), and longer than a hub id may be"
    except ValueError:
        return None
    return None


def _registry_file(path: str | Path | None, settings) -> Path | None:
    """The registry file as every door finds it (:func:`aniso.registry.locate.registry_path`), or None where there is
    none (folders, hub ids and in-memory models only). Raises ValueError if ``path`` is given and is not a file."""
    from .registry.locate import registry_path

    path = _path_argument("registry", path, "the registry file, or None for models.yaml here")
    return registry_path(path, settings.registry, required=False)


def _load_registry(path: Path | None, given: str | Path | None = None, settings=None):
    """The registry at ``path`` (:func:`aniso.registry.locate.open_registry`). A file that is no registry (a run's
    results.json) is refused naming where the path came from: the ``registry`` argument (``given``), else the
    ``registry`` setting of ``settings``."""
    from .registry.locate import open_registry

    named = ("registry" if given is not None else
             "setting registry (settings['registry'], ANISO_REGISTRY)" if getattr(settings, "registry", None) else None)
    return open_registry(path, named)


def _count(name: str, value: Any) -> int | None:
    """``value`` as an int (a numpy integer included), or None. Raises ValueError naming argument ``name`` unless
    ``value`` is None or an integer >= 1 (not a bool)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise ValueError(f"{name}: {value!r} ({type_name(value)}); give an integer >= 1")
    return None if value is None else int(value)


def _entry(model: str | Path, registry):
    """The registry entry for ``model``: a registry id, else a folder or hub id whose entry is detected as ``aniso
    run`` detects it. Raises ValueError naming ``model``."""
    from .sources.detect import UndetectableModel, detect_entry
    from .registry.entries import ModelEntry, blank_separated_ids, registry_here_holding

    text = str(model)
    if any(e.id == text for e in registry):
        note = _id_and_path(text, registry)
        if note is not None:
            warnings.warn(note, RuntimeWarning, stacklevel=3)
        return registry.get(text)
    try:
        problem = _path_problem(text)
        if problem is not None:  # no path (and no hub id): never the system's OSError
            raise UndetectableModel(problem)
        row = detect_entry(text)
    except UndetectableModel as exc:
        ids = [e.id for e in registry]
        same = [i for i in ids if i.casefold() == text.casefold()]
        close = same or difflib.get_close_matches(text, ids, n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        hint = blank_separated_ids(text, ids) or hint
        hint += registry_here_holding(text, registry.path)
        where = f"no registry id of {registry.path}{hint}" if registry.path else "no registry here"
        raise ValueError(f"model {_shown(text)}: {where}; as a folder or hub id: {exc}") from None
    if any(e.id == row["id"] for e in registry):
        own = _row_of_source(row, registry)
        if own is not None:  # the registry's row of this very folder or hub id
            return own
        raise ValueError(f"model {_id_taken(text, row['id'], registry)}")
    return ModelEntry.model_validate(row)


def _id_and_path(model: str, registry) -> str | None:
    """The note for a ``model`` that is a registry id and also a file or folder here which is not that row's source:
    the row is measured, not the folder (whose id would be the row's, so it is measured only under another name);
    None when ``model`` is no path here, or a link to nothing (no model to measure under another name), or is the
    row's own source."""
    if not _is_path_here(model) or not os.path.exists(Path(model).expanduser()):
        return None
    from .sources.detect import detect_entry

    try:
        row = detect_entry(model)
    except (ValueError, OSError):
        row = None
    if row is not None and _row_of_source(row, registry) is not None:
        return None
    return (f"{model} is a registry id and also a path here; measuring the registry's row, not the path (whose id "
            f"would be the row's: rename it to measure it)")


def _row_of_source(row: dict, registry):
    """The registry's row with the detected ``row``'s id when it names the same source: the same kind, the same hub
    repository, the same file or folder (a relative path taken from the registry's folder, both resolved). That is
    the row of the folder or hub id given, as `aniso record` of its first run wrote it: the id is the row's own, not
    taken from another model. None otherwise."""
    entry = next((e for e in registry if e.id == row["id"]), None)
    if entry is None:
        return None
    theirs, mine = entry.source.model_dump(), row["source"]
    if theirs.get("kind") != mine.get("kind"):
        return None
    base = registry.path.parent if registry.path else Path.cwd()
    for key, value in mine.items():
        if key == "path":
            if theirs.get("path") is None or (base / theirs["path"]).resolve() != Path(value).resolve():
                return None
        elif theirs.get(key) != value:
            return None
    return entry


def _rows_reading(row: dict, registry) -> list[str]:
    """The ids of the registry's rows whose source reads what the detected ``row`` reads, whatever their ids: the
    same kind, and the same file or folder (a relative path taken from the registry's folder, both resolved) or the
    same hub repository. A run of the folder or hub id measures it as a new model; those rows' records are checked
    only by running them."""
    mine = row["source"]
    base = registry.path.parent if registry.path else Path.cwd()
    found = []
    for entry in registry:
        theirs = entry.source.model_dump()
        if entry.id == row["id"] or theirs.get("kind") != mine.get("kind"):
            continue
        if "path" in mine and theirs.get("path") is not None \
                and (base / theirs["path"]).resolve() == Path(mine["path"]).resolve():
            found.append(entry.id)
        elif "repo" in mine and theirs.get("repo") == mine["repo"]:
            found.append(entry.id)
    return found


def _id_taken(model: str, ident: str, registry) -> str:
    """The line of a folder, file or hub id ``model`` (no registry id) whose detected id ``ident`` is the id of a row
    of ``registry``: its results would be labelled as that row's model, whose weights these need not be."""
    return (f"{_shown(model, 400)} would get the id {ident!r}, which the registry {registry.path} already uses for a model "
            f"of its own; give the folder or file another name to measure it (for the registry's model: {ident})")


def _texts(inputs: Sequence[Any]) -> tuple[str, ...]:
    """``inputs`` as a tuple of non-empty texts. Raises ValueError naming ``inputs`` and the first bad item (no
    text, empty, or holding a lone surrogate, named with its position). Whether the texts are the paths of files
    (:func:`_listed_files`) is asked once the model, and so the inputs it reads, is known."""
    if len(inputs) == 0:
        raise ValueError("inputs: an empty list; give at least one text (or a corpus file, or None for the "
                         "settings' corpus)")
    for i, t in enumerate(inputs):
        if not isinstance(t, str):
            raise TypeError(f"inputs[{i}]: a {type_name(t)}; a list of inputs must hold texts (for images or "
                             "recordings give their folder)")
        if not t.strip():
            raise ValueError(f"inputs[{i}]: an empty text")
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no character, so no UTF-8 and no token
            raise ValueError(f"inputs[{i}]: a lone surrogate {t[exc.start]!r} at position {exc.start} (near "
                             f"{t[max(exc.start - 20, 0):exc.start + 20]!r}), which is no Unicode character and cannot "
                             "be tokenized (text decoded with errors='surrogateescape', or half of a UTF-16 pair?); "
                             "give valid text") from None
    if len(inputs) > 1 and len(set(inputs)) == 1:  # as a corpus file of one paragraph repeated is refused
        raise ValueError(f"inputs: {len(inputs)} copies of one text, which are no {len(inputs)} inputs; give "
                         "distinct texts (or the one text alone)")
    return tuple(inputs)


def _listed_files(texts: tuple[str, ...], form=None, model: str = "") -> None:
    """Raise ValueError naming ``inputs`` when every text of the list is the path of an existing file: such a list
    was meant as files, and measuring the file names as texts would be silently wrong, so it is refused, not warned
    about. The advice is the model's (``form``: its :class:`~aniso.inputs.forms.InputsForm`, None for texts;
    ``model``: ``"<id> (a vision model)"``): for texts, a corpus file is given as a path, not in a list; for
    photographs or recordings, their folder."""
    if not all(len(t) < _PATH_TEXT_MAX and "\n" not in t and os.path.isfile(t) for t in texts):
        return
    names = ", ".join(repr(t) for t in texts[:3]) + (f" and {len(texts) - 3} more" if len(texts) > 3 else "")
    said = f"inputs: every text of the list is the path of a file here ({names})"
    if form is None or form.items is None:
        raise ValueError(f"{said}, which would be measured as texts, the file names themselves; give a corpus file "
                         f"as a path, not in a list (inputs={texts[0]!r}), or a folder of photographs or recordings")
    folders = {os.path.dirname(t) for t in texts}
    folder = folders.pop() if len(folders) == 1 else os.path.commonpath([os.path.abspath(f) for f in folders])
    raise ValueError(f"{said}: {model} reads {form.items} from a folder, not from a list of their paths; give "
                     f"their folder (inputs={folder or '.'!r}), holding the {form.noun} to measure")


#: Texts this long or longer are never taken for a file's path (:func:`_texts`).
_PATH_TEXT_MAX = 4096


def _corpus_of(texts: tuple[str, ...], seed: int):
    """A :class:`aniso.inputs.text.Corpus` of the given texts, in order, fingerprinted like a corpus file."""
    from .inputs.text import GIVEN_LIST, Corpus, _fingerprint, repeated

    label = f"{len(texts)} texts given to aniso.measure"
    copies = repeated(texts)
    if copies:  # copies are measured, but a reader must know they are not independent inputs
        label += f"; {copies} of the {len(texts)} repeat another"
    return Corpus("texts", label, GIVEN_LIST, _fingerprint(list(texts)), texts, len(texts), seed)


def _no_empty_path(inputs: Any) -> None:
    """Raise ValueError naming ``inputs`` when it is an empty (or blank) text: as a path it would be the working folder
    (``Path("")`` is ``.``), which the user did not name; TypeError naming it for bytes (a bytes path is refused, not
    decoded, as every path argument's: :func:`_path_argument`)."""
    if isinstance(inputs, (bytes, bytearray)):
        raise TypeError(f"inputs: {type_name(inputs)} ({inputs!r:.60}); give a str or pathlib.Path (os.fsdecode a "
                        "bytes path), a list of texts, or None for the settings' inputs")
    if isinstance(inputs, str) and not inputs.strip():
        raise ValueError(f"inputs: an empty path ({inputs!r}); give a list of texts, a corpus file, a folder of "
                         "photographs or recordings, or None for the settings' inputs")


def _inputs_option(inputs: str | Path, kind: str, model_id: str) -> dict[str, Any]:
    """The setting that points the run at ``inputs`` (a corpus file, or a folder of recordings or photographs) for
    a model reading inputs of ``kind`` (:data:`aniso.inputs.forms.INPUT_FORMS`). Raises ValueError naming
    ``inputs`` when it does not exist or does not fit, is a corpus file that cannot be read as one
    (:func:`aniso.inputs.text.corpus_paragraphs`), or is a folder holding no file of the types the media loaders read
    (:data:`aniso.inputs.media.DATA_FORMATS`)."""
    from .inputs.forms import INPUT_FORMS
    from .inputs.media import DATA_FORMATS

    form = INPUT_FORMS[kind]
    _no_empty_path(inputs)
    path = Path(os.path.expanduser(str(inputs)))
    if not path.exists():
        raise ValueError(f"inputs: {str(inputs)[:80]!r} is no file or folder (give texts as a list of strings)")
    if form.items is None:
        if path.is_dir():
            raise ValueError(f"inputs: {path} is a folder, but {model_id} is a text model: give a corpus file (one "
                             "paragraph per line) or a list of texts")
        from .inputs.text import CorpusError, corpus_paragraphs

        try:  # read as the run will: a photograph, UTF-16 or a blank file named as inputs, not as setting corpus
            corpus_paragraphs(path)
        except CorpusError as exc:
            raise ValueError(f"inputs: {exc}") from None
    elif not path.is_dir():
        raise ValueError(f"inputs: {path} is a file, but {model_id} is a {kind} model: give a folder of "
                         f"{form.items}")
    else:
        from .common.settings import data_folder_problem

        problem = data_folder_problem(str(path), DATA_FORMATS.get(form.setting))
        if problem is not None:
            raise ValueError(f"inputs: {problem}; give a folder of {form.items}")
    return {form.setting: str(path)}


def _statistics(statistics: str | Iterable[str]) -> frozenset[str]:
    from .stats.pipeline import ALL_STATISTICS

    if statistics == "all":
        return ALL_STATISTICS
    items = ([statistics] if isinstance(statistics, str) else list(statistics)
             if isinstance(statistics, Iterable) and not isinstance(statistics, (bytes, Mapping)) else None)
    if items is None or not all(isinstance(s, str) for s in items):
        raise TypeError(f"statistics: {statistics!r:.40} ({type_name(statistics)}); give a statistic's name, a "
                        f"list of names or 'all' (names: {', '.join(sorted(ALL_STATISTICS))})")
    chosen = frozenset(items)
    if "all" in chosen:  # 'all' names every statistic: not one of the parts, to list with others
        raise ValueError(f"statistics: {items!r:.80} lists 'all', which stands alone: give statistics='all', or a "
                         f"list of the parts (names: {', '.join(sorted(ALL_STATISTICS))})")
    unknown = sorted(chosen - ALL_STATISTICS)
    if unknown or not chosen:
        raise ValueError(f"statistics: {unknown[0]!r} is not one of {sorted(ALL_STATISTICS)} (or 'all')" if unknown
                         else "statistics: none asked for")
    return chosen | {"first-order"}


@contextlib.contextmanager
def _progress(show: bool):
    """Progress bars shown (``show``: even where standard error is no terminal, as in a notebook) or not."""
    from .common import progress

    with progress.shown(show):
        yield


# -- measure ------------------------------------------------------------------------------------------------------


def measure(model: Any, inputs: Any = None, *, tokenizer: Any = None, statistics: str | Iterable[str] =
            DEFAULT_STATISTICS, device: str | None = None, batch_size: int | None = None,
            max_length: int | None = None, n_inputs: int | None = None, progress: bool = True,
            settings: dict[str, Any] | None = None, registry: str | Path | None = None,
            name: str | None = None) -> LayerStats:
    """Measure the anisotropy of every layer of a model: its hidden states on ``inputs`` streamed into per-layer
    statistics (avg cos, drift norm, SVD anisotropy, TwoNN, ...; Godey et al. 2024 §3, Razzhigaev et al. 2024 §2).

    Parameters
    ----------
    model : a registry id (``aniso.models()``), a local transformers folder (with ``config.json``), a hub id (from
        the local Hugging Face cache, else the hub where reachable), or an already-loaded transformers text model
        (``AutoModel`` / ``AutoModelForCausalLM``; give ``tokenizer``). Registry ids, folders and hub ids are
        resolved as ``aniso run`` resolves them and their statistics are cached on disk (setting ``cache_dir``); an
        in-memory model is measured every time (its weights may have changed), moved to ``device`` and put in eval
        mode for the measurement (its training flag is restored); the dtype its weights are held in is recorded
        where a registry row's is, ``meta["source"]["fields"]["dtype"]`` (``"float32"``, ``"bfloat16"``; several:
        ``"bfloat16+float32"``), and named in ``meta["origin"]`` and, beyond float32, ``meta["fingerprint"]``: the
        same weights in float32 and in bfloat16 give other numbers
    inputs : a list of texts (each one sequence, truncated to ``max_length`` tokens), a corpus file (one paragraph
        per line, WikiText layout; ``n_inputs`` paragraphs sampled; a str, ``pathlib.Path`` or other
        ``os.PathLike``), a folder of photographs (vision models) or of
        recordings (speech models), or None: the settings' inputs for the model's modality (``ANISO_CORPUS``,
        ``ANISO_IMAGE_DIR``, ``ANISO_SPEECH_DIR``; the embedded fallback corpus if none). A list whose every text is
        the path of an existing file (``["c20.txt", "hello.txt"]``) is refused: it was meant as files, and would be
        measured as the texts of their names; give a corpus file as a path, not in a list (for a vision or speech
        model, the folder of the photographs or recordings)
    tokenizer : the tokenizer of an in-memory model (for a registry id, folder or hub id: refused, they bring their
        own)
    statistics : names from :data:`aniso.stats.pipeline.ALL_STATISTICS`, or ``"all"``; default :data:`DEFAULT_STATISTICS`
    device : torch device (``cpu``, ``cuda``, ``mps``; default: setting ``device``, ``auto``)
    batch_size, max_length : sequences per forward pass and tokens per sequence (default: the settings')
    n_inputs : paragraphs, photographs or recordings sampled from a file or folder (default: the run profile's; a
        RuntimeWarning says so when the file or folder gave fewer than asked). A list of texts is measured whole,
        never sampled: ``n_inputs`` (or setting ``n_sequences``) with a list is refused; give fewer texts for fewer
    progress : show a progress bar over the batches (True or False)
    settings : other settings by name (:data:`aniso.common.settings.SETTING_HELP`), e.g. ``{"seed": 1}``. A setting
        that an argument gives too (``device`` and ``settings={"device": ...}``, ``inputs`` and ``"corpus"``,
        ``n_inputs`` and ``"n_sequences"``) must have the same value in both; a setting of inputs the model does not
        read (``corpus`` or ``n_sequences`` for a vision model, which reads ``image_dir`` and ``n_images``) is refused
    registry : registry file (default: ``models.yaml`` here, else the one of this source tree); for an in-memory
        model it is read only with ``name``, but one given that is not a file is refused all the same
        (:class:`~aniso.registry.entries.RegistryError`, naming ``registry``)
    name : the id an in-memory model is reported under (default: its ``name_or_path``, else its class); only for an
        in-memory model. The id of a registry row is refused (ValueError naming ``name``): results under it would
        read as that row's model, whose weights these need not be

    Returns
    -------
    :class:`LayerStats`; ``.to_frame()`` is a DataFrame of shape (n_layers, n_statistics + 1).

    Raises
    ------
    ValueError, one line naming the argument: an unknown model id or undetectable folder/hub id (``model``), an
    empty list, a list whose every text is an existing file's path, a path that does not exist, inputs of the wrong modality (``inputs``), an unknown statistic
    (``statistics``; also ``'all'`` listed with others) or setting (``settings``), ``tokenizer`` or ``name`` with a model that is not in memory, an
    in-memory model's tokenizer holding fewer tokens than 90% of its input embedding's rows (``tokenizer``, as a
    folder's is refused) or whose pad token has an id past that embedding, met in a padded batch (``tokenizer``,
    naming the token), an in-memory model whose config builds a weight larger than it holds (``model``, naming
    the config field: ``max_position_embeddings`` 512 over 16 position rows), a
    ``name`` that is a registry id, a setting of inputs the model does not read (``settings``),
    ``n_inputs`` (or setting ``n_sequences``) with a list of texts, a setting given by an argument and by
    ``settings`` with different values; TypeError naming ``progress`` when it is not True or False, ``name`` when it
    is no text, ``model`` when it is no text, path or loaded transformers model, ``tokenizer`` when an in-memory
    model's is callable but no transformers tokenizer (a function wrapping one), ``inputs`` when it is no list of
    texts, path or None (or a list holding something other than texts), or ``statistics`` when it is no name or
    list of names;
    :class:`aniso.sources.ModelUnavailable` when the weights cannot be
    had (:class:`aniso.sources.InputsMissing` when inputs are missing); RuntimeError naming the model and device on
    running out of memory.
    """
    chosen = _statistics(statistics)
    n_inputs, batch_size, max_length = (_count(arg, value) for arg, value in (
        ("n_inputs", n_inputs), ("batch_size", batch_size), ("max_length", max_length)))
    progress = _flag("progress", progress)
    if name is not None and not (isinstance(name, str) and name.strip()):
        raise TypeError(f"name: {name!r:.40} ({type_name(name)}); give the id to report an in-memory model under, "
                        "a non-empty str, or None")
    _no_empty_path(inputs)
    inputs = _inputs_path(inputs)
    registry = _path_argument("registry", registry, "the registry file, or None for models.yaml here")
    texts = _texts(inputs) if isinstance(inputs, (list, tuple)) else None  # (files listed: once the model is known)
    if inputs is not None and texts is None and not isinstance(inputs, (str, Path)):
        raise TypeError(f"inputs: a {type_name(inputs)}; give a list of texts, a corpus file, a folder of "
                         "photographs or recordings, or None")
    _no_empty_path(inputs)
    options = {"device": device, "batch_size": batch_size, "max_length": max_length}
    if isinstance(model, (str, Path)):
        for arg, value in (("tokenizer", tokenizer), ("name", name)):
            if value is not None:
                raise ValueError(f"{arg}: only for an in-memory model; {str(model)!r} is a registry id, folder or hub "
                                 f"id, which brings its own {'tokenizer' if arg == 'tokenizer' else 'id'} (leave {arg} "
                                 "out)")
        base = _settings(options, settings)
        _one_value("registry", [("registry=", registry), ("settings['registry']=", (settings or {}).get("registry"))])
        reg = _load_registry(_registry_file(registry, base), registry, base)
        entry = _entry(model, reg)
        from .extract.modalities import INPUT_FORMS, inputs_kind, modality_of
        from .sources import ModelRefused, SourceContext, declared_files_problem

        declared = declared_files_problem(entry, SourceContext(registry_dir=reg.path.parent if reg.path else None,
                                                               models_dir=base.models_dir))
        if declared:  # the row's fields are not its model's: before its fields choose the inputs
            raise ModelRefused(declared)
        row = modality_of(entry)
        if row is None:
            raise ValueError(f"model {entry.id!r}: modality {entry.modality!r} has no hidden states measured over "
                             "inputs (an untrained block: see `aniso block-sweep`)")
        kind = inputs_kind(entry)
        form = INPUT_FORMS[kind]
        _read_inputs_settings(settings, {}, entry)
        if texts is not None:
            _listed_files(texts, form, f"{entry.id} (a {entry.modality} model)")
        if texts is not None and form.items is not None:
            raise ValueError(f"inputs: a list of texts, but {entry.id} is a {entry.modality} model: give a folder of "
                             f"{form.noun} (or None for setting {form.setting})")
        extra = _inputs_settings(inputs, texts, n_inputs, settings, kind, entry.id)
        run_settings = (_settings(options | extra, settings, arguments={form.setting: "inputs", form.size: "n_inputs"})
                        if extra else base)
        if texts is not None and run_settings.shards > 1:  # shards name statistics `aniso extract` made of a corpus
            raise ValueError(f"setting shards {run_settings.shards} (settings['shards'] or ANISO_SHARDS): statistics "
                             "extracted over several processes are of the corpus setting, never of texts given as "
                             "inputs, which are measured here in one process; leave shards out")
        with _too_short(run_settings.max_length, form.items is None), _named_inputs(entry.id, form.setting, inputs):
            measured = _measure_entry(entry, reg, run_settings, chosen, {kind: _corpus_of(texts, run_settings.seed)}
                                      if texts is not None else {}, progress)
        return _nan_said(_fewer_than_asked(measured, n_inputs, settings, form.size,
                                           None if texts is not None else run_settings), chosen, row.second_order)
    _settings_argument(settings)  # a dict or None, before its "registry" is read
    if registry is not None or (settings or {}).get("registry") is not None:
        # unread for an in-memory model (but for name=), yet a registry named that is not there is a mistake said
        _one_value("registry", [("registry=", registry), ("settings['registry']=", (settings or {}).get("registry"))])
        _registry_file(registry, _settings({}, settings, check=False))
    if name is not None:
        _no_registry_name(name, registry, settings)
    if texts is not None:
        _listed_files(texts)
    with _too_short(max_length if max_length is not None else _base_max_length(settings), True):
        measured = _measure_loaded(model, tokenizer, inputs, texts, chosen, options, n_inputs, settings, progress,
                                   name)
    return _nan_said(_fewer_than_asked(measured, n_inputs, settings, "n_sequences",
                                       None if texts is not None else _settings(options, settings)), chosen)


def _nan_said(measured: LayerStats, statistics: frozenset[str], second_order: bool = True) -> LayerStats:
    """``measured``, after a RuntimeWarning for each reason a column of its layers is NaN
    (:func:`aniso.stats.results.nan_columns`: TwoNN of a layer with fewer than 128 vectors, second-order statistics
    of a layer wider than setting ``second_order_max_dim`` or left out of ``statistics``, the names asked for, or of
    a model whose modality keeps none, ``second_order`` False: CNN maps), as ``aniso stats`` prints them; the lines
    are kept in ``meta["nan_columns"]``. Second-order statistics left out by the caller's own ``statistics`` are kept
    there and not warned: a warning of what was asked for would, under warnings-as-errors, lose the measurement."""
    from .common.settings import Settings
    from .stats.results import SECOND_ORDER_LEFT_OUT, nan_columns

    limit = measured.settings.get("second_order_max_dim") or Settings().second_order_max_dim
    lines = nan_columns(measured.layers, limit, statistics, second_order)
    if lines:
        measured.meta["nan_columns"] = lines
        chosen = bool(statistics) and "second-order" not in statistics
        for line in lines:
            if chosen and line.endswith(SECOND_ORDER_LEFT_OUT):  # the caller's own choice: kept in meta, not warned
                continue  # (under warnings-as-errors the warning would throw the computed statistics away)
            warnings.warn(f"{measured.model_id}: {line}", RuntimeWarning, stacklevel=3)
    return measured


def _inputs_path(inputs: Any) -> Any:
    """``inputs`` as :func:`measure` and :func:`check` take it: an ``os.PathLike`` (``pathlib.Path``, or any object
    with ``__fspath__``, as ``open()`` takes) as a ``pathlib.Path``; anything else as it is. Raises TypeError naming
    ``inputs`` for a path of bytes, ValueError for an empty one (:func:`_path_argument`)."""
    if isinstance(inputs, os.PathLike):
        return Path(_path_argument("inputs", inputs, "a corpus file or a folder of photographs or recordings"))
    return inputs


@contextlib.contextmanager
def _named_inputs(model_id: str, setting: str, inputs: Any):
    """Name argument ``inputs`` instead of setting ``setting`` (``image_dir``) in the InputsMissing of a folder given
    as ``inputs`` in which no file can be used (the user set no such setting)."""
    from .sources import InputsMissing

    try:
        yield
    except InputsMissing as exc:
        said, prefix = str(exc), f"{model_id}: {setting}: "
        if not isinstance(inputs, (str, Path)) or not said.startswith(prefix):
            raise
        raise InputsMissing(f"{model_id}: inputs ({inputs}): {said[len(prefix):]}") from None


def _fewer_than_asked(measured: LayerStats, n_inputs: Any, settings: Any, size: str,
                      resolved: Any = None) -> LayerStats:
    """``measured``, after a warning when fewer inputs were measured than asked (argument ``n_inputs``, else the
    setting ``size`` of the inputs in ``settings``, such as ``n_images``; neither: the run's resolved settings
    ``resolved``, whose ``size`` is the run profile's or its ``ANISO_*`` variable's, unless it means every input
    (:data:`aniso.inputs.text.ALL`); ``resolved`` None, as for a list of texts, measured whole: not asked) because the file or
    folder holds fewer: the statistics then rest on fewer vectors than the caller meant (a CNN pools each photograph
    to one vector, so 2 photographs give each layer one cosine). Says how many vectors each layer has where that is
    fewer than a claim is decided on (:data:`aniso.registry.catalog.MIN_VECTORS`)."""
    import warnings

    from .registry.catalog import MIN_VECTORS

    from .inputs.text import ALL

    asked, label = ((n_inputs, "n_inputs") if n_inputs is not None else
                    ((settings if isinstance(settings, Mapping) else {}).get(size), f"settings[{size!r}]"))
    if asked is None and resolved is not None and getattr(resolved, size, None) is not None:
        variable = f"ANISO_{size.upper()}"
        asked = getattr(resolved, size)
        label = (f"setting {size} ({variable})" if os.environ.get(variable) else
                 f"{size} (the default of run profile {resolved.profile})")
        if asked >= ALL:  # the profile's "every input": a file of fewer is no surprise
            return measured
    got = measured.inputs.get("n_items", measured.inputs.get("n_sequences"))
    if not isinstance(asked, numbers.Integral) or isinstance(asked, bool) or got is None or got >= asked:
        return measured
    where = measured.inputs.get("origin") or measured.inputs.get("label") or "the inputs"
    vectors = min((s.count for s in measured.layers), default=0)
    need = MIN_VECTORS["first-order"]
    few = (f"; each layer's statistics rest on {vectors} vector(s), fewer than the {need} a claim is decided on"
           if vectors < need else "")
    warnings.warn(f"{label}: {asked} asked, but {where} gave only {got} of them; measured on {got}{few}",
                  RuntimeWarning, stacklevel=3)
    return measured


def _no_registry_name(name: str, registry: Any, settings: Any) -> None:
    """Refuse ``name`` for an in-memory model when it is the id of a row of the registry (``all-MiniLM-L6-v2``): its
    results would be labelled as that registry model's, whose weights these need not be. Raises ValueError naming
    ``name``."""
    from .common.files import path_text_problem

    if not isinstance(name, str):
        raise TypeError(f"name: {name!r:.40} ({type_name(name)}); give a str, the name the results are reported under")
    problem = path_text_problem(name)  # ' all-MiniLM-L6-v2 ', 'all-MiniLM-L6-v2\n': a registry id in disguise
    if problem is not None or not name:
        raise ValueError(f"name: {problem or 'empty'}; the results are reported under it")
    s = _settings({}, settings, check=False)
    path = _registry_file(registry, s)
    if path is None:
        return
    reg = _load_registry(path, registry, s)
    same = next((e.id for e in reg if e.id.casefold() == name.casefold()), None)
    if same is not None:
        said = f"{name!r} is the id of a row" if same == name else f"{name!r} is the id {same!r} of a row, in another case,"
        raise ValueError(f"name: {said} of the registry {reg.path}, whose results are of its own "
                         f"weights; an in-memory model is reported under a name of its own: give another (e.g. "
                         f"{name + '-in-memory'!r}), or measure the registry's model as aniso.measure({same!r})")


def _base_max_length(settings) -> int | None:
    """Setting ``max_length`` as ``settings`` (a dict, or None) and the environment give it; None if unreadable."""
    try:
        return _settings({}, settings, check=False).max_length
    except (TypeError, ValueError):
        return None


@contextlib.contextmanager
def _too_short(max_length: int | None, text: bool):
    """Name ``max_length`` in the error of a measurement left with too few distinct vectors (TwoNN needs 3), which a
    small ``max_length`` causes: each text is cut to that many tokens, its special ones ([CLS], [SEP]) included, so
    every text may give the same few vectors."""
    try:
        yield
    except ValueError as exc:
        if not text or max_length is None or "distinct points" not in str(exc) or max_length > 16:
            raise
        raise ValueError(f"max_length: {max_length} tokens per text, special ones ([CLS], [SEP]) included, leave too "
                         f"few distinct vectors to measure ({exc}); give a larger max_length") from None


def _inputs_settings(inputs: Any, texts: tuple[str, ...] | None, n_inputs: int | None, settings: Any, kind: str,
                     model_id: str) -> dict[str, Any]:
    """The settings that :func:`measure`'s ``inputs`` and ``n_inputs`` stand for, for a model reading inputs of
    ``kind``: a file or folder is the kind's setting (``corpus``, ``image_dir``, ...; :func:`_inputs_option`) and
    ``n_inputs`` its size (``n_sequences``, ``n_images``, ...); a list of texts is measured whole, its length the
    size. Raises ValueError naming ``n_inputs``, or the setting of ``settings``, that a list of texts would leave
    unused (a list is never sampled: give fewer texts for fewer)."""
    from .inputs.forms import INPUT_FORMS

    form = INPUT_FORMS[kind]
    given = settings if isinstance(settings, Mapping) else {}
    if texts is None:
        extra = _inputs_option(inputs, kind, model_id) if isinstance(inputs, (str, Path)) else {}
        return extra | ({form.size: n_inputs} if n_inputs is not None else {})
    whole = f"a list of texts is measured whole ({_plural(len(texts), 'text')}"
    if n_inputs is not None:
        raise ValueError(f"n_inputs: {n_inputs} applies to a corpus file or a folder of inputs, which is sampled; "
                         f"{whole}: give inputs[:{n_inputs}] for fewer)")
    if form.size in given:
        raise ValueError(f"settings: {form.size!r} ({given[form.size]!r}) applies to a corpus file, which is sampled; "
                         f"{whole}: give fewer texts for fewer)")
    if form.setting in given:
        raise ValueError(f"settings: {form.setting!r} ({given[form.setting]!r}) and inputs (a list of "
                         f"{_plural(len(texts), 'text')}) both name the inputs; give one")
    return {form.size: len(texts)}


def _read_inputs_settings(settings: Mapping[str, Any] | None, texts: Mapping[str, Any], entry) -> None:
    """Raise ValueError (one line) naming a setting of inputs given in ``settings`` or as a pytest option among
    ``texts`` (as typed) that ``entry``'s model does not read (``n_sequences`` for a vision model): it would be
    silently ignored (:func:`aniso.extract.modalities.unread_inputs_setting`). The ``ANISO_*`` variables are not
    judged: a shell sets them for every model."""
    from .extract.modalities import unread_inputs_setting

    given = {name: f"settings[{name!r}]" for name in (settings if isinstance(settings, Mapping) else {})}
    given |= {name: f"the pytest option --aniso-{name.replace('_', '-')} {value}" for name, value in texts.items()
              if name not in given}
    problem = unread_inputs_setting(given, [entry])
    if problem is not None:
        raise ValueError(problem)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _texts_corpus(texts: tuple[str, ...], path: Path) -> Path:
    """Write ``texts`` to the corpus file ``path``, one per line (line breaks inside a text become spaces), for a
    claims run (:func:`check`), which reads its texts from a corpus file; returns ``path``. Raises ValueError naming
    ``inputs`` when the texts are fewer than a corpus needs (2 distinct: the claims' bootstrap resamples them), or a
    text is no paragraph of a corpus file (a ``= heading =`` line, or formatting characters only), which the run
    would leave out."""
    from .inputs.text import wikitext_paragraphs

    lines = [" ".join(t.split()) for t in texts]
    for i, line in enumerate(lines):
        if not wikitext_paragraphs(line):
            raise ValueError(f"inputs[{i}]: {line[:40]!r} is no paragraph of a corpus file (a '= heading =' line, or "
                             "formatting characters only), which the claims run would leave out; remove it")
    distinct = len(set(lines))
    if distinct < 2:
        said = "1 text" if len(lines) == 1 else f"{len(lines)} copies of one text"
        raise ValueError(f"inputs: {said}; at least 2 distinct are needed (a claim's bootstrap resamples the texts)")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _measure_entry(entry, registry, settings, statistics, given: dict, progress: bool) -> LayerStats:
    from .registry.entries import Registry

    one = Registry([entry], registry.path, registry.recorded_inputs, registry.recorded_profile,
                   profile_stated=registry.profile_stated)
    provider = _provider_class()(settings, one, statistics=statistics, given=given)
    with _progress(progress):
        return LayerStats.of(provider.get(entry))


def _measure_loaded(model, tokenizer, inputs, texts, statistics, options, n_inputs, settings, progress,
                    name) -> LayerStats:
    """:func:`measure` on an already-loaded transformers text model (no registry entry, no disk cache)."""
    import torch

    from .sources.detect import UndetectableModel, entry_fields
    from .extract.modalities import MODALITIES
    from .sources import LoadedModel

    from transformers import PreTrainedModel

    config = getattr(model, "config", None)
    if type(model).__module__.split(".")[0] == "sentence_transformers":
        raise TypeError(f"model: a {type_name(model)} (sentence-transformers), whose forward pass is not a transformers "
                        "model's; give its transformers model (model[0].auto_model) and its tokenizer "
                        "(model.tokenizer), or the folder it was loaded from")
    wrapped = getattr(model, "_orig_mod", None)
    if isinstance(wrapped, PreTrainedModel) and not isinstance(model, PreTrainedModel):
        raise TypeError(f"model: a {type_name(model)} (torch.compile's wrapper of a {type_name(wrapped)}), whose "
                        "forward pass is compiled code, not the model's; give the model it wraps (model._orig_mod), "
                        "which holds the same weights")
    if not isinstance(model, PreTrainedModel) or config is None or not hasattr(config, "to_dict"):
        raise TypeError(f"model: a {type_name(model)}; give a registry id, a model folder, a hub id or a loaded "
                         "transformers model")
    meta = next((n for n, p in model.named_parameters() if p.is_meta), None)
    if meta is not None:  # built under torch.device("meta") or from_pretrained(..., device_map="meta"): no numbers
        raise ValueError(f"model: its weights are on the meta device (not loaded: {meta} holds no values); load them "
                         "(from_pretrained, or to_empty and load_state_dict) before measuring")
    try:
        fields = entry_fields(config.to_dict())
    except UndetectableModel as exc:
        said, entry = str(exc), "; add a models.yaml entry with "
        if entry in said:  # no registry row can name an in-memory model: the way is a folder and a row for it
            head, fields_needed = said.split(entry, 1)
            said = (f"{head}; an in-memory model has no models.yaml row: save it with save_pretrained, add a row for "
                    f"that folder with {fields_needed}, and measure the row's id")
        raise ValueError(f"model: {said}") from None
    short = _weights_short_of_config(model)
    if short is not None:
        raise ValueError(f"model: {short}; set the field to the weights' size (or give the model's own config)")
    if fields["modality"] != "text":
        raise ValueError(f"model: an in-memory {fields['modality']} model ({config.model_type}); only in-memory text "
                         "models are measured here: save it with save_pretrained and pass the folder")
    if isinstance(tokenizer, (str, os.PathLike)):
        raise ValueError(f"tokenizer: {os.fspath(tokenizer)!r:.120} ({type_name(tokenizer)}) is a path; give the "
                         f"loaded tokenizer: tokenizer=AutoTokenizer.from_pretrained({os.fspath(tokenizer)!r:.120})")
    if tokenizer is None or not callable(tokenizer):
        raise ValueError(f"tokenizer: an in-memory text model needs its tokenizer (tokenizer=...), got "
                         f"{type_name(tokenizer)}")
    ident = name or str(getattr(config, "name_or_path", "") or "") or type(model).__name__
    _read_inputs_settings(settings, {}, _InMemory(ident, **fields))
    extra = _inputs_settings(inputs, texts, n_inputs, settings, "text", ident)
    run_settings = _settings(options | extra, settings, arguments={"corpus": "inputs", "n_sequences": "n_inputs"})
    if texts is not None:
        corpus = _corpus_of(texts, run_settings.seed)
    else:
        from .extract.modalities import INPUTS
        from .sources import HubStatus

        corpus = INPUTS["text"](run_settings, HubStatus())
    from transformers import PreTrainedTokenizerBase

    if not isinstance(tokenizer, PreTrainedTokenizerBase):  # the extraction pads and truncates through its settings
        raise TypeError(f"tokenizer: a {type_name(tokenizer)}; give the model's transformers tokenizer (a "
                        "PreTrainedTokenizerBase, e.g. AutoTokenizer.from_pretrained of the model's folder)")
    from .sources.hub import MIN_VOCABULARY_COVER, vocabulary_cover_problem

    short = vocabulary_cover_problem(model, tokenizer)
    if short is not None:  # as a model folder's tokenizer is refused (aniso.sources.hub.tokenizer_problem)
        raise ValueError(f"tokenizer: a {type_name(tokenizer)} that {short.replace('config.json', 'the config')} "
                         f"(a tokenizer must cover at least {MIN_VOCABULARY_COVER:.0%} of the embedding's rows); "
                         "give the model's own tokenizer")
    subject = _InMemory(ident, **fields)
    dtype = _weights_dtype(model)  # what the weights are held in: the same weights in bfloat16 give other numbers
    loaded = LoadedModel(subject, model, tokenizer, f"in-memory {type(model).__name__} ({ident}, {dtype} weights)")
    was_training = model.training
    model.eval()
    from .stats.pipeline import SOURCE_META, PadTokenRefused, compute_model_stats

    try:
        with _progress(progress), torch.inference_mode():
            stats = compute_model_stats(loaded, MODALITIES["text"], corpus, run_settings,
                                        f"in-memory:{ident}" + ("" if dtype == "float32" else f":{dtype}"), statistics)
    except PadTokenRefused as exc:  # the tokenizer given is at fault, as its other refusals name it
        raise ValueError(f"tokenizer: {exc}") from None
    except RuntimeError as exc:  # torch's dtype mismatch inside a model whose parts are in several dtypes: one line
        mixed = _mixed_float_dtypes(model, exc)
        if mixed is None:
            raise
        raise ValueError(mixed) from None
    finally:
        model.train(was_training)
    stats.meta["cache"] = {"key": None, "hit": False}
    # where a registry row's source fields (its dtype among them) are recorded (aniso.stats.pipeline.source_record)
    stats.meta[SOURCE_META] = {"fields": {"kind": "in-memory", "model_class": type(model).__name__, "dtype": dtype},
                               "registry_dir": None}
    return LayerStats.of(stats)


def _weights_short_of_config(model) -> str | None:
    """Where an in-memory model's config builds a weight larger than the model holds (``max_position_embeddings``
    512 over a table of 16 position rows), one phrase naming the config field, its value and both shapes
    (:func:`aniso.sources.hub.shape_fields`, as a model folder's config that disagrees with its weights is named);
    else None. The model is built again from its config on the meta device (no tensor made); a config that cannot be
    built so is not judged here. A config that builds a smaller weight than the model holds (``vocab_size`` 500 over
    30,522 rows) is left alone: the weights decide, and no position or id is read past them."""
    import copy

    import torch

    from .sources.hub import shape_fields

    try:
        with torch.device("meta"):
            built = type(model)(copy.deepcopy(model.config))
    except Exception:  # noqa: BLE001 - a config transformers cannot build again: the forward pass says what is wrong
        return None
    shapes = {name: tuple(p.shape) for name, p in built.named_parameters()}
    short = [(name, tuple(p.shape), shapes[name]) for name, p in model.named_parameters()
             if name in shapes and len(shapes[name]) == p.ndim and tuple(p.shape) != shapes[name]
             and any(b > w for w, b in zip(p.shape, shapes[name]))]
    if not short:
        return None
    return shape_fields(model, short).replace("config.json", "the config")


def _mixed_float_dtypes(model, exc: Exception) -> str | None:
    """The one-line refusal of ``model`` when its forward pass failed (``exc``) on a dtype mismatch and its parameters
    hold several floating dtypes (embeddings in bfloat16, an encoder in float32): each dtype with its first
    parameter, and the cast that makes the model run. None where the fault is another (a model in several dtypes
    whose own code casts between them, as one keeping its norms in float32, runs and is measured)."""
    import re

    first: dict[str, str] = {}
    for name, p in model.named_parameters():
        if p.is_floating_point():
            first.setdefault(str(p.dtype).removeprefix("torch."), name)
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(first) < 2 or not re.search(r"dtype|scalar type|type .* should be the same", said):
        return None
    held = ", ".join(f"{dtype} (first: {name})" for dtype, name in first.items())
    casts = " or ".join(f"model.to(torch.{dtype})" for dtype in first)
    return (f"model: its parameters hold {len(first)} floating dtypes, {held}, and its forward pass fails on the "
            f"mixture ({said[:200]}); cast it to one dtype ({casts}) before measuring")


def _weights_dtype(model) -> str:
    """The dtype ``model``'s weights are held in, as a registry row's ``source.dtype`` names it (``float32``,
    ``bfloat16``, ``qint8``, ...); weights in several dtypes are named by each, the dtype of the most elements first
    and joined by ``+`` (``bfloat16+float32``, ``float32+qint8``). Every weight counts: the parameters, and the
    weights a quantised module keeps outside them (``torch.ao.quantization.quantize_dynamic``'s Linear holds its
    qint8 weight and its bias in ``_packed_params``, which only ``model.state_dict()`` lists); a quantised module's
    scale and zero point are no weights and are not counted."""
    import torch

    sizes: dict[str, int] = {}

    def count(t) -> None:
        name = str(t.dtype).removeprefix("torch.")
        sizes[name] = sizes.get(name, 0) + t.numel()

    for p in model.parameters():
        count(p)
    held = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    held |= {n for n, _ in model.named_buffers(remove_duplicate=False)}
    for key, value in model.state_dict(keep_vars=True).items():
        if key in held:
            continue
        for t in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(t, torch.Tensor) and (t.is_quantized or isinstance(t, torch.nn.Parameter)):
                count(t)
    return "+".join(sorted(sizes, key=lambda n: (-sizes[n], n))) or "no parameters"


@dataclass(frozen=True)
class _InMemory:
    """What the statistics code reads of a registry entry, for a model given in memory."""

    id: str
    modality: str
    granularity: str
    architecture: str
    role: str
    family: str
    measured_on: str | None = None
    tags: tuple[str, ...] = ()


@functools.cache
def _provider_class():
    from .stats.pipeline import StatsProvider

    @dataclass
    class Provider(StatsProvider):
        """A :class:`~aniso.stats.pipeline.StatsProvider` whose inputs of some kinds are given (a list of texts) rather
        than loaded from the settings."""

        given: dict = field(default_factory=dict)

        def inputs(self, name: str):
            return self.given[name] if name in self.given else super().inputs(name)

    return Provider


# -- check --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimsRun:
    """What :func:`run_claims` did: ``exit_code`` (:data:`RUN_EXIT_CODES`), ``model_id``, ``results_path`` (the
    ``results.json`` written, None if the run wrote none), ``results`` (claim tests recorded) and ``measured`` (of
    them, not skipped), ``detected`` (the registry row detected for a folder or hub id, else None), and
    ``stopped`` (one line saying why the run stopped early, e.g. interrupted while writing its report; else None)."""

    exit_code: int
    model_id: str
    results_path: Path | None
    results: int
    measured: int
    detected: dict | None = None
    stopped: str | None = None
    refused: tuple[str, ...] = ()
    interrupted: bool = False


class _Tally:
    """A pytest plugin that counts what a claims run measured (claim results that were not skipped), where it wrote
    its results and why it stopped early, from the hook the aniso plugin calls when the run finishes."""

    def __init__(self) -> None:
        self.measured = self.results = 0
        self.report: Path | None = None
        self.stopped: str | None = None
        self.refused: tuple[str, ...] = ()
        self.collect_errors: list[str] = []  # "file: the error's last line" of each claims module pytest could not import
        self.collected = 0
        self.claim_tests = 0  # of the collected tests, those marked with a claim
        self.interrupted = False  # a KeyboardInterrupt (Ctrl-C) ended the run: pytest catches it and returns
        self.signal: int | None = None  # a signal that ends the process, answered as Ctrl-C (_signal_as_interrupt)

    # before pytest's terminal reporter, whose own report of the interrupt can fail (formatting a frame without a
    # line number, as one inside an import has): the interrupt is known even then (:func:`_pytest_main`)
    @HookimplMarker("pytest")(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo) -> None:
        import pytest

        # pytest's own Session.Interrupted (a KeyboardInterrupt: errors during collection, a stop asked for) is none
        self.interrupted = not isinstance(excinfo.value, pytest.Session.Interrupted)

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            text = str(report.longrepr).strip().splitlines() or ["(no message)"]
            last = next((line.lstrip("E ").strip() for line in reversed(text) if line.strip()), text[-1])
            self.collect_errors.append(f"{report.nodeid or report.fspath}: {last}")

    def pytest_collection_finish(self, session) -> None:
        self.collected = len(session.items)
        self.claim_tests = sum(item.get_closest_marker("claim") is not None for item in session.items)

    def pytest_aniso_run_finished(self, run) -> None:
        from .judge.verdicts import SKIPPED

        self.results = len(run.results)
        self.measured = sum(r.verdict != SKIPPED for r in run.results)
        self.report = Path(run.report_path) if run.report_path is not None else None
        self.stopped = run.stopped
        # a model whose files cannot be loaded faithfully: one line each (aniso.sources.ModelRefused)
        self.refused = tuple(dict.fromkeys(r.reason for r in run.results if r.skip_kind == "refused"))


def _pytest_main(args: list[str], plugins: list, tally: _Tally) -> int:
    """``pytest.main(args, plugins=plugins)`` as an int. A Ctrl-C that pytest caught but then failed to report (an
    error raised while its terminal reporter formats the interrupted frame) is pytest's exit code of an interrupt,
    not that error: ``tally`` knew of the interrupt first."""
    import pytest

    try:
        return int(pytest.main(args, plugins=plugins))
    except Exception:
        if not tally.interrupted:
            raise
        return int(pytest.ExitCode.INTERRUPTED)


def run_exit_code(pytest_code: int, measured: int) -> int:
    """The exit code of ``aniso run`` (:data:`RUN_EXIT_CODES`) from pytest's exit code and the number of claim
    results measured (not skipped)."""
    if pytest_code in (1, 3):  # tests failed; internal error
        return 1
    if pytest_code in (2, 4):  # interrupted; usage error
        return 2
    return 0 if measured else 3  # 0 with something measured; 5 (no tests collected) or all skipped: 3


#: The options of pytest's cache plugin (``_pytest.cacheprovider``), which claims runs turn off
#: (``-p no:cacheprovider``): after ``aniso run M --`` each is refused naming the plugin, not as a misspelling.
_CACHE_PLUGIN_OPTIONS = ("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--cache-show",
                         "--cache-clear", "--lfnf", "--last-failed-no-failures")


def _setting_options(pytest_args: Sequence[str]) -> dict[str, Any]:
    """The ``--aniso-<setting>`` options among ``pytest_args``, by setting name, as typed (texts; flags True), read
    with the plugin's own option table (:func:`aniso.common.settings.add_setting_options`); the rest is left to pytest.
    :meth:`~aniso.common.settings.Settings.from_sources` parses them (``texts``). Raises ValueError naming an option
    that lacks its value, is misspelt or is given twice (``--aniso-n-sequences 16 --aniso-n-sequences 1``: the last
    would otherwise win silently)."""
    import argparse

    from .common.settings import add_setting_options, flag_value_problem, option_form_problem, quoted_option

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # one line naming the option, instead of a usage dump and SystemExit
            raise ValueError(f"the pytest arguments after `--`: {message}")

    parser = _Parser(add_help=False, allow_abbrev=False)
    add_setting_options(parser.add_argument, by_name=True)  # an option given twice: one line naming it
    switch = flag_value_problem(pytest_args)
    if switch is not None:
        raise ValueError(f"the pytest arguments after `--`: {switch}")
    known, rest = parser.parse_known_args(list(pytest_args))
    for arg in rest:  # a misspelt setting option: one line naming it, rather than pytest's usage dump
        option = arg.split("=", 1)[0]
        if option in _CACHE_PLUGIN_OPTIONS:
            raise ValueError(f"the pytest arguments after `--`: {option} is an option of pytest's cache plugin, which "
                             "claims runs turn off (-p no:cacheprovider): a claims run reruns no earlier failures and "
                             "keeps no pytest cache (the statistics are cached under setting cache_dir; "
                             "--aniso-no-cache recomputes them); leave it out")
        quoted = quoted_option(arg, parser._option_string_actions)
        if quoted is not None:
            raise ValueError(f"{quoted} (after --)")
        if option in parser._option_string_actions:  # a known option left over: a second `--` came before it
            raise ValueError(f"{option} follows a second `--` among the pytest arguments, which makes it a file for "
                             "pytest to collect: give the options without it (aniso run MODEL -- OPTIONS takes one "
                             "`--`, and run_claims' pytest_args none)")
        form = option_form_problem(arg)  # --ANISO-N-SEQUENCES=8, —aniso-n-sequences
        if form is not None:
            raise ValueError(f"{form} (after --)")
        if option.startswith("--aniso-"):
            raise ValueError(f"unknown option {option} after --" + _did_you_mean(option, parser._option_string_actions))
    return {k: v for k, v in vars(known).items() if v is not None}


def _one_plan(model: str, claims: str | None, registry: str | Path | None, settings: Mapping[str, Any] | None,
              texts: Mapping[str, Any], door: str) -> None:
    """Refuse what a claims run on ``model`` (through ``door``, e.g. ``aniso run MODEL``) would otherwise ignore or let
    win silently: setting ``models`` given at all, in ``settings`` or as the pytest option ``--aniso-models`` among the
    pytest arguments (``texts``, as typed), since the model argument chooses the models; and any setting given
    through two routes (the ``claims`` and ``registry`` arguments, ``settings``, a pytest option) with different
    values (:func:`_one_value`). Raises ValueError (one line) naming them."""
    given = dict(settings or {})
    if "models" in texts:
        raise ValueError(f"the pytest option --aniso-models {texts['models']!r}: {door} chooses the model ({model}); "
                         "leave --aniso-models out")
    if "models" in given:
        raise ValueError(f"settings: 'models' ({given['models']!r}): {door} chooses the model ({model}); leave it out")
    arguments = {"claims": ("--claims ", claims), "registry": ("--registry ", registry)}
    for name in sorted(set(given) | set(texts) | set(arguments)):
        label, value = arguments.get(name, ("", None))
        _one_value(name, [(label, value), (f"settings[{name!r}]=", given.get(name)),
                          (f"the pytest option --aniso-{name.replace('_', '-')} ", texts.get(name))])


def _did_you_mean(word: str, choices) -> str:
    """``"; did you mean X?"`` with the closest of ``choices`` to ``word`` (:func:`difflib.get_close_matches`), or
    ``""`` when none is close."""
    import difflib

    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


class _Plan:
    """A pytest plugin handing the run's validated settings and registry to the aniso plugin whole
    (:func:`aniso.pytest_plugin.AnisoHooks.pytest_aniso_plan`)."""

    def __init__(self, settings, registry) -> None:
        self.settings, self.registry = settings, registry

    def pytest_aniso_plan(self, config):
        return self.settings, self.registry

    @staticmethod
    def _one_line(exc: Exception, pluginmanager=None) -> str:
        """pytest's usage error in one line naming what was given, with the closest pytest option to a misspelt
        one."""
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        said = next((line.split("error: ", 1)[1] for line in lines if "error: " in line), lines[-1] if lines else "")
        known = {}
        if pluginmanager is not None:
            config = pluginmanager.get_plugin("pytestconfig")
            known = getattr(getattr(getattr(config, "_parser", None), "optparser", None), "_option_string_actions",
                            {})
        unknown = [w for w in said.split(": ", 1)[-1].split() if w.startswith("-")]
        return (f"the pytest arguments after `--`: {said}"
                + (_did_you_mean(unknown[0].split("=", 1)[0], known) if unknown and known else ""))


def _usage_wrapper():
    """A pytest plugin whose ``pytest_cmdline_parse`` wrapper turns pytest's usage dump (an option it does not know,
    a value it cannot take) into a ValueError of one line naming what was given, raised out of ``pytest.main``."""
    import pytest

    class _OneLineUsage:
        #: A usage error the aniso plugin raised while pytest collected (a claim test marked with an id the
        #: catalogue lacks): its one line, for the caller to raise as a ValueError once pytest.main returns.
        collection: str | None = None

        @pytest.hookimpl(wrapper=True)
        def pytest_cmdline_parse(self, pluginmanager, args):
            try:
                return (yield)
            except pytest.UsageError as exc:  # out of pytest.main as a ValueError: run_claims' one line
                raise ValueError(_Plan._one_line(exc, pluginmanager)) from None

        @pytest.hookimpl(wrapper=True)
        def pytest_collection(self, session):
            try:
                return (yield)
            except pytest.UsageError as exc:  # kept, not printed by pytest; nothing collected, nothing run
                self.collection = str(exc)
                session.items = []
                return None

        def raise_collection(self) -> None:
            """Raise the usage error met while pytest collected (:attr:`collection`) as a ValueError, if any."""
            if self.collection is not None:
                raise ValueError(self.collection)

    return _OneLineUsage()


def _write_registry(raw: dict, path: Path, what: str) -> Path:
    """Write the registry ``raw`` (the parsed YAML of a registry file) to ``path`` and validate it; returns ``path``.
    Raises ValueError (one line, beginning with ``what``) when it does not validate."""
    import yaml

    from .registry.entries import RegistryError, load_registry

    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    try:
        load_registry(path)
    except RegistryError as exc:
        raise ValueError(f"{what} does not validate: {exc}") from None
    return path


#: What a model argument names, for the message that refuses another type.
_MODEL_WORDS = "a registry id, a model folder (a str or pathlib.Path) or a hub id"


def _shown(text: str, width: int = 80) -> str:
    """``text`` as a message names it, quoted: whole, or its first ``width`` characters and its length."""
    return repr(text) if len(text) <= width else f"{text[:width]!r}… ({len(text)} characters)"


def run_claims(model: str | Path, claims: str | None = None, *, registry: str | Path | None = None,
               claims_dir: str | Path | None = None, pytest_args: Sequence[str] = (),
               say: Callable[[str], None] = lambda line: None, settings: dict[str, Any] | None = None,
               _claims_dir_option: str = "claims_dir") -> ClaimsRun:
    """Run the claim tests (``pytest claims/``, in this process) on one model, as ``aniso run MODEL --claims
    CLAIMS`` does: a registry id runs as it is; a local folder or hub id that the registry lacks gets an entry
    detected from its files (:func:`aniso.sources.detect.detect_entry`) in a temporary copy of the registry, removed
    afterwards (also when the process is stopped by SIGTERM). A signal that ends the process (SIGTERM, SIGHUP...)
    while pytest runs stops the run as Ctrl-C does (the results of the tests that ran are written, the statistics
    measured stay cached), ``say`` receives the one line saying what is kept, and the signal then ends the process as
    it would have (:func:`_signal_as_interrupt`); a report folder the run created stays only if it wrote in it. A
    second Ctrl-C while the run answers the first is dropped (:func:`_ctrl_c_once`): the run still ends as the first
    asked. ``claims``: comma-separated ids or prefixes (None: every
    claim; :func:`aniso.registry.selection.parse_claims`); ``registry``: the registry file (None: as every door finds
    it, :mod:`aniso.registry.locate`); ``claims_dir``: the claim tests (default ``claims/`` beside the registry);
    ``pytest_args``: more pytest arguments (e.g. ``--aniso-n-sequences 64``); ``settings``: settings by name, typed
    (the Python API's); ``say``: receives the line that says what was detected.

    The run's settings are built once, here (:class:`aniso.common.settings.Settings`: ``settings``, then the
    ``--aniso-*`` options among ``pytest_args``, then the ``ANISO_*`` variables) and handed to the pytest plugin whole
    with the registry (:meth:`aniso.pytest_plugin.AnisoHooks.pytest_aniso_plan`); no environment variable is written.
    Everything a run reads or writes is checked before pytest starts, so that bad input is one line rather than a test
    failure: the settings, their paths, the corpus, the report folder (writable), the claims filter, the claims
    folder (it must hold claim tests), the registry and the model.

    Returns a :class:`ClaimsRun`; its exit code is 2, with the reasons in ``refused``, when a model's files are
    there but cannot be loaded faithfully (:class:`aniso.sources.ModelRefused`). Raises ValueError (one line) for a
    bad setting, corpus, claims filter or registry, a setting given twice with different values (``claims`` and
    ``--aniso-claims``, ``settings`` and a pytest option, a pytest option repeated) or setting ``models`` given at all
    (``model`` chooses it), a missing or empty claims folder, a report folder that cannot be
    written, a model that is neither a registry id nor detectable (a name too long for a path here included), or a
    detected id the registry already uses; TypeError naming the argument for a ``model`` that is no str or
    pathlib.Path, a ``say`` that is no function, ``settings`` that are no dict, or ``pytest_args`` that are no list of
    texts, before anything runs. Through this function (not ``aniso run``) a refusal of ``pytest_args`` names
    ``pytest_args`` and the ``model`` argument, not the command line's ``--`` and ``aniso run MODEL``.
    """
    try:
        return _run_claims(model, claims, registry=registry, claims_dir=claims_dir, pytest_args=pytest_args, say=say,
                           settings=settings, _claims_dir_option=_claims_dir_option)
    except ValueError as exc:
        if _claims_dir_option != "claims_dir":  # aniso run: the command line's words
            raise
        raise ValueError(_api_words(str(exc))) from None


#: The command line's words in the refusals of a claims run, and the API's for them (:func:`run_claims`).
_API_WORDS = (("the pytest arguments after `--`: ", "pytest_args: "),
              ("--claims '", "claims='"), ("--registry '", "registry='"),  # the arguments, not the options
              (" after `--`", " in pytest_args"),
              ("aniso run MODEL chooses the model", "run_claims' model argument chooses the model"),
              ("; aniso run runs claims", "; run_claims runs claims"),
              ("; aniso run collects every claim test", "; run_claims collects every claim test"),
              ("select claims with --claims (claim ids or prefixes, e.g. --claims G.token-nlp-anisotropic;",
               "select claims with claims= (claim ids or prefixes, e.g. claims='G.token-nlp-anisotropic';"))


def _api_words(line: str) -> str:
    """``line``, a refusal worded for ``aniso run``, in the words of :func:`run_claims` (:data:`_API_WORDS`)."""
    for cli, api in _API_WORDS:
        line = line.replace(cli, api)
    return line


def _run_claims(model, claims, *, registry, claims_dir, pytest_args, say, settings,
                _claims_dir_option: str) -> ClaimsRun:
    """:func:`run_claims`, its refusals worded for ``aniso run``."""
    import shutil
    import tempfile
    from dataclasses import replace

    import pytest

    from . import pytest_plugin
    from .common.settings import _check_writable_folder, _where, remove_empty_folders
    from .registry.locate import open_registry
    from .sources.detect import detect_entry

    model = _model_argument("model", model, _MODEL_WORDS)
    say = _callable_argument("say", say, "one line (a str)")
    _settings_argument(settings)
    registry = _path_argument("registry", registry, "the registry file, or None for models.yaml here")
    claims_dir = _path_argument("claims_dir", claims_dir, "the folder of the claim tests, or None for claims/ beside the registry")
    pytest_args, texts, plan, reg, wanted, claims_dir = _claims_run_options(
        model, claims, registry, claims_dir, pytest_args, settings, "aniso run MODEL", _claims_dir_option)
    reg_path = Path(plan.registry)
    made = _check_writable_folder(plan.report_dir, _where("report_dir"))  # before hours of work, not after
    tmp_dir = row = None
    tally = _Tally()
    with _ctrl_c_once(), _removed_on_sigterm() as remove:
        remove.append(_IfEmpty(Path(plan.report_dir), made))  # the report folder this made, while nothing is in it
        try:
            if any(e.id == model for e in reg):
                model_id = model
                note = _id_and_path(model, reg)  # `aniso run gpt2` beside a folder ./gpt2: the registry id is taken
                if note is not None:
                    say(note.replace("measuring the registry's row", "running the registry's row"))
                from .sources import SourceContext, declared_files_problem, unavailable_problem

                declared = declared_files_problem(reg.get(model), SourceContext(
                    registry_dir=reg.path.parent if reg.path else None, models_dir=plan.models_dir))
                if declared:  # before the claims: a row no claim applies to would otherwise run nothing, exit 0
                    raise ValueError(declared)
                gone = unavailable_problem(reg.get(model), SourceContext(
                    registry_dir=reg.path.parent if reg.path else None, models_dir=plan.models_dir))
                if gone:  # as `aniso stats` says it: every claim on it would be skipped, the model-free ones measured
                    raise ValueError(gone)
            else:
                problem = _path_problem(model)
                if problem is not None:  # no path (and no hub id): never the system's OSError
                    raise ValueError(f"{_shown(model)}: registry {reg.path} names no model with this id; as a "
                                     f"folder or hub id: {problem}")
                try:
                    row = detect_entry(model)  # UndetectableModel is a ValueError
                except ValueError as exc:
                    close = reg.closest_id(model)
                    if close is not None and close.casefold() == model.casefold():
                        raise ValueError(f"{model}: no registry id, but {close!r} is (ids are case-sensitive); did "
                                         f"you mean {close!r}? As a folder or hub id: {exc}") from None
                    raise ValueError(f"{_not_in_registry(model, reg, str(exc))}{_registry_row_named(model, reg)}")\
                        from None
                model_id = row["id"]
                if _is_path_here(model) and _in_hub_cache(model):
                    say(f"{model} is a folder here and also a hub id in the hub cache; running the folder (for the "
                        f"hub's model, run it from another folder)")
                own = _row_of_source(row, reg)
                if own is not None:  # a row names this very folder or hub id (aniso record of its first run wrote it)
                    say(f"{model} is the source of the registry's row {model_id!r}; running the row (aniso run "
                        f"{model_id})")
                    row = None
                elif any(e.id == model_id for e in reg):
                    raise ValueError(_id_taken(model, model_id, reg))
                else:
                    from .registry.entries import DETECTED_RUN_PREFIX, load_yaml

                    raw = load_yaml(reg_path)
                    raw["models"].append({**row, "detected": True})
                    tmp_dir = Path(tempfile.mkdtemp(prefix=DETECTED_RUN_PREFIX))
                    remove.append(tmp_dir)
                    tmp = _write_registry(raw, tmp_dir / "models.yaml", "the detected entry")
                    reg, plan = open_registry(tmp), replace(plan, registry=str(tmp))
                    readers = _rows_reading(row, reg)
                    say(f"{model} is not in the registry; detected "
                        + ", ".join(f"{k}: {row[k]}" for k in ("modality", "granularity", "architecture", "role"))
                        + (f"; the row{'s' if len(readers) > 1 else ''} {', '.join(readers)} read"
                           f"{'' if len(readers) > 1 else 's'} this {'hub id' if 'repo' in row['source'] else 'source'}"
                           f": run {'them' if len(readers) > 1 else 'it'} by id to check "
                           f"{'their' if len(readers) > 1 else 'its'} records (aniso run {readers[0]})"
                           if readers else ""))
            _read_inputs_settings(settings, texts, reg.get(model_id))  # e.g. n_sequences for a vision model
            plan = replace(plan, models=model_id, claims=str(wanted) if not wanted.everything else "")
            args = [str(claims_dir), "-p", "no:cacheprovider", *_plugins_off(pytest_args), *_DOOR_OPTIONS]
            usage = _usage_wrapper()
            with _signal_as_interrupt(tally):  # SIGTERM while it measures: stopped as by Ctrl-C, then said
                code = _pytest_main(args + _after_users(pytest_args),
                                    [pytest_plugin, _Plan(plan, reg), usage, tally], tally)
            usage.raise_collection()
            results = tally.report.with_name("results.json") if tally.report is not None else None
            if row is not None and results is not None and results.is_file():  # for `aniso record` of its findings
                import yaml

                import json

                from .judge.results import file_digest, sealed_lines

                results.with_name(DETECTED_ENTRY).write_text(sealed_lines(  # the registry it was added to, by digest
                    f"# {DETECTED_BASE}: {file_digest(reg_path)}\n# {DETECTED_REGISTRY}: {json.dumps(str(reg_path))}\n"
                    + yaml.safe_dump([row], sort_keys=False, allow_unicode=True)), encoding="utf-8")
            exit_code = 2 if tally.refused or tally.collect_errors else run_exit_code(code, tally.measured)
            stopped = tally.stopped or _why_nothing_ran(tally, pytest_args, model_id) or (
                interrupted_line(plan, results) if code == pytest.ExitCode.INTERRUPTED else None)
            if tally.interrupted and not (stopped or "").startswith("interrupted"):
                stopped = interrupted_line(plan, results)
            if tally.signal is not None:
                stopped = interrupted_line(plan, results, tally.signal)
            done = ClaimsRun(exit_code, model_id, results, tally.results, tally.measured, row, stopped,
                             tally.refused, tally.interrupted)
        finally:
            if tmp_dir is not None:
                shutil.rmtree(tmp_dir, ignore_errors=True)
            remove_empty_folders(plan.report_dir, made)
    if tally.signal is not None:  # what is kept, in one line; then the signal ends the process as it would have
        say(done.stopped)
        _end_by(tally.signal)
    return done


def _claims_run_options(model: str, claims: str | None, registry: str | Path | None, claims_dir: str | Path | None,
                        pytest_args, settings: Mapping[str, Any] | None, door: str, claims_dir_option: str | None):
    """The checks of a claims run that do not depend on its model (``model`` only names it in messages, ``door`` the
    command, e.g. ``aniso run MODEL``): the pytest arguments, the settings given through several routes
    (:func:`_one_plan`), the claims filter, the settings and registry, the claims folder. Returns ``(pytest_args,
    texts, plan, registry, wanted, claims_dir)``; raises ValueError (one line) naming what is wrong. ``aniso run
    --changed-since REF`` calls it once before its rows, so that a bad option is said once, not once a row."""
    from .registry.locate import claims_folder, settings_and_registry
    from .registry.selection import parse_claims

    pytest_args = _pytest_arguments(pytest_args)
    texts = _setting_options(pytest_args)
    _runs_tests(pytest_args)
    _check_written_paths(pytest_args)  # before hours of work: pytest writes them at its end
    _one_plan(model, claims, registry, settings, texts, door)
    options = dict(settings or {})
    if claims == "":  # (None is every claim: an empty text names none; blanks are refused by parse_claims)
        raise ValueError(f"claims: {claims!r} names no claim (it would run every claim); give claim ids or prefixes, "
                         "or leave claims out (None) for every claim")
    if claims is not None:
        options["claims"] = claims
    plan, reg = settings_and_registry(options, registry=registry, texts=texts)
    wanted = parse_claims(plan.claims)
    # ValueError naming the argument (the command line's --claims-dir): no folder, no claim test
    claims_dir = claims_folder(claims_dir, Path(plan.registry), option=claims_dir_option)
    return pytest_args, texts, plan, reg, wanted, claims_dir


def _in_hub_cache(model: str) -> bool:
    """Whether ``model`` reads as a hub id (``ORG/NAME``) that the hub cache holds."""
    import re

    from .sources.hubcache import repo_dir

    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", model):
        return False
    try:
        return repo_dir(model).is_dir()
    except (OSError, ValueError):
        return False


def _not_in_registry(model: str, reg, why: str) -> str:
    """The line of ``aniso run MODEL`` for a ``model`` that is no registry id and could not be read as a hub id
    (``why``, :func:`aniso.sources.detect.detect_entry`'s one line): the registry first (it names no such id; it holds
    none, or the closest id), then the hub, so that an id missing from the registry is not blamed on the network. A
    path that exists is a model folder or file: ``why`` alone."""
    from .sources.hubcache import hub_id_problem

    from .registry.entries import blank_separated_ids, registry_here_holding

    if _is_path_here(model):
        return why
    if hub_id_problem(model) is not None:
        return why + blank_separated_ids(model, [e.id for e in reg]) + registry_here_holding(model, reg.path)
    close = reg.closest_id(model)
    holds = ("it holds no models" if len(reg) == 0 else f"did you mean {close!r}?" if close is not None
             else f"aniso list models lists its {len(reg)}")
    said = why[len(model) + 2:] if why.startswith(f"{model}: ") else why
    return (f"{model}: registry {reg.path} names no model with this id ({holds}){registry_here_holding(model, reg.path)}"
            f"; as a hub id, {said}")


def _registry_row_named(model: str, reg) -> str:
    """``; the registry row 'ID' has this name: aniso run ID`` when the last part of ``model`` (a hub id such as
    ``sentence-transformers/all-MiniLM-L6-v2``, or an id in another case) names a registry row, else ``""``."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    same = reg.closest_id(name) if name else None
    if same is None or same.casefold() != name.casefold():
        return ""
    return f"; the registry row {same!r} has this name: aniso run {same}"


#: pytest options after ``--`` that select or deselect tests: a claims run that measured nothing names them.
_SELECTING = ("-k", "-m", "--deselect", "--ignore", "--ignore-glob")


def _why_nothing_ran(tally: "_Tally", pytest_args: Sequence[str], model_id: str) -> str | None:
    """The one line of a claims run whose tests pytest could not collect (a claims module that does not import:
    its file and error, not "interrupted"), or whose own ``-k`` / ``-m`` filter, ``--deselect`` or ``--ignore`` after
    ``--`` (:data:`_SELECTING`) selected none of them, or
    only tests that mark no claim (the offline pipeline check): the filter named, not the model; None otherwise."""
    if tally.collect_errors:
        more = f" (and {len(tally.collect_errors) - 1} more)" if len(tally.collect_errors) > 1 else ""
        return f"cannot collect the claim tests: {tally.collect_errors[0]}{more}; nothing measured"
    filters = [f"{a} {b!r}" for a, b in zip(pytest_args, list(pytest_args)[1:]) if a in _SELECTING]
    filters += [f"{a.split('=', 1)[0]} {a.split('=', 1)[1]!r}" for a in pytest_args
                if "=" in a and a.split("=", 1)[0] in _SELECTING]
    if filters and tally.claim_tests == 0:  # none at all, or only tests that mark no claim (the pipeline check)
        other = (f" (it left {tally.collected} test(s) that measure no claim)" if tally.collected else "")
        return (f"the pytest filter {' '.join(filters)} after -- selected none of the claim tests of "
                f"{model_id}{other}; nothing measured")
    return None


#: pytest options after ``--`` that make pytest describe tests instead of running them: ``aniso run`` refuses them.
_DESCRIBE_ONLY = ("--co", "--collect-only", "--collectonly", "--version", "-V", "-h", "--help", "--fixtures",
                  "--funcs", "--fixtures-per-test", "--markers", "--setup-plan", "--setup-only")


def _runs_tests(pytest_args: Sequence[str]) -> None:
    """Raise ValueError (one line) when ``pytest_args`` hold an option that makes pytest list or describe tests
    instead of running them (:data:`_DESCRIBE_ONLY`): a claims run would then measure nothing and say so as if no
    claim applied."""
    for before, arg in zip([None, *pytest_args], pytest_args):
        if arg.split("=", 1)[0] in _DESCRIBE_ONLY:
            raise ValueError(f"the pytest arguments after `--`: {arg} makes pytest list, describe or print without "
                             f"running a test; aniso run runs claims (for that, run pytest claims/ {arg})")
        value = before is not None and (before in _SHORT_WITH_VALUE or (before.startswith("--") and "=" not in before))
        if not value and not arg.startswith("-") and (arg.split("::", 1)[0].endswith(".py") or "::" in arg):
            raise ValueError(f"the pytest arguments after `--`: {arg} is a test path; aniso run collects every claim "
                             "test of the claims folder, so a path selects nothing: select claims with --claims "
                             "(claim ids or prefixes, e.g. --claims G.token-nlp-anisotropic; aniso list claims)")


#: pytest's short options that take a value (the next argument): a test path after one of them is its value.
_SHORT_WITH_VALUE = ("-k", "-m", "-p", "-c", "-o", "-n", "-W", "-r")


#: pytest options (of this pytest and its installed plugins) that write a file or folder, with how the path is written:
#: ``"file, made"`` a file whose missing folders pytest creates (``--junitxml``, ``--log-file``), ``"file"`` a file
#: opened in a folder that must exist (``--debug``, pytest-benchmark's ``--benchmark-json``), ``"folder"`` a folder
#: created (after removing what is there) in a folder that must exist (``--basetemp``). ``-o``/``--override-ini``
#: ``KEY=VALUE`` write the ini keys of :data:`_WRITTEN_BY_INI`.
_WRITTEN_BY_OPTIONS = {"--junitxml": "file, made", "--junit-xml": "file, made", "--log-file": "file, made",
                       "--debug": "file", "--benchmark-json": "file", "--basetemp": "folder"}
#: The ini keys (``-o KEY=VALUE``) that name a path pytest writes: the log file, and the cache folder (made with its
#: missing folders).
_WRITTEN_BY_INI = {"log_file": "file, made", "cache_dir": "folder, made"}


def _check_written_paths(pytest_args: Sequence[str]) -> None:
    """Raise ValueError (one line naming the option and the path) when a pytest option among ``pytest_args`` names a
    file or folder pytest will write (:data:`_WRITTEN_BY_OPTIONS`, :data:`_WRITTEN_BY_INI`) in a place that cannot be
    written: checked before the run starts, since pytest would otherwise fail after the claims were measured (the
    JUnit XML file is written at the end), with a traceback and no verdicts shown."""
    import argparse

    from .common.files import unwritable_path

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for option in _WRITTEN_BY_OPTIONS:
        optional = {"nargs": "?", "const": "pytestdebug.log"} if option == "--debug" else {}  # as pytest defines it
        parser.add_argument(option, dest=option, action="append", **optional)
    parser.add_argument("-o", "--override-ini", dest="ini", action="append")
    try:
        known, _ = parser.parse_known_args(list(pytest_args))
    except (argparse.ArgumentError, SystemExit):  # an option without its value: pytest names it
        return
    given = vars(known)
    named = [(option, value, how) for option, how in _WRITTEN_BY_OPTIONS.items() for value in given[option] or ()]
    for item in given["ini"] or ():
        key, _, value = item.partition("=")
        if key.strip() in _WRITTEN_BY_INI and value:
            named.append((f"-o {key.strip()}=", value, _WRITTEN_BY_INI[key.strip()]))
    for option, value, how in named:
        problem = unwritable_path(value, how)
        if problem is not None:
            shown = f"{option}{value}" if option.endswith("=") else f"{option} {value}"
            raise ValueError(f"the pytest option {shown} after `--`: {problem}; give a path pytest can write (it "
                             "would fail only once the claims are measured)")


@contextlib.contextmanager
def _signal_as_interrupt(tally: _Tally):
    """Inside the block (pytest running claim tests in this process), the first signal that ends the process
    (:data:`ENDING_SIGNALS`: SIGTERM from ``kill`` or a scheduler, SIGHUP...; one that is ignored stays ignored)
    raises KeyboardInterrupt where it arrives, as Ctrl-C does: pytest stops, the results of the tests that ran are
    written, the statistics measured stay cached. The signal is noted in ``tally.signal``, for the caller to say what
    is kept and then end the process by that signal (:func:`_end_by`). A second signal goes on as the handler set
    before says. Only the main thread can set handlers: elsewhere the block runs as it is."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}

    def on_signal(signum, frame):
        if tally.signal is None:
            tally.signal = signum
            raise KeyboardInterrupt(f"ended by {signal.Signals(signum).name}")
        before = previous[signum]
        signal.signal(signum, before if before is not None else signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    with handling(on_signal, [signum for signum, before in previous.items() if before is not signal.SIG_IGN]):
        yield


@contextlib.contextmanager
def _ctrl_c_once():
    """Inside the block (a claims run, from its checks to its clean-up), the first Ctrl-C (SIGINT) goes to the
    handler set before (Python's: KeyboardInterrupt, which pytest answers by writing the results of the tests that
    ran); a Ctrl-C after it is dropped, so that the run ends as the first asked: its results written, its empty
    folders removed, its line on what is cached and what was written said. The second says so once on standard
    error, with how to quit at once (Ctrl-\\, SIGQUIT). Only the main thread can set
    handlers: elsewhere the block runs as it is."""
    import sys
    import threading

    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(before):
        yield
        return
    seen = []

    def on_ctrl_c(signum, frame):
        seen.append(signum)
        if len(seen) == 1:
            before(signum, frame)
        elif len(seen) == 2:  # once: a user pressing again is told why nothing more happens, and how to quit now
            sys.stderr.write("aniso run: still stopping after the first Ctrl-C (keeping what ran); Ctrl-\\ quits at "
                             "once\n")

    with handling(on_ctrl_c, [signal.SIGINT]):
        yield


def _end_by(signum: int) -> None:
    """Send the signal ``signum`` to this process again, once a claims run that it stopped has said what is kept
    (:func:`_signal_as_interrupt`): the handler now set decides (by default the process ends by the signal, as it
    would have without the run's handling; a caller's own handler runs and the run returns)."""
    os.kill(os.getpid(), signum)


class _IfEmpty(NamedTuple):
    """A folder :func:`_removed_on_sigterm` removes only while it is empty, with the folders above it up to ``made``
    (the outermost one the run created; nothing where None): :func:`aniso.common.settings.remove_empty_folders`."""

    path: Path
    made: str | None


@contextlib.contextmanager
def _removed_on_sigterm():
    """A list of folders that are removed if a signal that ends the process (SIGTERM, SIGHUP, SIGUSR1, SIGXCPU...:
    :data:`ENDING_SIGNALS`) stops the process
    inside the block (the usual ``finally`` removes them otherwise); the signal then ends the process as it would have (killed by
    the signal, or as the handler set before says). A signal that is ignored (``nohup`` ignores SIGHUP) stays
    ignored. Only the main thread can set a signal handler: elsewhere the block runs as it is."""
    import shutil
    import threading

    folders: list[Path] = []
    if threading.current_thread() is not threading.main_thread():
        yield folders
        return
    previous = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}

    def on_signal(signum, frame):
        from .common.settings import remove_empty_folders

        for folder in folders:
            if isinstance(folder, _IfEmpty):
                remove_empty_folders(folder.path, folder.made)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        before = previous[signum]
        if callable(before):  # someone else's handler: theirs decides what the signal does next
            signal.signal(signum, before)
            before(signum, frame)
            return
        # the default: end the process by the signal itself, wherever it came (pytest would take an exception
        # raised inside a test for that test's failure and go on)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    with handling(on_signal, [signum for signum, before in previous.items() if before is not signal.SIG_IGN]):
        yield folders


#: The sizes of a twin run (``aniso run ID --twin``), each given unless the pytest arguments give it (theirs decides):
#: enough inputs for every statistic and for the batch-wise TwoNN of the training claims, seconds per row.
TWIN_SIZES = {"n_sequences": 16, "max_length": 32, "n_clips": 4, "n_images": 8, "n_bootstrap": 20,
              "svd_batch_size": 64, "reservoir_size": 256}


@contextlib.contextmanager
def _offline_hub_cache(cache: Path):
    """``HF_HUB_OFFLINE=1`` and ``cache`` as the Hugging Face hub cache, in the environment and in huggingface_hub's
    constants (read at import), restored afterwards."""
    from huggingface_hub import constants

    saved_env = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_HUB_CACHE")}
    saved = (constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE)
    os.environ.update({"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)})
    constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE = str(cache), True
    try:
        yield
    finally:
        constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE = saved
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _no_row_to_twin(models: str, reg, hub_rows: Sequence[str]) -> None:
    """Raise ValueError naming ``--twin`` when a part of ``models`` that names no registry row or tag is a folder or
    file here, or reads as a hub id: a twin is made of a registry hub row, and such a model runs without ``--twin``."""
    for part in (p.strip() for p in models.split(",")):
        if not part or any(e.id == part or part in e.all_tags for e in reg):
            continue
        here = _is_path_here(part)
        if here or "/" in part or "\\" in part:
            what = "a folder or file here" if here else "a hub id"
            raise ValueError(f"--twin: {part!r} is {what}, not a row of the registry {reg.path} (twins are made of "
                             f"the registry's hub rows: {', '.join(hub_rows)[:160]}...); run it without --twin: "
                             f"aniso run {part}")


def _twin_args(claims_dir: Path, ids: Sequence[str], registry: Path, manifest: Path, sizes: Mapping[str, Any],
               claims: str, texts: Mapping[str, Any]) -> list[str]:
    """The pytest arguments of a twin run (before the user's ``pytest_args``, whose ``--aniso-*`` options are
    ``texts``): the claims folder, the twins' ids, registry and manifest, and each of the twin sizes ``sizes`` and the
    claims filter ``claims`` ("" for every claim) that the user's options do not give, since an option may be given
    once (the user's decides)."""
    args = [str(claims_dir), "-p", "no:cacheprovider", "--aniso-models", ",".join(ids), *_DOOR_OPTIONS,
            "--aniso-registry", str(registry), "--aniso-twin", str(manifest)]
    for k, v in sizes.items():
        if k not in texts:
            args += [f"--aniso-{k.replace('_', '-')}", str(v)]
    if claims and "claims" not in texts:
        args += ["--aniso-claims", claims]
    return args


#: Paragraphs of the corpus a twin's tokenizer is trained on: tiny twins (vocabularies of at most 512), full-size
#: ones (towards the real vocabulary size; the trainer stops where the paragraphs hold no more pieces).
_TWIN_TRAINING_TEXTS = {False: 256, True: 2048}


#: What a twin run writes in its folder besides its manifest (:data:`aniso.sources.hubcache.TWIN_MANIFEST`).
_TWIN_RUN_WRITES = ("models.yaml", "hub", "folders")


def _check_keep_twins_folder(keep: Path) -> None:
    """Refuse a ``--keep-twins`` folder holding a file a twin run writes there (:data:`_TWIN_RUN_WRITES`), unless it
    holds ``twin-manifest.json`` (an earlier twin run's folder, which a new one replaces): a user's own
    ``models.yaml`` would be overwritten by the twins' registry. Raises ValueError (one line) naming the folder and
    the file."""
    from .sources.hubcache import TWIN_MANIFEST

    if not keep.is_dir() or (keep / TWIN_MANIFEST).exists():
        return
    for name in _TWIN_RUN_WRITES:  # (a folder holding the manifest returned above)
        if os.path.lexists(keep / name):
            raise ValueError(f"--keep-twins: {keep} holds {name}, which a twin run writes there (its registry, "
                             "manifest, twins and hub cache) and would replace; give an empty folder, a new one, or "
                             "the folder of an earlier twin run")


def run_twins(models: str, claims: str | None = None, *, registry: str | Path | None = None,
              claims_dir: str | Path | None = None, pytest_args: Sequence[str] = (),
              say: Callable[[str], None] = lambda line: None, keep: str | Path | None = None,
              full_size: bool = False, _claims_dir_option: str = "claims_dir") -> ClaimsRun:
    """Run the claims on twins of registry hub rows, as ``aniso run ID --twin`` does, through the path a user with a
    hub takes: for each hub row of ``models`` (a registry id, comma-separated ids and tags, or a model set such as
    ``paper``), its twin (:func:`aniso.sources.twin.twin_folders`: the row's own class and preprocessing files,
    seeded random weights; for a checkpoint series, three checkpoints under their own repos and revisions) is
    written to a temporary folder, imported with ``aniso hub import``'s code into a temporary Hugging Face cache at
    the row's repo and revision, and the claims run on the row with ``HF_HUB_OFFLINE=1`` (the hub source loads it
    from the cache, in the row's dtype) at the small sizes of :data:`TWIN_SIZES`.

    The registry the run reads is a temporary copy: a series' steps are the twin's, and a row that needs its
    repository's code opts in (its twin's code is the suite's own module; the row itself stays refused without the
    opt-in). Every verdict is labelled ``twin: random weights, code path only``, never judged against the registry's
    records, never counted as a finding; ``results.json`` and the report hold the twins' provenance. ``keep``: a
    folder to keep the twins and their hub cache in (default: a temporary one, removed afterwards, also when SIGTERM
    stops the process); one holding a file a twin run writes (``models.yaml``, ``twin-manifest.json``, ``hub``,
    ``folders``) is refused (ValueError) unless it is an earlier twin run's (it holds ``twin-manifest.json``).

    ``full_size`` (``aniso run ID --twin --full-size``): each twin at its row's ``full`` config (the real model's
    sizes, weights drawn in the row's dtype, the tokenizer's vocabulary trained towards the full size on up to
    2048 paragraphs of the corpus; a checkpoint series gets its first and last checkpoints), labelled
    ``twin, full size: random weights, code path only``; a row without ``full`` is refused in one line naming it.

    Returns a :class:`ClaimsRun` (``model_id``: ``models``). A row the registry says cannot run (``cannot_run``) is
    refused in one line, as is a row with no twin; the exit code is 2 when every row was refused, or a row without a
    ``cannot_run`` record was. Raises ValueError (one line) for a bad setting, registry or model set, or a set with no
    hub row; TypeError naming ``models`` when it is no text, ``say`` when it is no function, before anything runs.
    """
    import json
    import shutil
    import tempfile

    import pytest
    import yaml

    from . import pytest_plugin
    from .common.settings import _where
    from .inputs.text import CorpusError, load_corpus
    from .registry.locate import claims_folder, settings_and_registry
    from .registry.selection import parse_claims
    from .sources.hubcache import import_folder
    from .extract.modalities import INPUT_FORMS, inputs_kind, modality_of
    from .sources import SOURCE_KINDS
    from .sources.twin import TWIN_FULL_SIZE_LABEL, TWIN_LABEL, TWIN_SIZES_NAMED, TwinError, twin_folders, twin_spec

    registry = _path_argument("registry", registry, "the registry file, or None for models.yaml here")
    claims_dir = _path_argument("claims_dir", claims_dir, "the folder of the claim tests, or None for claims/ beside the registry")
    models = _model_argument("models", models, "registry ids and tags, comma-separated, or a model set, as a str")
    say = _callable_argument("say", say, "one line (a str)")
    keep = _path_argument("keep", keep, "the folder to keep the twins in, or None for a temporary one")
    if not isinstance(full_size, bool):
        raise TypeError(f"full_size: {full_size!r}; True (the rows' full configs) or False (their tiny ones)")
    pytest_args = _pytest_arguments(pytest_args)
    made = None  # the outermost folder of --keep-twins this run made (removed again if a Ctrl-C leaves it empty)
    if keep is not None:  # before any work: a file there would stop the run after its tokenizers were trained
        from .common.settings import _check_writable_folder

        made = _check_writable_folder(os.path.expanduser(os.fspath(keep)), "--keep-twins")
        _check_keep_twins_folder(Path(os.path.expanduser(os.fspath(keep))))
    texts = _setting_options(pytest_args)
    _runs_tests(pytest_args)
    _check_written_paths(pytest_args)
    _one_plan(models, claims, registry, None, texts, "aniso run MODELS --twin")
    for name, why in (("registry", "its registry is a temporary copy of the one --registry names: give --registry"),
                      ("twin", "it names the manifest of the twins it builds")):  # the twin run's own options
        if name in texts:
            raise ValueError(f"the pytest option --aniso-{name} {texts[name]!r}: aniso run --twin sets it itself "
                             f"({why}); leave it out")
    options = {"claims": claims} if claims is not None else {}
    settings, reg = settings_and_registry(options, registry=registry, texts=texts)
    if settings.shards > 1:  # the statistics of torchrun's shards live in a cache the twin's hub never reaches
        raise ValueError(f"{_where('shards')} {settings.shards}: a twin run measures its twins itself (their hub "
                         "cache is its own, gone after the run); leave it out with --twin")
    wanted = parse_claims(settings.claims)
    def has_twin(e) -> bool:
        return SOURCE_KINDS[e.source.kind].twins

    try:
        chosen, _ = reg.model_set(models)
    except ValueError:
        _no_row_to_twin(models, reg, [e.id for e in reg if has_twin(e)])
        raise

    hub_rows = [e for e in chosen if has_twin(e)]
    if not hub_rows:
        ids = [e.id for e in reg if has_twin(e)]
        listed = ", ".join(ids)
        rows = (f"the registry's hub rows: {listed[:160]}{'…' if len(listed) > 160 else ''}" if ids else
                "this registry has none: a twin is built from a hub row's tiny config")
        raise ValueError(f"--twin: {models!r} holds no hub row (twins are made of hub rows; {rows})")
    others = [e.id for e in chosen if not has_twin(e)]
    if others:
        say(f"--twin: {len(others)} row(s) of {models!r} are not hub rows and have no twin; left out "
            f"({', '.join(others[:5])}{', …' if len(others) > 5 else ''})")
    claims_dir = claims_folder(claims_dir, Path(settings.registry), option=_claims_dir_option)
    refused: dict[str, str] = {}
    documented: set[str] = set()
    runnable = []
    for e in hub_rows:
        try:
            row = modality_of(e)
            twin_spec(e, full_size, max_length=settings.max_length if "max_length" in texts
                      else TWIN_SIZES["max_length"], inputs=row.inputs if row is not None else None)
            runnable.append(e)
        except TwinError as exc:
            refused[e.id] = str(exc)
            if e.cannot_run is not None:
                documented.add(e.id)
            say(str(exc))
    if not runnable:
        return ClaimsRun(2, models, None, 0, 0, None, refused=tuple(refused.values()))
    try:
        paragraphs = load_corpus(settings.corpus, _TWIN_TRAINING_TEXTS[full_size], settings.seed).sequences
    except CorpusError as exc:
        raise ValueError(f"--twin: the corpus the twins' tokenizers are trained on: {exc}") from None
    root = (Path(os.path.expanduser(os.fspath(keep))).absolute() if keep is not None
            else Path(tempfile.mkdtemp(prefix="aniso-twin-")))
    root.mkdir(parents=True, exist_ok=True)
    measuring = False  # True once the claims run (pytest answers a Ctrl-C there itself)
    on_sigterm = contextlib.ExitStack()  # the temporary folder goes also when SIGTERM stops the run
    on_sigterm.enter_context(_removed_on_sigterm()).extend([root] if keep is None else [])
    import transformers

    label = TWIN_FULL_SIZE_LABEL if full_size else TWIN_LABEL
    manifest: dict[str, Any] = {"label": label, "size": TWIN_SIZES_NAMED[full_size],
                                "transformers": transformers.__version__, "rows": {},
                                "refused": refused, "hub_cache": str(root / "hub"), "inputs": {},
                                "registry": str(reg.path) if reg.path is not None else None}
    try:
        from .registry.entries import load_yaml

        raw = load_yaml(settings.registry)
        by_id = {row["id"]: row for row in raw["models"]}
        for e in runnable:
            try:
                folders = twin_folders(e, root / "folders", paragraphs, seed=settings.seed,
                                       max_steps=2 if full_size else 3, full_size=full_size)
            except TwinError as exc:
                refused[e.id] = str(exc)
                say(str(exc))
                continue
            imported = []
            for f in folders:
                done = import_folder(f.repo, f.folder, f.revision, cache_dir=root / "hub")
                imported.append({"repo": f.repo, "revision": f.revision, "commit": done.commit, "step": f.step,
                                 "seed": f.seed, "folder": str(f.folder)})
            row = by_id[e.id]
            if e.checkpoints is not None:
                row["checkpoints"] = dict(row["checkpoints"], steps=[f.step for f in folders if f.step is not None])
            if e.needs_remote_code:
                row["trust_remote_code"] = True
            manifest["rows"][e.id] = dict(folders[0].provenance, imported=imported,
                                          trust_remote_code=bool(e.needs_remote_code), dtype=e.source.dtype)
        ids = list(manifest["rows"])
        if not ids:
            return ClaimsRun(2, models, None, 0, 0, None, refused=tuple(refused.values()))
        sizes = dict(TWIN_SIZES)
        # small synthetic inputs where the run's own would take long (short clips): a twin's verdicts are the code
        # path's
        for kind in sorted({k for k in map(inputs_kind, map(reg.get, ids)) if k is not None}):
            form = INPUT_FORMS[kind]
            if form.synthetic is not None:
                sizes[form.setting] = str(form.synthetic(root / kind, settings.seed))
                manifest["inputs"][kind] = form.synthetic_note
        tmp_registry = _write_registry(raw, root / "models.yaml", "--twin: the twins' registry")
        from .judge.results import file_digest

        manifest["registry_sha256"] = file_digest(tmp_registry)  # the manifest labels runs of this registry only
        from .sources.hubcache import TWIN_MANIFEST

        (root / TWIN_MANIFEST).write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
        args = _plugins_off(pytest_args) + _twin_args(claims_dir, ids, tmp_registry, root / TWIN_MANIFEST,
                                                      sizes, "" if wanted.everything else str(wanted), texts)
        say(f"--twin: {len(ids)} twin(s) built and imported into {root / 'hub'} ({label})")
        tally = _Tally()
        with _offline_hub_cache(root / "hub"):
            usage = _usage_wrapper()
            measuring = True
            code = _pytest_main(args + _after_users(pytest_args), [pytest_plugin, tally, usage], tally)
            usage.raise_collection()
        results = tally.report.with_name("results.json") if tally.report is not None else None
        for line in tally.refused:
            say(f"refused: {line}")
        exit_code = 2 if tally.refused else run_exit_code(code, tally.measured)
        if exit_code == 0 and set(refused) - documented:
            exit_code = 2
        stopped = tally.stopped  # Ctrl-C (or a signal answered as it) in the claims: said as a run without --twin
        interrupted = tally.interrupted or code == pytest.ExitCode.INTERRUPTED
        if interrupted and not (stopped or "").startswith("interrupted"):
            stopped = interrupted_line(settings, results, tally.signal)
        return ClaimsRun(exit_code, models, results, tally.results, tally.measured, None, stopped,
                         tuple(refused.values()) + tally.refused, interrupted)
    except KeyboardInterrupt:
        if measuring:
            raise
        kept = ""  # Ctrl-C while the twins were built: nothing measured; what is left of --keep-twins' folder said
        if keep is not None:
            if made is not None and not any(root.iterdir()):
                from .common.settings import remove_empty_folders

                remove_empty_folders(root, made)
                kept = f"; {root}, made by this run, is removed (empty)"
            else:
                kept = f"; what was built so far is kept in {root} (--keep-twins)"
        raise KeyboardInterrupt(f"interrupted (Ctrl-C) while the twins were built: nothing was measured{kept}") \
            from None
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
        on_sigterm.close()


def check(model: str | Path, claims: str = "G.", inputs: Any = None, *, settings: dict[str, Any] | None = None,
          registry: str | Path | None = None, claims_dir: str | Path | None = None,
          verbose: bool = False) -> ClaimResults:
    """Run the paper claims on one model and return their verdicts, as ``aniso run MODEL --claims CLAIMS`` does
    (:func:`run_claims`; the run also writes ``results.json`` and ``report.html`` under setting ``report_dir``).

    Parameters
    ----------
    model : a registry id, a local transformers folder or a hub id (an in-memory model: save it with
        ``save_pretrained`` and pass the folder)
    claims : comma-separated claim ids or prefixes (``aniso.claims()``), e.g. ``"G."`` or
        ``"G.token-nlp-anisotropic"``, or a list of them; ``""`` for every claim
    inputs : a corpus file, a folder of photographs or recordings (by the model's modality), a list of at least 2
        distinct texts (written to a temporary corpus file, one per line; line breaks inside a text become spaces;
        measured whole, so setting ``n_sequences`` is refused with a list), or None: the settings' inputs. Inputs
        other than the registry's recorded ones inform and never fail a verdict recorded on other inputs
        (:mod:`aniso.judge.verdicts`).
    settings : settings by name (:data:`aniso.common.settings.SETTING_HELP`), passed as ``--aniso-<name>`` options, e.g.
        ``{"n_sequences": 64, "n_bootstrap": 0}``
    registry, claims_dir : the registry file and the claim tests (defaults as :func:`measure`; ``claims/`` beside
        the registry)
    verbose : pytest's usual output (True), or quiet (False, the default: ``-qq``)

    Returns
    -------
    :class:`ClaimResults`: ``.to_frame()`` one row per claim test, ``.report(path)``, ``.exit_code``.

    Raises
    ------
    ValueError, one line naming the argument: an unknown or undetectable model (``model``), an unknown claim id or
    prefix (``claims``), a bad setting (``settings``), inputs that do not exist or do not fit the model, a list of
    fewer than 2 distinct texts or whose every text is an existing file's path (``inputs``), inputs given both as ``inputs`` and in ``settings`` with different
    values; TypeError naming ``model`` when it is no str or pathlib.Path (an in-memory model), ``settings`` when
    they are no dict, ``inputs`` when they are no path, list of texts or None, ``verbose`` when it is not True or
    False; KeyboardInterrupt when Ctrl-C stops the run (its message says what is kept); RuntimeError when the run
    wrote no results (pytest could not start; its output says why). The temporary folder of a list of texts is
    removed also when Ctrl-C or SIGTERM stops the run.
    """
    import tempfile

    from .registry.selection import parse_claims
    from .judge.results import read_results

    model = _model_argument("model", model, f"{_MODEL_WORDS} (an in-memory model: save it with save_pretrained and "
                            "pass the folder)")
    verbose = _flag("verbose", verbose)
    _settings_argument(settings)
    _no_empty_path(inputs)
    inputs = _inputs_path(inputs)
    registry = _path_argument("registry", registry, "the registry file, or None for models.yaml here")
    claims_dir = _path_argument("claims_dir", claims_dir, "the folder of the claim tests, or None for claims/ beside the registry")
    if (isinstance(claims, (list, tuple)) and not claims) or claims == "":  # (blanks: parse_claims names them)
        raise ValueError(f"claims: {'an empty list' if not isinstance(claims, str) else repr(claims)} names no claim "
                         "(it would run every claim); give claim ids or prefixes, or leave claims out for 'G.' "
                         "(aniso.claims())")
    if isinstance(claims, (list, tuple)) and all(isinstance(c, str) for c in claims):
        claims = ",".join(claims)  # ["G.", "R.decoder-bell-profile"] as "G.,R.decoder-bell-profile"
    if not isinstance(claims, str):
        raise TypeError(f"claims: {claims!r:.40} ({type_name(claims)}); give claim ids or prefixes as a "
                        "comma-separated string or a list of strings (aniso.claims())")
    parse_claims(claims)  # ValueError "claims: ..." naming the item
    base = _settings({}, settings)
    taken = sorted(set(settings or {}) & {"models", "claims", "registry"})
    if taken:
        raise ValueError(f"settings: {taken[0]!r} is set by check itself (give it as model=, claims= or registry=)")
    reg_path = _registry_file(registry, base)
    if reg_path is None:
        raise ValueError("registry: no models.yaml here or in this source tree; give registry=")
    reg = _load_registry(reg_path, registry, base)
    if claims_dir is not None:
        from .registry.locate import claims_folder

        claims_folder(claims_dir, reg_path, option="claims_dir")  # ValueError naming the argument
    entry = _entry(model, reg)
    given = dict(settings or {})
    from .inputs.text import GIVEN_FOLDER_PREFIX

    # the folder of the texts given goes also when SIGTERM stops the run (Ctrl-C: the with statement removes it)
    with _removed_on_sigterm() as remove, tempfile.TemporaryDirectory(prefix=GIVEN_FOLDER_PREFIX) as tmp:
        remove.append(Path(tmp))
        if inputs is not None:
            from .extract.modalities import INPUT_FORMS, inputs_kind

            kind = inputs_kind(entry) or "text"
            if isinstance(inputs, (list, tuple)):
                texts = _texts(inputs)
                _listed_files(texts, INPUT_FORMS[kind], f"{entry.id} (a {entry.modality} model)")
                if INPUT_FORMS[kind].items is not None:
                    raise ValueError(f"inputs: a list of texts, but {entry.id} is a {entry.modality} model")
                from .inputs.text import GIVEN_TEXTS

                corpus = _texts_corpus(texts, Path(tmp) / GIVEN_TEXTS)  # labelled as the texts given, not a file
                given |= _inputs_settings(inputs, texts, None, given, kind, entry.id) | {"corpus": str(corpus)}
            elif isinstance(inputs, (str, Path)):
                option = _inputs_option(inputs, kind, entry.id)
                for name, value in option.items():
                    _one_value(name, [("inputs=", value), (f"settings[{name!r}]=", given.get(name))])
                _settings(option, {k: v for k, v in given.items() if k not in option},  # a file that is no text:
                          arguments={name: "inputs" for name in option})  # named as inputs, not as the setting
                given |= option
            else:
                raise TypeError(f"inputs: a {type_name(inputs)}; give a corpus file, a folder, a list of texts "
                                 "or None")
        args = [] if verbose else ["-qq", "--disable-warnings"]
        with _progress(verbose):  # the settings are built once, in run_claims, from ``given`` (typed)
            done = run_claims(str(model), claims or None, registry=reg_path, claims_dir=claims_dir,
                              pytest_args=args, settings=given)
    if done.interrupted or (done.stopped or "").startswith("interrupted"):  # Ctrl-C: pytest (or the report) caught
        # it and ended the run; the caller's Ctrl-C stops the call too
        raise KeyboardInterrupt(f"check {model}: {done.stopped or 'interrupted (Ctrl-C)'}")
    if done.results_path is None:
        raise RuntimeError(f"check {model}: the claims run wrote no results (pytest exit code {done.exit_code}); "
                           "run with verbose=True to see why")
    said = nothing_measured(done)
    if said is not None:  # exit code 3: as `aniso run` says it (a result of no verdict reads as a success)
        warnings.warn(f"check {model}: nothing measured: {said}; exit_code 3", RuntimeWarning, stacklevel=2)
    return ClaimResults(done.results_path, read_results(done.results_path), done.exit_code, done.model_id)


def nothing_measured(done: "ClaimsRun") -> str | None:
    """Why a claims run ``done`` (:func:`run_claims`) measured nothing (exit code 3), in words: every claim test of
    the model skipped, or no selected claim applying to it; None when it measured something or ended otherwise."""
    if done.exit_code != 3 or done.stopped:
        return None
    return (f"{done.results} claim test(s) of {done.model_id}, all skipped (reasons above and in the report)"
            if done.results else f"no selected claim applies to {done.model_id}")


# -- listings -----------------------------------------------------------------------------------------------------


def claims(*, as_frame: bool = True):
    """The claims catalogue (:data:`aniso.registry.catalog.CLAIMS`, specified in ``docs/claims.md``): one row per claim with
    ``claim``, ``paper``, ``section``, ``figure``, ``statement``, ``executable`` (a test measures it) and
    ``statistics`` (what it reads). A pandas DataFrame, or a list of dicts with ``as_frame=False``."""
    from .registry.catalog import CLAIMS

    as_frame = _flag("as_frame", as_frame)
    rows = [{"claim": c.id, "paper": c.paper, "section": c.section, "figure": c.figure, "statement": c.statement,
             "executable": c.executable, "statistics": ",".join(c.statistics)} for c in CLAIMS.values()]
    if not as_frame:
        return rows
    import pandas as pd

    return pd.DataFrame(rows)


def models(registry: str | Path | None = None, *, as_frame: bool = True, settings: dict[str, Any] | None = None):
    """The registry's models, one row each in file order: ``model``, ``source`` (kind), ``modality``,
    ``granularity``, ``role``, ``family``, ``tags`` (comma-joined), ``params_m`` (millions, None if not recorded),
    ``stands_for`` and ``relation`` (the seed model's row id a row on real weights stands for, and how: ``same``,
    ``converted`` or ``relative``; None for the others) and ``weights_here`` (:func:`aniso.sources.weights_here`: read from disk only, no network). A pandas DataFrame,
    or a list of dicts with ``as_frame=False``. ``registry``: the file (default as :func:`measure`). Setting
    ``models`` (``settings={"models": ...}`` or ``ANISO_MODELS``), where given, keeps the rows of that set only, as
    a run takes them (``small``, ``paper``, ``all``, a tag, or registry ids and tags, comma-separated); without it,
    every row. No device is resolved (setting ``device`` is ``cpu`` unless given): a listing imports no torch.

    Raises ValueError naming the file for a registry that cannot be read (:class:`aniso.registry.entries.RegistryError`).
    """
    from .sources import SourceContext, weights_here

    as_frame = _flag("as_frame", as_frame)
    registry = _path_argument("registry", registry, "the registry file, or None for models.yaml here")
    _one_value("registry", [("registry=", registry), ("settings['registry']=", (settings or {}).get("registry")
                                                        if isinstance(settings, Mapping) else None)])
    given = _settings_argument(settings) or {}
    # A listing reads paths, it writes nothing; it loads no model, so it resolves no device ("auto" imports torch).
    s = _settings({}, {"device": "cpu", **given}, check=False)
    reg = _load_registry(_registry_file(registry, s), registry, s)
    try:  # the rows of the set a run would take, where the setting is given (a misspelt set is refused)
        chosen, _ = reg.model_set(s.models)
        if "models" in given or os.environ.get("ANISO_MODELS"):
            reg = chosen
    except ValueError as exc:
        where = "settings['models']" if "models" in (settings or {}) else "setting models (ANISO_MODELS)"
        raise ValueError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None
    # What weights_here reads: no inputs, no statistics (so a listing imports neither torch nor the pipeline).
    ctx = SourceContext(registry_dir=reg.path.parent if reg.path else None, models_dir=s.models_dir,
                        cache_dir=s.cache_dir, train_text=s.train_text, miniature_sizes=s.miniature_sizes(),
                        device=s.device)
    answers: dict[str, str] = {}  # rows that differ in their id only (one package's rows) are checked once

    def here(e) -> str:
        key = e.model_dump_json(exclude={"id"})
        if key not in answers:
            answers[key] = weights_here(e, ctx)
        return answers[key]

    rows = [{"model": e.id, "source": e.source.kind, "modality": e.modality, "granularity": e.granularity,
             "role": e.role, "family": e.family, "tags": ",".join(sorted(e.tags)), "params_m": e.params_m,
             "stands_for": e.stands_for, "relation": e.relation, "weights_here": here(e)} for e in reg]
    if not as_frame:
        return rows
    import pandas as pd

    return pd.DataFrame(rows, columns=["model", "source", "modality", "granularity", "role", "family", "tags",
                                       "params_m", "stands_for", "relation", "weights_here"])
