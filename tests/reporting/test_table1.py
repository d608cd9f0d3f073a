from __future__ import annotations

from probmed.benchmark.questions import generate_questions
from probmed.core.records import Finding, ImageRecord
from probmed.reporting.table1 import balance, record_counts, table1


def _records() -> list[ImageRecord]:
    return [
        ImageRecord("a", "S", "x-ray", "chest", True, [Finding("mass", "left upper lung zone"), Finding("nodule")], image_path="a.png"),
        ImageRecord("b", "S", "x-ray", "chest", False, [], image_path="b.png"),
        ImageRecord("c", "S", "ct", "brain", True, [Finding("hemorrhage", "left frontal lobe")], image_path="c.png"),
        ImageRecord("d", "S", "ct", "brain", None, [], image_path=None),
    ]


def test_table1_layout_and_counts() -> None:
    q, _ = generate_questions(_records(), strategy="random")  # every pair asked: balance would cap this tiny set
    t = table1(q).set_index("image_type")
    assert list(t.index) == ["CT Scan - Brain", "X-ray - Chest", "Total"]
    chest = t.loc["X-ray - Chest"]
    # a: 2+2+1+4+2 = 11 questions (6 yes); b: 2+2+1+1 = 6 (2 yes)
    assert (chest.images, chest.questions, chest.yes_answers, chest.unique_conditions, chest.unique_positions) == (2, 17, 8, 2, 1)
    assert t.loc["Total", "questions"] == len(q)
    b = balance(q).set_index("category")
    assert b.loc["modality", "yes_ratio"] == 0.5
    # the brain CT type has no normal image: no abnormality question there (it would always be "yes")
    assert b.loc["abnormality", "yes"] == 1 and b.loc["abnormality", "no"] == 1
    rc = record_counts(_records())
    assert rc["records"].sum() == 4 and not rc.loc[rc.has_image == False, "records"].empty  # noqa: E712
