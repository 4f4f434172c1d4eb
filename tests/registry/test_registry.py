"""The registry schema: the real models.yaml validates; malformed files fail with one line naming the entry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, text):
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return p


def test_project_registry_is_valid_and_lists_the_papers_models():
    reg = load_registry(ROOT / "models.yaml")
    ids = {e.id for e in reg}
    for needed in ["bert-base-uncased", "roberta-base", "gpt2", "t5-base", "albert-base-v2", "opt-125m", "opt-13b",
                   "llama-2-7b-hf", "gpt-j-6b", "falcon-7b", "pythia-2.8b", "canine-s", "canine-c", "byt5-small",
                   "character-bert", "manta-lm-base", "wav2vec2-base", "hubert-base-ls960", "whisper-base",
                   "vit-base-patch16-224", "beit-base-patch16-224", "mit-b0", "deit-base-patch16-224", "resnet-50",
                   "efficientnet-b0", "cvt-13", "convnext-tiny-224", "van-base", "all-MiniLM-L6-v2"]:
        assert needed in ids
    assert all(not e.trust_remote_code for e in reg), "remote code must stay opt-in, off by default"
    assert reg.get("gpt2").expected["G.drift-correlation-spearman"].verdict == "does-not-hold"
    assert {e.id for e in reg.select(all_of=("text", "subword"))} >= {"gpt2", "all-MiniLM-L6-v2"}
    assert "resnet-50" not in {e.id for e in reg.select(all_of=("transformer",))}


def test_every_hub_row_states_its_dtype():
    """Every hub row of the project's registry says in which dtype its weights are held (the 13 B rows would otherwise
    load in float32: 52 GB): the models of 1.3 B parameters and more in the half precision they were released in,
    the rest in float32. A row that leaves ``dtype`` out fails here, since the schema's default would load it in
    float32 silently."""
    import yaml

    rows = yaml.safe_load((ROOT / "models.yaml").read_text())["models"]
    hub = [r for r in rows if r["source"].get("kind") == "hub"]
    assert len(hub) >= 40
    assert [r["id"] for r in hub if "dtype" not in r["source"]] == []
    half = {r["id"] for r in hub if r["source"]["dtype"] != "float32"}
    big = {"opt-1.3b", "opt-2.7b", "opt-6.7b", "opt-13b", "llama-2-7b-hf", "llama-2-13b-hf", "llama-2-7b-chat-hf",
           "gpt-j-6b", "falcon-7b", "falcon-7b-instruct", "pythia-2.8b"}
    assert half == big
    reg = load_registry(ROOT / "models.yaml")
    assert {e.id for e in reg.entries if getattr(e.source, "dtype", "float32") != "float32"} == big


def test_valid_minimal_file(tmp_path):
    reg = load_registry(write(tmp_path, "models:\n" + ENTRY))
    assert reg.get("tiny").source.kind == "local"
    assert reg.get("tiny").source.path == "./tiny"


@pytest.mark.parametrize(
    "mutation, expected",
    [
        (lambda e: e + "    colour: blue\n", r"models\[0\] \(id 'tiny'\): colour: unknown key"),
        (lambda e: e.replace("role: encoder", "role: sideways"), r"models\[0\] \(id 'tiny'\): role:"),
        (lambda e: e.replace("{kind: local, path: ./tiny}", "{kind: hub}"), r"models\[0\] \(id 'tiny'\): source.repo"),
        (lambda e: e.replace("{kind: local, path: ./tiny}", "{kind: ftp, path: x}"), r"models\[0\] \(id 'tiny'\): source"),
        (lambda e: e + "    expected: {G.not-a-claim: {verdict: holds, reason: x}}\n", r"unknown claim id"),
        (lambda e: e + "    trust_remote_code: true\n", r"needs_remote_code"),
        (lambda e: e.replace("    modality: text\n", ""), r"models\[0\] \(id 'tiny'\): modality: Field required"),
        (lambda e: e + "    params_m: true\n", r"models\[0\] \(id 'tiny'\): params_m: Input should be a valid number"),
        (lambda e: e + "    tags: ['']\n", r"models\[0\] \(id 'tiny'\): tags\.0: String should match pattern"),
        (lambda e: e + "    tiny: {hidden_size: -32, num_hidden_layers: 2}\n",
         r"models\[0\] \(id 'tiny'\): tiny: .*tiny\.hidden_size is -32: a size or count, a whole number of at least 1"),
        (lambda e: e + "    tiny: {hidden_size: 32, num_attention_heads: true}\n", r"tiny\.num_attention_heads is True"),
    ],
)
def test_malformed_entry_names_file_entry_and_field(tmp_path, mutation, expected):
    path = write(tmp_path, "models:\n" + mutation(ENTRY))
    with pytest.raises(RegistryError, match=expected) as info:
        load_registry(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message


def test_duplicate_ids_and_bad_yaml(tmp_path):
    with pytest.raises(RegistryError, match=r"models\[1\] \(id 'tiny'\): duplicate id"):
        load_registry(write(tmp_path, "models:\n" + ENTRY + ENTRY))
    with pytest.raises(RegistryError, match="not valid YAML at line"):
        load_registry(write(tmp_path, "models:\n  - id: [unclosed\n"))
    with pytest.raises(RegistryError, match="registry file not found"):
        load_registry(tmp_path / "missing.yaml")


def test_an_alias_before_its_anchor_is_named_with_where_the_anchor_is(tmp_path):
    """A row copied with its `tiny: *tiny-bert` above the row holding `&tiny-bert` (or into a registry of its own)
    was "not valid YAML at line 3: found undefined alias", the alias unnamed."""
    after = "models:\n  - id: a\n    tiny: *tiny-bert\n  - id: b\n    tiny: &tiny-bert {model_type: bert}\n"
    with pytest.raises(RegistryError) as caught:
        load_registry(write(tmp_path, after))
    assert str(caught.value).endswith(
        "not valid YAML at line 3: found undefined alias *tiny-bert: its anchor &tiny-bert is at line 5, after it; "
        "an anchor must come before its aliases: move the entry holding &tiny-bert above line 3, or write the value "
        "out in place of *tiny-bert"), str(caught.value)
    with pytest.raises(RegistryError, match=r"not valid YAML at line 3: found undefined alias \*tiny-bert: no anchor "
                                            r"&tiny-bert is in this file .*: write the value out in place of "
                                            r"\*tiny-bert$"):
        load_registry(write(tmp_path, "models:\n  - id: a\n    tiny: *tiny-bert\n"))


def test_broken_registry_gives_one_line_pytest_error(tmp_path):
    path = write(tmp_path, "models:\n" + ENTRY.replace("role: encoder", "role: sideways"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "claims"), "-q", "-p", "no:cacheprovider",
         f"--aniso-registry={path}", "--collect-only"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if str(path) in line]
    assert lines and "models[0] (id 'tiny'): role:" in lines[0]


def test_recorded_inputs_and_expectations(tmp_path):
    """Measured expectations (and the implicit "holds") belong to the registry's recorded inputs for the model's
    modality; an expectation's own inputs override them; a paper exception without inputs binds any inputs."""
    text = ("recorded_inputs: {text: corpus@aaaaaaaaaaaaaaaa}\nmodels:\n" + ENTRY + """\
    expected:
      G.token-nlp-anisotropic: {verdict: does-not-hold, reason: measured}
      G.isotropic-baseline: {verdict: does-not-hold, reason: paper, source: paper}
      G.drift-correlation-spearman: {verdict: holds, reason: measured elsewhere, inputs: other@bbbbbbbbbbbbbbbb}
""")
    reg = load_registry(write(tmp_path, text))
    entry = reg.get("tiny")
    assert reg.recorded_inputs == {"text": "corpus@aaaaaaaaaaaaaaaa"}
    assert reg.expectation(entry, "G.token-nlp-anisotropic")[1] == "corpus@aaaaaaaaaaaaaaaa"
    assert reg.expectation(entry, "G.isotropic-baseline")[1] is None
    assert reg.expectation(entry, "G.drift-correlation-spearman")[1] == "other@bbbbbbbbbbbbbbbb"
    assert reg.expectation(entry, "G.drift-correlation-pearson") == (None, "corpus@aaaaaaaaaaaaaaaa")


def test_measured_on_takes_the_recorded_inputs_of_its_kind(tmp_path):
    """A model measured on other inputs than its modality's (reaction SMILES for a chemistry model) is held to the
    dataset recorded for those inputs."""
    text = ("recorded_inputs: {text: corpus@aaaaaaaaaaaaaaaa, reactions: rxn@cccccccccccccccc}\nmodels:\n" + ENTRY
            + "    measured_on: reactions\n")
    reg = load_registry(write(tmp_path, text))
    assert reg.expectation(reg.get("tiny"), "G.drift-correlation-pearson") == (None, "rxn@cccccccccccccccc")


@pytest.mark.parametrize("text, field", [
    ("recorded_inputs: {audio: x@1}\nmodels:\n" + ENTRY, "recorded_inputs.audio"),
    ("recorded_inputs: {text: no-fingerprint}\nmodels:\n" + ENTRY, "recorded_inputs.text"),
    ("models:\n" + ENTRY + "    expected:\n      G.token-nlp-anisotropic: {verdict: holds, reason: r, inputs: nofp}\n",
     "expected.G.token-nlp-anisotropic.inputs"),
])
def test_bad_recorded_inputs_name_the_field(tmp_path, text, field):
    """Inputs are a modality's dataset identity, name@fingerprint."""
    with pytest.raises(RegistryError, match=field.replace(".", r"\.")):
        load_registry(write(tmp_path, text))


SEED = """\
  - id: seed
    source: {kind: hub, repo: org/seed}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""


def test_stands_for_names_a_seed_row_with_its_relation(tmp_path):
    reg = load_registry(write(tmp_path, "models:\n" + SEED + ENTRY + "    stands_for: seed\n    relation: relative\n"))
    assert (reg.get("tiny").stands_for, reg.get("tiny").relation) == ("seed", "relative")
    assert (reg.get("seed").stands_for, reg.get("seed").relation) == (None, None)
    # a model of the papers run here from a conversion stands for itself, and is a seed row for its relatives
    own = ENTRY.replace("id: tiny", "id: conv") + "    stands_for: conv\n    relation: converted\n"
    reg = load_registry(write(tmp_path, "models:\n" + own + ENTRY + "    stands_for: conv\n    relation: relative\n"))
    assert reg.get("tiny").stands_for == "conv" and reg.get("conv").relation == "converted"


@pytest.mark.parametrize(
    "rows, expected",
    [
        (SEED + ENTRY + "    stands_for: seed\n", r"models\[1\] \(id 'tiny'\): \(entry\): .*go together"),
        (SEED + ENTRY + "    relation: same\n", r"models\[1\] \(id 'tiny'\): \(entry\): .*go together"),
        (SEED + ENTRY + "    stands_for: seed\n    relation: cousin\n", r"models\[1\] \(id 'tiny'\): relation: Input should be 'same', 'converted' or 'relative'"),
        (SEED + ENTRY + "    stands_for: sed\n    relation: same\n",
         r"models\[1\] \(id 'tiny'\): stands_for: no row 'sed' in the registry; did you mean 'seed'\?"),
        (SEED + ENTRY + "    stands_for: seed\n    relation: same\n" + ENTRY.replace("id: tiny", "id: other")
         + "    stands_for: tiny\n    relation: relative\n",
         r"models\[2\] \(id 'other'\): stands_for: 'tiny' is not a seed row .*local row that stands for 'seed'"),
        (ENTRY + "    stands_for: tiny\n    relation: relative\n", r"models\[0\] \(id 'tiny'\): \(entry\): .*no relative of itself"),
        (SEED + ENTRY + "    fine_tuned_from: sede\n", r"models\[1\] \(id 'tiny'\): fine_tuned_from: no row 'sede' in the registry; did you mean 'seed'\?"),
        (ENTRY + "    fine_tuned_from: tiny\n", r"models\[0\] \(id 'tiny'\): \(entry\): .*fine_tuned_from names the row itself"),
        (SEED + "  - id: blk\n    source: {kind: init, block: bert-post-ln}\n    modality: embeddings\n"
         "    granularity: embedding\n    architecture: transformer\n    role: block\n    family: bert\n"
         "    stands_for: seed\n    relation: relative\n", r"models\[1\] \(id 'blk'\): \(entry\): .*real pretrained weights"),
    ],
)
def test_bad_stands_for_or_fine_tuned_from_names_file_entry_and_field(tmp_path, rows, expected):
    path = write(tmp_path, "models:\n" + rows)
    with pytest.raises(RegistryError, match=expected) as info:
        load_registry(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message


def test_a_model_set_keeps_a_row_whose_seed_it_leaves_out(tmp_path):
    reg = load_registry(write(tmp_path, "models:\n" + SEED + ENTRY + "    stands_for: seed\n    relation: relative\n"))
    kept, left = reg.model_set("tiny")
    assert [e.id for e in kept] == ["tiny"] and [e.id for e in left] == ["seed"]


def test_project_rows_on_real_weights_say_what_they_stand_for():
    """Every row on real pretrained weights (not hub, not built or trained here) names its seed, except those whose
    seed has no row (Gemma-3-270M, MobileNetV2): a seed row is a hub row or a row standing for itself."""
    reg = load_registry(ROOT / "models.yaml")
    real = [e for e in reg if e.source.kind != "hub" and e.trained and not e.miniature]
    assert {e.id for e in real if e.stands_for is None} == {"gemma-3-270m", "mobilenetv2-1.0-int8"}
    assert all(e.stands_for is None for e in reg if not e.trained or e.miniature or e.source.kind == "hub")
    assert (reg.get("whisper-base").stands_for, reg.get("whisper-base").relation) == ("whisper-base", "converted")
    assert (reg.get("resnet-50-1by2-opennsfw").stands_for, reg.get("resnet-50-1by2-opennsfw").relation) == \
        ("resnet-50", "relative")


def test_a_records_reason_renders_its_numbers_from_measured(tmp_path):
    """A reason's numbers are placeholders into the record's measured values, rendered on reading; one that does not
    render is refused with one line naming the entry and the field."""
    record = ("    expected:\n      G.drift-correlation-spearman:\n        verdict: does-not-hold\n"
              "        measured: {p_value: 0.3912, per_model: {a-b.c: 0.25}}\n"
              "        reason: 'rho is weak (p = {p_value:.2f}; {per_model[a-b.c]:.1f})'\n")
    reg = load_registry(write(tmp_path, "models:\n" + ENTRY + record))
    assert reg.get("tiny").expected["G.drift-correlation-spearman"].text == "rho is weak (p = 0.39; 0.2)"
    bad = record.replace("{p_value:.2f}", "{p:.2f}")
    with pytest.raises(RegistryError, match=r"models\[0\] \(id 'tiny'\): expected.G.drift-correlation-spearman: .*"
                                            r"reason: a placeholder does not render"):
        load_registry(write(tmp_path, "models:\n" + ENTRY + bad))


def test_an_underpowered_record_names_what_would_decide_it(tmp_path):
    # (a claim whose tests measure the row: a record of one that does not apply is refused, whatever its fields)
    record = ("    expected:\n      G.drift-correlation-spearman:\n        verdict: underpowered\n"
              "        sizes: {miniature_steps: 512}\n        reason: too short a run\n")
    with pytest.raises(RegistryError, match="decides_at"):
        load_registry(write(tmp_path, "models:\n" + ENTRY + record))
    reg = load_registry(write(tmp_path, "models:\n" + ENTRY + record + "        decides_at: 2048 steps\n"))
    assert reg.get("tiny").expected["G.drift-correlation-spearman"].sizes == {"miniature_steps": 512}
    with pytest.raises(RegistryError, match="sizes names"):
        load_registry(write(tmp_path, "models:\n" + ENTRY + record.replace("miniature_steps", "steps")
                            + "        decides_at: x\n"))


def test_no_number_is_typed_into_a_records_reason():
    """The reasons of models.yaml carry their measured numbers as placeholders: no decimal number (0.29, 1e-4) typed
    outside braces, but the claims' own thresholds (0.05, 0.2, 0.75, ...: rules, not measurements). Whole numbers,
    which name sizes and rules ("512 steps", "75%"), and section numbers (§3.3) may be typed."""
    import re

    from aniso.judge.rules import CONTRAST, EDGE
    from aniso.judge.training_rules import ALIGN_SHARE

    from aniso.metrics import POWER_REQUIRED
    from aniso.registry.catalog import POWER_EFFECT

    # alpha, bell, G §5's share, M's I(W) level, the effect a test's power is computed at and the power it needs
    thresholds = {0.05, CONTRAST, EDGE, 1 - EDGE, ALIGN_SHARE, 0.9, POWER_EFFECT, POWER_REQUIRED}
    reg = load_registry(ROOT / "models.yaml")
    typed = []
    for e in reg:
        for claim_id, x in e.expected.items():
            for text in (x.reason, x.decides_at or ""):
                outside = re.sub(r"\{[^{}]*\}", "", text)
                outside = re.sub(r"§\s*\d+(?:\.\d+)*", "", outside)
                found = [x for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+(?:e-?\d+)?|e-\d+)", outside)
                         if not any(abs(float(x) - t) < 1e-12 for t in thresholds)]
                if found:
                    typed.append(f"{e.id} {claim_id}: {found}")
    assert not typed, "numbers typed into reasons (make them placeholders into measured):\n" + "\n".join(typed)


def test_paper_categories_keep_chemistry_out_of_character_level_natural_language():
    """G §3.1's character/byte-level models read natural language; the chemistry rows read reaction SMILES
    tokenised atom by atom: they are beyond the papers and count for no claim about character-level NLP."""
    reg = load_registry(ROOT / "models.yaml")
    chemistry = {"rxnfp-bert-pretrained", "rxnfp-bert-ft", "rxnmapper-albert", "rxnmapper-albert-wikitext"}
    assert {e.id for e in reg if e.category == "beyond-paper"} == chemistry
    selected = {e.id for e in reg.select(("pretrained", "text", "transformer"), ("char", "byte"),
                                         none_of=("beyond-paper",))}
    assert not selected & chemistry and {"canine-s", "byt5-small"} <= selected


def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    """YAML keeps the last of two equal keys; the registry refuses them, naming the file, the line and the key."""
    with pytest.raises(RegistryError, match=r"models.yaml: not valid YAML at line 4: the key 'source' is given twice"):
        load_registry(write(tmp_path, "models:\n" + ENTRY.replace("    modality:", "    source: {kind: local, path: x}\n    modality:", 1)))


def test_a_yaml_alias_bomb_is_refused_in_one_line_without_expanding_it(tmp_path, capsys):
    """Nine levels of nine aliases inside a record would expand to 387 million nodes: refused at once, naming the
    file, by `aniso run` and by the loader, before anything is built."""
    import time

    from aniso.cli import main
    from aniso.registry.entries import MAX_YAML_NODES, RegistryError, load_registry

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = tmp_path / "models.yaml"
    bomb.write_text("bombs:\n" + "".join(f"  {line}\n" for line in levels) + "models: []\n")
    start = time.perf_counter()
    with pytest.raises(RegistryError, match=rf"models\.yaml: its YAML aliases expand to more than {MAX_YAML_NODES}"):
        load_registry(bomb)
    assert time.perf_counter() - start < 2
    assert main(["run", "all-MiniLM-L6-v2", "--registry", str(bomb)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "aliases expand to more than" in err, err
    recursive = tmp_path / "recursive.yaml"
    recursive.write_text("models: &m [*m]\n")
    with pytest.raises(RegistryError, match="hold themselves"):
        load_registry(recursive)
    ordinary = tmp_path / "anchors.yaml"  # anchors and aliases as the suite's registry uses them stay fine
    ordinary.write_text("tiny: &t {a: 1}\nmodels: []\nother: *t\n")
    with pytest.raises(RegistryError, match="tiny|other"):  # unknown top-level keys, not the limit
        load_registry(ordinary)


def test_a_registry_that_is_empty_or_no_mapping_says_what_a_registry_is(tmp_path):
    for text, holds in (("", "nothing"), ("- a\n- b\n", "a list"), ("just words\n", "a str")):
        path = tmp_path / "models.yaml"
        path.write_text(text)
        with pytest.raises(RegistryError, match=f"models.yaml: a registry is a mapping .*holds {holds}$"):
            load_registry(path)


def test_an_unknown_model_id_is_one_line_with_the_closest_id(tmp_path):
    from aniso.registry.entries import UnknownModel

    path = write(tmp_path, "models:\n" + ENTRY)
    registry = load_registry(path)
    with pytest.raises(KeyError) as info:
        registry.get("tini")
    assert isinstance(info.value, UnknownModel)
    assert str(info.value) == f"no model 'tini' in registry {path}; did you mean 'tiny'?"
    assert str(pytest.raises(KeyError, registry.get, "zzzz").value).endswith("(aniso list models)")


def test_a_registry_nested_past_the_recursion_limit_is_one_line(tmp_path, capsys):
    """20,000 lists inside each other: a RegistryError naming the file (was a RecursionError traceback through
    aniso list, stats, block-sweep, the API and pytest), exit 2 at the command line."""
    from aniso.cli import main

    deep = write(tmp_path, "models:\n  - id: x\n    tags: " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(RegistryError, match=r"models\.yaml: its YAML is nested too deeply to read"):
        load_registry(deep)
    assert main(["list", "models", "--registry", str(deep)]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
