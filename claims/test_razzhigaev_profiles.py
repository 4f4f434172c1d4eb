"""Razzhigaev et al. 2024 §4.1, Fig. 1: layer profiles of SVD anisotropy, bell-shaped in decoders, flat in encoders.

Each profile is the batch-wise mean SVD anisotropy per layer (R §2.3: batches of >= 4096 vectors, metric per
batch, then the mean), layer 0 = the embedding output, on every token of the run's text corpus (R's setting). The
same profile without the first token of each sequence (decoders' attention sink) is reported beside it and drawn
in the report; the verdict rests on the all-token profile.
"""

from __future__ import annotations

import numpy as np
import pytest

from aniso.judge.rules import BELL_MARGIN, BELL_RULE, FIRST_TOKEN_EXCLUDED, bell_margin, profile_shape, svd_profile


def _profile(stats) -> dict:
    """The shape of the all-token profile (the deciding one), without the reported extras."""
    profile, _ = svd_profile(stats.summaries())
    return profile_shape(profile)


def _shape(stats) -> dict:
    profile, estimate = svd_profile(stats.summaries())
    out = {f"{k}": v for k, v in profile_shape(profile).items()} | {"estimate": estimate}
    out["profile"] = [round(float(v), 5) for v in profile]
    aside = stats.meta.get("first_token_excluded")
    if aside:
        without, _ = svd_profile(aside)
        other = profile_shape(without)
        out |= {"contrast_without_first_token": other["contrast"], "peak_layer_without_first_token":
                other["peak_layer"], "bell_without_first_token": other["bell"],
                "profile_without_first_token": [round(float(v), 5) for v in without]}
    return out


DECODERS = ("pretrained", "text", "decoder", "transformer")


@pytest.mark.claim("R.decoder-bell-profile")
@pytest.mark.models(all_of=("pretrained", "text", "decoder", "transformer"))
def test_decoder_bell_profile(entry, claim):
    """R §4.1, Fig. 1: "decoder anisotropy profiles are bell-shaped: highest in the middle layers".

    Holds if the SVD-anisotropy profile peaks at a relative depth strictly inside (0.15, 0.85) and the peak
    exceeds both the first and the last layer's value by >= 20% of the peak.
    """
    stats = claim.stats()
    shape = _shape(stats)
    alternatives = {FIRST_TOKEN_EXCLUDED: (shape["bell_without_first_token"], shape["contrast_without_first_token"])} \
        if "bell_without_first_token" in shape else {}
    claim.conclude(shape["bell"], {k: v for k, v in shape.items() if k != "bell"}, BELL_RULE,
                   uncertainty=claim.interval(stats, lambda s: bell_margin(_profile(s)), BELL_MARGIN, 0.0, ">=",
                                              verdict=lambda s: _profile(s)["bell"]),
                   alternatives=alternatives)


@pytest.mark.claim("R.encoder-flat-profile")
@pytest.mark.models(all_of=("pretrained", "text", "encoder", "transformer"))
def test_encoder_flat_profile(entry, claim):
    """R §4.1, Fig. 1: "encoders' anisotropy is relatively uniform across layers".

    Holds if this encoder's peak-to-ends contrast, (peak - max(first, last)) / peak of its SVD-anisotropy
    profile, is smaller than that of every decoder measured in the run. Needs at least one decoder; otherwise
    skipped, naming every decoder and why it is unavailable, or, when the run's model set holds no decoder (a
    single-model run), as not applicable.
    """
    stats = claim.stats()
    mine = _shape(stats)
    decoders, missing = claim.available_stats(DECODERS)
    claim.require_others("a decoder to compare with", decoders, missing, DECODERS)
    theirs = {e.id: _shape(s) for e, s in decoders}
    flattest = min(theirs, key=lambda m: theirs[m]["contrast"])
    measured = {"contrast": mine["contrast"], "flattest_decoder": flattest,
                "flattest_decoder_contrast": theirs[flattest]["contrast"], "peak_layer": mine["peak_layer"],
                "estimate": mine["estimate"],
                "decoder_contrasts": {m: round(v["contrast"], 4) for m, v in theirs.items()},
                "profile": mine["profile"]}
    if "contrast_without_first_token" in mine:
        measured["contrast_without_first_token"] = mine["contrast_without_first_token"]
    lowest = theirs[flattest]["contrast"]
    alternatives = {}
    if "contrast_without_first_token" in mine and all("contrast_without_first_token" in v for v in theirs.values()):
        others = min(v["contrast_without_first_token"] for v in theirs.values())
        alternatives[FIRST_TOKEN_EXCLUDED] = (mine["contrast_without_first_token"] < others,
                                              mine["contrast_without_first_token"] - others)
    claim.conclude(bool(np.all([mine["contrast"] < v["contrast"] for v in theirs.values()])), measured,
                   "peak-to-ends contrast of the SVD-anisotropy profile < that of every decoder measured",
                   uncertainty=claim.interval(stats, lambda s: _profile(s)["contrast"] - lowest,
                                              "contrast minus the flattest decoder's", 0.0, "<",
                                              fixed="the decoders' profiles"), alternatives=alternatives)
