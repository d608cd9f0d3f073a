"""Training examples for domain fine-tuning, split by patient, as a Lightning data module.

Examples are the project's own probing questions (one closed question, one image,
answer yes/no), rendered with the same prompt as evaluation, so the model is
trained on exactly what it is later probed with. The pretrain stage can add a
short description task (the `describe` prompt, answered with a description
written from the image record: modality, organ, findings), so the default
model's descriptions in the `cot` and `described` settings depend on the image. Images are grouped by
(source, modality, organ); every patient lands wholly in `train` or `eval`, so a
held-out evaluation never sees another image of a training patient.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import lightning as L
import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset

from probmed.core.errors import ConfigError, RecordError
from probmed.infra.progress import progress

GROUP_KEYS: tuple[str, ...] = ("source", "modality", "organ")
IGNORE_INDEX = -100


# --- Splits --------------------------------------------------------------------


def describe_record(modality: str, organ: str, abnormal: Any, findings: Any, max_findings: int = 2) -> str:
    """A short description of an image written from its record, the target of the description task.

    ``"x-ray of the chest. findings: nodule, effusion."`` (at most `max_findings`
    distinct conditions, positions left out: short targets keep the task cheap);
    ``"ct scan of the abdomen. no abnormal findings."`` for a normal image; modality
    and organ alone when abnormality is unknown. `findings` is the record's list
    (or its JSON text) of ``{condition, position}``.
    """
    import json

    from probmed.core.vocab import MODALITY_QUESTION_NAMES, ORGAN_QUESTION_NAMES

    what = MODALITY_QUESTION_NAMES.get(modality, "medical image").lower()
    text = f"{what} of the {ORGAN_QUESTION_NAMES[organ]}" if organ in ORGAN_QUESTION_NAMES else what
    items = json.loads(findings) if isinstance(findings, str) else list(findings or [])
    named: list[str] = []
    for f in items:
        condition = f["condition"] if isinstance(f, Mapping) else f.condition
        if condition not in named and len(named) < max_findings:
            named.append(condition)
    if named:
        return f"{text}. findings: {', '.join(named)}."
    if abnormal is False:
        return f"{text}. no abnormal findings."
    return f"{text}."


def image_table(records: pd.DataFrame) -> pd.DataFrame:
    """One row per image: image_id, group keys, a patient key and the record's description.

    Sources without patient ids (VQA-RAD, MedICaT) treat each image as its own
    patient; the key is prefixed with the source so ids of two sources never meet.
    """
    missing = [c for c in ("image_id", *GROUP_KEYS) if c not in records.columns]
    if missing:
        raise RecordError(f"image records: missing column(s) {missing}")
    table = records[["image_id", *GROUP_KEYS]].copy()
    patients = records["patient_id"] if "patient_id" in records.columns else pd.Series([None] * len(records))
    own = [
        f"{src}:{pid}" if pid is not None and not (isinstance(pid, float) and math.isnan(pid)) and str(pid) != ""
        else f"{src}:image:{iid}"
        for src, pid, iid in zip(records["source"], patients.tolist(), records["image_id"])
    ]
    table["patient_key"] = own
    findings = records["findings"] if "findings" in records.columns else pd.Series([None] * len(records))
    abnormal = records["abnormal"] if "abnormal" in records.columns else pd.Series([None] * len(records))
    table["description"] = [describe_record(m, o, a, f) for m, o, a, f in zip(
        records["modality"], records["organ"], abnormal.tolist(), findings.tolist())]
    return table.drop_duplicates("image_id").reset_index(drop=True)


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def assign_splits(images: pd.DataFrame, eval_fraction: float, seed: int) -> pd.Series:
    """`train` / `eval` per image_id, assigned per patient, stratified by group.

    Within each (source, modality, organ) group the patients are ordered by a
    seeded hash and the first ceil(eval_fraction * n) go to `eval` (at least one
    when the group has two or more patients). A patient belongs to the group of
    its first image, so no patient is ever split. Hash order, not a shuffle,
    keeps a patient's split stable when other images are added.
    """
    if not 0.0 < eval_fraction < 1.0:
        raise ConfigError(f"finetune.split.eval_fraction must be in (0, 1), got {eval_fraction}")
    first = images.drop_duplicates("patient_key")
    eval_patients: set[str] = set()
    for _, group in first.groupby(list(GROUP_KEYS), sort=True, dropna=False):
        keys = sorted(group["patient_key"], key=lambda k: _rank(seed, k))
        n_eval = math.ceil(eval_fraction * len(keys)) if len(keys) >= 2 else 0
        eval_patients.update(keys[:n_eval])
    split = np.where(images["patient_key"].isin(eval_patients), "eval", "train")
    return pd.Series(split, index=images["image_id"].to_numpy(), name="split")


def attach_images(questions: pd.DataFrame, images: pd.DataFrame, splits: pd.Series) -> pd.DataFrame:
    """Questions with their image's group keys, patient key and split; unknown images are an error."""
    known = images.set_index("image_id")
    unknown = ~questions["image_id"].isin(known.index)
    if unknown.any():
        i = int(unknown.to_numpy().nonzero()[0][0])
        raise RecordError(
            f"questions: record {i} (image {questions['image_id'].iat[i]}): field 'image_id' has no image record"
        )
    out = questions.drop(columns=[c for c in GROUP_KEYS if c in questions.columns and c != "source"]).copy()
    joined = known.loc[out["image_id"]]
    for key in ("modality", "organ", "patient_key", "description"):
        out[key] = joined[key].to_numpy()
    out["source"] = joined["source"].to_numpy()
    out["split"] = splits.loc[out["image_id"]].to_numpy()
    return out


def domain_mask(frame: pd.DataFrame, domain: Mapping[str, Any]) -> pd.Series:
    """Rows whose (source, modality, organ) match every key given in `domain` (a missing/None key matches all)."""
    mask = pd.Series(True, index=frame.index)
    for key in GROUP_KEYS:
        value = domain.get(key)
        if value is not None:
            mask &= frame[key] == value
    return mask


def balance_answers(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Downsample the majority answer so yes and no are equally frequent (seeded).

    An unbalanced set teaches a yes-bias, the very failure adversarial pairs expose.
    """
    counts = frame["answer"].value_counts()
    if len(counts) < 2:
        return frame
    n = int(counts.min())
    parts = [
        part.sample(n=n, random_state=seed) if len(part) > n else part
        for _, part in frame.groupby("answer", sort=True)
    ]
    return pd.concat(parts).sort_index()


# --- Prompts and examples ------------------------------------------------------


def render_prompt(question: str, prompts: Any = None) -> str:
    """The evaluation prompt for a closed question (vanilla setting of probmed.inference.prompting)."""
    from probmed.inference.prompting import PromptSet

    return (prompts or PromptSet.from_params(None)).question_prompt("vanilla", question)


@dataclass(frozen=True)
class Example:
    """One training example: a closed question (`answer` yes | no) or, with task "describe",
    the describe prompt and the record's description as `answer`."""

    qid: str
    image_id: str
    image_path: str
    prompt: str
    answer: str
    task: str = "answer"  # answer | describe


def examples_from_questions(frame: pd.DataFrame, prompts: Any = None) -> list[Example]:
    """One Example per question row; a row without an image path is an error naming it."""
    examples = []
    for i, row in enumerate(frame.itertuples(index=False)):
        path = getattr(row, "image_path", None)
        if path is None or (isinstance(path, float) and math.isnan(path)) or str(path) == "":
            raise RecordError(f"questions: record {i} (image {row.image_id}): field 'image_path' is empty")
        examples.append(Example(row.qid, row.image_id, str(path), render_prompt(row.question, prompts), row.answer))
    return examples


def description_examples(frame: pd.DataFrame, prompts: Any = None) -> list[Example]:
    """One description example per image of `frame` (question rows joined with their image's
    `description`), in first-appearance order: the describe prompt, answered with the description."""
    from probmed.inference.prompting import PromptSet

    describe = (prompts or PromptSet.from_params(None)).describe
    images = frame.drop_duplicates("image_id")
    return [Example(f"describe:{r.image_id}", r.image_id, str(r.image_path), describe, r.description, "describe")
            for r in images.itertuples(index=False)]


def chat_text(processor: Any, prompt: str) -> str:
    """The training prompt for one question about one image, as the model's chat template renders it."""
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def answer_token_ids(processor: Any, answer_texts: Mapping[str, str]) -> dict[str, list[int]]:
    """Token ids of the trained answer strings; their first tokens must differ (logit mode reads them)."""
    tok = processor.tokenizer
    ids = {label: tok(str(answer_texts[label]), add_special_tokens=False)["input_ids"] for label in ("yes", "no")}
    unk = getattr(tok, "unk_token_id", None)
    for label, seq in ids.items():
        if not seq or (unk is not None and seq[0] == unk):
            raise ConfigError(
                f"finetune.answer_texts.{label} = {answer_texts[label]!r} is not in the model's vocabulary"
            )
    if ids["yes"][0] == ids["no"][0]:
        raise ConfigError("finetune.answer_texts: yes and no start with the same token; logit mode cannot tell them apart")
    return ids


@dataclass
class Encoded:
    """One example ready for collation: prompt tokens, the image's pixels and what the model must answer."""

    input_ids: torch.Tensor  # prompt tokens (image tokens expanded)
    pixel_values: torch.Tensor  # shared by every question of one image
    answer: str
    qid: str
    target_ids: list[int] | None = None  # a description's tokens; None: the answer word's tokens


def load_image(image_root: Path, example: Example):
    """The example's image as RGB; a RecordError names the question when it cannot be read."""
    from PIL import Image

    path = image_root / example.image_path
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except (OSError, ValueError) as exc:
        raise RecordError(f"question {example.qid} (image {example.image_id}): cannot read image {path}: {exc}") from exc


def _encode_image_texts(processor: Any, image: Any, texts: Sequence[str]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(pixels, unpadded prompt ids per text) for the texts of one image, the image preprocessed once.

    The processor runs on the image with the first text only; the others are tokenised
    with the image token expanded as often as the processor expanded it. That expansion
    is checked against the processor's own ids of the first text, and any mismatch (a
    processor that expands otherwise) falls back to the processor over every text."""
    first = processor(images=[image], text=[texts[0]], return_tensors="pt", padding=True)
    pixels, ids0 = first["pixel_values"][0], first["input_ids"][0][first["attention_mask"][0].bool()]
    token, token_id = getattr(processor, "image_token", None), getattr(processor, "image_token_id", None)
    if token is not None and token_id is not None and texts[0].count(token) == 1:
        n_image = int((ids0 == token_id).sum())
        expanded = [t.replace(token, token * n_image) for t in texts]
        batch = processor.tokenizer(expanded, return_tensors="pt", padding=True)
        rows = [batch["input_ids"][r][batch["attention_mask"][r].bool()] for r in range(len(texts))]
        if all(t.count(token) == 1 for t in texts) and torch.equal(rows[0], ids0):
            return pixels, rows
    batch = processor(images=[image] * len(texts), text=list(texts), return_tensors="pt", padding=True)
    return batch["pixel_values"][0], [batch["input_ids"][r][batch["attention_mask"][r].bool()]
                                      for r in range(len(texts))]


def encode_examples(
    examples: Sequence[Example], processor: Any, image_root: str | Path, desc: str = "encoding"
) -> list[Encoded]:
    """Tokenise prompts and preprocess each image once (images are decoded once, not per epoch)."""
    image_root = Path(image_root)
    by_image: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        by_image.setdefault(ex.image_path, []).append(i)
    encoded: list[Encoded | None] = [None] * len(examples)
    for path, idx in progress(by_image.items(), desc=desc, unit="image", leave=False):
        image = load_image(image_root, examples[idx[0]])
        texts = [chat_text(processor, examples[i].prompt) for i in idx]
        pixels, rows = _encode_image_texts(processor, image, texts)
        for row, i in enumerate(idx):
            ids = rows[row]
            ex = examples[i]
            target = None
            if ex.task == "describe":
                target = processor.tokenizer(ex.answer, add_special_tokens=False)["input_ids"]
            encoded[i] = Encoded(ids.clone(), pixels, ex.answer, ex.qid, target)
    return [e for e in encoded if e is not None]


def collate(
    items: Sequence[Encoded], pad_id: int, answer_ids: Mapping[str, list[int]] | None, eos_id: int | None
) -> dict[str, torch.Tensor]:
    """Left-pad prompt (+ answer + eos when training); labels mask everything but the answer.

    Left padding, as the evaluation backend pads: every prompt's last token sits
    in the last column, where logit mode reads P(yes) vs P(no).
    """
    seqs, labels = [], []
    for item in items:
        ids = item.input_ids.tolist()
        if answer_ids is None:
            seqs.append(ids)
            labels.append([IGNORE_INDEX] * len(ids))
        else:
            words = item.target_ids if item.target_ids is not None else answer_ids[item.answer]
            target = list(words) + ([eos_id] if eos_id is not None else [])
            seqs.append(ids + target)
            labels.append([IGNORE_INDEX] * len(ids) + target)
    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    label_t = torch.full((len(seqs), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, (s, lab) in enumerate(zip(seqs, labels)):
        input_ids[row, width - len(s):] = torch.tensor(s)
        label_t[row, width - len(s):] = torch.tensor(lab)
        mask[row, width - len(s):] = 1
    batch = {
        "input_ids": input_ids,
        "attention_mask": mask,
        "pixel_values": torch.stack([item.pixel_values for item in items]),
    }
    if answer_ids is not None:
        batch["labels"] = label_t
    return batch


class _ListDataset(Dataset):
    def __init__(self, items: Sequence[Encoded]):
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Encoded:
        return self.items[i]


class ProbingDataModule(L.LightningDataModule):
    """Train/validation loaders over encoded examples; the empty training split fails at construction."""

    def __init__(
        self,
        train: Sequence[Example],
        val: Sequence[Example],
        processor: Any,
        image_root: str | Path,
        answer_texts: Mapping[str, str],
        batch_size: int = 16,
        seed: int = 0,
        num_workers: int = 0,
    ):
        super().__init__()
        if not train:
            raise ConfigError("fine-tuning: the training split is empty (check finetune.domain and the question set)")
        if batch_size < 1:
            raise ConfigError(f"finetune batch_size must be >= 1, got {batch_size}")
        self.train_examples, self.val_examples = list(train), list(val)
        self.processor = processor
        self.image_root = Path(image_root)
        self.answer_ids = answer_token_ids(processor, answer_texts)
        self.batch_size, self.seed, self.num_workers = batch_size, seed, num_workers
        tok = processor.tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        self.eos_id = tok.eos_token_id
        self._train: list[Encoded] | None = None
        self._val: list[Encoded] | None = None

    def setup(self, stage: str | None = None) -> None:
        if self._train is None:
            self._train = encode_examples(self.train_examples, self.processor, self.image_root, "encoding train")
            self._val = encode_examples(self.val_examples, self.processor, self.image_root, "encoding val")

    def _collate(self, items: Sequence[Encoded]) -> dict[str, torch.Tensor]:
        return collate(items, self.pad_id, self.answer_ids, self.eos_id)

    def train_dataloader(self) -> DataLoader:
        self.setup()
        gen = torch.Generator().manual_seed(self.seed)
        return DataLoader(
            _ListDataset(self._train or []),
            batch_size=self.batch_size,
            shuffle=True,
            generator=gen,
            collate_fn=self._collate,
            num_workers=self.num_workers,
        )

    def val_dataloader(self) -> DataLoader:
        self.setup()
        return DataLoader(
            _ListDataset(self._val or []),
            batch_size=self.batch_size,
            shuffle=False,
            collate_fn=self._collate,
            num_workers=self.num_workers,
        )
