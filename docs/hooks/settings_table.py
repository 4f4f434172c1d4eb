"""MkDocs hook: the settings page's table, made from the settings' own definitions when the site is built
(:func:`aniso.common.settings.settings_table`), in place of the marker ``<!-- aniso:settings-table -->``."""

from __future__ import annotations

MARKER = "<!-- aniso:settings-table -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    from aniso.common.settings import settings_table

    return markdown.replace(MARKER, settings_table())
