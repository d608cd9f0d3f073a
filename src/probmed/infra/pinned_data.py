"""The pinned raw data (data.dvc): read the pin, and fetch exactly that version.

The fetch gets the pinned raw inputs into ``data/`` and the DVC cache: from a
configured DVC remote when there is one (``dvc pull``), else by re-importing
from the recorded source (``dvc update``) or another copy of it, and in every
case checks the result against the hash data.dvc pins.
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


def pinned(dvc_file: Path) -> tuple[str, str, str]:
    """(pinned directory hash, recorded source path, output path) from a data.dvc file."""
    if not dvc_file.is_file():
        raise FetchError(f"{dvc_file} not found")
    spec = OmegaConf.to_container(OmegaConf.load(dvc_file)) or {}
    try:
        out = spec["outs"][0]
        source = spec["deps"][0]["path"]
    except (KeyError, IndexError, TypeError) as exc:
        raise FetchError(f"{dvc_file}: expected one dependency (the source) and one output") from exc
    return str(out["md5"]), str(source), str(out["path"])


def fetch_data(repo: str | Path = ".", dvc_file: str = "data.dvc", source: str | None = None, remote: str | None = None) -> dict[str, Any]:
    """Bring the pinned data into the workspace and cache; returns what was done.

    Order: already present and unchanged -> nothing; a DVC remote (``remote`` or
    the default) -> ``dvc pull``; else import from ``source`` (default: the
    path data.dvc records) and require the pinned hash. data.dvc is never left
    modified: a mismatch restores it and raises.
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
    original = path.read_text(encoding="utf-8")
    src = source or recorded
    if not (repo / src).exists() and not Path(src).exists() and "://" not in src:
        raise FetchError(
            f"data source {src} not found: pass --source PATH (a copy of the data) or configure a DVC remote"
        )
    try:
        if source is None or source == recorded:
            _dvc("update", dvc_file, cwd=repo)
        else:
            _dvc("import-url", "--force", src, out_path, cwd=repo)
        got, _, _ = pinned(path)
    finally:
        restored = path.read_text(encoding="utf-8") != original
        path.write_text(original, encoding="utf-8")
    if got != md5:
        raise FetchError(
            f"data source {src} holds version {got}, but {dvc_file} pins {md5}: "
            "point --source at the pinned copy, `dvc pull` it from a remote, or `dvc update` on purpose"
        )
    if restored:  # the output is the pinned one; only the recorded source path differed
        _dvc("checkout", dvc_file, cwd=repo)
    return {"action": "import", "md5": md5, "source": src}
