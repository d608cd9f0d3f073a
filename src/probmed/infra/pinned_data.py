"""The pinned raw data (data.dvc): read the pin, and fetch exactly that version.

data.dvc is a plain tracked output: the directory hash of ``data/`` and
nothing else DVC compares. The place a copy of the data is usually found is
kept under ``meta: source`` (DVC ignores ``meta``), not as an import's
dependency: DVC shows every dependency as a column of ``dvc exp show``, and an
outside path (``../shared/data``) there is noise that also reads differently
from inside an experiment's temporary copy of the repository.

The fetch gets the pinned raw inputs into ``data/`` and the DVC cache: from a
configured DVC remote when there is one (``dvc pull``), else by copying a local
copy of the data (``--source``, default the recorded one) and hashing it into
the cache (``dvc add``), and in every case checks the result against the hash
data.dvc pins; data.dvc itself is never rewritten.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from probmed.core.errors import FetchError


def _dvc(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    exe = shutil.which("dvc", path=str(Path(sys.executable).parent)) or "dvc"
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise FetchError(f"`dvc {' '.join(args)}` failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
    return proc


def _spec(dvc_file: Path) -> dict[str, Any]:
    if not dvc_file.is_file():
        raise FetchError(f"{dvc_file} not found")
    spec = OmegaConf.to_container(OmegaConf.load(dvc_file)) or {}
    if not isinstance(spec, dict):
        raise FetchError(f"{dvc_file}: expected a mapping with one output")
    return spec


def _out(dvc_file: Path) -> dict[str, Any]:
    """The one output of a .dvc file (md5, nfiles, path); FetchError names the file and the field."""
    spec = _spec(dvc_file)
    try:
        out = spec["outs"][0]
        out["md5"], out["path"]
    except (KeyError, IndexError, TypeError) as exc:
        raise FetchError(f"{dvc_file}: field outs[0] (md5, path) missing: expected one output") from exc
    return out


def pinned(dvc_file: Path) -> tuple[str, str, str]:
    """(pinned directory hash, recorded source path, output path) from a data.dvc file."""
    out = _out(dvc_file)
    meta = _spec(dvc_file).get("meta") or {}
    source = meta.get("source") if isinstance(meta, dict) else None
    if not isinstance(source, str) or not source:
        raise FetchError(f"{dvc_file}: field meta.source missing: expected the path of a copy of the data")
    return str(out["md5"]), source, str(out["path"])


def fetch_data(repo: str | Path = ".", dvc_file: str = "data.dvc", source: str | None = None, remote: str | None = None) -> dict[str, Any]:
    """Bring the pinned data into the workspace and cache; returns what was done.

    Order: already present and unchanged -> nothing; a DVC remote (``remote`` or
    the default) -> ``dvc pull``; else copy ``source`` (default: the path
    data.dvc records) to the output and require the pinned hash. data.dvc is
    never left modified: a mismatch restores it and raises, naming both.
    """
    repo = Path(repo).resolve()
    path = repo / dvc_file
    md5, recorded, out_path = pinned(path)
    if (repo / out_path).exists():
        status = _dvc("status", dvc_file, "--json", cwd=repo, check=False)
        if status.returncode == 0 and json.loads(status.stdout or "{}") == {}:
            return {"action": "none", "md5": md5, "reason": "already present and unchanged"}
    default_remote = _dvc("config", "core.remote", cwd=repo, check=False).stdout.strip()
    if remote or (default_remote and source is None):
        args = ["pull", dvc_file] + (["--remote", remote] if remote else [])
        _dvc(*args, cwd=repo)
        return {"action": "pull", "md5": md5, "remote": remote or default_remote}
    src = source or recorded
    src_dir = Path(src) if Path(src).is_absolute() else repo / src
    if not src_dir.is_dir():
        raise FetchError(
            f"data source {src} not found: pass --source PATH (a copy of the data) or configure a DVC remote"
        )
    got = _copy_and_hash(src_dir, repo, path, out_path)
    if got["md5"] != md5:
        pin = _out(path)
        raise FetchError(
            f"data source {src} holds version {got['md5']} ({got.get('nfiles')} files, {got.get('size')} bytes), "
            f"but {dvc_file} pins {md5} ({pin.get('nfiles')} files, {pin.get('size')} bytes): point --source at "
            f"the pinned copy or `dvc pull` it from a remote; {out_path}/ now holds the unpinned copy"
        )
    return {"action": "import", "md5": md5, "source": src}


def _copy_and_hash(src_dir: Path, repo: Path, path: Path, out_path: str) -> dict[str, Any]:
    """Copy `src_dir` to the output and hash it into the DVC cache (`dvc add`); the output entry it got.

    `dvc add` rewrites the .dvc file, so its text is put back whatever happens:
    the pin changes only on purpose, by hand."""
    target = repo / out_path
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(src_dir, target)
    original = path.read_text(encoding="utf-8")
    try:
        _dvc("add", out_path, cwd=repo)
        return _out(path)
    finally:
        path.write_text(original, encoding="utf-8")
