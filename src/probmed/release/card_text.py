"""The dataset card's fixed prose: what each field means, how the set is built and scored, its limitations.

Kept apart from probmed.release.card (which assembles the card from a release's
numbers) so the wording can be reviewed on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from probmed.release.manifest import Release

FIELD_MEANINGS: dict[str, str] = {
    "qid": "question id: stable hash of the image, the original qa_type and the question (ties answers to `probmed score`)",
    "image_id": "image id (source prefix + the source's own id)",
    "source": "the dataset the image comes from (Sources below)",
    "category": "the question's category",
    "pair_id": "shared by a ground-truth question and its adversarial twin; `<image_id>:abnormality` / "
               "`<image_id>:entity_hallu` mark single questions",
    "question": "the closed question, the only text a prompt shows",
    "answer": "the label",
    "entity": "the modality, organ, condition or position the question asks about (as the question names it)",
    "image_type": "the original release's image type, e.g. `X-ray - Chest`",
    "evidence": "for a \"no\": `known_absent` (a label table or QA says so), `nlp_absent` (a label mined from a "
                "report by NLP: ChestX-ray14) or `assumed_absent` (not mentioned); "
                "empty for a \"yes\" (a label: never show it to a model)",
    "licence": "the image's licence as its source states it",
    "contrast_id": "shared by one question text answered yes on one image and no on another (a contrast pair, right "
                   "only when both are: a text-only answer scores 0); null for a question in none",
    "modality": "the imaging modality (from image_type; unknown where the source does not state it)",
    "organ": "the body region (from image_type; head imaging counts as brain, the heart as chest)",
    "image": "the image (datasets.Image: PNG or JPEG bytes as curated)",
}

SCORING = (
    "Strict accuracy with adversarial pairs, as the paper defines it: a modality or organ pair is right only when "
    "both of its questions are; condition and position are all-or-nothing per image over all of that image's pairs of "
    "the category; abnormality is scored per question; a normal image's single hallucinated-condition question "
    "(`pair_id` ending in `entity_hallu`) is reported beside condition, never inside it. The paper's overall is the "
    "mean of the five categories weighted by `num`: the images with a pair for modality and organ, the questions for "
    "abnormality, every image of the set for condition and position. Exact random (each unit of m questions right "
    "with probability 2^-m) is the yardstick. In this repository: `probmed score QUESTIONS PREDICTIONS` (questions: "
    "`test.json`, or the Parquet table); `test.json` with the original release's `calculate_score.py` (or "
    "`probmed score-official`) gives the original tools' numbers."
)

VALUE_FIELDS: tuple[str, ...] = ("source", "category", "answer", "modality", "organ", "evidence")
"""Fields whose every value the card lists, with its row count, as it occurs in the released rows."""

INTENDED_USE = (
    "Intended use: measuring how reliably a multimodal model answers closed questions about medical images, "
    "and how often it accepts a hallucinated modality, organ, condition or position, as research on model "
    "evaluation (comparing models, settings and fine-tuning, and studying failure modes).",
    "Out of scope: clinical decisions, diagnosis, triage or any use on patients; training or certifying a model "
    "for clinical use; claims about a model's clinical safety. The labels come from public research datasets "
    "and caption extraction, not from a clinical read of each image, and the image mix is not that of any clinic.",
)

LIMITATIONS: tuple[str, ...] = (
    "Labels come from each source's own annotations (label tables, boxes, QA answers, caption extraction), not from "
    "new expert reads; a \"no\" marked `assumed_absent` rests on the finding not being mentioned, one marked "
    "`nlp_absent` on a label mined from a radiology report by NLP.",
    "Images are downscaled (256 px long side) and re-encoded as PNG for the curated sources, so file format and "
    "size do not leak the label; VQA-RAD and MedICaT images are the source files, with burned-in text.",
    "The image-type mix differs from the paper's (table above): compare per image type, not only overall.",
    "The `paper` and `commercial` configs are slices of this set by image type and licence; the audit above is the "
    "whole set's (a slice keeps every image's questions together, but its per-text balance is not re-audited).",
    "`qid` hashes the original qa_type (which says gt or hallu): show ids to no model.",
    "Positions follow the radiological convention (image left = patient right); no side is asserted on a sagittal "
    "or unknown plane.",
)


def built_section(release: "Release", categories: str) -> list[str]:
    """How the set was built: sources -> records -> balanced, truthful question pairs."""
    sources = ", ".join(sorted(release.questions["source"].unique()))
    return ["## How it was built", "",
            f"probmed curates image records from {sources} (modality, organ, findings, positions and known-absent "
            "conditions from each source's labels), then asks per image (the paper's Appendix B): "
            f"{categories}. Each adversarial value is drawn from one controlled vocabulary per organ and must be true "
            "for its image: another modality; an organ outside the field of view; a condition not known present nor in "
            "the clinical overlap group of a present finding; a position free of the finding. Values are asked as "
            "hallucinations as often as they are ground truth, so no question text predicts its answer, and image types "
            "are capped so none dominates. Every question set is audited before it is written (below).", ""]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _abnormality_limitation(questions: "pd.DataFrame") -> str | None:
    abnormal = questions[questions["category"] == "abnormality"]
    if abnormal.empty:
        return None
    by_type = abnormal["image_type"].value_counts()
    top, n_top = str(by_type.index[0]), int(by_type.iloc[0])
    return (f"Abnormality is asked only within image types that have both normal and abnormal images: {len(abnormal):,} "
            f"questions on {len(by_type)} image type(s), {100 * n_top / len(abnormal):.1f}% of them on {top} (as in the "
            "paper, normal studies come almost only from chest radiographs), so abnormality accuracy is mostly chest "
            "X-ray accuracy.")


def _ceiling_limitation(audit: dict[str, Any] | None) -> str | None:
    """The blind ceiling per category on the scorer's unit and on contrast pairs, beside random (the audit's
    typed result, probmed.benchmark.audit.blind_ceiling.BlindCeiling)."""
    from probmed.benchmark.audit.blind_ceiling import BlindCeiling

    ceiling = BlindCeiling.from_json((audit or {}).get("blind_ceiling"))
    if ceiling is None:
        return None
    parts = []
    for name, cells in (("on the scorer's unit (the paper's: pairs, per image for condition and position)",
                         [c for c in ceiling.cells if c.paper_unit and not c.exempt]),
                        ("on contrast pairs", [c for c in ceiling.cells if c.unit == "contrast" and not c.exempt])):
        if cells:
            parts.append(f"{name}: " + ", ".join(f"{c.category} {_pct(c.ceiling)} (random {_pct(c.random)})"
                                                for c in cells))
    if not parts:
        return None
    return ("Blind ceilings from this set's audit (strict accuracy, %, of the best fixed answer table or text-only "
            "model, fitted on 4/5 of the images and scored on the rest): " + "; ".join(parts) + ". A model's score "
            "must be read against its category's ceiling as well as against random.")


def _truth_limitation(sheet: str, c: dict[str, Any]) -> str:
    n = c["questions"]
    return (f"Truth checked by eye ({sheet}): {n} questions on {c['images']} images judged against the image and its "
            f"record: {c['true']} true, {c['doubtful']} doubtful, {c['false']} false ({100 * c['false'] / n:.1f}% false, "
            f"{100 * (n - c['true']) / n:.1f}% not clearly true); the paper's two experts found 97.8% of its QA correct.")


def measured_limitations(release: "Release") -> list[str]:
    """The limitations this set's own numbers state: where abnormality is asked, its blind ceilings (audit), and the
    by-eye truth rates of the committed review sheets."""
    lines = [_abnormality_limitation(release.questions), _ceiling_limitation(release.audit)]
    lines += [_truth_limitation(sheet, counts) for sheet, counts in release.truth_reviews.items() if counts["questions"]]
    return [line for line in lines if line]
