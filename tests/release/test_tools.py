"""The release's describing files checked by the tools that read them: cffconvert and mlcroissant (own venvs)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from probmed.cli import main
from probmed.core.params_schema import Release
from venvs import CFFCONVERT, MLCROISSANT, venv

VERSION = Release().version  # the configured release version (params.yaml release.version)


@pytest.fixture(scope="module")
def folder(small_set, repo_root, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release")
    assert main(["release", str(small_set["questions"]), "--out-dir", str(out), "--image-root", str(small_set["image_root"]),
                 "--audit", str(small_set["passing_audit"]), "--params", str(repo_root / "params.yaml")]) == 0
    return out / "small" / VERSION


def test_the_project_citation_carries_the_package_version(repo_root):
    cff = yaml.safe_load((repo_root / "CITATION.cff").read_text())
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    assert cff["version"] == project["version"] and cff["license"] == project["license"]


@pytest.mark.slow
def test_cffconvert_validates_the_project_and_the_release_citation(repo_root, folder):
    bin_dir = venv(CFFCONVERT)
    for path in (repo_root / "CITATION.cff", folder / "CITATION.cff"):
        proc = subprocess.run([str(bin_dir / "cffconvert"), "--validate", "-i", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{path}: {proc.stdout}{proc.stderr}"


# the last lines leave without the interpreter's teardown: under load mlcroissant's worker threads were still
# being destroyed at exit once in CI ("terminate called without an active exception", SIGABRT) after every
# record had been read and printed; a failure to load still raises before the print
LOAD_RECORDS = """
import json, os, sys
import mlcroissant as mlc
ds = mlc.Dataset(jsonld=sys.argv[1])
out = {"version": ds.metadata.version, "sets": {}}
for rs in ds.metadata.record_sets:
    records = list(ds.records(record_set=rs.name))
    first = records[0]
    out["sets"][rs.name] = {"records": len(records), "qids": sorted(r[rs.name + "/qid"].decode() for r in records),
                            "image_size": list(first[rs.name + "/image"].size)}
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.slow
def test_mlcroissant_loads_every_record_set(folder, small_set):
    bin_dir = venv(MLCROISSANT)
    proc = subprocess.run([str(bin_dir / "python"), "-c", LOAD_RECORDS, "croissant.json"], cwd=folder,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    info = json.loads((folder / "release.json").read_text())
    assert got["version"] == info["version"]
    q = small_set["frame"]
    assert got["sets"]["all"]["qids"] == sorted(q["qid"])
    for name, config in info["configs"].items():
        assert got["sets"][name]["records"] == config["questions"]
        assert all(side > 0 for side in got["sets"][name]["image_size"])
