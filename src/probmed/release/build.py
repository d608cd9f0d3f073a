"""`probmed release`: one question set -> one versioned, citable folder ``<out>/<set>/<version>/``.

Steps: read the set (strictly validated) and its audit; refuse a set whose audit
gate fails (or that has no audit) unless ``allow_unaudited``; write the content
(Parquet partitions with embedded images, images/, test.json) into a staging
folder; hash it; write what describes it (README.md card, croissant.json,
CITATION.cff, release.json, SHA256SUMS); rename the folder into place
(probmed.release.publish: atomic, a same-content re-run changes nothing, other
content under an existing version is refused).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from probmed.core.errors import ProbmedError, RecordError
from probmed.core.names import checked_name
from probmed.core.params_schema import Audit
from probmed.core.release_format import read_questions_any, write_question_file
from probmed.infra.io import folder_for, write_json_atomic, write_text_atomic
from probmed.release import publish
from probmed.release.images import copy_images, image_sources
from probmed.release.manifest import ConfigInfo, Release
from probmed.release.shards import ShardInfo, write_shard
from probmed.release.table import CONFIG_DESCRIPTIONS, CONFIGS, config_partitions, partition_masks, text_rows


class AuditGateError(ProbmedError):
    """The set failed its audit gate (or has none) and --allow-unaudited was not given."""


@dataclass(frozen=True)
class ReleaseOptions:
    """What one release reads and where it goes (the CLI fills it from arguments and params.release)."""

    questions: Path
    semver: str
    out_dir: Path
    image_root: Path
    max_oracle_margin: float
    prompt: str  # the vanilla prompt template (settings.vanilla) the harness tasks show
    audit: Path | None = None  # audit.json or its folder; default: <questions without suffix>.audit/
    name: str | None = None  # default: the question file's stem
    allow_unaudited: bool = False
    ceiling_units: tuple[str, ...] = tuple(Audit().ceiling_units)  # where the gate checks the blind ceiling
    url: str | None = None  # release.url: where it is published (the citation's URL or DOI)
    truth_reviews: tuple[Path, ...] = ()  # release.truth_reviews: judged by-eye sheets whose rates the card states


@dataclass(frozen=True)
class ReleaseResult:
    """Where the release is, what it holds, and whether this run wrote it."""

    folder: Path
    release: Release
    created: bool  # False: the same content was already released under this version (its description refreshed)


def audit_path(opts: ReleaseOptions) -> Path:
    """The audit.json a release reads: the one given, else the gate's audit beside the set."""
    path = opts.audit if opts.audit is not None else opts.questions.with_suffix(".audit")
    return path / "audit.json" if path.suffix != ".json" else path


def load_audit(path: Path) -> dict[str, Any] | None:
    """The set's audit, or None when there is none; RecordError naming a file that is not an audit."""
    if not path.is_file():
        return None
    try:
        audit = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RecordError(f"audit {path}: not readable JSON ({exc})") from None
    if not isinstance(audit, dict) or not all(k in audit for k in ("oracle", "lint", "contradictions")):
        raise RecordError(f"audit {path}: missing field(s) 'oracle', 'lint' or 'contradictions' (not a probmed audit)")
    return audit


def check_gate(opts: ReleaseOptions, audit: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """(the gate on this audit, why the release is unaudited or None); AuditGateError unless allowed."""
    from probmed.benchmark.audit import gate

    verdict: dict[str, Any] | None = None
    reason: str | None = None
    if audit is None:
        reason = f"the set has no audit ({audit_path(opts)} not found; run probmed audit)"
    else:
        verdict = gate(audit, opts.max_oracle_margin, ceiling_units=opts.ceiling_units).to_json()
        if not verdict["passed"]:
            reason = "the set failed its audit gate: " + "; ".join(verdict["failures"])
    if reason and not opts.allow_unaudited:
        raise AuditGateError(f"release of {opts.questions} refused: {reason} (--allow-unaudited releases it anyway, "
                             "stated on the card's first line)")
    return verdict, reason


def write_content(questions: pd.DataFrame, folder: Path, image_root: Path) -> tuple[list[ConfigInfo], list[str], dict[str, Path]]:
    """images/, test.json and the Parquet partitions into ``folder``; (configs written, configs left out, images)."""
    sources = image_sources(questions, image_root)
    image_files = copy_images(sources, folder)
    image_bytes = {i: (folder / rel).read_bytes() for i, rel in image_files.items()}
    image_names = {i: rel.rsplit("/", 1)[-1] for i, rel in image_files.items()}
    original = questions.assign(image_path=questions["image_id"].astype(str).map(image_files))
    write_question_file(original, folder / "test.json", with_category=bool(questions["qa_type"].str.startswith("vqarad").any()))
    rows = text_rows(questions)
    masks = partition_masks(questions)
    shards: dict[Any, ShardInfo] = {p: write_shard(rows[m], image_bytes, image_names, folder, p.path) for p, m in masks.items()}
    configs = []
    for name, parts in config_partitions(list(masks)).items():
        mask = pd.concat([masks[p] for p in parts], axis=1).any(axis=1)
        configs.append(ConfigInfo(name, CONFIG_DESCRIPTIONS[name], CONFIGS[name][1], [shards[p] for p in parts],
                                  questions=int(mask.sum()), images=int(questions.loc[mask, "image_id"].nunique())))
    omitted = [n for n in CONFIGS if n not in {c.name for c in configs}]
    return configs, omitted, {i: folder / rel for i, rel in image_files.items()}


def describe(release: Release, folder: Path, images: dict[str, Path], prompt: str) -> None:
    """What describes the content: SHA256SUMS, README.md, croissant.json, CITATION.cff, release.json, harness/."""
    from probmed.release.card import bibtex, card_text
    from probmed.release.cff import citation_cff
    from probmed.release.croissant import croissant
    from probmed.release.harness.files import write_harness

    write_harness(folder, release.questions, images, release.name, release.version, prompt,
                  {c.name: [s.path for s in c.shards] for c in release.configs})

    write_text_atomic(publish.manifest_text(release.files), folder / "SHA256SUMS")
    write_text_atomic(card_text(release), folder / "README.md")
    write_json_atomic(croissant(release, bibtex(release)), folder / "croissant.json")
    write_text_atomic(citation_cff(release), folder / "CITATION.cff")
    write_json_atomic(release.to_json(), folder / "release.json")


def release_name(opts: ReleaseOptions) -> str:
    """The set's name in the release, a folder name under ``out_dir``: checked before anything is read or written."""
    if opts.name is not None:
        return checked_name(opts.name, "--name")
    return checked_name(opts.questions.stem, f"the set's name (the stem of {opts.questions}; --name gives another)")


def truth_review_rates(sheets: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    """Each judged truth sheet -> its overall counts (true / doubtful / false, questions, images)."""
    from probmed.benchmark.review import read_truth_sheet, truth_rates

    out = {}
    for sheet in sheets:
        rates = truth_rates(read_truth_sheet(sheet))
        out[sheet.as_posix()] = {**rates["overall"], "images": rates["images"]}
    return out


def build_release(opts: ReleaseOptions) -> ReleaseResult:
    """Release one question set (module docstring); nothing is left under the version's name unless complete, and
    nothing at all when it fails (no folder it made, no staging folder)."""
    name = release_name(opts)
    questions = read_questions_any(opts.questions)
    if questions.empty:
        raise RecordError(f"{opts.questions}: no questions to release")
    audit = load_audit(audit_path(opts))
    verdict, unaudited = check_gate(opts, audit)
    with folder_for(opts.out_dir / name) as parent, publish.version_lock(opts.out_dir, name, opts.semver):
        staging = publish.staging_folder(parent, opts.semver)
        try:
            configs, omitted, images = write_content(questions, staging, opts.image_root)
            files = publish.content_manifest(staging)
            digest = publish.content_hash(files)
            release = Release(name=name, semver=opts.semver, digest=digest,
                              version=publish.version_string(opts.semver, digest), questions=questions,
                              configs=configs, files=files, file_sizes={p: (staging / p).stat().st_size for p in files},
                              audit=audit, gate=verdict, unaudited_reason=unaudited, omitted_configs=omitted,
                              url=opts.url, truth_reviews=truth_review_rates(opts.truth_reviews))
            describe(release, staging, images, opts.prompt)
        except BaseException:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
            raise
        created = publish.publish(staging, parent / opts.semver, digest)
    return ReleaseResult(folder=parent / opts.semver, release=release, created=created)
