"""data.dvc pins the real data; the data itself never enters git."""

from __future__ import annotations

import subprocess

from probmed.infra.pinned_data import pinned


def test_data_dvc_pins_the_shared_data(repo_root, shared_data):
    md5_dir, source, out = pinned(repo_root / "data.dvc")
    assert md5_dir.endswith(".dir") and out == "data"
    assert (repo_root / source).resolve() == shared_data.resolve()
    assert "data" not in subprocess.run(["git", "ls-files", "data"], cwd=repo_root, capture_output=True,
                                        text=True).stdout  # never data in git
