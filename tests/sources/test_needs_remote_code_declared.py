"""A `local` row declaring ``needs_remote_code: true`` on a folder whose config.json names no code of its own (no
``auto_map``) was listed as "missing: needs custom code from its folder", its weights there and needing none. The row
is refused, naming the folder's config.json and what to remove."""

from __future__ import annotations

from aniso.cli import main


def test_needs_remote_code_on_a_folder_without_code_of_its_own(clean_env, tiny_bert_dir, capsys):
    registry = clean_env / "r.yaml"
    registry.write_text(f"models:\n- id: mb\n  source: {{kind: local, path: {tiny_bert_dir}}}\n  modality: text\n"
                        "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n"
                        "  needs_remote_code: true\n")
    said = (f"mb: needs_remote_code: true, but {tiny_bert_dir / 'config.json'} names no code of its own (no "
            "auto_map): transformers builds it with its own classes; remove needs_remote_code (and trust_remote_code) "
            "from the row")
    assert main(["stats", "mb", "--registry", str(registry), "--n-sequences", "8"]) == 2
    assert said in capsys.readouterr().err
    assert main(["list", "models", "--registry", str(registry)]) == 0
    out = capsys.readouterr().out
    assert "local: refused: needs_remote_code" in out and "local: missing" not in out, out
