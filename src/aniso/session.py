"""One claims run: what its claim tests share, how they ask for statistics and state verdicts, and what the run
writes at the end (``results.json``, ``report.html``, the console table).

The pytest plugin (:mod:`aniso.pytest_plugin`) only maps pytest's hooks onto this module: it builds an
:class:`AnisoSession` at configuration, gives each claim test a :class:`ClaimContext`, and calls
:meth:`AnisoSession.record` and :meth:`AnisoSession.finish`.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .judge.results import (ClaimResult, NotYetExecutable, RegistryRow, ResultsDocument, Sensitivity, Uncertainty,
                            dump_results, file_digest, model_layers, provenance, verdict_counts,
                            write_results)
from .extract.architecture_check import ArchitectureChecks
from .extract.modalities import modality_of
from .registry.catalog import get_claim, not_yet_executable

#: The false discovery rate of the claims adjusted across a run's models, and the level of their tests.
ADJUST_ALPHA = 0.05
#: Inputs below which a bootstrap's interval is said to be unreliable beside it (the percentile bootstrap's
#: coverage falls short at small n: Davison & Hinkley 1997, §5.3).
MIN_BOOTSTRAP_UNITS = 30
#: The verdict of an adjusted claim's test whose p-value its family decides, until the end of the run.
PENDING = "pending adjustment"
from .stats.dynamics import Series, SeriesProvider
from .stats.pipeline import BlockSweepProvider, StatsProvider
from .registry.entries import ModelEntry, Registry
from .common.settings import DEFAULT_SEED, PROFILES, Settings
from .common.signals import said_on_signal
from .sources import InputsMissing, ModelRefused, ModelUnavailable
from .stats.results import ModelStats, copies_note, max_length_note, svd_batch_note
from .judge.verdicts import (DOES_NOT_HOLD, ERROR, EXPECTED_NOT_TO_HOLD, HOLDS, SKIPPED, UNDERPOWERED,
                              UNEXPECTEDLY_HOLDS, Decision, Outcome, decide)

__all__ = ["AnisoSession", "ClaimContext", "Skip", "fmt", "fit", "fragile_text", "twin_summary", "verdict_table",
           "new_findings", "family_members"]


class Skip(Exception):
    """A claim test cannot run here; the message says why (the plugin turns it into a pytest skip)."""


def fmt(v: Any) -> str:
    """A number as the console and messages show it (4 significant digits for floats)."""
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def fragile_text(u: Uncertainty) -> str:
    """A fragile verdict's interval in words, e.g. ``"highest layer avg cos 0.17, 95% percentile-bootstrap CI over
    the inputs [0.15, 0.21] vs < 0.2"``."""
    return (f"{u.statistic} {fmt(u.value)}, {u.name} [{fmt(u.low)}, {fmt(u.high)}] vs "
            f"{u.holds_if} {fmt(u.threshold)}, holds in {fmt(100 * (u.holds_share or 0.0))}% of resamples")


def twin_summary(manifest: dict) -> str:
    """The console line that says a run measured twins: the label, the rows, the library versions."""
    rows = manifest.get("rows") or {}
    refused = manifest.get("refused") or {}
    return (f"TWIN RUN ({manifest.get('label')}): {len(rows)} twin(s) of registry hub rows, built here with "
            f"transformers {manifest.get('transformers')}, imported into a temporary hub cache and loaded offline; the "
            "verdicts say that the code path runs, nothing about the papers' models"
            + (f"; refused: {', '.join(sorted(refused))}" if refused else ""))


def family_members(registry: Registry, entry: ModelEntry) -> list[ModelEntry]:
    """The seeds of ``entry``'s architecture and recipe in ``registry``: the entries with checkpoints and the same
    family, role and modality, ``entry`` first, then registry order."""
    same = [e for e in registry if e.checkpoints is not None and e.family == entry.family and e.role == entry.role
            and e.modality == entry.modality]
    return [entry] + [e for e in same if e.id != entry.id]


def _same_family(expected, family: int) -> bool:
    """Whether a record binds a run whose adjusted claim has ``family`` tests: always, unless the record names the
    family it was decided in (``family``) and this is another."""
    return expected is None or expected.family is None or expected.family == family


#: A result's ``record_check`` where its test reports none of the record's numbers: another test of the claim may
#: (:meth:`AnisoSession._check_record_keys` fails the run where none does).
_REPORTS_NONE = "record's numbers not compared: this test reports none of them"


def _same_seeds(expected, registry: Registry, entry: ModelEntry) -> bool:
    """Whether a record binds a run over ``entry``'s seeds: always, unless the record names the seeds it was decided
    on (``seeds``) and this run's family (:func:`family_members`) has others."""
    if expected is None or expected.seeds is None:
        return True
    return sorted(expected.seeds) == sorted(m.id for m in family_members(registry, entry))


def nan_note(measured) -> str:
    """The words naming the measured numbers of a verdict (``measured``, the dict given to
    :meth:`ClaimContext.conclude`; its top-level values) that are NaN or infinite (both written null in
    results.json), or "" when none is (or it is no dict)."""
    if not isinstance(measured, dict):
        return ""
    found: dict[str, list[str]] = {"NaN (not a number; null in results.json)": [],
                                   "infinite (null in results.json)": []}
    for key, value in measured.items():
        try:
            if not isinstance(value, (str, bytes, bool, list, dict)) and not math.isfinite(value):
                found["NaN (not a number; null in results.json)" if math.isnan(value)
                      else "infinite (null in results.json)"].append(str(key))
        except (TypeError, ValueError, OverflowError):
            pass
    said = [f"{', '.join(keys)} {'is' if len(keys) == 1 else 'are'} {what}" for what, keys in found.items() if keys]
    if not said:
        return ""
    return f"measured {' and '.join(said)}: the verdict was given beside it, check that the rule does not rest on it"


def _plain_value(value: Any, where: str) -> Any:
    """A measured value of :meth:`ClaimContext.conclude` as the results file holds it: a bool, int, float, str or
    None, or a list or dict of these (numpy scalars and 0-d arrays or tensors as their Python number). Raises
    TypeError naming ``where`` for anything else: an array or tensor of several values, a complex number, an object
    (each would fail the results file's writing at the end of the run, losing every verdict)."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and type(value) not in (int, float):
            return float(value) if isinstance(value, float) else int(value)  # (numpy.float64: a float subclass)
        return value
    if isinstance(value, dict):
        return {str(k): _plain_value(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    size = getattr(value, "size", None)
    size = size() if callable(size) else size  # a torch tensor's size is a method
    if isinstance(value, np.generic) or getattr(value, "ndim", None) == 0:
        item = value.item()
        if isinstance(item, (bool, int, float)):
            return item
    shape = getattr(value, "shape", None)
    what = (f"an array of shape {tuple(shape)}" if shape is not None and getattr(value, "ndim", 0) else
            f"{value!r:.40} ({type(value).__name__})")
    raise TypeError(f"claim.conclude: {where} is {what}; a measured value is a number, a bool, a text or None (or a "
                    "list or dict of these): give e.g. float(x) or float(x.mean())")


def _numbers(measured: dict[str, Any]) -> str:
    return ", ".join(f"{k}={fmt(v)}" for k, v in measured.items() if not isinstance(v, (list, dict)))


def _cut_between(signum: int, run_dir: Path) -> str | None:
    """The one line of a run that a signal ends while its results and report are written: where ``results.json`` is
    (written whole, atomically) and how to make the report it lacks; None while there is no results file yet."""
    import signal

    results = run_dir / "results.json"
    if not results.is_file() or (run_dir / "report.html").is_file():
        return None
    return (f"aniso: ended by {signal.Signals(signum).name}: {results} is written whole, report.html was not "
            f"(make it with: aniso report {results})")


def _new_run_folder(parent: Path, now: _dt.datetime | None = None) -> Path:
    """Create and return ``parent/run-<YYYYmmdd-HHMMSS>``, or ``...-2``, ``-3``, ... when that name is taken: each
    name is claimed with an atomic ``mkdir`` (``exist_ok=False``), so runs started in the same second, in other
    processes included, never write into one folder. Raises OSError if ``parent`` cannot be written."""
    stamp = f"run-{(now or _dt.datetime.now()).strftime('%Y%m%d-%H%M%S')}"
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir(exist_ok=False)
            return folder
        except FileExistsError:
            continue
    raise OSError(f"{parent}: 9,999 report folders named {stamp}-*; remove some")


class ReportRefused(ValueError):
    """The report writer refused a run's results.json (which is kept): one line naming the cause and the file."""


@dataclass
class AnisoSession:
    """Everything one claims run shares: settings, registry, statistics, experiments and results."""

    settings: Settings
    registry: Registry
    root: Path
    provider: StatsProvider
    blocks: BlockSweepProvider
    architectures: ArchitectureChecks
    series: SeriesProvider
    results: list[ClaimResult] = field(default_factory=list)
    report_path: Path | None = None
    must_run_failures: list[str] = field(default_factory=list)
    absorbed: list[ResultsDocument] = field(default_factory=list)
    left_out: list[ModelEntry] = field(default_factory=list)
    stopped: str | None = None
    #: The manifest of a twin run (setting ``twin``), else None: see :meth:`twin_manifest`.
    twin: dict | None = None
    #: For each claim whose p-values are adjusted across the run's models (:attr:`aniso.registry.catalog.Claim.
    #: adjusted`), the number of its tests collected in this run: the largest its family can be.
    family_sizes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(cls, settings: Settings, registry: Registry, root: Path) -> "AnisoSession":
        """A session with its statistics provider, block sweeps, architecture checks and checkpoint series, over
        the registry entries of the model set ``settings.models`` (:meth:`~aniso.registry.entries.Registry.model_set`; raises
        its RegistryError)."""
        registry, left_out = registry.model_set(settings.models)
        provider = StatsProvider(settings, registry)
        return cls(settings, registry, root, provider, BlockSweepProvider(settings), ArchitectureChecks(settings.seed),
                   SeriesProvider(provider), left_out=left_out, twin=cls.twin_manifest(settings, registry.path))

    def left_out_hint(self) -> str:
        """How to run the registry models this run left out: "run one with: aniso run ID; all of them with: pytest
        claims --aniso-models all", with the run's registry (``--registry`` / ``--aniso-registry PATH``) when it is
        not the default one (:func:`aniso.registry.locate.registry_path` of nothing given), so that the commands run
        the rows of this registry; a twin run's say ``--twin`` and name the registry its twins were made of (the
        manifest's ``registry``), not the twins' temporary copy."""
        import shlex

        from .registry.locate import registry_path

        path = self.registry.path
        if self.twin is not None:
            path = self.twin.get("registry") or None
        try:
            default = registry_path()
        except ValueError:
            default = None
        given = (path is not None and (default is None or Path(path).resolve() != Path(default).resolve()))
        quoted = shlex.quote(str(path)) if given else ""
        if self.twin is not None:
            where = f" --registry {quoted}" if given else ""
            return f"run one with: aniso run ID --twin{where}; all of them with: aniso run all --twin{where}"
        return (f"run one with: aniso run ID{f' --registry {quoted}' if given else ''}; all of them with: pytest "
                f"claims --aniso-models all{f' --aniso-registry {quoted}' if given else ''}")

    @staticmethod
    def twin_manifest(settings: Settings, registry: Path | str | None = None) -> dict | None:
        """The manifest of a twin run (the JSON file setting ``twin`` names, written by ``aniso run ID --twin``), or
        None. Raises ValueError naming the file if it cannot be read or is not a JSON object with a ``label``, or
        when it was written for another registry than the run's (``registry``: its file; a twin run's registry is
        the twins' own, whose SHA-256 the manifest holds), so that a manifest set beside a run on real weights never
        labels those verdicts as a twin's."""
        import json

        if not settings.twin:
            return None
        try:
            data = json.loads(Path(settings.twin).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"setting twin: cannot read the twin manifest {settings.twin} ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("label"), str):
            raise ValueError(f"setting twin: {settings.twin} is not a twin manifest (a JSON object with a label)")
        from .judge.results import file_digest

        if registry is None or data.get("registry_sha256") != file_digest(registry):
            raise ValueError(f"setting twin: {settings.twin} is the manifest of a twin run on its own registry of "
                             f"twins, not of a run of {registry or 'no registry file'}: a run on a model's own "
                             "weights is never labelled a twin's (leave setting twin out; `aniso run ID --twin` "
                             "sets it)")
        return data

    def claim(self, claim_id: str, entry: ModelEntry | None, test: str,
              context: type["ClaimContext"] | None = None) -> "ClaimContext":
        """The context of one claim test (``entry`` None for a model-free claim), of class ``context`` (default
        :class:`ClaimContext`)."""
        c = get_claim(claim_id)
        result = ClaimResult(claim_id=c.id, paper=c.paper, section=c.section, figure=c.figure,
                             statement=c.statement, model_id=entry.id if entry is not None else None, test=test)
        return (context or ClaimContext)(self, result, entry)

    def record(self, result: ClaimResult, *, seconds: float, skipped: str | None = None,
               failed: str | None = None) -> None:
        """Record a finished claim test: its duration, and a skip reason or an unexpected failure (an error, unless
        the verdict itself failed the test)."""
        result.seconds = round(seconds, 2)
        if skipped is not None:
            result.verdict, result.reason = SKIPPED, skipped.removeprefix("Skipped: ")
        elif failed is not None and result.verdict not in (DOES_NOT_HOLD, UNEXPECTEDLY_HOLDS, UNDERPOWERED,
                                                            EXPECTED_NOT_TO_HOLD) \
                and not result.record_drift:  # a verdict that failed the test (pytest --runxfail) keeps its name
            result.verdict, result.reason = ERROR, failed[:500]
        if result not in self.results:
            self.results.append(result)

    def record_outcome(self, result: ClaimResult, *, seconds: float, outcome: str, detail: str = "") -> None:
        """Record a finished claim test from its outcome as the test runner reports it: ``outcome`` is ``passed``,
        ``skipped`` or ``failed``; ``detail`` the skip reason, or the failure's text, of which the last line is
        kept (see :meth:`record`)."""
        if outcome == "skipped":
            self.record(result, seconds=seconds, skipped=detail)
        elif outcome == "failed":
            lines = detail.strip().splitlines()
            self.record(result, seconds=seconds, failed=lines[-1] if lines else "error")
        else:
            self.record(result, seconds=seconds)

    def worker_payload(self) -> str:
        """This run's results as JSON, for the process that merges parallel workers' runs (:meth:`absorb`)."""
        return dump_results(self.document())

    def absorb(self, payload: str) -> None:
        """Take in a parallel worker's :meth:`worker_payload`: its claim results join this run's, its models and
        experiments join this run's document. Raises ValueError if the payload is not a results document."""
        from pydantic import ValidationError

        try:
            doc = ResultsDocument.model_validate_json(payload)
        except ValidationError as exc:
            raise ValueError(f"a parallel worker sent results that do not match the schema: {exc}") from None
        self.absorbed.append(doc)
        # Workers finish in any order: test order keeps the merged results.json the same from run to run.
        self.results = sorted([*self.results, *doc.results], key=lambda r: r.test)

    def finish(self) -> bool:
        """Adjust the p-values of each adjusted claim across the run's models (:meth:`adjust_families`), check the
        ``must_run`` models and write ``results.json`` and ``report.html``; True if the run must fail because a
        ``must_run`` model was skipped for want of weights or code, or a verdict decided on an adjusted p-value
        contradicts its record."""
        self.adjust_families()
        self._check_record_keys()
        for entry in self.registry:
            if entry.must_run:
                skipped = [r for r in self.results if r.model_id == entry.id and r.verdict == SKIPPED
                           and r.skip_kind not in ("inputs", "not-applicable", "refused")]  # refused: its own line
                if skipped:
                    self.must_run_failures.append(f"{entry.id} is marked must_run but {len(skipped)} claim test(s) "
                                                  f"skipped: {skipped[0].reason}")
        if self.results or self._computed_beyond_claims():
            # where the statistics are, truthfully: not in the cache when the run was told not to use it
            kept = ("the statistics of this run were not cached (setting no_cache), so a rerun computes them again"
                    if self.settings.no_cache else f"the statistics of this run are in the cache "
                    f"{self.settings.cache_dir}, so a rerun writes it in seconds")
            try:
                self.write_report()
            except ReportRefused as exc:  # results.json kept; one line naming the cause
                self.must_run_failures.append(str(exc))
            except OSError as exc:  # e.g. a full disk: say where, and where the statistics are
                self.must_run_failures.append(
                    f"could not write the report under {self.settings.report_dir} ({exc}); {kept}")
            except KeyboardInterrupt:  # Ctrl-C: no half-written report folder, one line saying what to do
                self.stopped = (f"interrupted while writing the report under {self.settings.report_dir}; nothing "
                                f"was kept there, and {kept}")
        return bool(self.must_run_failures)

    def note_not_run(self, why: str, selected: list[str]) -> None:
        """A run that stopped before every selected claim test ran (``why``: pytest's ``-x``/``--maxfail`` stop, or
        an interrupt), ``selected`` the node ids of the claim tests collected: where some have no result, a run error
        (in results.json, the report and the console) says how many were not run, so that the results are not read
        later as the whole selection. Call before :meth:`finish`."""
        done = {r.test for r in self.results}
        missing = [t for t in selected if t not in done]
        if missing:
            self.must_run_failures.append(
                f"the run stopped early ({why}): {len(missing)} of {len(selected)} selected claim test(s) were not run "
                f"(first: {missing[0]}); these results are not the whole selection")

    def _check_record_keys(self) -> None:
        """A record whose ``measured`` names a number that no test of its claim reported in this run (e.g.
        ``max_avg_cosine`` for ``max_avg_cos``) is a stale record, never compared: where every test of the claim on
        the model ran and reached the comparison of the record's numbers, each such key fails the run, named, with
        the keys the claim's tests report (and the closest of them)."""
        import difflib

        groups: dict[tuple[str, str], list[ClaimResult]] = {}
        for r in self.results:
            if r.model_id and not r.twin:
                groups.setdefault((r.model_id, r.claim_id), []).append(r)
        for (model_id, claim_id), results in groups.items():
            if not all(r.record_check == _REPORTS_NONE or (r.record_check or "").startswith("record's numbers compared")
                       for r in results):
                continue  # a test skipped, or a record not compared at these sizes or inputs: nothing is known
            entry = next((e for e in self.registry if e.id == model_id), None)
            expected = self.record_of(entry, claim_id)[0] if entry is not None else None
            reported = sorted({k for r in results for k in (r.measured or {})})
            unreported = [k for k in (expected.measured or {}) if k not in reported] if expected is not None else []
            if not unreported:
                continue
            close = {k: difflib.get_close_matches(k, reported, n=1, cutoff=0.6) for k in unreported}
            said = "; ".join(f"{k!r}" + (f" (did you mean {close[k][0]!r}?)" if close[k] else "") for k in unreported)
            for r in results:
                if r.record_check == _REPORTS_NONE:
                    r.record_check = (f"record's numbers not compared: no test of {claim_id} reports "
                                      f"{', '.join(unreported)}")
            self.must_run_failures.append(
                f"{claim_id} on {model_id}: the registry's record is stale: its measured names {said}, which no test "
                f"of the claim reports (they report {', '.join(reported) or 'no number'}); correct the record's keys "
                f"in {self.registry.path or 'the registry'}")

    def record_of(self, entry: ModelEntry | None, claim_id: str) -> tuple[Any, str | None, bool]:
        """The registry's record of ``claim_id`` for ``entry`` (None: none, or no model), the inputs it was recorded
        on (:meth:`~aniso.registry.entries.Registry.expectation`), and whether it binds this run's sizes: those it
        names (``sizes``), for an adjusted claim the family it was decided in (``family``), and for a claim over seeds
        the seeds it was decided on (``seeds``)."""
        if entry is None:
            return None, None, True
        expected, recorded_inputs = self.registry.expectation(entry, claim_id)
        sizes = (expected.sizes if expected is not None else None) or {}
        return expected, recorded_inputs, (all(getattr(self.settings, k) == v for k, v in sizes.items())
                                           and _same_family(expected, self.family_sizes.get(claim_id, 1))
                                           and _same_seeds(expected, self.registry, entry))

    def decision(self, entry: ModelEntry | None, claim_id: str, holds: bool, run_inputs: str | None,
                 undecided: str | None) -> Decision:
        """The verdict policy (:func:`aniso.judge.verdicts.decide`) applied to one measured verdict of ``claim_id``
        on ``entry`` (None: a model-free claim), with the registry's record, the inputs and sizes it binds, and
        whether the registry has measured the model at all (``detected`` entries have not)."""
        expected, recorded_inputs, same_sizes = self.record_of(entry, claim_id)
        training = self.training_of(entry)
        if training is not None:  # a record of a miniature binds only the training it was measured with
            run_inputs = f"{run_inputs or recorded_inputs or 'these inputs'}; {training[0]}"
            recorded_inputs = f"{recorded_inputs or 'its inputs'}; {training[1]}"
        return decide(holds, expected.verdict if expected else None, expected.text if expected else "",
                      recorded_inputs, run_inputs, decidable=undecided is None, undecided=undecided or "",
                      same_sizes=same_sizes, recorded_model=not (entry is not None and entry.detected))

    def training_of(self, entry: ModelEntry | None) -> tuple[str, str] | None:
        """For a row this run trains (a text miniature: its source kind's ``trained_on``), what it is trained on here
        and what the registry's records were measured with, where the two differ (another training text, by content,
        or other steps); else None: a record binds such a row only on the training it was measured with."""
        from .sources import SOURCE_KINDS

        kind = SOURCE_KINDS.get(getattr(getattr(entry, "source", None), "kind", None))
        if entry is None or kind is None or kind.trained_on is None:
            return None
        return kind.trained_on(entry, self.settings, self.registry.recorded_profile)

    def adjust_families(self, alpha: float = ADJUST_ALPHA) -> None:
        """Benjamini-Hochberg adjustment (Benjamini & Hochberg 1995; :func:`scipy.stats.false_discovery_control`) of
        the p-values of each adjusted claim across its family, the claim's measured tests in this run, at false
        discovery rate ``alpha``: sets every member's ``p_adjusted`` and ``p_adjustment``, and decides the verdicts
        a test left pending (:meth:`ClaimContext.conclude`: a raw p-value in (alpha / m, alpha], where the family
        decides) on the adjusted value. A pending verdict that then contradicts its record is a run error."""
        from scipy.stats import false_discovery_control

        families: dict[str, list[ClaimResult]] = {}
        for r in self.results:
            if r.p_value is not None and not math.isnan(r.p_value) and r.verdict not in (SKIPPED, ERROR) \
                    and r.twin is None and get_claim(r.claim_id).adjusted:  # NaN: no test (a constant series)
                families.setdefault(r.claim_id, []).append(r)
        for claim_id, members in families.items():
            adjusted = false_discovery_control([r.p_value for r in members], method="bh")
            how = (f"Benjamini-Hochberg over the {len(members)} model(s) of {claim_id} in this run (false discovery "
                   f"rate {alpha})")
            for r, p in zip(members, adjusted):
                r.p_adjusted, r.p_adjustment = float(p), how
                if r.verdict == PENDING:
                    self._decide_pending(r, float(p), alpha)

    def _decide_pending(self, r: ClaimResult, p_adjusted: float, alpha: float) -> None:
        """Decide a verdict left pending on its adjusted p-value, under the verdict policy and the registry."""
        from .metrics import POWER_REQUIRED

        holds = p_adjusted < alpha
        undecided = None
        if not holds and (r.power is None or r.power < POWER_REQUIRED):
            undecided = (f"the adjusted p-value {p_adjusted:.3g} does not reject, and the test has power "
                         f"{r.power if r.power is None else round(r.power, 2)} at the claim's effect against the "
                         f"{POWER_REQUIRED} a non-rejection needs to be a finding")
        r.underpowered = undecided
        decision = self.decision(self.registry.get(r.model_id), r.claim_id, holds, r.inputs, undecided)
        r.verdict, r.differs_from_record = decision.verdict, decision.differs_from_record
        r.reason = (f"decided on the adjusted p-value {p_adjusted:.3g} (raw {r.p_value:.3g}); "
                    + (decision.reason or _numbers(r.measured)))
        if decision.outcome is Outcome.FAIL:
            self.must_run_failures.append(f"{r.claim_id} on {r.model_id}: {decision.verdict} on the adjusted p-value "
                                          f"{p_adjusted:.3g} (raw {r.p_value:.3g}; {r.p_adjustment})"
                                          + (f": {decision.reason}" if decision.reason else ""))

    def _row_digests(self) -> dict[str, list[str]] | None:
        """:func:`aniso.judge.records.run_row_digests` of the registry file this run read, for the rows it took (None
        where it read none, or the file cannot be read or rewritten as a registry: any edit then counts; such a
        failure is never the run's, whose results are written all the same)."""
        import yaml

        from .judge.records import run_row_digests

        if self.registry.path is None or self.twin is not None:
            return None
        try:
            text = Path(self.registry.path).read_text(encoding="utf-8")
            return run_row_digests(text, self.results, [e.id for e in self.registry])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError):
            return None

    def document(self) -> ResultsDocument:
        """The run as a :class:`~aniso.judge.results.ResultsDocument`."""
        computed = self.provider.computed()
        described = [s.meta.get("corpus", {}) for s in computed.values()]
        corpus = next((d for d in described if d and d.get("modality") is None), None)
        inputs = list({d["dataset"]: d for d in described if d.get("modality")}.values())
        s = self.settings
        profile = {"name": s.profile, "sizes": {k: getattr(s, k) for k in PROFILES[s.profile]},
                   "overridden": sorted(k for k, v in PROFILES[s.profile].items() if getattr(s, k) != v)}
        prov = provenance(self.root, dict(vars(s)), corpus, inputs=inputs, profile=profile, twin=self.twin,
                          registry_sha256=file_digest(s.registry) if self.registry.path is not None else None,
                          registry_rows_sha256=self._row_digests())
        experiments: dict[str, Any] = {}
        if self.blocks.computed():
            experiments["untrained_block"] = {mid: [sw.to_dict() for sw in sweeps]
                                              for mid, sweeps in self.blocks.computed().items()}
        if self.architectures.results:
            experiments["pipeline_offline"] = self.architectures.results
        if self.series.computed():
            from .stats.dynamics import series_document

            experiments["training"] = {mid: series_document(s) for mid, s in self.series.computed().items()}
        models = {mid: model_layers(st, self.registry.get(mid)) for mid, st in computed.items()}
        for doc in self.absorbed:  # parallel workers' runs (pytest -n)
            models.update({k: v for k, v in doc.models.items() if k not in models})
            for name, part in doc.experiments.items():
                mine = experiments.setdefault(name, type(part)())
                if isinstance(part, dict):
                    mine.update({k: v for k, v in part.items() if k not in mine})
                else:
                    mine.extend(v for v in part if v not in mine)
            if prov.corpus is None and doc.provenance.corpus is not None:
                prov.corpus = doc.provenance.corpus
            prov.inputs = list({d["dataset"]: d for d in [*(prov.inputs or []), *(doc.provenance.inputs or [])]}
                               .values())
        return ResultsDocument(
            provenance=prov, results=self.results, models=models,
            experiments=experiments, registry={e.id: RegistryRow.of(e) for e in self.registry},
            not_yet_executable=[NotYetExecutable(claim_id=c.id, paper=c.paper, section=c.section, figure=c.figure,
                                                   statement=c.statement) for c in not_yet_executable()],
            run_errors=list(self.must_run_failures), summary=verdict_counts(self.results))

    def write_report(self) -> Path:
        """Write ``<report_dir>/run-<time>/results.json`` and ``report.html`` (a folder of its own: see
        :func:`_new_run_folder`); returns the report's path. Raises OSError; on any error or interrupt the folder is
        removed again, except where the report writer refuses the results it reads back (ValueError): then
        results.json is kept and :class:`ReportRefused` (a ValueError) says why in one line."""
        from .report import write_html_report

        run_dir = Path(self.settings.report_dir)
        if not run_dir.is_absolute():
            run_dir = self.root / run_dir
        run_dir = _new_run_folder(run_dir)
        try:
            with said_on_signal(lambda signum: _cut_between(signum, run_dir)):
                write_results(run_dir / "results.json", self.document())
                try:
                    self.report_path = write_html_report(run_dir / "results.json", run_dir / "report.html")
                except ValueError as exc:  # the report writer refuses the results: they are kept, it says why
                    refused = exc
                else:
                    refused = None
        except BaseException:  # an error or Ctrl-C halfway: no folder holding results without their report
            import shutil

            self.report_path = None
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        if refused is not None:
            self.report_path = None
            (run_dir / "report.html").unlink(missing_ok=True)
            raise ReportRefused(f"the report was not written ({str(refused).splitlines()[0]}); the results are kept "
                                f"in {run_dir / 'results.json'}")
        return self.report_path

    @property
    def refused(self) -> dict[str, int]:
        """The refusals of the run (claim results skipped as ``refused``: a model's files or a setting that cannot be
        measured faithfully, :class:`aniso.sources.ModelRefused`), each reason once, with its count of claim tests.
        The summary prints each as one line (:attr:`refusal_fails`: when the run then ends as bad input)."""
        return dict(Counter(r.reason for r in self.results if r.skip_kind == "refused").most_common())

    @property
    def refusal_fails(self) -> bool:
        """Whether the run's refusals make it a run of bad input (``pytest``: its usage error; ``aniso run``: exit 2):
        every claim test refused (nothing measured: a setting that no model can run with, or the one model given), or
        a ``must_run`` model refused. A model refused beside models measured is reported, one line, and does not
        fail the run by itself."""
        must_run = {e.id for e in self.registry if e.must_run}
        return self.all_refused or any(r.skip_kind == "refused" and r.model_id in must_run for r in self.results)

    @property
    def all_refused(self) -> bool:
        """Whether every claim result of the run is a model refused for its files (``skip_kind`` "refused": files
        that cannot be loaded faithfully, :class:`aniso.sources.ModelRefused`) and nothing else was computed: the
        run's console is then the refusal alone (the results file records it)."""
        return bool(self.results) and all(r.skip_kind == "refused" for r in self.results) and not (
            self._computed_beyond_claims())

    def _computed_beyond_claims(self) -> bool:
        """Whether the run holds anything besides its claim results: architecture checks, training series, or a
        parallel worker's results."""
        return bool(self.architectures.results or self.series.computed() or self.absorbed)

    def summary_lines(self, width: int | None = None) -> list[tuple[str, str]]:
        """The console summary: ``(style, line)`` pairs, style ``""``, ``"warn"`` or ``"error"``, every line at most
        ``width`` columns (default: the terminal's, :func:`shutil.get_terminal_size`; 100 where the output is no
        terminal and ``COLUMNS`` is unset; a refusal is one line whole, however long): the verdict table (:func:`verdict_table`), one line per kind of verdict
        (:func:`aniso.judge.results.verdict_counts`), the new findings on a model without records, the stale
        records, the inputs, the skip reasons grouped with their counts (inputs missing once each, with the
        setting), the models left out, the must_run failures and the report's path."""
        import shutil

        width = width or shutil.get_terminal_size((100, 24)).columns
        out: list[tuple[str, str]] = []

        def say(style: str, line: str) -> None:
            out.extend((style, part) for part in fit(line, width))

        def refusals() -> None:  # each refusal once, one line however long (the results file has it too)
            out.extend(("error", f"{n} claim test(s) not run: refused: {reason}") for reason, n in self.refused.items())

        if self.all_refused:  # nothing measured: the refusal, once per reason
            refusals()
            for msg in self.must_run_failures:
                say("error", f"ERROR: {msg}")
            if self.report_path is not None:
                say("", f"report: {self.report_path}")
            return out
        if self.twin is not None:
            say("warn", twin_summary(self.twin))
        measured = [r for r in self.results if r.verdict != SKIPPED]
        out += [("", line) for line in verdict_table(measured, width)]
        counts = verdict_counts(self.results)
        for kind, words in _COUNT_WORDS.items():
            if counts.get(kind):
                say("error" if kind in ("error", "stale records") else "", f"{counts[kind]:>4} {words}")
        path = self.report_path.with_name("results.json") if self.report_path is not None else None
        for model_id, new in new_findings(self.results, self.registry).items():
            say("warn", f"{len(new)} claim(s) do not hold on {model_id}, which has no record: new findings to look "
                        f"at; record them with: aniso record {path or '<reports/run-.../results.json>'}")
        stale = [r for r in self.results if r.record_drift]
        if stale:
            say("error", f"{len(stale)} registry record(s) stale (the run measured other numbers): "
                         + "; ".join(f"{r.claim_id} on {r.model_id}: {r.record_drift[0].key} recorded "
                                     f"{fmt(r.record_drift[0].recorded)}, measured {fmt(r.record_drift[0].measured)}"
                                     for r in stale[:3]) + (" …" if len(stale) > 3 else ""))
        for dataset, label in sorted({(r.inputs, r.inputs_label) for r in self.results if r.inputs}, key=str):
            say("", f"inputs: {dataset}: {label}")
        errors: dict[str, int] = {}
        for r in self.results:
            if r.verdict == ERROR:
                errors[r.reason or "error"] = errors.get(r.reason or "error", 0) + 1
        if errors:
            say("error", "errors, by reason (the report has each; pytest's --tb=short shows the tracebacks):")
        for reason, n in sorted(errors.items(), key=lambda kv: -kv[1]):
            say("error", f"{n:>4} x {reason}")
        skips: dict[tuple[str, str], list[ClaimResult]] = {}
        refusals()
        for r in self.results:
            if r.verdict == SKIPPED and r.skip_kind != "refused":
                inputs = r.skip_kind == "inputs"
                reason = r.reason.split(": ", 1)[-1] if inputs else r.reason
                skips.setdefault(("inputs" if inputs else "", reason), []).append(r)
        if skips:
            say("", "skipped, by reason (the report names each test):")
        for (kind, reason), missing in sorted(skips.items(), key=lambda kv: -len(kv[1])):
            if kind == "inputs":
                models = sorted({r.model_id for r in missing if r.model_id})
                say("warn", f"inputs missing, {len(missing)} claim test(s) of {len(models)} model(s) not run "
                            f"({', '.join(models)}): {reason}")
            else:
                say("", f"{len(missing):>4} x {reason}")
        one_folder = len(self.registry) > 0 and all(e.detected for e in self.registry)  # `aniso run FOLDER`
        if self.left_out and not one_folder:  # (a folder's run never asked for the registry's models)
            shown = ", ".join(e.id for e in self.left_out[:3]) + (", …" if len(self.left_out) > 3 else "")
            say("", f"{len(self.left_out)} registry model(s) outside the model set {self.settings.models!r} were not "
                    f"run ({shown}); {self.left_out_hint()}")
        for msg in self.must_run_failures:
            say("error", f"ERROR: {msg}")
        if self.stopped:
            say("error", f"STOPPED: {self.stopped}")
        if self.report_path is not None:
            say("", f"report: {self.report_path}")
        return out


def _more_inputs(entry: ModelEntry) -> str:
    """The settings that give ``entry`` more inputs, by the kind of inputs it reads (:data:`aniso.inputs.forms.
    INPUT_FORMS`): "setting n_images (ANISO_N_IMAGES), or the folder of setting image_dir" for a vision model."""
    from .extract.modalities import inputs_kind
    from .inputs.forms import INPUT_FORMS

    form = INPUT_FORMS.get(inputs_kind(entry) or "")
    if form is None:
        return "setting n_sequences, or the corpus / the modality's data folder"
    where = "the corpus of setting corpus" if form.items is None else f"the folder of setting {form.setting}"
    return f"setting {form.size} (ANISO_{form.size.upper()}), or {where}"


#: How the console words each kind :func:`~aniso.judge.results.verdict_counts` counts, in its order.
_COUNT_WORDS = {"holds": "hold",
                "findings": "finding(s): does not hold, expected not to hold, or holds against its record",
                "underpowered": "underpowered at this size: decided neither way, not findings",
                "fragile": "fragile: the verdict flips when the inputs are resampled, not findings",
                "twin": "twin verdict(s), code path only (random weights: never findings)",
                "stale records": "stale record(s): the run measured other numbers than the registry's record",
                "skipped": "skipped",
                "error": "error(s)"}


def new_findings(results: list[ClaimResult], registry: Registry) -> dict[str, list[ClaimResult]]:
    """The results that are new findings, by model: claims that do not hold on a model the registry has never
    measured (an entry detected for the run from a folder, file or hub id: ``detected``), neither fragile nor
    measured on a twin. Such a result is a finding to look at and record (``aniso record``), not a
    broken test."""
    found: dict[str, list[ClaimResult]] = {}
    for r in results:
        if r.verdict != DOES_NOT_HOLD or r.model_id is None or r.twin or r.expected is not None \
                or (r.uncertainty is not None and r.uncertainty.fragile):
            continue
        try:
            entry = registry.get(r.model_id)
        except KeyError:
            continue
        if entry.detected:
            found.setdefault(r.model_id, []).append(r)
    return found


def fit(line: str, width: int, hang: int = 2) -> list[str]:
    """``line`` wrapped at spaces into lines of at most ``width`` columns, continuation lines indented ``hang``
    spaces more than the line; a word longer than the width (a path, a command) is kept whole on a line of its own,
    so that it can be copied."""
    import textwrap

    lead = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.wrap(line.strip(), width, initial_indent=lead, subsequent_indent=lead + " " * hang,
                         break_on_hyphens=False, break_long_words=False) or [""]


def _p_text(r: ClaimResult) -> str | None:
    """The p-value of a result, with its adjusted value beside it where the run adjusted it (``p_adjusted``)."""
    if r.p_value is None:
        return None
    return fmt(r.p_value) + (f" (adj. {fmt(r.p_adjusted)})" if r.p_adjusted is not None else "")


def _test_label(test: str, group: list[str]) -> str:
    """How the verdict table tells the row of claim test ``test`` from the other rows of its claim and model (the
    node ids ``group``, ``test`` among them), as shortly as tells them all apart: its parameters (``[16]``) where
    they are all one test function's, else its test function (``(test_y[m])``) where those differ, else its file
    and function (``(test_x.py::test_y[m])``), never the folder's path."""
    from .judge.results import short_test_id

    def where(t: str) -> str:
        return short_test_id(t).split("[", 1)[0]

    name = test.split("::")[-1]
    if len({where(t) for t in group}) == 1 and "[" in name:
        return name[name.index("["):]
    if len({t.split("::")[-1] for t in group}) == len(group):
        return f"({name})"
    return f"({short_test_id(test)})"


def verdict_table(results: list[ClaimResult], width: int) -> list[str]:
    """The verdict table of ``results`` as lines of at most ``width`` columns: claim and model whole, the verdict
    (its notes, e.g. fragile or differing from the record, wrapped within its column), the p-value where a claim
    has one (its adjusted value beside it, ``p_adjusted``, where the run adjusted it), and the first measured
    numbers on one line, cut with ``…`` at the width (the report has them all). Where several tests measure one
    claim on one model (or a model-free claim over parameters), each of their rows names its test after the claim,
    as shortly as tells them apart (:func:`_test_label`)."""
    import textwrap

    if not results:
        return []
    with_p = any(r.p_value is not None for r in results)
    shared: dict[tuple, list[str]] = {}
    for r in results:
        shared.setdefault((r.claim_id, r.model_id), []).append(r.test)
    rows = []
    for r in results:
        verdict = r.verdict + (f" ({r.differs_from_record}; differs on these inputs)" if r.differs_from_record
                               else "") + (f" [FRAGILE: {fragile_text(r.uncertainty)}]"
                                           if r.uncertainty is not None and r.uncertainty.fragile else "") \
            + "".join(f" [{'holds' if a.holds else 'does not hold'} with the {a.choice}]"
                      for a in r.sensitivity if a.differs)
        if r.twin:  # the run's first line says what a twin is
            verdict += " (twin)"
        key = {k: v for k, v in r.measured.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
               and not (with_p and k == "p_value")}
        numbers = ", ".join(f"{k}={fmt(v)}" for k, v in list(key.items())[:4])
        claim = r.claim_id + (f" {_test_label(r.test, shared[(r.claim_id, r.model_id)])}"
                              if len(shared[(r.claim_id, r.model_id)]) > 1 else "")
        rows.append([claim, r.model_id or "-", verdict] + ([_p_text(r) or "-"] if with_p else []) + [numbers])
    headers = ["claim", "model", "verdict"] + (["p (adjusted)" if any(getattr(r, "p_adjusted", None) is not None
                                                                    for r in results) else "p"] if with_p else [])
    fixed = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    fixed[2] = min(fixed[2], max(len("does not hold"), width // 4))  # the verdict's notes wrap within it
    # A test named after its claim (rows of one claim from several tests) is cut short before it pushes the verdict
    # past the width; the claim ids stay whole.
    room = width - sum(fixed[1:]) - 2 * len(fixed) - 8
    ids = max(len(headers[0]), *(len(r.claim_id) for r in results))
    if fixed[0] > max(room, ids):
        fixed[0] = max(room, ids)
        for row in rows:
            row[0] = row[0] if len(row[0]) <= fixed[0] else row[0][:fixed[0] - 1] + "…"
    measured = width - sum(fixed) - 2 * len(fixed)
    if measured < 12:  # a narrow terminal: the verdict column gives way first
        fixed[2] = max(len("does not hold"), fixed[2] - (12 - measured))
        measured = width - sum(fixed) - 2 * len(fixed)

    def line(cells: list[str], last: str) -> str:
        text = "  ".join(c.ljust(w) for c, w in zip(cells, fixed))
        if measured >= 8:
            text += "  " + (last if len(last) <= measured else last[:measured - 1] + "…")
        return text[:width].rstrip()

    out = [line(headers, "measured"), line(["-" * w for w in fixed], "-" * max(measured, 0))]
    for row in rows:
        verdict = textwrap.wrap(row[2], fixed[2], break_on_hyphens=False) or [""]
        out.append(line([row[0], row[1], verdict[0], *row[3:len(fixed)]], row[-1]))
        out += [line(["", "", more] + [""] * (len(fixed) - 3), "") for more in verdict[1:]]
    return out


class ClaimContext:
    """What a claim test uses: statistics of its model, and a way to state its verdict.

    :meth:`conclude` returns the :class:`~aniso.judge.verdicts.Decision`; the plugin makes the test's outcome follow
    it. Unavailable statistics raise :class:`Skip`.
    """

    def __init__(self, session: AnisoSession, result: ClaimResult, entry: ModelEntry | None):
        self._session = session
        self.result = result
        self.entry = entry
        self._read_models = False  # set when a claim without a model of its own reads other models' statistics
        #: Whether :meth:`conclude` was called: a claim test that ends without it decided nothing (an error).
        self.concluded = False

    @property
    def settings(self) -> Settings:
        return self._session.settings

    def stats(self) -> ModelStats:
        """The model's streamed statistics; skips the test (with the reason, naming the model) if unavailable."""
        if self.entry is None:
            raise RuntimeError(f"{self.result.claim_id}: this claim test has no model: give it an 'entry' argument "
                               "and a mark selecting its registry rows by tag, e.g. @pytest.mark.models(all_of=("
                               "\"pretrained\", \"text\")) over def test_x(entry, claim)")
        try:
            stats = self._session.provider.get(self.entry)
        except ModelUnavailable as exc:
            self.skip(exc)
        self._second_order_kept(stats)
        self.note_inputs(stats)
        self._enough_vectors(self.entry, stats.meta.get("n_tokens"), stats.meta.get("n_sequences"),
                             stats.meta.get("corpus", {}))
        self._enough_layers(self.entry, stats)
        return stats

    def _enough_layers(self, entry: ModelEntry, stats: ModelStats) -> None:
        """Refuse the model for this claim (a *refused* skip: exit 2, one line naming the row and how many layers or
        feature maps it gave) when the claim takes a trend over depth (``Claim.min_layers``) and the model gave
        fewer layers than that trend needs."""
        from .registry.catalog import CLAIMS

        claim = CLAIMS.get(self.result.claim_id)
        needed = claim.min_layers if claim is not None else 0
        given = len(stats.layers)
        if given >= needed:
            return
        names = ", ".join(stats.layer_names[:4]) + (", …" if given > 4 else "")
        self.skip(ModelRefused(
            f"{entry.id}: {self.result.claim_id} takes a trend over depth, on at least {needed} layers (a CNN's "
            f"feature maps: its stem's and each block's output); the model gave {given} (named {names}); give a "
            f"model with at least {needed}"))

    def _enough_vectors(self, entry: ModelEntry, n_vectors: int | None, n_items: int | None,
                        inputs: dict | None) -> None:
        """Refuse the model for this claim (a *refused* skip: exit 2, one line) when its inputs gave fewer hidden-state
        vectors per layer than the claim is decided on (:attr:`~aniso.registry.catalog.Claim.min_vectors`): a verdict
        on a handful of tokens would say nothing about the text. Names the model, the claim, the count and the
        setting to change (for texts given to :func:`aniso.check` as a list, ``inputs``' provenance says so: more or
        longer texts). A twin run is exempt: its verdicts check the code path on random weights and are never
        findings, so a few inputs are what it is for."""
        from .registry.catalog import CLAIMS

        claim = CLAIMS.get(self.result.claim_id)
        needed = claim.min_vectors if claim is not None else 0
        if self._session.twin is not None:
            return
        if needed and n_items is not None and n_items < 2:  # one input: nothing to resample, nothing beyond it
            label = (inputs or {}).get("label") or "unnamed"
            self.skip(ModelRefused(
                f"{entry.id}: {self.result.claim_id} is decided over inputs, at least 2 (its interval resamples them, "
                f"and one paragraph's tokens say nothing beyond it); its inputs gave {n_items} ({label}); give it "
                f"more inputs ({_more_inputs(entry)})"))
        if n_vectors is None or n_vectors >= needed:
            return
        modality = modality_of(entry)
        what = modality.vectors if modality is not None else "vectors"
        from .inputs.text import given_texts

        inputs = inputs or {}
        decided = f"{entry.id}: {self.result.claim_id} is decided on at least {needed} {what} per layer"
        if given_texts(inputs.get("origin")):  # a list of texts: no corpus setting, no n_sequences to raise
            self.skip(ModelRefused(f"{decided}; {inputs.get('label')} gave {n_vectors} {what}; give more or longer "
                                   "texts"))
        self.skip(ModelRefused(
            f"{decided}; its inputs gave {n_vectors} from {n_items if n_items is not None else '?'} input(s) "
            f"({inputs.get('label') or 'unnamed'}); give it more inputs ({_more_inputs(entry)})"))

    def _second_order_kept(self, stats: ModelStats) -> None:
        """Skip the test as not applicable, naming the setting, when the claim reads second-order statistics (SVD
        anisotropy, TwoNN, IsoScore, sampled pairs) that setting ``second_order_max_dim``, lowered below its default,
        kept from this model's layers: a claim measured on their absence would decide on NaN."""
        from .registry.catalog import CLAIMS

        claim = CLAIMS.get(self.result.claim_id)
        if claim is None or "second-order" not in claim.statistics:
            return
        limit = self.settings.second_order_max_dim
        default = Settings.__dataclass_fields__["second_order_max_dim"].default
        # only where the setting, lowered below its default, is what left them out (a wider model is as it was)
        wide = sorted({acc.dim for acc in stats.layers if not acc.second_order and limit < acc.dim <= default})
        if wide:
            self.not_applicable(f"{self.entry.id}: layers of width {', '.join(map(str, wide))} are wider than setting "
                                f"second_order_max_dim {limit} (ANISO_SECOND_ORDER_MAX_DIM), so their second-order "
                                "statistics were not kept; raise it to at least "
                                f"{wide[-1]} to measure {self.result.claim_id}")

    def not_applicable(self, reason: str) -> None:
        """Skip the test because the claim does not apply to this model (e.g. it has no final normalisation): a
        skip that a ``must_run`` model may have, unlike one for want of weights or code."""
        self.result.skip_kind = "not-applicable"
        raise Skip(reason)

    def skip(self, exc: ModelUnavailable) -> None:
        """Skip the test for ``exc``, recording whether inputs (a data folder) or the model were missing."""
        self.result.skip_kind = ("inputs" if isinstance(exc, InputsMissing) else
                                 "refused" if isinstance(exc, ModelRefused) else "model")
        raise Skip(str(exc))

    def note_inputs(self, stats: ModelStats) -> ModelStats:
        """Record which inputs (corpus, recordings, photographs) ``stats`` came from in the claim's result."""
        inputs = stats.meta.get("corpus", {})
        self.result.inputs = inputs.get("dataset")
        self.result.inputs_label = inputs.get("label")
        if self.result.inputs_label:  # the model reads fewer tokens than asked: the verdict says so
            self.result.inputs_label += max_length_note(stats.meta) + svd_batch_note(stats.layers)
        if self.result.inputs_label:  # distinct texts this model reads as one: fewer inputs than counted
            self.result.inputs_label += copies_note(stats.meta)
        training = self._session.training_of(self.entry)
        if training is not None and self.result.inputs_label:  # the console's inputs line names the training text
            self.result.inputs_label += f"; the miniature trained on {training[0]} (the record's: {training[1]})"
        self.result.n_items = stats.meta.get("n_sequences")
        self.result.n_vectors = stats.meta.get("n_tokens")
        return stats

    def block_sweeps(self) -> list:
        """The untrained-block sweeps of the model (one :class:`~aniso.experiments.untrained_block.BlockSweep`
        per seed), computed or read from the cache."""
        if self.entry is None or not self.entry.untrained_block:
            raise RuntimeError(f"{self.result.claim_id}: block_sweeps() needs an untrained-block registry entry")
        sweeps = self._session.blocks.get(self.entry)
        spec = sweeps[0].spec
        self.result.inputs_label = (f"untrained block: {spec.n_sequences} sequences x {spec.seq_len} embeddings "
                                    f"drawn from its table, {len(spec.norms)} bias norms, {len(sweeps)} seeds")
        self.result.n_items = spec.n_sequences
        self.result.n_vectors = spec.n_sequences * spec.seq_len
        return sweeps

    def series(self, entry: ModelEntry | None = None) -> Series:
        """The measurements of every checkpoint of a registry series (default: this test's model), computed or read
        from the cache; skips the test (with the reason, naming the model) if a checkpoint is unavailable."""
        entry = entry or self.entry
        if entry is None or entry.checkpoints is None:
            raise RuntimeError(f"{self.result.claim_id}: series() needs a registry entry with checkpoints")
        try:
            series = self._session.series.get(entry)
        except ModelUnavailable as exc:
            self.skip(exc)
        inputs = series.inputs
        self.result.inputs = inputs.get("dataset")
        self.result.inputs_label = (f"{inputs.get('label')}; {len(series.measures)} checkpoints (steps "
                                    f"{', '.join(str(s) for s in series.steps)})")
        self.result.n_items = inputs.get("n_sequences")
        self.result.n_vectors = series.measures[-1].meta.get("n_tokens")
        self._enough_vectors(entry, min((m.meta.get("n_tokens") or 0) for m in series.measures),
                             inputs.get("n_sequences"), inputs)
        return series

    def reference_stats(self, all_of: tuple[str, ...]) -> tuple[ModelEntry, ModelStats]:
        """Statistics of the first registry entry with tags ``all_of`` whose model is available.

        Raises :class:`Skip`, naming every entry tried and why, if none is available.
        """
        tried = []
        self._read_models = True
        candidates = self._session.registry.select(all_of)
        if not candidates:
            self.require_others(f"a reference model with tags {list(all_of)}", [], [], all_of)
        for entry in candidates:
            try:
                return entry, self._session.provider.get(entry)
            except ModelUnavailable as exc:
                tried.append(str(exc))
        raise Skip(f"no reference model with tags {list(all_of)} is available: " + ("; ".join(tried) or "none listed"))

    def require_others(self, what: str, available: list, unavailable: list[str], all_of: tuple[str, ...] = (),
                       any_of: tuple[str, ...] = ()) -> None:
        """Skip the test unless ``available`` (from :meth:`available_stats` or :meth:`available_series` with the same
        tags) holds the other models the claim compares with; ``what`` names them (e.g. ``"a decoder to compare
        with"``).

        Raises :class:`Skip`: *not applicable* (a skip that a ``must_run`` model may have) when the run's model set
        holds no model with these tags, as in a single-model run, naming the registry models it left out that have
        them; otherwise a skip for want of weights or code, naming each unavailable model and why.
        """
        if available:
            return
        if unavailable:
            self.result.skip_kind = "model"
            raise Skip(f"needs {what}; unavailable: " + "; ".join(unavailable))
        outside = [e.id for e in Registry(self._session.left_out).select(all_of, any_of)]
        models = self._session.settings.models
        self.not_applicable(
            f"not applicable to this run: needs {what}, and the model set {models!r} has none"
            + (f" (outside it: {', '.join(outside[:4])}{', …' if len(outside) > 4 else ''}; add one to "
               "--aniso-models / ANISO_MODELS to measure this claim)" if outside else ""))

    def available_stats(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = (),
                        none_of: tuple[str, ...] = ()) -> tuple[list[tuple[ModelEntry, ModelStats]], list[str]]:
        """Statistics of every registry entry with these tags (and none of ``none_of``) whose model is available
        here.

        Returns ``(available, unavailable)``: (entry, stats) pairs in registry
        order, and one reason per entry that could not be had (naming it).
        """
        return self._available(self._session.provider.get, all_of, any_of, none_of)

    def available_series(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = ()
                         ) -> tuple[list[tuple[ModelEntry, Series]], list[str]]:
        """Checkpoint series of every registry entry with these tags whose checkpoints are available here, as
        :meth:`available_stats` gives statistics."""
        return self._available(self._session.series.get, all_of, any_of)

    def _available(self, get, all_of: tuple[str, ...], any_of: tuple[str, ...],
                   none_of: tuple[str, ...] = ()) -> tuple[list, list[str]]:
        self._read_models = True  # a claim comparing models: in a twin run, it compares twins
        got, missing = [], []
        for entry in self._session.registry.select(all_of, any_of, none_of):
            try:
                got.append((entry, get(entry)))
            except ModelUnavailable as exc:
                missing.append(str(exc))
        return got, missing

    def interval(self, stats: ModelStats, statistic: Callable[[ModelStats], float], name: str, threshold: float,
                 holds_if: str, verdict: Callable[[ModelStats], bool] | None = None,
                 fixed: str = "", *, batch: Callable[[list[ModelStats]], Any] | None = None,
                 cannot_show: str = "", constant: str = "", sensitivity: bool = False) -> Uncertainty:
        """The bootstrap interval over the inputs of the claim's deciding statistic (:mod:`aniso.stats.uncertainty`).

        ``statistic(stats)`` gives the statistic (``name`` says what it is) that the claim compares with
        ``threshold`` by ``holds_if`` (``">"``, ``">="``, ``"<"``, ``"<="``); ``verdict(stats)``, where the rule
        has more than that comparison, the whole verdict; ``batch(replicates)``, where given, the statistic of every
        resample at once (shape (n_boot,)) instead of one call of ``statistic`` per resample. Each of
        ``settings.n_bootstrap`` resamples (seeded by ``settings.seed``) recomputes them; ``fixed`` says what the
        resamples hold fixed (e.g. the other models compared with); ``cannot_show`` what the interval cannot show
        (e.g. for a test over layers: the layers are not resampled). Without per-input sums or with
        ``n_bootstrap`` 0 the interval is left out, saying why. Where every resample gives the same value the
        interval is *not informative* (``low``/``high`` None, ``informative`` False) and its note says why
        (``constant``: the claim's own explanation, e.g. "the layers' rank order was the same in every resample");
        where only the interval's ends coincide, the note gives the share of resamples that agree.
        ``sensitivity``: the statistic is a p-value, whose resampled range is an *input-sensitivity range* (how it
        moves with the inputs), named so, not a confidence interval. Fewer than :data:`MIN_BOOTSTRAP_UNITS` inputs
        are named beside the interval.
        """
        from .stats.uncertainty import COMPARISONS, bootstrap_stats, interval

        value = float(statistic(stats))
        if self.settings.n_bootstrap == 0:
            return Uncertainty(statistic=name, value=value, threshold=threshold, holds_if=holds_if,
                               method="not computed (n_bootstrap = 0)", informative=False, note=cannot_show)
        resamples = bootstrap_stats(stats, self.settings.n_bootstrap, self.settings.seed)
        if resamples is None:
            return Uncertainty(statistic=name, value=value, threshold=threshold, holds_if=holds_if,
                               method="not available: these statistics kept no per-input sums", informative=False,
                               note=cannot_show)

        def safely(fn, r, default):
            try:
                return fn(r)
            except (ValueError, ZeroDivisionError):  # a resample the rule cannot judge (e.g. no SVD batches)
                return default

        if batch is not None:
            values = [float(v) for v in batch(resamples.replicates)]
        else:
            values = [float(safely(statistic, r, math.nan)) for r in resamples.replicates]
        finite = [v for v in values if math.isfinite(v)]
        held = (f"held at their measured value ({', '.join(resamples.fixed_layers[:4])}"
                f"{', …' if len(resamples.fixed_layers) > 4 else ''})")
        if resamples.fixed_layers and finite and max(finite) == min(finite):
            return Uncertainty(statistic=name, value=value, threshold=threshold, holds_if=holds_if,
                               method=f"not available: the statistic rests on layers wider than the per-input limit, "
                                      f"{held}", informative=False, note=cannot_show)
        compare = COMPARISONS[holds_if]
        holds = [bool(safely(verdict, r, False)) if verdict is not None else compare(v, threshold)
                 for r, v in zip(resamples.replicates, values)]
        try:
            iv = interval(value, values, holds, threshold, holds_if)
        except ValueError as exc:
            return Uncertainty(statistic=name, value=value, threshold=threshold, holds_if=holds_if,
                               method=f"not available: {exc}", informative=False, note=cannot_show)
        level_pct = round(iv.level * 100)
        label = (f"{level_pct}% input-sensitivity range" if sensitivity else
                 f"{level_pct}% percentile-bootstrap CI over the inputs")
        unit = {"input": "inputs", "input group": "input groups"}.get(
            resamples.unit, resamples.unit.replace("batch", "batches", 1))
        if resamples.unit == "input group" and getattr(resamples, "n_inputs", 0):
            unit += f" of its {resamples.n_inputs} inputs (random groups: the inputs past the per-input budget)"
        method = f"percentile bootstrap over the {resamples.n_units} {unit}, seed {self.settings.seed}"
        if sensitivity:
            method = (f"input-sensitivity range: the {level_pct}% central range of the statistic over "
                      f"{len(values)} resamples of the {resamples.n_units} {unit} (seed {self.settings.seed}), not a "
                      "confidence interval")
        if resamples.n_units < MIN_BOOTSTRAP_UNITS:
            method += (f"; only {resamples.n_units} {unit}: a bootstrap over fewer than {MIN_BOOTSTRAP_UNITS} "
                       "understates the spread")
        if resamples.n_svd_batches:
            method += f"; SVD batches ({resamples.n_svd_batches} per layer) resampled apart"
        if resamples.fixed_layers:
            method += f"; {len(resamples.fixed_layers)} layer(s) wider than the per-input limit {held}"
        if fixed:
            method += f"; {fixed} held fixed"
        if iv.low == iv.high:
            agree = sum(v == iv.low for v in finite) / len(finite)
            why = (f"not informative: all {iv.n_boot} resamples gave {fmt(iv.low)}" if agree == 1.0 and
                   len(finite) == len(values) else
                   f"not informative: the {label}'s ends coincide at {fmt(iv.low)} ({agree:.1%} of the "
                   f"{len(values)} resamples gave exactly that)") + (f" ({constant})" if constant and agree == 1.0
                                                                      else "")
            return Uncertainty(statistic=name, value=iv.value, threshold=iv.threshold, holds_if=holds_if,
                               holds_share=iv.holds_share, fragile=iv.fragile, n_boot=iv.n_boot, level=iv.level,
                               method=method, informative=False, note="; ".join(x for x in (why, cannot_show) if x),
                               name=label)
        return Uncertainty(statistic=name, value=iv.value, low=iv.low, high=iv.high, threshold=iv.threshold,
                           holds_if=holds_if, holds_share=iv.holds_share, fragile=iv.fragile, n_boot=iv.n_boot,
                           level=iv.level, method=method, note=cannot_show, name=label)

    def _conclude_twin(self, holds: bool) -> tuple[Decision, str]:
        """A twin run's verdict: measured on random weights, it passes whatever it is, is never judged against the
        registry's records and is labelled :data:`aniso.sources.twin.TWIN_LABEL` (no finding)."""
        r = self.result
        r.twin = str(self._session.twin.get("label"))
        r.expected, r.differs_from_record = None, None
        r.verdict = HOLDS if holds else DOES_NOT_HOLD if r.underpowered is None else UNDERPOWERED
        r.reason = f"{r.twin}; {_numbers(r.measured)}"
        return Decision(r.verdict, Outcome.PASS, r.twin), ""

    def seed_for(self, statistic: str, *, shared: bool = False) -> int:
        """The seed of one test of this claim on this model (:func:`aniso.metrics.derive_seed` of the run's seed, the
        claim, the model and ``statistic``): every Monte Carlo test draws its own null sample. ``shared=True`` for a
        test that more than one claim reports (the drift correlation's Spearman and Pearson tests, each decided by
        one claim and shown beside the other): its identity is the model and ``statistic`` alone, so every claim
        reporting it draws the same null sample and shows the same p-value."""
        from .metrics import derive_seed

        model = self.entry.id if self.entry is not None else ""
        if shared:
            return derive_seed(self.settings.seed, model, statistic)
        return derive_seed(self.settings.seed, self.result.claim_id, model, statistic)

    def seeds(self) -> list[tuple[ModelEntry, Series]]:
        """The checkpoint series of every seed of this test's architecture and recipe: the run's registry entries
        with checkpoints and this entry's family and role (this entry first), computed or read from the cache.
        Skips the test, naming each seed and why, if a seed's series is unavailable."""
        if self.entry is None or self.entry.checkpoints is None:
            raise RuntimeError(f"{self.result.claim_id}: seeds() needs a registry entry with checkpoints")
        members = family_members(self._session.registry, self.entry)
        got = []
        for member in members:
            got.append((member, self.series(member)))
        self.series(self.entry)  # this entry's inputs, for the result
        self.result.seeds = [m.id for m in members]
        self.result.inputs_label = f"{self.result.inputs_label}; {len(members)} seeds decided together"
        return got

    def conclude_over_seeds(self, per_seed: dict, rule: str, *, alpha: float = 0.05) -> tuple[Decision, str]:
        """Record the verdict of a claim about an architecture and a recipe from all its seeds together
        (:func:`aniso.judge.training_rules.over_seeds`: a sign test over the seeds). ``per_seed``: {model id:
        :class:`~aniso.judge.training_rules.SeedResult`}; ``rule`` the per-seed rule in words. The seeds'
        numbers are reported beside the verdict; a claim the seeds cannot decide is underpowered."""
        from .judge.training_rules import SEEDS_RULE, over_seeds

        holds, measured, undecided = over_seeds(per_seed, alpha)
        return self.conclude(holds, measured, f"per seed: {rule}; over the seeds: {SEEDS_RULE}",
                             undecided=undecided)

    def conclude(self, holds: bool, measured: dict[str, Any], rule: str, *,
                 p_value: float | None = None, uncertainty: Uncertainty | None = None,
                 alternatives: dict[str, tuple[bool, float | None]] | None = None,
                 undecided: str | None = None, power: float | None = None) -> tuple[Decision, str]:
        """Record the verdict under the verdict policy (:mod:`aniso.judge.verdicts`).

        Returns the decision and the message for a failing or xfailing test. ``p_value``: the p-value of the
        claim's significance test, where it has one (recorded as a typed field for the report); ``uncertainty``:
        the deciding statistic's bootstrap interval (:meth:`interval`), whose ``fragile`` flag the report shows;
        ``alternatives``: for each choice the paper left open that the run also measured (e.g. ``"padding frames
        included"``), whether the claim holds under it and the deciding value (the report's sensitivity);
        ``undecided``: why this measurement could not decide the claim at this size (e.g. a test over too few
        points), None when it could: a measurement that does not hold is then *underpowered*, not a finding;
        ``power``: the power of the claim's test at the effect the claim states, where it has one.

        The registry's record for this model and claim decides what the verdict means; its numbers are compared with
        ``measured`` (:func:`aniso.judge.records.stale_numbers`) when the run has the record's inputs and sizes (its
        own ``sizes``, the rest those of the registry's ``recorded_profile``), and a stale number fails the test.

        Raises RuntimeError when the test has concluded already (a second verdict would replace the first silently),
        and TypeError when ``holds`` is not a bool (``numpy.bool_`` is taken): a string such as ``"no"`` would
        otherwise read as true; when ``measured`` is no mapping of str names to values (a bare number would be
        recorded as the result and break its summary and report); and when ``rule`` is not a str. A measured number that is NaN (written ``null`` in results.json) is named in the
        verdict's reason (:func:`nan_note`): a verdict given beside it may rest on a number that was not measured.
        """
        decision, message = self._conclude(holds, measured, rule, p_value=p_value, uncertainty=uncertainty,
                                           alternatives=alternatives, undecided=undecided, power=power)
        note = nan_note(measured)
        if note and self.result.verdict != PENDING:  # (a pending verdict's reason is written when it is decided)
            self.result.reason = f"{self.result.reason}; {note}" if self.result.reason else note
        return decision, message

    def _conclude(self, holds, measured, rule, *, p_value, uncertainty, alternatives, undecided, power
                  ) -> tuple[Decision, str]:
        import numpy as np

        if not isinstance(holds, (bool, np.bool_)):
            raise TypeError(f"claim.conclude: holds is {holds!r} ({type(holds).__name__}); give True or False "
                            "(a bool or numpy.bool_), whether the claim holds")
        holds = bool(holds)
        from collections.abc import Mapping

        if not isinstance(measured, Mapping) or not all(isinstance(k, str) for k in measured):
            raise TypeError(f"claim.conclude: measured is {measured!r:.60} ({type(measured).__name__}); give a dict "
                            "{name: value} of the numbers the verdict rests on, names as str")
        if not isinstance(rule, str):
            raise TypeError(f"claim.conclude: rule is {rule!r:.60} ({type(rule).__name__}); give the rule in words "
                            "as a str")
        measured = {k: _plain_value(v, f"measured[{k!r}]") for k, v in measured.items()}
        if self.concluded:  # a second verdict would replace the first without a word
            first = self.result
            raise RuntimeError(f"claim.conclude: called a second time in this test (the first concluded "
                               f"{first.verdict}: {_numbers(first.measured)}); a claim test concludes once, with the "
                               "verdict its numbers decide")
        self.concluded = True
        r = self.result
        r.measured, r.rule, r.p_value, r.uncertainty = measured, rule, p_value, uncertainty
        r.underpowered = undecided
        r.power = power
        r.sensitivity = [Sensitivity(choice=choice, holds=bool(h), value=None if v is None else float(v),
                                     differs=bool(h) != bool(holds)) for choice, (h, v) in (alternatives or {}).items()]
        if self._session.twin is not None and (self.entry is not None or self._read_models):
            return self._conclude_twin(holds)
        expected, _, same_sizes = self._session.record_of(self.entry, r.claim_id)
        r.expected = expected.model_dump() if expected is not None else None
        family = self._session.family_sizes.get(r.claim_id, 1)
        if p_value is not None and get_claim(r.claim_id).adjusted and family > 1 \
                and ADJUST_ALPHA / family < p_value <= ADJUST_ALPHA:
            # Benjamini-Hochberg rejects every p <= alpha / m and no p > alpha whatever the family's other p-values;
            # in between, the family decides, at the end of the run (AnisoSession.adjust_families).
            r.verdict = PENDING
            r.reason = (f"p = {p_value:.3g} lies between {ADJUST_ALPHA}/{family} and {ADJUST_ALPHA}: decided at the "
                        "end of the run on the Benjamini-Hochberg adjusted p-value across the run's models")
            return Decision(PENDING, Outcome.PASS, r.reason), ""
        decision = self._session.decision(self.entry, r.claim_id, holds, r.inputs, undecided)
        r.verdict, r.differs_from_record = decision.verdict, decision.differs_from_record
        numbers = _numbers(measured)
        model = self.entry.id if self.entry is not None else "(no model)"
        stale = self._compare_record(expected, measured, same_sizes) if expected is not None else ""
        if decision.verdict == EXPECTED_NOT_TO_HOLD or (decision.verdict == UNDERPOWERED
                                                         and decision.outcome is Outcome.XFAIL):
            r.reason = decision.reason
            if stale:
                decision = Decision(decision.verdict, Outcome.FAIL, decision.reason + stale)
            return decision, f"{r.claim_id} on {model}: {decision.verdict}: {decision.reason} ({numbers})"
        if decision.verdict == UNDERPOWERED:
            r.reason = decision.reason
            if decision.outcome is Outcome.FAIL:
                return decision, f"{r.claim_id} on {model}: {decision.reason} ({numbers})"
            return decision, ""
        if decision.verdict == UNEXPECTEDLY_HOLDS:
            r.reason = decision.reason
            return decision, (f"{r.claim_id} on {model}: expected not to hold, but it holds ({numbers}; {rule}). "
                              "Update the expected verdict in the registry if this is a real change.")
        if decision.verdict == DOES_NOT_HOLD and decision.outcome is Outcome.PASS and decision.differs_from_record \
                is None:  # a new finding on a model the registry has never measured
            r.reason = f"{decision.reason} ({numbers}; rule: {rule})"
            return decision, ""
        if decision.verdict == DOES_NOT_HOLD and decision.differs_from_record is None:
            r.reason = f"{numbers}; rule: {rule}"
            return decision, f"{r.claim_id} does not hold on {model}: {numbers} (rule: {rule})"
        r.reason = decision.reason
        if stale and decision.outcome is Outcome.PASS and decision.differs_from_record is None:
            decision = Decision(decision.verdict, Outcome.FAIL, (decision.reason + stale).lstrip("; "))
            return decision, f"{r.claim_id} on {model}: {decision.verdict}{stale} ({numbers})"
        return decision, ""

    def _compare_record(self, expected, measured: dict[str, Any], same_sizes: bool) -> str:
        """Compare the record's numbers with ``measured`` where the run has the record's inputs (its own, or the
        registry's for the modality: a paper record binds any inputs, but its numbers were measured on those) and
        the record's sizes: those its ``sizes`` names, and for the rest those of the registry's ``recorded_profile``
        where the registry file states one (``Registry.profile_stated``; else those of ``quick`` where the registry
        states the inputs). Where neither the record nor the registry says at which sizes or on which inputs the
        numbers were measured, nothing is compared and ``record_check`` says so; set the result's ``record_check``
        and ``record_drift``.
        Returns the failure text of a stale record, or ""."""
        from .judge.records import names_any, stale_numbers
        from .judge.results import RecordDrift

        r, registry = self.result, self._session.registry
        if not expected.measured:
            return ""
        numbers_on = expected.inputs or registry.recorded_inputs.get(self.entry.measured_on or self.entry.modality)
        if not (numbers_on is None or r.inputs is None or numbers_on == r.inputs):
            r.record_check = f"record's numbers not compared: recorded on {numbers_on}"
            return ""
        training = self._session.training_of(self.entry)
        if training is not None:
            r.record_check = f"record's numbers not compared: recorded with {training[1]}, this run {training[0]}"
            return ""
        seed = self._session.settings.seed
        if seed != DEFAULT_SEED:  # another sample of the corpus, other reservoirs: other numbers, not a stale record
            r.record_check = (f"record's numbers not compared: the registry's records are measured at the default "
                              f"seed {DEFAULT_SEED}, this run at seed {seed}")
            return ""
        if not _same_seeds(expected, registry, self.entry):
            r.record_check = (f"record's numbers not compared: decided over the seeds {', '.join(expected.seeds)}, "
                              f"this run over {', '.join(m.id for m in family_members(registry, self.entry))}")
            return ""
        own = set(expected.sizes or {})
        stated = getattr(registry, "profile_stated", True)
        if not own and not stated and numbers_on is None:
            r.record_check = ("record's numbers not compared: neither the record (sizes:, inputs:) nor the registry "
                              "(recorded_profile:, recorded_inputs:) says at which sizes or on which inputs they were "
                              "measured")
            return ""
        if not (same_sizes and ((not stated and own) or self._at_recorded_profile(but=own))):
            sizes = f" and {expected.sizes}" if expected.sizes else ""
            r.record_check = (f"record's numbers not compared: recorded at the {registry.recorded_profile!r} "
                              f"profile's sizes{sizes}, this run at other sizes" if stated or not own else
                              f"record's numbers not compared: recorded at the sizes {expected.sizes}, this run at "
                              "other sizes")
            return ""
        if not names_any(expected.measured, measured):
            r.record_check = _REPORTS_NONE
            return ""
        drift = stale_numbers(expected.measured, measured)
        r.record_drift = [RecordDrift(key=d.key, recorded=d.recorded, measured=d.measured, tolerance=d.tolerance)
                          for d in drift]
        if not drift:
            r.record_check = "record's numbers compared: all within tolerance"
            return ""
        r.record_check = f"record's numbers compared: {len(drift)} of them stale"
        return ("; the registry's record is stale (re-measure it: aniso record RESULTS): "
                + "; ".join(str(d) for d in drift[:4]) + (" …" if len(drift) > 4 else ""))

    def _at_recorded_profile(self, but: set[str] = frozenset()) -> bool:
        """Whether this run has the sizes of the registry's ``recorded_profile`` (none of them overridden), leaving
        out the sizes in ``but`` (those a record names itself, compared with its own values)."""
        s = self.settings
        profile = self._session.registry.recorded_profile
        return all(getattr(s, k) == v for k, v in PROFILES[profile].items() if k not in but)
