"""The claims catalogue: every paper claim the suite knows, by stable id.

Ids, sources, statements and operationalisations are specified in the suite's
``docs/claims.md``. Claim tests name their claim with
``@pytest.mark.claim("<id>")``; registry entries may only record expected
verdicts for ids listed here. A claim with ``executable=False`` has no test yet:
the report lists it as "not yet executable".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.settings import TWONN_MIN_POINTS

G = "Godey et al. 2024, Anisotropy Is Inherent to Self-Attention in Transformers (EACL)"
R = "Razzhigaev et al. 2024, The Shape of Learning (EACL Findings)"
S = "This suite, beyond the papers: controlled experiments on miniatures it trains"
M = "Machina & Mercer 2024, Anisotropy is Not Inherent to Transformers (NAACL)"
X_SUN = "Sun et al. 2024, Massive Activations in Large Language Models (COLM)"
X_GU = "Gu et al. 2025, When Attention Sink Emerges in Language Models (ICLR)"
X_TIMKEY = "Timkey & van Schijndel 2021, All Bark and No Bite: Rogue Dimensions (EMNLP)"
X_SUITE = "This suite, on R §4.1 and the attention-sink position"


#: The effect a correlation or trend claim is tested at: a bivariate-normal correlation of 0.7, a strong association
#: (Cohen 1988 calls 0.5 large). G reports p-values only (Fig. 5, 16) and R curves (Fig. 2-4), no effect sizes, so
#: this is the suite's convention; a test that does not reject is a finding only where its power at this effect is
#: at least 0.8 (:func:`aniso.metrics.correlation_power`).
POWER_EFFECT = 0.7
POWER_EFFECT_SOURCE = ("the suite's convention, a strong association (bivariate-normal r = 0.7; Cohen 1988 calls 0.5 "
                       "large): the paper states no effect size")
#: How a claim's p-values are adjusted across the models of a run (each claim's family: its tests in the run).
FAMILY_ADJUSTMENT = "Benjamini-Hochberg"
#: The fewest hidden-state vectors per layer (text: real tokens, not special ones; speech: frames; vision: patches or
#: images) a claim is decided on, by the statistics it reads: the suite's convention, the papers state none. Below 64
#: vectors an average over pairs (2,016 of them) or a correlation over layers rests on a few sentences; the SVD
#: spectrum, TwoNN's nearest neighbours and the sampled pairs of the second order need twice that. Statistics read
#: from the weights (the embedding matrices' isotropy) need no inputs. Fewer vectors: the model is refused for the
#: claim, with the count (:meth:`aniso.session.ClaimContext.stats`).
MIN_VECTORS = {"first-order": 64, "first-token-excluded": 64, "final-norm": 64, "attention-sink": 64,
               "second-order": TWONN_MIN_POINTS, "embedding-isotropy": 0}


@dataclass(frozen=True)
class Claim:
    """One paper claim: id, paper, section, figure, the statement in plain words, whether a test measures it, and
    which streamed statistics of a model's layers it reads (``first-order``: avg cos, drift and mean norm;
    ``second-order``: also SVD anisotropy, TwoNN and sampled pairs; see :mod:`aniso.stats.pipeline`). A run computes
    only the statistics its selected claims read."""

    id: str
    paper: str
    section: str
    figure: str
    statement: str
    executable: bool = True
    statistics: tuple[str, ...] = ("first-order",)
    #: The effect the claim is tested at, for the power a non-rejection needs (:data:`POWER_EFFECT`), or None.
    effect: float | None = None
    #: Whose choice the effect is, and why.
    effect_source: str = ""
    #: Whether the claim's p-values are adjusted across the run's models (:data:`FAMILY_ADJUSTMENT`).
    adjusted: bool = False
    #: True for a claim about an architecture and training recipe, decided over its seeds together.
    over_seeds: bool = False
    #: True for a claim whose test reads other models' statistics (a comparison or a reference model): a run over
    #: several workers schedules its tests after every model's own (:mod:`aniso.common.workers`).
    compares_models: bool = False
    #: The fewest layers (hidden states; a CNN's feature maps) of a model the claim's test reads, where it takes a
    #: trend over depth (:func:`aniso.metrics.monotonic_trend` needs 3 points); 0 for no such need.
    min_layers: int = 0

    @property
    def min_vectors(self) -> int:
        """The fewest hidden-state vectors per layer this claim is decided on (:data:`MIN_VECTORS` of the statistics
        it reads; a claim over checkpoint series reads their first-order statistics); 0 for a claim that reads no
        inputs' hidden states (the untrained block's own draws, weights)."""
        kinds = self.statistics or (("first-order",) if self.over_seeds else ())
        return max((MIN_VECTORS[k] for k in kinds), default=0)


CLAIMS: dict[str, Claim] = {
    c.id: c
    for c in [
        Claim("G.token-nlp-anisotropic", G, "§2", "Fig. 1",
              "token-level NLP Transformers have anisotropic hidden states"),
        Claim("G.char-nlp-anisotropic", G, "§3.1", "Fig. 2",
              "character/byte-level models all show significant anisotropy in at least one layer"),
        Claim("G.char-only-more-anisotropic", G, "§3.1", "",
              "char/byte-only models are more anisotropic than char-input models predicting subwords",
              compares_models=True),
        Claim("G.byt5-decoder-extreme", G, "§3.1", "Fig. 2", "the ByT5 decoder is extremely anisotropic",
              compares_models=True),
        Claim("G.speech-all-layers-0.2", G, "§3.2", "Fig. 3a",
              "speech Transformers: every layer of every model has avg cos >= 0.2"),
        Claim("G.vision-transformers-anisotropic", G, "§3.2", "Fig. 3b",
              "vision Transformers mostly show significant anisotropy in some layer"),
        Claim("G.cnn-mostly-isotropic", G, "§3.2", "Fig. 4", "convolutional vision models are mostly isotropic",
              compares_models=True, min_layers=3),
        Claim("S.vit-vs-cnn-controlled", S, "after G §3.2", "Fig. 3b vs 4",
              "with only the architecture differing (images, task, budget, seed), a ViT is more anisotropic than a CNN",
              compares_models=True),
        Claim("G.drift-correlation-spearman", G, "§3.3", "Fig. 5",
              "across layers, anisotropy correlates with drift norm (Spearman)", effect=POWER_EFFECT,
              effect_source=POWER_EFFECT_SOURCE, adjusted=True),

        Claim("G.drift-correlation-pearson", G, "App. A", "Fig. 16",
              "across layers, anisotropy correlates with drift norm (Pearson)", effect=POWER_EFFECT,
              effect_source=POWER_EFFECT_SOURCE, adjusted=True),

        Claim("G.isotropic-baseline", G, "App. B", "Fig. 17-18",
              "Transformer layer avg cos levels are far above the isotropic q95(d)"),
        Claim("G.mean-qk-linear", G, "§4.3", "eq. 1", "E_x(Q_i) = W_Q x̄ + b_Q and E_x(K_i) = W_K x̄ + b_K", statistics=()),
        Claim("G.block-output-more-anisotropic", G, "§4.2", "Fig. 6a",
              "an untrained block's outputs are slightly more anisotropic than its inputs", statistics=()),
        Claim("G.block-norm-fixed-point", G, "§4.2", "Fig. 6b",
              "there is a bias norm N* with E||x+b|| = E||T(x+b)||", statistics=(), compares_models=True),
        Claim("G.block-scores-spread", G, "§4.3", "Fig. 7", "pre-softmax scores move away from zero as N grows", statistics=()),
        Claim("G.block-qk-norms", G, "§4.3", "Fig. 8", "query and key norms grow with N", statistics=()),
        Claim("G.block-softmax-sharpens", G, "§4.4", "Fig. 9-10", "as N grows, softmax rows get sharper", statistics=()),
        Claim("G.qk-means-align", G, "§5", "Fig. 13", "along training, mean queries and keys align", statistics=(), over_seeds=True),
        Claim("G.qk-direction-by-depth", G, "§5", "Fig. 13",
              "first layers drift in a common direction, last layers in opposite directions", statistics=(), over_seeds=True),
        Claim("G.qk-dot-grows", G, "§5", "Fig. 14", "the magnitude of mean-query·mean-key grows along training", statistics=(), over_seeds=True,
              effect=POWER_EFFECT, effect_source=POWER_EFFECT_SOURCE),
        Claim("G.attention-entropy-decays", G, "§5", "Fig. 15", "mean attention entropy decays along training", statistics=(), over_seeds=True,
              effect=POWER_EFFECT, effect_source=POWER_EFFECT_SOURCE),
        Claim("G.qk-svd-projections", G, "§5, App. C", "Fig. 11-12, 19-22",
              "mean queries and keys drift away from the origin along the first singular direction", statistics=(), over_seeds=True),
        Claim("G.qk-align-across-seeds", G, "App. D", "Fig. 23", "the trends hold across seeds", statistics=(), over_seeds=True),
        Claim("R.decoder-bell-profile", R, "§4.1", "Fig. 1", "decoder anisotropy profiles are bell-shaped",
              statistics=("first-order", "second-order", "first-token-excluded")),
        Claim("R.encoder-flat-profile", R, "§4.1", "Fig. 1", "encoder anisotropy is relatively uniform across layers",
              statistics=("first-order", "second-order", "first-token-excluded"), compares_models=True),
        Claim("R.decoder-anisotropy-grows", R, "§4.2", "Fig. 3-4",
              "in decoders, anisotropy grows as training proceeds, then stabilises", statistics=(), over_seeds=True,
              effect=POWER_EFFECT, effect_source=POWER_EFFECT_SOURCE),
        Claim("R.id-expands-then-compresses", R, "§4.3", "Fig. 2",
              "intrinsic dimension rises early in training, then falls", statistics=(), over_seeds=True),
        Claim("M.final-norm-isotropises", M, "§4", "Fig. 2-3",
              "the final normalisation layer makes the output isotropic (avg cos below q95(d))",
              statistics=("first-order", "final-norm")),
        Claim("M.partition-isotropy", M, "§3", "Fig. 1",
              "centring an embedding matrix raises its partition isotropy I(W) close to 1",
              statistics=("embedding-isotropy",)),
        Claim("X.massive-activations", X_SUN, "§2-3", "Fig. 1-2",
              "a few activations, on the first token, in fixed dimensions, are orders of magnitude above the median "
              "from the middle layers on", statistics=("first-order", "second-order")),
        Claim("X.attention-sink", X_GU, "§3", "Fig. 2",
              "a large share of heads put most of their attention on the first token in trained decoders",
              statistics=("attention-sink",)),
        Claim("X.rogue-dimensions", X_TIMKEY, "§3-4", "Fig. 1",
              "one to three dimensions dominate avg cos, and per-dimension standardisation removes the anisotropy",
              statistics=("first-order", "second-order")),
        Claim("X.sink-token-and-profiles", X_SUITE, "after R §4.1", "R Fig. 1",
              "the decoder bell profile survives excluding the first token of each sequence",
              statistics=("first-order", "second-order", "first-token-excluded")),
    ]
}


def statistics_read(claim_ids) -> frozenset[str]:
    """The union of the statistics the given claims read. Raises KeyError naming an unknown id."""
    return frozenset(s for cid in claim_ids for s in get_claim(cid).statistics)


def not_yet_executable() -> list[Claim]:
    """The catalogue's claims that no test measures yet, in catalogue order."""
    return [c for c in CLAIMS.values() if not c.executable]


def get_claim(claim_id: str) -> Claim:
    """The :class:`Claim` with this id. Raises KeyError naming the unknown id."""
    try:
        return CLAIMS[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim id {claim_id!r}; known ids are listed in aniso.registry.catalog.CLAIMS") from None
