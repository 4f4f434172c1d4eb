"""Bad input and faults: each gives a one-line error naming the culprit (file, field, model, layer), and nothing
already computed is lost."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from aniso.extract.hidden import Batch
from aniso.stats.pipeline import StatsProvider, compute_stats
from aniso.registry.entries import ModelEntry, Registry, RegistryError, load_registry
from aniso.common.settings import Settings
from aniso.stats.accumulators import LayerAccumulator
from aniso.stats.results import ModelStats

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "aniso"
ENTRY = """models:
  - id: m
    source: {kind: hub, repo: org/m}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""


# -- the registry -----------------------------------------------------------------------------------------------

def test_malformed_yaml_names_the_file_and_line(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text("models:\n  - id: m\n    source: {kind: hub\n")
    with pytest.raises(RegistryError, match=r"models\.yaml: not valid YAML at line \d"):
        load_registry(reg)


def test_a_misspelt_field_names_the_entry_and_suggests_the_field(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text(ENTRY.replace("modality: text", "modalty: text"))
    with pytest.raises(RegistryError) as exc:
        load_registry(reg)
    assert "models[0] (id 'm')" in str(exc.value) and "did you mean 'modality'" in str(exc.value)
    reg.write_text(ENTRY.replace("repo: org/m", "repo: org/m, revison: main"))
    with pytest.raises(RegistryError, match="did you mean 'revision'"):
        load_registry(reg)


def test_a_hub_model_or_revision_that_is_not_here_is_skipped_naming_both(tmp_path):
    """Offline, a hub id or revision that does not exist cannot be told from one not downloaded: the skip reason
    names the model, the id and the revision, and says the hub cannot be reached."""
    from aniso.sources import ModelUnavailable, load_model
    from aniso.sources.base import HubStatus, SourceContext

    entry = ModelEntry.model_validate({**_row(), "source": {"kind": "hub", "repo": "nobody/no-such-model-xyz",
                                                             "revision": "no-such-rev"}})
    offline = HubStatus()
    offline._reachable = False
    with pytest.raises(ModelUnavailable, match=r"m: .*'nobody/no-such-model-xyz' at revision 'no-such-rev'"):
        load_model(entry, SourceContext(hub=offline))


def _row():
    return dict(id="m", source={"kind": "hub", "repo": "org/m"}, modality="text", granularity="subword",
                architecture="transformer", role="encoder", family="bert")


def test_remote_code_is_refused_without_the_opt_in():
    with pytest.raises(ValueError, match="trust_remote_code: true is only allowed with needs_remote_code"):
        ModelEntry.model_validate({**_row(), "trust_remote_code": True})
    from aniso.sources import ModelUnavailable, load_model

    with pytest.raises(ModelUnavailable, match="custom code .* trust_remote_code: true"):
        load_model(ModelEntry.model_validate({**_row(), "needs_remote_code": True}))


def test_no_pickle_is_read_without_weights_only():
    """Every torch.load in the package passes weights_only=True, and nothing unpickles."""
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        for call in re.findall(r"torch\.load\((.*?)\)\s*$", text, re.M):
            assert "weights_only=True" in call, f"{path}: torch.load({call})"
        assert not re.search(r"\bpickle\.loads?\(|\bjoblib\.load\(", text), path


# -- text, audio, images ------------------------------------------------------------------------------------------

def test_a_corpus_that_is_missing_empty_or_not_text_is_named(tmp_path):
    from aniso.inputs.text import CorpusError, load_corpus

    with pytest.raises(CorpusError, match="nowhere.txt does not exist"):
        load_corpus(tmp_path / "nowhere.txt", 4, 0)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(CorpusError, match=r"empty.txt has 0 paragraph\(s\)"):
        load_corpus(tmp_path / "empty.txt", 4, 0)
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(CorpusError, match="binary.bin is not UTF-8 text"):
        load_corpus(tmp_path / "binary.bin", 4, 0)


def _wav(path: Path, audio: np.ndarray, rate: int) -> None:
    import soundfile

    soundfile.write(path, audio, rate)


def test_audio_of_another_rate_or_several_channels_becomes_16k_mono(tmp_path):
    from aniso.inputs.media import load_speech

    t = np.arange(8000) / 8000
    _wav(tmp_path / "a.wav", 0.3 * np.sin(2 * np.pi * 220 * t), 8000)  # 1 s at 8 kHz
    _wav(tmp_path / "b.wav", np.stack([0.2 * np.sin(2 * np.pi * 330 * t)] * 2, 1), 8000)  # stereo
    clips = load_speech(tmp_path, 2, 0).items
    assert [c.shape for c in clips] == [(16000,), (16000,)] and all(c.dtype == np.float32 for c in clips)


@pytest.mark.parametrize("name, content, message", [
    ("corrupt.wav", b"RIFF\x00\x00not audio at all", "cannot read .*corrupt.wav"),
    ("silent.wav", None, r"silent.wav is silent"),
])
def test_corrupt_or_silent_audio_is_named(tmp_path, name, content, message):
    from aniso.inputs.media import InputsUnavailable, load_speech

    if content is None:
        _wav(tmp_path / name, np.zeros(16000), 16000)
    else:
        (tmp_path / name).write_bytes(content)
    with pytest.raises(InputsUnavailable, match=message):
        load_speech(tmp_path, 1, 0)


def test_greyscale_and_rgba_photographs_become_rgb(tmp_path):
    from PIL import Image

    from aniso.inputs.media import load_images

    Image.new("L", (64, 48), 128).save(tmp_path / "grey.png")
    Image.new("RGBA", (64, 48), (10, 20, 30, 0)).save(tmp_path / "rgba.png")
    images = load_images(tmp_path, 2, 0).items
    assert {im.mode for im in images} == {"RGB"} and {im.size for im in images} == {(64, 48)}


@pytest.mark.parametrize("name, make, message", [
    ("corrupt.jpg", lambda p: p.write_bytes(b"\xff\xd8\xff not a jpeg"), "cannot read .*corrupt.jpg"),
    ("tiny.png", lambda p: __import__("PIL.Image").Image.new("RGB", (4, 4)).save(p), r"tiny.png is 4 x 4 pixels"),
])
def test_corrupt_or_tiny_images_are_named(tmp_path, name, make, message):
    from aniso.inputs.media import InputsUnavailable, load_images

    make(tmp_path / name)
    with pytest.raises(InputsUnavailable, match=message):
        load_images(tmp_path, 1, 0)


# -- hidden states --------------------------------------------------------------------------------------------------

def _entry():
    return ModelEntry.model_validate(_row())


def test_nan_or_inf_hidden_states_are_reported_with_their_layer():
    good = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    bad = good.copy()
    bad[2, 1] = np.nan
    bad[4, 0] = np.inf
    import torch

    batches = [Batch([torch.from_numpy(good), torch.from_numpy(bad)], 2)]
    from aniso.sources import ModelRefused

    with pytest.raises(ModelRefused, match=r"^m: layer 1: hidden states contain NaN or infinite values: 2 of 6 "
                                           r"vectors \(1 with NaN\); the model cannot be measured"):
        compute_stats(_entry(), iter(batches), ["0", "1"], Settings(), {})


def test_all_zero_vectors_are_left_out_of_the_cosine_and_an_all_zero_layer_is_named():
    acc = LayerAccumulator(3, reservoir_size=4, svd_batch_size=2)
    acc.update(np.array([[1.0, 0, 0], [0, 0, 0], [1.0, 1.0, 0], [0, 0, 0]]))
    s = acc.summary()
    assert s.n_zero == 2 and s.mean_cosine == pytest.approx(np.sqrt(0.5))
    dead = LayerAccumulator(3, reservoir_size=4, svd_batch_size=2)
    dead.update(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"^m: layer 7: .*5 of 5 vectors are all zero"):
        ModelStats("m", ["7"], [dead]).summaries()


def test_a_hidden_size_that_differs_from_the_config_is_named(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    from aniso.extract.hidden import iter_text_hidden_states

    model = AutoModel.from_pretrained(tiny_bert_dir)
    model.config.hidden_size = 48  # the weights are 32 wide
    with pytest.raises(RuntimeError, match="width 32, its config says hidden_size 48"):
        next(iter_text_hidden_states(model, AutoTokenizer.from_pretrained(tiny_bert_dir), ["w1 w2", "w3"]))


def test_a_series_whose_layer_count_changes_between_checkpoints_is_refused(monkeypatch, tmp_path):
    from aniso.stats import dynamics
    from aniso.stats.dynamics import CheckpointMeasure, SeriesProvider

    entry = ModelEntry.model_validate({**_row(), "checkpoints": {"steps": [0, 10], "vary": {"revision": "s{step}"}}})
    layers = {0: 3, 10: 4}
    monkeypatch.setattr(dynamics, "measure_checkpoint", lambda model, items, settings, step: CheckpointMeasure(
        step, [{"mean_cosine": 0.1}] * layers[step], *(np.zeros((1, 1, 2)),) * 2, *(np.zeros((1, 1, 2, 2)),) * 2,
        np.zeros((1, 1)), meta={"seconds": 0}, sink=np.zeros((1, 1))))
    monkeypatch.setattr("aniso.sources.load_model", lambda entry, ctx=None: None)
    monkeypatch.setattr("aniso.sources.source_fingerprint", lambda entry, ctx=None: entry.source.revision)
    provider = StatsProvider(Settings(cache_dir=str(tmp_path), n_sequences=4), Registry([entry]))
    with pytest.raises(ValueError, match=r"^m: checkpoint step 10 has 4 hidden-state layers, step 0 has 3"):
        SeriesProvider(provider).get(entry)


# -- the cache and the report: interrupts, full disks, two writers --------------------------------------------------

def _provider(tmp_path, entries):
    settings = Settings(cache_dir=str(tmp_path / "cache"), n_sequences=8, max_length=16)
    return StatsProvider(settings, Registry(entries))


def _bert(tiny_bert_dir, ident):
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "local", "path": str(tiny_bert_dir)},
                                          modality="text", granularity="subword", architecture="transformer",
                                          role="encoder", family="bert"))


def test_an_interrupted_run_keeps_every_model_already_cached(tmp_path, tiny_bert_dir, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) while the second model is extracted: the first model's cache entry is whole and
    the next run reads it instead of computing it again; no half-written file is left."""
    a, b = _bert(tiny_bert_dir, "a"), _bert(tiny_bert_dir, "b")
    first = _provider(tmp_path, [a, b])
    first.get(a)
    real = StatsProvider._compute

    def interrupted(self, entry, *args):
        if entry.id == "b":
            raise KeyboardInterrupt
        return real(self, entry, *args)

    monkeypatch.setattr(StatsProvider, "_compute", interrupted)
    with pytest.raises(KeyboardInterrupt):
        first.get(b)
    assert not list((tmp_path / "cache").glob("*.tmp"))
    again = _provider(tmp_path, [a, b]).get(a)
    assert again.meta["cache"]["hit"] is True


def test_a_full_disk_while_caching_keeps_the_statistics_of_the_run(tmp_path, tiny_bert_dir, monkeypatch):
    from aniso.stats.cache import StatsCache

    def full(self, key, stats):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(StatsCache, "save", full)
    with pytest.warns(RuntimeWarning, match=r"a: could not write the statistics cache entry .*No space left"):
        stats = _provider(tmp_path, [_bert(tiny_bert_dir, "a")]).get(_bert(tiny_bert_dir, "a"))
    assert stats.summaries()[0].count > 0


def test_a_full_disk_while_writing_the_report_fails_the_run_naming_the_folder(tmp_path, monkeypatch):
    from aniso.common import files
    from aniso.judge.results import ClaimResult
    from aniso.session import AnisoSession

    session = AnisoSession.start(Settings(report_dir=str(tmp_path / "reports"), cache_dir=str(tmp_path / "c")),
                                 Registry([]), tmp_path)
    session.results.append(ClaimResult(claim_id="G.isotropic-baseline", paper="G", section="", figure="",
                                       statement="", model_id=None, test="t", verdict="holds"))

    def full(path, write):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "atomic_write", full)
    assert session.finish() is True
    assert "could not write the report" in session.must_run_failures[0]
    assert "No space left" in session.must_run_failures[0] and str(tmp_path / "c") in session.must_run_failures[0]


def test_two_runs_writing_the_same_cache_entry_compute_it_once(tmp_path, tiny_bert_dir):
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: m\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {
        "ANISO_CACHE_DIR": str(tmp_path / "cache"), "ANISO_N_SEQUENCES": "32", "CI": "1"}
    cmd = [sys.executable, "-m", "aniso.cli", "extract", "m", "--registry", str(reg)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    said = sorted(o[0].strip().rsplit("(", 1)[-1] for o in outs)
    assert said == ["hit)", "written)"], outs
    assert len(list((tmp_path / "cache").glob("*.safetensors"))) == 1


# -- HTML and determinism -----------------------------------------------------------------------------------------

def test_the_interval_and_statistic_names_are_escaped_in_the_report(tmp_path):
    from aniso.report import render_html
    from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance

    evil = "<script>alert(1)</script>"
    r = ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="", figure="", statement="", model_id=evil,
                    test="t", verdict="holds", measured={"x": evil},
                    uncertainty=Uncertainty(statistic=evil, value=0.1, low=0.0, high=0.3, threshold=0.2,
                                            holds_if="<", holds_share=0.5, fragile=True, n_boot=10, method=evil))
    html = render_html(ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[r]))
    assert evil not in html and html.count("&lt;script&gt;") >= 4


def test_the_same_command_twice_gives_the_same_results_json_apart_from_times(tmp_path, tiny_bert_dir):
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: m\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {"CI": "1", "ANISO_NO_CACHE": "1",
                                                                                  "ANISO_N_SEQUENCES": "16"}
    docs = []
    for run in ("one", "two"):
        # a measured verdict and a seeded one (the drift test's Monte Carlo p-value and its power, underpowered
        # over the 3 hidden states): what a rerun could change
        subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims/test_godey_pretrained.py"), "-q",
                        "--aniso-claims", "G.token-nlp-anisotropic,G.drift-correlation-spearman",
                        "-p", "no:cacheprovider", f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / run}",
                        f"--aniso-cache-dir={tmp_path / 'cache'}"], cwd=ROOT, env=env, capture_output=True,
                       timeout=600)
        text = next((tmp_path / run).glob("run-*/results.json")).read_text()
        text = re.sub(r'"(time|seconds|digest|seal)": [^,\n]+', r'"\1": 0', text).replace(str(tmp_path / run), "REPORTS")
        docs.append(text)
    results = json.loads(docs[0])["results"]
    assert {r["claim_id"] for r in results} == {"G.token-nlp-anisotropic", "G.drift-correlation-spearman"}
    assert any("p_method" in (r.get("measured") or {}) for r in results)
    assert docs[0] == docs[1]


def test_a_recording_scaled_far_outside_its_range_is_skipped_and_named(tmp_path):
    """A float WAV scaled by 1e30 (it would make a speech model's spectrogram overflow to infinity) is skipped and
    named as broken files are; the others are read."""
    import soundfile

    from aniso.inputs.media import load_speech

    t = np.arange(16000) / 16000
    soundfile.write(tmp_path / "good.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000,
                    subtype="FLOAT")
    soundfile.write(tmp_path / "loud.wav", (1e30 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000,
                    subtype="FLOAT")
    with pytest.warns(Warning, match=r"loud\.wav has samples of magnitude up to 1e\+30"):
        got = load_speech(tmp_path, 2, 0)
    assert len(got.items) == 1 and "loud.wav" in dict(got.skipped)


def test_extract_under_no_cache_is_refused_before_it_measures(tmp_path, tiny_bert_dir, monkeypatch, capsys):
    """`ANISO_NO_CACHE=1 aniso extract M`: extract only computes statistics to cache them, so it is refused in one
    line before anything is measured (it computed everything, then said "not written: setting no_cache")."""
    from aniso.cli import main

    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: m\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_N_SEQUENCES", "8")
    monkeypatch.setenv("ANISO_NO_CACHE", "1")
    assert main(["extract", "m", "--registry", str(reg)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == ("aniso extract: setting no_cache is on (ANISO_NO_CACHE), and extract only computes "
                                    "statistics to cache them: unset it, or measure without caching with aniso stats")
    assert captured.out == "" and not (tmp_path / "cache").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc, where no folder can be created")
def test_hub_import_into_a_cache_folder_that_cannot_be_created_names_the_option(tmp_path, tiny_bert_dir, capsys):
    from aniso.cli import main

    assert main(["hub", "import", "org/tiny", str(tiny_bert_dir), "--cache-dir", "/proc/self/nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aniso hub import: --cache-dir /proc/self/nope cannot be created (") and \
        len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_a_hub_cache_variable_naming_a_file_is_refused_by_hub_list_and_import(tmp_path, tiny_bert_dir, capsys,
                                                                             monkeypatch, variable):
    """`HF_HUB_CACHE=FILE aniso hub list` once said "nothing cached" (exit 0), and hub import "[Errno 20] Not a
    directory"; as `--cache-dir FILE`, the variable is named."""
    from aniso.cli import main

    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv(variable, str(afile))
    for command in (["hub", "list"], ["hub", "import", "org/tiny", str(tiny_bert_dir)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and f"environment variable {variable} ({afile})" in err, err
        assert "is a file, not a folder" in err


def test_ctrl_c_while_pytest_loads_the_plugin_is_one_line(tmp_path):
    """Ctrl-C in the seconds `pytest claims/` spends importing the plugin (torch, transformers) ended in a 97-line
    KeyboardInterrupt traceback: pytest handles Ctrl-C itself only once its plugins are loaded."""
    code = ("import sys, importlib.abc\n"
            "class Interrupt(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'aniso.session':\n"
            "            raise KeyboardInterrupt\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "import pytest\n"
            "sys.exit(pytest.main(['claims', '--collect-only', '-q', '-p', 'no:cacheprovider']))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")} | {"CI": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.strip() == "pytest: interrupted (Ctrl-C) while the aniso plugin was loading; nothing was run"


@pytest.mark.parametrize("rank, world", [("5", "2"), ("-1", "2"), ("0", "abc"), ("0", "0")])
def test_torchrun_variables_that_name_no_process_are_one_line(monkeypatch, capsys, rank, world):
    """`WORLD_SIZE=2 RANK=5 aniso extract M` ended in a ValueError traceback from the shard; WORLD_SIZE=abc too."""
    from aniso.cli import main

    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world)
    assert main(["extract", "all-MiniLM-L6-v2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aniso extract: environment variables RANK {rank!r} and WORLD_SIZE {world!r}") and \
        len(err.strip().splitlines()) == 1, err


def test_record_of_a_twin_runs_results_says_twin_verdicts_are_never_recorded(tmp_path, capsys):
    from aniso.cli import main
    from aniso.judge.results import ResultsDocument, file_digest, provenance, write_results

    registry = ROOT / "models.yaml"
    results = tmp_path / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None, twin={"label": "twin"},
                                                                 registry_sha256=file_digest(registry)), results=[]))
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "a twin run" in err and "never recorded" in err and len(err.strip().splitlines()) == 1, err


def test_a_twin_manifest_labels_only_runs_of_the_twins_registry(tmp_path):
    """`ANISO_TWIN=<a twin run's manifest>` beside a run of the real registry labelled real weights' verdicts as a
    twin's (never findings, exempt from records)."""
    from aniso.common.settings import Settings
    from aniso.judge.results import file_digest
    from aniso.session import AnisoSession

    registry = ROOT / "models.yaml"
    twins = tmp_path / "models.yaml"
    twins.write_text("models: []\n")
    manifest = tmp_path / "twin-manifest.json"
    manifest.write_text(json.dumps({"label": "twin: random weights, code path only", "rows": {},
                                    "registry_sha256": file_digest(twins)}))
    settings = Settings(twin=str(manifest), device="cpu")
    with pytest.raises(ValueError, match=r"^setting twin: .* is the manifest of a twin run on its own registry"):
        AnisoSession.twin_manifest(settings, registry)
    assert AnisoSession.twin_manifest(settings, twins)["rows"] == {}


def test_a_folder_with_two_weight_sets_is_refused_naming_both(tmp_path, tiny_bert_dir, capsys, monkeypatch):
    """model.safetensors beside a model.safetensors.index.json whose shards it is not: transformers read
    model.safetensors and left the shards (another model) unread and unsaid."""
    import shutil

    from aniso.cli import main

    folder = tmp_path / "two"
    shutil.copytree(tiny_bert_dir, folder)
    shutil.copy(folder / "model.safetensors", folder / "model-00001-of-00001.safetensors")
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "np") as f:
        names = list(f.keys())
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}))
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    assert main(["run", str(folder), "--registry", str(ROOT / "models.yaml"), "--claims",
                 "G.token-nlp-anisotropic"]) == 2
    err = capsys.readouterr().err
    assert "two weight sets: model.safetensors and the 1 shards model.safetensors.index.json names" in err, err


@pytest.mark.parametrize("field, value, code", [("return_dict", False, 0),
                                                ("_attn_implementation", "flash_attention_2", 2)])
def test_config_fields_about_outputs_or_kernels_measure_or_refuse_in_one_line(tmp_path, tiny_bert_dir, capsys,
                                                                              monkeypatch, field, value, code):
    """config.json `return_dict: false` errored every claim ("'tuple' object has no attribute 'hidden_states'"); an
    attention kernel this installation lacks (flash_attention_2 on a CPU install) errored with an ImportError."""
    import shutil

    from aniso.cli import main

    folder = tmp_path / "m"
    shutil.copytree(tiny_bert_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {field: value}))
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    assert main(["run", str(folder), "--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic",
                 "--", "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"]) == code
    out, err = capsys.readouterr()
    if code == 2:
        assert "the model cannot be built here" in err and "_attn_implementation" in err, err
