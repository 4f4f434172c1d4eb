"""The HTML report: everything escaped, figures embedded, typed fields read, the CLI renders and refuses."""

from __future__ import annotations

import pytest

from aniso.report import render_html
from aniso.judge.results import ClaimResult, ModelLayers, NotYetExecutable, ResultsDocument, provenance, write_results

EVIL = "<script>alert(1)</script>"
LAYER = {"dim": 4, "count": 10, "mean_cosine": 0.1, "q95": 0.8, "drift_norm": 1.0, "mean_norm": 2.0,
         "svd_anisotropy": 0.3, "svd_anisotropy_batch_mean": None, "svd_anisotropy_batch_std": None,
         "mean_cosine_sampled": 0.1, "n_svd_batches": 0, "twonn": 2.0, "n_reservoir": 10, "n_zero": 0}


def _doc(tmp_path, results, **kw) -> ResultsDocument:
    return ResultsDocument(provenance=provenance(tmp_path, {"corpus": EVIL}, None), results=results, **kw)


def test_report_escapes_everything(tmp_path):
    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                    model_id=EVIL, test="t::x", verdict="holds", measured={"note": EVIL, "value": 0.5},
                    rule=EVIL, reason=EVIL, inputs_label=EVIL, differs_from_record=EVIL)
    doc = _doc(tmp_path, [r], models={EVIL: ModelLayers(layer_names=["0"], layers=[LAYER], meta={"origin": EVIL})},
               not_yet_executable=[NotYetExecutable(claim_id=EVIL, paper="G", section="§5", figure="", statement=EVIL)])
    html = render_html(doc)
    assert EVIL not in html and "&lt;script&gt;" in html
    assert "Claims not yet executable" in html


def test_drift_figure_reads_the_typed_p_values(tmp_path):
    """G Fig. 5/16 is drawn from each drift claim's p_value, whatever its measured dict holds."""
    def drift(claim, p):
        return ClaimResult(claim_id=claim, paper="G", section="", figure="", statement="", model_id="m", test="t",
                           verdict="holds", measured={}, p_value=p)

    html = render_html(_doc(tmp_path, [drift("G.drift-correlation-spearman", 0.01),
                                       drift("G.drift-correlation-pearson", 0.2)]))
    assert "p-values of the drift-norm correlations" in html
    assert "p-values of the drift-norm correlations" not in render_html(_doc(tmp_path, []))


def test_report_renders_block_figures_and_escapes(tmp_path):
    from aniso.experiments.untrained_block import SweepSpec, default_bias_norms, run_sweep

    tiny = dict(hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=300)

    def spec(kind):
        return SweepSpec(kind, 0, default_bias_norms(6, top=40.0), 2, 16, tuple(sorted(tiny.items())), chunk=2,
                         score_sample=64, hist_bins=10)

    sweeps = [run_sweep(spec(k)).to_dict() for k in ("bert-post-ln", "bert-identity-attention")]
    html = render_html(_doc(tmp_path, [], experiments={"untrained_block": {"<b>block</b>": [sweeps[0]],
                                                                            "control": [sweeps[1]]}}))
    assert "&lt;b&gt;block&lt;/b&gt;" in html and "<b>block</b>" not in html
    assert html.count("data:image/png;base64,") == 7
    assert "Fig. 6b" in html


def test_cli_report_renders_and_rejects_bad_files(tmp_path, capsys):
    from aniso.cli import main

    path = tmp_path / "results.json"
    write_results(path, _doc(tmp_path, []))
    assert main(["report", str(path)]) == 0
    assert (tmp_path / "report.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["report", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


@pytest.mark.parametrize("row, group", [
    ({"modality": "text", "granularity": "subword", "architecture": "transformer"}, "text-subword"),
    ({"modality": "text", "granularity": "byte", "architecture": "transformer"}, "text-char"),
    ({"modality": "vision", "granularity": "pixel", "architecture": "cnn"}, "vision-cnn"),
    ({"modality": "vision", "granularity": "patch", "architecture": "transformer"}, "vision-transformer"),
    ({"modality": "vision", "granularity": "pixel", "architecture": "cnn", "miniature": True}, "vision-miniature"),
    ({"modality": "speech", "granularity": "audio-frame", "architecture": "transformer"}, "speech"),
    ({"modality": "text", "granularity": "byte", "architecture": "transformer", "miniature": True}, "text-miniature"),
    ({"modality": "embeddings", "granularity": "embedding", "architecture": "transformer"}, "embeddings"),
    ({"modality": "text", "granularity": "char", "architecture": "transformer", "category": "beyond-paper"},
     "beyond-paper"),
])
def test_report_groups(row, group):
    from aniso.report.modalities import group_of

    assert group_of(row) == group


def test_profile_figure_draws_text_models_with_second_order_statistics(tmp_path):
    """R Fig. 1: one curve per text Transformer with SVD anisotropy; a model without it is left out."""
    from aniso.report.modalities import profile_figure
    from aniso.judge.results import RegistryRow

    def model(role, values, aside=None):
        layers = [dict(LAYER, svd_anisotropy=v, svd_anisotropy_batch_mean=v) for v in values]
        meta = {"first_token_excluded": [dict(LAYER, svd_anisotropy=v, svd_anisotropy_batch_mean=v)
                                         for v in aside]} if aside else {}
        return ModelLayers(layer_names=[str(i) for i in range(len(values))], layers=layers, meta=meta,
                           entry=RegistryRow(modality="text", granularity="subword", architecture="transformer",
                                             role=role, family="f"))

    doc = _doc(tmp_path, [], models={"dec": model("decoder", [0.1, 0.9, 0.2], [0.1, 0.3, 0.2]),
                                     "enc": model("encoder", [0.1, 0.12, 0.1]),
                                     "one": model("encoder", [0.4])})  # a single layer: drawn at depth 0
    models = doc.model_dump(mode="json")["models"]
    assert [c for c, _ in profile_figure(models)] == ["SVD-anisotropy profiles of decoders and encoders — R Fig. 1"]
    for m in models.values():
        for layer in m["layers"]:
            layer["svd_anisotropy"] = layer["svd_anisotropy_batch_mean"] = None
    assert profile_figure(models) == []
    assert "R Fig. 1" in render_html(doc)


def _series_docs(names=("<i>s0</i>", "s1")) -> dict[str, dict]:
    """Series summaries (aniso.stats.dynamics.series_document) of seeds of one family: 3 checkpoints, 2 layers."""
    import numpy as np

    from aniso.stats.dynamics import CheckpointMeasure, Series, series_document

    rng = np.random.default_rng(0)

    def measure(step):
        layers = [{"mean_cosine": 0.1, "svd_anisotropy_batch_mean": 0.2 + step / 100, "twonn_batch_mean": 9.0,
                   "twonn_batch_std": 0.2} for _ in range(3)]
        q, k = rng.normal(size=(2, 2, 4)), rng.normal(size=(2, 2, 4))
        mom = np.einsum("lhi,lhj->lhij", q, q) + np.eye(4)
        return CheckpointMeasure(step, layers, q, k, mom, mom, rng.uniform(1, 3, size=(2, 2)),
                                 meta={"training": {"loss": [[4, 5.1], [8, 4.2]]}})

    return {name: series_document(Series(name, [measure(s) for s in (0, 4, 8)], {"dataset": "wiki@x"}))
            for name in names}


def test_report_draws_training_series_per_series_and_across_seeds(tmp_path):
    """A series summary (aniso.stats.dynamics.series_document) of two seeds of a family gives, per series, the G Fig.
    13-15 / R Fig. 2-4 panel and the projections, and one across-seeds figure (G Fig. 23); names are escaped."""
    docs = _series_docs()
    registry = {name: {"modality": "text", "granularity": "byte", "architecture": "transformer",
                       "role": "decoder", "family": "fam"} for name in docs}
    html = render_html(_doc(tmp_path, [], experiments={"training": docs}, registry=registry))
    assert "Training dynamics" in html and "&lt;i&gt;s0&lt;/i&gt;" in html and "<i>s0</i>" not in html
    assert html.count("data:image/png;base64,") == 2 * 2 + 1
    assert "4.2 (step 8)" in html


def test_no_text_of_a_figure_is_drawn_over_another():
    """matplotlib's own symlog ticks put "0" on "10⁻¹" (the overlap check sees it); the report's symlog axes do not;
    the Q/K projection grid keeps each row's titles clear of the axis labels above it."""
    from aniso.report.figures import checked, png, pyplot, symlog, text_overlaps
    from aniso.report.training import projection_figure, series_figures

    plt = pyplot()
    for own in (False, True):
        fig, ax = plt.subplots(figsize=(3.0, 3.0))
        ax.plot([0, 0.5, 1, 5, 1000], [1, 2, 3, 4, 5])  # a sweep of bias norms (G §4)
        if own:
            symlog(ax, 0.5)
        else:
            ax.set_xscale("symlog", linthresh=0.5)
            ax.set_xlim(left=0)
        collisions = text_overlaps(fig)
        assert (collisions == []) if own else (("$\\mathdefault{0}$", "$\\mathdefault{10^{-1}}$") in collisions), own
        with checked():
            assert own or png(fig).overlaps  # the figure says so itself
        plt.close(fig)
    with pytest.raises(ValueError, match="positive"):
        symlog(ax, 0.0)
    doc = _series_docs(("s0",))["s0"]
    assert projection_figure("s0", doc)[0][1].overlaps is None  # not checked outside checked(): no extra draw
    with checked():
        for _, figure in projection_figure("s0", doc) + series_figures("s0", doc):
            assert figure.overlaps == (), figure.overlaps


def test_each_model_has_one_colour_in_every_figure(tmp_path):
    """The same model is drawn in the same colour in every figure of the page (group figure, the figures across
    models, the M and X figures, training series across seeds), and two models never share a colour; no text of
    these figures is drawn over another."""
    from aniso.judge.results import RegistryRow
    from aniso.report import report_figures
    from aniso.report.modalities import model_styles
    from aniso.report.training import seed_figure

    def row(modality, granularity, arch="transformer", role="decoder", mini=False):
        return RegistryRow(modality=modality, granularity=granularity, architecture=arch, role=role, family="f",
                           miniature=mini)

    rows = {"dec": row("text", "subword"), "enc": row("text", "subword", role="encoder"),
            "cnn": row("vision", "pixel", "cnn", "encoder"), "s0": row("text", "byte", mini=True),
            "s1": row("text", "byte", mini=True)}
    layers = [dict(LAYER, mean_cosine=0.1 * i, drift_norm=1.0 + i, svd_anisotropy_batch_mean=0.1 + 0.01 * i,
                   massive_ratio=10.0 ** i, rogue_top3_share=0.1 * i) for i in range(4)]
    models = {m: ModelLayers(layer_names=[str(i) for i in range(4)], layers=layers, meta={"origin": m}, entry=rows[m])
              for m in ("dec", "enc", "cnn")}
    results = [_claim(c, m, "holds") for c in ("G.token-nlp-anisotropic", "X.massive-activations")
               for m in ("dec", "enc")]
    doc = _doc(tmp_path, results, models=models, registry=rows)
    colours: dict[str, set[str]] = {}
    drawn_in: dict[str, int] = {}
    for caption, figure in report_figures(doc):
        assert figure.overlaps == (), (caption, figure.overlaps)  # and no text over another
        for mid, cs in figure.model_colours.items():
            colours.setdefault(mid, set()).update(cs)
            drawn_in[mid] = drawn_in.get(mid, 0) + 1
    assert set(colours) == set(models) and all(drawn_in[m] >= 3 for m in models), drawn_in
    assert all(len(cs) == 1 for cs in colours.values()), colours
    registry = {m: r.model_dump() for m, r in rows.items()}
    styles = model_styles(rows, doc.model_dump(mode="json")["models"], registry)
    assert {m: {styles[m]["color"]} for m in models} == colours
    (_, seeds), = seed_figure("f", _series_docs(("s0", "s1")), styles)  # series across seeds: the same mapping
    assert seeds.model_colours == {m: (styles[m]["color"],) for m in ("s0", "s1")}
    assert len({st["color"] for st in styles.values()}) == len(rows)  # distinct models, distinct colours
    assert styles["unknown"]["color"] == "0.45"  # a model it was not given is grey, not another model's colour


def test_report_shows_no_path_of_the_machine_and_names_a_skipped_model_once(tmp_path):
    from aniso.report import public_text, without_model_id

    assert public_text("not cached here (/root/.cache/huggingface/hub)") == "not cached here (~/.cache/huggingface/hub)"
    assert public_text("/work/x/.venv/lib/python3.11/site-packages/pkg/model.bin") == "site-packages/pkg/model.bin"
    assert public_text("registry /work/run-7/models.yaml, cache /work/cache") == ("registry …/run-7/models.yaml, "
                                                                                 "cache …/cache")
    for kept in ("../shared/data/speech", "σ₁²/Σσᵢ²", "https://host/a/b", "org/model", "a / b / c",
                 "/reference"):
        assert public_text(kept) == kept
    assert without_model_id("gpt2: not cached", "gpt2") == "not cached"
    assert without_model_id("bert.step0: not cached", "bert") == "step0: not cached"
    assert without_model_id("gpt2-xl: not cached", "gpt2") == "gpt2-xl: not cached"
    skipped = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                          model_id="gpt2", test="t", verdict="skipped", skip_kind="model",
                          reason="gpt2: hub id 'gpt2' is not cached here (/root/.cache/huggingface/hub)")
    html = render_html(_doc(tmp_path, [skipped]))
    assert "/root/" not in html and "gpt2: gpt2:" not in html and "<b>gpt2</b>: gpt2" not in html
    assert "<b>gpt2</b>: hub id &#39;gpt2&#39; is not cached here (~/.cache/huggingface/hub)" in html


def test_counter_claim_figures_sit_beside_their_claims(tmp_path):
    """The M and X figures are drawn from the models' layers and meta, each beside the claim its caption names."""
    from aniso.judge.results import RegistryRow

    row = RegistryRow(modality="text", granularity="subword", architecture="transformer", role="decoder",
                      family="llama")
    layers = [dict(LAYER, massive_ratio=10.0 ** (i / 2), rogue_top3_share=0.1 * i, massive_position=0)
              for i in range(6)]
    meta = {"origin": "x", "final_norm": {"before": {"mean_cosine": 0.6}, "after": {"mean_cosine": 0.05}},
            "embedding_isotropy": {"input": {"raw": 0.2, "centred": 0.95}},
            "attention_sink": {"share_per_layer": [0.0, 0.5, 0.9], "per_head": [[0.1], [0.5], [0.9]], "share": 0.6}}
    models = {"dec": ModelLayers(layer_names=[str(i) for i in range(6)], layers=layers, meta=meta, entry=row)}

    def result(claim):
        return ClaimResult(claim_id=claim, paper="", section="", figure="", statement="", model_id="dec",
                           test=f"t::{claim}", verdict="holds")

    claims = ["M.final-norm-isotropises", "M.partition-isotropy", "X.massive-activations", "X.attention-sink",
              "X.rogue-dimensions"]
    html = render_html(_doc(tmp_path, [result(c) for c in claims], models=models, registry={"dec": row}))
    for claim in claims:
        section = html.split(f'id="claim-{claim}"', 1)[1].split("</section>", 1)[0]
        assert f"<figcaption>{claim}:" in section, claim


def test_a_claims_notes_are_shown_in_full_beside_its_numbers(tmp_path):
    """A control reported beside a claim (measured["notes"]) reaches the claim's table whole and escaped, whatever
    the number of scalars before it; the sensitivity of the sink share is shown with its value."""
    from aniso.judge.results import Sensitivity

    note = "identity-attention control (seed 0): N* = 27.707, with attention 27.707; " + EVIL
    r = ClaimResult(claim_id="G.block-norm-fixed-point", paper="G", section="§4.2", figure="Fig. 6b", statement="s",
                    model_id="untrained-bert-block", test="t::x", verdict="holds",
                    measured={**{f"k{i}": float(i) for i in range(8)}, "notes": [note]}, rule="r")
    sink = ClaimResult(claim_id="X.attention-sink", paper="X", section="§3", figure="Fig. 2", statement="s",
                       model_id="SmolLM2-135M", test="t::y", verdict="holds", measured={"share": 0.611}, rule="r",
                       sensitivity=[Sensitivity(choice="per-sequence mean (every sequence weighs the same)",
                                                holds=True, value=0.726)])
    html = render_html(_doc(tmp_path, [r, sink]))
    assert "identity-attention control (seed 0): N* = 27.707, with attention 27.707; &lt;script&gt;" in html
    assert EVIL not in html
    assert "per-sequence mean (every sequence weighs the same): holds (0.726)" in html


def _claim(claim, model, verdict, fragile=False, n_items=100, reason="", low=0.1, high=0.3):
    from aniso.judge.results import Uncertainty

    return ClaimResult(claim_id=claim, paper="G", section="§2", figure="Fig. 1", statement="s", model_id=model,
                       test=f"t[{model}]", verdict=verdict, reason=reason, n_items=n_items,
                       skip_kind="model" if verdict == "skipped" else None,
                       uncertainty=None if verdict == "skipped" else Uncertainty(
                           statistic="highest layer avg cos", value=0.2, low=low, high=high, threshold=0.25,
                           holds_if="<", holds_share=0.6, fragile=fragile, n_boot=100))


def test_verdict_matrix_is_the_first_table_with_a_cell_per_claim_and_model(tmp_path):
    """Rows are claims under their paper and section, columns the run models by group, hub-only models folded into
    one "not here" group; each cell links to its verdict and says its deciding number on hover."""
    import re

    from aniso.judge.results import RegistryRow

    rows = {"enc": RegistryRow(modality="text", granularity="subword", architecture="transformer", role="encoder",
                               family="bert"),
            "cnn": RegistryRow(modality="vision", granularity="pixel", architecture="cnn", role="encoder",
                               family="resnet")}
    results = [_claim("G.token-nlp-anisotropic", "enc", "holds"),
               _claim("G.cnn-mostly-isotropic", "cnn", "holds", fragile=True),
               _claim("G.drift-correlation-pearson", "enc", "does not hold", reason="r = 0.1 < 0.5"),
               _claim("G.token-nlp-anisotropic", "hub-only", "skipped", reason="not in the local cache")]
    html = render_html(_doc(tmp_path, results, registry=rows))
    matrix = html.split('<table id="verdict-matrix">', 1)[1].split("</table>", 1)[0]
    assert html.index('<table id="verdict-matrix">') == html.index("<table")
    assert "Subword text Transformers" in matrix and "Convolutional networks" in matrix
    assert matrix.index("Subword text Transformers") < matrix.index("Convolutional networks")
    assert "§2" in matrix and "§3.2" in matrix  # claims grouped by paper and section
    cells = re.findall(r'<td class="([^"]*)" title="([^"]*)"><a href="#(r-\d+)">([^<]*)</a>', matrix)
    by_anchor = {a: (cls, title, sym) for cls, title, a, sym in cells}
    assert by_anchor["r-0"] == ("holds", "enc: holds · highest layer avg cos = 0.2, 95% CI [0.1, 0.3] vs &lt; 0.25",
                                "✓")
    assert by_anchor["r-1"][0] == "holds fragile" and by_anchor["r-1"][2] == "✓?"
    assert by_anchor["r-2"][0] == "fails" and "r = 0.1 &lt; 0.5" in by_anchor["r-2"][1]
    assert 'id="vm-toggle"' in html and 'class="model nh-col" title="hub-only"' in matrix
    assert matrix.count("nh-sum") == 1 + 3  # the folded header and one count per claim


def test_interval_of_one_input_is_not_available(tmp_path):
    from aniso.report import interval_text

    one = _claim("M.partition-isotropy", "enc", "holds", n_items=1, low=0.07134, high=0.07134).model_dump()
    assert interval_text(one) == "n/a (one input)"
    assert interval_text(_claim("G.token-nlp-anisotropic", "enc", "holds").model_dump()) == "[0.1, 0.3]"
    assert interval_text(_claim("G.token-nlp-anisotropic", "enc", "skipped").model_dump()) is None
    html = render_html(_doc(tmp_path, [_claim("M.partition-isotropy", "enc", "holds", n_items=1, low=0.07134,
                                              high=0.07134)]))
    assert "n/a (one input)" in html and "0.07134, 0.07134" not in html


def test_findings_say_the_shared_wording_once_per_claim(tmp_path):
    from aniso.report import common_wording

    assert common_wording(["max avg cos 0.1 < 0.2", "max avg cos 0.15 < 0.2"]) == ("max avg cos", ["0.1", "0.15"],
                                                                                    "< 0.2")
    assert common_wording(["same words"]) == ("", ["same words"], "")
    reason = "the drift norm and avg cos are not linearly correlated across layers: r ="
    results = [_claim("G.drift-correlation-pearson", m, "expected not to hold", reason=f"{reason} 0.{i}")
               for i, m in enumerate(("a", "b", "c"))]
    html = render_html(_doc(tmp_path, results))
    findings = html.split("Findings and fragile verdicts", 1)[1].split("</ul>", 1)[0]
    assert findings.count("<li") == 1 and findings.count(reason) == 1
    assert "on 3 model(s)" in findings and 'c</a> (<span title="0.2">0.2</span>)' in findings


def test_figures_are_legible_and_fit_the_page():
    """No text under 9 pt; a figure wider than the page is narrowed (its axes, not its type)."""
    from aniso.report.figures import DPI, MAX_WIDTH_IN, png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(20, 3))
    ax.plot([0, 1], [0, 1], label="x" * 30)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    out = png(fig)
    assert out.font_pt >= 9 and out.css_width <= MAX_WIDTH_IN * 96 + 1
    assert abs(out.pixel_width * 96 / DPI - out.css_width) <= 1
    ax.set_title("tiny", fontsize=7)
    with pytest.raises(ValueError, match="7 pt"):
        png(fig)
    plt.close(fig)


def test_group_figure_draws_every_model_its_claim_measured():
    """A model whose layer table carries no registry row is grouped by the document's registry; a model measured
    by a claim of the figure is drawn in it whatever its row."""
    from aniso.report.modalities import group_members

    char = {"modality": "text", "granularity": "byte", "architecture": "transformer", "role": "decoder"}
    models = {"a": {"entry": char, "layers": []}, "b": {"entry": None, "layers": []},
              "c": {"entry": {"modality": "text", "granularity": "subword", "architecture": "transformer"},
                    "layers": []}}
    assert set(group_members(models, "text-char")) == {"a"}
    assert set(group_members(models, "text-char", {"b": char})) == {"a", "b"}
    assert set(group_members(models, "text-char", {"b": char}, {"text-char": {"c"}})) == {"a", "b", "c"}


def test_overview_figures_put_every_model_side_by_side(tmp_path):
    from aniso.report.overview import overview_figures
    from aniso.judge.results import RegistryRow

    def model(modality, role, arch="transformer"):
        layers = [dict(LAYER, mean_cosine=0.1 * i, drift_norm=1.0 + i, svd_anisotropy_batch_mean=0.1 + 0.01 * i,
                       twonn=5.0 + i) for i in range(4)]
        return ModelLayers(layer_names=[str(i) for i in range(4)], layers=layers, meta={},
                           entry=RegistryRow(modality=modality, granularity="subword", architecture=arch, role=role,
                                             family="f"))

    doc = _doc(tmp_path, [], models={"dec": model("text", "decoder"), "enc": model("text", "encoder"),
                                     "cnn": model("vision", "encoder", "cnn")})
    figs = overview_figures(doc.model_dump(mode="json")["models"])
    starts = ("avg cos by relative depth", "drift norm vs avg cos per layer", "SVD-anisotropy and TwoNN profiles")
    assert len(figs) == 3 and all(c.split(": ", 1)[1].startswith(s) for (c, _), s in zip(figs, starts)), figs
    assert all(f.font_pt >= 9 for _, f in figs)
    html = render_html(doc)
    assert html.index('id="across-models"') < html.index('id="claims"')
    one = {"dec": doc.model_dump(mode="json")["models"]["dec"]}
    assert overview_figures({}) == [] and overview_figures(one) == []


def test_report_says_what_a_model_stands_for_wherever_it_names_it(tmp_path):
    """A row on real weights that stands for a seed model says so (escaped) in the verdict matrix's column title,
    the claim's table, the layer-wise section and the table of every result; other models get no such label."""
    from aniso.judge.results import RegistryRow

    row = dict(modality="text", granularity="subword", architecture="transformer", role="encoder", family="bert")
    rows = {"real": RegistryRow(**row, stands_for="seed<b>", relation="relative"), "plain": RegistryRow(**row)}
    results = [_claim("G.token-nlp-anisotropic", "real", "holds"), _claim("G.token-nlp-anisotropic", "plain", "holds")]
    models = {m: ModelLayers(layer_names=["0", "1"], layers=[LAYER, LAYER], meta={"origin": "o"}) for m in rows}
    html = render_html(_doc(tmp_path, results, registry=rows, models=models))
    label = "stands for seed&lt;b&gt; (relative)"
    assert "seed<b>" not in html
    matrix = html.split('<table id="verdict-matrix">', 1)[1].split("</table>", 1)[0]
    assert f'title="real: {label}"' in matrix and 'title="plain"' in matrix
    claim = html.split('id="claim-G.token-nlp-anisotropic"', 1)[1].split("</section>", 1)[0]
    assert f'<div class="small stands-for">{label}</div>' in claim
    layers = html.split('id="layers"', 1)[1]
    assert f'<b>real</b> <span class="small stands-for">({label})</span>' in layers
    every = html.split('id="every-result"', 1)[1]
    assert every.count(label) == 1 and html.count("stands for") == 4


def test_report_compares_a_fine_tuned_model_with_its_base_layer_by_layer(tmp_path):
    """A measured model whose registry row names the measured model it was fine-tuned from gets a table of both
    layer-wise avg cos and the change (names escaped); without its base measured, no table."""
    from aniso.judge.results import RegistryRow
    from aniso.report import fine_tuning_pairs

    row = dict(modality="text", granularity="char", architecture="transformer", role="encoder", family="bert")
    rows = {"pre<": RegistryRow(**row), "ft": RegistryRow(**row, fine_tuned_from="pre<")}
    meta = {"origin": "o", "corpus": {"dataset": "rx@1"}}
    models = {"pre<": ModelLayers(layer_names=["0", "1"], layers=[LAYER | {"mean_cosine": 0.2},
                                                                   LAYER | {"mean_cosine": 0.3}], meta=meta),
              "ft": ModelLayers(layer_names=["0", "1"], layers=[LAYER | {"mean_cosine": 0.25},
                                                                 LAYER | {"mean_cosine": 0.1}], meta=meta)}
    doc = _doc(tmp_path, [_claim("G.token-nlp-anisotropic", m, "holds") for m in models], registry=rows,
               models=models)
    pairs = fine_tuning_pairs(doc.model_dump(mode="json")["models"], doc.model_dump(mode="json")["registry"])
    assert [(p["base"], p["model"], p["same_inputs"]) for p in pairs] == [("pre<", "ft", True)]
    assert [name for name, *_ in pairs[0]["layers"]] == ["0", "1"]
    assert pairs[0]["layers"][1][3] == pytest.approx(-0.2) and pairs[0]["largest"][0] == "1"
    html = render_html(doc)
    section = html.split('<h2 id="fine-tuning">', 1)[1].split("<h2", 1)[0]
    assert "pre&lt; → ft" in section and "pre<" not in section
    assert "<td>1</td><td>0.3</td><td>0.1</td><td>-0.2</td>" in section
    alone = render_html(_doc(tmp_path, [_claim("G.token-nlp-anisotropic", "ft", "holds")], registry=rows,
                             models={"ft": models["ft"]}))
    assert 'id="fine-tuning"' not in alone


def _row(modality, granularity, architecture, miniature=False):
    from aniso.judge.results import RegistryRow

    return RegistryRow(modality=modality, granularity=granularity, architecture=architecture, role="encoder",
                       family="f", miniature=miniature)


def test_each_modality_figure_holds_exactly_the_models_of_its_modality(tmp_path):
    """G Fig. 3a (speech) and Fig. 3b (vision Transformers) are panels of one figure: a model measured by the speech
    claim must not be drawn among the vision Transformers, nor the other way round."""
    from aniso.report import _measured_by_figure, render_html
    from aniso.report.modalities import GROUPS, entry_of, group_members
    from aniso.registry.catalog import CLAIMS

    rows = {"whisper": _row("speech", "audio-frame", "transformer"), "dinov2": _row("vision", "patch", "transformer"),
            "mini-vit": _row("vision", "patch", "transformer", miniature=True),
            "resnet": _row("vision", "pixel", "cnn"), "minilm": _row("text", "subword", "transformer")}
    models = {m: ModelLayers(layer_names=["0", "1"], layers=[LAYER, LAYER], meta={}, entry=row)
              for m, row in rows.items()}
    claim_of = {"whisper": "G.speech-all-layers-0.2", "dinov2": "G.vision-transformers-anisotropic",
                "mini-vit": "G.vision-transformers-anisotropic", "resnet": "G.cnn-mostly-isotropic",
                "minilm": "G.token-nlp-anisotropic"}
    results = [ClaimResult(claim_id=c, paper="G", section=CLAIMS[c].section, figure=CLAIMS[c].figure, statement="",
                           model_id=m, test=f"t[{m}]", verdict="holds") for m, c in claim_of.items()]
    doc = _doc(tmp_path, results, models=models)
    dumped = doc.model_dump(mode="json")
    claims = [{"id": c.id, "figure": c.figure} for c in CLAIMS.values()]
    also = _measured_by_figure(claims, dumped["results"])
    modality_of = {"speech": {"speech"}, "vision-transformer": {"vision"}, "vision-cnn": {"vision"},
                   "text-subword": {"text"}}
    for key, _, _ in GROUPS:
        drawn = group_members(dumped["models"], key, None, also)
        for mid, d in drawn.items():
            if key in modality_of:
                assert entry_of(mid, d)["modality"] in modality_of[key], (key, mid)
    assert set(group_members(dumped["models"], "speech", None, also)) == {"whisper"}
    assert set(group_members(dumped["models"], "vision-transformer", None, also)) == {"dinov2", "mini-vit"}
    assert "data:image/png;base64," in render_html(doc)


def test_underpowered_verdicts_are_counted_apart_and_intervals_that_cannot_be_read_are_not_printed(tmp_path):
    """An underpowered verdict is listed apart from the findings; a degenerate interval is shown as "not
    informative" with its reason, never as [x, x]; a stale record is named with its numbers."""
    from aniso.judge.results import RecordDrift, Uncertainty

    degenerate = Uncertainty(statistic="spearman p-value", value=0.0068, threshold=0.05, holds_if="<", n_boot=1000,
                             informative=False, note="not informative: all 1000 resamples gave 0.0068 (rank order)")
    rows = [
        ClaimResult(claim_id="G.drift-correlation-spearman", paper="G", section="§3.3", figure="Fig. 5", statement="",
                    model_id="minilm", test="a", verdict="holds", p_value=0.0068, uncertainty=degenerate),
        ClaimResult(claim_id="G.drift-correlation-spearman", paper="G", section="§3.3", figure="Fig. 5", statement="",
                    model_id="l3", test="b", verdict="underpowered at this size", reason="4 layers: cannot decide",
                    underpowered="4 layers: cannot decide"),
        ClaimResult(claim_id="G.drift-correlation-pearson", paper="G", section="§3.3", figure="Fig. 16", statement="",
                    model_id="resnet", test="c", verdict="expected not to hold", reason="weak",
                    record_drift=[RecordDrift(key="p_value", recorded=0.39, measured=0.285, tolerance="p-value")]),
    ]
    html = render_html(_doc(tmp_path, rows))
    assert "[0.0068, 0.0068]" not in html and "not informative: all 1000 resamples gave 0.0068" in html
    assert "Underpowered at this size" in html and "4 layers: cannot decide" in html
    assert "stale" in html and "0.285" in html


def test_report_shows_bidi_controls_as_escapes(tmp_path):
    """A record's reason, a model id or a rule holding U+202E (right-to-left override) was written raw into the page,
    so that a browser showed the rest of its line reversed; ``aniso diff`` shows such characters as escapes."""
    bidi = "\u202aa\u202bb\u202cc\u202dd\u202ee\u2066f\u2067g\u2068h\u2069i\u200ej\u200fk"
    r = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                    model_id="m\u202eid", test="t::x", verdict="holds", measured={"note": bidi, "value": 0.5},
                    rule="rule " + bidi, reason="why " + bidi + " END", inputs_label=bidi,
                    differs_from_record="expected does-not-hold (" + bidi + ")")
    doc = _doc(tmp_path, [r], models={"m\u202eid": ModelLayers(layer_names=["0"], layers=[LAYER],
                                                                meta={"origin": bidi})})
    html = render_html(doc)
    for c in bidi[::2]:
        assert c not in html, repr(c)
    assert "\\u202e" in html and "m\\u202eid" in html
    assert "\n" in html  # the page's own line breaks are kept
