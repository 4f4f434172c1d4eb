"""The registry stage: what the suite runs, declared as data.

:mod:`.entries` is the schema of ``models.yaml`` (entries, tag selection, model sets, recorded inputs); an entry's
``source:`` is validated by the schema of its source kind, so this stage stands on :mod:`aniso.sources`.
:mod:`.catalog` is the claims catalogue (ids, the statistics each claim reads), which the registry's expected
verdicts are checked against.

Nothing is re-exported here, so that ``import aniso.registry.catalog`` stays free of torch.
"""
