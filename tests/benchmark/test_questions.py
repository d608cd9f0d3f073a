"""Question generation on every real source: validity, no known-present hallucinations, seeds, strategies."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from probmed.core.release_format import read_question_file, write_question_file
from probmed.benchmark.questions import check_no_known_present, generate_questions
from probmed.core.records import Finding, ImageRecord, validate_question_frame
from probmed.core.errors import RecordError
from probmed.benchmark.sources.captions import load_medicat
from probmed.benchmark.sources.chestxray14 import load_chestxray14
from probmed.benchmark.sources.vqarad import load_vqarad


@pytest.fixture(scope="module")
def records(shared_data: Path, repo_root: Path) -> list[ImageRecord]:
    cxr = load_chestxray14(shared_data / "chestxray14", repo_root / "build/images/chestxray14", repo_root, write_images=False)
    return cxr.records + load_vqarad(shared_data / "vqa-rad", repo_root).records + load_medicat(shared_data / "medicat-sample", repo_root).records


@pytest.mark.parametrize("strategy", ["random", "popular", "adversarial"])
def test_valid_and_no_known_present_entity(records, strategy: str) -> None:
    frame, report = generate_questions(records, seed=0, strategy=strategy)
    validate_question_frame(frame)
    assert report.images == frame["image_id"].nunique() == 1350
    assert check_no_known_present(frame, records) == []
    by = {r.image_id: r for r in records}
    for row in frame[(frame.category == "condition") & (frame.answer == "no")].itertuples():
        assert row.entity not in {f.condition for f in by[row.image_id].findings}
        if row.source == "ChestX-ray14":  # every CXR14 hallucination rests on the label table
            assert row.evidence.startswith("known absent")
    assert set(frame.strategy) - {"gt"} <= {strategy, "random"}


def test_layout_per_image(records) -> None:
    frame, _ = generate_questions(records, seed=0)
    # rows of an image contiguous; gt right before its adversary
    starts = frame["image_id"].ne(frame["image_id"].shift()).cumsum()
    assert starts.groupby(frame["image_id"]).nunique().max() == 1
    for pid, g in frame[frame.polarity != "single"].groupby("pair_id"):
        assert list(g.polarity) == ["gt", "adversarial"] and list(g.answer) == ["yes", "no"]
        assert g.index[1] == g.index[0] + 1
    normal = frame[frame.image_id == "cxr14-00000002_000"]
    assert list(normal.qa_type) == ["modality_gt", "modality_hallu", "body_part_gt", "body_part_hallu", "abnormality", "entity_hallu"]
    assert list(normal.answer) == ["yes", "no", "yes", "no", "no", "no"]
    abn = frame[frame.image_id == "cxr14-00000032_037"]
    assert list(abn.qa_type)[4:] == ["abnormality", "entity_gt_0", "entity_hallu_0", "entity_gt_1", "entity_hallu_1",
                                     "entity_gt_2", "entity_hallu_2", "grounding_gt_0", "grounding_hallu_0"]
    assert set(frame.loc[frame.source == "ChestX-ray14", "image_type"]) == {"X-ray - Chest"}
    # unknown modality (VQA-RAD head images without a MODALITY answer) asks no modality question
    unknown = [r.image_id for r in records if r.modality == "unknown"]
    assert not frame[frame.image_id.isin(unknown) & (frame.category == "modality")].shape[0]


def test_seeds(records) -> None:
    a, _ = generate_questions(records, seed=1)
    b, _ = generate_questions(records, seed=1)
    c, _ = generate_questions(records, seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert not a["question"].equals(c["question"])
    assert a.shape == c.shape  # the seed changes which entities, not how many questions
    sub, _ = generate_questions(records[500:600], seed=1, popularity=None)
    # per-image RNG: an image's random draws do not depend on the other images (popularity aside)
    assert a.set_index("qid").loc[sub["qid"], "question"].tolist() == sub["question"].tolist()


def test_adversarial_strategy_flips_sides(records) -> None:
    frame, _ = generate_questions(records, seed=0, strategy="adversarial")
    pos = frame[frame.category == "position"]
    gt, adv = pos[pos.polarity == "gt"].reset_index(), pos[pos.polarity == "adversarial"].reset_index()
    flipped = adv.strategy == "adversarial"
    assert flipped.mean() > 0.7
    for g, a in zip(gt[flipped].entity, adv[flipped].entity):
        assert g.replace("left", "X").replace("right", "left").replace("X", "right") == a


def test_original_format_round_trip(records, tmp_path: Path) -> None:
    frame, _ = generate_questions(records, seed=0)
    write_question_file(frame, tmp_path / "test.json")
    back = read_question_file(tmp_path / "test.json")
    assert back["qid"].tolist() == frame["qid"].tolist()
    assert back["pair_id"].tolist() == frame["pair_id"].tolist()
    assert back["category"].tolist() == frame["category"].tolist()


def test_caption_only_records_never_reach_questions() -> None:
    recs = [ImageRecord("roco-1", "ROCO", "ct", "chest", True, [Finding("mass")]),
            ImageRecord("x-1", "X", "other", "other", None, [], image_path="a.png")]
    frame, report = generate_questions(recs)
    assert frame.empty
    assert report.excluded == {"no image (caption-only record)": ["roco-1"], "nothing askable": ["x-1"]}
    with pytest.raises(RecordError, match="strategy"):
        generate_questions(recs, strategy="hardest")


def test_one_generator_per_category_called_on_its_own() -> None:
    """A category generator is a plain function of (record, seeded rng, context): testable alone."""
    import random

    from probmed.benchmark.questions import GENERATORS, GenerationContext, Popularity, condition_questions, position_questions
    from probmed.core.categories import CATEGORIES

    assert tuple(GENERATORS) == CATEGORIES
    rec = ImageRecord("cxr-1", "ChestX-ray14", "x-ray", "chest", True,
                      [Finding("nodule", "right upper lung zone"), Finding("effusion")],
                      absent_conditions=["mass", "pneumonia"], image_path="a.png")
    ctx = GenerationContext("random", Popularity.of([rec]))
    drafts = condition_questions(rec, random.Random("0:cxr-1"), ctx)
    assert [(d.qa_type, d.pair_key, d.answer) for d in drafts] == [
        ("entity_gt_0", "entity_0", "yes"), ("entity_hallu_0", "entity_0", "no"),
        ("entity_gt_1", "entity_1", "yes"), ("entity_hallu_1", "entity_1", "no")]
    assert {drafts[1].entity, drafts[3].entity} == {"mass", "pneumonia"}  # known-absent first, no repeat
    assert drafts[1].evidence.startswith("known absent: label table")
    adversarial = GenerationContext("adversarial", Popularity.of([rec]))
    pos = position_questions(rec, random.Random(0), adversarial)
    assert [(d.entity, d.strategy) for d in pos] == [("right upper lung zone", "gt"), ("left upper lung zone", "adversarial")]
    # a category that cannot be asked is counted, not guessed
    other = ImageRecord("x-2", "X", "other", "chest", None, [], image_path="b.png")
    assert GENERATORS["modality"](other, random.Random(0), ctx) == []
    assert ctx.report.skipped_categories == {"modality:other": 1}
