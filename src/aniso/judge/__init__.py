"""The claims stage (named ``judge`` so that it does not hide the Python API's ``aniso.claims()``): statistics in,
verdicts and results out.

:mod:`.rules` (shared operationalisations of the claims), :mod:`.training_rules` (the training-dynamics claims'
rules), :mod:`.verdicts` (the verdict policy), :mod:`.results` (the typed, versioned ``results.json``). The claim
tests themselves are the repository's ``claims/`` folder; the catalogue of claim ids is :mod:`aniso.registry.catalog`.
"""
