"""A SMILES tokenizer as the chemistry language models of the rxn family read reactions.

Reaction SMILES (``reactants>>products``, molecules joined by ``.``) are split into atoms, bonds, ring closures and
brackets by one regular expression (Schwaller et al. 2019, *Molecular Transformer*, ACS Central Science 5(9), the
"SMILES tokenization" paragraph of the Methods; the same expression is ``SMI_REGEX_PATTERN`` of rxnmapper,
Schwaller et al. 2021, *Extraction of organic chemistry grammar from unsupervised learning of chemical reactions*,
Science Advances 7(15)). Text that the expression does not match is dropped, as ``re.findall`` drops it in
rxnmapper's ``BasicSmilesTokenizer``: on English text only the letters and signs that are also SMILES tokens remain.

The tokenizer is built from the model's own ``vocab.txt`` with the ``tokenizers`` library (a WordLevel model, the
expression as a pre-tokenizer that keeps its matches, ``[CLS] … [SEP]`` around each sequence), so no code of the
model's package runs.
"""

from __future__ import annotations

from pathlib import Path

from ..inputs.reactions import SMILES_REGEX

__all__ = ["SMILES_REGEX", "smiles_tokenizer"]



def smiles_tokenizer(vocab_file: Path | str, model_max_length: int = 512):
    """A ``PreTrainedTokenizerFast`` over SMILES tokens with the vocabulary of ``vocab_file``.

    ``vocab_file``: one token per line, the line number its id, holding ``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]``
    and ``[MASK]`` (BERT's layout). Each sequence becomes ``[CLS] t_1 … t_n [SEP]``; a token missing from the
    vocabulary becomes ``[UNK]``. Raises FileNotFoundError if the file is missing and ValueError naming the file if
    a special token is missing from it or a token is listed twice (:func:`aniso.sources.hub.token_lines_problem`).
    """
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    path = Path(vocab_file)
    tokens = [line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines()]
    from .hub import token_lines_problem

    twice = token_lines_problem(tokens, path.name)
    if twice is not None:
        raise ValueError(f"{path}: {twice}")
    vocab = {t: i for i, t in enumerate(tokens)}
    special = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    missing = [t for t in special if t not in vocab]
    if missing:
        raise ValueError(f"{path}: vocabulary lacks the special token(s) {missing}")
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    # invert=True: the expression describes the tokens to keep; what lies between them is removed (re.findall).
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(SMILES_REGEX), behavior="removed", invert=True)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=model_max_length)
