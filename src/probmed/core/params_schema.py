"""The shape of params.yaml: every key, its type, its default and what it means, stated once.

Why: a misspelt key (``score.bootstrp=200``) or a wrong type
(``score.bootstrap_resamples=lots``) must stop a command before any work, with
a message naming the key and the type expected, instead of being ignored or
ending in a traceback deep inside a stage; and code must not restate a default
(``.get("bootstrap_resamples", 1000)`` in five places drifts). Every command
checks the merged params (file + dotted overrides) against these definitions
once, at start (:func:`check_params`), and code reads the typed result
(:func:`parse_params` -> :class:`Params`), never the raw mapping.

A section is a frozen dataclass (:func:`section`): its fields are its keys,
each with its type, its default and a docstring. A key left out takes the
default of the place it stands in (``curate.vqarad`` and ``curate.medicat``
are both a :class:`CurateSource`, with their own folders), so a partial
params file is completed the way OmegaConf merges a mapping into a mapping.
No other key is allowed and every value present must have the declared type.
Maps with free keys (``models``, ``pricing``, ``datasets.question_sets``,
``pipeline.runs``) are ``dict[str, X]``. The entries of ``models`` are checked
by their backend's typed config (probmed.inference.models), which the CLI runs
beside this check. ``tests/core/test_params_schema.py`` loads the repository's
params.yaml through this schema and compares its values with the defaults
here, so the two cannot drift apart.

The parameters live in three files read as one tree (probmed.core.config):
params.yaml, what an experiment varies, and the registries of
:data:`PARAM_FILES` (models.yaml: which models exist and how each runs;
layout.yaml: where things are, and the defaults of commands run by hand).
DVC shows every key of params.yaml as a column of ``dvc exp show`` but only
the keys stages declare of any other file, so a registry of entries no run
uses stays out of the table. The schema is one: :class:`Params` types both.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Literal, Mapping, TypeVar, Union

from probmed.core.errors import ConfigError
from probmed.core.names import NAME_RULE, is_safe_name


@dataclass(frozen=True)
class Check:
    """A constraint beyond the type (``Annotated[int, Check(...)]``): a predicate and what it expects."""

    test: Callable[[Any], bool]
    expected: str


@dataclass(frozen=True)
class PartialOf:
    """``Annotated[dict[str, Any], PartialOf(S)]``: a partial mapping of section S, checked but kept as written.

    For overrides of a section (``finetune.profiles.<name>``) whose missing keys
    mean "as in the section", not "the default".
    """

    section: type[Section]


PositiveInt = Annotated[int, Check(lambda v: v > 0, "a positive integer")]
NonNegativeInt = Annotated[int, Check(lambda v: v >= 0, "an integer >= 0")]
AtLeastTwo = Annotated[int, Check(lambda v: v >= 2, "an integer >= 2")]
PositiveFloat = Annotated[float, Check(lambda v: v > 0, "a number > 0")]
NonNegativeFloat = Annotated[float, Check(lambda v: v >= 0, "a number >= 0")]
Fraction = Annotated[float, Check(lambda v: 0 <= v < 1, "a number in [0, 1)")]
OpenUnit = Annotated[float, Check(lambda v: 0 < v < 1, "a number in (0, 1)")]
UnitInterval = Annotated[float, Check(lambda v: 0 < v <= 1, "a number in (0, 1]")]
Seed = Annotated[int, Check(lambda v: 0 <= v < 2**32, "an integer in [0, 2**32) (a seed numpy accepts)")]
Name = Annotated[str, Check(is_safe_name, NAME_RULE)]
"""A name that becomes a file or folder name (probmed.core.names): as a value, or as the keys of a map."""


class Section:
    """A mapping with a fixed set of keys: the dataclass fields of a :func:`section` class."""


S = TypeVar("S", bound=type)
T = TypeVar("T")


@typing.dataclass_transform(kw_only_default=True, frozen_default=True)
def section(cls: S) -> S:
    """A params section: a frozen, keyword-only dataclass (fields = keys, with type, default and docstring)."""
    return dataclass(frozen=True, kw_only=True)(cls)  # type: ignore[return-value]


def default(value: Any) -> Any:
    """A field default that is a list, dict or section: each Params gets its own copy."""
    return field(default_factory=lambda: copy.deepcopy(value))


# --- benchmark construction -------------------------------------------------------------


@section
class Paths(Section):
    """Where raw inputs and derived files live."""

    data: str = "data"
    """Raw inputs: the DVC-tracked copy of the source data (data.dvc)."""
    build: str = "build"
    """Every derived table, image and report."""
    adhoc: str = "build/adhoc"
    """Where a command run by hand writes when no output is named and no key below names one: never the
    repository root, never a DVC stage's output (`probmed plan`, `track`, `report`, `audit`)."""


RECORD_TABLES = ["chestxray14", "vqarad", "medicat", "roco_images", "roco_extended", "covid_ct", "figshare", "brats"]
"""The sources whose records the pipeline curates and generates questions from (`curate.all`)."""


@section
class CurateSource(Section):
    """A source read in place from its folder (`probmed curate <source>`)."""

    data: str
    """The source's folder."""


@section
class CurateDicom(Section):
    """The DICOM sample folder and the licence of its files."""

    data: str = "data/pydicom-samples"
    licence: str | None = "MIT"
    """Of every file in the folder (SPDX or the licence's name)."""


Resample = Literal["lanczos", "bicubic", "bilinear", "nearest", "box", "hamming"]


@section
class CurateImagePolicy(Section):
    """How every curated image is written (curation.images): decode, grayscale, one size and filter, PNG.

    One policy for every source, so a model sees CT, MRI and radiographs prepared alike
    (ChestX-ray14's images are square: always fit square)."""

    image_size: PositiveInt = 256
    """Long side (fit long_side, pad) or side (fit square, pad) of the curated PNG."""
    fit: Literal["long_side", "square", "pad"] = "pad"
    resample: Resample = "lanczos"
    workers: PositiveInt = 2
    uncompressed: list[str] = default(["figshare", "brats", "covid_ct", "roco_images", "roco_extended"])
    """Sources whose PNGs are stored uncompressed, so a file's size is a function of its dimensions alone (one
    size for all, padded): in figshare the imaging plane, and with it the tumour type, showed in the compressed
    size (pituitary 34 KB, glioma 25 KB on average), in ROCO the modality; the audit's file-property shortcuts
    measure it."""


@section
class CurateImages(Section):
    """A source whose images are curated (curate.images): its folder and where its PNGs go."""

    data: str
    images_dir: str


def _images(name: str, folder: str) -> Any:
    return default(CurateImages(data=f"data/{folder}", images_dir=f"build/adhoc/images/{name}"))


@section
class CuratePositions(Section):
    """When a position read from text (a caption, clinical notes, a QA pair) becomes a position question (issue 38).

    A position is asked only where it is true at the goal rate: a source's text positions are kept only when
    its extractor's held-out position precision reaches ``min_text_precision`` (tests/benchmark/sources/
    test_text_positions.py measures it for every source listed); every other text position is withheld, the
    record saying why (docs/benchmark/positions.md)."""

    text_sources: list[str] = default([])
    """Sources whose text positions are asked (vqarad, medicat, roco, roco_images, roco_extended, covid_ct)."""
    min_text_precision: UnitInterval = 0.9
    """The held-out position precision a listed source's extractor must reach."""


@section
class Curate(Section):
    """`probmed curate`: where records go and how each source is read."""

    image_root: str = "."
    """Question image_path values are relative to this (the repository root)."""
    records_dir: str = "build/adhoc/records"
    """<source>.parquet + <source>.report.json per source, by hand (the curate stage names build/records)."""
    all: list[str] = default(list(RECORD_TABLES))
    """Sources `probmed curate all` reads: the curate stage's (`dvc.yaml` runs `probmed curate all`) and the
    record tables question generation and fine-tuning read. Text-only `roco` is curated only by name."""
    images: CurateImagePolicy = default(CurateImagePolicy())
    """The image policy of every source with images."""
    positions: CuratePositions = default(CuratePositions())
    """Which positions read from text become questions."""
    chestxray14: CurateImages = _images("chestxray14", "chestxray14")
    """The box list and label table."""
    vqarad: CurateSource = default(CurateSource(data="data/vqa-rad"))
    medicat: CurateSource = default(CurateSource(data="data/medicat-sample"))
    roco: CurateSource = default(CurateSource(data="data/roco-captions"))
    """Text only: extraction and statistics, never prediction."""
    dicom: CurateDicom = default(CurateDicom())
    roco_images: CurateImages = _images("roco_images", "roco-images")
    covid_ct: CurateImages = _images("covid_ct", "covid-chestxray-ct")
    figshare: CurateImages = _images("figshare", "figshare-brain-tumor")
    brats: CurateImages = _images("brats", "brats2015-deepmedic-sample")
    roco_extended: CurateImages = _images("roco_extended", "roco-extended")
    """More ROCO figures in the extended caption profile: ultrasound and the organs beyond the paper's four."""


@section
class VqaradAdversarial(Section):
    """The paper's VQA-RAD adversarial ablation set (`probmed vqarad-adversarial`)."""

    out: str = "build/adhoc/questions/vqarad_adversarial.parquet"
    official: str = "build/adhoc/questions/vqarad_adversarial.json"
    report: str = "build/adhoc/questions/vqarad_adversarial_report.md"
    use_llm: bool = False
    """Twins no rule covers go to extract.llm when true and an endpoint is set."""


@section
class Review(Section):
    """The expert-review sheet (`probmed review export`)."""

    n_images: PositiveInt = 100
    n_questions: PositiveInt = 170
    """Questions in the by-eye truth sample (`probmed review truth`): every source x image folder x category x
    answer once, the rest by ``weights``."""
    weights: dict[str, dict[str, NonNegativeFloat]] = default({
        "source": {"ChestX-ray14": 2.0, "MedICaT": 2.0, "COVID-19 IDC": 1.5, "figshare brain tumor": 1.5, "BraTS 2015": 1.5},
        "folder": {"roco_extended": 4.0},
        "category": {"organ": 3.0, "position": 3.0}})
    """The truth sample's share per stratum beyond its first question: stratum column -> value -> weight (the
    product over its columns, 1 for a value not listed): the newer sources and the organ and position questions,
    whose truth rests on rules rather than a source's labels, are drawn more often."""
    seed: Seed = 0
    out_dir: str = "build/adhoc/review"



@section
class Questions(Section):
    """`probmed generate`: which records become questions, and how adversaries are drawn."""

    records: list[str] = default([f"build/records/{name}.parquet" for name in RECORD_TABLES])
    strategy: Literal["balanced", "random", "popular", "adversarial"] = "balanced"
    """balanced (each text answered yes as often as no) | random | popular | adversarial (POPE)."""
    seed: Seed | None = None
    """None: the top-level seed."""
    out: str = "build/adhoc/questions/questions.parquet"
    official: str | None = "build/adhoc/questions/test.json"
    """The original release's question-file format."""
    report: str = "build/adhoc/questions/generation_report.json"
    stats_dir: str = "build/adhoc/stats"
    vqarad_adversarial: VqaradAdversarial = default(VqaradAdversarial())
    review: Review = default(Review())


@section
class Audit(Section):
    """`probmed audit` and the gate of question generation."""

    max_oracle_margin: NonNegativeFloat = 5.0
    """Points the text-only oracle and the blind ceiling may score above exact random (strict), per category and overall."""
    ceiling_units: list[Literal["pair", "image", "single", "contrast"]] = default(["contrast"])
    """The units the gate checks the blind ceiling on (pair: each within-image pair; image: the paper's per-image
    unit; single: single questions; contrast: contrast pairs): a ceiling more than max_oracle_margin above exact
    random (above the floor n/(4(n-1)) for modality and organ pairs) fails it. Every unit is measured and reported
    whatever this says. Contrast only for now: on the generated set's own pairs a table keyed on the source or
    the text still wins condition and position pairs where the truth rules leave few partners
    (docs/benchmark/yardstick.md); add pair, image and single once the designs deny it."""
    enforce: bool = True
    """False: a failed gate only warns (exploratory sets)."""
    folds: AtLeastTwo = 5
    """The oracle learns each text's majority answer on the other folds of images."""
    alpha: OpenUnit = 0.05
    """A text's training answers show a majority when a binomial test rejects a fair coin."""
    seed: Seed = 0
    """Cross-validation seed of the pixel-statistics leak check."""
    pixel_folds: AtLeastTwo = 5
    log_to_mlflow: bool = True
    """`probmed audit --track`: an audit/<set> run with the headline metrics."""


@section
class ExtractLLM(Section):
    """The LLM caption extractor's endpoint and cache."""

    base_url: str | None = None
    """OpenAI-compatible endpoint; the LLM extractor runs only when set."""
    model: str = "gpt-4o-2024-08-06"
    api_key_env: str = "OPENAI_API_KEY"
    """The key is read from this environment variable, never stored."""
    prompt_version: str = "v2"
    """Part of every cache key; v2 names ultrasound and the organs beyond the paper's four."""
    cache: str = "build/extract/llm_cache.jsonl"
    """Answers by caption hash + prompt version + model."""
    timeout_s: PositiveFloat = 60
    max_retries: NonNegativeInt = 2


@section
class Extract(Section):
    """How captions become records (`extract.method`)."""

    method: Literal["rules", "llm"] = "rules"
    llm: ExtractLLM = default(ExtractLLM())


# --- prediction ------------------------------------------------------------------------


@section
class Predict(Section):
    """`probmed predict`: question file, answer store and run-loop options."""

    questions: str = "build/questions/probmed.parquet"
    """The question set of a by-hand run: the pipeline's evaluated set."""
    image_root: str = "."
    """Question image_path values are relative to this."""
    store_dir: str = "build/adhoc/answers"
    """A by-hand run's answer store (JSONL per model), outside DVC's outputs; stages pass their own."""
    describe_dir: str = "build/adhoc/descriptions"
    """A by-hand run's cached image descriptions per describer."""
    out_dir: str = "build/adhoc/predictions"
    """By-hand prediction tables, outside DVC's outputs (`--out` names another place)."""
    read_stores: list[str] = default(["build/answers", "build/descriptions"])
    """Stores of the same model below these folders are read, never written, before asking (the pipeline's),
    so a by-hand run pays for nothing `dvc repro` has answered; a store inside them reads only itself."""
    batch_size: PositiveInt = 64
    """Questions per batch for backends that do not batch by image (APIs)."""
    fsync: bool = True
    """fsync the answer store once per batch."""
    lock_wait_s: NonNegativeFloat | None = 0
    """Another process writes the store: 0 stops at once naming its pid, N waits N s, None waits for ever."""
    disk_reserve_mb: NonNegativeFloat = 8
    """Kept beside each store, freed for the answers in flight on a full disk."""
    max_response_chars: PositiveInt | None = 32000
    """Longer responses are cut (the original length is recorded)."""
    cpu_kernels: Literal["portable", "native"] = "portable"
    """portable: the same answers and P(yes) on every x86-64 CPU (probmed.infra.cpu_kernels); native: this CPU's own kernels."""



@section
class RayEngine(Section):
    """`engine.ray`: the Ray cluster whose tasks answer the questions (probmed.inference.models.ray_engine)."""

    address: str | None = None
    """null: a Ray instance of this process (one machine); "auto": the cluster this machine has joined; host:port:
    that cluster's head."""
    images_per_task: PositiveInt = 8
    """Images whose questions one task answers: a task lost with its node costs at most these in flight."""
    batch_questions: PositiveInt = 1024
    """Questions handed to the cluster at once (split into tasks); the store is fsynced after each batch."""
    max_resubmits: NonNegativeInt = 3
    """How often a task lost with its worker or node is resubmitted, with only the questions the store lacks."""


@section
class Engine(Section):
    """Where `probmed predict` and `describe` compute answers; the store, its keys and every output are the same."""

    kind: Literal["local", "ray"] = "local"
    """local: this process; ray: tasks on a Ray cluster (engine.ray), each asking for its model's cpus and gpus."""
    ray: RayEngine = default(RayEngine())

@section
class Settings(Section):
    """The prompt templates of the settings (probmed.core.settings) and the describer."""

    prompt_version: str = "v1"
    """Bump when a template changes meaning; part of every cache key."""
    system_prompt: str | None = None
    vanilla: str = "{question} Answer with a single word: yes or no."
    describe: str = "Describe the medical image: its modality, the body part, and any abnormal findings with their location."
    with_description: str = "Description of the image: {description}\n{question} Answer with a single word: yes or no."
    describe_max_new_tokens: PositiveInt = 64
    describer: Name = "tiny"
    """The model that writes descriptions for setting=described (paper: gpt-4o)."""


@section
class ProfileModel(Section):
    """One model of a named list (``model_profiles.<profile>.<name>``): how it runs here, or why not."""

    runs: Literal["hf", "api", "unsupported"]
    model: str | None = None
    serve: str | None = None
    why: str | None = None


@section
class Pricing(Section):
    """API prices, for the cost estimate of a run."""

    input_per_mtok: NonNegativeFloat = 0.0
    """USD per million prompt tokens."""
    output_per_mtok: NonNegativeFloat = 0.0
    """USD per million completion tokens."""


@section
class Score(Section):
    """`probmed score`: bootstrap intervals and subset robustness."""

    bootstrap_resamples: NonNegativeInt = 1000
    """Images resampled with replacement for the intervals (0: none)."""
    ci_level: OpenUnit = 0.95
    seed: Seed = 0
    """Bootstrap seed."""
    subset_fractions: list[UnitInterval] = default([0.2, 0.4, 0.6, 0.8, 1.0])
    """Appendix C subset robustness."""
    subset_seed: Seed = 0


# --- fine-tuning -----------------------------------------------------------------------


@section
class Domain(Section):
    """The fine-tuning domain: records matching every field that is set."""

    source: str | None = "ChestX-ray14"
    modality: str | None = "x-ray"
    organ: str | None = "chest"


@section
class Split(Section):
    """How patients are split for fine-tuning and transfer."""

    eval_fraction: OpenUnit = 0.5
    """Patients per (source, modality, organ) group held out for transfer."""
    val_fraction: Fraction = 0.1
    """Training patients kept for the validation loss."""


@section
class AnswerTexts(Section):
    """The answer strings the model is trained to produce."""

    yes: str = "yes"
    no: str = "no"


@section
class Lora(Section):
    """The LoRA adapter (peft.LoraConfig)."""

    r: PositiveInt = 8
    alpha: PositiveFloat = 16
    dropout: Fraction = 0.05
    target_modules: str | list[str] = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj)"
    """A regex on full module names, or a list of suffixes."""


@section
class TrainStage(Section):
    """One training stage (finetune.pretrain, finetune.adapt)."""

    enabled: bool = True
    epochs: NonNegativeInt = 3
    lr: PositiveFloat = 0.001
    weight_decay: NonNegativeFloat = 0.0
    batch_size: PositiveInt = 32
    max_per_group: PositiveInt | None = None
    """Examples per (source, modality, organ)."""
    max_examples: PositiveInt | None = None
    describe: bool = False
    """Also learn to describe each training image (finetune.data)."""


@section
class Trainer(Section):
    """Passed to lightning.Trainer."""

    accelerator: str = "cpu"
    devices: PositiveInt | str | list[NonNegativeInt] = 1
    strategy: str = "auto"
    precision: str = "32-true"
    accumulate_grad_batches: PositiveInt = 1
    gradient_clip_val: NonNegativeFloat | None = 1.0
    deterministic: bool | Literal["warn"] = True
    num_workers: NonNegativeInt = 0
    log_every_n_steps: PositiveInt = 10
    cpu_kernels: Literal["portable", "native"] = "portable"
    """portable: the same weights on every x86-64 CPU (probmed.infra.cpu_kernels); native: this CPU's own kernels, this machine only."""


@section
class Transfer(Section):
    """The transfer study: base vs adapted model per image group."""

    batch_size: PositiveInt = 64
    """Questions per forward pass (logit mode)."""
    device: str = "cpu"
    threads: PositiveInt | None = 1
    """Torch CPU threads of both models (None: torch's default, one per core); as models.tiny.threads."""
    bootstrap_resamples: NonNegativeInt = 200
    max_images_per_group: PositiveInt | None = 20
    """Held-out images probed per (source, modality, organ); None = all."""
    plot_categories: list[str] = default(["modality", "organ", "abnormality", "condition", "position"])


@section
class FinetuneMLflow(Section):
    """Where fine-tuning runs are logged."""

    experiment: str = "probmed-finetune"


@section
class FinetuneProfile(Section):
    """What a profile (``finetune.profiles.<name>``) may override: the section without profiles."""

    profile: str = "cpu"
    """cpu: the defaults of this section | any other name: finetune.profiles.<name> merged on top."""
    questions: str = "build/questions/probmed-full.parquet"
    records: list[str] = default([f"build/records/{name}.parquet" for name in RECORD_TABLES])
    image_root: str = "."
    out_dir: str = "build/adhoc/finetune"
    """By hand; the finetune stages name build/finetune (`--out-dir`)."""
    base_model: str = "tiny"
    """tiny: the tiny LLaVA built from config, then pretrained; else an HF dir / hub id."""
    revision: str | None = None
    dtype: str | None = None
    """torch dtype for loading (None: the checkpoint's default)."""
    seed: Seed | None = None
    """None: the top-level seed."""
    domain: Domain = default(Domain())
    split: Split = default(Split())
    balance: bool = True
    """Equal yes / no answers in every training split."""
    answer_texts: AnswerTexts = default(AnswerTexts())
    lora: Lora = default(Lora())
    pretrain: TrainStage = default(TrainStage(epochs=8, max_per_group=80, describe=True))
    adapt: TrainStage = default(TrainStage(epochs=3, max_examples=1600))
    trainer: Trainer = default(Trainer())
    transfer: Transfer = default(Transfer())
    mlflow: FinetuneMLflow = default(FinetuneMLflow())


@section
class Finetune(FinetuneProfile):
    """`finetune`: the section and its named profiles (``finetune.profile`` picks one)."""

    profiles: dict[str, Annotated[dict[str, Any], PartialOf(FinetuneProfile)]] = default({})
    """Named overrides of this section (a mapping merges into the mapping it overrides)."""


# --- pipeline, tracking, report -----------------------------------------------------


@section
class DataSource(Section):
    """A raw source folder under paths.data."""

    dir: str | None = None
    """The source's folder under paths.data (None: the source's name)."""


@section
class ImageTypeCaps(Section):
    """How the full set's images spread over image types (probmed.benchmark.mix)."""

    max_share: UnitInterval = 0.5
    """No image type over this share of the images (seeded)."""
    max_images: PositiveInt | None = None


@section
class QuestionSet(Section):
    """One question set `dvc repro` generates and evaluates (build/questions/<name>.parquet)."""

    sources: list[str]
    image_types: ImageTypeCaps = default(ImageTypeCaps())
    max_images: PositiveInt | None = None
    """A seeded image subset spread over image types; None = the full set."""
    min_units_per_category: NonNegativeInt = 0
    """The subset takes images until every category has this many scoring units (pairs, per-image units,
    abnormality questions; contrast pairs too where the table has them), even beyond max_images."""
    min_image_types: NonNegativeInt = 0
    """The subset takes an image of each image type first, until at least this many types appear."""
    exclude_training_images: bool = False
    """Leave out images the default tiny model was pretrained on (finetune split)."""
    commercial_only: bool = False
    """Only images whose licence allows commercial use (no CC BY-NC*, MedICaT)."""
    scope: Literal["extended", "paper"] = "extended"
    """extended: every askable modality and organ (core.vocab.SCOPES); paper: only the paper's 12 image types,
    asked about its 3 modalities and 4 organs, so numbers compare with its tables."""
    seed: Seed | None = None


@section
class Datasets(Section):
    """The raw sources and the question sets built from them."""

    sources: dict[Name, DataSource] = default({})
    question_sets: dict[Name, QuestionSet] = default({})


@section
class Run(Section):
    """One evaluation: a question set, a model and a setting."""

    question_set: Name
    model: Name
    setting: Name


@section
class Pipeline(Section):
    """What `dvc repro` evaluates."""

    runs: dict[Name, Run] = default({})
    described_runs: dict[Name, Run] = default({})
    describe: list[Name] = default([])
    """Question sets whose images settings.describer describes."""


@section
class Tracking(Section):
    """MLflow: store, artifact root and experiment."""

    enabled: bool = True
    uri: str = "sqlite:///mlflow.db"
    artifact_root: str = "mlruns"
    experiment: str = "probmed"


ModelPair = Annotated[list[str], Check(lambda v: len(v) == 2, "a pair [model_a, model_b]")]


@section
class Report(Section):
    """The HTML report, its tables and figures."""

    title: str = "ProbMed probing evaluation"
    transfer_models: list[str] = default(["finetune-base", "finetune-adapted"])
    """Figure 5: base vs fine-tuned per image type."""
    transfer_category: str = "condition"
    model_comparisons: list[ModelPair] = default([["tiny", "blind"], ["finetune-adapted", "finetune-base"]])
    """Model A - model B (vanilla) with a paired bootstrap interval, wherever both ran."""
    min_images_per_cell: NonNegativeInt = 5
    """Heatmap cells with fewer images are greyed out (their n still shown); the transfer figure leaves out
    image types with fewer images."""
    min_units: NonNegativeInt = 10
    """A table number resting on fewer scoring units (pairs, images or questions) is shown as "— (n=...)", not as a number."""
    blind_model: str = "blind"
    """The question-only baseline (a name under `models:`) every model is compared with, per category, beside random."""
    log_to_mlflow: bool = True


_SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
SemVer = Annotated[str, Check(lambda v: isinstance(v, str) and _SEMVER.fullmatch(v) is not None,
                              "a semantic version MAJOR.MINOR.PATCH, written as a string (e.g. '1.0.0'; "
                              "YAML reads 1.0 as a number)")]


@section
class Release(Section):
    """`probmed release`: the versioned, citable dataset folder of a question set."""

    version: SemVer = "1.3.0"
    """The semantic version, the release folder's name (<out_dir>/<set>/<version>/); the full version adds the first
    12 hex digits of the content hash (<version>+<hash>, in release.json, the card and CITATION.cff). Bump it when
    the content changes."""
    out_dir: str = "build/adhoc/release"
    """Releases go to <out_dir>/<set>/<version>/."""
    url: str | None = None
    """Where the release is published (a URL, or https://doi.org/<DOI>), for the card's and CITATION.cff's citation;
    None: the card shows a placeholder the releaser fills in."""
    truth_reviews: list[str] = default(["review/truth_review.csv", "review/truth_review_round4.csv",
                                        "review/truth_review_round5.csv", "review/truth_review_round6.csv"])
    """Committed by-eye truth sheets (`probmed review truth`, judged) whose true / doubtful / false counts the card
    states among its limitations."""


@section
class Params(Section):
    """params.yaml as a whole."""

    paths: Paths = default(Paths())
    seed: Seed = 0
    curate: Curate = default(Curate())
    questions: Questions = default(Questions())
    audit: Audit = default(Audit())
    extract: Extract = default(Extract())
    model: Name = "tiny"
    """A name under `models:`."""
    setting: Name = "vanilla"
    """A name of probmed.core.settings.SETTINGS."""
    predict: Predict = default(Predict())
    engine: Engine = default(Engine())
    settings: Settings = default(Settings())
    models: dict[Name, dict[str, Any]] = default({})
    """Each entry: its backend's typed config (probmed.inference.models)."""
    model_profiles: dict[str, dict[str, ProfileModel]] = default({})
    pricing: dict[str, Pricing] = default({})
    """USD per million tokens, by API model id (prefix match)."""
    score: Score = default(Score())
    finetune: Finetune = default(Finetune())
    datasets: Datasets = default(Datasets())
    pipeline: Pipeline = default(Pipeline())
    tracking: Tracking = default(Tracking())
    report: Report = default(Report())
    release: Release = default(Release())


CURATE_PARAMS = ("image_root", "images", "positions", "all")  # the keys of `curate` params.yaml keeps: the rest is where things are

PARAM_FILES: dict[str, tuple[str, ...]] = {
    "models.yaml": ("models", "model_profiles", "pricing", "finetune.profiles"),
    "layout.yaml": ("paths", "model", "setting", *(f"curate.{f.name}" for f in dataclasses.fields(Curate) if f.name not in CURATE_PARAMS),
                    "questions.records", "questions.out", "questions.official", "questions.report",
                    "questions.stats_dir", "questions.vqarad_adversarial.out", "questions.vqarad_adversarial.official",
                    "questions.vqarad_adversarial.report", "questions.review", "predict.questions",
                    "predict.store_dir", "predict.describe_dir", "predict.out_dir", "predict.read_stores",
                    "predict.batch_size", "predict.fsync", "predict.lock_wait_s", "predict.disk_reserve_mb",
                    "datasets.sources", "release.out_dir", "engine", "finetune.out_dir"),
}
"""Registry files beside params.yaml and the keys each keeps (dotted: ``finetune.profiles`` within
``finetune``): models.yaml the model registry, layout.yaml what no DVC stage declares (folders, the files
of by-hand runs, their default model; each source's folders, which dvc.yaml names as curate's deps and outs). A self-contained parameter file (a test's) may write them in params.yaml
instead."""


def file_of(key: str) -> str:
    """The file that keeps a dotted key in the repository's layout (params.yaml or a registry file)."""
    for name, keys in PARAM_FILES.items():
        if any(key == k or key.startswith((f"{k}.", f"{k}[")) for k in keys):
            return name
    return "params.yaml"


# --- the check -------------------------------------------------------------------------


def check_params(cfg: Mapping[str, Any], schema: type[Section] = Params) -> None:
    """Every key of `cfg` known and every value of its declared type; ConfigError names the first that is not."""
    _check(cfg, schema, "")


def parse_params(cfg: Mapping[str, Any]) -> Params:
    """The typed params: `cfg` checked (:func:`check_params`), every key it leaves out at its default."""
    check_params(cfg)
    return build_section(cfg, Params, "")


def build_section(value: Mapping[str, Any], cls: type[T], key: str, base: T | None = None) -> T:
    """`value` (already checked) as a `cls`: keys it leaves out come from `base`, else from the field defaults.

    `base` is the section standing at that place by default, so a partial
    mapping merges into it (``curate.vqarad: {}`` keeps ``data/vqa-rad``).
    """
    hints = keys_of(cls)  # type: ignore[arg-type]
    built: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = f.name
        if name in value:
            inner = getattr(base, name) if base is not None else _field_default(f)
            built[name] = _build(value[name], hints[name], _join(key, name), inner)
        elif base is not None:
            built[name] = getattr(base, name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"params: {_join(key, name)} is required ({describe(hints[name])})")
    return cls(**built)


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _build(value: Any, hint: Any, key: str, base: Any) -> Any:
    """One checked value as its typed form: sections built (merging into `base`), lists and maps walked."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        inner, *checks = typing.get_args(hint)
        if any(isinstance(c, PartialOf) for c in checks):
            return copy.deepcopy(dict(value))
        return _build(value, inner, key, base)
    if origin in (Union, types.UnionType):
        option = next(o for o in typing.get_args(hint) if _shallow_match(value, o))
        return _build(value, option, key, base if _shallow_match(base, option) else None)
    if isinstance(hint, type) and issubclass(hint, Section):
        return build_section(value, hint, key, base if isinstance(base, hint) else None)
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_build(element, item, f"{key}[{i}]", None) for i, element in enumerate(value)]
    if origin is dict:
        _, item = typing.get_args(hint)
        return {name: _build(element, item, _join(key, name), None) for name, element in value.items()}
    return copy.deepcopy(value)


def as_mapping(obj: Any) -> Any:
    """A built section (or list/map of them) as plain containers, for logging, hashing and JSON."""
    if isinstance(obj, Section):
        return {f.name: as_mapping(getattr(obj, f.name)) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]
    if isinstance(obj, list):
        return [as_mapping(item) for item in obj]
    if isinstance(obj, dict):
        return {name: as_mapping(item) for name, item in obj.items()}
    return obj


def selected_finetune(finetune: Finetune) -> FinetuneProfile:
    """The `finetune` section with its selected profile (``finetune.profile``) merged on top.

    ``cpu`` is the section itself; any other name must be a key of
    ``finetune.profiles``, whose mapping merges into the section (a mapping into
    a mapping, anything else replaces).
    """
    if finetune.profile == "cpu":
        return finetune
    if finetune.profile not in finetune.profiles:
        have = ", ".join(dict.fromkeys(["cpu", *finetune.profiles]))
        raise ConfigError(f"finetune.profile = {finetune.profile!r}: no finetune.profiles.{finetune.profile} (have: {have})")
    merged = build_section(finetune.profiles[finetune.profile], FinetuneProfile, "finetune", finetune)
    return merged


def keys_of(section: type[Section]) -> dict[str, Any]:
    """A section's keys and their types, in declaration order (base classes first)."""
    return typing.get_type_hints(section, include_extras=True)


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def check_value(value: Any, hint: Any, key: str) -> None:
    """One value against its declared type and range; ConfigError names `key` (a backend config's field too)."""
    _check(value, hint, key)


def conforms(value: Any, hint: Any) -> bool:
    """Whether one value has its declared type and range (a command-line option typed like a parameter)."""
    try:
        _check(value, hint, "")
    except ConfigError:
        return False
    return True


def _check(value: Any, hint: Any, key: str, shown: Any = None) -> None:
    """Check `value` against `hint`; `shown` is the type a message names (the whole union, not one option)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return
    if origin is Annotated:
        base, *checks = typing.get_args(hint)
        partial = next((c for c in checks if isinstance(c, PartialOf)), None)
        _check(value, partial.section if partial else base, key, shown or hint)
        for check in checks:
            if isinstance(check, Check) and not check.test(value):
                _wrong(value, shown or hint, key)
        return
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            if _shallow_match(value, option):
                _check(value, option, key, hint)
                return
        _wrong(value, shown or hint, key)
    if isinstance(hint, type) and issubclass(hint, Section):
        _check_section(value, hint, key)
    elif origin is list:
        if not isinstance(value, list):
            _wrong(value, shown or hint, key)
        (item,) = typing.get_args(hint)
        for i, element in enumerate(value):
            _check(element, item, f"{key}[{i}]")
    elif origin is dict:
        if not isinstance(value, Mapping):
            _wrong(value, shown or hint, key)
        name_hint, item = typing.get_args(hint)
        for name, element in value.items():
            _check_name(name, name_hint, key)
            _check(element, item, _join(key, name))
    elif not _shallow_match(value, hint):
        _wrong(value, shown or hint, key)


def _check_name(name: Any, hint: Any, key: str) -> None:
    """A key of a free map against the map's key type (``dict[Name, Run]``: each key a safe name)."""
    if typing.get_origin(hint) is not Annotated:
        return
    for check in typing.get_args(hint)[1:]:
        if isinstance(check, Check) and not check.test(name):
            raise ConfigError(f"params: {key} has the key {name!r}, expected {check.expected}{_kept_in(key)}")


def _check_section(value: Any, section: type[Section], key: str) -> None:
    if not isinstance(value, Mapping):
        _wrong(value, section, key)
    known = keys_of(section)
    for name, element in value.items():
        if name not in known:
            where = key or "params.yaml"
            raise ConfigError(
                f"params: {_join(key, name)} is not a parameter{_kept_in(_join(key, name))}; {where} takes: "
                f"{', '.join(known)}"
            )
        _check(element, known[name], _join(key, name))


def _shallow_match(value: Any, hint: Any) -> bool:
    """Whether `value` is of `hint`'s outer kind (a union picks the alternative to check deeply)."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _shallow_match(value, typing.get_args(hint)[0])
    if origin is Literal:
        return value in typing.get_args(hint) and not (isinstance(value, bool) and True not in typing.get_args(hint))
    if origin is list:
        return isinstance(value, list)
    if origin is dict or (isinstance(hint, type) and issubclass(hint, Section)):
        return isinstance(value, Mapping)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:  # YAML reads `prompt_version: 2` or a numeric revision as a number: still a name
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    return hint is Any


def describe(hint: Any) -> str:
    """A type as the error message names it: 'an integer', 'a list of strings', 'null or a number > 0'."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        checks = [c for c in typing.get_args(hint)[1:] if isinstance(c, Check)]
        return checks[0].expected if checks else describe(typing.get_args(hint)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(describe(option) for option in typing.get_args(hint))
    if origin is Literal:
        values = typing.get_args(hint)
        return repr(values[0]) if len(values) == 1 else "one of " + ", ".join(repr(v) for v in values)
    if origin is list:
        return f"a list of {_plural(describe(typing.get_args(hint)[0]))}"
    if origin is dict:
        return "a mapping"
    if isinstance(hint, type) and issubclass(hint, Section):
        return f"a mapping with keys {', '.join(keys_of(hint))}"
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}
    return names.get(hint, str(hint))


def _plural(text: str) -> str:
    for article in ("an ", "a "):
        if text.startswith(article):
            noun, _, rest = text[len(article):].partition(" ")
            return f"{noun}s{(' ' + rest) if rest else ''}"
    return text


def _wrong(value: Any, hint: Any, key: str) -> typing.NoReturn:
    shown = "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else repr(value)
    raise ConfigError(f"params: {key or 'params.yaml'} = {shown}, expected {describe(hint)}{_kept_in(key)}")


def _kept_in(key: str) -> str:
    """`` (models.yaml)`` for a key a registry file keeps: the message names the file to edit."""
    name = file_of(key)
    return "" if name == "params.yaml" else f" ({name})"
