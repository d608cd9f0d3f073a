"""A release's identity (its content hash) and its atomic appearance under its version.

A release is written whole into a hidden staging folder beside its final place
(``.<version>.<random>.tmp``, ignored by git and DVC) and renamed onto
``<set>/<version>/`` only when complete, so a killed release leaves the previous
versions as they were and no half folder under a version name. One process at a
time releases a version (:func:`version_lock`, a lock file beside the set's
folder): a second release of it waits, then finds the version written (the
same content: nothing to do; other content: refused), and a release clears only
the staging folders its own version's killed runs left, never a running one's. The content
hash covers the data (Parquet files, images, test.json), not the card, Croissant
or CITATION.cff that describe it and carry the version; a version that exists
with other content is refused (bump ``release.version``); one that exists with
the same content keeps its data files and gets the new describing files (each
replaced atomically), so a better card never needs a new version.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from pathlib import Path

from probmed.core.errors import ProbmedError
from probmed.infra.filelock import FileLock
from probmed.infra.io import TEMP_SUFFIX

CONTENT_DIRS: tuple[str, ...] = ("data", "images")
CONTENT_FILES: tuple[str, ...] = ("test.json",)
HASH_DIGITS = 12  # of the content hash, in the version string (1.0.0+<12 hex digits>)


class ReleaseExistsError(ProbmedError):
    """The version already exists with other content."""


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in blocks (images and Parquet files can be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_manifest(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every content file of a release folder, sorted by path."""
    paths = [folder / name for name in CONTENT_FILES if (folder / name).is_file()]
    for name in CONTENT_DIRS:
        paths += [p for p in (folder / name).rglob("*") if p.is_file()]
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(paths)}


def content_hash(manifest: dict[str, str]) -> str:
    """sha256 of the manifest in `sha256sum` format (``<sha256>  <path>`` lines): checkable with standard tools."""
    return hashlib.sha256(manifest_text(manifest).encode("utf-8")).hexdigest()


def manifest_text(manifest: dict[str, str]) -> str:
    """SHA256SUMS: one ``<sha256>  <path>`` line per content file."""
    return "".join(f"{sha}  {rel}\n" for rel, sha in sorted(manifest.items()))


def version_string(semver: str, digest: str) -> str:
    """The cited version: the semantic version with the content hash as SemVer build metadata."""
    return f"{semver}+{digest[:HASH_DIGITS]}"


def version_lock(out_dir: Path, name: str, version: str) -> FileLock:
    """The lock one release of ``<out_dir>/<name>/<version>`` holds (the kernel drops it when its holder dies);
    a second release waits for it, saying which process it waits for."""
    return FileLock(out_dir / f".{name}@{version}.release.lock", f"release {out_dir / name / version}", wait_s=None,
                    on_wait=lambda msg: print(f"probmed release: {msg}", file=sys.stderr, flush=True))


def staging_folder(parent: Path, version: str) -> Path:
    """A fresh hidden folder beside ``parent/version``; the ones a killed release of this version left are removed
    first (under the version's lock: no other process is writing them)."""
    parent.mkdir(parents=True, exist_ok=True)
    own = re.compile(rf"^{re.escape(f'.{version}.')}[0-9a-f]{{8}}{re.escape(TEMP_SUFFIX)}$")
    for stale in parent.iterdir():
        if stale.is_dir() and own.match(stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    staging = parent / f".{version}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
    staging.mkdir()
    return staging


def publish(staging: Path, target: Path, digest: str) -> bool:
    """Rename ``staging`` onto ``target``; False when target holds the same content already (then only the
    describing files, everything outside the content, are replaced). ReleaseExistsError when ``target`` exists
    with other content. ``staging`` is gone afterwards either way.
    """
    try:
        if not target.exists():
            os.rename(staging, target)
            return True
        existing = content_hash(content_manifest(target))
        if existing != digest:
            raise ReleaseExistsError(
                f"release {target} exists with other content (content hash {existing[:HASH_DIGITS]}, this one "
                f"{digest[:HASH_DIGITS]}); bump release.version (e.g. release.version=X.Y.Z) or remove {target}"
            )
        _refresh_description(staging, target)
        return False
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _refresh_description(staging: Path, target: Path) -> None:
    """Move everything outside the content from ``staging`` into ``target`` (a file atomically, a folder whole)."""
    for path in staging.iterdir():
        if path.name in CONTENT_FILES or path.name in CONTENT_DIRS:
            continue
        if path.is_file():
            os.replace(path, target / path.name)
            continue
        old = target / f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
        if (target / path.name).exists():
            os.rename(target / path.name, old)
        os.rename(path, target / path.name)
        shutil.rmtree(old, ignore_errors=True)
