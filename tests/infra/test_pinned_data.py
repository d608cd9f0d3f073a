"""data.dvc pins the real data; the data itself never enters git, and a fetch checks the hash it pins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from probmed.core.errors import FetchError
from probmed.infra.pinned_data import fetch_data, pinned

DVC = str(Path(sys.executable).parent / "dvc")


def test_data_dvc_pins_the_shared_data(repo_root, shared_data):
    md5_dir, source, out = pinned(repo_root / "data.dvc")
    assert md5_dir.endswith(".dir") and out == "data"
    assert (repo_root / source).resolve() == shared_data.resolve()
    assert "data" not in subprocess.run(["git", "ls-files", "data"], cwd=repo_root, capture_output=True,
                                        text=True).stdout  # never data in git


def test_data_dvc_has_no_dependency_for_dvc_to_show(repo_root):
    """An import's dependency (an outside path) would be a column of `dvc exp show`; the pin is a plain output."""
    text = (repo_root / "data.dvc").read_text()
    assert "deps:" not in text and "frozen" not in text and "outs:" in text


def test_a_pin_without_its_source_names_the_field(tmp_path):
    path = tmp_path / "data.dvc"
    path.write_text("outs:\n- md5: abc.dir\n  path: data\n")
    with pytest.raises(FetchError, match=r"data.dvc: field meta.source missing"):
        pinned(path)
    path.write_text("meta:\n  source: elsewhere\n")
    with pytest.raises(FetchError, match=r"field outs\[0\]"):
        pinned(path)


def _sh(*args: str, cwd: Path) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
def test_fetch_copies_the_source_checks_the_hash_and_never_rewrites_the_pin(tmp_path):
    repo, source = tmp_path / "repo", tmp_path / "source"
    (source / "a").mkdir(parents=True)
    (source / "a" / "one.txt").write_text("1\n")
    (source / "two.txt").write_text("2\n")
    repo.mkdir()
    _sh("git", "init", "-q", cwd=repo)
    _sh(DVC, "init", "-q", cwd=repo)
    _sh("cp", "-r", str(source), str(repo / "data"), cwd=repo)
    _sh(DVC, "add", "-q", "data", cwd=repo)  # the pin of this version
    pin = (repo / "data.dvc").read_text() + "meta:\n  source: ../source\n"
    (repo / "data.dvc").write_text(pin)
    _sh("rm", "-rf", "data", ".dvc/cache", cwd=repo)

    done = fetch_data(repo)
    assert done["action"] == "import" and (repo / "data" / "a" / "one.txt").read_text() == "1\n"
    assert (repo / "data.dvc").read_text() == pin
    assert json.loads(_sh(DVC, "status", "data.dvc", "--json", cwd=repo) or "{}") == {}
    assert fetch_data(repo)["action"] == "none"

    (source / "two.txt").write_text("changed\n")
    _sh("rm", "-rf", "data", cwd=repo)
    with pytest.raises(FetchError, match=r"holds version \w+\.dir \(2 files, 10 bytes\), but data.dvc pins \w+\.dir "
                                         r"\(2 files, 4 bytes\)"):
        fetch_data(repo)
    assert (repo / "data.dvc").read_text() == pin
