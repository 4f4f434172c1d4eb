"""OPT-350m's last hidden state is projected to the embeddings' width (``word_embed_proj_dim`` 512 against a
``hidden_size`` of 1,024): the extraction reads it at that width; any other width is still refused."""

import pytest
import torch
import transformers as tf

from aniso.extract.hidden import iter_text_hidden_states


def _opt(tokenizer_vocab: int):
    torch.manual_seed(0)
    return tf.OPTModel(tf.OPTConfig(vocab_size=tokenizer_vocab, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4, ffn_dim=16, word_embed_proj_dim=16,
                                    do_layer_norm_before=False, max_position_embeddings=64, pad_token_id=0)).eval()


def test_the_last_state_of_a_projected_opt_is_read_at_the_embeddings_width(tiny_bert_dir):
    tok = tf.AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = _opt(len(tok))
    texts = [" ".join(f"w{(i * 3 + j) % 40}" for j in range(6 + i)) for i in range(4)]
    (batch,) = list(iter_text_hidden_states(model, tok, texts, batch_size=4, max_length=16))
    widths = [h.shape[-1] for h in batch.layers]
    assert widths[:-1] == [32, 32] and widths[-1] == 16


def test_a_last_state_of_neither_width_is_still_refused(tiny_bert_dir):
    tok = tf.AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = _opt(len(tok))
    model.config.word_embed_proj_dim = 24  # says 24; the weights give 16
    with pytest.raises(RuntimeError, match="the last hidden state has width 16, its config says hidden_size 32"):
        list(iter_text_hidden_states(model, tok, ["w1 w2 w3"], batch_size=1, max_length=16))
