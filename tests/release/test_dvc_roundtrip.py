"""A release as a DVC stage output: dvc repro, push to a local remote, fresh clone, pull of the tag, same bytes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from probmed.core.params_schema import Release

VERSION = Release().version  # the configured release version (params.yaml release.version)

BIN = Path(sys.executable).parent


def sh(*args: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_project_stage_releases_the_audited_full_set_after_the_audit(repo_root):
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    stage, audit = stages["release"], stages["audit"]
    assert "probmed release build/questions/probmed-full.parquet" in stage["cmd"]
    assert set(audit["outs"]) & set(stage["deps"]) == {"build/audit/probmed-full"}  # runs after the audit
    assert stage["outs"] == [{"build/release/probmed-full": {"persist": True}}]
    assert "release.version" in stage["params"]


@pytest.mark.slow
def test_push_fresh_clone_and_pull_give_the_same_folder(small_set, repo_root, tmp_path):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(repo_root / "src"),
           "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    repo, remote, clone = tmp_path / "repo", tmp_path / "remote", tmp_path / "clone"
    (repo / "sets" / "passing").mkdir(parents=True)
    shutil.copy(small_set["questions"], repo / "sets" / "small.parquet")
    shutil.copy(small_set["passing_audit"], repo / "sets" / "passing" / "audit.json")
    shutil.copy(repo_root / "params.yaml", repo / "params.yaml")
    shutil.copy(repo_root / ".dvcignore", repo / ".dvcignore")
    shutil.copytree(repo_root / "review", repo / "review")  # the by-eye sheets the card states (release.truth_reviews)
    stage = {"cmd": f"probmed release sets/small.parquet --audit sets/passing --out-dir build/release "
                    f"--image-root {small_set['image_root']}",
             "deps": ["sets/small.parquet", "sets/passing"], "params": ["release.version"],
             "outs": [{"build/release/small": {"persist": True}}]}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"release": stage}}, sort_keys=False))
    sh("git", "init", "-q", cwd=repo, env=env)
    sh(str(BIN / "dvc"), "init", "-q", cwd=repo, env=env)
    sh(str(BIN / "dvc"), "remote", "add", "-d", "local", str(remote), cwd=repo, env=env)
    sh(str(BIN / "dvc"), "repro", cwd=repo, env=env)
    sh("git", "add", "-A", cwd=repo, env=env)
    sh("git", "commit", "-qm", "release small 1.0.0", cwd=repo, env=env)
    sh("git", "tag", "small-1.0.0", cwd=repo, env=env)
    sh(str(BIN / "dvc"), "push", cwd=repo, env=env)
    released = repo / "build" / "release" / "small" / VERSION
    sh("git", "clone", "-q", "--branch", "small-1.0.0", str(repo), str(clone), cwd=tmp_path, env=env)
    assert not (clone / "build" / "release" / "small").exists()  # git holds only the pointers
    sh(str(BIN / "dvc"), "pull", cwd=clone, env=env)
    pulled = clone / "build" / "release" / "small" / VERSION
    assert tree(pulled) == tree(released) and len(tree(pulled)) > 20
    status = sh(str(BIN / "dvc"), "status", cwd=clone, env=env)
    assert "up to date" in status.lower()

    import datasets

    ds = datasets.load_dataset(str(pulled), "commercial", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(ds) == int((small_set["frame"]["licence"] != "CC BY-NC 4.0").sum()) and ds[0]["image"].size[0] > 0
