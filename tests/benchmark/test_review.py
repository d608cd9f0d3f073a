from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from probmed.benchmark.questions import generate_questions
from probmed.benchmark.review import export_review, read_verdicts, review_report
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.errors import RecordError
from probmed.core.records import write_predictions, write_questions


def test_round_trip(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    sheet = export_review(q, tmp_path, n_images=10, seed=3, image_root=shared_data)
    again = export_review(q, tmp_path / "b", n_images=10, seed=3, image_root=shared_data)
    other = export_review(q, tmp_path / "c", n_images=10, seed=4, image_root=shared_data)
    assert sheet["qid"].tolist() == again["qid"].tolist() != other["qid"].tolist()
    assert sheet["image_id"].nunique() == 10
    html = (tmp_path / "review.html").read_text()
    assert html.count("<img ") == 10
    src = html.split("<img src='", 1)[1].split("'", 1)[0]
    assert (tmp_path / src).is_file()  # the page shows the real image
    # reviewers: first question invalid, the rest valid
    filled = pd.read_csv(tmp_path / "review.csv", dtype=str, keep_default_na=False)
    filled["valid"] = ["no"] + ["yes"] * (len(filled) - 1)
    filled.to_csv(tmp_path / "filled.csv", index=False)
    preds = pd.DataFrame({"qid": filled.qid, "model": "m", "setting": "vanilla", "response": "", "label": ["no"] + ["yes"] * (len(filled) - 1),
                          "p_yes": float("nan"), "latency_s": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cache_key": "", "error": ""})
    rep = review_report(read_verdicts(tmp_path / "filled.csv"), preds)
    assert rep["valid_pct"] == round(100 * (len(filled) - 1) / len(filled), 2)
    assert rep["invalid_qids"] == [filled.qid[0]]
    right = (preds.label == filled.answer)
    assert rep["accuracy_all_pct"] == round(100 * right.mean(), 2)
    assert rep["accuracy_valid_pct"] == round(100 * right[1:].mean(), 2)
    write_predictions(preds, tmp_path / "p.parquet")
    assert main(["review", "import", str(tmp_path / "filled.csv"), "--predictions", str(tmp_path / "p.parquet"),
                 "--out", str(tmp_path / "rep.json"), "--params", str(repo_root / "params.yaml")]) == 0
    assert (tmp_path / "rep.json").exists()


def test_unfilled_verdict_is_an_error(tmp_path: Path, repo_root: Path) -> None:
    (tmp_path / "s.csv").write_text("qid,valid\nq1,yes\nq2,\n")
    with pytest.raises(RecordError, match="row 3 \\(qid q2\\)"):
        read_verdicts(tmp_path / "s.csv")
    assert main(["review", "import", str(tmp_path / "s.csv"), "--out", str(tmp_path / "r.json"), "--params", str(repo_root / "params.yaml")]) == 2
    assert not (tmp_path / "r.json").exists()


def test_cli_export(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    write_questions(q, tmp_path / "q.parquet")
    assert main(["review", "export", "--questions", str(tmp_path / "q.parquet"), "--n", "5", "--out", str(tmp_path / "rv"),
                 "--params", str(repo_root / "params.yaml")]) == 0
    assert pd.read_csv(tmp_path / "rv" / "review.csv")["image_id"].nunique() == 5
    assert main(["review", "truth", "--questions", str(tmp_path / "q.parquet"), "--n", "12", "--out", str(tmp_path / "t.csv"),
                 "--params", str(repo_root / "params.yaml")]) == 0
    assert len(pd.read_csv(tmp_path / "t.csv")) == 12


# --- the by-eye truth check (issue 22) ----------------------------------------------------------------

SHEET = Path(__file__).resolve().parents[2] / "review" / "truth_review.csv"


def test_truth_sample_reaches_every_stratum_and_keeps_its_picks(shared_data: Path) -> None:
    from probmed.benchmark.review import STRATA, _folder, truth_sample

    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    keyed = q.assign(folder=q["image_path"].map(_folder))
    strata = keyed.groupby(list(STRATA)).ngroups
    sheet = truth_sample(q, strata + 5, seed=0)
    assert len(sheet) == strata + 5
    assert sheet.assign(folder=sheet["image_path"].map(_folder)).groupby(list(STRATA)).ngroups == strata
    assert set(sheet["answer"]) == {"yes", "no"} and set(sheet["category"]) == set(q["category"])
    assert (sheet["verdict"] == "").all() and not sheet["qid"].duplicated().any()
    # a question keeps its place when others leave the set: the picks of untouched strata stay
    first = sheet.iloc[0]
    rest = q[~((q.image_id == first.image_id) & (q.category == first.category))]
    again = truth_sample(rest, strata + 5, seed=0)
    assert len(set(again.qid) & set(sheet.qid)) >= len(sheet) - 3
    assert truth_sample(q, 10, seed=1)["qid"].tolist() != truth_sample(q, 10, seed=0)["qid"].tolist()


def test_truth_sample_shares_the_rest_by_weight_and_spreads_image_types(shared_data: Path) -> None:
    """Beyond one question per stratum, a stratum of weight 3 gets three times the questions of one of weight 1;
    weight 0 leaves a value out; within a stratum every image type comes before a second of any."""
    from probmed.benchmark.review import truth_sample

    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    plain = truth_sample(q, 60, seed=5)
    heavy = truth_sample(q, 60, seed=5, weights={"category": {"organ": 3.0}})
    assert (heavy["category"] == "organ").sum() > (plain["category"] == "organ").sum()
    per = heavy.groupby(["category", "answer"]).size()
    assert per["organ"].min() >= 2 * per.drop("organ", level=0).max() - 2  # shares 3 : 1, up to rounding and caps
    assert "modality" not in set(truth_sample(q, 60, seed=5, weights={"category": {"modality": 0}})["category"])
    organ_yes = heavy[(heavy.category == "organ") & (heavy.answer == "yes")]
    types = q[(q.category == "organ") & (q.answer == "yes")]["image_type"].nunique()
    assert organ_yes["image_type"].nunique() == min(types, len(organ_yes))


def test_truth_renders_draw_boxes_zones_and_captions(shared_data: Path, tmp_path: Path) -> None:
    """A ChestX-ray14 render shows its box and the located lung zones on the film; a captioned figure its caption
    panel; the CLI writes one render per sampled question."""
    from probmed.benchmark.curation.lung_field import locate_file
    from probmed.benchmark.review_render import BOX_COLOURS, SIDE, ZONE_COLOUR, render_question
    from probmed.core.records import ImageRecord

    film = shared_data / "chestxray14" / "images"
    name = sorted(p.name for p in film.iterdir())[0]
    field = locate_file(film / name, "PA")
    box = {"label": "Nodule", "x": 300.0, "y": 400.0, "w": 200.0, "h": 150.0}
    rec = ImageRecord(image_id="cxr", source="ChestX-ray14", modality="x-ray", organ="chest", image_path=name,
                      provenance={"boxes": [box], "lung_field": {"right": [field.right.top, field.right.bottom,
                                                                           field.right.x0, field.right.x1],
                                                                 "left": [field.left.top, field.left.bottom,
                                                                          field.left.x0, field.left.x1],
                                                                 "fallback": field.fallback}})
    row = pd.Series({"qid": "q1", "source": "ChestX-ray14", "category": "position", "image_type": "X-ray - Chest",
                     "question": "Is the nodule located in the right middle lung zone?", "answer": "yes"})
    img = render_question(row, rec, film).convert("RGB")
    scale = SIDE / 1024
    assert img.getpixel((round((300 + 100) * scale), round(400 * scale))) == _rgb(BOX_COLOURS[0])  # the box's top edge
    top, x0, x1 = field.right.top, field.right.x0, field.right.x1
    assert img.getpixel((round((x0 + x1) / 2 * SIDE), round(top * SIDE))) == _rgb(ZONE_COLOUR)  # the right lung's apex line
    assert img.width > SIDE  # the text panel beside the film


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_cli_truth_renders(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    from probmed.core.records import write_image_records

    res = load_vqarad(shared_data / "vqa-rad", shared_data)
    q, _ = generate_questions(res.records)
    write_questions(q, tmp_path / "q.parquet")
    write_image_records(res.records, tmp_path / "r.parquet")
    def truth(records: Path, renders: Path) -> int:
        return main(["review", "truth", "--questions", str(tmp_path / "q.parquet"), "--n", "6", "--seed", "7",
                     "--out", str(tmp_path / "t.csv"), "--renders", str(renders), "--records", str(records),
                     "--params", str(repo_root / "params.yaml"), f"curate.image_root={shared_data}"])

    assert truth(tmp_path / "r.parquet", tmp_path / "renders") == 0
    sheet = pd.read_csv(tmp_path / "t.csv")
    assert sorted(p.name for p in (tmp_path / "renders").iterdir()) == [f"{i:03d}_{qid}.png" for i, qid in enumerate(sheet.qid)]
    write_image_records(res.records[:1], tmp_path / "one.parquet")
    assert truth(tmp_path / "one.parquet", tmp_path / "r2") == 2  # a question without its record: a one-line error
    moved = [dataclasses.replace(r, image_path=f"gone/{r.image_path}") for r in res.records]
    write_image_records(moved, tmp_path / "moved.parquet")
    assert truth(tmp_path / "moved.parquet", tmp_path / "r3") == 2  # an image not found: named, not a traceback


def test_truth_sheet_needs_a_verdict_and_a_reason(tmp_path: Path, repo_root: Path) -> None:
    from probmed.benchmark.review import TRUTH_COLUMNS, read_truth_sheet

    row = {c: "x" for c in TRUTH_COLUMNS}
    pd.DataFrame([{**row, "verdict": "maybe"}]).to_csv(tmp_path / "a.csv", index=False)
    with pytest.raises(RecordError, match="verdict 'maybe'"):
        read_truth_sheet(tmp_path / "a.csv")
    pd.DataFrame([{**row, "verdict": "false", "reason": ""}]).to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(RecordError, match="needs a reason"):
        read_truth_sheet(tmp_path / "b.csv")
    assert main(["review", "rates", str(tmp_path / "b.csv"), "--params", str(repo_root / "params.yaml")]) == 2


def test_the_committed_truth_sheet(repo_root: Path, tmp_path: Path) -> None:
    """The by-eye check of the default full set (docs/benchmark/truth.md): its schema and counts."""
    from probmed.benchmark.review import TRUTH_COLUMNS, read_truth_sheet, truth_rates

    sheet = read_truth_sheet(SHEET)
    assert list(sheet.columns) == TRUTH_COLUMNS and not sheet["qid"].duplicated().any()
    rates = truth_rates(sheet)
    assert rates["overall"] == {"true": 128, "doubtful": 2, "false": 0, "questions": 130, "true_pct": 98.5}
    assert rates["images"] == 112 and len(rates["by_source"]) == 7 and len(rates["by_category"]) == 5
    assert sheet["image_type"].nunique() >= 12
    assert not sheet["image_path"].str.startswith("/").any()  # ids and repository-relative paths, no images
    assert main(["review", "rates", str(SHEET), "--out", str(tmp_path / "r.json"), "--params", str(repo_root / "params.yaml")]) == 0


@pytest.mark.parametrize(("sheet_name", "overall"), [
    ("truth_review_round5.csv", {"true": 164, "doubtful": 6, "false": 0, "questions": 170, "true_pct": 96.5}),
    ("truth_review_round6.csv", {"true": 168, "doubtful": 2, "false": 0, "questions": 170, "true_pct": 98.8}),
])
def test_the_issue38_truth_sheets(repo_root: Path, sheet_name: str, overall: dict[str, object]) -> None:
    """Issue 38's rounds (5: before the fixes, seed 3801; 6: after them, a new draw at seed 3802), 170 questions
    each: every source, image folder, category and answer judged; their counts and every question not judged
    true as docs/benchmark/truth.md states them."""
    from probmed.benchmark.review import read_truth_sheet, truth_rates

    sheet = read_truth_sheet(SHEET.parent / sheet_name)
    rates = truth_rates(sheet)
    assert rates["overall"] == overall
    assert len(rates["by_source"]) == 7 and len(rates["by_folder"]) == 8 and len(rates["by_category"]) == 5
    assert set(rates["by_answer"]) == {"yes", "no"}
    assert all(r["reason"] for r in rates["not_true"])
    page = (repo_root / "docs" / "benchmark" / "truth.md").read_text()
    assert all(f"`{r['qid']}`" in page for r in rates["not_true"])
