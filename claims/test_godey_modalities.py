"""Godey et al. 2024 §3.1–3.2: character/byte-level text, speech and vision models (Fig. 2, 3a, 3b, 4).

Layer conventions as in the claims catalogue: text and speech Transformers give
one vector per token / real audio frame (Whisper: its encoder, padding frames
excluded, the all-frames value reported beside), vision Transformers one per
patch/token, CNNs one per image (the flattened C·H·W feature map).
"""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics
from aniso.judge.rules import SIGNIFICANCE_RULE, significance_alternatives, significance_margin, significant_anisotropy

#: The level G §3.2 treats as clearly anisotropic for speech, used by the speech and CNN claims.
LEVEL = 0.2


def _cos(stats) -> np.ndarray:
    return stats.series("mean_cosine")


def _significance(claim, stats) -> None:
    holds, measured = significant_anisotropy(stats)
    claim.conclude(holds, measured, SIGNIFICANCE_RULE,
                   uncertainty=claim.interval(stats, significance_margin, "max over layers of avg cos − q95(d)", 0.0,
                                              ">"), alternatives=significance_alternatives(stats))


#: G §3.1's category: character/byte-level models of natural language. Rows beyond the papers (chemistry models
#: reading reaction SMILES atom by atom, registry ``category: beyond-paper``) count as no evidence for it.
CHAR_NLP = dict(all_of=("pretrained", "text", "transformer"), any_of=("char", "byte"), none_of=("beyond-paper",))


@pytest.mark.claim("G.char-nlp-anisotropic")
@pytest.mark.models(**CHAR_NLP)
def test_char_nlp_anisotropic(entry, claim):
    """G §3.1, Fig. 2: "character/byte-level models all show significant anisotropy in at least one layer".

    Holds if some layer's avg cos exceeds q95(d) of its dimension. Over the character/byte-level models of natural
    language only: the chemistry rows (reaction SMILES tokenised atom by atom) are beyond the paper's category.
    """
    _significance(claim, claim.stats())


def _max_layer(stats) -> float:
    return float(_cos(stats).max())


@pytest.mark.claim("G.char-only-more-anisotropic")
def test_char_only_more_anisotropic(claim):
    """G §3.1: models character/byte-based for input *and* prediction (ByT5, CANINE-c, MANTa; tag
    ``char-only``) are more anisotropic than character-input models predicting subwords (CharacterBERT,
    CANINE-s; tag ``char-input-subword-output``).

    Holds if the max-over-layers avg cos of every available char-only model is
    >= that of every available subword-predicting one, on the same corpus.
    Needs at least one model of each group; otherwise skipped, naming every
    model and why it is unavailable.
    """
    only, missing_only = claim.available_stats(("pretrained", "char-only"))
    sub, missing_sub = claim.available_stats(("pretrained", "char-input-subword-output"))
    claim.require_others("a char-only character model", only, missing_only, ("pretrained", "char-only"))
    claim.require_others("a subword-predicting character model", sub, missing_sub,
                         ("pretrained", "char-input-subword-output"))
    claim.note_inputs(only[0][1])
    lo = min(_max_layer(s) for _, s in only)
    hi = max(_max_layer(s) for _, s in sub)
    claim.conclude(
        lo >= hi,
        {"char_only_min_of_max_avg_cos": lo, "subword_output_max_of_max_avg_cos": hi,
         "char_only": {e.id: round(_max_layer(s), 5) for e, s in only},
         "subword_output": {e.id: round(_max_layer(s), 5) for e, s in sub}},
        "min over char-only models of max-layer avg cos >= max over subword-predicting char models",
    )


@pytest.mark.claim("G.byt5-decoder-extreme")
@pytest.mark.models(all_of=("pretrained", "byt5"))
def test_byt5_decoder_extreme(entry, claim):
    """G §3.1, Fig. 2: "the ByT5 decoder is extremely anisotropic".

    Holds if the highest avg cos of ByT5's decoder layers is the highest of
    all layers of the character/byte-level models measured (ByT5's encoder
    included); the value is reported.
    """
    stats = claim.stats()
    cos = _cos(stats)
    dec = [i for i, n in enumerate(stats.layer_names) if n.startswith("dec.")]
    others, _ = claim.available_stats(CHAR_NLP["all_of"], CHAR_NLP["any_of"], CHAR_NLP["none_of"])
    rivals = {f"{stats.model_id}:encoder": float(max(cos[i] for i, n in enumerate(stats.layer_names)
                                                     if not n.startswith("dec.")))}
    rivals |= {e.id: _max_layer(s) for e, s in others if e.id != entry.id}
    top_dec = float(cos[dec].max())
    claim.conclude(
        top_dec >= max(rivals.values()),
        {"max_decoder_avg_cos": top_dec, "max_other_avg_cos": max(rivals.values()), "others": rivals,
         "avg_cos_per_layer": [round(float(v), 5) for v in cos]},
        "max decoder-layer avg cos >= every other layer of the char/byte-level models measured",
    )


@pytest.mark.claim("G.speech-all-layers-0.2")
@pytest.mark.models(all_of=("pretrained", "speech", "transformer"))
def test_speech_all_layers(entry, claim):
    """G §3.2, Fig. 3a: "speech Transformers: every layer of every model has avg cos >= 0.2".

    Holds if every layer's avg cos over frames of real audio is >= 0.2
    (Whisper: encoder layers, the frames of its 30-second window's padding
    excluded). The all-frames values (padding included) are reported beside.
    """
    stats = claim.stats()
    cos = _cos(stats)
    low = int(np.argmin(cos))
    measured = {"min_avg_cos": float(cos.min()), "layer_of_min": stats.layer_names[low],
                "layers_below": int((cos < LEVEL).sum()), "n_layers": len(cos),
                "avg_cos_per_layer": [round(float(v), 5) for v in cos],
                "real_frames": stats.meta.get("n_tokens")}
    if stats.meta.get("all_frames_mean_cosine") is not None:
        measured["all_frames_avg_cos_per_layer"] = [round(float(v), 5) for v in stats.meta["all_frames_mean_cosine"]]
        measured["all_frames"] = stats.meta.get("all_frames_count")
    padded = stats.meta.get("all_frames_mean_cosine")
    alternatives = {"padding frames included": (bool(min(padded) >= LEVEL), float(min(padded)))} \
        if padded and None not in padded else {}
    claim.conclude(bool((cos >= LEVEL).all()), measured, f"every layer avg cos >= {LEVEL} (real frames)",
                   uncertainty=claim.interval(stats, lambda s: float(_cos(s).min()), "lowest layer avg cos", LEVEL,
                                              ">="), alternatives=alternatives)


@pytest.mark.claim("G.vision-transformers-anisotropic")
@pytest.mark.models(all_of=("pretrained", "vision", "transformer"))
def test_vision_transformers_anisotropic(entry, claim):
    """G §3.2, Fig. 3b: "vision Transformers mostly show significant anisotropy in some layer; exceptions: MiT
    uses isotropic spaces, ViT has low avg cos in all layers" (expected verdicts in the registry).

    Holds if some layer's avg cos over patch/token vectors exceeds q95(d).
    """
    _significance(claim, claim.stats())


@pytest.mark.claim("G.cnn-mostly-isotropic")
@pytest.mark.models(all_of=("pretrained", "vision", "cnn"))
def test_cnn_mostly_isotropic(entry, claim):
    """G §3.2, Fig. 4: "convolutional vision models are mostly isotropic; ResNet-50 is the exception and gets more
    isotropic with depth".

    Holds if every layer's avg cos (one vector per image: the flattened
    C·H·W feature map) is < 0.2. Reported beside: the Spearman ρ of avg cos
    against depth with its one-sided ("less": more isotropic with depth)
    permutation p-value (ResNet-50's exception expects ρ < 0), and, where vision
    Transformers were measured on the same images, whether this CNN's
    mean-over-layers avg cos is below each of theirs.
    """
    stats = claim.stats()
    cos = _cos(stats)
    trend = metrics.monotonic_trend(np.arange(len(cos), dtype=float), cos, "less", seed=claim.seed_for("depth-spearman"))
    top = int(np.argmax(cos))
    measured = {"max_avg_cos": float(cos.max()), "layer_of_max": stats.layer_names[top],
                "dim_of_max": stats.summaries()[top].dim, "layers_at_or_above": int((cos >= LEVEL).sum()),
                "n_layers": len(cos), "mean_avg_cos": float(cos.mean()), "depth_spearman_rho": trend.coefficient,
                "depth_spearman_p": trend.p_value, "depth_alternative": trend.alternative,
                "depth_p_method": trend.p_method, "avg_cos_per_layer": [round(float(v), 5) for v in cos]}
    vits, _ = claim.available_stats(("pretrained", "vision", "transformer"))
    same = [(e, s) for e, s in vits if s.meta.get("corpus", {}).get("fingerprint") ==
            stats.meta.get("corpus", {}).get("fingerprint")]
    if same:
        measured["below_vision_transformers"] = {e.id: bool(cos.mean() < _cos(s).mean()) for e, s in same}
    claim.conclude(bool((cos < LEVEL).all()), measured, f"every layer avg cos < {LEVEL}",
                   uncertainty=claim.interval(stats, _max_layer, "highest layer avg cos", LEVEL, "<"))
