"""The documentation site builds in strict mode, a broken link fails it, and every command has its generated page."""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from probmed.cli import commands


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=root,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(repo_root, tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    proc = _build(repo_root, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


def test_the_site_builds_strict_with_a_page_per_command(site):
    assert (site / "index.html").is_file() and (site / "start" / "own-model" / "index.html").is_file()
    for command in commands():
        page = site / "reference" / "commands" / command / "index.html"
        assert page.is_file(), command
        assert f"probmed {command}" in page.read_text(encoding="utf-8")
    predict = (site / "reference" / "commands" / "predict" / "index.html").read_text(encoding="utf-8")
    assert "--score-dir" in predict and "--shard" in predict  # read off the parser, options included


def test_a_broken_link_or_a_page_left_out_of_the_nav_fails_the_build(repo_root, tmp_path):
    for name in ("mkdocs.yml", "docs", "src", "SECURITY.md"):  # what the site is built from
        (shutil.copytree if (repo_root / name).is_dir() else shutil.copy)(repo_root / name, tmp_path / name)
    page = tmp_path / "docs" / "evaluate" / "compare.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\nSee [nowhere](no-such-page.md).\n", encoding="utf-8")
    broken = _build(tmp_path, tmp_path / "site")
    assert broken.returncode != 0 and "no-such-page.md" in broken.stderr
    page.write_text(text, encoding="utf-8")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    orphan = _build(tmp_path, tmp_path / "site")
    assert orphan.returncode != 0 and "orphan.md" in orphan.stderr


def test_security_md_is_the_reference_page_security(site, repo_root):
    """SECURITY.md stays at the root (where a repository's readers look for it) and is the site's Reference >
    Security page as committed (docs/_hooks/repository_pages.py): a link out of docs/ would fail the strict build."""
    page = (site / "reference" / "security" / "index.html").read_text(encoding="utf-8")
    headings = [line.removeprefix("## ") for line in (repo_root / "SECURITY.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")]
    assert len(headings) >= 8 and all(html.escape(h, quote=False) in page for h in headings), headings
