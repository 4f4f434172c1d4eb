"""transformers' own progress bars stay off while the suite loads a model (its ``Loading weights`` bar was a second
line of error output for each model a run loaded), and are left as they were after."""

from __future__ import annotations

from transformers.utils import logging as hf_logging

from aniso.sources import SOURCE_KINDS, SourceContext, load_model


def test_loading_a_model_shows_no_transformers_bar_and_restores_the_setting(tiny_bert_entry, capfd):
    assert hf_logging.is_progress_bar_enabled()
    SOURCE_KINDS[tiny_bert_entry.source.kind].load(tiny_bert_entry, SourceContext())  # the kind's loader on its own
    assert "Loading weights" in capfd.readouterr().err  # the bar this is about
    load_model(tiny_bert_entry)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()


def test_a_disabled_bar_stays_disabled(tiny_bert_entry):
    hf_logging.disable_progress_bar()
    try:
        load_model(tiny_bert_entry)
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
