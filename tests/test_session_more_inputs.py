"""A model refused for too few inputs is told which settings give it more, by the kind of inputs it reads: a CNN
skipped at ``n_images`` 16 was told to raise ``n_sequences`` and give a corpus, text settings that do nothing for it."""

from __future__ import annotations

import pytest

from aniso.registry.entries import ModelEntry
from aniso.session import _more_inputs

ROWS = {
    "text": dict(modality="text", granularity="subword", architecture="transformer", role="encoder", family="bert"),
    "vision": dict(modality="vision", granularity="pixel", architecture="cnn", role="encoder", family="mobilenet"),
    "speech": dict(modality="speech", granularity="audio-frame", architecture="transformer", role="encoder",
                   family="wav2vec2"),
}


@pytest.mark.parametrize("kind, said", [
    ("text", "setting n_sequences (ANISO_N_SEQUENCES), or the corpus of setting corpus"),
    ("vision", "setting n_images (ANISO_N_IMAGES), or the folder of setting image_dir"),
    ("speech", "setting n_clips (ANISO_N_CLIPS), or the folder of setting speech_dir"),
])
def test_the_settings_named_are_those_of_the_models_inputs(kind, said):
    entry = ModelEntry.model_validate(dict(id="m", source=dict(kind="local", path="./m"), **ROWS[kind]))
    assert _more_inputs(entry) == said
    if kind != "text":
        assert "n_sequences" not in _more_inputs(entry) and "corpus" not in _more_inputs(entry)
