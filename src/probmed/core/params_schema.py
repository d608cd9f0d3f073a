"""The shape of params.yaml: every key it may hold and the type of each, nothing else.

Why: a misspelt key (``score.bootstrp=200``) or a wrong type
(``score.bootstrap_resamples=lots``) must stop a command before any work, with
a message naming the key and the type expected, instead of being ignored or
ending in a traceback deep inside a stage. Every command checks the merged
params (file + dotted overrides) against this schema once, at start.

A section is a class whose annotations are its keys (:class:`Section`); every
key is optional here (code that needs a key says so when it reads it), but no
other key is allowed and every value present must have the declared type.
Maps with free keys (``models``, ``pricing``, ``datasets.question_sets``,
``pipeline.runs``) are ``dict[str, X]``. The entries of ``models`` are checked
by their backend's typed config (probmed.inference.models), which the CLI runs
beside this check. ``tests/core/test_params_schema.py`` loads the repository's
params.yaml through this schema, so the two cannot drift apart: a new key in
params.yaml needs its line here.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Literal, Mapping, Union

from probmed.core.errors import ConfigError


@dataclass(frozen=True)
class Check:
    """A constraint beyond the type (``Annotated[int, Check(...)]``): a predicate and what it expects."""

    test: Callable[[Any], bool]
    expected: str


PositiveInt = Annotated[int, Check(lambda v: v > 0, "a positive integer")]
NonNegativeInt = Annotated[int, Check(lambda v: v >= 0, "an integer >= 0")]
PositiveFloat = Annotated[float, Check(lambda v: v > 0, "a number > 0")]
NonNegativeFloat = Annotated[float, Check(lambda v: v >= 0, "a number >= 0")]
Fraction = Annotated[float, Check(lambda v: 0 <= v < 1, "a number in [0, 1)")]
OpenUnit = Annotated[float, Check(lambda v: 0 < v < 1, "a number in (0, 1)")]
UnitInterval = Annotated[float, Check(lambda v: 0 < v <= 1, "a number in (0, 1]")]


class Section:
    """A mapping with a fixed set of keys: the class annotations."""


# --- benchmark construction -------------------------------------------------------------


class Paths(Section):
    data: str
    build: str


class CurateSource(Section):
    data: str


class CurateDicom(Section):
    data: str
    licence: str | None  # of every file in the folder (SPDX or the licence's name)


Resample = Literal["lanczos", "bicubic", "bilinear", "nearest", "box", "hamming"]


class CurateChestXray14(Section):
    data: str
    images_dir: str
    image_size: PositiveInt
    resample: Resample
    workers: PositiveInt


class CurateImages(Section):
    """A source curated by one image policy (probmed.benchmark.sources.tabular.ImagePolicy)."""

    data: str
    images_dir: str
    image_size: PositiveInt
    fit: Literal["long_side", "square"]
    resample: Resample
    workers: PositiveInt


class Curate(Section):
    image_root: str
    records_dir: str
    all: list[str]
    chestxray14: CurateChestXray14
    vqarad: CurateSource
    medicat: CurateSource
    roco: CurateSource
    dicom: CurateDicom
    roco_images: CurateImages
    covid_ct: CurateImages
    figshare: CurateImages
    brats: CurateImages


class VqaradAdversarial(Section):
    out: str
    official: str
    report: str
    use_llm: bool


class Review(Section):
    n_images: PositiveInt
    seed: int
    out_dir: str


class Questions(Section):
    records: list[str]
    strategy: Literal["balanced", "random", "popular", "adversarial"]
    seed: int | None
    out: str
    official: str | None
    report: str
    stats_dir: str
    vqarad_adversarial: VqaradAdversarial
    review: Review


class Audit(Section):
    max_oracle_margin: NonNegativeFloat
    enforce: bool
    folds: Annotated[int, Check(lambda v: v >= 2, "an integer >= 2")]
    alpha: OpenUnit
    seed: int
    pixel_folds: Annotated[int, Check(lambda v: v >= 2, "an integer >= 2")]
    log_to_mlflow: bool


class ExtractLLM(Section):
    base_url: str | None
    model: str
    api_key_env: str
    prompt_version: str
    cache: str
    timeout_s: PositiveFloat
    max_retries: NonNegativeInt


class Extract(Section):
    method: Literal["rules", "llm"]
    llm: ExtractLLM


# --- prediction ------------------------------------------------------------------------


class Predict(Section):
    questions: str
    image_root: str
    store_dir: str
    describe_dir: str
    out_dir: str
    batch_size: PositiveInt
    fsync: bool
    lock_wait_s: NonNegativeFloat | None  # another process writes the store: 0 stops at once, N waits N s
    disk_reserve_mb: NonNegativeFloat  # kept beside each store, freed for the answers in flight on a full disk
    max_response_chars: PositiveInt | None  # longer responses are cut (the original length is recorded)


class Settings(Section):
    prompt_version: str
    system_prompt: str | None
    vanilla: str
    describe: str
    with_description: str
    describe_max_new_tokens: PositiveInt
    describer: str


class ProfileModel(Section):
    """One model of a named list (``model_profiles.<profile>.<name>``): how it runs here, or why not."""

    runs: Literal["hf", "api", "unsupported"]
    model: str
    serve: str
    why: str


class Pricing(Section):
    input_per_mtok: NonNegativeFloat
    output_per_mtok: NonNegativeFloat


class Score(Section):
    bootstrap_resamples: NonNegativeInt
    ci_level: OpenUnit
    seed: int
    subset_fractions: list[UnitInterval]
    subset_seed: int


# --- fine-tuning -----------------------------------------------------------------------


class Domain(Section):
    source: str | None
    modality: str | None
    organ: str | None


class Split(Section):
    eval_fraction: OpenUnit
    val_fraction: Fraction


class AnswerTexts(Section):
    yes: str
    no: str


class Lora(Section):
    r: PositiveInt
    alpha: PositiveFloat
    dropout: Fraction
    target_modules: str | list[str]


class TrainStage(Section):
    enabled: bool
    epochs: NonNegativeInt
    lr: PositiveFloat
    weight_decay: NonNegativeFloat
    batch_size: PositiveInt
    max_per_group: PositiveInt | None
    max_examples: PositiveInt | None
    describe: bool  # pretraining also learns to describe each training image (finetune.data)


class Trainer(Section):
    accelerator: str
    devices: PositiveInt | str | list[int]
    strategy: str
    precision: str
    accumulate_grad_batches: PositiveInt
    gradient_clip_val: NonNegativeFloat | None
    deterministic: bool | Literal["warn"]
    num_workers: NonNegativeInt
    log_every_n_steps: PositiveInt


class Transfer(Section):
    batch_size: PositiveInt
    device: str
    bootstrap_resamples: NonNegativeInt
    max_images_per_group: PositiveInt | None
    plot_categories: list[str]


class FinetuneMLflow(Section):
    experiment: str


class FinetuneProfile(Section):
    """What a profile (``finetune.profiles.<name>``) may override: the section without profiles."""

    profile: str
    questions: str
    records: list[str]
    image_root: str
    out_dir: str
    base_model: str
    revision: str | None
    dtype: str | None
    seed: int | None
    domain: Domain
    split: Split
    balance: bool
    answer_texts: AnswerTexts
    lora: Lora
    pretrain: TrainStage
    adapt: TrainStage
    trainer: Trainer
    transfer: Transfer
    mlflow: FinetuneMLflow


class Finetune(FinetuneProfile):
    profiles: dict[str, FinetuneProfile]


# --- pipeline, tracking, report -----------------------------------------------------


class DataSource(Section):
    dir: str


class ImageTypeCaps(Section):
    """How the full set's images spread over image types (probmed.benchmark.mix)."""

    max_share: UnitInterval
    max_images: PositiveInt | None


class QuestionSet(Section):
    sources: list[str]
    image_types: ImageTypeCaps
    max_images: PositiveInt | None
    exclude_training_images: bool
    commercial_only: bool
    seed: int | None


class Datasets(Section):
    sources: dict[str, DataSource]
    question_sets: dict[str, QuestionSet]


class Run(Section):
    question_set: str
    model: str
    setting: str


class Pipeline(Section):
    runs: dict[str, Run]
    described_runs: dict[str, Run]
    describe: list[str]


class Tracking(Section):
    enabled: bool
    uri: str
    artifact_root: str
    experiment: str


class Report(Section):
    title: str
    transfer_models: list[str]
    transfer_category: str
    model_comparisons: list[Annotated[list[str], Check(lambda v: len(v) == 2, "a pair [model_a, model_b]")]]
    min_images_per_cell: NonNegativeInt
    log_to_mlflow: bool


class Params(Section):
    """params.yaml as a whole."""

    paths: Paths
    seed: int
    curate: Curate
    questions: Questions
    audit: Audit
    extract: Extract
    model: str
    setting: str
    predict: Predict
    settings: Settings
    models: dict[str, dict[str, Any]]  # each entry: its backend's typed config (probmed.inference.models)
    model_profiles: dict[str, dict[str, ProfileModel]]
    pricing: dict[str, Pricing]
    score: Score
    finetune: Finetune
    datasets: Datasets
    pipeline: Pipeline
    tracking: Tracking
    report: Report


# --- the check -------------------------------------------------------------------------


def check_params(cfg: Mapping[str, Any], schema: type[Section] = Params) -> None:
    """Every key of `cfg` known and every value of its declared type; ConfigError names the first that is not."""
    _check(cfg, schema, "")


def keys_of(section: type[Section]) -> dict[str, Any]:
    """A section's keys and their types, in declaration order (base classes first)."""
    return typing.get_type_hints(section, include_extras=True)


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _check(value: Any, hint: Any, key: str, shown: Any = None) -> None:
    """Check `value` against `hint`; `shown` is the type a message names (the whole union, not one option)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return
    if origin is Annotated:
        base, *checks = typing.get_args(hint)
        _check(value, base, key, shown or hint)
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
        _, item = typing.get_args(hint)
        for name, element in value.items():
            _check(element, item, _join(key, name))
    elif not _shallow_match(value, hint):
        _wrong(value, shown or hint, key)


def _check_section(value: Any, section: type[Section], key: str) -> None:
    if not isinstance(value, Mapping):
        _wrong(value, section, key)
    known = keys_of(section)
    for name, element in value.items():
        if name not in known:
            where = key or "params.yaml"
            raise ConfigError(
                f"params: {_join(key, name)} is not a parameter; {where} takes: {', '.join(known)}"
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
    raise ConfigError(f"params: {key or 'params.yaml'} = {shown}, expected {describe(hint)}")
