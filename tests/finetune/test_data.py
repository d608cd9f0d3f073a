"""Patient-level splits, domain selection, balancing and batch encoding over real images."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from probmed.core.errors import ConfigError, RecordError
from probmed.finetune import data


def test_no_patient_crosses_the_split(image_records: pd.DataFrame, questions: pd.DataFrame):
    images = data.image_table(image_records)
    splits = data.assign_splits(images, eval_fraction=0.5, seed=0)
    frame = data.attach_images(questions, images, splits)
    per_patient = frame.groupby("patient_key")["split"].nunique()
    assert (per_patient == 1).all()
    # multi-image patients exist in the fixture, so the check above is not vacuous
    cxr = frame[frame["source"] == "chestxray14"]
    assert cxr.groupby("patient_key")["image_id"].nunique().max() >= 2
    assert set(cxr["split"]) == {"train", "eval"}
    # every group with >= 2 patients has a held-out part
    for _, group in frame.groupby(["source", "modality", "organ"]):
        assert "eval" in set(group["split"])
    train_patients = set(frame.loc[frame["split"] == "train", "patient_key"])
    eval_patients = set(frame.loc[frame["split"] == "eval", "patient_key"])
    assert train_patients and eval_patients and not (train_patients & eval_patients)


def test_split_is_seeded_and_stable(image_records: pd.DataFrame):
    images = data.image_table(image_records)
    a = data.assign_splits(images, 0.5, seed=0)
    b = data.assign_splits(images, 0.5, seed=0)
    c = data.assign_splits(images, 0.5, seed=1)
    assert a.equals(b)
    assert not a.equals(c)
    # adding unrelated images does not move existing patients
    more = pd.concat([images, images.assign(image_id=images["image_id"] + "-x", patient_key=images["patient_key"] + "-x")])
    d = data.assign_splits(more, 0.5, seed=0)
    cxr = images.loc[images["source"] == "chestxray14", "image_id"]
    assert (d.loc[cxr] == a.loc[cxr]).mean() > 0.7


def test_images_without_patient_id_are_their_own_patient(image_records: pd.DataFrame):
    images = data.image_table(image_records)
    vqarad = images[images["source"] == "vqa-rad"]
    assert vqarad["patient_key"].is_unique
    assert vqarad["patient_key"].str.startswith("vqa-rad:image:").all()


def test_bad_eval_fraction_is_a_config_error(image_records: pd.DataFrame):
    with pytest.raises(ConfigError, match="eval_fraction"):
        data.assign_splits(data.image_table(image_records), 1.0, seed=0)


def test_question_without_image_record_is_named(image_records, questions):
    images = data.image_table(image_records)
    splits = data.assign_splits(images, 0.5, 0)
    bad = questions.copy()
    bad.loc[3, "image_id"] = "nowhere:1"
    with pytest.raises(RecordError, match=r"record 3 \(image nowhere:1\).*image_id"):
        data.attach_images(bad, images, splits)


def test_domain_mask_and_balance(image_records, questions):
    images = data.image_table(image_records)
    frame = data.attach_images(questions, images, data.assign_splits(images, 0.5, 0))
    mask = data.domain_mask(frame, {"source": "chestxray14", "modality": "x-ray", "organ": "chest"})
    assert mask.sum() == (frame["source"] == "chestxray14").sum() > 0
    assert data.domain_mask(frame, {"organ": "chest"}).sum() > mask.sum()  # VQA-RAD chest radiographs too
    skewed = pd.concat([frame, frame[frame["answer"] == "yes"]], ignore_index=True)
    balanced = data.balance_answers(skewed, seed=0)
    counts = balanced["answer"].value_counts()
    assert counts["yes"] == counts["no"] == (skewed["answer"] == "no").sum()


def test_collate_masks_all_but_answer(shared_data: Path, questions, tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    examples = data.examples_from_questions(questions.head(4))
    encoded = data.encode_examples(examples, processor, shared_data)
    answer_ids = data.answer_token_ids(processor, {"yes": "yes", "no": "no"})
    batch = data.collate(encoded, processor.tokenizer.pad_token_id, answer_ids, processor.tokenizer.eos_token_id)
    labels = batch["labels"]
    # exactly the answer token and eos are supervised in every row
    assert ((labels != -100).sum(dim=1) == 2).all()
    first = (labels != -100).float().argmax(dim=1)
    expected = [answer_ids[e.answer][0] for e in examples]
    assert labels[range(4), first].tolist() == expected
    # left padding: every row ends with eos, and pads are masked out
    assert (batch["input_ids"][:, -1] == processor.tokenizer.eos_token_id).all()
    assert (batch["attention_mask"].sum(1) == torch_len(encoded) + 2).all()
    assert batch["pixel_values"].shape[0] == 4


def torch_len(encoded):
    import torch

    return torch.tensor([len(e.input_ids) for e in encoded])


def test_unreadable_image_names_question(shared_data: Path, questions, tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    bad = questions.head(1).copy()
    bad["image_path"] = "chestxray14/does-not-exist.png"
    with pytest.raises(RecordError, match=f"question {bad['qid'].iat[0]}"):
        data.encode_examples(data.examples_from_questions(bad), processor, shared_data)


def test_empty_training_split_fails_at_construction(tiny_model_dir, shared_data):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    with pytest.raises(ConfigError, match="training split is empty"):
        data.ProbingDataModule([], [], processor, shared_data, {"yes": "yes", "no": "no"})


def test_answer_text_outside_vocabulary_is_a_config_error(tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    with pytest.raises(ConfigError, match="answer_texts.yes"):
        data.answer_token_ids(processor, {"yes": "zzzqqq", "no": "no"})


def test_description_of_a_record():
    findings = '[{"condition": "nodule", "position": "right upper lung zone"}, {"condition": "nodule", "position": null}, ' \
               '{"condition": "effusion", "position": null}, {"condition": "mass", "position": null}]'
    assert data.describe_record("x-ray", "chest", True, findings) == "x-ray of the chest. findings: nodule, effusion."
    assert data.describe_record("ct", "abdomen", False, "[]") == "ct scan of the abdomen. no abnormal findings."
    assert data.describe_record("unknown", "brain", None, []) == "medical image of the brain."
    assert data.describe_record("mri", "other", None, []) == "mri."


def test_description_examples_supervise_the_description(shared_data: Path, questions, image_records, tiny_model_dir):
    from transformers import AutoProcessor

    from probmed.inference.prompting import PromptSet

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    rows = questions.head(8).assign(description="x-ray of the chest. no abnormal findings.")
    examples = data.description_examples(rows)
    assert [e.image_id for e in examples] == list(rows["image_id"].unique())
    assert all(e.task == "describe" and e.prompt == PromptSet.from_params(None).describe for e in examples)
    encoded = data.encode_examples(examples + data.examples_from_questions(rows.head(1)), processor, shared_data)
    answer_ids = data.answer_token_ids(processor, {"yes": "yes", "no": "no"})
    batch = data.collate(encoded, processor.tokenizer.pad_token_id, answer_ids, processor.tokenizer.eos_token_id)
    target = processor.tokenizer("x-ray of the chest. no abnormal findings.", add_special_tokens=False)["input_ids"]
    supervised = (batch["labels"] != -100).sum(dim=1).tolist()
    assert supervised == [len(target) + 1] * len(examples) + [2]  # description + eos; answer + eos


def _per_question_encoding(examples, processor, root: Path):
    """The processor over one copy of the image per question: what encode_examples must equal."""
    out = []
    for ex in examples:
        image = data.load_image(root, ex)
        batch = processor(images=[image], text=[data.chat_text(processor, ex.prompt)], return_tensors="pt")
        out.append((batch["input_ids"][0], batch["pixel_values"][0]))
    return out


def test_image_once_encoding_equals_the_processor_per_question(shared_data: Path, questions, tiny_model_dir):
    import torch
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    rows = questions.head(8).assign(description="x-ray of the chest. findings: nodule.")
    examples = data.examples_from_questions(rows) + data.description_examples(rows)
    assert len({e.image_path for e in examples}) < len(examples)  # several prompts per image
    encoded = data.encode_examples(examples, processor, shared_data)
    expected = _per_question_encoding(examples, processor, shared_data)
    assert [e.qid for e in encoded] == [e.qid for e in examples]
    for got, (ids, pixels) in zip(encoded, expected):
        assert torch.equal(got.input_ids, ids)
        assert torch.equal(got.pixel_values, pixels)


class _MiscountingProcessor:
    """The real processor, but its image token id is one the prompt never holds: the expansion check fails."""

    image_token_id = -1

    def __init__(self, processor):
        self._processor = processor
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self._processor(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._processor, name)


def test_a_processor_that_expands_otherwise_falls_back(shared_data: Path, questions, tiny_model_dir):
    import torch
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    examples = data.examples_from_questions(questions.head(4))
    expected = _per_question_encoding(examples, processor, shared_data)
    proxy = _MiscountingProcessor(processor)
    encoded = data.encode_examples(examples, proxy, shared_data)
    assert proxy.calls == 2 * len({e.image_path for e in examples})  # the first text, then every text
    assert all(torch.equal(got.input_ids, ids) for got, (ids, _) in zip(encoded, expected))
