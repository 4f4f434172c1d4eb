"""Run settings: where the registry, corpus, cache and reports are, and the sample sizes.

Every setting has a pytest option (``--aniso-...``) and an environment
variable (``ANISO_...``); the option wins. A run profile (:data:`PROFILES`,
setting ``profile``) picks consistent sample sizes for everything at once:
``quick`` (the default: the whole suite on a 2-core CPU in minutes) or
``paper`` (the papers' own sizes). A setting given explicitly overrides its
profile's value.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import re
from collections import Counter
from dataclasses import asdict, field, fields
from pathlib import PurePath
from typing import Annotated, Mapping, Optional, Sequence

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

__all__ = ["Settings", "SettingError", "SETTING_HELP", "PROFILES", "DEFAULT_PROFILE", "BOUNDS", "MAX_SEED",
           "OTHER_VARIABLES", "PATH_SETTINGS", "quoted_option", "option_form_problem", "EMPTY_ALLOWED", "parse_text", "setting_options", "add_setting_options",
           "data_folder_problem", "second_order_bytes", "bootstrap_bytes", "BOOTSTRAP_UNITS", "type_name", "numpy_bool", "physical_memory",
           "available_memory"]

#: Sample sizes of each run profile. ``quick``: what CI and a first run use, every claim at a size that runs on
#: a 2-core laptop (the whole suite, tests included, within CI's 20 minutes on 2 cores). ``paper``: the papers' sizes — the whole WikiText-103 validation set (G §3.1: "the validation
#: set", every paragraph) at up to 512 tokens, every recording, and G §4.1's 16 x 512 block inputs. Photographs:
#: 192 in both, since the suite's miniatures train on the other half of the image folder. Both sweep 5 seeds and
#: 21 bias norms (G §4: "several seeds"; >= 20 norms). The text miniatures (byte-level BERT and GPT-2, 4 layers)
#: pre-train for ``miniature_steps`` steps of ``miniature_batch`` x 128 bytes at width ``miniature_width``.
#: ``study``: the budget study's sizes (docs/studies/miniature-budget.md: 256 paragraphs, 2 x 512 block inputs) with
#: the text miniatures pre-trained for 2,048 steps, the budget at which that study found every training-dynamics
#: claim decided for the miniature GPT-2 (the miniature BERT's Q/K claims need 4,096 steps).
#: The text miniatures' attention heads (the width must divide among them) and training window (bytes).
MINIATURE_HEADS = 4
MINIATURE_WINDOW = 128

PROFILES: dict[str, dict[str, int]] = {
    "quick": dict(n_sequences=128, max_length=128, n_clips=32, n_images=192, block_seeds=5, block_sequences=1,
                  block_seq_len=512, n_bias_norms=21, miniature_steps=256, miniature_width=128, miniature_batch=16,
                  twonn_batches=0),
    "study": dict(n_sequences=256, max_length=128, n_clips=32, n_images=192, block_seeds=5, block_sequences=2,
                  block_seq_len=512, n_bias_norms=21, miniature_steps=2048, miniature_width=128, miniature_batch=16,
                  twonn_batches=0),
    "paper": dict(n_sequences=1_000_000, max_length=512, n_clips=1_000_000, n_images=192, block_seeds=5,
                  block_sequences=16, block_seq_len=512, n_bias_norms=21, miniature_steps=4096, miniature_width=256,
                  miniature_batch=32, twonn_batches=16),
}
DEFAULT_PROFILE = "quick"
_QUICK = PROFILES[DEFAULT_PROFILE]


#: The words a boolean ``ANISO_*`` variable may hold (any case); anything else is refused, naming the variable.
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


#: The ``ANISO_*`` environment variables that are not settings, and what reads them. Any other ``ANISO_*`` variable
#: that is not ``ANISO_<SETTING>`` is refused where a run's settings are built: a misspelt one (``ANISO_CORPSU``)
#: would otherwise be ignored and the run measure another corpus than the one meant.
#: The words a switch variable (``ANISO_PROGRESS``) may hold; empty is unset.
_SWITCH_WORDS = ("", "0", "false", "no", "off", "1", "true", "yes", "on")

OTHER_VARIABLES: dict[str, str] = {
    "ANISO_PROGRESS": "0 hides the progress bars (aniso.common.progress)",
    "ANISO_PEER_PYTHON": "the Python that runs the other TwoNN estimators (aniso bench twonn)",
    "ANISO_REQUIRE_BROWSER": "1 fails the report's browser test where no browser is installed (tests/)",
    "ANISO_BENCH_LARGE": "1 adds the large sizes to the benchmarks (benchmarks/)",
    "ANISO_SCREENSHOT_DIR": "where the report's browser test keeps its screenshots (tests/)",
}


def _unknown_variable(environ) -> str | None:
    """The one-line refusal of the first ``ANISO_*`` variable in ``environ`` (with a value) that is neither a
    setting's nor one of :data:`OTHER_VARIABLES`, with the closest known name; None when there is none."""
    known = {f"ANISO_{name.upper()}" for name in Settings.__dataclass_fields__} | set(OTHER_VARIABLES)
    unknown = sorted(k for k, v in environ.items() if k.startswith("ANISO_") and k not in known and str(v).strip())
    if not unknown:
        return None
    name = unknown[0]
    if name.upper() in known:  # a case slip: the variables are upper case (ANISO_corpus for ANISO_CORPUS)
        hint = f"; did you mean {name.upper()}? (the variables are upper case)"
    elif name == "ANISO_":  # no name after the prefix: nothing to be close to
        hint = "; nothing follows ANISO_"
    else:
        close = difflib.get_close_matches(name.upper(), sorted(known), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
    return (f"environment variable {name}: no setting has this name" + hint
            + " (the settings: docs/settings.md, or the --aniso-* options of pytest --help; unset this one)")


#: The settings that name a file or folder. An empty value given for one (``ANISO_CORPUS=``, ``--aniso-report-dir ''``,
#: ``settings={"corpus": ""}``) is refused rather than read as "not set": the run would otherwise measure the default
#: inputs, or write to the default folder, while the user believes they set it.
#: The input files and folders a run reads from where it starts: made absolute once, as the settings are built, so
#: the provenance of results.json names the file read whatever folder it is read from (``registry``, ``cache_dir``
#: and ``report_dir`` are found as :mod:`aniso.registry.locate` finds them, and are kept as given).
INPUT_PATH_SETTINGS = ("corpus", "train_text", "speech_dir", "image_dir", "models_dir", "twin")
PATH_SETTINGS = ("registry", "corpus", "train_text", "cache_dir", "report_dir", "speech_dir", "image_dir", "models_dir",
                 "twin")
#: The settings for which an empty text is a value of its own (``claims``: every claim); for every other setting an
#: empty ``ANISO_*`` variable or ``--aniso-*`` option is refused (:meth:`Settings.from_sources`), never taken for unset.
EMPTY_ALLOWED = ("claims",)


def _where(name: str) -> str:
    """How a message names setting ``name``: ``setting seed (ANISO_SEED, --aniso-seed)``."""
    return f"setting {name} (ANISO_{name.upper()}, --aniso-{name.replace('_', '-')})"


def _empty_value(texts: dict[str, object], environ, skip: set[str]) -> str | None:
    """The one-line refusal of the first setting given an empty (or blank) text, as an ``--aniso-*`` option in
    ``texts`` or an ``ANISO_*`` variable in ``environ`` (but for :data:`EMPTY_ALLOWED`, and those in ``skip``, given
    typed); None when there is none. A variable that is not set is not given: only one set to "" is refused."""
    for name in Settings.__dataclass_fields__:
        if name in EMPTY_ALLOWED or name in skip:
            continue
        option, variable = "--aniso-" + name.replace("_", "-"), f"ANISO_{name.upper()}"
        text = texts.get(name)
        if isinstance(text, str) and not text.strip():
            return f"option {option}: empty ({text!r}); give a value, or leave the option out for the default"
        if name not in texts and variable in environ and not str(environ[variable]).strip():
            return f"setting {name} ({variable}) is set but empty; unset it for the default (unset {variable})"
    return None


def _holds_file_of(folder: str, suffixes: tuple[str, ...], others: Counter[str] | None = None) -> bool:
    """Whether ``folder`` or a folder under it holds a file (or a link to one) whose suffix, in lower case, is one of
    ``suffixes``: what the media loaders list (``Path.rglob``, which does not descend into links to folders). Stops
    at the first one found; a sub-folder that cannot be read is passed over, as the loaders pass it over. ``others``,
    where given, counts the other files seen by suffix (lower case; ``""`` for none)."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                            continue
                        suffix = PurePath(entry.name).suffix.lower()
                        if suffix in suffixes and entry.is_file():
                            return True
                        if others is not None and entry.is_file():
                            others[suffix] += 1
                    except OSError:
                        continue
        except OSError:
            if current == folder:
                raise
    return False


def data_folder_problem(value: str | None, suffixes: tuple[str, ...] | None) -> str | None:
    """What is wrong with a data folder setting set to ``value``, in words beginning with the path, or None (also
    when it is not set): it does not exist, is no folder, is the root of the file system (``/``: a search would walk
    the whole disk), cannot be read, or, with ``suffixes``, holds no file of those types (:func:`_holds_file_of`)."""
    if not value:
        return None
    if not os.path.exists(value):
        return f"{value} does not exist; it must name a folder (or leave the setting unset)"
    if not os.path.isdir(value):
        return f"{value} is a file; it must name a folder"
    real = os.path.realpath(value)
    if os.path.dirname(real) == real:  # `$IMGS/` with IMGS unset: every file on the disk, stray icons measured
        return (f"{value} is the root of the file system; a search from it would walk every folder on the disk and "
                "take any file of the right type for data (an unset variable in a path such as $IMGS/ gives /): "
                "give the folder that holds the data")
    if not suffixes:
        return None
    others: Counter[str] = Counter()
    try:
        if _holds_file_of(value, suffixes, others):
            return None
    except OSError as exc:
        return f"{value} cannot be read ({exc.strerror or exc})"
    held = ", ".join(f"{suffix or 'no suffix'} x{n}" for suffix, n in others.most_common(5))
    more = f", {len(others) - 5} other kind(s)" if len(others) > 5 else ""
    what = (f"; it holds {sum(others.values())} file(s) of other formats ({held}{more}), which this suite does not "
            "read" if others else "")
    return f"{value} holds no {'/'.join(suffixes)} file (its sub-folders searched too){what}"


def _default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "aniso")


#: The seed of a run that sets none: the registry's records hold numbers measured at it, which a run at another
#: seed (another sample of the corpus, other reservoirs) is not compared with, and ``aniso record`` writes only them.
DEFAULT_SEED = 0

#: Largest seed: numpy's ``Generator``/``SeedSequence`` entropy and ``torch.manual_seed`` both take it, and so does
#: the legacy ``numpy.random.seed`` (0 .. 2**32 - 1).
MAX_SEED = 2**32 - 1

#: The fewest points a TwoNN intrinsic dimension (Facco et al. 2017) is given from: the fewest vectors a claim that
#: reads second-order statistics is decided on (``aniso.registry.catalog.MIN_VECTORS``; the suite's convention, the
#: papers state none). Three distinct points make the fit defined, not meaningful: its slope rests on the smallest
#: 90% of the ratios r2/r1, and a few of them give any number (a 3-point reservoir gave 51.8 for a layer where the
#: default reservoir gives 4 to 7). The reservoir (setting ``reservoir_size``) holds at least this many, and a layer
#: that saw fewer vectors gets NaN (:class:`aniso.stats.parts.reservoir.Reservoir`).
TWONN_MIN_POINTS = 128

#: The fewest vectors per batch of the batch-wise SVD anisotropy (Razzhigaev et al. 2024 §2.3; setting
#: ``svd_batch_size``): a centred batch of b vectors has rank at most b - 1, so its anisotropy σ₁²/Σσᵢ² is at least
#: 1/(b - 1) by construction (1.0 for b = 2, whatever the model), and every b vectors cost one decomposition per layer
#: (b = 2 left a 135M decoder's 16 paragraphs unfinished after 300 s; 4096 takes 60 s). 64 keeps the bound at 1/63
#: and the run bounded; the paper uses 4096 and more, and a batch narrower than a layer is still rank-limited (biased
#: up), which a run says in its inputs line (:func:`svd_batch_note`). The suite's convention: the paper states none.
SVD_BATCH_MIN = 64

#: Bounds of the integer settings, inclusive: (smallest, largest). The largest values are far above any run's
#: needs and keep a typo (a digit too many) from reaching a buffer; the memory the second-order sizes imply together
#: is checked against this machine's memory as well (:func:`second_order_bytes`).
BOUNDS: dict[str, tuple[int, int]] = {
    "n_sequences": (1, 10**9), "max_length": (1, 2**20), "batch_size": (1, 2**16), "seed": (0, MAX_SEED),
    "reservoir_size": (TWONN_MIN_POINTS, 2**31 - 1), "svd_batch_size": (SVD_BATCH_MIN, 2**31 - 1),
    "block_seeds": (1, 1000),
    "block_sequences": (1, 2**16), "block_seq_len": (2, 2**20), "n_bias_norms": (3, 10_000), "n_clips": (1, 10**9),
    "n_images": (1, 10**9), "max_image_pixels": (1, 2**40), "second_order_max_dim": (2, 2**17),
    "miniature_steps": (1, 10**9), "miniature_width": (8, 2**16), "miniature_batch": (1, 2**16), "shards": (1, 4096),
    "n_bootstrap": (0, 10**7), "twonn_batches": (0, 10**4)}


def _int(name: str):
    lo, hi = BOUNDS[name]
    return Annotated[int, Field(ge=lo, le=hi)]


def _path_text(value: object) -> object:
    """A path given as ``os.PathLike`` (``pathlib.Path``) becomes its text; anything else is left to the type check."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


#: A file or folder setting: text or ``os.PathLike``, or None (not set).
_Path = Annotated[Optional[str], BeforeValidator(_path_text)]
_PathRequired = Annotated[str, BeforeValidator(_path_text)]


#: Why a setting's smallest value is what it is, where that is not plain (shown in its refusal).
_WHY_LOWEST = {"reservoir_size": f"TwoNN needs at least {TWONN_MIN_POINTS} points to mean anything",
               "svd_batch_size": "a centred batch of b vectors has rank at most b - 1, so its SVD anisotropy is at "
                                 f"least 1/(b - 1) by construction; at least {SVD_BATCH_MIN} keeps it meaningful and "
                                 "the run bounded (Razzhigaev et al.: >= 4096)"}


def _allowed(name: str) -> str:
    """What setting ``name`` may hold, in words (for the one-line refusal)."""
    if name in BOUNDS:
        lo, hi = BOUNDS[name]
        return f"an integer from {lo} to {hi}"
    kind = Settings.__dataclass_fields__[name].type
    if "bool" in str(kind):
        return "True or False (a bool)"
    if name == "device":
        return "a torch device name: auto, cpu, cuda, cuda:N or mps"
    if name in ("registry", "corpus", "train_text", "speech_dir", "image_dir", "models_dir", "twin"):
        return "a path (str or os.PathLike) or None"
    if name in ("cache_dir", "report_dir"):
        return "a path (str or os.PathLike)"
    return "text"


class SettingError(ValueError, TypeError):
    """A setting refused: one line naming the setting (its variable and option), its value and what is allowed. A
    ValueError (a value out of range) and a TypeError (a value of the wrong type) at once, so either ``except`` takes
    it."""


def type_name(value: object) -> str:
    """The name of ``value``'s type as a refusal shows it: the bare name of a built-in (``str``, ``int``), else
    qualified by its module's top package (``numpy.bool``, ``numpy.int64``, ``pathlib.PosixPath``), so that a
    numpy boolean is not shown as ``bool``."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def numpy_bool(value: object) -> bool:
    """Whether ``value`` is a numpy boolean (``numpy.bool_``: ``np.True_``, an element of a boolean array), which is
    no subclass of ``bool``. numpy is not imported to find out: a value cannot be one unless numpy is loaded."""
    import sys

    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


def _not_utf8(path: str | None) -> str | None:
    """Why ``path`` cannot be recorded as UTF-8 text, or None: a file name whose bytes are no UTF-8 reaches Python
    with each such byte as a lone surrogate (``os.fsdecode``; ``ANISO_CORPUS``, a listing of a folder), and a run that
    read it would fail only when it writes the path into results.json or a cache entry, after the measurement."""
    if path is None:
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:
        try:  # the name's bytes, as Python decoded them with the file-system encoding (an ASCII locale: every byte
            os.fsencode(path).decode("utf-8")  # past 127 escaped): a UTF-8 name is no problem, whatever the locale
            return None
        except UnicodeError:
            pass
        raw = os.fsencode(path) if all(not 0xD800 <= ord(c) < 0xDC80 for c in path) else None
        shown = f" ({raw!r})" if raw is not None else ""
        return (f"the path {path!r}{shown} is no UTF-8 text (character {exc.start + 1}, {path[exc.start]!r}: a byte "
                "of the file name that is not UTF-8, or a lone surrogate); results and the cache record paths as "
                "UTF-8: rename it, or link to it from a UTF-8 name")
    return None


def _plain(value: object) -> object:
    """A numpy scalar given for a setting (``np.True_``, ``np.int64(64)``, as a notebook computes them) as the Python
    bool or int it stands for; anything else unchanged (and left to the strict type check). A numpy boolean is a
    boolean, and a numpy integer an integer: refusing them as "got np.True_ (bool)" would read as nonsense."""
    import numbers

    if numpy_bool(value):
        return bool(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, int):
        return int(value)
    return value


def _refusal(exc: ValidationError) -> SettingError:
    """One line from pydantic's first error: the setting, its variable and option, what is allowed, the value."""
    first = exc.errors()[0]
    if isinstance((first.get("ctx") or {}).get("error"), SettingError):  # raised by __post_init__
        return first["ctx"]["error"]
    name = str(first["loc"][0]) if first.get("loc") else ""
    value = first.get("input")
    if name in Settings.__dataclass_fields__:
        if "bool" in str(Settings.__dataclass_fields__[name].type):  # typed values here: a word is no bool
            words = (f": words (true/false, 1/0, yes/no, on/off) are read from the variable ANISO_{name.upper()} "
                     "only" if isinstance(value, str) else "")
            return SettingError(f"{_where(name)} must be True or False (a bool), got {value!r} "
                                f"({type_name(value)}){words}")
        shown = f"{value!r}" + ("" if isinstance(value, (int, str)) and not isinstance(value, bool) or value is None
                                else f" ({type_name(value)})")
        why = _WHY_LOWEST.get(name) if type(value) is int and name in BOUNDS and value < BOUNDS[name][0] else None
        return SettingError(f"{_where(name)} must be {_allowed(name)}, got {shown}" + (f": {why}" if why else ""))
    if first["type"] == "unexpected_keyword_argument":
        close = difflib.get_close_matches(str(first["loc"][-1]), list(Settings.__dataclass_fields__), n=1)
        return SettingError(f"settings: unknown setting {first['loc'][-1]!r}"
                            + (f"; did you mean {close[0]!r}?" if close else ""))
    return SettingError(f"settings: {first['msg']}")


def physical_memory() -> int | None:
    """This machine's memory in bytes (``os.sysconf``), or None where it cannot be told."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's ``MemAvailable`` in ``/proc/meminfo``), or None where
    it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def second_order_bytes(reservoir_size: int, svd_batch_size: int, twonn_batches: int, width: int) -> dict[str, int]:
    """The bytes one layer of ``width`` (at most setting ``second_order_max_dim``) holds for its second-order
    statistics (:class:`aniso.stats.accumulators.LayerAccumulator`): the float32 reservoir (``reservoir_size`` x
    width), the float32 SVD batch (``svd_batch_size`` x width) and TwoNN batches (``twonn_batches`` x
    ``svd_batch_size`` x width), and the float64 d x d second moment; by the setting that sizes each."""
    return {"reservoir_size": 4 * reservoir_size * width, "svd_batch_size": 4 * svd_batch_size * width,
            "twonn_batches": 4 * twonn_batches * svd_batch_size * width, "second_order_max_dim": 8 * width * width}


#: The most units (inputs, or random groups of inputs past that many) a layer's per-input sums hold, over which the
#: bootstrap resamples (:data:`aniso.stats.parts.inputs.INPUT_GROUPS`, which the statistics layer sets; a test keeps
#: the two equal).
BOOTSTRAP_UNITS = 256


def bootstrap_bytes(n_bootstrap: int, width: int, units: int = BOOTSTRAP_UNITS) -> int:
    """The bytes the bootstrap of one layer of ``width`` over ``units`` takes at once
    (:func:`aniso.stats.uncertainty.bootstrap_stats`): the float64 resample weights and their squares (``n_bootstrap``
    x ``units``, twice) and the resampled sums (``n_bootstrap`` x ``width``, twice)."""
    return 8 * n_bootstrap * (2 * units + 2 * width)


def _bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover


@pydantic_dataclass(frozen=True, config=ConfigDict(strict=True, extra="forbid"))
class Settings:
    """Settings of one run (see :data:`SETTING_HELP`): one validated plan, built once where a run enters (the
    command line, the Python API, the environment, pytest options; :meth:`from_sources`) and passed on whole.

    Types are strict (an integer setting takes an integer, not ``"16"`` nor ``True``; a path takes text or
    ``os.PathLike``), integers are bounded (:data:`BOUNDS`; the seed within numpy's and torch's range), the
    second-order sizes are checked against this machine's memory (:func:`second_order_bytes`), the device against
    the devices present and the model set must name something. Raises :class:`SettingError` (a ValueError and a
    TypeError) with one line naming the setting, its variable and option, what is allowed and the value.
    """

    profile: str = DEFAULT_PROFILE
    registry: _Path = None
    corpus: _Path = None
    n_sequences: _int("n_sequences") = _QUICK["n_sequences"]
    max_length: _int("max_length") = _QUICK["max_length"]
    batch_size: _int("batch_size") = 16
    seed: _int("seed") = DEFAULT_SEED
    reservoir_size: _int("reservoir_size") = 4096
    svd_batch_size: _int("svd_batch_size") = 4096
    cache_dir: _PathRequired = field(default_factory=_default_cache)
    no_cache: bool = False
    report_dir: _PathRequired = "reports"
    device: str = "auto"
    block_seeds: _int("block_seeds") = _QUICK["block_seeds"]
    block_sequences: _int("block_sequences") = _QUICK["block_sequences"]
    block_seq_len: _int("block_seq_len") = _QUICK["block_seq_len"]
    n_bias_norms: _int("n_bias_norms") = _QUICK["n_bias_norms"]
    speech_dir: _Path = None
    n_clips: _int("n_clips") = _QUICK["n_clips"]
    image_dir: _Path = None
    n_images: _int("n_images") = _QUICK["n_images"]
    max_image_pixels: _int("max_image_pixels") = 50_000_000
    models_dir: _Path = None
    second_order_max_dim: _int("second_order_max_dim") = 8192
    train_text: _Path = None
    miniature_steps: _int("miniature_steps") = _QUICK["miniature_steps"]
    miniature_width: _int("miniature_width") = _QUICK["miniature_width"]
    miniature_batch: _int("miniature_batch") = _QUICK["miniature_batch"]
    shards: _int("shards") = 1
    release_host_memory: bool = True
    n_bootstrap: _int("n_bootstrap") = 1000
    twonn_batches: _int("twonn_batches") = _QUICK["twonn_batches"]
    models: str = "small"
    claims: str = ""
    twin: _Path = None

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise SettingError(f"{_where('profile')} must be one of {sorted(PROFILES)}, got {self.profile!r}")
        if not any(part.strip() for part in self.models.split(",")):
            raise SettingError(f"{_where('models')} must name a model set, a tag or registry ids "
                               f"(e.g. small, paper, all), got {self.models!r}")
        from .files import URL_NOT_READ, path_text_problem, url_given

        for name in PATH_SETTINGS:
            value = getattr(self, name)
            if value is None:
                continue
            if not value.strip():  # an empty path is no path: None (not set, where allowed) means the default
                unset = ", or None (leave it unset) for the default" if "None" in _allowed(name) else ""
                raise SettingError(f"{_where(name)} is empty ({value!r}); give {_allowed(name).split(' or None')[0]}"
                                   f"{unset}")
            # recorded as text in results.json and the cache's entries, which are UTF-8; 'cache\r' from a CRLF
            # file names another folder than the one meant, made afresh
            problem = _not_utf8(value) or (path_text_problem(value) if isinstance(value, str) else None)
            if problem is not None:
                raise SettingError(f"{_where(name)}: {problem}")
        if self.miniature_width % MINIATURE_HEADS:
            raise SettingError(f"{_where('miniature_width')} must be a multiple of {MINIATURE_HEADS} (the text "
                               f"miniatures' attention heads share the width), got {self.miniature_width}")
        for name in (*INPUT_PATH_SETTINGS, "cache_dir", "report_dir"):  # frozen: the paths the run reads and
            value = getattr(self, name)  # writes, from the working folder where the run entered (its check, too)
            url = url_given(value) if isinstance(value, str) else None
            if url is not None:  # made absolute, https://x/c.txt would be looked for as ./https:/x/c.txt
                raise SettingError(f"{_where(name)}: {url} {URL_NOT_READ}" if name in INPUT_PATH_SETTINGS else
                                   f"{_where(name)}: {url} is a URL; this setting names a local folder to write in")
            if isinstance(value, str):
                object.__setattr__(self, name, os.path.abspath(os.path.expanduser(value)))
        memory = physical_memory()
        if memory:
            parts = second_order_bytes(self.reservoir_size, self.svd_batch_size, self.twonn_batches,
                                       self.second_order_max_dim)
            total = sum(parts.values())
            if total > memory:
                name = max(parts, key=parts.get)
                value = getattr(self, name)
                rest = total - parts[name]
                per_unit = parts[name] / value if value else 1
                largest = max(int((memory - rest) // per_unit), 0) if name != "second_order_max_dim" else None
                allowed = (f"at most {largest} here" if largest is not None else
                           "a width whose d x d moment fits here")
                raise SettingError(
                    f"{_where(name)} must be {allowed}, got {value}: the second-order statistics of one layer of "
                    f"width up to second_order_max_dim {self.second_order_max_dim} would take {_bytes(total)} "
                    f"({', '.join(f'{k} {_bytes(v)}' for k, v in parts.items() if v)}) and this machine has "
                    f"{_bytes(memory)}")
            needed = bootstrap_bytes(self.n_bootstrap, self.second_order_max_dim)
            if needed > memory:  # before any model is read: it would fail once every statistic was extracted
                largest = memory // bootstrap_bytes(1, self.second_order_max_dim)
                raise SettingError(
                    f"{_where('n_bootstrap')} must be at most {largest} here, got {self.n_bootstrap}: the bootstrap "
                    f"resamples of one layer of width up to second_order_max_dim {self.second_order_max_dim} over "
                    f"up to {BOOTSTRAP_UNITS} inputs would take {_bytes(needed)} and this machine has "
                    f"{_bytes(memory)}")
        from .devices import resolve_device

        try:  # frozen: the resolved device replaces "auto" once, so every stage and every report name the same one
            object.__setattr__(self, "device", resolve_device(self.device))
        except ValueError as exc:
            raise SettingError(f"{_where('device')}: {exc}") from None

    @classmethod
    def from_sources(cls, options: dict[str, object] | None = None, environ: dict[str, str] | None = None,
                     texts: dict[str, str] | None = None) -> "Settings":
        """Build settings from explicit ``options`` (typed values, as the Python API gives them, numpy booleans and
        integers read as Python's; None = not given),
        then ``texts`` (``--aniso-<name>`` option values as typed on a command line, by setting name), then
        ``ANISO_<NAME>`` variables, then the profile's sizes (:data:`PROFILES`; the profile itself comes from an
        option or ``ANISO_PROFILE``), then defaults.

        An ``ANISO_*`` variable that is not set means the setting's default; one set to an empty (or blank) text is
        refused, as is an empty ``--aniso-*`` option (but for :data:`EMPTY_ALLOWED`): an empty path would otherwise
        mean the default corpus or folder while the user believes they set one.

        Raises :class:`SettingError` (one line) naming the variable when an ``ANISO_*`` variable is no setting's and
        none of :data:`OTHER_VARIABLES` (a misspelling, with the closest name), or is set but empty ("setting corpus
        (ANISO_CORPUS) is set but empty; unset it for the default"); the option when it is given empty; the option or
        variable when one does
        not parse (an integer that is not one; a boolean that is none of 1/true/yes/on, 0/false/no/off), the profile
        when it is unknown, and the setting when a value is out of bounds or of the wrong type.
        """
        options = {k: _plain(v) for k, v in (options or {}).items() if v is not None}
        texts = {k: v for k, v in (texts or {}).items() if v is not None}
        environ = os.environ if environ is None else environ
        unknown = sorted(set(options) - set(cls.__dataclass_fields__))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(cls.__dataclass_fields__), n=1)
            raise SettingError(f"settings: unknown setting {unknown[0]!r}" + (f"; did you mean {close[0]!r}?" if close
                                                                               else ""))
        misspelt = _unknown_variable(environ)
        if misspelt is not None:
            raise SettingError(misspelt)
        progress = environ.get("ANISO_PROGRESS")
        if progress is not None and progress.strip().lower() not in _SWITCH_WORDS:
            raise SettingError(f"environment variable ANISO_PROGRESS is {progress!r}; give 0 (hide the progress bars) "
                               "or 1 (one of 0/false/no/off, 1/true/yes/on), or unset it")
        empty = _empty_value(texts, environ, skip=set(options))
        if empty is not None:
            raise SettingError(empty)
        profile = options.get("profile") or texts.get("profile") or environ.get("ANISO_PROFILE") or DEFAULT_PROFILE
        if profile not in PROFILES:
            raise SettingError(f"{_where('profile')}: profile {profile!r} is not one of {sorted(PROFILES)}")
        values: dict[str, object] = dict(PROFILES[profile], profile=profile)
        for f in fields(cls):
            if f.name in options:
                values[f.name] = options[f.name]
                continue
            if f.name in texts:
                given, where = texts[f.name], f"option --aniso-{f.name.replace('_', '-')}"
            else:
                given, where = environ.get(f"ANISO_{f.name.upper()}"), f"environment variable ANISO_{f.name.upper()}"
            if given is None or given == "":  # not set (an empty text is refused above, but where allowed)
                continue
            values[f.name] = parse_text(f.name, given, where)
        return cls(**values)

    def check_paths(self, formats: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """Check the paths a run reads or writes before it starts, so that a wrong one gives one line instead of a
        traceback minutes later (``formats``: the data folders' file types, :meth:`check_data_folders`).

        ``corpus`` and ``train_text`` must be files (not folders) of UTF-8 text (not compressed, not UTF-16 or UTF-32:
        :func:`aniso.common.files.wide_unicode`, with or without a byte-order mark); ``speech_dir``, ``image_dir`` and ``models_dir``,
        when set, folders that exist, holding a file of ``formats`` where it names their types
        (:meth:`check_data_folders`); ``cache_dir`` must be a folder this process can create and write files in
        (checked without creating it: it is made when its first entry is written; it also holds unpacked package
        weights, joined GGUF files and the miniatures' checkpoints, which a run needs, so a read-only cache is an
        error rather than a silent run without it), and neither a Hugging Face hub cache nor a model's folder (its
        entries would change the files that key them). Raises ValueError naming the setting, its variable and option, and
        the path.
        """
        from .files import binary_kind, not_a_regular_file, wide_unicode

        for name in ("corpus", "train_text"):  # regular files of text: no FIFO, pipe, device, archive
            value = getattr(self, name)
            if not value:
                continue
            problem = not_a_regular_file(value)
            if problem is not None and problem != "does not exist":  # a missing file: named where it is read
                raise SettingError(f"{_where(name)}: {value} {problem}")
            if problem is None:
                with open(value, "rb") as f:
                    head = f.read(4096)
                wide = None if binary_kind(head) else wide_unicode(head)  # UTF-16 or UTF-32: bytes, not letters
                if wide is not None:  # as the corpus reader says; the byte-level miniatures would train on its NULs
                    raise SettingError(f"{_where(name)}: {value} is not UTF-8 text: it is {wide[0]}; save it as UTF-8 "
                                       f"(e.g. iconv -f {wide[1]} -t UTF-8)")
                kind = binary_kind(head) or ("binary data (NUL bytes)" if b"\x00" in head and not head.startswith(
                    (b"\xff\xfe", b"\xfe\xff")) and head.count(0) <= len(head) // 4 else None)
                if kind is not None:
                    raise SettingError(f"{_where(name)}: {value} is not text: it is {kind}; decompress it first"
                                       if "compressed" in kind or "archive" in kind else
                                       f"{_where(name)}: {value} is not text: it holds {kind}")
                size = os.path.getsize(value)
                if name == "train_text" and size <= MINIATURE_WINDOW:
                    raise SettingError(f"{_where(name)}: {value} holds {size} bytes; the text miniatures train on "
                                       f"windows of {MINIATURE_WINDOW} bytes, so it needs more than {MINIATURE_WINDOW}")
        self.check_data_folders(formats)
        other = _folder_of_another_kind(self.cache_dir)
        if other is not None:  # its entries would land among a hub's repositories, or change a model's files
            raise SettingError(f"{_where('cache_dir')}: {self.cache_dir} is {other}; the statistics cache is a folder "
                               "of its own: give another (e.g. ~/.cache/aniso)")
        _check_writable_folder(self.cache_dir, _where("cache_dir"), make=False)  # made by the first entry written

    def check_data_folders(self, formats: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """Check the data folders a run reads, where set: ``speech_dir``, ``image_dir`` and ``models_dir`` must be
        folders that exist, and each setting of ``formats`` (setting name -> lower-case file suffixes) a folder
        holding at least one file of those types, searched as the media loaders search (sub-folders too, not the
        folders behind links; stopping at the first file found, so it is cheap). ``formats`` comes from a caller
        above the inputs layer, which reads the loaders' own suffixes (``aniso.inputs.media.DATA_FORMATS``; the common
        layer may not import it): :func:`aniso.registry.locate.settings_and_registry` and the API. Raises :class:`SettingError` (one line) naming the setting,
        its variable and option, and the path."""
        for name in ("speech_dir", "image_dir", "models_dir"):
            problem = data_folder_problem(getattr(self, name), (formats or {}).get(name))
            if problem is not None:
                raise SettingError(f"{_where(name)}: {problem}")

    def extraction_key(self) -> dict:
        """The settings that change extracted statistics (part of the cache key)."""
        key = {k: v for k, v in asdict(self).items() if k in
               ("n_sequences", "max_length", "seed", "reservoir_size", "svd_batch_size", "second_order_max_dim")}
        if self.twonn_batches:
            key["twonn_batches"] = self.twonn_batches
        # Another device's kernels differ in the last bits: its statistics are another entry (CPU keeps its keys).
        device = self.device.split(":")[0]
        return key if device == "cpu" else key | {"device": device}

    def miniature_sizes(self) -> dict:
        """The text miniatures' recipe sizes of this run (see :class:`~aniso.experiments.miniature_text.TextRecipe`)."""
        return {"total_steps": self.miniature_steps, "hidden_size": self.miniature_width,
                "batch_size": self.miniature_batch}


_validated_init = Settings.__init__


def _init(self, *args, **kwargs) -> None:  # pydantic's errors as one line naming the setting
    try:
        _validated_init(self, *args, **kwargs)
    except ValidationError as exc:
        raise _refusal(exc) from None


Settings.__init__ = _init


def parse_text(name: str, text: object, where: str) -> object:
    """The value of setting ``name`` from ``text`` as typed in an environment variable or on a command line
    (``where`` names which, for the refusal): an integer, a boolean word (1/true/yes/on, 0/false/no/off, any case) or
    the text itself. Raises :class:`SettingError` (one line naming ``where`` and the text) when it does not parse;
    bounds are checked when the settings are built."""
    if not isinstance(text, str):  # a flag given on the command line (True), or a value already typed
        return text
    kind = str(Settings.__dataclass_fields__[name].type)
    if name in BOUNDS:
        try:
            return int(text)
        except ValueError:
            low, high = BOUNDS[name]
            count = " (a count, not a list)" if "," in text else ""
            raise SettingError(f"{where}={text!r} is not an integer{count}; give a whole number from {low} to "
                               f"{high}: {SETTING_HELP[name]}" if name in SETTING_HELP else
                               f"{where}={text!r} is not an integer{count}; give a whole number from {low} to "
                               f"{high}") from None
    if "bool" in kind:
        word = text.strip().lower()
        if word not in _TRUE + _FALSE:
            raise SettingError(f"{where}={text!r} is neither true ({', '.join(_TRUE)}) nor false ({', '.join(_FALSE)})")
        return word in _TRUE
    return text


def quoted_option(arg, options) -> str | None:
    """The one-line refusal of ``arg`` when it is an option of ``options`` (option strings) and its value quoted as
    one word (``'--n-sequences 8'``), which a parser takes for a positional argument or pytest for a file; else None.
    The same words at every door (``aniso`` subcommands, the pytest arguments of ``aniso run`` and the API, pytest's
    own file arguments)."""
    if not isinstance(arg, str) or not arg.startswith("-") or len(arg.split()) < 2 or arg.split()[0] not in options:
        return None
    return f"{arg!r} is an option and its value quoted as one word; write them apart, {' '.join(arg.split())}"


def option_form_problem(arg) -> str | None:
    """The one-line refusal of the word ``arg`` when it is a setting option in a form no parser reads, else None:
    upper or mixed case (``--ANISO-N-SEQUENCES=8``), or begun with a dash other than two hyphen-minus signs (an em or
    en dash, a minus sign: typed by an editor or pasted from a document, ``—aniso-n-sequences``). The same words at
    every door (pytest's options and file arguments, the pytest arguments of ``aniso run`` and the API)."""
    import re
    import unicodedata

    word = str(arg).split("=", 1)[0]
    found = re.fullmatch(r"([\u2010-\u2015\u2212\ufe58\ufe63\uff0d-]+)(aniso-[\w-]+)", word, re.IGNORECASE)
    if found is None:
        return None
    dashes, name = found.groups()
    right = "--" + name.lower()
    other = next((c for c in dashes if c != "-"), None)
    if other is not None:
        return (f"{word!r} begins with {unicodedata.name(other, 'a dash').lower()} (U+{ord(other):04X}), not two "
                f"hyphens (an editor's or a document's dash?): write {right}")
    if name != name.lower() and dashes == "--":
        return f"{word}: the setting options are lower case, {right}"
    return None


def ini_settings_problem(inipath) -> str | None:
    """The one line for aniso settings written as keys of pytest's configuration file ``inipath`` (``aniso_models =
    gpt2`` under ``[pytest]`` of a pytest.ini, tox.ini or setup.cfg, ``[tool.pytest.ini_options]`` or
    ``[tool.pytest]`` of a pyproject.toml, ``[pytest]`` of a pytest.toml), which pytest would pass over with an
    "Unknown config option" warning while the run went ahead without them: settings come from ``--aniso-*``
    options (in the file: ``addopts``) or ``ANISO_*`` variables. None when there are none, or the file cannot be
    read (pytest says so itself)."""
    import configparser

    if inipath is None:
        return None
    path = str(inipath)
    try:
        if path.endswith(".toml"):
            import tomllib

            with open(path, "rb") as f:
                doc = tomllib.load(f)
            tool = doc.get("tool", {}).get("pytest", {}) if path.endswith("pyproject.toml") else doc.get("pytest", {})
            tables = [tool.get("ini_options", {}), tool] if isinstance(tool, dict) else []
            keys = [k for t in tables if isinstance(t, dict) for k in t]
        else:
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path, encoding="utf-8")
            keys = [k for section in ("pytest", "tool:pytest") if parser.has_section(section)
                    for k in parser.options(section)]
    except (OSError, ValueError, configparser.Error):
        return None
    named = [k for k in keys if k.lower().startswith(("aniso_", "aniso-"))]
    if not named:
        return None
    key = named[0]
    option = "--" + key.lower().replace("_", "-")
    variable = key.upper().replace("-", "_")
    more = f" (and {len(named) - 1} more)" if len(named) > 1 else ""
    return (f"{path}: {key}{more}: aniso settings are not read as keys of pytest's configuration file; write them "
            f"as options, addopts = {option} VALUE, or set {variable}")


def options_taken_as_paths(args) -> str | None:
    """The one-line refusal of pytest's file arguments (``config.args``) that are setting options: pytest takes
    whatever follows ``--`` as files or folders to collect, so ``pytest claims/ -- --aniso-n-sequences 8`` (the form
    of ``aniso run MODEL -- OPTIONS``, which alone passes options on after ``--``) would end in "file or directory
    not found: --aniso-n-sequences". None when no file argument begins with ``--aniso-``."""
    option = next((str(a) for a in args if str(a).lower().startswith("--aniso-") or option_form_problem(a)), None)
    if option is None:
        return None
    quoted = quoted_option(option, [option.split()[0]])  # '--aniso-n-sequences 8' as one word: a file for pytest
    if quoted is not None:
        return f"{quoted} (pytest took it for a file to collect)"
    form = option_form_problem(option)
    if form is not None:
        return f"{form}; pytest took this one for a file to collect"
    return (f"{option} was given after `--`, where pytest takes files and folders to collect: give pytest's options "
            "before `--` (only `aniso run MODEL -- OPTIONS` passes options on after it)")


def setting_options() -> list[tuple[str, str, bool, str]]:
    """The command-line option of every setting, the one table the pytest plugin and ``aniso run``'s reading of the
    pytest arguments share: ``(name, option, is_flag, help)``; a flag takes no value, every other option one text
    value that :meth:`Settings.from_sources` parses (``texts``)."""
    return [(name, "--aniso-" + name.replace("_", "-"), "bool" in str(Settings.__dataclass_fields__[name].type),
             f"{help_text} (env ANISO_{name.upper()})") for name, help_text in SETTING_HELP.items()]


#: Words a user may give a switch (``--aniso-no-cache false``) meaning a truth value.
_TRUTH_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f")


def flag_value_problem(args: Sequence[str]) -> str | None:
    """Why ``args`` (pytest's arguments) give a setting's switch a value, or None: ``--aniso-no-cache=0`` (argparse
    would say "ignored explicit argument") or ``--aniso-no-cache false`` (pytest would look for a test file named
    ``false``). The sentence names the option and the value, says the switch takes none, and how to have it on or
    off."""
    switches = {option: name for name, option, flag, _ in setting_options() if flag}
    args = [str(a) for a in args]
    for i, arg in enumerate(args):
        if arg == "--":
            break
        option, eq, value = arg.partition("=")
        if option in switches and eq:
            given = value
        elif arg in switches and i + 1 < len(args) and args[i + 1].strip().lower() in _TRUTH_WORDS:
            given = args[i + 1]
        else:
            continue
        name = switches[option]
        return (f"{option} is a switch and takes no value (got {given!r}): give {option} alone to "
                f"{SETTING_HELP[name].split(' (')[0]}, or leave it out for the default (the variable "
                f"ANISO_{name.upper()} takes true or false)")
    return None


def _given_before(option_strings: Sequence[str]) -> str:
    """Where the first of an option given twice to pytest came from, when not from the command line: "the
    variable PYTEST_ADDOPTS" (it holds the option), "the ini file's addopts" (the command line, ``sys.argv``, holds
    it once), else ""."""
    import shlex
    import sys

    def count(words) -> int:
        return sum(str(w).split("=", 1)[0] in option_strings for w in words)

    text = os.environ.get("PYTEST_ADDOPTS", "")
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if count(words):
        return "the variable PYTEST_ADDOPTS"
    if "pytest" in os.path.basename(sys.argv[0] or "") or (sys.argv[0] or "").endswith("pytest/__main__.py"):
        if count(sys.argv[1:]) == 1:
            return "the ini file's addopts"
    return ""


class _Once(argparse.Action):
    """argparse's ``store`` for a setting's option, refusing a second occurrence of the option in one command line
    (``--aniso-n-sequences 16 --aniso-n-sequences 1``), which argparse would let the last win silently: raises
    :class:`argparse.ArgumentError` naming the option and both values, which the parser reports as its usage error
    (pytest's ``UsageError``; ``aniso run``'s one line)."""

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        if before is not None:
            where = _given_before(self.option_strings)
            if where:
                shown = "" if self.nargs == 0 else f" ({before!r} from {where}, then {values!r})"
                option = next(o for o in self.option_strings if o.startswith("--aniso-"))
                variable = "ANISO_" + option[len("--aniso-"):].replace("-", "_").upper()
                raise argparse.ArgumentError(self, f"given twice{shown}; give it once: pytest puts {where} before "
                                                   f"the command line, so a default there cannot be changed on it; "
                                                   f"set the default with the variable {variable} instead")
            shown = "" if self.nargs == 0 else f" ({before!r}, then {values!r})"
            raise argparse.ArgumentError(self, f"given twice{shown}; give it once")
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


class _OnceFlag(_Once):
    """argparse's ``store_true`` for a setting's flag, refusing a second occurrence (:class:`_Once`)."""

    def __init__(self, option_strings, dest, default=None, required=False, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, required=required, help=help)


def add_setting_options(add, *, by_name: bool = False) -> None:
    """Register every setting's option (:func:`setting_options`) with ``add``: argparse's ``add_argument`` or
    pytest's ``addoption``, which take the same arguments. Each may be given once (a repeated option is a usage error
    naming it, :class:`_Once`) and defaults to None (not given); a flag takes no value, every other option one text
    that :meth:`Settings.from_sources` parses. ``by_name``: stored under the setting's name (a parser of the settings
    alone) rather than argparse's default (``aniso_<name>``, which no other pytest plugin's option takes). The help
    texts' ``%`` are escaped (argparse formats help with ``%``: "2%" would break ``pytest --help``)."""
    for name, option, flag, help_text in setting_options():
        add(option, action=_OnceFlag if flag else _Once, default=None, help=help_text.replace("%", "%%"),
            **({"dest": name} if by_name else {}))


#: The weight files of a model folder (Transformers, ONNX, GGUF); aniso's own entries are ``<32 hex>.safetensors``.
_MODEL_SUFFIXES = (".safetensors", ".bin", ".onnx", ".gguf")
_CACHE_ENTRY = re.compile(r"[0-9a-f]{32}\.(safetensors|json)")


def _folder_of_another_kind(folder: str) -> str | None:
    """What ``folder`` is, where it is no folder for the statistics cache, read from one listing of it: "a Hugging
    Face hub cache (it holds models--org--name/)" (a repository folder ``models--…``, ``datasets--…`` or
    ``spaces--…``), or "a model's folder (it holds config.json)" (``config.json`` or weights, :data:`_MODEL_SUFFIXES`,
    that are no statistics cache entry: ``<key>.safetensors``, ``<key>.json``, the key 32 hex digits; a data file
    whose sidecar an interrupted write left out is one too: :func:`aniso.common.versions.cache_key`); else None
    (also where it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            listed = [(e.name, e.is_dir(), e.is_file()) for e in entries]
    except OSError:
        return None
    hub = next((name for name, is_dir, _ in listed
                if is_dir and name.startswith(("models--", "datasets--", "spaces--"))), None)
    if hub is not None:
        return f"a Hugging Face hub cache (it holds {hub}/)"
    model = next((name for name, _, is_file in listed if is_file and not _CACHE_ENTRY.fullmatch(name)
                  and (name == "config.json" or name.endswith(_MODEL_SUFFIXES))), None)
    return None if model is None else f"a model's folder (it holds {model})"


def _check_writable_folder(path: str, where: str, make: bool = True) -> str | None:
    """Create ``path`` if needed and write and remove a probe file in it; returns the outermost folder this created
    (``path`` or one above it; None where ``path`` was there), for a run that ends having written nothing in it to
    remove again (:func:`remove_empty_folders`). With ``make=False`` nothing is created (a cache folder is made
    only when its first entry is written): the probe goes into ``path``, or where it is missing into the nearest
    folder on its way that exists (:func:`aniso.common.files.unwritable_path`), and None is returned. Raises
    ValueError (one line, ``where`` first) if it is a file, a symbolic link to nothing (it or a folder on its way),
    or cannot be created or written."""
    import tempfile

    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{where}: {path} is a file; it must name a folder (it is created if missing)")
    for link in (path, *map(str, PurePath(path).parents)):
        if os.path.islink(link) and not os.path.exists(link):
            try:
                os.stat(link)
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # no folder can be created where the link is: it must go
                    raise ValueError(f"{where}: {link} is a symbolic link to itself, or a loop of links; remove it, "
                                     "or point the setting at a writable folder") from None
            raise ValueError(f"{where}: {link} is a symbolic link to {os.readlink(link)}, which does not exist; "
                             "create that folder, or point the setting at a writable folder")
    if not make:
        from .files import unwritable_path

        problem = unwritable_path(path, "folder, made")
        if problem is not None:
            raise ValueError(f"{where}: {path}: {problem}; point it at a writable folder")
        return None
    made = None
    for folder in (path, *map(str, PurePath(path).parents)):
        if os.path.lexists(folder):
            break
        made = folder
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".aniso-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{where}: cannot write in {path} ({exc.strerror or exc}); point it at a writable folder")\
            from None
    return made


def remove_empty_folders(path: str | os.PathLike, made: str | os.PathLike | None) -> None:
    """Remove ``path`` and the folders above it up to ``made`` (the outermost one :func:`_check_writable_folder`
    created; nothing where None), each only while it is empty: a run stopped before it wrote anything there leaves
    no empty folder behind. A folder that cannot be removed (it holds a file) stops the walk."""
    if made is None:
        return
    made = os.path.abspath(made)
    folder = os.path.abspath(path)
    while True:
        try:
            os.rmdir(folder)
        except OSError:
            return
        if folder == made or os.path.dirname(folder) == folder:
            return
        folder = os.path.dirname(folder)


SETTING_HELP = {
    "profile": "run profile setting every sample size at once: " + "; ".join(
        f"{name}: " + ", ".join(f"{k}={v}" for k, v in sizes.items()) for name, sizes in PROFILES.items())
    + f" (default {DEFAULT_PROFILE}; a size given explicitly overrides its profile)",
    "registry": "model registry file; when set, a relative path is taken from the working folder (under pytest "
    "too, whatever its root folder) and must be a file there; unset: models.yaml in the working folder (pytest: "
    "in its root folder), else the source tree's",
    "corpus": "text corpus file (WikiText wiki.valid.tokens layout); default: datasets if the hub is reachable, "
    "else the embedded pydoc_data.topics fallback",
    "n_sequences": "paragraphs sampled from the corpus",
    "max_length": "tokens per sequence at most",
    "batch_size": "sequences per forward pass",
    "seed": "seed of the corpus sample and the reservoirs",
    "reservoir_size": "vectors kept per layer for TwoNN (at least 128, the fewest it means anything from) and "
                      "sampled-pair estimates",
    "svd_batch_size": "vectors per batch for the batch-wise SVD anisotropy (Razzhigaev et al.: >= 4096; at least 64: "
                      "a centred batch of b vectors has rank <= b - 1, its anisotropy >= 1/(b - 1) by construction; "
                      "below a layer's width the batches stay rank-limited, biased up, and the run says so)",
    "cache_dir": "folder of the statistics cache (a relative one from the working folder)",
    "no_cache": "recompute statistics, ignoring the cache",
    "report_dir": "folder under which each run writes <run>/results.json and report.html (a relative one from the "
                  "working folder)",
    "device": "torch device of the forward passes and the statistics: auto (default: cuda if present, else mps, "
    "else cpu), cpu, cuda, cuda:N or mps",
    "block_seeds": "number of seeds of the untrained-block sweep, each seeding its layer initialisation, inputs and "
                   "bias direction (G §4)",
    "block_sequences": "input sequences per bias norm in the untrained-block sweep (G §4.1: 16)",
    "block_seq_len": "embeddings per input sequence in the untrained-block sweep (G §4.1: 512)",
    "n_bias_norms": "number of bias norms N in the untrained-block sweep: 0, then geometric from 0.5 to 128",
    "speech_dir": "folder of .flac/.wav recordings for speech models (e.g. LibriSpeech); default: LibriSpeech via "
    "datasets if the hub is reachable",
    "n_clips": "recordings sampled from the speech folder",
    "image_dir": "folder of .jpg/.png photographs for vision models (e.g. Caltech-101); default: the sample "
    "photographs of scikit-image (fallback)",
    "n_images": "photographs sampled from the image folder",
    "max_image_pixels": "largest photograph read, in pixels (width x height); a larger file, or a decompression "
    "bomb, is skipped with a warning naming it, read from its header before it is decoded",
    "models_dir": "folder of local model files (e.g. ../shared/models) that registry sources of kind onnx name "
    "paths relative to",
    "train_text": "text file the suite's text miniatures pre-train on (e.g. ../shared/data/text/enwik8_first100000bytes)",
    "miniature_steps": "optimiser steps of each text miniature's pre-training run (checkpoints at 0 and powers of two)",
    "miniature_width": "hidden size of the text miniatures (4 layers, 4 heads)",
    "miniature_batch": "sequences of 128 bytes per optimiser step of the text miniatures",
    "shards": "read statistics that `torchrun --nproc-per-node N -m aniso.cli extract MODEL` extracted over N "
    "processes (their reservoir sample and SVD batches differ from one process's, so they are cached apart); 1: "
    "extract in this process",
    "release_host_memory": "give freed host memory back to the system (glibc malloc_trim) after a batch that left "
    "the resident set 2% (at least 16 MiB) above its level at the end of the first batch after the last release, so "
    "that peak RSS does not creep with the number of batches; false: leave the C allocator as it is",
    "n_bootstrap": "bootstrap resamples of the inputs behind each verdict's confidence interval (0: none); a verdict "
    "whose 95% interval straddles its threshold is reported as fragile",
    "models": "which registry models the claims run on: 'small' (default: every model that is small enough to "
    "download and run on a laptop, one seed per miniature recipe), 'paper' (also the papers' large hub models), "
    "'all', a tag (e.g. 'seed-replica': the miniatures' other seeds), or comma-separated registry ids",
    "claims": "comma-separated claim ids or prefixes (e.g. 'G.', 'R.decoder-bell-profile') the run measures; empty: "
    "every claim (a value of blanks only is refused)",
    "twin": "the manifest (JSON) of a twin run, written by `aniso run ID --twin`: the models are twins of the registry's "
    "hub rows (random weights, imported into a temporary hub cache), their verdicts labelled 'twin: random weights, "
    "code path only', never judged against the registry's records nor counted as findings",
    "twonn_batches": "R's intrinsic-dimension protocol (R §2.4): TwoNN on this many disjoint uniformly random "
    "batches of svd_batch_size (4096) vectors drawn from every token of the corpus, mean +- std over the batches, per "
    "layer (0: TwoNN of one reservoir of reservoir_size vectors only; memory: batches x 4096 x d float32 per layer)",
    "second_order_max_dim": "largest vector dimension for which the d x d second moment, SVD anisotropy and TwoNN "
    "reservoir are kept (CNN maps, one vector per image, always get first-order statistics only)",
}


def settings_table() -> str:
    """The settings as a Markdown table, made from their own definitions (:class:`Settings`, :data:`PROFILES`,
    :data:`SETTING_HELP`): option, variable, default (each profile's where the profile sets it) and meaning, one row
    per field in definition order. The documentation's settings page is this table."""
    defaults = Settings.__dataclass_fields__
    rows = ["| option | variable | default | meaning |", "|---|---|---|---|"]
    for f in fields(Settings):
        if f.name in PROFILES[DEFAULT_PROFILE]:
            default = ", ".join(f"{name}: {sizes[f.name]:,}" for name, sizes in PROFILES.items())
        elif f.name == "cache_dir":
            default = "`$XDG_CACHE_HOME/aniso`, else `~/.cache/aniso`"
        elif f.name == "registry":
            default = "`models.yaml` in the working folder, else the source tree's"
        else:
            value = defaults[f.name].default
            default = "—" if value is None or value == "" else f"`{str(value).lower() if isinstance(value, bool) else value}`"
        meaning = SETTING_HELP[f.name].replace("|", "\\|")
        rows.append(f"| `--aniso-{f.name.replace('_', '-')}` | `ANISO_{f.name.upper()}` | {default} | {meaning} |")
    return "\n".join(rows) + "\n"
