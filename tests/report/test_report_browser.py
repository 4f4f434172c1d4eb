"""The report in a real browser (headless Chromium): every image decodes and no part of the page is wider than a
1280-pixel window, with every collapsed section opened; the verdict matrix is the first table; on a 1,366-pixel
screen no figure is shown smaller than the width at which its smallest text reads at 9 pt. Screenshots of the top of
the page go to ANISO_SCREENSHOT_DIR (default: the test's temporary folder).

Chromium is Debian's package (`apt-get install chromium`); `.ci/run` installs it and sets ANISO_REQUIRE_BROWSER=1,
so there its absence fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aniso.report import render_html
from aniso.report.figures import DPI
from aniso.judge.results import (ClaimResult, ModelLayers, RegistryRow, ResultsDocument, Uncertainty, provenance)

WIDTH = 1280
SCREEN = 1366
CHECK = """<script>
window.addEventListener('load', () => {
  const firstTable = document.querySelector('table').id;
  // on screen, a figure's smallest text is font_pt x shown width / css width (the width its text reads at font_pt)
  const figures = [...document.querySelectorAll('img[data-font-pt]')].filter(i => i.getBoundingClientRect().width > 0)
    .map(i => ({alt: i.alt.slice(0, 60), pt: parseFloat(i.dataset.fontPt) * i.getBoundingClientRect().width
                / parseFloat(i.dataset.cssWidth), natural: i.naturalWidth, css: parseFloat(i.dataset.cssWidth)}));
  document.querySelectorAll('details').forEach(d => d.open = true);
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt);
  const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map(e => e.tagName + ':' + (e.textContent || '').slice(0, 40));
  const out = document.createElement('pre'); out.id = 'aniso-check';
  const hidden = [...document.querySelectorAll('img[data-font-pt]')].map(i => ({alt: i.alt.slice(0, 60),
    pt: parseFloat(i.dataset.fontPt) * i.getBoundingClientRect().width / parseFloat(i.dataset.cssWidth)}));
  out.textContent = JSON.stringify({images: document.images.length, broken, wide: wide.slice(0, 5), firstTable,
    figures, opened: hidden,
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth});
  document.body.appendChild(out);
});
</script>"""


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("ANISO_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (apt-get install chromium), and ANISO_REQUIRE_BROWSER=1")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def _run(chromium: str, page: Path, profile: Path, *args: str, width: int = WIDTH,
         height: int = 2000) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", f"--window-size={width},{height}", "--virtual-time-budget=20000",
                           *args, page.as_uri()], capture_output=True, text=True, timeout=180)


def _layers(n: int, top: float) -> list[dict]:
    return [{"dim": 384, "count": 1000, "n_zero": 0, "mean_cosine": top * (i + 1) / n, "mean_cosine_sampled": None,
             "drift_norm": 1.0 + i, "mean_norm": 5.0, "svd_anisotropy": 0.1 + 0.05 * i,
             "svd_anisotropy_batch_mean": 0.1 + 0.3 * (1 - abs(i - n / 2) / n), "svd_anisotropy_batch_std": 0.01,
             "n_svd_batches": 4, "twonn": 12.0, "n_reservoir": 1000, "q95": 0.084} for i in range(n)]


def _document(tmp_path) -> ResultsDocument:
    long_id = "a-model-with-a-very-long-registry-identifier-that-has-no-spaces-at-all-" * 2
    rows = {"enc": RegistryRow(modality="text", granularity="subword", architecture="transformer", role="encoder",
                               family="bert"),
            long_id: RegistryRow(modality="text", granularity="subword", architecture="transformer", role="decoder",
                                 family="llama"),
            "cnn": RegistryRow(modality="vision", granularity="pixel", architecture="cnn", role="encoder",
                               family="resnet")}
    models = {m: ModelLayers(layer_names=[str(i) for i in range(13)], layers=_layers(13, top), meta={"origin": m},
                             entry=rows[m]) for m, top in (("enc", 0.3), (long_id, 0.6), ("cnn", 0.19))}

    def result(claim, model, verdict, fragile=False, p=None, **measured):
        return ClaimResult(claim_id=claim, paper="G", section="§2", figure="Fig. 1", statement="s", model_id=model,
                           test=f"t[{model}]", verdict=verdict, p_value=p, reason="x " * 80 if verdict != "holds" else "",
                           measured=measured | {"avg_cos_per_layer": [0.1] * 40, "note": "y" * 150},
                           uncertainty=Uncertainty(statistic="highest layer avg cos", value=0.19, low=0.17, high=0.21,
                                                   threshold=0.2, holds_if="<", holds_share=0.7, fragile=fragile,
                                                   n_boot=1000, method="percentile bootstrap " * 10))

    results = [result("G.token-nlp-anisotropic", m, "holds", max_avg_cos=0.3) for m in ("enc", long_id)]
    results += [result("G.drift-correlation-spearman", m, "holds", p=0.0) for m in ("enc", long_id)]
    results += [result("G.drift-correlation-pearson", m, "expected not to hold", p=0.3) for m in ("enc", long_id)]
    results += [result("G.cnn-mostly-isotropic", "cnn", "holds", fragile=True, max_avg_cos=0.19)]
    results += [result("R.decoder-bell-profile", long_id, "holds"), result("R.encoder-flat-profile", "enc", "holds")]
    results += [result("G.drift-correlation-pearson", "cnn", "does not hold", p=0.4)]
    one = result("M.partition-isotropy", "enc", "holds")
    one.n_items, one.uncertainty.low, one.uncertainty.high = 1, 0.07134, 0.07134
    results += [one]
    results += [ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1",
                            statement="s", model_id=f"hub-model-{i}", test=f"t[{i}]", verdict="skipped",
                            reason="offline and not in the local cache " * 3) for i in range(30)]
    return ResultsDocument(provenance=provenance(tmp_path, {"corpus": "c" * 300}, None), results=results,
                           models=models, registry=rows)


def _check(chromium: str, page: Path, profile: Path, width: int) -> dict:
    proc = _run(chromium, page, profile, "--dump-dom", width=width)
    found = re.search(r'<pre id="aniso-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_report_reads_in_a_browser(tmp_path):
    chromium = _chromium()
    html = render_html(_document(tmp_path))
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    check = _check(chromium, page, tmp_path / "profile", WIDTH)
    assert check["images"] >= 5 and check["broken"] == [], check
    assert check["scrollWidth"] <= WIDTH and check["wide"] == [], check
    assert check["firstTable"] == "verdict-matrix", check
    # legible at 100% on a 1,366-pixel screen: every figure in view, and every one inside an opened section
    screen = _check(chromium, page, tmp_path / "profile-screen", SCREEN)
    assert len(screen["figures"]) >= 5 and len(screen["opened"]) == screen["images"], screen
    small = [f for f in screen["figures"] + screen["opened"] if f["pt"] < 9.0 - 1e-6]
    assert small == [], small
    # the width the text is legible at is the image's own (DPI dots per inch shown at 96 CSS pixels per inch)
    assert all(abs(f["natural"] * 96 / DPI - f["css"]) <= 1 for f in screen["figures"]), screen["figures"]
    # top-down: the summary and its findings come before the claims, the provenance last
    assert html.index("Findings and fragile verdicts") < html.index('<h2 id="claims">Claims</h2>') < html.index('<h2 id="provenance">')
    # skipped models: one collapsed line per claim, and one line each (with the reason) under "Models not run here"
    # the matrix and the contents come first; an interval over one input is not printed as one
    assert html.index('id="toc"') < html.index('id="verdict-matrix"') < html.index('id="summary"')
    assert "n/a (one input)" in html and "[0.07134, 0.07134]" not in html
    assert "30 model(s) skipped for this claim" in html and html.count("<b>hub-model-7</b>: offline") == 1
    shots = Path(os.environ.get("ANISO_SCREENSHOT_DIR") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    plain = tmp_path / "plain.html"
    plain.write_text(html, encoding="utf-8")
    for name, height in (("report-top.png", 900), ("report-top-long.png", 2400)):
        _run(chromium, plain, tmp_path / f"profile-{name}", f"--screenshot={shots / name}", width=SCREEN, height=height)
        assert (shots / name).stat().st_size > 10_000, name
