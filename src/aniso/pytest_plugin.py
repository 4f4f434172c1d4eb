"""The pytest plugin: maps pytest's hooks onto :mod:`aniso.session`, which holds the logic.

Claim tests are marked ``@pytest.mark.claim("<id>")``. A test that takes an
``entry`` argument (a registry entry) and carries ``@pytest.mark.models(all_of=(...), any_of=(...))``
is parametrised over the registry entries those tags select (deselected when the run's model set has none of
them). The ``claim``
fixture gives statistics and records the verdict; the test's outcome follows
the verdict policy (:mod:`aniso.judge.verdicts`). At the end of a run with claim
tests, the session writes ``<report_dir>/<run>/results.json`` and
``report.html`` and the plugin prints its summary. Under pytest-xdist (``pytest -n 2``) each worker sends its
results to the controller, which writes the one report; workers share the statistics cache (each entry is made
once, under a file lock).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from .common.devices import worker_thread_environment

# A pytest-xdist worker's thread pools take its share of the cores from the start: set before the imports below load
# torch, numpy and scipy (see worker_thread_environment).
worker_thread_environment(os.environ)

try:  # torch, transformers, numpy and scipy load here: seconds in which a Ctrl-C would end pytest in a traceback
    from .registry.catalog import CLAIMS, get_claim, statistics_read
    from .registry.claimtests import (k_claim_pointer, marks_problem, models_marker_problem, never_concluded,
                                      unknown_claim)
    from .registry.entries import RegistryError
    from .registry.locate import settings_and_registry
    from .registry.selection import ClaimsFilter, parse_claims
    from .session import AnisoSession, ClaimContext, Skip, family_members
    from .common.settings import add_setting_options, setting_options
    from .judge.verdicts import Outcome
except KeyboardInterrupt:  # (pytest imports a conftest's plugins before it handles Ctrl-C itself)
    import sys

    sys.stderr.write("pytest: interrupted (Ctrl-C) while the aniso plugin was loading; nothing was run\n")
    raise SystemExit(130) from None

_SESSION = pytest.StashKey[AnisoSession]()
_CLAIM = pytest.StashKey[ClaimContext]()
_THREADS = pytest.StashKey[int]()
_FILTER = pytest.StashKey[ClaimsFilter]()
_BENCHMARK_FOLDER = pytest.StashKey["Path | None"]()
_REPORT_MADE = pytest.StashKey["tuple[str, str | None]"]()  # (report folder, the outermost folder the run made)
_SIGNAL = pytest.StashKey[int]()
_SIGNALS_SET = pytest.StashKey[list]()
_DIRECT = pytest.StashKey[bool]()


class AnisoHooks:
    """The hooks the plugin calls, for other plugins (e.g. the one :func:`aniso.api.run_claims` passes to pytest)."""

    @pytest.hookspec(firstresult=False)
    def pytest_aniso_run_finished(self, run: AnisoSession) -> None:
        """A claims run finished (in the process that writes the report, after it is written): ``run`` is its
        :class:`~aniso.session.AnisoSession` (``results``, ``report_path``)."""

    @pytest.hookspec(firstresult=True)
    def pytest_aniso_plan(self, config: pytest.Config):
        """The run's settings and registry, validated where the run entered (``aniso run``, :func:`aniso.api.check`):
        a ``(Settings, Registry)`` pair the plugin takes whole, reading no ``--aniso-*`` option nor ``ANISO_*``
        variable again; None (no plugin answers): the plugin builds them from its options and the environment."""


def pytest_addhooks(pluginmanager) -> None:
    pluginmanager.add_hookspecs(AnisoHooks)


def _benchmark_folder(config: pytest.Config) -> Path | None:
    """The folder pytest-benchmark keeps its saved runs in (``--benchmark-storage``, default ``./.benchmarks``),
    which it makes as pytest starts whether a benchmark runs or not; None where the plugin is not loaded or its
    storage is no folder (a database URL)."""
    try:
        storage = config.getoption("benchmark_storage")
    except ValueError:  # pytest-benchmark not loaded (-p no:benchmark)
        return None
    if not isinstance(storage, str) or not storage.startswith("file://"):
        return None
    return Path(os.path.expanduser(storage[len("file://"):])).absolute()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Note pytest-benchmark's storage folder where it is not there yet, before pytest-benchmark makes it (as pytest
    configures its plugins), so that :func:`pytest_sessionstart` removes it again while it is empty."""
    folder = _benchmark_folder(config)
    config.stash[_BENCHMARK_FOLDER] = folder if folder is not None and not os.path.lexists(folder) else None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remove pytest-benchmark's storage folder where this run made it and it is empty: ``pytest claims/`` from a
    clean folder would otherwise leave an empty ``.benchmarks/`` there. pytest-benchmark stays loaded (a benchmark
    that saves its run makes the folder again, :mod:`pytest_benchmark.storage.file`)."""
    _remove_benchmark_folder(session.config)


def _remove_benchmark_folder(config: pytest.Config) -> None:
    """Remove pytest-benchmark's storage folder where this run made it (:func:`pytest_cmdline_main`) and it is
    empty: as the session starts, and again as pytest ends however it ends (``--help``, a usage error, ``--co``), for
    an exit that never starts a session."""
    folder = config.stash.get(_BENCHMARK_FOLDER, None)
    if folder is not None:
        try:
            folder.rmdir()  # only while empty
        except OSError:
            pass


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--aniso-*`` option of every setting (:func:`aniso.common.settings.add_setting_options`, the table
    ``aniso run`` reads too); values parsed once, by ``Settings.from_sources``. An option given twice is a usage error
    naming it, not the last one winning silently."""
    add_setting_options(parser.getgroup("aniso", "anisotropy claims suite").addoption)


def registry_split_from_rootdir(args, invocation_dir: Path, rootdir: Path) -> str | None:
    """The one warning line for ``--aniso-registry PATH`` given as two words where pytest took the registry's folder
    for its root folder: pytest's own first reading of the arguments takes every existing path among them (an option's
    value too) for the root folder, whose ini file then applies and under which node ids are written, so a run from a
    folder outside it (``cd mine; pytest . --aniso-registry ../checkout/models.yaml``) gets the checkout's. Given
    as one word (``--aniso-registry=PATH``) the value is no argument of its own. ``args``: pytest's invocation
    arguments; None when the option is not given as two words, or the root folder holds the invocation folder or
    does not hold the registry."""
    args = [str(a) for a in args]
    if "--aniso-registry" not in args[:-1]:
        return None
    value = args[args.index("--aniso-registry") + 1]
    registry = (Path(invocation_dir) / value).resolve()
    rootdir, here = Path(rootdir).resolve(), Path(invocation_dir).resolve()
    if here == rootdir or rootdir in here.parents or rootdir not in registry.parents:
        return None
    return (f"aniso: pytest took {rootdir} (the folder of --aniso-registry {value}) for its root folder, not this "
            f"folder: give --aniso-registry={value} as one word")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its share of the cores, not all of them
        from .common.devices import share_cpu_cores

        config.stash[_THREADS] = share_cpu_cores(int(config.workerinput.get("workercount", 1)))
    from .common.settings import flag_value_problem, ini_settings_problem, options_taken_as_paths

    in_ini = ini_settings_problem(getattr(config, "inipath", None))  # `aniso_models = gpt2` in pytest.ini: unread
    if in_ini is not None:
        raise pytest.UsageError(f"aniso settings: {in_ini}")
    taken = options_taken_as_paths(config.args)
    if taken is not None:
        raise pytest.UsageError(f"aniso settings: {taken}")
    switch = flag_value_problem(config.invocation_params.args)  # `--aniso-no-cache false`: no test file "false"
    if switch is not None:
        raise pytest.UsageError(f"aniso settings: {switch}")
    split = registry_split_from_rootdir(config.invocation_params.args, config.invocation_params.dir, config.rootpath)
    if split is not None:
        sys.stderr.write(split + "\n")
    # the two marks, registered here only (the plugin is what reads them), each with its whole signature
    config.addinivalue_line("markers", "claim(id): the paper claim a test measures, its id given positionally "
                            "(aniso list claims)")
    config.addinivalue_line("markers", "models(all_of=(), any_of=(), none_of=()): registry tags selecting the rows "
                            "(models) a claim test taking 'entry' runs on")
    plan = config.hook.pytest_aniso_plan(config=config)
    sent = getattr(config, "workerinput", {}).get("aniso_settings")
    if plan is not None:  # validated where the run entered: taken whole
        settings, registry = plan
    elif sent is not None:  # a pytest-xdist worker: the controller's settings, as they were validated there
        from dataclasses import fields as _fields

        from .common.settings import Settings
        from .registry.locate import REGISTRY_SETTING, open_registry

        try:
            settings = Settings(**{f.name: sent[f.name] for f in _fields(Settings) if f.name in sent})
            registry = open_registry(Path(settings.registry), REGISTRY_SETTING)
        except (RegistryError, ValueError) as exc:
            raise pytest.UsageError(f"aniso settings: {exc}") from None
    else:
        texts = {name: config.getoption(opt) for name, opt, _, _ in setting_options()}
        try:
            settings, registry = settings_and_registry(texts=texts, root=config.rootpath)
        except RegistryError as exc:  # names the registry file, the entry and the field
            raise pytest.UsageError(str(exc)) from None
        except ValueError as exc:
            raise pytest.UsageError(f"aniso settings: {exc}") from None
        _inputs_options_read(texts, settings, registry)
    try:
        if not hasattr(config, "workerinput") and not getattr(getattr(config, "option", None), "collectonly", False):
            # where the results will be written, before the run computes anything (the other doors check it too)
            from .common.settings import _check_writable_folder, _where

            config.stash[_REPORT_MADE] = (settings.report_dir,
                                          _check_writable_folder(settings.report_dir, _where("report_dir")))
        junit = _junit_file_problem(config)
        if junit is not None:
            raise ValueError(junit)
        config.stash[_FILTER] = parse_claims(settings.claims)
    except ValueError as exc:
        raise pytest.UsageError(f"aniso settings: {exc}") from None
    try:
        config.stash[_SESSION] = AnisoSession.start(settings, registry, Path(config.rootpath))
    except RegistryError as exc:
        raise pytest.UsageError(f"aniso settings: models: {exc}") from None
    except ValueError as exc:  # an unreadable twin manifest (setting twin)
        raise pytest.UsageError(f"aniso settings: {exc}") from None
    outside = _node_id_outside_models(config.args, config.stash[_SESSION])
    if outside is not None:
        raise pytest.UsageError(f"aniso settings: {outside}")
    # `pytest claims/` (the door of aniso run sets its own): signals answered once claim tests are collected
    config.stash[_DIRECT] = plan is None and not hasattr(config, "workerinput")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Where pytest's ``-k`` left no test and names a claim id (``-k G.token-nlp-anisotropic``: test names hold no
    claim ids), keep the line pointing to ``--aniso-claims`` for the terminal summary (:func:`k_claim_pointer`).
    Where ``pytest claims/`` collected claim tests (marked ``claim`` or ``models``; not a run of unit tests),
    answer a signal that ends the process as Ctrl-C while they run (:func:`_answer_signals_as_interrupt`)."""
    config = session.config
    if not session.items and config.stash.get(_SESSION, None) is not None:
        # pytest's -k left no test: where its expression names a claim id, the summary points to --aniso-claims
        line = k_claim_pointer(getattr(config.option, "keyword", "") or "")
        if line is not None:
            config.stash[_K_CLAIM] = line
    if config.stash.get(_DIRECT, False) and any(item.get_closest_marker("claim") is not None
                                                or item.get_closest_marker("models") is not None
                                                for item in session.items):
        _answer_signals_as_interrupt(config)


def _claims_module(path: str) -> bool:
    """Whether the file ``path`` is a claims module (:func:`aniso.registry.locate.is_claims_module`): a unit test's
    parameter that happens to be a registry id is not taken for a model."""
    from .registry.locate import is_claims_module

    try:
        with open(path, "rb") as f:
            return is_claims_module(f.read(1 << 20))
    except OSError:
        return False


def _node_id_outside_models(args, claims_run) -> str | None:
    """Why a node id among pytest's ``args`` (``…::test_x[gpt2]``) selects a test of a registry row outside the
    run's model set (setting ``models``), which pytest would report only as "not found … (no match in any of
    [<Module …>])"; None otherwise. The tests over registry rows are parametrised by the row's id."""
    left_out = {e.id for e in claims_run.left_out}
    for arg in args:
        arg = str(arg)
        if "::" not in arg or not arg.endswith("]") or "[" not in arg:
            continue
        param = arg[arg.rindex("[") + 1:-1]
        if param in left_out and _claims_module(arg.split("::", 1)[0]):
            return (f"the test {arg} runs on the registry row {param!r}, which is outside the run's model set "
                    f"(setting models: {claims_run.settings.models!r}); add it, e.g. --aniso-models {param}")
    return None


def _answer_signals_as_interrupt(config: pytest.Config) -> None:
    """In ``pytest claims/`` (the main thread, once claim tests are collected), the first signal that ends the
    process (SIGTERM from ``kill`` or a scheduler, SIGHUP...: :data:`aniso.common.signals.ENDING_SIGNALS`, where no
    handler is set and it is not ignored) raises KeyboardInterrupt where it arrives, as Ctrl-C does: pytest stops,
    the results of the tests that ran are written, the statistics measured stay cached; :func:`pytest_unconfigure`
    then says so in one line and ends the process by the signal. A second signal ends it at once."""
    import signal
    import threading

    from .common.signals import ENDING_SIGNALS

    if threading.current_thread() is not threading.main_thread():
        return
    signums = [signum for signum in ENDING_SIGNALS if signal.getsignal(signum) is signal.SIG_DFL]

    def on_signal(signum, frame):
        if config.stash.get(_SIGNAL, None) is None:
            config.stash[_SIGNAL] = signum
            raise KeyboardInterrupt(f"ended by {signal.Signals(signum).name}")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in signums:
        signal.signal(signum, on_signal)
    config.stash[_SIGNALS_SET] = signums


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put back the signal handlers :func:`_answer_signals_as_interrupt` set; remove pytest-benchmark's empty storage
    folder this run made (:func:`_remove_benchmark_folder`) and the report folder the run
    created (and checked) where it wrote nothing in it; after a signal answered as Ctrl-C, say in one line what is
    kept and end the process by that signal."""
    import signal
    import sys

    for signum in config.stash.get(_SIGNALS_SET, []):
        signal.signal(signum, signal.SIG_DFL)
    _remove_benchmark_folder(config)  # pytest --help (or another early exit) started no session
    claims_run = config.stash.get(_SESSION, None)
    report_dir, made = config.stash.get(_REPORT_MADE, (None, None))
    if made is not None:  # also when a usage error stopped pytest before the run started
        from .common.settings import remove_empty_folders

        remove_empty_folders(report_dir, made)
    signum = config.stash.get(_SIGNAL, None)
    if signum is None:
        return
    if claims_run is not None:
        from .common.signals import interrupted_line

        report = claims_run.report_path
        line = interrupted_line(claims_run.settings, Path(report).with_name("results.json") if report else None,
                                signum)
    else:
        line = f"interrupted ({signal.Signals(signum).name})"
    try:
        sys.stderr.write(f"pytest: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), signum)


def _inputs_options_read(texts: dict, settings, registry) -> None:
    """Raise pytest.UsageError (one line) naming an ``--aniso-*`` option of inputs (``--aniso-n-sequences``,
    ``--aniso-corpus``, ...) given on the command line that no model of the run reads (a vision model only takes
    ``--aniso-n-images``): it would be silently ignored. Not in a twin run (``--aniso-twin``: its sizes are given
    for every kind of inputs, and its corpus trains the twins' tokenizers); a model set that selects nothing is left
    to the session, which names it."""
    from .extract.modalities import unread_inputs_setting

    if settings.twin:
        return
    given = {name: f"--aniso-{name.replace('_', '-')} {value}" for name, value in texts.items() if value is not None}
    if not given:
        return
    try:
        chosen, _ = registry.model_set(settings.models)
    except (RegistryError, ValueError):
        return
    problem = unread_inputs_setting(given, list(chosen))
    if problem is not None:
        raise pytest.UsageError(f"aniso settings: {problem}")


def _model_of(item: pytest.Item):
    """The registry entry a claim test is parametrised over, or None."""
    callspec = getattr(item, "callspec", None)
    entry = callspec.params.get("entry") if callspec is not None else None
    return entry if item.get_closest_marker("claim") is not None and hasattr(entry, "id") else None


def _no_model(item: pytest.Item) -> bool:
    """Whether ``item`` is a claim test over registry models of which the run's model set selects none (pytest's
    placeholder for an empty parameter set)."""
    callspec = getattr(item, "callspec", None)
    return (callspec is not None and "entry" in callspec.params and not hasattr(callspec.params["entry"], "id")
            and item.get_closest_marker("claim") is not None and item.get_closest_marker("models") is not None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup``: every test over one model on one worker (:mod:`aniso.common.workers`)."""
    claims_run = config.stash.get(_SESSION, None)
    if config.getvalue("dist") != "loadgroup" or claims_run is None:
        return None
    from .common.workers import model_group_scheduler
    from .registry.catalog import CLAIMS

    return model_group_scheduler(config, log, [e.id for e in claims_run.registry],
                                 lambda claim: claim in CLAIMS and CLAIMS[claim].compares_models)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Compute only the statistics that the selected claims read (:attr:`aniso.registry.catalog.Claim.statistics`).

    Each claim test over a model is marked ``xdist_group(<model id>)``: with ``pytest -n 2 --dist loadgroup`` all
    of a model's claims run on one worker, which pays its statistics once while the other worker measures another
    model (with plain ``--dist load`` the workers often wait on each other's file lock for the same model).
    """
    claims_run = config.stash.get(_SESSION, None)
    if claims_run is None:
        return
    for item in items:  # before anything is measured: a claim id the catalogue lacks is a usage error, one line
        problem = marks_problem(item, _known_tags(config))
        if problem is not None:
            raise pytest.UsageError(problem)
        marker = item.get_closest_marker("claim")
        if marker is not None and marker.args and marker.args[0] not in CLAIMS:
            raise pytest.UsageError(unknown_claim(item, marker.args[0]))
    seen: set[str] = set()
    for item in items:  # a test collected twice would be recorded twice: results.json would hold one result twice
        if item.get_closest_marker("claim") is not None:
            test = claim_test_id(item)  # its file and name (a node id loses the file where pytest's rootdir is
            if test in seen:            # elsewhere: two files' test_a would read as one test twice)
                raise pytest.UsageError(
                    f"{test} is collected twice (a file or folder named twice with --keep-duplicates); "
                    "a claim test is judged once: name each file once, or leave out --keep-duplicates")
            seen.add(test)
    # A claim test over models that no model of the run's set selects has an empty parameter set: it measures
    # nothing, so it is deselected rather than reported as a skip ("got empty parameter set") in every run.
    empty = [item for item in items if _no_model(item)]
    if empty:
        config.hook.pytest_deselected(items=empty)
        gone = set(map(id, empty))
        items[:] = [item for item in items if id(item) not in gone]
    # a model's claims on one pytest-xdist worker (--dist loadgroup); without pytest-xdist (-p no:xdist) the mark is
    # nobody's, unregistered: --strict-markers or -W error would end the run on it
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            entry = _model_of(item)
            if entry is not None:
                item.add_marker(pytest.mark.xdist_group(entry.id))
    wanted = config.stash[_FILTER]
    if not wanted.everything:
        keep, drop = [], []
        for item in items:
            marker = item.get_closest_marker("claim")
            (keep if marker is None or wanted.selects(marker.args[0]) else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        if drop and not keep:  # pytest says only "N deselected": the summary says where the claims' tests are
            from .registry.claimtests import claim_test_files, claims_filter_pointer, default_claims_folder

            start = config.invocation_params.dir  # the folders of the files given, else the registry's claims
            files = claim_test_files([item.path.parent for item in drop], wanted.selects, start) or claim_test_files(
                [f for f in [default_claims_folder(claims_run.registry.path)] if f is not None], wanted.selects, start)
            config.stash[_K_CLAIM] = claims_filter_pointer(str(wanted), files)
    for item in items:  # the largest family each adjusted claim's p-values can be adjusted across
        marker = item.get_closest_marker("claim")
        if marker is not None and marker.args and _model_of(item) is not None and get_claim(marker.args[0]).adjusted:
            claims_run.family_sizes[marker.args[0]] = claims_run.family_sizes.get(marker.args[0], 0) + 1
    claims_run.provider.statistics = statistics_read(
        m.args[0] for item in items for m in item.iter_markers("claim") if m.args)


_TAGS = pytest.StashKey[frozenset]()


def _known_tags(config: pytest.Config) -> frozenset:
    """The tags a ``models`` mark may name in this run (:func:`aniso.registry.entries.tag_vocabulary` of the
    registry's rows, those outside the run's model set included)."""
    if _TAGS not in config.stash:
        from .registry.entries import tag_vocabulary

        claims_run = config.stash[_SESSION]
        config.stash[_TAGS] = tag_vocabulary([*claims_run.registry, *claims_run.left_out])
    return config.stash[_TAGS]


_K_CLAIM = pytest.StashKey[str]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "entry" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("models")
    if marker is None and metafunc.definition.get_closest_marker("claim") is None:
        return  # not a claim test: its own 'entry' parameter
    if marker is None:  # refused in one line where the items are collected (marks_problem)
        metafunc.parametrize("entry", [], ids=[])
        return
    session = metafunc.config.stash[_SESSION]
    if models_marker_problem(marker.args, marker.kwargs, _known_tags(metafunc.config)) is not None:
        # refused in one line where the items are collected (marks_problem); no row is selected meanwhile
        metafunc.parametrize("entry", [], ids=[])
        return
    entries = session.registry.select(tuple(marker.kwargs.get("all_of", ())), tuple(marker.kwargs.get("any_of", ())),
                                      tuple(marker.kwargs.get("none_of", ())))
    claim = metafunc.definition.get_closest_marker("claim")
    if claim is not None and claim.args and claim.args[0] in CLAIMS and get_claim(claim.args[0]).over_seeds:
        # A claim about an architecture and recipe: one test per family of seeds, over its first seed's entry.
        entries = [e for e in entries if _first_seed(session.registry, e) == e.id]
    metafunc.parametrize("entry", entries, ids=[e.id for e in entries])


def _first_seed(registry, entry) -> str:
    """The id of the first registry entry (in registry order) among ``entry``'s seeds (:func:`family_members`)."""
    members = {m.id for m in family_members(registry, entry)}
    return next(m.id for m in registry if m.id in members)


class _PytestClaim(ClaimContext):
    """A :class:`~aniso.session.ClaimContext` whose verdict sets the pytest outcome. ``runxfail``: pytest's
    ``--runxfail`` (report xfailing tests as if they were not marked): a recorded finding (expected not to hold) or
    an underpowered verdict then fails the test as the claim not holding would, its verdict unchanged."""

    runxfail = False

    def conclude(self, holds, measured, rule, **kwargs):
        decision, message = super().conclude(holds, measured, rule, **kwargs)
        if decision.outcome is Outcome.XFAIL and self.runxfail:
            pytest.fail(f"{message} [--runxfail: failed as if its record did not mark it]", pytrace=False)
        if decision.outcome is Outcome.XFAIL:
            pytest.xfail(message)
        if decision.outcome is Outcome.FAIL:
            pytest.fail(message, pytrace=False)
        return decision, message


def claim_test_id(item: pytest.Item) -> str:
    """The name a claim result gives its test: the test file's path relative to pytest's rootdir (pytest's node id
    where the file is under it), else relative to the folder pytest was started in, else absolute; then the names
    below the file (class, function with its parameters), joined by ``::``. Unique and naming the file whatever
    pytest took for its rootdir (a file outside it has a node id without its file part); pytest-xdist's ``@<group>``
    suffix is no part of it."""
    path = Path(item.path)
    for base in (item.config.rootpath, item.config.invocation_params.dir):
        try:
            where = path.relative_to(base).as_posix()
            break
        except ValueError:
            continue
    else:
        where = path.as_posix()
    chain = item.listchain()
    first = next((i + 1 for i, node in enumerate(chain) if isinstance(node, pytest.File)), len(chain) - 1)
    return "::".join([where, *(node.name for node in chain[first:])])


@pytest.fixture
def claim(request: pytest.FixtureRequest) -> ClaimContext:
    """The :class:`~aniso.session.ClaimContext` of the current claim test."""
    marker = request.node.get_closest_marker("claim")
    if marker is None or not marker.args:
        raise pytest.UsageError(f"{request.node.nodeid}: the 'claim' fixture needs @pytest.mark.claim('<id>')")
    session = request.config.stash[_SESSION]
    entry = request.getfixturevalue("entry") if "entry" in request.fixturenames else None
    context = session.claim(marker.args[0], entry, claim_test_id(request.node), _PytestClaim)
    context.runxfail = bool(getattr(request.config.option, "runxfail", False))
    request.node.stash[_CLAIM] = context
    return context


@pytest.fixture
def aniso_session(request: pytest.FixtureRequest) -> AnisoSession:
    """The run's :class:`~aniso.session.AnisoSession` (settings, registry, statistics, architecture checks)."""
    return request.config.stash[_SESSION]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A pytest-xdist worker starts each test with its share of the cores, whatever the previous test set."""
    threads = item.config.stash.get(_THREADS, None)
    if threads is not None:
        from .common.devices import keep_cpu_share

        keep_cpu_share(threads)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except Skip as exc:
        pytest.skip(str(exc))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    context = item.stash.get(_CLAIM, None)
    if context is not None and report.when == "call" and report.passed and not context.concluded \
            and not hasattr(report, "wasxfail"):
        # a claim test that ended without a verdict decided nothing: it fails, and its verdict (error) says why
        report.outcome = "failed"
        report.longrepr = never_concluded(claim_test_id(item))
    if context is not None and (report.when == "call" or (report.when == "setup" and not report.passed)):
        xfailed = hasattr(report, "wasxfail")  # the verdict (expected not to hold, underpowered) is already set
        skipped = report.skipped and not xfailed
        detail = report.longrepr[2] if skipped and isinstance(report.longrepr, tuple) else report.longrepr
        if report.failed and call.excinfo is not None and not isinstance(call.excinfo.value, pytest.fail.Exception):
            # an error raised in the test (e.g. conclude's TypeError): its own line, not the traceback's last
            detail = (call.excinfo.exconly().strip().splitlines() or [str(detail)])[0]
        outcome = "skipped" if skipped else "passed" if xfailed else report.outcome
        item.config.stash[_SESSION].record_outcome(context.result, seconds=report.duration, outcome=outcome,
                                                   detail=str(detail) if detail and not xfailed else "")
        if skipped and context.result.skip_kind == "refused" and isinstance(report.longrepr, tuple):
            # the refusal is the run's one line (the aniso summary; exit code: a usage error), not one per test in
            # pytest's list of skips
            report.longrepr = (*report.longrepr[:2], REFUSED_SKIP)
    return report


#: What pytest's list of skips (``-ra``) says of a claim test whose model or setting was refused: the refusal itself
#: is printed once, in the aniso summary.
REFUSED_SKIP = "refused: the aniso summary names why"


def _junit_file_problem(config: pytest.Config) -> str | None:
    """One line on pytest's ``--junitxml`` file where it cannot be written (a folder, a device such as /dev/full
    that refuses writes, a folder on its way that cannot be made or written: :func:`aniso.common.files.
    unwritable_path`), or None. Checked before anything is measured: pytest's junitxml writes it at session finish,
    after every model ran; the check writes nothing."""
    path = getattr(getattr(config, "option", None), "xmlpath", None)
    if not path or hasattr(config, "workerinput"):  # no junit file, or a pytest-xdist worker (the controller writes)
        return None
    from .common.files import unwritable_path

    problem = unwritable_path(path, "file, made")
    return None if problem is None else (f"--junitxml {path}: {problem}; give a path pytest can write (it would fail "
                                         "only once the claims are measured)")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's verdicts, results.json and report, written first at session finish: before other plugins' session
    finish (pytest's junitxml writing its file), whose failure would otherwise leave none of them."""
    claims_run = session.config.stash.get(_SESSION, None)
    if claims_run is None:
        return
    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker: the controller writes the one report
        session.config.workeroutput["aniso"] = claims_run.worker_payload()
        return
    stop = session.shouldfail or session.shouldstop
    if stop or exitstatus == pytest.ExitCode.INTERRUPTED:
        claims_run.note_not_run(
            f"pytest: {stop}" if isinstance(stop, str) else "interrupted",
            [claim_test_id(item) for item in session.items
             if item.get_closest_marker("claim") is not None or item.get_closest_marker("models") is not None])
    if claims_run.finish() and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if claims_run.refusal_fails and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        # nothing measured but refusals, or a must_run model refused (bad input, one line in the summary): pytest's
        # usage error, as `aniso run` exits 2
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    if claims_run.stopped:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    session.config.hook.pytest_aniso_run_finished(run=claims_run)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: a worker starts; it gets the controller's settings whole (the registry file among them), so
    that it reads no option nor variable again and runs on the same plan (a detected model's temporary registry
    included)."""
    claims_run = node.config.stash.get(_SESSION, None)
    if claims_run is not None:
        from dataclasses import asdict

        node.workerinput["aniso_settings"] = asdict(claims_run.settings)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist: a worker finished; its claim results join the controller's run."""
    claims_run = node.config.stash.get(_SESSION, None)
    payload = getattr(node, "workeroutput", {}).get("aniso")
    if claims_run is not None and payload:
        claims_run.absorb(payload)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    claims_run = config.stash.get(_SESSION, None)
    pointer = config.stash.get(_K_CLAIM, None)
    if pointer is not None:
        terminalreporter.write_line(pointer, yellow=True)
    # -qq (as aniso.check runs it unless verbose): no table; the results file, the report and the API's object hold it
    if claims_run is None or not claims_run.results or config.get_verbosity() <= -2:
        return
    terminalreporter.write_sep("=", "aniso: claim verdicts")
    for style, line in claims_run.summary_lines():
        terminalreporter.write_line(line, yellow=style == "warn", red=style == "error", bold=style == "error")
