"""A 2-layer BERT folder whose vocabulary is exactly the words of a few texts (a WordPiece ``vocab.txt``), for the
tests that measure it through :func:`aniso.measure`."""

from __future__ import annotations

from pathlib import Path

TEXTS = ["the cat sat on the mat near the door", "a dog ran in the park with the cat",
         "the river runs under the old bridge in the town"]


def word_bert(folder: Path, lower: bool = True, zero: bool = False) -> Path:
    """Write the folder: ``lower`` sets the tokenizer's ``do_lower_case``, ``zero`` sets every weight to 0; seeded
    random weights otherwise. Returns ``folder``."""
    import torch
    from transformers import BertConfig, BertModel

    folder.mkdir()
    words = sorted({w for t in TEXTS for w in t.split()})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": '
                                                  f'{"true" if lower else "false"}}}')
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, max_position_embeddings=64, pad_token_id=0),
                      add_pooling_layer=False).eval()
    if zero:
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
    model.save_pretrained(folder, safe_serialization=True)
    return folder
