"""What a release is, in one record every writer (card, Croissant, CITATION.cff, release.json) reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from probmed.release.shards import ShardInfo


@dataclass
class ConfigInfo:
    """One config: its files and what they hold."""

    name: str
    description: str
    files_glob: str
    shards: list[ShardInfo]
    questions: int
    images: int

    @property
    def arrow_bytes(self) -> int:
        return sum(s.arrow_bytes for s in self.shards)


@dataclass
class Release:
    """One release of one question set, as its describing files state it."""

    name: str  # the question set (file stem), e.g. probmed-full
    semver: str
    digest: str  # sha256 of the content manifest (probmed.release.publish)
    version: str  # semver + the digest's first digits
    questions: pd.DataFrame  # the full question table the release was made from (labels included)
    configs: list[ConfigInfo]
    files: dict[str, str]  # every content file -> sha256
    file_sizes: dict[str, int]
    audit: dict[str, Any] | None  # the set's audit (audit.json), if it has one
    gate: dict[str, Any] | None  # passed / failures of the audit gate on that audit
    unaudited_reason: str | None = None  # set when released with --allow-unaudited despite the gate
    omitted_configs: list[str] = field(default_factory=list)
    url: str | None = None  # where it is published (release.url); None: the card shows a placeholder
    truth_reviews: dict[str, dict[str, Any]] = field(default_factory=dict)  # sheet -> its by-eye counts

    @property
    def images(self) -> int:
        return int(self.questions["image_id"].nunique())

    def to_json(self) -> dict[str, Any]:
        """release.json: the machine-readable summary of the folder."""
        return {
            "name": self.name, "version": self.version, "semantic_version": self.semver, "content_sha256": self.digest,
            "questions": int(len(self.questions)), "images": self.images,
            "configs": {c.name: {"files": [s.path for s in c.shards], "questions": c.questions, "images": c.images}
                        for c in self.configs},
            "omitted_configs": self.omitted_configs,
            "audit_gate": self.gate, "unaudited": self.unaudited_reason,
            "files": self.files,
        }
