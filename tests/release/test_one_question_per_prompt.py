"""No export puts two questions of one image into one prompt (issue 21: context leaks).

A harness that showed a model every question of an image at once would hand it
answers without the image (a condition named in a position question is present;
an image with a condition pair is abnormal: benchmark.audit.leaks measures how
much). probmed's prompts, the release's harness tasks (lmms-eval log,
VLMEvalKit TSV, the inspect_ai / lmms-eval task spec) and the original question
file each carry exactly one question per prompt or record.
"""

from __future__ import annotations

import json
import string
from collections import defaultdict
from pathlib import Path

import pandas as pd

from probmed.core.params_schema import Params
from probmed.core.release_format import write_question_file
from probmed.core.settings import SETTINGS
from probmed.inference.prompting import PromptSet
from probmed.release.harness.files import task_spec, vlmevalkit_tsv
from probmed.release.harness.lmms_eval_log import lmms_eval_records


def _questions_of_image(frame: pd.DataFrame) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for image_id, question in zip(frame["image_id"].astype(str), frame["question"]):
        out[image_id].add(str(question))
    return out


def _assert_one_question(text: str, image_id: str, question: str, by_image: dict[str, set[str]]) -> None:
    assert question in text, (image_id, question)
    others = [q for q in by_image[image_id] if q != question and q in text]
    assert not others, f"image {image_id}: the prompt for {question!r} also carries {others}"


def _question_fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name == "question"]


def test_every_prompt_template_has_exactly_one_question_field():
    settings = Params().settings
    for key in ("vanilla", "with_description"):
        assert len(_question_fields(getattr(settings, key))) == 1, key
    spec = task_spec("small", "1.0.0", settings.vanilla, ["all"])  # what inspect_ai and lmms-eval format
    assert len(_question_fields(str(spec["prompt"]))) == 1


def test_probmed_prompts_carry_one_question_of_their_image(small_set):
    frame = small_set["frame"]
    by_image = _questions_of_image(frame)
    prompts = PromptSet.from_settings(Params().settings)
    for setting in SETTINGS.values():
        for image_id, question in zip(frame["image_id"].astype(str), frame["question"]):
            text = prompts.question_prompt(setting, question, "a description" if setting.description_by else None)
            _assert_one_question(text, image_id, question, by_image)


def test_release_exports_carry_one_question_per_record(small_set, tmp_path: Path):
    frame = small_set["frame"].reset_index(drop=True)
    by_image = _questions_of_image(frame)
    predictions = pd.DataFrame({"qid": frame["qid"], "response": "yes", "label": "yes"})
    records, _ = lmms_eval_records(frame, predictions, Params().settings.vanilla)
    assert len(records) == len(frame)
    for record in records:
        assert len(record["arguments"]) == 1
        _assert_one_question(record["arguments"][0], str(record["doc"]["image_id"]), record["doc"]["question"], by_image)
    images = {}
    for image_id in by_image:
        images[image_id] = tmp_path / f"{image_id}.png"
        images[image_id].write_bytes(b"png")
    rows = vlmevalkit_tsv(frame, images).splitlines()[1:]
    assert len(rows) == len(frame)
    for row, (image_id, question) in zip(rows, zip(frame["image_id"].astype(str), frame["question"])):
        _assert_one_question(row.split("\t")[2], image_id, " ".join(str(question).split()), by_image)
    write_question_file(frame, tmp_path / "test.json")
    official = json.loads((tmp_path / "test.json").read_text(encoding="utf-8"))
    assert len(official) == len(frame)
    for r in official:
        _assert_one_question(r["question"], str(r["id"]), r["question"], by_image)
