"""Backends and questions for the image-control tests (a unique module name, unlike conftest).

Two tiny deterministic backends that see the image, registered nowhere but here:
``IgnoresImage`` answers from the question text alone; ``PixelOracle`` answers
from the pixels it is shown (it memorised each real image's answers under a
hash of its decoded pixels, so a blank or another image leaves it guessing).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from probmed.core.records import QUESTION_COLUMNS
from probmed.inference.models.base import Answer, Backend, Item


def pixel_hash(path: Path | None) -> str:
    from PIL import Image

    with Image.open(path) as im:
        return hashlib.sha256(im.convert("L").tobytes()).hexdigest()


class IgnoresImage(Backend):
    """Sees the image, never looks at it: 'yes' to questions whose text hashes even."""

    kind = "ignores-image"
    supports_images = True
    batch_by_image = True

    def __init__(self, name: str = "ignores-image") -> None:
        super().__init__(name, {})
        self.seen: list[Path | None] = []

    def _answer(self, items: list[Item]) -> list[Answer]:
        self.seen += [it.image_path for it in items]
        return [Answer(response="yes" if hashlib.sha256(it.question.encode()).digest()[0] % 2 == 0 else "no")
                for it in items]


class PixelOracle(Backend):
    """Reads the pixels to answer: right on the real images it memorised, 'no' on any other picture."""

    kind = "pixel-oracle"
    supports_images = True
    batch_by_image = True

    def __init__(self, questions: pd.DataFrame, image_root: Path, name: str = "pixel-oracle") -> None:
        super().__init__(name, {})
        self.memory: dict[tuple[str, str], str] = {}
        for row in questions.itertuples(index=False):
            self.memory[(pixel_hash(image_root / row.image_path), row.question)] = row.answer

    def _answer(self, items: list[Item]) -> list[Answer]:
        out = []
        for it in items:
            seen = pixel_hash(it.image_path)
            out.append(Answer(response=self.memory.get((seen, it.question), "no")))
        return out


def two_type_questions(shared_data: Path, n_images: int = 8) -> pd.DataFrame:
    """Modality and organ pairs plus an abnormality question on real VQA-RAD images, alternately
    labelled with two image types (what the shuffle control needs); paths relative to `shared_data`."""
    folder = shared_data / "vqa-rad" / "VQA_RAD Image Folder"
    rows = []
    for k, img in enumerate(sorted(folder.glob("synpic*.jpg"))[:n_images]):
        image_id = f"vqarad-{img.stem}"
        image_type = "CT Scan - Chest" if k % 2 == 0 else "MRI - Head"
        modality, other = ("CT scan", "MRI") if k % 2 == 0 else ("MRI", "CT scan")
        organ, wrong = ("chest", "brain") if k % 2 == 0 else ("brain", "chest")
        specs = [
            ("modality", "gt", f"Is this a {modality}?", "yes", "modality_gt"),
            ("modality", "adversarial", f"Is this a {other}?", "no", "modality_hallu"),
            ("organ", "gt", f"Is this an image of the {organ}?", "yes", "body_part_gt"),
            ("organ", "adversarial", f"Is this an image of the {wrong}?", "no", "body_part_hallu"),
            ("abnormality", "single", "Is there any abnormality in this image?", "yes" if k % 3 else "no",
             "abnormality"),
        ]
        for cat, pol, text, ans, qa in specs:
            rows.append({
                "qid": f"{image_id}:{qa}", "image_id": image_id, "image_path": str(img.relative_to(shared_data)),
                "source": "VQA-RAD", "category": cat, "polarity": pol,
                "pair_id": f"{image_id}:{cat}" if pol != "single" else f"{image_id}:{qa}", "question": text,
                "answer": ans, "entity": "", "image_type": image_type, "qa_type": qa,
                "strategy": "gt" if pol == "gt" else "random", "evidence": "",
            })
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))
