"""Hypothesis settings for the unit tests: no timing deadlines (performance lives in benchmarks/)."""

from hypothesis import settings

settings.register_profile("aniso", deadline=None, max_examples=60)
settings.load_profile("aniso")
