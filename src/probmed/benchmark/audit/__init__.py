"""`probmed audit`: can a question set be passed without looking at the image, and is every "no" true?

For any question set, generated or imported (an imported set is audited as it
is, never rebalanced):

* the blind ceiling (audit.blind_ceiling): the best fixed answer table (keyed on the
  text, image type + text, source + text) searched for each unit's accuracy, and a
  learnt text-only model, cross-fitted over image folds, per category and unit
  (each pair, per image, single questions, contrast pairs), beside exact random and
  the floor; the gate reads it on ``audit.ceiling_units``;
* text-only models (the oracle and the blind baseline, audit.scores) scored by
  the project scorer beside the exact random baseline, per category, overall
  (original weighting) and per image type: for reference, the gate's old yardstick;
* context leaks (audit.leaks): answers implied by the other questions of an image;
* distinct texts and their yes-ratio spread per category and image type,
  duplicate questions per image, the evidence of every "no", grammar lint
  (audit.texts);
* "no" answers contradicted by the image's metadata or QA (audit.truthcheck;
  needs the image records);
* how well simple pixel statistics separate normal from abnormal images within
  an image type (audit.pixels; needs the image files);
* shortcuts beyond the text: fixed answer tables keyed on the text and the file's
  size, format/mode/dimensions or mean grey level, per category (audit.files;
  needs the image files);
* the image-type mix beside the paper's Table 1.

The gate (:func:`gate`) turns the audit into a pass/fail for the generation stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import OracleSettings
from probmed.core.params_schema import Audit
from probmed.core.records import ImageRecord

__all__ = ["GateResult", "gate", "run_audit", "image_mix", "oracle_settings"]


def oracle_settings(audit: Audit) -> OracleSettings:
    """The gate's oracle: the audit's folds and binomial-test level."""
    return OracleSettings(folds=audit.folds, alpha=audit.alpha)


def image_mix(questions: pd.DataFrame) -> list[dict[str, Any]]:
    """Images per image type and their share, beside the paper's Table 1 share."""
    from probmed.core.paper import PAPER_TABLE1_IMAGES, paper_share

    counts = questions.groupby("image_type")["image_id"].nunique().sort_values(ascending=False)
    total = int(questions["image_id"].nunique())
    rows = [{"image_type": str(t), "images": int(n), "share": n / total, "in_paper": str(t) in PAPER_TABLE1_IMAGES,
             "paper_images": PAPER_TABLE1_IMAGES.get(str(t)), "paper_share": paper_share(str(t))} for t, n in counts.items()]
    rows += [{"image_type": t, "images": 0, "share": 0.0, "in_paper": True, "paper_images": n, "paper_share": paper_share(t)}
             for t, n in PAPER_TABLE1_IMAGES.items() if t not in counts.index]
    return rows


def _pixel_items(questions: pd.DataFrame, records: Sequence[ImageRecord] | None, image_root: Path) -> list[tuple]:
    """(image_id, image_type, file, abnormal) for images with a known label and a file on disk.

    Files are found as predict finds them (probmed.inference.images.resolve_image): one a symlink leads
    out of the image root is a RecordError naming the image, never read.
    """
    from probmed.core.errors import MissingFileError
    from probmed.inference.images import resolve_image

    labels: dict[str, bool] = {}
    if records:
        labels = {r.image_id: bool(r.abnormal) for r in records if r.abnormal is not None}
    abn = questions[questions["category"] == "abnormality"]
    labels.update({str(i): a == "yes" for i, a in zip(abn["image_id"], abn["answer"]) if str(i) not in labels})
    first = questions.drop_duplicates("image_id")
    items = []
    for iid, itype, path in zip(first["image_id"].astype(str), first["image_type"], first["image_path"]):
        if iid not in labels or not path:
            continue
        try:
            items.append((iid, str(itype), resolve_image(image_root, path, iid), labels[iid]))
        except MissingFileError:
            continue  # not on disk: not audited
    return items


def run_audit(
    questions: pd.DataFrame,
    records: Sequence[ImageRecord] | None = None,
    image_root: Path | None = None,
    settings: Audit | None = None,
    blind_p_yes: np.ndarray | None = None,
    source: str = "",
    reference: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The full audit of a question set as a JSON-ready dict (sections in the module docstring). `reference`:
    the full set a subset was drawn from; the blind ceiling also counts tables learnt on its other images."""
    from probmed.benchmark.audit import files, leaks, pixels, scores, texts, truthcheck
    from probmed.benchmark.audit.blind_ceiling import blind_ceiling

    settings = settings if settings is not None else Audit()
    others = None if reference is None else \
        reference[~reference["image_id"].astype(str).isin(set(questions["image_id"].astype(str)))].reset_index(drop=True)
    audit: dict[str, Any] = {
        "meta": {
            "source": source, "questions": int(len(questions)), "images": int(questions["image_id"].nunique()),
            "folds": settings.folds, "alpha": settings.alpha, "seed": settings.seed,
            "records": bool(records), "pixels": image_root is not None, "blind": blind_p_yes is not None,
            "reference_images": None if others is None else int(others["image_id"].nunique()),
        },
        # the gate's yardstick: what a blind model can learn, per category and unit (audit.blind_ceiling)
        "blind_ceiling": blind_ceiling(questions, settings.folds, settings.seed, blind_p_yes=blind_p_yes,
                                       reference=others).to_json(),
        "oracle": scores.oracle_scores(questions, oracle_settings(settings)),
        # for reference, not the gate: every training majority taken, however slight (audit.scores explains)
        "oracle_raw": scores.oracle_scores(questions, OracleSettings(folds=settings.folds, alpha=1.0)),
        "blind": None if blind_p_yes is None else scores.blind_scores(questions, blind_p_yes),
        # for reference, not the gate: the best fixed answer per text, chosen with the answers in hand (an upper bound)
        "fixed_policy": scores.fixed_policies(questions),
        "texts": texts.text_stats(questions, settings.alpha),
        "duplicates": texts.duplicates(questions),
        "evidence": texts.evidence_shares(questions),
        "lint": texts.lint_stats(questions),
        "context_leaks": leaks.context_leaks(questions),
        "contradictions": truthcheck.contradictions(questions, records),
        "pixel_leak": None,
        "file_shortcuts": None,
        "image_mix": image_mix(questions),
    }
    if image_root is not None:
        items = _pixel_items(questions, records, Path(image_root))
        audit["pixel_leak"] = pixels.pixel_leak(items, settings.pixel_folds, settings.seed)
        audit["file_shortcuts"] = files.file_shortcuts(questions, Path(image_root), settings.folds, settings.seed)
    return audit


@dataclass
class GateResult:
    """The gate's verdict on an audit: passed or not, why, and whether a failure stops generation."""

    passed: bool
    failures: list[str]
    enforced: bool
    unchecked: list[str] = field(default_factory=list)  # checks the set gave nothing to check on (not failures)

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "enforced": self.enforced, "failures": self.failures, "unchecked": self.unchecked}


def _ceiling_checks(audit: dict[str, Any], max_margin: float, units: Sequence[str]) -> tuple[list[str], list[str]]:
    """(failures, cells too small to tell from chance) of the blind ceiling on `units`."""
    from probmed.benchmark.audit.blind_ceiling import BlindCeiling, ceiling_failures

    ceiling = BlindCeiling.from_json(audit.get("blind_ceiling"))
    if ceiling is None:
        return ["the audit has no blind ceiling per unit (it predates it): re-run probmed audit on the set"], []
    return ceiling_failures(ceiling, max_margin, units, audit["meta"].get("alpha", 1.0))


def gate(audit: dict[str, Any], max_oracle_margin: float, enforce: bool = True,
         ceiling_units: Sequence[str] = tuple(Audit().ceiling_units)) -> GateResult:
    """Fail when the blind ceiling beats its bar, or the oracle exact random, by more than the margin, or a lint
    or contradiction remains.

    The blind ceiling is checked in every category on each of `ceiling_units` (audit.ceiling_units; every unit
    in :data:`blind_ceiling.UNITS`) the set has; a unit fixed by construction (a normal image's hallucinated
    finding) is reported, never checked, and a cell whose units a binomial test at audit.alpha cannot tell from
    its bar is listed as unchecked (the best of a dozen learners on seven units beats any bar by luck).

    An empty set fails too: with nothing to score every check passes vacuously, and a run over it measures nothing.
    """
    failures: list[str] = []
    if not audit["meta"]["questions"]:
        failures.append("the question set has no questions (every record was excluded, or none was given)")
    oracle = audit["oracle"]
    for name, entry in [*oracle["by_category"].items(), ("overall", oracle["overall"])]:
        acc, rnd = entry["accuracy"], entry["random"]
        if acc is not None and rnd is not None and acc - rnd > max_oracle_margin:
            failures.append(
                f"{name}: the text-only oracle scores {acc:.1f}% strict, {acc - rnd:.1f} points above exact random "
                f"({rnd:.1f}%; audit.max_oracle_margin = {max_oracle_margin:g})"
            )
    ceiling_failed, unchecked = _ceiling_checks(audit, max_oracle_margin, ceiling_units)
    failures += ceiling_failed
    lint = audit["lint"]
    if lint["findings"]:
        first = lint["examples"][0]
        failures.append(f"grammar lint: {lint['findings']} finding(s), e.g. {first['question']!r}: {first['rule']} ({first['message']})")
    contra = audit["contradictions"]
    if contra.get("checked") and contra["count"]:
        first = contra["examples"][0]
        failures.append(f"{contra['count']} \"no\" answer(s) contradicted by the image's own metadata or QA, "
                        f"e.g. image {first['image_id']}: {first['question']!r} ({first['why']})")
    return GateResult(passed=not failures, failures=failures, enforced=enforce, unchecked=unchecked)
