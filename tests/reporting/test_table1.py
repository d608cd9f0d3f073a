from __future__ import annotations

import pandas as pd

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


def test_table1_beside_the_papers_shares(repo_root) -> None:
    from probmed.reporting.table1 import PAPER_TABLE1, PAPER_TOTAL, table1_vs_paper

    known = [v for v in PAPER_TABLE1.values()]
    assert sum(q for _, q, _ in known) == PAPER_TOTAL[1] and sum(y for _, _, y in known) == PAPER_TOTAL[2]
    assert PAPER_TOTAL[0] - sum(i for i, _, _ in known if i) == 232  # the four counts the paper's text lost
    text = (repo_root.parent / "shared" / "reference" / "probmed-paper.txt").read_text()
    for number in ("3,178", "27,530", "13,278", "6,855", "5,161", "57,132"):
        assert number in text
    q, _ = generate_questions(_records())
    t = table1_vs_paper(q).set_index("image_type")
    assert list(t.index[:12]) == list(PAPER_TABLE1) and t.index[-1] == "Total"
    assert t.loc["X-ray - Chest", "paper_images_pct"] == 50.4 and t.loc["X-ray - Chest", "images_pct"] == 66.7
    assert t.loc["MRI - Chest", "images"] == 0 and pd.isna(t.loc["MRI - Abdomen", "paper_images_pct"])
    assert t.loc["Total", "questions_pct"] == 100.0


def test_commercial_use_reads_the_licence() -> None:
    from probmed.core.licences import CHESTXRAY14, MEDICAT, commercial_use

    assert commercial_use("CC BY 4.0") and commercial_use("CC0") and commercial_use(CHESTXRAY14)
    assert not any(commercial_use(x) for x in ("CC BY-NC", "CC BY-NC-SA 3.0 CH", MEDICAT, "", None))


def test_new_modalities_organs_and_types_beside_the_papers_shares() -> None:
    from probmed.reporting.table1 import modalities_and_organs_vs_paper, table1_vs_paper

    recs = _records() + [
        ImageRecord("e", "S", "ultrasound", "pelvis", True, [Finding("cyst", "left ovary")], image_path="e.png"),
        ImageRecord("f", "S", "x-ray", "knee", True, [Finding("fracture")], image_path="f.png"),
    ]
    q, _ = generate_questions(recs, strategy="random")
    t = table1_vs_paper(q).set_index("image_type")
    # the paper's twelve first, then the new types (no paper share), then the total
    assert list(t.index[12:]) == ["Ultrasound - Pelvis", "X-ray - Knee", "Total"]
    assert t.loc["Ultrasound - Pelvis", "images"] == 1 and pd.isna(t.loc["Ultrasound - Pelvis", "paper_images_pct"])
    m = modalities_and_organs_vs_paper(q).set_index(["kind", "value"])
    assert m.loc[("modality", "X-ray"), "images"] == 3 and m.loc[("modality", "X-ray"), "in_paper"]
    assert not m.loc[("modality", "Ultrasound"), "in_paper"] and pd.isna(m.loc[("modality", "Ultrasound"), "paper_questions_pct"])
    assert not m.loc[("organ", "Knee"), "in_paper"] and not m.loc[("organ", "Pelvis"), "in_paper"]
    # the paper's question shares per modality add up to 100 over its three modalities (its counts are complete)
    paper = m.loc["modality", "paper_questions_pct"].dropna()
    assert set(paper.index) == {"X-ray", "CT Scan"} and m.loc[("modality", "X-ray"), "paper_questions_pct"] == 56.4
    assert m.xs("organ")["images"].sum() == q["image_id"].nunique()
