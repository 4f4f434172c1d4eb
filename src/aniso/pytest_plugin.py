"""The pytest plugin: settings, registry parametrisation, verdict recording and the report.

Claim tests are marked ``@pytest.mark.claim("<id>")``. A test that takes a
``model`` argument and carries ``@pytest.mark.models(all_of=(...), any_of=(...))``
is parametrised over the registry entries those tags select. The ``claim``
fixture gives statistics (:meth:`ClaimContext.stats`) and records the verdict
(:meth:`ClaimContext.conclude`), applying the registry's expected verdict.

At the end of a run with claim tests, the plugin writes
``<report_dir>/<run>/results.json`` and ``report.html`` and prints a table.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pytest

from . import results as R
from .catalog import get_claim
from .pipeline import BlockSweepProvider, StatsProvider
from .registry import ModelEntry, Registry, RegistryError, load_registry
from .settings import PROFILES, SETTING_HELP, Settings
from .sources import InputsMissing, ModelUnavailable
from .stats import ModelStats
from .verdicts import Outcome, decide

_SESSION = pytest.StashKey["AnisoSession"]()
_RESULT = pytest.StashKey[R.ClaimResult]()


@dataclass
class AnisoSession:
    """Everything one pytest run shares: settings, registry, statistics and results."""

    settings: Settings
    registry: Registry
    provider: StatsProvider
    root: Path
    blocks: BlockSweepProvider | None = None
    results: list[R.ClaimResult] = field(default_factory=list)
    report_path: Path | None = None
    must_run_failures: list[str] = field(default_factory=list)
    pipeline: dict[str, dict] = field(default_factory=dict)
    _pipeline_memo: dict[str, Any] = field(default_factory=dict)

    def check_pipeline(self, entry: ModelEntry):
        """:func:`aniso.pipeline_check.check_pipeline` for ``entry``, once per distinct tiny config, recorded for
        the report (``results.json`` → ``pipeline``). ValueError (no buildable tiny config) propagates."""
        import json

        from .pipeline_check import check_pipeline

        key = json.dumps({"tiny": entry.tiny, "modality": entry.modality, "architecture": entry.architecture,
                          "granularity": entry.granularity}, sort_keys=True)
        if key not in self._pipeline_memo:
            self._pipeline_memo[key] = check_pipeline(entry, seed=self.settings.seed)
        result = self._pipeline_memo[key]
        self.pipeline[entry.id] = dict(result.to_dict(), model_id=entry.id)
        return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aniso", "anisotropy claims suite")
    types = {f.name: f.type for f in fields(Settings)}
    for name, help_text in SETTING_HELP.items():
        opt = "--aniso-" + name.replace("_", "-")
        env = f"ANISO_{name.upper()}"
        if types[name] in ("bool", bool):
            group.addoption(opt, action="store_true", default=None, help=f"{help_text} (env {env})")
        else:
            kind = int if types[name] in ("int", int) else str
            group.addoption(opt, type=kind, default=None, help=f"{help_text} (env {env})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "claim(id): the paper claim (id from aniso.catalog) a test measures")
    config.addinivalue_line("markers", "models(all_of=(), any_of=()): registry tags selecting the models of a claim")
    options = {name: config.getoption("--aniso-" + name.replace("_", "-")) for name in SETTING_HELP}
    try:
        settings = Settings.from_sources(options)
    except ValueError as exc:
        raise pytest.UsageError(f"aniso settings: {exc}") from None
    root = Path(config.rootpath)
    reg_path = Path(settings.registry)
    if not reg_path.is_absolute():
        reg_path = root / reg_path
    try:
        registry = load_registry(reg_path)
    except RegistryError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_SESSION] = AnisoSession(settings, registry, StatsProvider(settings, registry), root,
                                          BlockSweepProvider(settings))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "model" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("models")
    if marker is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: a test with a 'model' argument needs @pytest.mark.models")
    session = metafunc.config.stash[_SESSION]
    entries = session.registry.select(tuple(marker.kwargs.get("all_of", ())), tuple(marker.kwargs.get("any_of", ())))
    metafunc.parametrize("model", entries, ids=[e.id for e in entries])


class ClaimContext:
    """What a claim test uses: statistics of its model, and a way to state its verdict."""

    def __init__(self, session: AnisoSession, result: R.ClaimResult, entry: ModelEntry | None):
        self._session = session
        self.result = result
        self.entry = entry

    @property
    def settings(self) -> Settings:
        return self._session.settings

    def stats(self) -> ModelStats:
        """The model's streamed statistics; skips the test (with the reason, naming the model) if unavailable."""
        if self.entry is None:
            raise RuntimeError(f"{self.result.claim_id}: this claim test has no model")
        try:
            stats = self._session.provider.get(self.entry)
        except ModelUnavailable as exc:
            self.skip(exc)
        return self.note_inputs(stats)

    def skip(self, exc: ModelUnavailable) -> None:
        """Skip the test for ``exc``, recording whether inputs (a data folder) or the model were missing."""
        self.result.skip_kind = "inputs" if isinstance(exc, InputsMissing) else "model"
        pytest.skip(str(exc))

    def note_inputs(self, stats: ModelStats) -> ModelStats:
        """Record which inputs (corpus, recordings, photographs) ``stats`` came from in the claim's result."""
        corpus = stats.meta.get("corpus", {})
        self.result.inputs = corpus.get("dataset")
        self.result.corpus = corpus.get("label")
        self.result.n_sequences = stats.meta.get("n_sequences")
        self.result.n_tokens = stats.meta.get("n_tokens")
        return stats

    def block_sweeps(self) -> list:
        """The untrained-block sweeps of the model (one :class:`~aniso.experiments.untrained_block.BlockSweep`
        per seed), computed or read from the cache."""
        if self.entry is None or self.entry.source.kind != "init":
            raise RuntimeError(f"{self.result.claim_id}: block_sweeps() needs an untrained-block registry entry")
        sweeps = self._session.blocks.get(self.entry)
        spec = sweeps[0].spec
        self.result.corpus = (f"untrained block: {spec.n_sequences} sequences x {spec.seq_len} embeddings drawn "
                              f"from its table, {len(spec.norms)} bias norms, {len(sweeps)} seeds")
        self.result.n_sequences = spec.n_sequences
        self.result.n_tokens = spec.n_sequences * spec.seq_len
        return sweeps

    def reference_stats(self, all_of: tuple[str, ...]) -> tuple[ModelEntry, ModelStats]:
        """Statistics of the first registry entry with tags ``all_of`` whose model is available.

        Skips the test, naming every entry tried and why, if none is available.
        """
        tried = []
        for entry in self._session.registry.select(all_of):
            try:
                return entry, self._session.provider.get(entry)
            except ModelUnavailable as exc:
                tried.append(str(exc))
        pytest.skip(f"no reference model with tags {list(all_of)} is available: " + ("; ".join(tried) or "none listed"))

    def available_stats(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = ()
                        ) -> tuple[list[tuple[ModelEntry, ModelStats]], list[str]]:
        """Statistics of every registry entry with these tags whose model is available here.

        Returns ``(available, unavailable)``: (entry, stats) pairs in registry
        order, and one reason per entry that could not be had (naming it).
        """
        got, missing = [], []
        for entry in self._session.registry.select(all_of, any_of):
            try:
                got.append((entry, self._session.provider.get(entry)))
            except ModelUnavailable as exc:
                missing.append(str(exc))
        return got, missing

    def conclude(self, holds: bool, measured: dict[str, Any], threshold: str) -> None:
        """Record the verdict and make the test outcome follow the verdict policy (:mod:`aniso.verdicts`): pass,
        fail (a new or changed finding on the inputs the registry recorded it on) or xfail (a recorded finding).
        A verdict that differs from the one recorded on other inputs passes and is marked as such."""
        r = self.result
        r.measured = measured
        r.threshold = threshold
        expected, recorded_inputs = (self._session.registry.expectation(self.entry, r.claim_id)
                                     if self.entry is not None else (None, None))
        r.expected = expected.model_dump() if expected is not None else None
        decision = decide(holds, expected.verdict if expected else None, expected.reason if expected else "",
                          recorded_inputs, r.inputs)
        r.verdict, r.differs_from_record = decision.verdict, decision.differs_from_record
        numbers = ", ".join(f"{k}={_fmt(v)}" for k, v in measured.items() if not isinstance(v, (list, dict)))
        model = self.entry.id if self.entry is not None else "(no model)"
        if decision.outcome is Outcome.XFAIL:
            r.reason = decision.reason
            pytest.xfail(f"{r.claim_id} on {model}: expected not to hold: {decision.reason} ({numbers})")
        if decision.outcome is Outcome.PASS:
            r.reason = decision.reason
            return
        if decision.verdict == R.UNEXPECTEDLY_HOLDS:
            r.reason = decision.reason
            pytest.fail(f"{r.claim_id} on {model}: expected not to hold, but it holds ({numbers}; {threshold}). "
                        "Update the expected verdict in the registry if this is a real change.")
        r.reason = f"{numbers}; rule: {threshold}"
        pytest.fail(f"{r.claim_id} does not hold on {model}: {numbers} (rule: {threshold})", pytrace=False)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


@pytest.fixture
def claim(request: pytest.FixtureRequest) -> ClaimContext:
    """The :class:`ClaimContext` of the current claim test."""
    marker = request.node.get_closest_marker("claim")
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{request.node.nodeid}: the 'claim' fixture needs @pytest.mark.claim('<id>')")
    c = get_claim(marker.args[0])
    session = request.config.stash[_SESSION]
    entry = request.getfixturevalue("model") if "model" in request.fixturenames else None
    result = R.ClaimResult(c.id, c.paper, c.section, c.figure, c.statement,
                           entry.id if entry is not None else None, request.node.nodeid)
    request.node.stash[_RESULT] = result
    return ClaimContext(session, result, entry)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    result = item.stash.get(_RESULT, None)
    if result is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        result.seconds = round(report.duration, 2)
        if report.skipped and not hasattr(report, "wasxfail"):
            result.verdict = R.SKIPPED
            result.reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            result.reason = result.reason.removeprefix("Skipped: ")
        elif report.failed and result.verdict not in (R.DOES_NOT_HOLD, R.UNEXPECTEDLY_HOLDS):
            result.verdict = R.ERROR
            result.reason = str(report.longrepr).strip().splitlines()[-1][:500] if report.longrepr else "error"
        session = item.config.stash[_SESSION]
        if result not in session.results:
            session.results.append(result)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    aniso = session.config.stash.get(_SESSION, None)
    if aniso is None or not (aniso.results or aniso.pipeline):
        return
    for entry in aniso.registry:
        if entry.must_run:
            skipped = [r for r in aniso.results
                       if r.model_id == entry.id and r.verdict == R.SKIPPED and r.skip_kind != "inputs"]
            if skipped:
                aniso.must_run_failures.append(
                    f"{entry.id} is marked must_run but {len(skipped)} claim test(s) skipped: {skipped[0].reason}")
    if aniso.must_run_failures and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _write_report(aniso)


@pytest.fixture
def aniso_session(request: pytest.FixtureRequest) -> AnisoSession:
    """The run's :class:`AnisoSession` (settings, registry, statistics, pipeline checks)."""
    return request.config.stash[_SESSION]


def _write_report(aniso: AnisoSession) -> None:
    from .report import write_html_report

    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(aniso.settings.report_dir)
    if not run_dir.is_absolute():
        run_dir = aniso.root / run_dir
    run_dir = run_dir / f"run-{stamp}"
    computed = aniso.provider.computed()
    corpus = next((s.meta.get("corpus") for s in computed.values()
                   if s.meta.get("corpus", {}).get("modality") is None), None)
    prov = R.provenance(aniso.root, dict(vars(aniso.settings)), corpus)
    s = aniso.settings
    prov["profile"] = {"name": s.profile, "sizes": {k: getattr(s, k) for k in PROFILES[s.profile]},
                       "overridden": sorted(k for k, v in PROFILES[s.profile].items() if getattr(s, k) != v)}
    models = {}
    for mid, s in computed.items():
        e = aniso.registry.get(mid)
        models[mid] = R.model_layers_doc(s) | {"entry": {
            "modality": e.modality, "granularity": e.granularity, "architecture": e.architecture, "role": e.role,
            "family": e.family, "description": e.description, "miniature": e.miniature}}
    experiments = {}
    if aniso.blocks is not None and aniso.blocks.computed():
        experiments["untrained_block"] = {mid: [s.to_dict() for s in sweeps]
                                          for mid, sweeps in aniso.blocks.computed().items()}
    if aniso.pipeline:
        experiments["pipeline_offline"] = aniso.pipeline
    registry = {e.id: {"modality": e.modality, "granularity": e.granularity, "architecture": e.architecture,
                       "family": e.family, "trained": e.trained, "miniature": e.miniature} for e in aniso.registry}
    prov["inputs"] = [s.meta["corpus"] for s in computed.values() if s.meta.get("corpus", {}).get("modality")]
    prov["inputs"] = list({d["fingerprint"]: d for d in prov["inputs"]}.values())
    R.write_results(run_dir / "results.json", prov, aniso.results, models, experiments, registry)
    write_html_report(run_dir / "results.json", run_dir / "report.html")
    aniso.report_path = run_dir / "report.html"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    aniso = config.stash.get(_SESSION, None)
    if aniso is None or not aniso.results:
        return
    from tabulate import tabulate

    rows, skipped, no_inputs = [], {}, {}
    for r in aniso.results:
        if r.verdict == R.SKIPPED:
            if r.skip_kind == "inputs":
                no_inputs.setdefault(r.reason.split(": ", 1)[-1], []).append(r)
            else:
                skipped.setdefault(r.model_id or "-", r.reason)
            continue
        key = {k: v for k, v in r.measured.items() if not isinstance(v, (list, dict))}
        numbers = ", ".join(f"{k}={_fmt(v)}" for k, v in list(key.items())[:4])
        verdict = r.verdict + (f" ({r.differs_from_record}; differs on these inputs)" if r.differs_from_record else "")
        rows.append([r.claim_id, r.model_id or "-", verdict, numbers])
    terminalreporter.write_sep("=", "aniso: claim verdicts")
    terminalreporter.write_line(tabulate(rows, headers=["claim", "model", "verdict", "measured"], tablefmt="github"))
    inputs = {(r.inputs, r.corpus) for r in aniso.results if r.inputs}
    for dataset, label in sorted(inputs, key=str):
        terminalreporter.write_line(f"inputs: {dataset}: {label}")
    for reason, results in no_inputs.items():
        models = sorted({r.model_id for r in results if r.model_id})
        terminalreporter.write_line(f"inputs missing, {len(results)} claim test(s) of {len(models)} model(s) not run "
                                    f"({', '.join(models)}): {reason}", yellow=True)
    if skipped:
        n = sum(r.verdict == R.SKIPPED and r.skip_kind != "inputs" for r in aniso.results)
        terminalreporter.write_line(f"{n} claim test(s) skipped for {len(skipped)} model(s); reasons in the report. "
                                    f"First: {next(iter(skipped.values()))}")
    for msg in aniso.must_run_failures:
        terminalreporter.write_line(f"ERROR: {msg}", red=True, bold=True)
    if aniso.report_path is not None:
        terminalreporter.write_line(f"report: {aniso.report_path}")
