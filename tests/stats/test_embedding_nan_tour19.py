"""Tour 19: a model folder whose word embedding matrix holds a NaN row (one token's) answered `aniso stats: W contains
NaN or infinite values`, naming neither the model nor the matrix. The refusal names the model, the matrix, how many
rows are not finite and the first one's token id."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel

from aniso.sources import ModelRefused
from aniso.stats.pipeline import embedding_isotropy


def test_a_nan_row_of_the_embedding_matrix_is_named():
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=32)).eval()
    assert set(embedding_isotropy(model, "m")["input"]) == {"raw", "centred", "mean_norm", "vocab", "dim"}
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[17, 3] = float("nan")
        model.embeddings.word_embeddings.weight[40] = float("inf")
    with pytest.raises(ModelRefused, match=r"^m: its input embedding matrix \(50 x 16\) holds NaN or infinite values "
                                           r"in 2 rows \(the first: token id 17\); the model cannot be measured"):
        embedding_isotropy(model, "m")
