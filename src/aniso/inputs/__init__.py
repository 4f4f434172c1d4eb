"""Inputs per modality: text corpora (speech and images to come)."""
