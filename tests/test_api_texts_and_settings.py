"""The Python API: texts given as a list are measured as given, by :func:`aniso.check` as by :func:`aniso.measure`
(WikiText's number joiners are undone in corpus files only); a setting given by its variable or option name."""

from __future__ import annotations

from pathlib import Path

import pytest

import aniso
import aniso.api
from aniso.inputs.text import ALL, load_corpus

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
MODEL = "all-MiniLM-L6-v2"
TEXTS = ["The road is 12 @-@ mile long and 1 @,@ 200 feet high .", "It cost 3 @.@ 5 million dollars in 1990 .",
         "A third text without joiners , written as it came ."]


class _Stop(Exception):
    pass


def test_check_measures_a_list_of_texts_as_given(monkeypatch, clean_env):
    """``aniso.check(M, C, inputs=<texts holding ' @-@ '>)`` measured them with WikiText's joiners undone ('12-mile'),
    where ``aniso.measure(M, <same list>)`` measures them as given."""
    seen = {}

    def fake_run_claims(model, claims, *, settings, **kwargs):
        corpus = load_corpus(settings["corpus"], ALL, 0)
        seen["texts"] = sorted(corpus.sequences)
        seen["label"] = corpus.label
        raise _Stop

    monkeypatch.setattr(aniso.api, "run_claims", fake_run_claims)
    with pytest.raises(_Stop):
        aniso.check(MODEL, "G.token-nlp-anisotropic", inputs=TEXTS, registry=REGISTRY)
    assert seen["texts"] == sorted(TEXTS), seen
    assert "texts given" in seen["label"]


def test_a_corpus_file_still_has_its_joiners_undone(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert "The road is 12-mile long and 1,200 feet high ." in load_corpus(path, ALL, 0).sequences


@pytest.mark.parametrize("key, meant", [("ANISO_SEED", "seed"), ("aniso-seed", "seed"), ("BATCH_SIZE", "batch_size"),
                                        ("--aniso-n-sequences", "n_sequences"), ("Aniso_Seeed", "seed")])
def test_a_setting_given_by_its_variable_or_option_name_gets_did_you_mean(key, meant, clean_env):
    """``settings={'ANISO_SEED': 3}`` was "unknown setting 'ANISO_SEED'" with no suggestion, where ``{'seeed': 3}``
    got "did you mean 'seed'?"."""
    for call in (lambda: aniso.models(REGISTRY, settings={key: 3}),
                 lambda: aniso.measure(MODEL, TEXTS, registry=REGISTRY, progress=False, settings={key: 3})):
        with pytest.raises(ValueError, match=rf"^settings: unknown setting '{key}'; did you mean '{meant}'\?") as info:
            call()
        assert "\n" not in str(info.value)


def test_layer_stats_equality_leaves_out_the_wall_time():
    """Two measurements of one model on the same texts compared unequal when their ``meta['seconds']`` differed
    (5.17 against 1.76): ``==`` depended on wall time."""
    from aniso.api import LayerStats

    def stats(meta):
        return LayerStats("m", ("0",), (), {"label": "t"}, {"seed": 0}, meta, None)

    assert stats({"seconds": 5.17, "origin": "o"}) == stats({"seconds": 1.76, "origin": "o"})
    assert stats({"seconds": 5.17, "origin": "o"}) != stats({"seconds": 5.17, "origin": "other"})


def test_claim_results_say_they_are_unhashable_by_their_own_name(tmp_path):
    """``hash(ClaimResults)`` said "unhashable type: 'ResultsDocument'" (an inner class)."""
    from aniso.api import ClaimResults
    from aniso.judge.results import ResultsDocument, provenance

    r = ClaimResults(tmp_path / "results.json", ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]),
                     0, "m")
    with pytest.raises(TypeError, match=r"^unhashable type: 'ClaimResults'$"):
        hash(r)


def test_an_in_memory_model_of_unknown_modality_is_told_to_save_it_first(clean_env):
    """An in-memory model of a modality aniso does not know (a time-series Transformer: no vocabulary, no modality
    of the suite's) was told "add a models.yaml entry with modality, …", though no registry row can name an
    in-memory model (the way is save_pretrained, then a row for the folder). (A BART, once the example here, is a
    text encoder-decoder whose layer count transformers maps: detected now.)"""
    from transformers import PatchTSTConfig, PatchTSTModel

    series = PatchTSTModel(PatchTSTConfig(num_input_channels=2, context_length=32, patch_length=8, patch_stride=8,
                                          d_model=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32)).eval()
    with pytest.raises(ValueError, match=r"^model: model_type 'patchtst': its modality is not known to aniso; an "
                                         r"in-memory model has no models.yaml row: save it with save_pretrained, add a "
                                         r"row for that folder with modality, .*and measure the row's id$") as info:
        aniso.measure(series, TEXTS, progress=False, name="series")
    assert "\n" not in str(info.value)


def test_run_claims_names_its_own_arguments_when_settings_repeat_them(clean_env):
    """run_claims(M, C, settings={'claims': …}) (or registry= with settings['registry']) with another value is
    refused naming the argument ``claims=`` / ``registry=``, not the command line's ``--claims`` / ``--registry``."""
    for call, said in (
            (lambda: aniso.api.run_claims(MODEL, "G.token-nlp-anisotropic", registry=REGISTRY,
                                          settings={"claims": "R."}),
             r"^claims='G\.token-nlp-anisotropic' and settings\['claims'\]='R\.' both given for setting claims; "
             r"give one$"),
            (lambda: aniso.api.run_claims(MODEL, registry=REGISTRY, settings={"registry": str(clean_env / "r.yaml")}),
             r"^registry='.*models\.yaml' and settings\['registry'\]='.*r\.yaml' both given for setting registry")):
        with pytest.raises(ValueError, match=said) as refused:
            call()
        assert "--" not in str(refused.value)
    assert not (clean_env / "cache").exists()
