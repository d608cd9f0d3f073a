"""MkDocs hook: the command reference pages, made from `probmed`'s own parsers when the site is built.

The pages are generated (not files under docs/), so they cannot drift from the
command line; the nav entry "Command reference" gets one page per command.
"""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from probmed.cli import build_parser
from probmed.cli.reference import FOLDER, command_pages

_PAGES: dict[str, str] = {}


def _pages() -> dict[str, str]:
    if not _PAGES:
        _PAGES.update(command_pages(build_parser()))
    return _PAGES


def on_config(config: Any) -> Any:
    """Expand the nav entry that names the reference index into the index and one entry per command."""
    index = f"{FOLDER}/index.md"
    pages = [p for p in _pages() if p != index]

    def expand(items: list) -> list:
        out = []
        for item in items:
            if isinstance(item, dict):
                (title, value), = item.items()
                if value == index:
                    value = [index, *pages]
                elif isinstance(value, list):
                    value = expand(value)
                out.append({title: value})
            else:
                out.append(item)
        return out

    if config.nav:
        config.nav = expand(config.nav)
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages to the site."""
    for path, text in _pages().items():
        files.append(File.generated(config, path, content=text))
    return files
