"""The question categories, each described once: how it is asked, scored, titled and spelt.

Question generation (benchmark.questions), the scorer (scoring.metrics), the
procedural diagnosis (scoring.procedural), the tables (scoring.tables, the
report) and the original release's file format (core.release_format) all read
these specs instead of naming categories themselves, so a new category is one
``CategorySpec`` here plus its generator in benchmark.questions.

The original release's ``qa_type`` names follow from a spec: a paired category
asks ``<qa_type>_gt`` / ``<qa_type>_hallu`` (``..._<k>`` for the k-th pair when
an image has several), a single question is ``single_qa_type``; the pair key
(``pair_id`` = ``<image_id>:<pair key>``) is ``<qa_type>`` or ``<qa_type>_<k>``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CategorySpec:
    """One question category.

    ``paired``: ground-truth questions come with an adversarial twin, and the
    strict accuracy of the category counts pairs (else it counts single questions).
    ``per_image``: all pairs of an image form one all-or-nothing unit, and the
    original's weight ``num`` of the category is every image of the set.
    ``step``: the category's place in the procedural diagnosis (paper Table 4):
    a stage (step > 0) is scored on the images that passed every category of a
    lower step; step 0 categories are the given start of the chain.
    ``single_qa_type``: the qa_type of the category's single (unpaired)
    question, if it has one (a normal image's hallucinated condition).
    """

    name: str
    title: str
    paired: bool
    per_image: bool
    step: int
    qa_type: str
    indexed: bool = False
    single_qa_type: str | None = None

    def gt_qa_type(self, k: int | None = None) -> str:
        return self._numbered(f"{self.qa_type}_gt", k)

    def hallu_qa_type(self, k: int | None = None) -> str:
        return self._numbered(f"{self.qa_type}_hallu", k)

    def pair_key(self, k: int | None = None) -> str:
        return self._numbered(self.qa_type, k)

    def _numbered(self, stem: str, k: int | None) -> str:
        if self.indexed != (k is not None):
            raise ValueError(f"category {self.name}: pairs are {'' if self.indexed else 'not '}numbered (k={k!r})")
        return stem if k is None else f"{stem}_{k}"


CATEGORY_SPECS: tuple[CategorySpec, ...] = (
    CategorySpec("modality", "Modality", paired=True, per_image=False, step=0, qa_type="modality"),
    CategorySpec("organ", "Organ", paired=True, per_image=False, step=0, qa_type="body_part"),
    CategorySpec("abnormality", "Abnormality", paired=False, per_image=False, step=1, qa_type="abnormality",
                 single_qa_type="abnormality"),
    CategorySpec("condition", "Condition/Finding", paired=True, per_image=True, step=2, qa_type="entity",
                 indexed=True, single_qa_type="entity_hallu"),
    CategorySpec("position", "Position", paired=True, per_image=True, step=3, qa_type="grounding", indexed=True),
)

CATEGORIES: tuple[str, ...] = tuple(c.name for c in CATEGORY_SPECS)
PAIRED_CATEGORIES: tuple[str, ...] = tuple(c.name for c in CATEGORY_SPECS if c.paired)
PER_IMAGE_CATEGORIES: tuple[str, ...] = tuple(c.name for c in CATEGORY_SPECS if c.per_image)
CATEGORY_TITLES: dict[str, str] = {c.name: c.title for c in CATEGORY_SPECS}
# The procedural diagnosis stages in the order a diagnosis takes them.
PROCEDURAL_STAGES: tuple[str, ...] = tuple(c.name for c in sorted(CATEGORY_SPECS, key=lambda c: c.step) if c.step > 0)

_BY_NAME: dict[str, CategorySpec] = {c.name: c for c in CATEGORY_SPECS}


def category(name: str) -> CategorySpec:
    """The spec of a category by name (KeyError naming the known ones otherwise)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown question category {name!r}; known: {', '.join(CATEGORIES)}") from None


def prerequisites(stage: str) -> tuple[str, ...]:
    """The categories an image must have passed before ``stage`` is scored on it (lower steps)."""
    step = category(stage).step
    return tuple(c.name for c in CATEGORY_SPECS if c.step < step)
