"""A URL given where a file or folder is read (``--registry https://…``, ``aniso report https://…``, a corpus, a folder
to import) was looked for as a path under the working folder, ``https:/x/y`` with one slash lost, and refused as
"does not exist". The answer says it is a URL and that only local files are read."""

from __future__ import annotations

import pytest

from aniso.cli import main
from aniso.common.files import URL_NOT_READ, not_a_regular_file, url_given


@pytest.mark.parametrize("given, url", [
    ("https://example.org/models.yaml", "https://example.org/models.yaml"),
    ("https:/example.org/models.yaml", "https://example.org/models.yaml"),  # as Path() leaves it
    ("s3://bucket/corpus.txt", "s3://bucket/corpus.txt"),
    ("hf://datasets/wikitext", "hf://datasets/wikitext"),
])
def test_a_url_is_recognised_and_given_back_with_both_slashes(given, url):
    assert url_given(given) == url
    assert not_a_regular_file(given) == URL_NOT_READ


@pytest.mark.parametrize("given", ["C:/data/corpus.txt", "corpus.txt", "data/https/x.txt", "/abs/https://x"])
def test_a_path_is_no_url(given):
    assert url_given(given) is None


def test_an_existing_folder_named_like_a_scheme_is_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "https:").mkdir()
    (tmp_path / "https:" / "c.txt").write_text("text\n")
    assert url_given("https:/c.txt") is None
    assert not_a_regular_file("https:/c.txt") is None


URL_SAID = "is a URL; only local files are read: download it first"


@pytest.mark.parametrize("argv", [
    ["list", "models", "--registry", "https://example.org/models.yaml"],
    ["report", "https://example.org/results.json"],
    ["diff", "https://example.org/a.json", "https://example.org/b.json"],
])
def test_the_commands_say_a_url_is_not_read(clean_env, monkeypatch, capsys, argv):
    monkeypatch.chdir(clean_env)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{next(a for a in argv if a.startswith('https'))} {URL_SAID}" in err, err
    assert "does not exist" not in err and "https:/e" not in err


@pytest.mark.parametrize("variable, said", [
    ("ANISO_CORPUS", f"https://example.org/c.txt {URL_SAID}"),
    ("ANISO_CACHE_DIR", "https://example.org/c.txt is a URL; this setting names a local folder to write in"),
])
def test_a_setting_given_a_url(clean_env, monkeypatch, capsys, variable, said):
    monkeypatch.chdir(clean_env)
    monkeypatch.setenv(variable, "https://example.org/c.txt")
    assert main(["stats", "all-MiniLM-L6-v2", "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert said in err and f"setting {variable[6:].lower()} ({variable}" in err, err
    assert not (clean_env / "https:").exists()


def test_hub_import_of_a_url(clean_env, monkeypatch, capsys):
    monkeypatch.chdir(clean_env)
    assert main(["hub", "import", "gpt2", "https://huggingface.co/gpt2", "--cache-dir", str(clean_env / "hub")]) == 2
    err = capsys.readouterr().err
    assert "https://huggingface.co/gpt2 is a URL; the import reads a local folder" in err, err


def test_a_local_rows_path_given_as_a_file_url_names_the_path(clean_env, tiny_bert_dir, capsys):
    """`path: file:///…/mini` (copied from a file browser) was joined to the registry's folder and refused as
    ".../w/file:/.../mini does not exist"."""
    registry = clean_env / "r.yaml"
    registry.write_text(f"models:\n- id: mb\n  source: {{kind: local, path: 'file://{tiny_bert_dir}'}}\n"
                        "  modality: text\n  granularity: subword\n  architecture: transformer\n  role: encoder\n"
                        "  family: bert\n")
    assert main(["stats", "mb", "--registry", str(registry), "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert (f"mb: source.path: file://{tiny_bert_dir} is a URL; give the file-system path it names, "
            f"{tiny_bert_dir}") in err, err


def test_a_list_field_left_blank_says_it_has_no_value(tmp_path):
    """`models:` or `tags:` left blank (YAML null) was answered with the example "models: [None, ...]"."""
    from aniso.registry.entries import RegistryError, load_registry

    path = tmp_path / "r.yaml"
    path.write_text("models:\n")
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert str(refused.value) == (f"{path}: models: no value (YAML reads a blank, ~ or null as none); models takes a "
                                  "list: its items in [ ] after models:, or one '- item' a line below it")


@pytest.mark.parametrize("out, said", [
    ("https://example.com/r.html", "https://example.com/r.html is a URL; aniso reads and writes files on this machine "
                                   "only: give a path here"),
    ("file:///tmp/r.html", "file:///tmp/r.html is a URL; give the file-system path it names, /tmp/r.html"),
])
def test_a_report_written_to_a_url_is_refused(clean_env, monkeypatch, capsys, out, said):
    """`aniso report R --out https://…/r.html` wrote ./https:/…/r.html under the working folder and exited 0."""
    monkeypatch.chdir(clean_env)
    with pytest.raises(SystemExit) as stopped:
        main(["report", str(clean_env / "results.json"), "--out", out])
    assert stopped.value.code == 2 and said in capsys.readouterr().err
    assert not (clean_env / "https:").exists() and not (clean_env / "file:").exists()
