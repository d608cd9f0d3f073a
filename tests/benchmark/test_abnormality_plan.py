"""Where the abnormality question is asked, per image type, and why not elsewhere (the generation report)."""

from __future__ import annotations

from probmed.benchmark.questions import generate_questions
from probmed.core.records import Finding, ImageRecord


def _rec(i: int, modality: str, organ: str, abnormal: bool | None) -> ImageRecord:
    findings = [Finding("fracture", None)] if abnormal else []
    return ImageRecord(image_id=f"t{i}", source="test", modality=modality, organ=organ, abnormal=abnormal,
                       findings=findings, image_path=f"images/t{i}.png")


def test_abnormality_is_asked_per_image_type_with_normal_and_abnormal_images() -> None:
    recs = [_rec(i, "x-ray", "knee", i % 3 == 0) for i in range(9)]        # 3 abnormal, 6 normal
    recs += [_rec(10 + i, "ct", "pelvis", True) for i in range(4)]         # no normal study
    recs += [_rec(20 + i, "ultrasound", "abdomen", None) for i in range(3)]  # nothing known
    frame, report = generate_questions(recs, seed=0)
    asked = frame[frame["category"] == "abnormality"]
    assert set(asked["image_type"]) == {"X-ray - Knee"}
    assert sorted(asked["answer"].value_counts().to_dict().items()) == [("no", 3), ("yes", 3)]
    by_type = report.to_json()["abnormality_by_type"]
    assert by_type["X-ray - Knee"] == {"normal": 6, "abnormal": 3, "unknown": 0, "asked": 6, "why_not": None}
    assert by_type["CT Scan - Pelvis"]["asked"] == 0 and "no image known normal" in by_type["CT Scan - Pelvis"]["why_not"]
    assert by_type["Ultrasound - Abdomen"]["unknown"] == 3 and "unknown" in by_type["Ultrasound - Abdomen"]["why_not"]
