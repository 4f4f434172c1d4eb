"""How a user gives each kind of inputs (the kinds of :data:`aniso.extract.modalities.INPUTS`): the settings that
name and count them, what a folder of them holds, the preprocessor a model folder keeps for them, and the small
synthetic inputs of a twin run. One row per kind; the doors (``aniso.measure``, ``aniso.check``, the twin run) and
the hub source's folder check ask the row instead of naming a kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["InputsForm", "INPUT_FORMS", "SAMPLE_RATE"]

#: Samples per second of the recordings: every clip is resampled to it on loading (16 kHz, as the speech models of
#: the registry expect).
SAMPLE_RATE = 16_000


def _synthetic_recordings(folder, seed: int, n: int = 4):
    """``n`` WAV files of 16 kHz tones in noise (1 to 2 s) in ``folder``; returns the folder."""
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.Generator(np.random.PCG64(seed))
    for i in range(n):
        t = np.arange(int(SAMPLE_RATE * (1.0 + i / max(n - 1, 1)))) / SAMPLE_RATE
        audio = 0.1 * np.sin(2 * np.pi * (180 + 60 * i) * t) + 0.02 * rng.standard_normal(t.size)
        soundfile.write(folder / f"tone-{i}.wav", audio.astype(np.float32), SAMPLE_RATE)
    return folder


@dataclass(frozen=True)
class InputsForm:
    """How a user gives inputs of one kind of :data:`INPUTS` (``aniso.measure``, ``aniso.check``, the settings).

    Attributes
    ----------
    setting : the setting naming the file or folder they are read from (``corpus``, ``speech_dir``, ``image_dir``)
    size : the setting counting the items sampled (``n_sequences``, ``n_clips``, ``n_images``)
    items : what one folder holds, e.g. ``recordings (.flac/.wav)``; None where they are texts (a corpus file, one
        paragraph per line, or a list of texts)
    processor : the preprocessor whose ``preprocessor_config.json`` a model folder holds for them (``feature
        extractor``, ``image processor``); None where a tokenizer reads them
    synthetic : ``(folder, seed) -> folder`` writing a few small synthetic inputs for a twin run (whose verdicts
        are the code path's), where the run's own would take long; None where the twin run's sizes suffice
    synthetic_note : what ``synthetic`` writes, as the twin manifest records it
    sample_rate : samples per second of one item (recordings, resampled to it on loading), None where the items
        have no duration
    """

    setting: str
    size: str
    items: str | None = None
    processor: str | None = None
    synthetic: Callable[[Any, int], Any] | None = None
    synthetic_note: str = ""
    sample_rate: int | None = None

    @property
    def noun(self) -> str:
        """The items' name without their file types (``recordings``, ``photographs``, ``texts``)."""
        return (self.items or "texts").split(" (")[0]


#: Kind of inputs → how they are given (the keys of :data:`INPUTS`).
INPUT_FORMS: dict[str, InputsForm] = {
    "text": InputsForm("corpus", "n_sequences"),
    "reactions": InputsForm("corpus", "n_sequences"),
    "speech": InputsForm("speech_dir", "n_clips", "recordings (.flac/.wav)", "feature extractor", _synthetic_recordings,
                         "4 synthetic recordings, tones in noise of 1 to 2 s (WAV, 16 kHz), read by the speech loader "
                         "as a folder of recordings is", sample_rate=SAMPLE_RATE),
    "vision": InputsForm("image_dir", "n_images", "photographs (.jpg/.png)", "image processor"),
}
