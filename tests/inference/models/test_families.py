"""Every model family end to end offline: a tiny random-weight model built from its config, saved,
run through `probmed predict` (generation, logit mode, chain of thought) on real images, and with a
LoRA adapter. What runs here is the code path of the real checkpoints (MedGemma = gemma3, Lingshu /
HuatuoGPT-Vision = qwen2.5-vl, LLaVA-Med = llava, ...), not their weights."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from family_helpers import boost_answers

from probmed.cli import main
from probmed.core.answer_parser import parse_answer
from probmed.core.records import read_predictions, write_questions
from probmed.inference.answer_store import cache_key, file_hash
from probmed.inference.models.base import Item
from probmed.inference.models.families import FAMILIES as FAMILY_FACTS
from probmed.inference.models.registry import build_backend
from probmed.inference.models.tiny_families import BUILDERS, build_tiny_family
from probmed.inference.prompting import PromptSet
from probmed.infra.clock import read_work_log

FAMILIES = list(BUILDERS)
PROMPTS = PromptSet.from_params({})


def family_of_name(family: str):
    return FAMILY_FACTS[family]


def entry_name(family: str) -> str:
    return "fam-" + family.replace(".", "_")  # dotted overrides cannot address a key containing "."


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory) -> dict:
    """Each family built once (seed 0) and given an answering output head."""
    root = tmp_path_factory.mktemp("families")
    return {f: boost_answers(build_tiny_family(f, root / f"{f}-random"), root / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def qfile(tmp_path_factory, shared_data):
    from predict_helpers import make_questions

    path = tmp_path_factory.mktemp("questions") / "questions.parquet"
    write_questions(make_questions(shared_data, 3), path)  # 3 real VQA-RAD images, 5 questions each
    return path


def predict(repo_root, qfile, shared_data, work, family, model_dir, *overrides) -> tuple[pd.DataFrame, dict]:
    name = entry_name(family)
    out = work / f"{name}.parquet"
    args = ["predict", "--params", str(repo_root / "params.yaml"), "--questions", str(qfile),
            "--image-root", str(shared_data), "--no-progress", "--out", str(out), f"model={name}",
            f"predict.store_dir={work / 'answers'}", f"predict.describe_dir={work / 'descriptions'}",
            f"models.{name}.backend=hf", f"models.{name}.model_id={model_dir}", f"models.{name}.dtype=float32",
            f"models.{name}.device=cpu", f"models.{name}.max_new_tokens=4", f"models.{name}.threads=1",
            "settings.describe_max_new_tokens=6", *overrides]
    assert main(args) in (0, 1)
    return read_predictions(out), read_work_log(out)  # how it answered: the work log, never the table


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_predicts_in_generate_logit_and_cot_mode(family, family_dirs, qfile, shared_data, repo_root,
                                                        tmp_path, capsys):
    model_dir = family_dirs[family]
    # one new token: the boosted head answers yes or no at every step ("noyesno..." parses as nothing)
    gen, gen_attrs = predict(repo_root, qfile, shared_data, tmp_path, family, model_dir,
                             f"models.{entry_name(family)}.max_new_tokens=1")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["asked"] == 15 and summary["failed"] == 0
    path = "shared-prefix" if family_of_name(family).shared_prefix_verified else "per-image-batch"
    assert gen_attrs["run_info"]["family"] == family and gen_attrs["run_info"]["path"] == path
    assert (gen["label"] == gen["response"].map(parse_answer)).all()
    assert gen["label"].isin(["yes", "no"]).all(), str(list(zip(gen["response"], gen["label"])))  # the first token is an answer
    assert gen["completion_tokens"].eq(1).all()

    log, log_attrs = predict(repo_root, qfile, shared_data, tmp_path, family, model_dir,
                             f"models.{entry_name(family)}.mode=logits")
    assert log["p_yes"].between(0.0, 1.0).all() and log["p_yes"].notna().all()
    assert (log["label"] == log["p_yes"].map(lambda p: "yes" if p >= 0.5 else "no")).all()
    assert list(log["label"]) == list(gen["label"])  # P(yes) agrees with the first generated token
    counted = log_attrs["run_info"]["answer_tokens"]
    assert {t["text"].strip() for t in counted["yes"]} >= {"yes", "Yes"}
    assert {t["text"].strip() for t in counted["no"]} >= {"no", "No"}
    assert not set(gen["cache_key"]) & set(log["cache_key"])  # mode changes the answer, so the key

    cot, _ = predict(repo_root, qfile, shared_data, tmp_path, family, model_dir, "setting=cot")
    assert cot["label"].isin(["yes", "no", "unparsed", "refusal"]).all() and (cot["error"] == "").all()
    described = list((tmp_path / "descriptions").rglob("*.jsonl"))
    assert described and sum(1 for _ in open(described[0])) == 3  # one self-description per image


def test_answer_store_keys_are_distinct_per_family(family_dirs, tiny_dir, shared_data):
    """Same question, same image, same prompt: every family (and the default tiny model) has its own key."""
    from predict_helpers import make_questions

    q = make_questions(shared_data, 1).iloc[0]
    image = file_hash(shared_data / q.image_path)
    prompt = PROMPTS.question_prompt("vanilla", q.question)
    dirs = {**{f: family_dirs[f] for f in FAMILIES}, "tiny": tiny_dir}
    keys = {}
    for name, path in dirs.items():
        backend = build_backend({name: {"backend": "hf", "model_id": str(path), "dtype": "float32"}}, name)
        keys[name] = cache_key(backend.fingerprint(), "vanilla", PROMPTS.version, prompt, image, q.question)
    assert len(set(keys.values())) == len(dirs)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_loads_a_lora_adapter(family, family_dirs, tmp_path, shared_data):
    from peft import LoraConfig, get_peft_model
    from predict_helpers import make_questions
    from transformers import AutoModelForImageTextToText

    base_dir = family_dirs[family]
    model = AutoModelForImageTextToText.from_pretrained(base_dir)
    lora = LoraConfig(r=2, lora_alpha=4, target_modules=r".*(language_model|text_model).*\.(q_proj|v_proj)",
                      init_lora_weights=False)
    get_peft_model(model, lora).save_pretrained(tmp_path / "adapter")
    cfg = {"backend": "hf", "model_id": str(base_dir), "dtype": "float32", "mode": "logits"}
    plain = build_backend({"m": cfg}, "m")
    adapted = build_backend({"m": {**cfg, "adapter": str(tmp_path / "adapter")}}, "m")
    assert plain.fingerprint()["adapter"] is None and adapted.fingerprint()["adapter"]
    q = make_questions(shared_data, 1)
    items = [Item(qid=r.qid, image_id=r.image_id, image_path=shared_data / r.image_path,
                  prompt=PROMPTS.question_prompt("vanilla", r.question), question=r.question)
             for r in q.itertuples()]
    loaded = adapted.load()[0]
    assert hasattr(loaded, "peft_config")
    with torch.no_grad():
        a = adapted.load()[0](**adapted._inputs(items)).logits[:, -1]
        b = plain.load()[0](**plain._inputs(items)).logits[:, -1]
    assert (a - b).abs().max() > 0  # the adapter's weights are in the forward pass
    answers = adapted.answer(items)
    assert all(0.0 <= x.p_yes <= 1.0 for x in answers)
