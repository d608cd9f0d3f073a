"""MkDocs hook: files at the repository root shown as pages of the site, read each time the site is built.

A relative link out of docs/ fails the strict build, and a copy under docs/ would drift from the file the
repository keeps; so a root file the site's reader needs (SECURITY.md) becomes a generated page holding its
text as committed, named in the nav like any page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

PAGES: dict[str, str] = {"reference/security.md": "SECURITY.md"}
"""Page of the site -> file at the repository root."""


def _root(config: Any) -> Path:
    return Path(config["config_file_path"]).parent


def on_config(config: Any) -> Any:
    """`mkdocs serve` rebuilds when one of the files changes."""
    config["watch"].extend(str(_root(config) / source) for source in PAGES.values())
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add each file's text as its page."""
    for page, source in PAGES.items():
        files.append(File.generated(config, page, content=(_root(config) / source).read_text(encoding="utf-8")))
    return files
