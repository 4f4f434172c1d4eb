"""Speech and image inputs: real recordings and photographs from a local folder, seeded and sized by settings.

Speech: 16 kHz mono audio (other rates are resampled with
``scipy.signal.resample_poly``), read with ``soundfile`` from ``*.flac`` /
``*.wav`` files; when no folder is given and the hub is reachable, LibriSpeech
validation clips through ``datasets``. Images: ``*.jpg`` / ``*.jpeg`` /
``*.png`` read with Pillow as RGB, turned upright by their EXIF orientation tag; when no folder is given, the sample
photographs that ship inside scikit-image (labelled FALLBACK IMAGES).

A recording or photograph of another format in the folder (``.ogg``, ``.mp3``; ``.webp``, ``.tiff``, ``.svg``,
...) is not read: the files left out are named and counted in one :class:`SkippedInput` warning and in the set's
label, and a folder holding only such files is refused.

Both give a :class:`MediaSet` whose ``fingerprint`` (SHA-256 over the sampled
files' bytes) keys the statistics cache.

A sampled file that cannot be used (unreadable, empty, shorter than
:data:`MIN_SAMPLES` or silent; an image smaller than :data:`MIN_IMAGE_SIDE`,
larger than the pixel cap, a decompression bomb, or of a 32-bit/float mode
without a fixed value range) is skipped with a warning naming it and the
reason; the set counts and lists the skipped files (``describe()``,
``label``). Only a sample with no usable file raises
:class:`InputsUnavailable`. 16-bit greyscale images are scaled to 8 bits
(``v / 257``), not clipped.
"""

from __future__ import annotations

import hashlib
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .forms import INPUT_FORMS, SAMPLE_RATE

__all__ = ["InputsUnavailable", "MediaSet", "load_speech", "load_images", "load_images_excluding", "SAMPLE_RATE",
           "MAX_IMAGE_PIXELS", "SkippedInput"]

#: Shortest recording kept: 0.1 s (Whisper and wav2vec 2.0 need a few frames).
MIN_SAMPLES = SAMPLE_RATE // 10
#: Largest sample magnitude of a recording read, in multiples of full scale (float files hold samples in [-1, 1];
#: clipping up to 4 times full scale, 12 dB over, is tolerated): a float file scaled wrongly (by 1000, or 1e30, which
#: would make the models' spectrograms overflow to infinity) is no recording of speech as the models hear one.
MAX_AMPLITUDE = 4.0
#: Largest distance of a recording's samples from their mean (in full scale) that is still silence: one step of a
#: 16-bit recording (2**-15). A recording that varies no more, all zeros or a constant offset (a DC level with no
#: sound on it) whatever its level, is skipped as silent; the quietest LibriSpeech clip reaches about 0.1.
SILENCE = 2.0 ** -15
#: The sample rates a recording is read at (Hz), the lowest and highest: telephone speech is 8 kHz and studio audio
#: at most 192 kHz; a header saying 1 Hz (20,000 samples would last 5.5 h) is a broken file, not speech.
SAMPLE_RATES = (8_000, 192_000)
#: Smallest photograph side kept, in pixels (a smaller file is a thumbnail or a placeholder, not a photograph).
MIN_IMAGE_SIDE = 8
#: Default cap on the pixels of one photograph (setting ``max_image_pixels``): 50 M pixels (a 7,000 x 7,000
#: image; 150 MB as RGB). A larger file is skipped before it is decoded.
MAX_IMAGE_PIXELS = 50_000_000
#: Pillow's 16-bit greyscale modes, scaled to 8 bits by v / 257 (65535 -> 255).
_MODES_16 = ("I;16", "I;16B", "I;16L", "I;16N")
_AUDIO = (".flac", ".wav")
_IMAGES = (".jpg", ".jpeg", ".png")
#: The file types the loaders read from each data-folder setting (any case of the suffix), for
#: :meth:`aniso.common.settings.Settings.check_data_folders`: a folder they would find nothing in is refused when a
#: run's settings are read (:func:`aniso.registry.locate.settings_and_registry`), not every test of its models skipped.
DATA_FORMATS: dict[str, tuple[str, ...]] = {"speech_dir": _AUDIO, "image_dir": _IMAGES}
#: Suffixes of recordings and photographs of formats the loaders do not read (beside those the standard library's
#: :mod:`mimetypes` calls ``audio/*`` or ``image/*``): such a file in a data folder is left out, and named and counted
#: (:func:`_left_out`), not left out unsaid.
_OTHER_AUDIO = (".ogg", ".oga", ".opus", ".mp3", ".mp2", ".m4a", ".aac", ".aif", ".aiff", ".aifc", ".au", ".snd",
                ".wma", ".mka", ".caf", ".w64", ".amr", ".ape", ".wv", ".spx", ".alac", ".dsf")
_OTHER_IMAGES = (".webp", ".bmp", ".tif", ".tiff", ".gif", ".svg", ".heic", ".heif", ".avif", ".jp2", ".j2k", ".jxl",
                 ".jfif", ".ico", ".ppm", ".pgm", ".pbm", ".pnm", ".tga", ".psd", ".eps", ".pcx", ".qoi", ".dng",
                 ".cr2", ".nef", ".arw", ".raw")
#: What each data-folder setting reads, in words, and the ``mimetypes`` major type of the files it leaves out.
_KINDS = {"speech_dir": ("recording", "audio", _OTHER_AUDIO), "image_dir": ("photograph", "image", _OTHER_IMAGES)}


class InputsUnavailable(RuntimeError):
    """Inputs of a modality cannot be had here; the message says why and which setting provides them."""


class SkippedInput(RuntimeWarning):
    """A sampled recording or photograph that cannot be used was left out; the message names it and says why."""


class _Unusable(ValueError):
    """One file cannot be used; the message (naming the file) is the reason it is skipped."""


class _AboveCap(_Unusable):
    """A photograph of more pixels (``pixels``) than setting ``max_image_pixels`` allows (``cap``)."""

    def __init__(self, message: str, pixels: int, cap: int):
        super().__init__(message)
        self.pixels, self.cap = pixels, cap


@dataclass(frozen=True)
class MediaSet:
    """A seeded sample of recordings or photographs.

    Attributes
    ----------
    modality : "speech" or "vision"
    name, label : short name, and what a reader must know (shown with every result)
    origin : folder or loader the items came from
    fingerprint : SHA-256 prefix over the sampled items, for the statistics cache
    items : float32 waveforms at 16 kHz (speech) or RGB ``PIL.Image`` (vision), in sample order
    names : one name per item (file name)
    n_available : items in the source before sampling
    seed : the sampling seed
    is_fallback : True for the embedded default
    dataset_fingerprint : SHA-256 prefix over every item of the source (not only the sample)
    skipped : (file name, reason) of each sampled file left out because it cannot be used
    """

    modality: str
    name: str
    label: str
    origin: str
    fingerprint: str
    items: tuple[Any, ...]
    names: tuple[str, ...]
    n_available: int
    seed: int
    is_fallback: bool = False
    dataset_fingerprint: str = ""
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def dataset(self) -> str:
        """The identity of the source, whatever the sample: ``<name>@<dataset fingerprint>``."""
        return f"{self.name}@{self.dataset_fingerprint or self.fingerprint}"

    def without(self, drop: tuple[int, ...], reason: str) -> "MediaSet":
        """The set without the items at indices ``drop``, each named in :attr:`skipped` with ``reason`` (e.g. that it
        makes a model's hidden states non-finite), as :meth:`aniso.inputs.text.Corpus.without` leaves out
        paragraphs."""
        from dataclasses import replace

        gone = set(drop)
        keep = [i for i in range(len(self.items)) if i not in gone]
        skipped = self.skipped + tuple((self.names[i], f"{self.names[i]} {reason}") for i in sorted(gone))
        return replace(self, items=tuple(self.items[i] for i in keep), names=tuple(self.names[i] for i in keep),
                       skipped=skipped, label=f"{self.label}; {len(gone)} left out: non-finite hidden states")

    def describe(self) -> dict:
        """JSON-friendly provenance of the sample (without the data)."""
        out = {k: getattr(self, k) for k in ("dataset", "modality", "name", "label", "origin", "fingerprint",
                                             "n_available", "seed", "is_fallback")}
        out["n_items"] = len(self.items)
        out["n_skipped"] = len(self.skipped)
        if self.skipped:
            out["skipped"] = {name: reason for name, reason in self.skipped}
        rate = INPUT_FORMS[self.modality].sample_rate
        if rate:  # recordings: their total duration
            out["seconds"] = round(sum(len(a) for a in self.items) / rate, 2)
        return out


def _sample(files: list[Path], n: int, seed: int) -> list[Path]:
    if len(files) <= n:
        return files
    rng = np.random.Generator(np.random.PCG64(seed))
    return [files[i] for i in sorted(rng.choice(len(files), size=n, replace=False))]


def _list(folder: Path, suffixes: tuple[str, ...], setting: str) -> list[Path]:
    """The files of ``folder`` and its sub-folders whose suffix is one of ``suffixes`` (any case), sorted. Every
    entry that is not a folder is listed, also one that cannot be read (a symbolic link to itself or to nothing, a
    FIFO): sampled, it is skipped and named like any unusable file (:func:`_unreadable`), not left out unsaid."""
    if not folder.is_dir():
        raise InputsUnavailable(f"{setting}: {folder} is not a folder")
    files = sorted(p for p in _tree(folder, setting) if p.suffix.lower() in suffixes and not p.is_dir()
                   and not _hidden(p, folder))
    if not files:
        other = _left_out_note(folder, _left_out(folder, setting), setting) if setting in _KINDS else ""
        other = "; ".join(filter(None, [other, _hidden_note(folder, suffixes)]))
        raise InputsUnavailable(f"{setting}: no {'/'.join(suffixes)} files under {folder}"
                                + (f" ({other})" if other else ""))
    return files


def _tree(folder: Path, setting: str) -> list[Path]:
    """Every entry under ``folder`` (``Path.rglob``). Raises :class:`InputsUnavailable` naming ``setting`` and the
    folder in one line when a part of it cannot be listed (a chain of sub-folders deeper than the system lets a path
    be: :func:`aniso.common.files.tree_problem`), as ``aniso hub import`` refuses such a model folder: a sample drawn
    from the readable part only would be another set than the folder's."""
    from ..common.files import tree_problem

    try:
        return list(folder.rglob("*"))
    except OSError as exc:
        raise InputsUnavailable(f"{setting + ': ' if setting else ''}{tree_problem(folder, exc)}") from None


#: Folders and files that photo tools, file servers and operating systems write beside the files (their names,
#: compared in any case): macOS's zip resource forks, Synology's (``@eaDir``) and QNAP's (``.@__thumb``) thumbnail
#: folders, the recycle bins of Synology (``#recycle``) and Windows (``$RECYCLE.BIN``), Windows' volume folder and
#: thumbnail and folder-view files, the freedesktop thumbnail cache. Their images are no photographs of the set.
SYSTEM_NAMES = ("__MACOSX", "@eaDir", ".@__thumb", "#recycle", "$RECYCLE.BIN", "System Volume Information",
                ".thumbnails", "Thumbs.db", "desktop.ini")
_SYSTEM = frozenset(n.casefold() for n in SYSTEM_NAMES)


def _hidden(p: Path, folder: Path) -> bool:
    """Whether ``p``, a file under ``folder``, is hidden there: its name or a folder on its way from ``folder``
    begins with ``.`` (a thumbnail cache ``.thumbnails/``, macOS's ``._x.jpg`` resource forks, ``.git/``) or is one
    of :data:`SYSTEM_NAMES` (``__MACOSX``, a NAS's ``@eaDir`` thumbnails, a recycle bin). Such files are no
    recordings or photographs of the set."""
    return any(part.startswith(".") or part.casefold() in _SYSTEM for part in p.relative_to(folder).parts)


def _hidden_note(folder: Path, suffixes: tuple[str, ...]) -> str:
    """The words naming and counting the hidden files of ``folder`` (:func:`_hidden`) that have one of ``suffixes``,
    which :func:`_list` leaves out: ``"3 hidden files left out (a name or folder beginning with '.', or a system
    folder: __MACOSX, @eaDir, ...: .thumbnails/a.jpg, ...)"``, or ""."""
    hidden = sorted(p for p in _tree(folder, "") if p.suffix.lower() in suffixes and _hidden(p, folder)
                    and not p.is_dir())
    if not hidden:
        return ""
    names = [_shown(p.relative_to(folder)) for p in hidden]
    return (f"{len(hidden)} hidden file{'s' * (len(hidden) != 1)} left out (a name or folder beginning with '.', or "
            f"a system folder: {', '.join(n for n in SYSTEM_NAMES if not n.startswith('.'))}: "
            f"{', '.join(names[:3])}{', ...' if len(names) > 3 else ''})")


def _left_out(folder: Path, setting: str) -> list[Path]:
    """The files of ``folder`` and its sub-folders (as :func:`_list` searches) that are recordings or photographs of
    a format the loader of ``setting`` does not read: a suffix of :data:`_OTHER_AUDIO` / :data:`_OTHER_IMAGES`, or
    one :mod:`mimetypes` (its built-in table, not the machine's) calls ``audio/*`` / ``image/*``. Other files (a
    LibriSpeech chapter's ``.trans.txt``, a README) are no inputs and are not counted."""
    import mimetypes

    _, major, others = _KINDS[setting]
    table, reads = mimetypes.MimeTypes(), DATA_FORMATS[setting]

    def other_format(p: Path) -> bool:
        suffix = p.suffix.lower()
        if not suffix or suffix in reads:
            return False
        return suffix in others or (table.guess_type("x" + suffix)[0] or "").split("/")[0] == major

    return sorted(p for p in _tree(folder, setting) if other_format(p) and not p.is_dir() and not _hidden(p, folder))


def _left_out_note(folder: Path, files: list[Path], setting: str) -> str:
    """The line naming and counting ``files`` (:func:`_left_out`), "" when there are none: ``"4 files left out:
    photographs of formats this suite does not read (.bmp x1, .gif x1, ...: a.webp, b.bmp, ...); it reads
    .jpg/.jpeg/.png"``."""
    from collections import Counter

    if not files:
        return ""
    what = _KINDS[setting][0]
    counts = Counter(p.suffix.lower() for p in files)
    kinds = ", ".join(f"{suffix} x{n}" for suffix, n in sorted(counts.items()))
    names = [_shown(p.relative_to(folder)) for p in files]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return (f"{len(files)} file{'s' * (len(files) != 1)} left out: {what}s of formats this suite does not read "
            f"({kinds}: {shown}); it reads {'/'.join(DATA_FORMATS[setting])}")


def _warn_left_out(note: str, setting: str, folder: Path) -> str:
    """Warn once (a :class:`SkippedInput`, shown as the folder's own line, ``FOLDER:0: SkippedInput: ...``, as a
    skipped file is: :func:`_usable`) with ``note`` (:func:`_left_out_note`) when there is one; returns the text a
    set's label carries for it (``"; 4 files left out: ..."``, or "")."""
    from ..common.files import warn_as_file

    if not note:
        return ""
    warn_as_file(_shown(folder), f"{setting}: {note}", SkippedInput, "aniso.inputs.media")
    return f"; {note}"


def _files_fingerprint(files: list[Path], digests: dict[Path, bytes]) -> str:
    """SHA-256 prefix over the files' names and bytes, in order (``digests`` memoises each file's hash); a file that
    cannot be read (:func:`_unreadable`) counts by its name and why, and is not opened (a FIFO would block)."""
    h = hashlib.sha256()
    for p in files:
        if p not in digests:
            why = _unreadable(p)
            digests[p] = hashlib.sha256(p.read_bytes() if why is None else f"unreadable: {why}".encode()).digest()
        h.update(os.fsencode(p.name) + digests[p])  # the name's own bytes: a name that is not UTF-8 counts too
    return h.hexdigest()[:16]


def _sampled_files(folder: Path, suffixes: tuple[str, ...], setting: str, n: int, seed: int):
    """(all files, the seeded sample of n, fingerprint of the sample, fingerprint of all files)."""
    all_files = _list(folder, suffixes, setting)
    files = _sample(all_files, n, seed)
    digests: dict[Path, bytes] = {}
    return all_files, files, _files_fingerprint(files, digests), _files_fingerprint(all_files, digests)


def _to_16k(audio: np.ndarray, rate: int) -> np.ndarray:
    from scipy.signal import resample_poly

    if audio.ndim == 2:
        audio = audio.mean(axis=1)
    if rate != SAMPLE_RATE:
        g = math.gcd(rate, SAMPLE_RATE)
        audio = resample_poly(audio, SAMPLE_RATE // g, rate // g)
    return np.ascontiguousarray(audio, dtype=np.float32)


def load_speech(folder: str | Path | None, n_clips: int, seed: int, *, max_seconds: float = 30.0,
                hub_reachable: bool = False) -> MediaSet:
    """A seeded sample of ``n_clips`` recordings, mono float32 at 16 kHz, each cut to ``max_seconds``.

    Parameters
    ----------
    folder : folder searched recursively for .flac/.wav (setting ``speech_dir``); None: LibriSpeech
        validation via ``datasets`` if the hub is reachable
    n_clips : clips to sample (all if fewer)
    seed : sampling seed
    max_seconds : longest clip kept (Whisper's window is 30 s)

    A sampled file that cannot be used (unreadable, empty, shorter than :data:`MIN_SAMPLES`, silent: all zeros or a
    constant offset, varying by no more than :data:`SILENCE`) is skipped with a :class:`SkippedInput` warning naming
    it and the reason, and listed in ``skipped``.

    Raises
    ------
    InputsUnavailable naming the setting, the folder or the failed loader (and every file's reason when no sampled
    recording is usable); ValueError if n_clips < 1.
    """
    if n_clips < 1:
        raise ValueError(f"n_clips must be >= 1, got {n_clips}")
    if folder is None:
        if not hub_reachable:
            raise InputsUnavailable("speech inputs: no folder given (--aniso-speech-dir / ANISO_SPEECH_DIR) "
                                    "and the hub cannot be reached for LibriSpeech")
        return _librispeech_from_hub(n_clips, seed, max_seconds)
    folder = Path(folder)
    all_files, files, fingerprint, dataset = _sampled_files(folder, _AUDIO, "speech_dir", n_clips, seed)
    left_out = "; ".join(filter(None, [_left_out_note(folder, _left_out(folder, "speech_dir"), "speech_dir"),
                                       _hidden_note(folder, _AUDIO)]))
    clips, names, skipped = _usable(files, lambda p: _read_clip(p, max_seconds), "speech_dir", folder, "recording")
    copies = _copies(clips, names, "speech_dir", folder, "recording")
    return MediaSet("speech", folder.name, f"{len(clips)} recordings from {folder} (16 kHz, <= {max_seconds:g} s)"
                    + _fewer_note(len(all_files), n_clips, "recordings", "n_clips")
                    + _skipped_note(skipped, len(files)) + copies + _warn_left_out(left_out, "speech_dir", folder),
                    str(folder), fingerprint, tuple(clips), tuple(names), len(all_files), seed,
                    dataset_fingerprint=dataset, skipped=tuple(skipped))


def _read_clip(p: Path, max_seconds: float) -> np.ndarray:
    """One recording as float32 mono 16 kHz, cut to ``max_seconds``; raises _Unusable naming the file when it cannot
    be read, has a sample rate outside :data:`SAMPLE_RATES`, holds a NaN or infinite sample or one far outside
    [-1, 1] (:data:`MAX_AMPLITUDE`), or is empty, too short or silent."""
    import soundfile

    _refuse_unreadable(p)
    if _empty(p):
        raise _Unusable(f"cannot read {p}: it is empty (0 bytes)")
    try:
        rate = soundfile.info(p).samplerate
    except Exception as exc:  # noqa: BLE001 - name the file
        raise _Unusable(f"cannot read {p}: {_line(exc)}") from None
    if not SAMPLE_RATES[0] <= rate <= SAMPLE_RATES[1]:  # before decoding: a 1 Hz header would resample for minutes
        raise _Unusable(f"{p} has sample rate {rate} Hz; a recording of speech is read at {SAMPLE_RATES[0]:,} to "
                        f"{SAMPLE_RATES[1]:,} Hz (its header is wrong, or it is no recording)")
    try:
        audio, rate = soundfile.read(p, dtype="float32")
        clip = _to_16k(audio, rate)[: int(max_seconds * SAMPLE_RATE)]
    except Exception as exc:  # noqa: BLE001 - name the file
        raise _Unusable(f"cannot read {p}: {_line(exc)}") from None
    bad = int(np.count_nonzero(~np.isfinite(audio)))
    if bad:  # checked on the file's own samples: resampling would spread one NaN over its neighbours
        raise _Unusable(f"{p} has {bad} NaN or infinite sample(s) of {audio.size}")
    peak = float(np.abs(audio).max(initial=0))
    if peak > MAX_AMPLITUDE:  # a float file scaled wrongly: its spectrogram's power overflows float32 in the model
        raise _Unusable(f"{p} has samples of magnitude up to {peak:.3g}, beyond full scale; a recording's samples "
                        f"lie within [-1, 1] (at most {MAX_AMPLITUDE:g} times full scale is read)")
    swing = _swing(audio[: int(max_seconds * rate)])
    sounding = _sounding_seconds(audio[: int(max_seconds * rate)], rate)
    if clip.size < MIN_SAMPLES or not np.any(clip) or swing <= SILENCE or sounding < MIN_SAMPLES / SAMPLE_RATE:
        kind = "silent" if clip.size >= MIN_SAMPLES else "empty" if clip.size == 0 else "too short"
        peak = float(np.abs(clip).max(initial=0))
        offset = ("" if kind != "silent" or peak <= SILENCE else
                  f", a constant offset: its samples vary by at most {swing:.3g} about their mean" if swing <= SILENCE
                  else f", constant stretches: its samples change within {HOLD_SECONDS * 1000:g} ms in {sounding:.2g} s "
                  "of it")
        raise _Unusable(f"{p} is {kind} ({clip.size / SAMPLE_RATE:.3g} s, peak {peak:.3g}{offset}; at least "
                        f"{MIN_SAMPLES / SAMPLE_RATE:g} s of sound needed)")
    return clip


def _swing(audio: np.ndarray) -> float:
    """The largest distance of a recording's samples from their mean (each channel's own), in full scale: 0 for an
    all-zero recording and for a constant (a DC offset), whatever its level. Taken on the file's own samples, before
    resampling (whose filter rings at a constant's ends)."""
    if audio.size == 0:
        return 0.0
    samples = audio.astype(np.float64).reshape(audio.shape[0], -1)
    return float(np.abs(samples - samples.mean(axis=0)).max())


#: How long a sample counts as sounding after its recording last changed (seconds): a tone of 25 Hz or more, even a
#: square wave (held between its edges for half a period), sounds throughout; a step between constant levels, a
#: few edges at most, sounds for as many of these windows only.
HOLD_SECONDS = 0.02


def _sounding_seconds(audio: np.ndarray, rate: int) -> float:
    """How long a recording sounds, in seconds: the samples within :data:`HOLD_SECONDS` after a change from one sample
    to the next (in the channel where most are), at ``rate``. Any change counts, however small (quiet speech changes
    at nearly every sample, by less than an int16 step when scaled down); constant stretches (a DC offset, a step from
    one level to another, a recording held at one value) do not sound. Taken on the file's own samples, before
    resampling."""
    if audio.shape[0] < 2:
        return 0.0
    samples = audio.reshape(audio.shape[0], -1)
    changes = np.diff(samples, axis=0) != 0  # (n - 1, channels)
    counted = np.concatenate([np.zeros((1, changes.shape[1]), np.int64), np.cumsum(changes, axis=0)])
    hold = max(1, round(HOLD_SECONDS * rate))
    ends = np.arange(1, counted.shape[0])  # a change in the hold window (end - hold, end] sounds at end
    recent = counted[ends] - counted[np.maximum(ends - hold, 0)]
    return float((recent > 0).sum(axis=0).max()) / rate


#: How many of the reasons a sample with no usable file gives in its one line (each skipped file has its warning).
_REASONS_SHOWN = 2


def _usable(files: list[Path], read, setting: str, folder: Path, what: str) -> tuple[list, list[str], list]:
    """``read`` each file; a file it refuses (:class:`_Unusable`) is skipped with a :class:`SkippedInput` warning.

    Returns (items, their file names, [(file name, reason), ...] of the skipped ones). Raises InputsUnavailable
    naming the setting, the folder, how many files cannot be used and the first two reasons when no file is usable.
    """
    items, names, skipped, refused = [], [], [], []

    for p in files:
        try:
            if not _utf8_name(p):
                raise _Unusable(f"cannot read {_shown(p)}: its file name is not UTF-8 (the bytes that are not are "
                                "shown escaped, \\xNN), and results and the cache record file names as text; "
                                "rename the file")
            items.append(read(p))
            names.append(p.name)
        except _Unusable as exc:
            skipped.append((_shown(Path(p.name)), str(exc)))
            refused.append((p, exc))
            if not isinstance(exc, _AboveCap):  # said once it is known whether any file is below the cap
                _warn_skipped(setting, [(p, exc)])

    if not items and refused and all(isinstance(exc, _AboveCap) for _, exc in refused):  # one cause: said once
        from ..common.settings import _where

        least = min(exc.pixels for _, exc in refused)
        raise InputsUnavailable(f"{_where('max_image_pixels')} is {refused[0][1].cap:,}: every one of the "
                                f"{len(files)} sampled from {folder} is larger ({least:,} pixels and up); raise it to "
                                "measure them")
    _warn_skipped(setting, [(p, exc) for p, exc in refused if isinstance(exc, _AboveCap)])
    if not items:
        shown = "; ".join(reason for _, reason in skipped[:_REASONS_SHOWN])
        more = (f"; and {len(skipped) - _REASONS_SHOWN} more, each named in a SkippedInput warning"
                if len(skipped) > _REASONS_SHOWN else "")
        raise InputsUnavailable(f"{setting}: no usable {what} among the {len(files)} sampled from {folder}: "
                                f"{len(skipped)} cannot be used: {shown}{more}")
    return items, names, skipped


def _warn_skipped(setting: str, which) -> None:
    """A :class:`SkippedInput` warning for each (file, reason) of ``which``, shown as the file's own line
    ("PATH:0: SkippedInput: ...", :func:`aniso.common.files.warn_as_file`, which never reads the file), its
    unprintable characters escaped (:func:`_shown`; the reason may quote a file name)."""
    from ..common.files import warn_as_file
    from ..common.tables import printable

    for p, exc in which:
        warn_as_file(_shown(p), printable(f"{setting}: skipped, measuring the rest: {exc}"), SkippedInput,
                     "aniso.inputs.media")


def _content_key(item: Any) -> bytes:
    """SHA-256 of what a recording or photograph holds once decoded: a waveform's samples, or an image's size, mode
    and pixels. Two files with the same key are one input, whatever their names or encodings."""
    if isinstance(item, np.ndarray):
        arr = np.ascontiguousarray(item)
        head = f"{arr.dtype}{arr.shape}".encode()
    else:  # a PIL image
        arr = np.ascontiguousarray(np.asarray(item))
        head = f"{item.mode}{item.size}".encode()
    return hashlib.sha256(head + arr.tobytes()).digest()


def _copies(items: list, names: list[str], setting: str, folder: Path, what: str) -> str:
    """The note a set's label carries when some of its ``items`` are copies of another (the same decoded content,
    :func:`_content_key`): ``"; 7 of the 8 recordings repeat another (same content: a.flac = b.flac, ...)"``; ""
    when all are distinct. Copies are measured, as a corpus's repeated paragraphs are, but they are not
    independent inputs (a bootstrap over them resamples one input), and a reader must know it.

    Raises InputsUnavailable naming the setting, the folder and the copies when fewer than 2 distinct inputs remain
    among 2 or more (their statistics would be those of one input: an average cosine of 1 at every layer)."""
    first: dict[bytes, str] = {}
    pairs = []
    for item, name in zip(items, names):
        key = _content_key(item)
        if key in first:
            pairs.append(f"{_shown(Path(name))} = {_shown(Path(first[key]))}")
        else:
            first[key] = name
    if not pairs:
        return ""
    shown = ", ".join(pairs[:3]) + (", ..." if len(pairs) > 3 else "")
    if len(first) < 2:
        raise InputsUnavailable(f"{setting}: the {len(items)} {what}s measured from {folder} are copies of one "
                                f"{what} (the same content: {shown}); at least 2 distinct {what}s are needed")
    return f"; {len(pairs)} of the {len(items)} {what}s repeat another (the same content: {shown})"


def _utf8_name(p: Path) -> bool:
    """Whether the bytes of ``p``'s name are UTF-8, whatever the locale: under an ASCII one Python reads each byte
    of a UTF-8 name past 127 as a lone surrogate, and those bytes are UTF-8 all the same."""
    try:
        os.fsencode(p).decode("utf-8")
    except UnicodeError:
        return False
    return True


def _shown(p: Path) -> str:
    """``p`` as text to show: a byte of its name that is not UTF-8 (read by Python as a lone surrogate, which no
    UTF-8 text can hold) is written ``\\xNN``, and a control or other unprintable character (a terminal escape, a
    line end) as its Python escape (``\\x1b``, ``\\n``: :func:`aniso.common.tables.printable`, as ``aniso diff``
    shows them), so that a file name can neither colour the terminal nor break a warning's line; a UTF-8 name of
    printable characters is shown as it is."""
    from ..common.tables import printable

    return printable(os.fsencode(p).decode("utf-8", "backslashreplace"))


def _unreadable(p: Path) -> str | None:
    """Why ``p`` cannot be read as a recording or photograph, as a phrase after "cannot read PATH: "
    (``"Too many levels of symbolic links (a symbolic link to itself, or a loop of links)"``, ``"it is a symbolic
    link to nothing"``, ``"it is a FIFO or pipe, ..."``), or None for a regular file. Checked with
    :func:`aniso.common.files.not_a_regular_file`, which never opens the file (opening a FIFO blocks)."""
    import errno

    from ..common.files import not_a_regular_file

    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{exc.strerror} (a symbolic link to itself, or a loop of links)"
        if exc.errno == errno.ENOENT and p.is_symlink():
            return "it is a symbolic link to nothing"
        return exc.strerror or type(exc).__name__
    why = not_a_regular_file(p)
    return None if why is None else f"it {why}"


def _refuse_unreadable(p: Path) -> None:
    """Raise :class:`_Unusable` naming ``p`` when it is no regular file that can be read (:func:`_unreadable`)."""
    why = _unreadable(p)
    if why is not None:
        raise _Unusable(f"cannot read {p}: {why}")


def _empty(p: Path) -> bool:
    """Whether ``p`` is a file of 0 bytes (a decoder would call it of an unknown format)."""
    try:
        return p.stat().st_size == 0
    except OSError:
        return False


def _line(exc: BaseException) -> str:
    """An exception's message on one line (a library's may span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _fewer_note(found: int, requested: int, what: str, setting: str) -> str:
    """"; only 12 photographs in the folder, 500 requested (setting n_images)" where the folder holds fewer files
    than the setting asks for (all are then measured), else ""."""
    return f"; only {found} {what} in the folder, {requested} requested (setting {setting})" if found < requested else ""


def _skipped_note(skipped: list, drawn: int | None = None) -> str:
    """" (2 unusable files skipped: 6 of the 8 drawn measured, none drawn in their place)" ("" when none was):
    ``drawn`` the files sampled, of which the unusable ones are left out and not replaced."""
    if not skipped:
        return ""
    note = f" ({len(skipped)} unusable file{'s' * (len(skipped) != 1)} skipped"
    if drawn is not None:
        note += f": {drawn - len(skipped)} of the {drawn} drawn measured, none drawn in their place"
    return note + ")"


def _librispeech_from_hub(n_clips: int, seed: int, max_seconds: float) -> MediaSet:
    try:
        from datasets import load_dataset

        ds = load_dataset("openslr/librispeech_asr", "clean", split="validation", streaming=True)
        ds = ds.shuffle(seed=seed, buffer_size=1000).take(n_clips)
        clips, names = [], []
        for row in ds:
            clips.append(_to_16k(np.asarray(row["audio"]["array"]), row["audio"]["sampling_rate"])
                         [: int(max_seconds * SAMPLE_RATE)])
            names.append(str(row["id"]))
    except Exception as exc:  # noqa: BLE001 - report the loader failure
        raise InputsUnavailable(f"speech inputs: LibriSpeech via datasets failed: {exc}") from None
    h = hashlib.sha256("".join(names).encode()).hexdigest()[:16]
    return MediaSet("speech", "librispeech-clean-validation", f"{len(clips)} LibriSpeech clean validation clips",
                    "datasets: openslr/librispeech_asr", h, tuple(clips), tuple(names), len(clips), seed,
                    dataset_fingerprint="hub")


#: Pictures that ship inside the scikit-image wheel (no download): colour photographs, then two greyscale ones.
_SKIMAGE_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "cat", "immunohistochemistry", "hubble_deep_field",
                   "colorwheel", "retina", "logo", "camera", "coins")


def load_images(folder: str | Path | None, n_images: int, seed: int, *,
                max_pixels: int = MAX_IMAGE_PIXELS) -> MediaSet:
    """A seeded sample of ``n_images`` photographs as RGB ``PIL.Image``.

    Parameters
    ----------
    folder : folder searched recursively for .jpg/.jpeg/.png (setting ``image_dir``); None: the sample
        photographs of scikit-image (FALLBACK IMAGES, a dozen pictures)
    n_images : images to sample (all if fewer)
    seed : sampling seed
    max_pixels : largest width x height read (setting ``max_image_pixels``); a larger file is skipped from its
        header, before it is decoded

    A sampled file that cannot be used is skipped with a :class:`SkippedInput` warning naming it and the reason,
    and listed in ``skipped`` (see :func:`_read_image`).

    Raises
    ------
    InputsUnavailable naming the setting, folder and reasons when no sampled file is usable; ValueError if
    n_images < 1 or max_pixels < 1.
    """
    if n_images < 1:
        raise ValueError(f"n_images must be >= 1, got {n_images}")
    if max_pixels < 1:
        raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
    if folder is None:
        return _skimage_photos(n_images, seed)
    folder = Path(folder)
    all_files, files, fingerprint, dataset = _sampled_files(folder, _IMAGES, "image_dir", n_images, seed)
    left_out = "; ".join(filter(None, [_left_out_note(folder, _left_out(folder, "image_dir"), "image_dir"),
                                       _hidden_note(folder, _IMAGES)]))
    images, names, skipped = _usable(files, lambda p: _read_image(p, max_pixels), "image_dir", folder, "photograph")
    copies = _copies(images, names, "image_dir", folder, "photograph")
    return MediaSet("vision", folder.name, f"{len(images)} photographs from {folder}"
                    + _fewer_note(len(all_files), n_images, "photographs", "n_images") + _skipped_note(skipped, len(files))
                    + copies + _warn_left_out(left_out, "image_dir", folder),
                    str(folder), _oriented_fingerprint(fingerprint, images), tuple(images), tuple(names),
                    len(all_files), seed,
                    dataset_fingerprint=dataset, skipped=tuple(skipped))


def _read_image(p: Path, max_pixels: int = MAX_IMAGE_PIXELS):
    """One photograph as an RGB ``PIL.Image``; raises :class:`_Unusable` naming the file and the reason.

    Greyscale, palette, CMYK and RGBA photographs are converted (alpha dropped); 16-bit greyscale (Pillow modes
    ``I;16``, ``I;16B``, ``I;16L``) and 32-bit integer images whose values lie in 0..65535 (how some Pillow versions
    open 16-bit PNGs) are scaled to 8 bits by v / 257, rounded. A photograph whose EXIF orientation tag says it is
    stored turned or mirrored (2 to 8) is turned upright first, as viewers show it. Refused: an unreadable file, one
    larger than ``max_pixels`` or than Pillow's decompression-bomb limit (read from the header, before decoding), a
    32-bit integer image with values outside 0..65535 or a float image (no fixed value range to scale), and one
    smaller than :data:`MIN_IMAGE_SIDE` pixels on a side.
    """
    from PIL import Image

    _refuse_unreadable(p)
    if _empty(p):
        raise _Unusable(f"cannot read {p}: it is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(p) as im:
                w, h = im.size
                if w * h > max_pixels:
                    raise _AboveCap(f"{p} is {w} x {h} pixels ({w * h:,}), above the cap of {max_pixels:,} pixels "
                                    "(setting max_image_pixels)", w * h, max_pixels)
                orientation = _orientation(im)
                rgb = _to_rgb(p, _upright(im) if orientation != 1 else im)
    except _Unusable:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise _Unusable(f"{p} is refused as a decompression bomb: {_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - name the file
        raise _Unusable(f"cannot read {p}: {_line(exc)}") from None
    if min(rgb.size) < MIN_IMAGE_SIDE:
        raise _Unusable(f"{p} is {rgb.size[0]} x {rgb.size[1]} pixels; photographs of at least "
                        f"{MIN_IMAGE_SIDE} pixels a side are needed")
    if orientation != 1:
        rgb.info[_ORIENTED] = orientation
    return rgb


#: The EXIF tag of a photograph's orientation (1: stored upright; 2 to 8: mirrored and/or turned by a quarter or half).
_ORIENTATION_TAG = 0x0112
#: Key of ``Image.info`` marking a photograph turned upright by its EXIF orientation (the tag's value).
_ORIENTED = "aniso_exif_orientation"


def _orientation(im) -> int:
    """The EXIF orientation of an opened photograph, 2 to 8, else 1 (no tag, a value outside 1..8, or EXIF data
    Pillow cannot parse: the pixels are taken as stored, as a viewer would show them)."""
    try:
        value = im.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # noqa: BLE001 - unparsable EXIF: the pixels as stored
        return 1
    return value if isinstance(value, int) and 2 <= value <= 8 else 1


def _upright(im):
    """``im`` turned and mirrored by its EXIF orientation, as viewers show it and as transformers' own image loading
    reads it (``PIL.ImageOps.exif_transpose``)."""
    from PIL import ImageOps

    return ImageOps.exif_transpose(im)


def _oriented_fingerprint(fingerprint: str, images: list) -> str:
    """``fingerprint`` (over the files' bytes), extended by the photographs turned upright by their EXIF orientation:
    a set read before orientations were applied is not served from a cache under the same bytes. A set with no
    orientation tag keeps its fingerprint."""
    turned = [im.info[_ORIENTED] for im in images if _ORIENTED in im.info]
    if not turned:
        return fingerprint
    return hashlib.sha256(f"{fingerprint} exif-orientation {turned}".encode()).hexdigest()[:16]


def _to_rgb(p: Path, im):
    """``im`` as 8-bit RGB, high-bit greyscale scaled by its value range (see :func:`_read_image`)."""
    from PIL import Image

    if im.mode in _MODES_16 or im.mode == "I":
        arr = np.asarray(im).astype(np.int64)
        if arr.size and (arr.min() < 0 or arr.max() > 65535):
            raise _Unusable(f"{p} is a 32-bit integer image with values {arr.min()}..{arr.max()}, outside the "
                            "16-bit range: no fixed range to scale to 8 bits; save it as 8- or 16-bit")
        grey = ((arr + 128) // 257).astype(np.uint8)  # round(v * 255 / 65535)
        return Image.fromarray(grey, "L").convert("RGB")
    if im.mode == "F":
        raise _Unusable(f"{p} is a floating-point image (mode F): no fixed range to scale to 8 bits; save it as "
                        "8- or 16-bit")
    return im.convert("RGB")


def load_images_excluding(measured: MediaSet) -> MediaSet:
    """The photographs of ``measured``'s folder that are *not* in ``measured`` (by file name), as RGB ``PIL.Image``.

    What the suite's miniatures train on, so that they are measured on photographs they never saw. Files
    ``measured`` skipped are left out as well; another unusable file is skipped with a warning.

    Raises
    ------
    InputsUnavailable if ``measured`` is the embedded fallback (no folder) or no usable photograph is left over
    (lower ``n_images`` or add photographs to ``image_dir``).
    """
    if measured.is_fallback or measured.modality != "vision":
        raise InputsUnavailable("training images: needs a folder of photographs (--aniso-image-dir / "
                                "ANISO_IMAGE_DIR), not the fallback images")
    folder = Path(measured.origin)
    used = set(measured.names) | {name for name, _ in measured.skipped}
    files = [p for p in _list(folder, _IMAGES, "image_dir") if p.name not in used]
    if not files:
        raise InputsUnavailable(f"image_dir: all {measured.n_available} photographs of {folder} are measured "
                                f"(n_images = {len(measured.items)}); none is left to train on")
    images, names, skipped = _usable(files, _read_image, "image_dir", folder, "photograph left to train on")
    return MediaSet("vision", folder.name, f"{len(images)} photographs from {folder}, those not measured"
                    + _skipped_note(skipped), str(folder), _oriented_fingerprint(_files_fingerprint(files, {}), images),
                    tuple(images),
                    tuple(names), len(files) + len(used), measured.seed,
                    dataset_fingerprint=measured.dataset_fingerprint, skipped=tuple(skipped))


def _skimage_photos(n_images: int, seed: int) -> MediaSet:
    from PIL import Image

    try:
        import skimage
        from skimage import data
    except ImportError:
        raise InputsUnavailable("image inputs: no folder given (--aniso-image-dir / ANISO_IMAGE_DIR) and "
                                "scikit-image (the embedded fallback photographs) is not installed") from None
    images, names, h = [], [], hashlib.sha256()
    for name in _SKIMAGE_PHOTOS[:n_images]:
        arr = np.asarray(getattr(data, name)())
        if arr.ndim == 2:
            arr = np.stack([arr] * 3, axis=-1)
        arr = arr[..., :3]
        if arr.dtype != np.uint8:
            arr = (255 * (arr - arr.min()) / max(float(arr.max() - arr.min()), 1e-12)).astype(np.uint8)
        h.update(name.encode() + hashlib.sha256(arr.tobytes()).digest())
        images.append(Image.fromarray(arr, "RGB"))
        names.append(name)
    return MediaSet("vision", "skimage-data", f"FALLBACK IMAGES: {len(images)} sample photographs shipped with "
                    "scikit-image (not the paper's images)", "skimage.data", h.hexdigest()[:16], tuple(images),
                    tuple(names), len(_SKIMAGE_PHOTOS), seed, is_fallback=True,
                    dataset_fingerprint=f"scikit-image-{skimage.__version__}")
