"""Registry text the registry tests share: one valid row (a local BERT folder that need not exist)."""

ENTRY = """\
  - id: tiny
    source: {kind: local, path: ./tiny}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""
