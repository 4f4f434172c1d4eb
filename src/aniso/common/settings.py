"""Run settings: where the registry, corpus, cache and reports are, and the sample sizes.

Every setting has a pytest option (``--aniso-...``) and an environment
variable (``ANISO_...``); the option wins. A run profile (:data:`PROFILES`,
setting ``profile``) picks consistent sample sizes for everything at once:
``quick`` (the default: the whole suite on a 2-core CPU in minutes) or
``paper`` (the papers' own sizes). A setting given explicitly overrides its
profile's value.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields

__all__ = ["Settings", "SETTING_HELP", "PROFILES", "DEFAULT_PROFILE"]

#: Sample sizes of each run profile. ``quick``: what CI and a first run use, every claim at a size that runs on
#: a 2-core laptop. ``paper``: the papers' sizes — the whole WikiText-103 validation set (G §3.1: "the validation
#: set", every paragraph) at up to 512 tokens, every recording, and G §4.1's 16 x 512 block inputs. Photographs:
#: 192 in both, since the suite's miniatures train on the other half of the image folder. Both sweep 5 seeds and
#: 21 bias norms (G §4: "several seeds"; >= 20 norms). The text miniatures (byte-level BERT and GPT-2, 4 layers)
#: pre-train for ``miniature_steps`` steps of ``miniature_batch`` x 128 bytes at width ``miniature_width``.
#: ``study``: ``quick``, with the text miniatures pre-trained 4x longer (2,048 steps), the budget at which the budget
#: study (docs/studies/miniature-budget.md) found every training-dynamics claim decided for the miniature GPT-2 (the
#: miniature BERT's Q/K claims need 4,096 steps).
PROFILES: dict[str, dict[str, int]] = {
    "quick": dict(n_sequences=256, max_length=128, n_clips=32, n_images=192, block_seeds=5, block_sequences=2,
                  block_seq_len=512, n_bias_norms=21, miniature_steps=512, miniature_width=128, miniature_batch=16,
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


def _where(name: str) -> str:
    """How a message names setting ``name``: ``setting seed (ANISO_SEED, --aniso-seed)``."""
    return f"setting {name} (ANISO_{name.upper()}, --aniso-{name.replace('_', '-')})"


def _default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "aniso")


@dataclass(frozen=True)
class Settings:
    """Settings of one run (see :data:`SETTING_HELP`)."""

    profile: str = DEFAULT_PROFILE
    registry: str = "models.yaml"
    corpus: str | None = None
    n_sequences: int = _QUICK["n_sequences"]
    max_length: int = _QUICK["max_length"]
    batch_size: int = 16
    seed: int = 0
    reservoir_size: int = 4096
    svd_batch_size: int = 4096
    cache_dir: str = field(default_factory=_default_cache)
    no_cache: bool = False
    report_dir: str = "reports"
    device: str = "auto"
    block_seeds: int = _QUICK["block_seeds"]
    block_sequences: int = _QUICK["block_sequences"]
    block_seq_len: int = _QUICK["block_seq_len"]
    n_bias_norms: int = _QUICK["n_bias_norms"]
    speech_dir: str | None = None
    n_clips: int = _QUICK["n_clips"]
    image_dir: str | None = None
    n_images: int = _QUICK["n_images"]
    max_image_pixels: int = 50_000_000
    models_dir: str | None = None
    second_order_max_dim: int = 8192
    train_text: str | None = None
    miniature_steps: int = _QUICK["miniature_steps"]
    miniature_width: int = _QUICK["miniature_width"]
    miniature_batch: int = _QUICK["miniature_batch"]
    shards: int = 1
    release_host_memory: bool = True
    n_bootstrap: int = 1000
    twonn_batches: int = _QUICK["twonn_batches"]
    models: str = "small"
    claims: str = ""
    twin: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):  # values given in code (the Python API) are checked as the variables are parsed
            value = getattr(self, f.name)
            if f.type in ("int", int) and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{_where(f.name)} must be an integer, got {value!r} ({type(value).__name__})")
            if f.type in ("bool", bool) and not isinstance(value, bool):
                raise ValueError(f"{_where(f.name)} must be true or false, got {value!r}")
        if self.profile not in PROFILES:
            raise ValueError(f"{_where('profile')} must be one of {sorted(PROFILES)}, got {self.profile!r}")
        for name in ("n_sequences", "max_length", "batch_size", "block_seeds", "block_sequences", "n_clips", "n_images",
                     "max_image_pixels", "second_order_max_dim", "miniature_steps", "miniature_width",
                     "miniature_batch", "shards"):
            if getattr(self, name) < 1:
                raise ValueError(f"{_where(name)} must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"{_where('seed')} must be >= 0, got {self.seed}")
        if self.reservoir_size < 3:
            raise ValueError(f"{_where('reservoir_size')} must be >= 3, got {self.reservoir_size}")
        if self.block_seq_len < 2 or self.n_bias_norms < 3:
            raise ValueError(f"{_where('block_seq_len' if self.block_seq_len < 2 else 'n_bias_norms')} must be >= "
                             f"{2 if self.block_seq_len < 2 else 3}, got "
                             f"{self.block_seq_len if self.block_seq_len < 2 else self.n_bias_norms}")
        if self.twonn_batches < 0:
            raise ValueError(f"{_where('twonn_batches')} must be >= 0, got {self.twonn_batches}")
        if self.n_bootstrap < 0:
            raise ValueError(f"{_where('n_bootstrap')} must be >= 0, got {self.n_bootstrap}")
        if not self.models.strip():
            raise ValueError("setting models must name a model set, a tag or registry ids")
        if self.svd_batch_size < 2:
            raise ValueError(f"{_where('svd_batch_size')} must be >= 2, got {self.svd_batch_size}")
        from .devices import resolve_device

        try:  # frozen: the resolved device replaces "auto" once, so every stage and every report name the same one
            object.__setattr__(self, "device", resolve_device(self.device))
        except ValueError as exc:
            raise ValueError(f"setting device: {exc}") from None

    @classmethod
    def from_sources(cls, options: dict[str, object] | None = None, environ: dict[str, str] | None = None) -> "Settings":
        """Build settings from explicit options (None = not given), then ``ANISO_<NAME>`` variables, then the
        profile's sizes (:data:`PROFILES`; the profile itself comes from option or ``ANISO_PROFILE``), then defaults.

        Raises ValueError naming the variable when one does not parse (an integer that is not one; a boolean that is
        none of 1/true/yes/on, 0/false/no/off), or the profile when it is unknown.
        """
        options = options or {}
        environ = os.environ if environ is None else environ
        profile = options.get("profile") or environ.get("ANISO_PROFILE") or DEFAULT_PROFILE
        if profile not in PROFILES:
            raise ValueError(f"profile {profile!r} is not one of {sorted(PROFILES)}")
        values: dict[str, object] = dict(PROFILES[profile], profile=profile)
        for f in fields(cls):
            given = options.get(f.name)
            if given is not None:
                values[f.name] = given
                continue
            env = environ.get(f"ANISO_{f.name.upper()}")
            if env is None or env == "":
                continue
            if f.type in ("int", int):
                try:
                    values[f.name] = int(env)
                except ValueError:
                    raise ValueError(f"environment variable ANISO_{f.name.upper()}={env!r} is not an integer") from None
            elif f.type in ("bool", bool):
                word = env.strip().lower()
                if word not in _TRUE + _FALSE:
                    raise ValueError(f"environment variable ANISO_{f.name.upper()}={env!r} is neither true "
                                     f"({', '.join(_TRUE)}) nor false ({', '.join(_FALSE)})")
                values[f.name] = word in _TRUE
            else:
                values[f.name] = env
        return cls(**values)

    def check_paths(self) -> None:
        """Check the paths a run reads or writes before it starts, so that a wrong one gives one line instead of a
        traceback minutes later.

        ``corpus`` and ``train_text`` must be files (not folders), ``speech_dir``, ``image_dir`` and ``models_dir``
        folders (when set); ``cache_dir`` must be a folder this process can create and write files in (it also holds
        unpacked package weights, joined GGUF files and the miniatures' checkpoints, which a run needs, so a
        read-only cache is an error rather than a silent run without it). Raises ValueError naming the setting, its
        variable and option, and the path.
        """
        for name in ("corpus", "train_text"):
            value = getattr(self, name)
            if value and os.path.isdir(value):
                raise ValueError(f"{_where(name)}: {value} is a folder; it must name a text file")
        for name in ("speech_dir", "image_dir", "models_dir"):
            value = getattr(self, name)
            if value and os.path.exists(value) and not os.path.isdir(value):
                raise ValueError(f"{_where(name)}: {value} is a file; it must name a folder")
        _check_writable_folder(self.cache_dir, _where("cache_dir"))

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


def _check_writable_folder(path: str, where: str) -> None:
    """Create ``path`` if needed and write and remove a probe file in it; raises ValueError (one line, ``where``
    first) if it is a file or cannot be created or written."""
    import tempfile

    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{where}: {path} is a file; it must name a folder (it is created if missing)")
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".aniso-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{where}: cannot write in {path} ({exc.strerror or exc}); point it at a writable folder")\
            from None


SETTING_HELP = {
    "profile": "run profile setting every sample size at once: " + "; ".join(
        f"{name}: " + ", ".join(f"{k}={v}" for k, v in sizes.items()) for name, sizes in PROFILES.items())
    + f" (default {DEFAULT_PROFILE}; a size given explicitly overrides its profile)",
    "registry": "model registry file",
    "corpus": "text corpus file (WikiText wiki.valid.tokens layout); default: datasets if the hub is reachable, "
    "else the embedded pydoc_data.topics fallback",
    "n_sequences": "paragraphs sampled from the corpus",
    "max_length": "tokens per sequence at most",
    "batch_size": "sequences per forward pass",
    "seed": "seed of the corpus sample and the reservoirs",
    "reservoir_size": "vectors kept per layer for TwoNN and sampled-pair estimates",
    "svd_batch_size": "vectors per batch for the batch-wise SVD anisotropy (Razzhigaev et al.: >= 4096)",
    "cache_dir": "folder of the statistics cache",
    "no_cache": "recompute statistics, ignoring the cache",
    "report_dir": "folder under which each run writes <run>/results.json and report.html",
    "device": "torch device of the forward passes and the statistics: auto (default: cuda if present, else mps, "
    "else cpu), cpu, cuda, cuda:N or mps",
    "block_seeds": "seeds (layer initialisation, inputs, bias direction) of the untrained-block sweep (G §4)",
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
    "download and run on a laptop), 'paper' (also the papers' large hub models), 'all', a tag, or comma-separated "
    "registry ids",
    "claims": "comma-separated claim ids or prefixes (e.g. 'G.', 'R.decoder-bell-profile') the run measures; empty: "
    "every claim",
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
        else:
            value = defaults[f.name].default
            default = "—" if value is None or value == "" else f"`{str(value).lower() if isinstance(value, bool) else value}`"
        meaning = SETTING_HELP[f.name].replace("|", "\\|")
        rows.append(f"| `--aniso-{f.name.replace('_', '-')}` | `ANISO_{f.name.upper()}` | {default} | {meaning} |")
    return "\n".join(rows) + "\n"
