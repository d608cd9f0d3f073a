"""The score result: one typed object that the scorer returns, ``write_run`` writes and every reader loads.

After inspect_ai's ``log/_log.py`` (``EvalResults`` / ``EvalScore`` / ``EvalMetric``):
the structure of a scored run is typed (:class:`ScoreReport`: :class:`ScoreMeta`,
the scores as a :class:`ScoreSection`, the random baseline as another, the
procedural diagnosis, :class:`SubsetScore` rows, :class:`KnownAbsent`), and each
block of metrics is a mapping of metric name to value in the scorer's order
(its keys are listed in probmed.scoring.metrics), as ``EvalScore.metrics`` is.
``metrics.json`` is :meth:`ScoreReport.to_dict`; readers never walk it by key:

* :meth:`ScoreReport.load` / :meth:`ScoreReport.from_dict` check the structure
  (an object with ``by_category``; known categories; metric leaves that are
  numbers or null) and raise :class:`ScoresError` naming the file and key;
* :meth:`ScoreSection.value` is a number or NaN (missing, null, not a number),
  never 0 by accident; :func:`number` the same with None;
* :attr:`ScoreSection.categories` / :attr:`ScoreSection.image_types` iterate what
  the run has; :meth:`ScoreSection.blocks` every (image type or ``all``, category, metrics) block;
* :meth:`ScoreReport.leaves` flattens a section to ``{"a.b.c": leaf}`` (core.config.flatten).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from probmed.core.categories import CATEGORIES
from probmed.core.config import flatten
from probmed.core.errors import ScoresError

ALL_IMAGE_TYPES = "all"  # the image-type label of the run-wide blocks (``by_category``)
_SECTIONS = ("meta", "overall", "by_category", "by_image_type", "random_baseline", "procedural")

Metrics = Mapping[str, Any]  # metric name -> number or null (overall also: num_original_weighting {category: int})


def number(value: Any) -> float | None:
    """A finite int/float as float; None for anything else (null, bool, text, NaN, inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _check_categories(blocks: Any, where: str) -> dict[str, dict[str, Any]]:
    """``{category: {metric: number | null | {..}}}`` with known categories."""
    if not isinstance(blocks, Mapping):
        raise ScoresError(f"{where}: expected an object of categories, got {type(blocks).__name__}")
    for name, block in blocks.items():
        if name not in CATEGORIES:
            raise ScoresError(f"{where}.{name}: unknown category (known: {', '.join(CATEGORIES)})")
        if not isinstance(block, Mapping):
            raise ScoresError(f"{where}.{name}: expected an object of metrics, got {type(block).__name__}")
        for key, value in flatten(block).items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ScoresError(f"{where}.{name}.{key}: expected a number or null, got {value!r}")
    return {name: dict(block) for name, block in blocks.items()}


def _check_image_types(types: Any, where: str) -> dict[str, dict[str, dict[str, Any]]]:
    if not isinstance(types, Mapping):
        raise ScoresError(f"{where}: expected an object of image types, got {type(types).__name__}")
    return {name: _check_categories(blocks, f"{where}.{name}") for name, blocks in types.items()}


@dataclass(frozen=True)
class ScoreSection:
    """Scores of one question set: overall, per category and (when scored so) per image type."""

    overall: Metrics = field(default_factory=dict)
    by_category: Mapping[str, Metrics] = field(default_factory=dict)
    by_image_type: Mapping[str, Mapping[str, Metrics]] | None = None  # None: not scored per image type

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> "ScoreSection":
        types = data.get("by_image_type")
        return cls(dict(data.get("overall") or {}), _check_categories(data.get("by_category") or {}, f"{where}by_category"),
                   None if types is None else _check_image_types(types, f"{where}by_image_type"))

    def to_dict(self, overall_first: bool = True) -> dict[str, Any]:
        """The section as metrics.json holds it (the run's own scores put ``overall`` first, its baselines last)."""
        parts = {"by_category": dict(self.by_category)}
        out = {"overall": dict(self.overall), **parts} if overall_first else {**parts, "overall": dict(self.overall)}
        if self.by_image_type is not None:
            out["by_image_type"] = dict(self.by_image_type)
        return out

    @property
    def categories(self) -> list[str]:
        """The categories this run has, in the order of its metrics file."""
        return self.categories_of(None)

    def categories_of(self, image_type: str | None) -> list[str]:
        """The categories the run has within an image type (run-wide for None), in file order."""
        if image_type is None:
            return list(self.by_category)
        return list((self.by_image_type or {}).get(image_type) or {})

    @property
    def image_types(self) -> list[str]:
        """The image types this run has, in the order of its metrics file (the scorer sorts them)."""
        return list(self.by_image_type or {})

    def category(self, name: str, image_type: str | None = None) -> Metrics:
        """One category's metrics, run-wide or within an image type ({} when the run has none)."""
        if image_type is None:
            return self.by_category.get(name) or {}
        return ((self.by_image_type or {}).get(image_type) or {}).get(name) or {}

    def blocks(self) -> Iterator[tuple[str, str, Metrics]]:
        """(image type or ``all``, category, metrics) for every block, run-wide first."""
        for name in self.categories:
            yield ALL_IMAGE_TYPES, name, self.category(name)
        for image_type in self.image_types:
            for name in self.categories_of(image_type):
                yield image_type, name, self.category(name, image_type)

    def value(self, category: str, key: str, image_type: str | None = None) -> float:
        """A category metric as a float, NaN where the run has none (never 0)."""
        found = self.number(category, key, image_type)
        return math.nan if found is None else found

    def number(self, category: str, key: str, image_type: str | None = None) -> float | None:
        """A category metric as a float, None where the run has none (never 0)."""
        return number(self.category(category, image_type).get(key))

    def overall_value(self, key: str) -> float:
        found = number(self.overall.get(key))
        return math.nan if found is None else found


@dataclass(frozen=True)
class ScoreMeta:
    """What was scored and how (metrics.json ``meta``)."""

    model: str | None = None
    setting: str | None = None
    question_set: str | None = None  # "vqarad" (pairs scored one by one) or "probmed"
    n_questions: int | None = None
    n_predictions: int | None = None
    extra_predictions: int | None = None
    n_failed: int | None = None
    n_missing: int | None = None
    answers_sha256: str | None = None  # equal digests: identical answers to every question
    bootstrap_resamples: int | None = None
    ci_level: float | None = None
    seed: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> "ScoreMeta":
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ScoresError(f"{where}meta: unknown key(s) {unknown}")
        return cls(**data)


@dataclass(frozen=True)
class SubsetScore:
    """One row of the subset robustness (probmed.scoring.robustness): a seeded image subset's accuracy."""

    fraction: float
    n_images: int
    n_questions: int
    accuracy_adv_pairs_original_weighting: float | None
    accuracy_adv_pairs_question_weighting: float | None
    averaged_accuracy: float | None


@dataclass(frozen=True)
class KnownAbsent:
    """The scores on the questions whose every "no" rests on evidence (probmed.scoring.evidence)."""

    n_questions: int
    n_dropped: int
    scores: ScoreSection

    def to_dict(self) -> dict[str, Any]:
        return {"n_questions": self.n_questions, "n_dropped": self.n_dropped, **self.scores.to_dict(overall_first=False)}


@dataclass(frozen=True)
class ScoreReport(ScoreSection):
    """One run's scores (metrics.json, typed) and where they came from."""

    meta: ScoreMeta | None = None
    baseline: ScoreSection | None = None  # the exact random-choice baseline (metrics.json ``random_baseline``)
    procedural: Mapping[str, Metrics] = field(default_factory=dict)  # stage -> metrics (probmed.scoring.procedural)
    subset_robustness: list[SubsetScore] | None = None
    known_absent: KnownAbsent | None = None
    path: Path | None = field(default=None, compare=False)

    @classmethod
    def load(cls, path: str | Path) -> "ScoreReport":
        path = Path(path)
        if not path.is_file():
            raise ScoresError(f"metrics file {path} not found (run `probmed score` first)")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ScoresError(f"metrics file {path}: not valid JSON ({exc})") from None
        return cls.from_dict(data, path)

    @classmethod
    def from_dict(cls, data: Any, path: str | Path | None = None) -> "ScoreReport":
        """Validate a metrics dict (the shape :meth:`to_dict` writes); ScoresError names the key."""
        where = f"metrics file {path}: " if path is not None else "metrics: "
        if not isinstance(data, Mapping) or "by_category" not in data:
            raise ScoresError(f"{where}expected an object with key 'by_category'")
        for section in _SECTIONS:
            if data.get(section) is not None and not isinstance(data[section], Mapping):
                raise ScoresError(f"{where}'{section}' must be an object, got {type(data[section]).__name__}")
        scores = ScoreSection.from_dict(data, where)
        baseline = data.get("random_baseline")
        rows = data.get("subset_robustness")
        if rows is not None and not isinstance(rows, list):
            raise ScoresError(f"{where}'subset_robustness' must be a list")
        known = data.get("known_absent")
        return cls(
            scores.overall, scores.by_category, scores.by_image_type,
            meta=None if data.get("meta") is None else ScoreMeta.from_dict(data["meta"], where),
            baseline=None if baseline is None else ScoreSection.from_dict(baseline, f"{where}random_baseline."),
            procedural=dict(data.get("procedural") or {}),
            subset_robustness=None if rows is None else [SubsetScore(**row) for row in rows],
            known_absent=None if not known else KnownAbsent(known["n_questions"], known["n_dropped"],
                                                            ScoreSection.from_dict(known, f"{where}known_absent.")),
            path=Path(path) if path is not None else None,
        )

    def to_dict(self, overall_first: bool = True) -> dict[str, Any]:
        """metrics.json: the scores, then the baseline and analyses (the shape probmed.scoring.metrics documents)."""
        out: dict[str, Any] = {} if self.meta is None else {"meta": dataclasses.asdict(self.meta)}
        out.update(ScoreSection(self.overall, self.by_category, self.by_image_type).to_dict(overall_first))
        if self.baseline is not None:
            out["random_baseline"] = self.baseline.to_dict(overall_first=False)
        out["procedural"] = dict(self.procedural)
        if self.subset_robustness is not None:
            out["subset_robustness"] = [dataclasses.asdict(row) for row in self.subset_robustness]
        out["known_absent"] = None if self.known_absent is None else self.known_absent.to_dict()
        return out

    @property
    def random_baseline(self) -> ScoreSection | None:
        """The exact random-choice baseline on the same questions; None when it has no category."""
        return self.baseline if self.baseline is not None and self.baseline.by_category else None

    def leaves(self, section: str) -> dict[str, Any]:
        """A section flattened to ``{"a.b": leaf}``; a dotted section (``random_baseline.overall``) reaches down."""
        block: Any = self.to_dict()
        for part in section.split("."):
            block = block.get(part) if isinstance(block, Mapping) else None
        return flatten(block) if isinstance(block, Mapping) else {}
