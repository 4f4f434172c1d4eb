"""Bad input at the command line's own options (found by a tour of the commands): an option given twice, an option
that only applies with another, an empty value, a count out of bounds or a device that is not here, an option a
model's inputs do not take, a setting of shards without torchrun, a hub cache or model folder that is a file, a
corrupt ref in the hub cache. Each is one line on standard error naming the option as typed, exit code 2; each case
is a row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = str(ROOT / "models.yaml")
MODEL = "all-MiniLM-L6-v2"


def _stopped(argv: list[str], capsys) -> tuple[int, str]:
    """Exit code and the one line on standard error of a command that must stop (by a parser error or a return)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso "), err[-3000:]
    assert "Traceback" not in out + err and "usage:" not in out + err, out[-3000:]
    return code, lines[0]


@pytest.mark.parametrize("argv, says", [
    (["run", MODEL, "--claims", "G.token-nlp-anisotropic", "--claims", "X."],
     "aniso run: argument --claims: given more than once ('G.token-nlp-anisotropic', then 'X.'); give it once"),
    (["run", MODEL, "--registry", REGISTRY, "--registry", REGISTRY], "argument --registry: given more than once"),
    (["list", "models", "--models", "small", "--models", "paper"], "argument --models: given more than once"),
    (["stats", MODEL, "--n-sequences", "16", "--n-sequences", "1"], "argument --n-sequences: given more than once"),
    (["bench", "twonn", "--seed", "1", "--seed", "2"], "aniso bench twonn: argument --seed: given more than once"),
    (["hub", "import", "me/m", "m", "--revision", "a", "--revision", "b"], "argument --revision: given more than once"),
    (["report", "r.json", "--out", "a.html", "--out", "b.html"], "argument --out: given more than once"),
])
def test_a_single_valued_option_given_twice_is_refused_naming_it(clean_env, capsys, argv, says):
    """A01: the first value was dropped without a word (the last one won)."""
    code, line = _stopped(argv, capsys)
    assert code == 2 and says in line, line


@pytest.mark.parametrize("argv, says", [
    (["run", MODEL, "--keep-twins", "twins", "--claims", "G.token-nlp-anisotropic"],
     "aniso run: --keep-twins needs --twin"),
    (["bench", "extraction", MODEL, "--layers", "2"], "aniso bench extraction: --layers needs --config"),
    (["bench", "extraction", MODEL, "--dtype", "float32"], "aniso bench extraction: --dtype needs --config"),
    (["list", "claims", "--models", "paper"], "aniso list: --models paper: marks the models of a listing"),
])
def test_an_option_that_only_applies_with_another_is_refused_without_it(clean_env, capsys, argv, says):
    """A10: --keep-twins without --twin was ignored (no folder kept); so were --layers and --dtype with a model."""
    code, line = _stopped(argv, capsys)
    assert code == 2 and says in line, line
    assert not (clean_env / "twins").exists()


@pytest.mark.parametrize("argv, option", [
    (["list", "models", "--models", ""], "--models"),
    (["list", "--registry", ""], "--registry"),
    (["run", MODEL, "--claims", ""], "--claims"),
    (["run", MODEL, "--claims-dir", " "], "--claims-dir"),
    (["stats", MODEL, "--n-sequences", "16", "--corpus", ""], "--corpus"),
    (["hub", "list", "--cache-dir", ""], "--cache-dir"),
    (["hub", "import", "me/m", "m", "--cache-dir", ""], "--cache-dir"),
    (["report", ""], "results"),
])
def test_an_empty_value_is_refused_naming_the_option(clean_env, capsys, argv, option):
    """E01, D03: `--models ''` was read as 'small', `--corpus ''` as the current folder ("corpus file . is a
    folder")."""
    code, line = _stopped(argv, capsys)
    assert code == 2 and f"argument {option}: empty value" in line, line


def test_a_model_set_of_separators_only_is_refused_naming_the_option(clean_env, capsys):
    """E01: `--models ' , '` listed "0 in the set ' , '" (ANISO_MODELS=' , ' is refused)."""
    code, line = _stopped(["list", "models", "--models", " , ", "--registry", REGISTRY], capsys)
    assert code == 2 and line.startswith("aniso list: --models must name a model set") and "ANISO_" not in line, line


@pytest.mark.parametrize("argv, says", [
    (["stats", MODEL, "--n-sequences", "0"],
     "aniso stats: argument --n-sequences: must be an integer from 1 to 1000000000, got 0"),
    (["bench", "extraction", MODEL, "--paragraphs", "4", "--max-length", "0"],
     "aniso bench extraction: argument --max-length: must be an integer from 1 to 1048576, got 0"),
    (["bench", "command", MODEL, "--paragraphs", "-1"],
     "aniso bench command: argument --paragraphs: must be an integer from 1 to 1000000000, got -1"),
    (["bench", "twonn", "--n", "100", "--d", "8", "--seed", "-1", "--no-peers"],
     "aniso bench twonn: argument --seed: must be an integer from 0 to 4294967295, got -1"),
    (["bench", "extraction", MODEL, "--repeats", "1.5"],
     "argument --repeats: must be an integer of at least 1, got '1.5'"),
])
def test_a_count_out_of_bounds_names_the_option_as_typed(clean_env, capsys, argv, says):
    """D01, L08, L09, L03: the line named the setting (n_sequences, ANISO_N_SEQUENCES, --aniso-n-sequences) or
    numpy's "expected non-negative integer", not the option the user typed."""
    code, line = _stopped(argv, capsys)
    assert code == 2 and says in line and "ANISO_" not in line, line


def test_a_corpus_given_by_option_is_named_by_the_option(clean_env, capsys):
    """D01, D03: a --corpus that cannot be read was named as the setting (ANISO_CORPUS, --aniso-corpus)."""
    one = clean_env / "one.txt"
    one.write_text("A single paragraph.\n")
    code, line = _stopped(["stats", MODEL, "--corpus", str(one), "--registry", REGISTRY], capsys)
    assert code == 2 and line.startswith(f"aniso stats: --corpus: corpus file {one} ") and "ANISO_" not in line, line


@pytest.mark.parametrize("command", [["bench", "twonn", "--n", "100", "--d", "8", "--no-peers"],
                                     ["bench", "extraction", MODEL, "--paragraphs", "4"]])
def test_a_device_that_is_not_here_is_one_line_naming_device(clean_env, capsys, command):
    """L04: `bench twonn --device cuda` on a CPU-only torch ended in an AssertionError traceback."""
    code, line = _stopped([*command, "--device", "cuda:99"], capsys)
    assert code == 2 and "argument --device: device 'cuda:99' does not exist here" in line, line
    assert "--device cpu" in line and "ANISO_DEVICE" not in line, line


def test_bench_twonn_through_the_api_names_the_device_and_the_seed():
    from aniso.bench.twonn import bench_twonn, make_points

    with pytest.raises(ValueError, match=r"device 'cuda:99' does not exist here"):
        bench_twonn(100, 8, device="cuda:99", peers=False)
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 4294967295, got -1"):
        make_points(100, 8, seed=-1)


@pytest.mark.parametrize("option, value, says", [
    ("--n-sequences", "16", "--n-sequences counts the corpus's paragraphs (setting n_sequences); efficientnet-lite0 "
     "reads photographs, counted by setting n_images (ANISO_N_IMAGES)"),
    ("--corpus", "corpus.txt", "--corpus names the text corpus (setting corpus); efficientnet-lite0 reads "
     "photographs, named by setting image_dir (ANISO_IMAGE_DIR)"),
])
def test_a_stats_option_the_models_inputs_do_not_take_is_refused(clean_env, capsys, option, value, says):
    """D04: `aniso stats efficientnet-lite0 --n-sequences 16` measured 192 photographs without a word."""
    (clean_env / "corpus.txt").write_text("A paragraph of text.\n")
    code, line = _stopped(["stats", "efficientnet-lite0", option, str(clean_env / value) if option == "--corpus"
                           else value, "--registry", REGISTRY], capsys)
    assert code == 2 and says in line, line


def test_the_stats_header_counts_photographs_not_sequences(clean_env, capsys, monkeypatch):
    """D04: the header of a vision model said "(192 sequences)"."""
    from types import SimpleNamespace

    from aniso.stats.pipeline import StatsProvider

    summary = SimpleNamespace(dim=8, count=16, mean_cosine=0.5, q95=0.1, drift_norm=1.0, svd_anisotropy=0.2,
                              twonn=3.0, isoscore=0.4, n_reservoir=16, n_distinct=16)
    fake = SimpleNamespace(layer_names=["0"], summaries=lambda: [summary],
                           meta={"corpus": {"label": "16 photographs"}, "n_sequences": 16})
    monkeypatch.setattr(StatsProvider, "get", lambda self, entry: fake)
    assert main(["stats", "efficientnet-lite0", "--registry", REGISTRY]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "efficientnet-lite0 on 16 photographs (16 photographs)"
    assert main(["stats", MODEL, "--n-sequences", "16", "--registry", REGISTRY]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("(16 sequences)")


@pytest.mark.parametrize("world, says", [
    (None, "setting shards (ANISO_SHARDS=2) asks for statistics extracted over 2 processes, but this process is "
           "not under torchrun; run `torchrun --nproc-per-node 2 -m aniso.cli extract all-MiniLM-L6-v2`"),
    ("3", "but torchrun started 3 processes"),
])
def test_extract_with_shards_not_under_torchrun_is_one_line_naming_the_setting(clean_env, capsys, monkeypatch, world,
                                                                                says):
    """H04: `ANISO_SHARDS=2 aniso extract M` (no torchrun) exited 1 as if the model were not available."""
    monkeypatch.setenv("ANISO_SHARDS", "2")
    if world is not None:  # a torchrun of another size: the check comes before any process group is started
        monkeypatch.setenv("WORLD_SIZE", world)
        monkeypatch.setenv("RANK", "0")
    code, line = _stopped(["extract", MODEL, "--registry", REGISTRY], capsys)
    assert code == 2 and says in line, line


@pytest.mark.parametrize("raised, code", [("InputsMissing", 2), ("ModelRefused", 2), ("ModelUnavailable", 1)])
def test_extract_exits_2_on_bad_input_and_keeps_going(clean_env, capsys, monkeypatch, raised, code):
    """H02: a data folder that gives no inputs (`ANISO_IMAGE_DIR=/nonexistent/imgs`) exited 1, as a model that is not
    here does; a model whose files cannot be loaded faithfully is bad input too. The other models are still
    extracted."""
    import aniso.sources as sources
    from aniso.stats.pipeline import StatsProvider

    seen = []

    def get(self, entry):
        seen.append(entry.id)
        raise getattr(sources, raised)(f"{entry.id}: image_dir: /nonexistent/imgs is not a folder")

    monkeypatch.setattr(StatsProvider, "get", get)
    assert main(["extract", MODEL, "paraphrase-minilm-l3-onnx", "--registry", REGISTRY]) == code
    assert seen == [MODEL, "paraphrase-minilm-l3-onnx"]
    assert "image_dir: /nonexistent/imgs is not a folder" in capsys.readouterr().err


def test_extract_of_a_data_folder_that_does_not_exist_exits_2(clean_env, capsys, monkeypatch):
    """H02 as the tester ran it (the setting's own check or the door's mapping stops it)."""
    monkeypatch.setenv("ANISO_IMAGE_DIR", str(clean_env / "nonexistent" / "imgs"))
    monkeypatch.setenv("ANISO_N_IMAGES", "4")
    code = main(["extract", "efficientnet-lite0", "--registry", REGISTRY])
    err = capsys.readouterr().err
    assert code == 2 and "image_dir" in err and "Traceback" not in err, err


def test_hub_import_into_a_cache_dir_that_is_a_file_names_the_option(clean_env, capsys, tiny_bert_dir):
    """I04: "[Errno 20] Not a directory: …/one.txt/models--me--minilm/blobs", without --cache-dir."""
    one = clean_env / "one.txt"
    one.write_text("x\n")
    code, line = _stopped(["hub", "import", "me/minilm", str(tiny_bert_dir), "--cache-dir", str(one)], capsys)
    assert code == 2 and line == f"aniso hub import: --cache-dir {one} is not a folder: it is a file", line
    code, line = _stopped(["hub", "import", "me/minilm", str(tiny_bert_dir), "--cache-dir", str(one / "hub")], capsys)
    assert code == 2 and line == f"aniso hub import: --cache-dir {one / 'hub'} cannot be created: {one} is a file"


def test_hub_import_of_a_file_asks_for_the_model_folder(clean_env, capsys, tiny_bert_dir):
    """I05: `aniso hub import me/minilm minilm/config.json` said "no such folder" of a file that exists."""
    config = tiny_bert_dir / "config.json"
    code, line = _stopped(["hub", "import", "me/minilm", str(config), "--cache-dir", str(clean_env / "hub")], capsys)
    assert code == 2 and f"{config} is a file; give the model folder" in line, line
    assert not (clean_env / "hub").exists()


def test_hub_import_of_an_onnx_file_says_it_is_run_as_a_file_not_imported(clean_env, capsys):
    """`aniso hub import me/cnn model.onnx` told to give the file's folder, which holds no config.json: that
    import was refused in turn ("no config.json"). An ONNX CNN is measured as a file, never from the hub cache."""
    pytest.importorskip("onnx")
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    (clean_env / "zoo").mkdir()
    model = clean_env / "zoo" / "cnn.onnx"
    weights = [numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w1"),
               numpy_helper.from_array(np.ones((8, 8, 3, 3), np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["p1", "c2"], ["s2"]), helper.make_node("Relu", ["s2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    code, line = _stopped(["hub", "import", "me/cnn", str(model), "--cache-dir", str(clean_env / "hub")], capsys)
    assert code == 2 and line == (f"aniso hub import: {model} is a file, an ONNX CNN file (.onnx): the hub cache "
                                  "holds transformers model folders only; such a file is measured where it is: "
                                  f"`aniso run {model}`, or a registry row with source: {{kind: onnx, path: {model}}}")
    assert not (clean_env / "hub").exists()
    notes = clean_env / "zoo" / "notes.txt"
    notes.write_text("x", encoding="utf-8")
    code, line = _stopped(["hub", "import", "me/cnn", str(notes), "--cache-dir", str(clean_env / "hub")], capsys)
    assert code == 2 and line == f"aniso hub import: {notes} is a file; give the model folder (the folder holding " \
                                 "config.json)"


def test_hub_list_names_a_ref_that_holds_no_commit(clean_env, capsys, tiny_bert_dir):
    """I08: a cache whose refs/main holds '../../../../etc' was listed as "not cached"."""
    from aniso.sources.hubcache import import_folder

    cache = clean_env / "hub"
    done = import_folder("me/minilm", tiny_bert_dir, cache_dir=cache)
    assert main(["hub", "list", "--cache-dir", str(cache), "--registry", REGISTRY]) == 0
    assert done.commit in capsys.readouterr().out
    (done.repo / "refs" / "main").write_text("../../../../etc\n")
    assert main(["hub", "list", "--cache-dir", str(cache), "--registry", REGISTRY]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "me/minilm" in line)
    assert "unreadable:" in row and "refs/main holds '../../../../etc', not a commit" in row, row
    assert "not cached" not in row


def test_a_claims_run_stopped_by_ctrl_c_says_so_in_one_line(clean_env, monkeypatch, capsys):
    """Ctrl-C while `aniso run` measures (pytest returns its INTERRUPTED code): exit 130 (128 + SIGINT, as every
    command) and one line on standard error saying what is kept (the cache; here nothing, with no_cache) and that no results file was written."""
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(16)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    monkeypatch.setenv("ANISO_NO_CACHE", "1")
    monkeypatch.setattr(pytest, "main", lambda *args, **kwargs: pytest.ExitCode.INTERRUPTED)
    code, line = _stopped(["run", MODEL, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic"], capsys)
    assert code == 130
    assert line == ("aniso run: interrupted (Ctrl-C): nothing was cached (setting no_cache); no results file was "
                    "written"), line


def test_extract_of_a_model_named_twice_is_one_line(clean_env, capsys):
    """`aniso extract M M` extracted M and printed its line twice; a model is named once."""
    code, line = _stopped(["extract", MODEL, "paraphrase-minilm-l3-onnx", MODEL, "--registry", REGISTRY], capsys)
    assert code == 2 and line == f"aniso extract: {MODEL} named more than once; name each model once", line


@pytest.mark.parametrize("what", ["file", "dangling-link"])
def test_keep_twins_that_is_no_folder_is_refused_before_any_work(clean_env, capsys, monkeypatch, what):
    """`aniso run M --twin --keep-twins FILE` ran until it made the folder and stopped with a FileExistsError
    traceback, exit 1; the option now must name a folder (created if missing), checked before the registry is read."""
    keep = clean_env / "twins"
    if what == "file":
        keep.write_text("not a folder\n")
    else:
        keep.symlink_to(clean_env / "nowhere")

    def began(*args, **kwargs):
        raise AssertionError("the twin run began before --keep-twins was checked")

    monkeypatch.setattr("aniso.registry.locate.settings_and_registry", began)
    code, line = _stopped(["run", "bert-base-uncased", "--twin", "--keep-twins", str(keep), "--registry", REGISTRY,
                           "--claims", "G.token-nlp-anisotropic"], capsys)
    assert code == 2 and line.startswith(f"aniso run: --keep-twins: {keep} is "), line
    assert ("it must name a folder" in line if what == "file" else
            f"a symbolic link to {clean_env / 'nowhere'}, which does not exist" in line), line


def test_extract_of_a_model_measured_over_no_inputs_is_bad_input(clean_env, capsys):
    """`aniso extract untrained-bert-block` exited 1 (a failure) where `aniso stats` exits 2 on the same request: a
    model with no hidden-state statistics is asked for what it cannot give."""
    code, line = _stopped(["extract", "untrained-bert-block", "--registry", REGISTRY], capsys)
    assert code == 2 and line == ("aniso extract: untrained-bert-block: no hidden-state statistics for modality "
                                  "'embeddings' (an untrained block is measured by aniso block-sweep "
                                  "untrained-bert-block)"), line


@pytest.mark.parametrize("door", ["--registry", "ANISO_REGISTRY"])
def test_a_registry_that_is_a_link_to_nothing_names_its_target(clean_env, capsys, monkeypatch, door):
    """`aniso list models --registry LINK` with LINK a symbolic link to a file that is gone said "is not a file";
    it now says where the link points, as the cache and report folder checks do."""
    link = clean_env / "models.yaml"
    link.symlink_to(clean_env / "gone.yaml")
    argv = ["list", "models"]
    if door == "--registry":
        argv += ["--registry", str(link)]
    else:
        monkeypatch.setenv("ANISO_REGISTRY", str(link))
    code, line = _stopped(argv, capsys)
    assert code == 2 and line.endswith(f"{link} is a symbolic link to {clean_env / 'gone.yaml'}, which does not "
                                       "exist"), line


@pytest.mark.parametrize("argv, named", [
    (["list", "models"], "setting models (ANISO_MODELS, --aniso-models) 'bogus'"),
    (["list", "claims"], "setting models (ANISO_MODELS, --aniso-models) 'bogus'"),
])
def test_a_model_set_variable_that_selects_nothing_is_named_by_list(clean_env, capsys, monkeypatch, argv, named):
    """`ANISO_MODELS=bogus aniso list models` named the registry file; with `--models small` it ended in a
    traceback (the listing read the variable a second time)."""
    from aniso.cli import main

    monkeypatch.setenv("ANISO_MODELS", "bogus")
    assert main([*argv, "--registry", REGISTRY]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aniso list: {named}: model set 'bogus' is no named set") and \
        len(err.strip().splitlines()) == 1, err
    assert main(["list", "models", "--models", "small", "--registry", REGISTRY]) == 0  # the option wins, no traceback


@pytest.mark.parametrize("models, ends", [
    ("offline,!paper", "did you mean 'paper'? (in the registry {registry})"),
    ("small paper", "comma-separated: small,paper (in the registry {registry})"),
])
def test_a_model_set_hint_is_not_glued_to_the_registry_path(clean_env, capsys, models, ends):
    """`aniso list models --models 'offline,!paper'` ended "did you mean 'paper'? of /…/models.yaml", and the
    corrected value "small,paper of /…/models.yaml": the registry is named apart, after the suggestion."""
    code, line = _stopped(["list", "models", "--models", models, "--registry", REGISTRY], capsys)
    assert code == 2 and line.startswith(f"aniso list: --models {models!r}: model set "), line
    assert line.endswith(ends.format(registry=REGISTRY)), line
    assert f" of {REGISTRY}" not in line, line


@pytest.mark.parametrize("built", [False, True], ids=["nothing built", "a twin built"])
def test_ctrl_c_while_the_twins_are_built_says_what_is_kept(clean_env, capsys, monkeypatch, built):
    """Ctrl-C during `aniso run M --twin --keep-twins kt`, while the twins were built: a bare "interrupted (Ctrl-C)"
    and the empty kt/ the run had made left behind. Now one line says nothing was measured and what became of kt/."""
    keep = clean_env / "kt"

    def interrupted(entry, root, *args, **kwargs):
        if built:
            (Path(root) / "bert").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr("aniso.sources.twin.twin_folders", interrupted)
    code, line = _stopped(["run", "bert-base-uncased", "--twin", "--keep-twins", str(keep), "--registry", REGISTRY,
                           "--claims", "G.token-nlp-anisotropic"], capsys)
    assert code == 130, line
    said = "aniso run: interrupted (Ctrl-C) while the twins were built: nothing was measured; "
    if built:
        assert line == said + f"what was built so far is kept in {keep} (--keep-twins)", line
        assert (keep / "folders" / "bert").is_dir()
    else:
        assert line == said + f"{keep}, made by this run, is removed (empty)", line
        assert not keep.exists()


@pytest.mark.parametrize("name", ["models.yaml", "hub"])
def test_keep_twins_folder_holding_a_users_registry_is_refused(clean_env, capsys, monkeypatch, name):
    """`aniso run M --twin --keep-twins .` in a folder holding one's own models.yaml replaced it with the twins'
    registry (comments and layout gone), silently; a folder holding a file a twin run writes is now refused before
    any work, unless it is an earlier twin run's folder (it holds twin-manifest.json)."""
    keep = clean_env / "mine"
    keep.mkdir()
    mine = keep / name
    if name == "hub":
        mine.mkdir()
    else:
        mine.write_text("# my hand-written registry\nmodels: []\n")

    def began(*args, **kwargs):
        raise AssertionError("the twin run began before --keep-twins was checked")

    monkeypatch.setattr("aniso.registry.locate.settings_and_registry", began)
    argv = ["run", "bert-base-uncased", "--twin", "--keep-twins", str(keep), "--registry", REGISTRY,
            "--claims", "G.token-nlp-anisotropic"]
    code, line = _stopped(argv, capsys)
    assert code == 2 and line.startswith(f"aniso run: --keep-twins: {keep} holds {name}, "), line
    if name == "models.yaml":
        assert mine.read_text() == "# my hand-written registry\nmodels: []\n"
    (keep / "twin-manifest.json").write_text("{}")  # an earlier twin run's folder: the check lets it through
    with pytest.raises(AssertionError, match="the twin run began"):
        main(argv)


def test_ctrl_c_in_the_claims_of_a_twin_run_exits_130_saying_what_is_kept(clean_env, capsys, monkeypatch):
    """Ctrl-C once `aniso run M --twin` had imported its twins (pytest running the claims) exited 2, pytest's code of
    an interrupt, with no "aniso run: interrupted" line; a run without --twin exits 130 with it."""
    import pytest as _pytest

    import aniso.api

    def interrupted(args, plugins, tally):
        tally.interrupted = True
        return _pytest.ExitCode.INTERRUPTED

    monkeypatch.setattr(aniso.api, "_pytest_main", interrupted)
    code = main(["run", "bert-base-uncased", "--twin", "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic"])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 130, line
    assert line.startswith("aniso run: interrupted (Ctrl-C): ") and "no results file was written" in line, line


def test_a_twin_run_of_a_registry_without_hub_rows_says_it_has_none(clean_env, capsys, tiny_bert_dir):
    """`aniso run my-bert --twin` on a registry of one local row listed its hub rows as "...": an empty list."""
    registry = clean_env / "ok.yaml"
    registry.write_text(f"models:\n- id: my-bert\n  source: {{kind: local, path: {tiny_bert_dir}}}\n  modality: text\n"
                        "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n")
    code, line = _stopped(["run", "my-bert", "--twin", "--registry", str(registry), "--claims",
                           "G.token-nlp-anisotropic"], capsys)
    assert code == 2 and line.endswith("holds no hub row (twins are made of hub rows; this registry has none: a twin "
                                       "is built from a hub row's tiny config)"), line
