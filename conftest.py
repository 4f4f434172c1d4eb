"""Top-level pytest configuration: load the aniso plugin (settings, registry, verdicts, report)."""

pytest_plugins = ["aniso.pytest_plugin"]
