"""What every stage uses, and which knows no stage: settings and run profiles (:mod:`.settings`), devices
(:mod:`.devices`), files written atomically and hashed (:mod:`.files`), library versions and cache keys
(:mod:`.versions`), progress bars (:mod:`.progress`) and the strict pydantic base of every schema (:mod:`.schema`).

The bottom layer of the package (see ``docs/architecture.md``): it imports nothing else from aniso.
"""
