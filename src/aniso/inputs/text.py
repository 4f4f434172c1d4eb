"""Text corpora: WikiText-103 validation (Godey et al. 2024 §3.1), with fallbacks.

Where the text comes from, in order:

1. a local file given explicitly (pytest ``--aniso-corpus`` or ``ANISO_CORPUS``),
   in WikiText's ``wiki.valid.tokens`` layout or any plain text with one
   paragraph per line (a line ends in ``\n`` or ``\r\n`` only: :func:`corpus_lines`);
2. ``datasets.load_dataset("wikitext", "wikitext-103-raw-v1")`` when the
   ``datasets`` package is installed and the hub is reachable;
3. an embedded default every Python install has: the documentation text of
   ``pydoc_data.topics``. It is *not* WikiText, and every result says so.

Sequences are paragraphs (WikiText's headings and blank lines dropped), sampled
without replacement with an explicit seed.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Corpus", "CorpusError", "load_corpus", "read_text_file", "corpus_paragraphs", "ALL", "corpus_lines", "wikitext_paragraphs", "is_heading", "sample_sequences", "first_token"]

_WIKITEXT_JOINERS = re.compile(r" @([-.,])@ ")


#: The name of the corpus file :func:`aniso.check` writes a list of texts to (in a temporary folder): such a file is
#: labelled as the texts given (``the 4 texts given as inputs``), not by its name, and a refusal of too few of them
#: asks for more or longer texts.
GIVEN_TEXTS = "texts-given-as-inputs.txt"


#: The ``origin`` of the corpus :func:`aniso.measure` makes of a list of texts (no file).
GIVEN_LIST = "a list of texts"


#: The prefix of the temporary folder :func:`aniso.check` writes :data:`GIVEN_TEXTS` in.
GIVEN_FOLDER_PREFIX = "aniso-check-"


def given_texts(origin: str | None) -> bool:
    """Whether a corpus's ``origin`` is the texts a caller gave the Python API as a list: :func:`aniso.measure`'s
    (:data:`GIVEN_LIST`) or the file :func:`aniso.check` wrote them to (:data:`GIVEN_TEXTS`, in a folder
    :data:`GIVEN_FOLDER_PREFIX`... of the system's temporary folder: a corpus file of that name elsewhere, given as
    setting corpus, is a corpus file like any other)."""
    import tempfile

    if origin is None:
        return False
    if origin == GIVEN_LIST:
        return True
    path = Path(origin)
    return (path.name == GIVEN_TEXTS and path.parent.name.startswith(GIVEN_FOLDER_PREFIX)
            and os.path.realpath(path.parent.parent) == os.path.realpath(tempfile.gettempdir()))


class CorpusError(ValueError):
    """A corpus file that cannot be read or holds too little text."""


@dataclass(frozen=True)
class Corpus:
    """A seeded sample of text sequences.

    Attributes
    ----------
    name : short name ("wikitext-103-validation", "pydoc_data.topics (fallback)", ...)
    label : what a reader must know about it (shown next to every result)
    origin : file path or loader call the text came from
    fingerprint : SHA-256 prefix of the source text, for the statistics cache
    sequences : the sampled paragraphs, in sample order
    n_available : paragraphs in the source before sampling
    seed : the sampling seed
    is_fallback : True for the embedded default (not the paper's corpus)
    skipped : (name, reason) of each sampled paragraph left out of the measurement (:meth:`without`)
    """

    name: str
    label: str
    origin: str
    fingerprint: str
    sequences: tuple[str, ...]
    n_available: int
    seed: int
    is_fallback: bool = False
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """A name per sampled paragraph, for a reader to find it: its place in the sample and its first words."""
        return tuple(f"paragraph {i + 1} of the sample ({_opening(text)})" for i, text in enumerate(self.sequences))

    def without(self, drop: tuple[int, ...], reason: str) -> "Corpus":
        """The sample without the paragraphs at indices ``drop``, each named in :attr:`skipped` with ``reason``
        (e.g. that it makes a model's hidden states non-finite); the label says how many were left out."""
        from dataclasses import replace

        gone, names = set(drop), self.names
        return replace(self, sequences=tuple(t for i, t in enumerate(self.sequences) if i not in gone),
                       skipped=self.skipped + tuple((names[i], f"{names[i]} {reason}") for i in sorted(gone)),
                       label=f"{self.label}; {len(gone)} paragraph(s) left out: {reason}")

    @property
    def items(self) -> tuple[str, ...]:
        """The sampled paragraphs (what the text modality runs)."""
        return self.sequences

    @property
    def dataset(self) -> str:
        """The identity of the source text, whatever the sample: ``<name>@<fingerprint>``."""
        return f"{self.name}@{self.fingerprint}"

    def describe(self) -> dict:
        """JSON-friendly provenance of the sample (without the text itself)."""
        return {
            "dataset": self.dataset,
            "name": self.name,
            "label": self.label,
            "origin": self.origin,
            "fingerprint": self.fingerprint,
            "n_sequences": len(self.sequences),
            "n_available": self.n_available,
            "seed": self.seed,
            "is_fallback": self.is_fallback,
        } | ({"n_skipped": len(self.skipped), "skipped": dict(self.skipped)} if self.skipped else {})


def _opening(text: str, words: int = 6) -> str:
    """The first ``words`` words of ``text``, with an ellipsis when there are more."""
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def corpus_lines(text: str) -> list[str]:
    """The lines of a corpus file's ``text``: a line ends in ``\n`` (or ``\r\n``, whose ``\r`` is stripped with the
    other blanks at its ends) and nowhere else. Unlike :meth:`str.splitlines`, a form feed (``\x0c``), the separators
    ``\x1c``-``\x1e``, NEL (``\x85``), U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR inside a line does not end
    it: a file of 20 lines is 20 paragraphs, as ``wc -l`` and every other line-reading tool count them."""
    return text.split("\n")


#: The longest line (in characters, blanks at its ends stripped) that can be a WikiText heading (:func:`is_heading`).
#: WikiText-103's and WikiText-2's headings are at most 70 characters (``= = = Demobilisation and peace @-@ time
#: defence arrangements = = =``) and a Wikipedia title at most 255 bytes; a longer line that begins and ends with
#: ``=`` is text.
HEADING_MAX_CHARS = 300


def is_heading(line: str) -> bool:
    """Whether a stripped corpus ``line`` is a WikiText heading (`` = Title = ``, `` = = Section = = ``): it begins
    and ends with ``=`` and is no longer than :data:`HEADING_MAX_CHARS` (a paragraph that happens to begin and end
    with ``=`` is read as a paragraph)."""
    return line.startswith("=") and line.endswith("=") and len(line) <= HEADING_MAX_CHARS


def wikitext_paragraphs(text: str, detokenise: bool = True) -> list[str]:
    """Paragraphs of a WikiText ``*.tokens`` / raw file: non-blank lines (:func:`corpus_lines`: split on ``\n`` or
    ``\r\n`` only, so a form feed or U+2028 inside a line leaves it one paragraph) that are not ``= Heading =``
    lines (:func:`is_heading`).

    With ``detokenise`` (the default), WikiText's number joiners (`` @-@ ``, `` @,@ ``, `` @.@ ``) are undone, the
    only detokenisation applied; ``<unk>`` is kept as it is in the file. Without it (the texts a caller gave as a
    list, :func:`given_texts`) every line is kept as written.
    """
    paragraphs = []
    for line in corpus_lines(text):
        s = line.strip()
        if not s or is_heading(s) or not _visible(s):
            continue
        paragraphs.append(_WIKITEXT_JOINERS.sub(r"\1", s) if detokenise else s)
    return paragraphs


def _visible(line: str) -> bool:
    """Whether ``line`` holds a character that is more than formatting: a line of zero-width spaces, joiners,
    byte-order marks or other format and control characters (Unicode categories Cf, Cc, Zs...) is no paragraph, since
    a tokenizer gives only its special tokens for it."""
    import unicodedata

    return any(unicodedata.category(c)[0] in "LNPS" for c in line)


def _pydoc_paragraphs() -> list[str]:
    from pydoc_data.topics import topics

    paragraphs = []
    for key in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[key]):
            s = " ".join(block.split())
            if len(s.split()) >= 20:  # drop headings, code fragments and one-liners
                paragraphs.append(s)
    return paragraphs


def sample_sequences(paragraphs: list[str], n: int, seed: int) -> tuple[str, ...]:
    """``n`` paragraphs sampled uniformly without replacement with ``seed`` (all of them if n >= len)."""
    if n < 1:
        raise ValueError(f"the number of sequences must be >= 1, got {n}")
    rng = np.random.Generator(np.random.PCG64(seed))
    if n >= len(paragraphs):
        idx = rng.permutation(len(paragraphs))
    else:
        idx = rng.choice(len(paragraphs), size=n, replace=False)
    return tuple(paragraphs[i] for i in idx)


def _fingerprint(paragraphs: list[str]) -> str:
    h = hashlib.sha256()
    for p in paragraphs:
        h.update(p.encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _from_datasets() -> list[str] | None:
    try:
        import datasets  # noqa: F401
    except ImportError:
        return None
    from datasets import load_dataset

    ds = load_dataset("wikitext", "wikitext-103-raw-v1", split="validation")
    return wikitext_paragraphs("\n".join(ds["text"]))


#: The corpora this suite knows by their content (:func:`_fingerprint` of their paragraphs): fingerprint -> (name,
#: label). A corpus file's dataset name comes from here, never from its file name: a copy of another text under a
#: WikiText-like name is a local corpus.
KNOWN_CORPORA = {
    "fc03b3e11199aebb": ("wikitext-103-validation", "WikiText-103 validation"),  # wikitext-103 wiki.valid.tokens
    "d39189dd969e5aef": ("wikitext-2-validation", "WikiText-2 validation"),  # wikitext-2 wiki.valid.tokens (<unk>)
}

#: A sample size this large means "every paragraph" (the ``paper`` profile's sizes): a smaller file is no surprise.
ALL = 1_000_000


def read_text_file(path: Path | str, what: str = "corpus file") -> str:
    """The text of a UTF-8 file. Raises :class:`CorpusError` (one line, ``what`` and the path first) when it does
    not exist, is a folder, is UTF-32 or UTF-16 (a byte-order mark, or NUL bytes beside the letters:
    :func:`aniso.common.files.wide_unicode`, which names the encoding iconv converts it from) or other binary data,
    or is not UTF-8."""
    from ..common.files import binary_kind, not_a_regular_file, wide_unicode

    path = Path(path)
    problem = not_a_regular_file(path)  # a FIFO would block, a pipe be read once: refused before it is opened
    if problem is not None:
        raise CorpusError(f"{what} {path} {problem}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{what} {path} cannot be read ({exc.strerror or exc})") from None
    head = data[:4096]
    kind = binary_kind(head)
    if kind is not None:
        raise CorpusError(f"{what} {path} is not text: it is {kind}; decompress it first")
    wide = wide_unicode(head)
    if wide is not None:
        raise CorpusError(f"{what} {path} is not UTF-8 text: it is {wide[0]}; save it as UTF-8 (e.g. iconv -f "
                          f"{wide[1]} -t UTF-8)")
    if b"\x00" in data:
        raise CorpusError(f"{what} {path} is not UTF-8 text: it holds NUL bytes (binary data)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{what} {path} is not UTF-8 text ({exc})") from None


def corpus_paragraphs(path: Path | str) -> list[str]:
    """The paragraphs of a corpus file (:func:`wikitext_paragraphs` of :func:`read_text_file`): its lines, ended by
    ``\n`` or ``\r\n`` only (:func:`corpus_lines`), without blank and heading lines. Raises
    :class:`CorpusError` naming the file when it cannot be read as UTF-8 text or has fewer than 2 distinct
    paragraphs (a blank file has none; a file of one paragraph repeated has one: its copies are not independent
    inputs, and a bootstrap over them would resample one text). WikiText's number joiners are undone
    (:func:`wikitext_paragraphs`) except in the file of texts :func:`aniso.check` was given as a list
    (:func:`given_texts`), whose texts are measured as given."""
    text = read_text_file(path)
    structured = structured_form(path, text)
    if structured is not None:
        raise CorpusError(f"corpus file {path} is {structured}; a corpus is plain text, one paragraph per line: "
                          "write the text of each record on a line of its own in a .txt file")
    wrapped = hard_wrapped(text)
    if wrapped is not None:
        raise CorpusError(f"corpus file {path} is hard-wrapped: {wrapped}; a corpus is one paragraph per line, and "
                          "each of these lines would be read as a paragraph: join each paragraph's lines into one")
    # the texts a caller gave as a list (aniso.check's temporary file) are measured as given, as aniso.measure does
    paragraphs = wikitext_paragraphs(text, detokenise=not given_texts(str(path)))
    distinct = len(set(paragraphs))
    if distinct < 2:
        copies = f", {distinct} distinct" if len(paragraphs) > distinct else ""
        raise CorpusError(f"corpus file {path} has {len(paragraphs)} paragraph(s){copies}; at least 2 distinct "
                          f"are needed{_why_few(text, path)}")
    lone_cr = len(re.findall(r"\r(?!\n)", text))
    if lone_cr:  # mixed line ends: the lines they would have ended are read as one paragraph; said, not silent
        from ..common.files import warn_as_file

        warn_as_file(str(path), f"corpus file {path}: {lone_cr} lone carriage return(s) (\\r not followed by \\n) "
                     "inside its lines are read as blanks within a paragraph, not as line ends (a line of a corpus "
                     "ends in \\n or \\r\\n)", UserWarning, __name__)
    return paragraphs


#: File suffixes of structured data (records with fields, not running text): a corpus file named so is refused
#: (:func:`structured_form`), since its reader would measure the markup, field names and numbers as words.
STRUCTURED_SUFFIXES = {".json": "JSON", ".jsonl": "JSON Lines", ".ndjson": "JSON Lines", ".csv": "CSV",
                       ".tsv": "tab-separated values (TSV)", ".yaml": "YAML", ".yml": "YAML", ".xml": "XML",
                       ".parquet": "Parquet", ".arrow": "Arrow", ".xlsx": "a spreadsheet", ".ods": "a spreadsheet"}

#: The non-blank lines :func:`structured_form` parses to tell JSON Lines by content (all of them must be objects).
STRUCTURED_LINES_CHECKED = 50


def structured_form(path: Path | str, text: str) -> str | None:
    """What structured form a corpus file is in, as a refusal says it (``"JSON Lines (its name ends in .jsonl)"``,
    ``"JSON Lines (each of its first 3 non-blank lines is a JSON object)"``), or None for plain text.

    The rule: its name ends in a suffix of :data:`STRUCTURED_SUFFIXES` (.json, .jsonl, .csv, .tsv, ...), or every
    one of its first :data:`STRUCTURED_LINES_CHECKED` non-blank lines, at least 2, is a JSON object (``{...}``), or
    the whole file is one JSON object or array. Prose with commas, quotes or braces inside its lines is plain text."""
    import json

    suffix = Path(path).suffix.lower()
    if suffix in STRUCTURED_SUFFIXES:
        return f"{STRUCTURED_SUFFIXES[suffix]} (its name ends in {suffix})"
    lines = []
    for line in corpus_lines(text):
        s = line.strip()
        if s:
            lines.append(s)
            if len(lines) == STRUCTURED_LINES_CHECKED:
                break

    def json_of(s: str):
        try:
            return json.loads(s)
        except ValueError:
            return None

    if len(lines) >= 2 and all(s[0] == "{" and s[-1] == "}" and isinstance(json_of(s), dict) for s in lines):
        return f"JSON Lines (each of its first {len(lines)} non-blank lines is a JSON object)"
    whole = text.strip()
    if whole[:1] in "[{" and whole[-1:] in "]}" and isinstance(json_of(whole), (dict, list)):
        return "JSON (the whole file is one JSON " + ("object)" if whole[0] == "{" else "array)")
    return None


#: The non-blank lines :func:`hard_wrapped` looks at, from the top of the file.
WRAP_LINES_CHECKED = 2000

#: What ends a sentence (or a clause a line may end on) in :func:`hard_wrapped`: a line of a text wrapped at a width
#: ends wherever the width falls, mostly mid-sentence; a file of one sentence per line ends its lines on these.
_SENTENCE_END = tuple('.!?:;…"\'”’)]»')


#: The narrowest width :func:`hard_wrapped` takes for prose wrapped at a width (``fmt`` and e-mail wrap at 60-80).
WRAP_MIN_WIDTH = 40

#: A line that begins a list item, a heading or a quotation in Markdown (``- item``, ``1. item``, ``# Title``,
#: ``> quoted``): a block of such lines is a list, not a paragraph wrapped at a width.
_MARKED_LINE = re.compile(r"^(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|>)")


def hard_wrapped(text: str) -> str | None:
    """Whether a corpus file's ``text`` is prose hard-wrapped at a width (each paragraph spread over several lines,
    blank lines between paragraphs, as plain-text books and e-mail are), said as a clause for a refusal
    (``"20 of its 20 paragraphs (blocks between blank lines) run over several lines of at most 80 characters, broken
    mid-sentence"``), or None. A corpus is read one paragraph per line (:func:`wikitext_paragraphs`), so such a file
    would be measured on line fragments.

    The rule, over the first :data:`WRAP_LINES_CHECKED` non-blank lines: the blocks of non-blank lines between blank
    lines that hold 2 lines or more, none past the first a Markdown list item, heading or quotation
    (:data:`_MARKED_LINE`), are at least 2 and hold at least half the lines; at least half of their lines but the
    last end mid-sentence (not on ``. ! ? : ;``, a closing quote or bracket); at least 80% of those lines are at
    least 70% as long as the longest (the width they were wrapped at), which is :data:`WRAP_MIN_WIDTH` or more.
    WikiText (one paragraph per line, a blank line after each), one sentence per line, Markdown lists and verse
    (lines of any length) are not wrapped prose.
    """
    blocks: list[list[str]] = [[]]
    seen = 0
    for line in corpus_lines(text):
        s = line.strip()
        if not s:
            if blocks[-1]:
                blocks.append([])
            continue
        if is_heading(s):
            continue
        blocks[-1].append(s)
        seen += 1
        if seen == WRAP_LINES_CHECKED:
            break
    several = [b for b in blocks if len(b) >= 2 and not any(_MARKED_LINE.match(line) for line in b[1:])]
    in_several = sum(len(b) for b in several)
    if len(several) < 2 or 2 * in_several < seen:
        return None
    broken = [line for b in several for line in b[:-1]]
    mid_sentence = sum(not line.endswith(_SENTENCE_END) for line in broken)
    width = max(len(line) for b in several for line in b)
    full = sum(len(line) >= 0.7 * width for line in broken)
    if 2 * mid_sentence < len(broken) or full < 0.8 * len(broken) or width < WRAP_MIN_WIDTH:
        return None
    return (f"{len(several)} of its {sum(1 for b in blocks if b)} paragraphs (blocks between blank lines) run over "
            f"several lines of at most {width} characters, broken mid-sentence")


def _why_few(text: str, path: Path | str) -> str:
    """Why a corpus file's ``text`` has fewer paragraphs than its reader sees, as a clause to end its refusal
    (``": its lines end in a lone CR ..."``), or "": its lines end in a lone carriage return (old Mac OS line ends,
    which :func:`corpus_lines` does not split on: the file is one line), or its non-blank lines are WikiText
    headings (:func:`is_heading`), which are not paragraphs."""
    lone_cr = len(re.findall(r"\r(?!\n)", text))
    if lone_cr and lone_cr >= text.count("\n"):
        name = Path(path).name
        return (f": its lines end in a lone carriage return (\\r, old Mac OS line ends: {lone_cr} of them), and a "
                f"line of a corpus ends in \\n or \\r\\n; convert them, e.g. tr '\\r' '\\n' < {name} > "
                f"{Path(name).stem}-lf{Path(name).suffix}")
    lines = [s for s in (line.strip() for line in corpus_lines(text)) if s]
    headings = sum(map(is_heading, lines))
    if headings:
        share = f"all its {headings}" if headings == len(lines) else f"{headings} of its {len(lines)}"
        return (f": {share} non-blank lines are WikiText headings (lines that begin and end with '=', "
                "like ' = Title = '), which are not paragraphs")
    return ""


def repeated(sequences) -> int:
    """How many of ``sequences`` repeat an earlier one (0 when all are distinct)."""
    return len(sequences) - len(set(sequences))


def load_corpus(path: Path | str | None, n_sequences: int, seed: int, hub_reachable: bool = False) -> Corpus:
    """Load and sample the text corpus (see the module docstring for the order of sources).

    Parameters
    ----------
    path : local corpus file, or None
    n_sequences : number of paragraphs to sample
    seed : sampling seed
    hub_reachable : whether to try ``datasets`` before the embedded default

    Raises
    ------
    CorpusError naming the file when it is missing, a folder, UTF-16 or binary, not UTF-8, or has fewer than 2
    paragraphs. A file with fewer paragraphs than ``n_sequences`` (below :data:`ALL`) is sampled whole, and its
    label says how many were used and how many requested.
    """
    if path is not None:
        path = Path(path)
        paragraphs = corpus_paragraphs(path)
        fingerprint = _fingerprint(paragraphs)
        known = KNOWN_CORPORA.get(fingerprint)  # named by its content, never by its file name
        if given_texts(str(path)):  # a list of texts aniso.check wrote to a temporary file: named as given
            name, label = "local-corpus", f"the {len(paragraphs)} texts given as inputs"
        elif known is not None:
            name, label = known[0], f"{known[1]} ({path.name})"
        else:
            name, label = "local-corpus", f"local corpus {path.name} (no dataset this suite knows by its content)"
        if len(paragraphs) < n_sequences < ALL:
            label += f"; only {len(paragraphs)} paragraphs, {n_sequences} requested"
        sample = sample_sequences(paragraphs, n_sequences, seed)
        if repeated(sample):  # copies are measured, but a reader must know they are not independent inputs
            label += f"; {repeated(sample)} of the {len(sample)} sampled paragraphs repeat another"
        return Corpus(name, label, str(path), fingerprint, sample, len(paragraphs), seed)
    if hub_reachable:
        paragraphs = _from_datasets()
        if paragraphs:
            return Corpus("wikitext-103-validation", "WikiText-103 validation (datasets: wikitext-103-raw-v1)",
                          "datasets.load_dataset('wikitext', 'wikitext-103-raw-v1', split='validation')",
                          _fingerprint(paragraphs), sample_sequences(paragraphs, n_sequences, seed), len(paragraphs), seed)
    paragraphs = _pydoc_paragraphs()
    return Corpus(
        "pydoc_data.topics (fallback)",
        "FALLBACK CORPUS: Python's pydoc_data.topics documentation text, not WikiText-103 "
        "(set --aniso-corpus or ANISO_CORPUS to a wiki.valid.tokens file)",
        "pydoc_data.topics",
        _fingerprint(paragraphs),
        sample_sequences(paragraphs, n_sequences, seed),
        len(paragraphs),
        seed,
        is_fallback=True,
    )


#: Sequences :func:`first_token` tokenizes at most (a tokenizer that prepends a fixed token does so to every text).
FIRST_TOKEN_CHECKED = 1000


def first_token(tokenizer, texts, limit: int = FIRST_TOKEN_CHECKED) -> dict:
    """Whether every sequence starts with the same token id, as the text modality tokenizes it (special tokens
    added, as in :mod:`aniso.extract.hidden`): the signature of a tokenizer that prepends a fixed BOS token.

    Returns ``{"fixed": bool, "id": int | None, "token": str | None, "checked": n}``: ``fixed`` True when the first
    ``n`` = min(len(texts), ``limit``) non-empty sequences, at least 2, all start with token ``id`` (its string
    ``token``); a statistic of the first token across sequences is then constant by construction in a causal
    decoder (its first position sees only itself). ``id`` and ``token`` are None when not fixed.
    """
    sample = [t for t in list(texts)[:limit] if t]
    firsts = {ids[0] for ids in tokenizer(sample, truncation=True, max_length=8)["input_ids"] if ids}
    fixed = len(sample) >= 2 and len(firsts) == 1
    tid = next(iter(firsts)) if fixed else None
    token = tokenizer.convert_ids_to_tokens(tid) if fixed and hasattr(tokenizer, "convert_ids_to_tokens") else None
    return {"fixed": fixed, "id": None if tid is None else int(tid), "token": token, "checked": len(sample)}
