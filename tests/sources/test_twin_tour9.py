"""Bad input of twin runs (`aniso run ID --twin`, :func:`aniso.api.run_twins`) and of the registry's checkpoint
series that the twins import: each is one line naming the file, field or setting, exit code 2, before any twin is
built; a twin run takes the user's options once, loads the aniso plugin for a claims folder anywhere, and leaves no
temporary folder behind when SIGTERM stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from aniso.cli import main
from aniso.registry.entries import load_yaml

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "models.yaml"
CLAIM = "G.token-nlp-anisotropic"


def _registry(tmp_path: Path, row_id: str, **changes) -> Path:
    """A copy of the registry whose row ``row_id`` has ``changes`` (a field set to None is removed)."""
    raw = load_yaml(REGISTRY)
    row = next(r for r in raw["models"] if r["id"] == row_id)
    for key, value in changes.items():
        if value is None:
            row.pop(key, None)
        else:
            row[key] = value
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _one_line(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert len(lines[0]) < 1000, lines[0][:300]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- the registry's checkpoint series (Q03, Q04, Q05, Q11, Q15) ----------------------------------------------------

@pytest.mark.parametrize("checkpoints, needles", [
    # Q11: a placement field varied: every "checkpoint" was the row's repo@main, each import overwriting the last
    ({"steps": [0, 16, 128], "vary": {"dtype": "float{step}"}}, ("checkpoints.vary names ['dtype']", "repo or revision")),
    # Q15: YAML's true read as step 1
    ({"steps": [True, 16, 128], "vary": {"revision": "step{step}"}}, ("checkpoints.steps", "step True is no training step")),
    ({"steps": [0, 16.0, 128], "vary": {"revision": "step{step}"}}, ("checkpoints.steps", "step 16.0")),
    # Q03: a path for a revision
    ({"steps": [0, 16, 128], "vary": {"revision": "../../../../tmp/escaped{step}"}},
     ("checkpoints.vary.revision: step 0", "not a valid branch or tag name")),
    # Q04: a path for a repo
    ({"steps": [0, 16, 128], "vary": {"repo": "../evil-{step}"}},
     ("checkpoints.vary.repo: step 0", "'../evil-0' is not a hub repo id")),
    # Q05: a template padding each revision to 1 MB: refused, in a short line
    ({"steps": [0, 16, 128], "vary": {"revision": "step{step:>1000000}"}},
     ("checkpoints.vary.revision: step 0", "more than a revision has (255 at most)")),
])
def test_a_checkpoint_series_that_names_no_checkpoint_per_step_is_refused_by_the_registry(tmp_path, capsys,
                                                                                        checkpoints, needles):
    path = _registry(tmp_path, "pythia-2.8b", checkpoints=checkpoints)
    assert main(["list", "models", "--registry", str(path), "--models", "pythia-2.8b"]) == 2
    line = _one_line(capsys, str(path), "pythia-2.8b", *needles)
    assert "tmp/escaped" not in line or "checkpoints.vary.revision" in line


@pytest.mark.parametrize("source, needle", [
    ({"kind": "hub", "repo": "../evil"}, "source.repo: '../evil' is not a hub repo id"),
    ({"kind": "hub", "repo": "gpt2", "revision": "../../x"}, "source.revision: '../../x': not a valid branch"),
    ({"kind": "hub", "repo": "gpt2", "revision": "x" * 300}, "300 characters, more than a revision has"),
])
def test_a_hub_rows_repo_and_revision_are_of_the_hubs_form(tmp_path, capsys, source, needle):
    path = _registry(tmp_path, "gpt2", source=source)
    assert main(["list", "models", "--registry", str(path)]) == 2
    _one_line(capsys, "'gpt2'", needle)


def test_the_projects_series_stay_valid():
    """The registry's own series (Pythia's revisions, BLOOM's repo and revision, MultiBERTs' repos) pass."""
    from aniso.registry.entries import load_registry

    series = [e for e in load_registry(REGISTRY) if e.checkpoints is not None and e.checkpoints.vary]
    assert len(series) >= 3


# -- the tiny config of a twin (Y02, Y04, Y05) ---------------------------------------------------------------------

_GPT2 = {"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "vocab_size": 512, "n_positions": 128,
         "bos_token_id": 0, "eos_token_id": 0}


@pytest.mark.parametrize("tiny, needles", [
    # Y02: a BERT twin imported as gpt2 ran as the decoder row: GPT-2's code path never ran
    ({"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 37, "vocab_size": 512}, ("tiny.model_type 'bert'", "family 'gpt2'")),
    # Y04: fewer positions than the twin's 32-token inputs: a pipeline-shapes assertion, exit 1
    (dict(_GPT2, n_positions=4), ("tiny.n_positions is 4", "setting max_length", "at least 32")),
    # Y05: an activation transformers lacks: KeyError traceback from its MLP
    (dict(_GPT2, activation_function="nope"), ("tiny.activation_function 'nope'", "gelu_new")),
])
def test_a_tiny_config_that_is_not_the_rows_twin_is_refused_in_one_line(tmp_path, clean_env, capsys, tiny, needles):
    path = _registry(tmp_path, "gpt2", tiny=tiny)
    assert main(["run", "gpt2", "--twin", "--registry", str(path), "--claims-dir", str(ROOT / "claims"),
                 "--claims", CLAIM]) == 2
    _one_line(capsys, "gpt2: ", *needles)


def test_a_tiny_model_type_that_reads_other_inputs_than_the_rows_modality_is_refused(tmp_path, clean_env, capsys):
    """A BERT row declared speech: its twin, a text model, ran as a speech model to holds and an AttributeError. The
    row is refused where the registry is read, naming tiny's model type."""
    raw = load_yaml(REGISTRY)
    raw["models"] = [dict(r, modality="speech", granularity="audio-frame") for r in raw["models"]
                     if r["id"] == "bert-base-uncased"]
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    assert main(["run", "bert-base-uncased", "--twin", "--registry", str(path), "--claims-dir",
                 str(ROOT / "claims")]) == 2
    _one_line(capsys, "(id 'bert-base-uncased'): tiny: modality 'speech', but its model_type is bert, a text model")


def test_the_positions_are_checked_against_the_users_max_length(tmp_path, clean_env, capsys):
    path = _registry(tmp_path, "gpt2", tiny=dict(_GPT2, n_positions=40))
    assert main(["run", "gpt2", "--twin", "--registry", str(path), "--claims-dir", str(ROOT / "claims"),
                 "--claims", CLAIM, "--", "--aniso-max-length", "64"]) == 2
    _one_line(capsys, "tiny.n_positions is 40", "64 tokens")


def test_a_build_error_of_a_config_value_names_the_tiny_field(tmp_path, monkeypatch):
    """Y05's kind where no check before the build knows the field: a KeyError of the model's code (a config value it
    looks up) is a TwinError naming the tiny field, not a traceback."""
    import aniso.sources.twin as twin
    from aniso.registry.entries import load_registry

    monkeypatch.setattr(twin, "_activations", lambda *args: None)
    entry = load_registry(REGISTRY).get("gpt2")
    bad = entry.model_copy(update={"tiny": dict(_GPT2, activation_function="nope")})
    with pytest.raises(twin.TwinError) as caught:
        twin.build_twin(bad, tmp_path / "twin", [], 0)
    assert "gpt2:" in str(caught.value) and "tiny.activation_function 'nope'" in str(caught.value)
    assert "\n" not in str(caught.value)


# -- the run itself (T00, T11, P12, T00b, T12, X10, T16) -----------------------------------------------------------

def test_shards_are_refused_with_twin(clean_env, capsys, monkeypatch):
    """X10: ANISO_SHARDS=2 with --twin skipped every claim with a torchrun command that cannot reach a twin."""
    monkeypatch.setenv("ANISO_SHARDS", "2")
    assert main(["run", "gpt2", "--twin", "--registry", str(REGISTRY), "--claims", CLAIM]) == 2
    _one_line(capsys, "setting shards (ANISO_SHARDS", "--twin")


def test_the_users_options_are_given_once_and_the_plugin_is_loaded(tmp_path, clean_env, monkeypatch):
    """T00, T11, P12: an option the twin run also sets was refused as given twice; T00b, T12: a claims folder outside
    the checkout ran without the aniso plugin ("unrecognized arguments: --aniso-models")."""
    import pytest as pytest_module

    import aniso.pytest_plugin
    from aniso.api import run_twins

    seen = {}

    def fake_main(args, plugins=()):
        seen["args"], seen["plugins"] = list(args), list(plugins)
        return 5

    monkeypatch.setattr(pytest_module, "main", fake_main)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    claims = tmp_path / "elsewhere" / "claims"
    claims.parent.mkdir()
    claims.symlink_to(ROOT / "claims")
    run_twins("gpt2", None, registry=REGISTRY, claims_dir=claims,
              pytest_args=["--aniso-n-bootstrap", "0", "--aniso-claims", CLAIM])
    args = seen["args"]
    assert args.count("--aniso-n-bootstrap") == 1 and args[args.index("--aniso-n-bootstrap") + 1] == "0", args
    assert args.count("--aniso-claims") == 1, args
    assert aniso.pytest_plugin in seen["plugins"]
    assert not list(tmp_path.glob("aniso-twin-*"))  # removed afterwards


_STOPPED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import aniso.sources.twin as twin

    def slow(entry, root, *args, **kwargs):  # SIGTERM comes while the twins are built
        print(Path(root).parent, flush=True)
        time.sleep(120)

    twin.twin_folders = slow
    from aniso.api import run_twins
    run_twins("gpt2", "G.token-nlp-anisotropic", registry=sys.argv[1])
""")


def test_sigterm_leaves_no_temporary_twin_folder(tmp_path, clean_env):
    """T16: SIGTERM during a twin run left its temporary folder (twins, hub cache, registry) in the temp folder."""
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED, str(REGISTRY)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        root = Path(proc.stdout.readline().strip())
        assert root.name.startswith("aniso-twin-") and root.is_dir(), proc.stderr.read()[-2000:]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    assert not root.exists()
