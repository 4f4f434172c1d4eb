"""The report in a real browser (headless Chromium): every image decodes and no part of the page is wider than a
1280-pixel window, with every collapsed section opened. Screenshots go to ANISO_SCREENSHOT_DIR when it is set.

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
from aniso.results import (ClaimResult, ModelLayers, RegistryRow, ResultsDocument, Uncertainty, provenance)

WIDTH = 1280
CHECK = """<script>
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt);
  const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map(e => e.tagName + ':' + (e.textContent || '').slice(0, 40));
  const out = document.createElement('pre'); out.id = 'aniso-check';
  out.textContent = JSON.stringify({images: document.images.length, broken, wide: wide.slice(0, 5),
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


def _run(chromium: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", f"--window-size={WIDTH},2000", "--virtual-time-budget=20000",
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
    results += [ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1",
                            statement="s", model_id=f"hub-model-{i}", test=f"t[{i}]", verdict="skipped",
                            reason="offline and not in the local cache " * 3) for i in range(30)]
    return ResultsDocument(provenance=provenance(tmp_path, {"corpus": "c" * 300}, None), results=results,
                           models=models, registry=rows)


def test_report_reads_in_a_browser(tmp_path):
    chromium = _chromium()
    html = render_html(_document(tmp_path))
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    proc = _run(chromium, page, tmp_path / "profile", "--dump-dom")
    found = re.search(r'<pre id="aniso-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    check = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert check["images"] >= 5 and check["broken"] == [], check
    assert check["scrollWidth"] <= WIDTH and check["wide"] == [], check
    # top-down: the summary and its findings come before the claims, the provenance last
    assert html.index("Findings and fragile verdicts") < html.index("<h2>Claims</h2>") < html.index("Provenance")
    # skipped models: one collapsed line per claim, and one line each (with the reason) under "Models not run here"
    assert "30 model(s) skipped for this claim" in html and html.count("<b>hub-model-7</b>: offline") == 1
    shots = os.environ.get("ANISO_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        _run(chromium, page, tmp_path / "profile2", f"--screenshot={Path(shots) / 'report.png'}")
