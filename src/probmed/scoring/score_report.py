"""A scored run as a typed object: load and validate metrics.json once, then ask it for numbers.

The report, its figures and MLflow tracking all read ``metrics.json`` (the shape
is documented in probmed.scoring.metrics). They used to walk the dict by string
keys, each with its own idea of what a missing or null number is; here the walk
is written once:

* :meth:`ScoreReport.load` / :meth:`ScoreReport.from_dict` check the structure
  (an object with ``by_category``; known categories; metric leaves that are
  numbers or null) and raise :class:`ScoresError` naming the file and key;
* :meth:`ScoreReport.value` is a number or NaN (missing, null, not a number),
  never 0 by accident; :func:`number` the same with None;
* :attr:`categories` / :attr:`image_types` iterate what the run has;
  :meth:`blocks` every (image type or ``all``, category, metrics) block;
* :meth:`leaves` flattens a section to ``{"a.b.c": leaf}`` (core.config.flatten).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from probmed.core.categories import CATEGORIES
from probmed.core.config import flatten
from probmed.core.errors import ScoresError

ALL_IMAGE_TYPES = "all"  # the image-type label of the run-wide blocks (``by_category``)
_SECTIONS = ("meta", "overall", "by_category", "by_image_type", "random_baseline", "procedural")


def number(value: Any) -> float | None:
    """A finite int/float as float; None for anything else (null, bool, text, NaN, inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _check_categories(blocks: Any, where: str) -> None:
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


def _check_image_types(types: Any, where: str) -> None:
    if not isinstance(types, Mapping):
        raise ScoresError(f"{where}: expected an object of image types, got {type(types).__name__}")
    for name, blocks in types.items():
        _check_categories(blocks, f"{where}.{name}")


@dataclass(frozen=True)
class ScoreReport:
    """One run's scores (the metrics.json dict, validated) and where they came from."""

    data: Mapping[str, Any]
    path: Path | None = None

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
        """Validate a metrics dict (``probmed.scoring.run.evaluate``'s shape); ScoresError names the key."""
        where = f"metrics file {path}" if path is not None else "metrics"
        if not isinstance(data, Mapping) or "by_category" not in data:
            raise ScoresError(f"{where}: expected an object with key 'by_category'")
        for section in _SECTIONS:
            if data.get(section) is not None and not isinstance(data[section], Mapping):
                raise ScoresError(f"{where}: '{section}' must be an object, got {type(data[section]).__name__}")
        _check_categories(data["by_category"], f"{where}: by_category")
        _check_image_types(data.get("by_image_type") or {}, f"{where}: by_image_type")
        baseline = data.get("random_baseline") or {}
        _check_categories(baseline.get("by_category") or {}, f"{where}: random_baseline.by_category")
        _check_image_types(baseline.get("by_image_type") or {}, f"{where}: random_baseline.by_image_type")
        if data.get("subset_robustness") is not None and not isinstance(data["subset_robustness"], list):
            raise ScoresError(f"{where}: 'subset_robustness' must be a list")
        return cls(data, Path(path) if path is not None else None)

    # --- sections -------------------------------------------------------------------

    def _section(self, name: str) -> Mapping[str, Any]:
        return self.data.get(name) or {}

    @property
    def meta(self) -> Mapping[str, Any]:
        return self._section("meta")

    @property
    def overall(self) -> Mapping[str, Any]:
        return self._section("overall")

    @property
    def procedural(self) -> Mapping[str, Any]:
        return self._section("procedural")

    @property
    def subset_robustness(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("subset_robustness") or [])

    @property
    def random_baseline(self) -> "ScoreReport | None":
        """The exact random-choice baseline on the same questions, in the same shape (no meta)."""
        baseline = self.data.get("random_baseline")
        if not baseline or not baseline.get("by_category"):
            return None
        return ScoreReport(baseline, self.path)

    # --- categories and image types -------------------------------------------------

    @property
    def categories(self) -> list[str]:
        """The categories this run has, in the order of its metrics file."""
        return self.categories_of(None)

    def categories_of(self, image_type: str | None) -> list[str]:
        """The categories the run has within an image type (run-wide for None), in file order."""
        if image_type is None:
            return list(self._section("by_category"))
        return list(self._section("by_image_type").get(image_type) or {})

    @property
    def image_types(self) -> list[str]:
        """The image types this run has, in the order of its metrics file (the scorer sorts them)."""
        return list(self._section("by_image_type"))

    def category(self, name: str, image_type: str | None = None) -> Mapping[str, Any]:
        """One category's metrics, run-wide or within an image type ({} when the run has none)."""
        if image_type is None:
            return self._section("by_category").get(name) or {}
        return (self._section("by_image_type").get(image_type) or {}).get(name) or {}

    def blocks(self) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
        """(image type or ``all``, category, metrics) for every block, run-wide first."""
        for name in self.categories:
            yield ALL_IMAGE_TYPES, name, self.category(name)
        for image_type in self.image_types:
            for name in self.categories_of(image_type):
                yield image_type, name, self.category(name, image_type)

    # --- numbers ----------------------------------------------------------------------

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

    def leaves(self, section: str) -> dict[str, Any]:
        """A section flattened to ``{"a.b": leaf}``; a dotted section (``random_baseline.overall``) reaches down."""
        block: Any = self.data
        for part in section.split("."):
            block = block.get(part) if isinstance(block, Mapping) else None
        return flatten(block) if isinstance(block, Mapping) else {}

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.data))
