"""The Hugging Face backend on the tiny LLaVA: generation, logit mode, LoRA, save/reload."""

from __future__ import annotations

import shutil

import pytest
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor

from probmed.core.errors import ConfigError
from probmed.core.settings import get_setting
from probmed.inference.models.answer_tokens import answer_tokens
from probmed.inference.models.base import Item
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet

PROMPTS = PromptSet.from_params({})


def hf_models(model_dir, **extra) -> dict:
    return {"m": {"backend": "hf", "model_id": str(model_dir), "dtype": "float32", "device": "cpu",
                  "max_new_tokens": 6, **extra}}


def items_for(questions, root):
    return [Item(qid=r.qid, image_id=r.image_id, image_path=root / r.image_path,
                 prompt=PROMPTS.question_prompt("vanilla", r.question), question=r.question)
            for r in questions.itertuples()]


@pytest.fixture(scope="module")
def yesno_dir(tmp_path_factory, tiny_dir):
    """The tiny model with yes/no output rows boosted, so both answers appear as first tokens."""
    out = tmp_path_factory.mktemp("yesno") / "m"
    model = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    processor = AutoProcessor.from_pretrained(tiny_dir)
    tok = processor.tokenizer
    head = model.get_output_embeddings().weight
    g = torch.Generator().manual_seed(2)  # a direction that splits this vocabulary's hidden states (both answers occur)
    direction = torch.randn(head.shape[1], generator=g) * 20
    with torch.no_grad():  # opposite rows: whichever side the hidden state falls on, yes or no wins
        head[tok.convert_tokens_to_ids("yes")] = direction
        head[tok.convert_tokens_to_ids("no")] = -direction
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def test_generation_runs_per_image_batches(tiny_dir, shared_data, questions):
    backend = build_backend(hf_models(tiny_dir), "m")
    answers = backend.answer(items_for(questions.head(5), shared_data))  # one image, five questions
    assert len(answers) == 5
    assert all(a.response and a.completion_tokens > 0 and a.prompt_tokens > 16 for a in answers)
    single = [backend.answer([it])[0].response for it in items_for(questions.head(2), shared_data)]
    assert single == [a.response for a in answers[:2]]  # left padding: batching does not change answers


def test_logit_mode_agrees_with_first_generated_token(yesno_dir, shared_data, shared_data_questions):
    gen = build_backend(hf_models(yesno_dir, max_new_tokens=1), "m")
    log = build_backend(hf_models(yesno_dir, mode="logits"), "m")
    items = items_for(shared_data_questions, shared_data)
    tok = gen.load()[1].tokenizer
    counted = answer_tokens(tok)
    yes_ids, no_ids = set(counted.yes), set(counted.no)
    assert yes_ids == {tok.convert_tokens_to_ids("yes")} and no_ids == {tok.convert_tokens_to_ids("no")}
    first = gen.answer(items)
    by_logits = log.answer(items)
    decided = 0
    for g, lg in zip(first, by_logits):
        token = tok.convert_tokens_to_ids(g.response) if g.response else None
        assert 0.0 <= lg.p_yes <= 1.0 and lg.label in ("yes", "no") and lg.response == ""
        if token in yes_ids | no_ids:
            decided += 1
            assert lg.label == ("yes" if token in yes_ids else "no")
    assert decided >= 0.8 * len(items)
    # and on every item: the first generation step's own yes-vs-no preference is the logit-mode label
    model = gen.load()[0]
    with torch.no_grad():
        out = model.generate(**gen._inputs(items), max_new_tokens=1, do_sample=False, output_scores=True,
                             return_dict_in_generate=True)
    step = torch.softmax(out.scores[0].float(), dim=-1)
    prefers_yes = step[:, sorted(yes_ids)].sum(-1) >= step[:, sorted(no_ids)].sum(-1)
    assert [("yes" if p else "no") for p in prefers_yes.tolist()] == [a.label for a in by_logits]
    assert {a.label for a in by_logits} == {"yes", "no"}  # the check is not vacuous


@pytest.fixture(scope="module")
def shared_data_questions(shared_data):
    from predict_helpers import make_questions

    return make_questions(shared_data, 4)


def test_lora_adapter_loads_and_changes_the_key(tmp_path, tiny_dir, shared_data, questions):
    from peft import LoraConfig, get_peft_model

    from probmed.inference.models.hf import peft_quietly

    model = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    with peft_quietly():  # peft's own FutureWarning, as the project wraps it
        peft_model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                                                      init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    plain = build_backend(hf_models(tiny_dir), "m")
    adapted = build_backend(hf_models(tiny_dir, adapter=str(tmp_path / "adapter")), "m")
    loaded = adapted.load()[0]
    assert type(loaded).__name__ == "PeftModelForCausalLM" or hasattr(loaded, "peft_config")
    assert plain.fingerprint() != adapted.fingerprint()
    items = items_for(questions.head(5), shared_data)
    with torch.no_grad():
        batch = adapted._inputs(items)
        diff = (adapted.load()[0](**batch).logits - plain.load()[0](**plain._inputs(items)).logits).abs().max()
    assert diff > 0  # the adapter's weights are in the forward pass


def test_save_and_reload_give_identical_answers(tmp_path, tiny_dir, shared_data, questions):
    copy = tmp_path / "copy"
    model = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    model.save_pretrained(copy)
    AutoProcessor.from_pretrained(tiny_dir).save_pretrained(copy)
    items = items_for(questions.head(5), shared_data)
    a = build_backend(hf_models(tiny_dir), "m").answer(items)
    b = build_backend(hf_models(copy), "m").answer(items)
    assert [x.response for x in a] == [x.response for x in b]
    la = build_backend(hf_models(tiny_dir, mode="logits"), "m").answer(items)
    lb = build_backend(hf_models(copy, mode="logits"), "m").answer(items)
    assert [x.p_yes for x in la] == [x.p_yes for x in lb]


def test_retrained_weights_change_the_cache_key(tmp_path, tiny_dir, shared_data, questions):
    copy = tmp_path / "m"
    shutil.copytree(tiny_dir, copy)
    before = build_backend(hf_models(copy), "m").fingerprint()
    model = AutoModelForImageTextToText.from_pretrained(copy)
    with torch.no_grad():
        model.get_output_embeddings().weight.add_(0.01)
    model.save_pretrained(copy)
    after = build_backend(hf_models(copy), "m").fingerprint()
    assert before["weights"] != after["weights"]
    # a run through the store: the second model re-asks everything
    questions = questions.head(5)
    r1 = run_predictions(questions, build_backend(hf_models(tiny_dir), "m"),
        PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store"), progress=False)
    r2 = run_predictions(questions, build_backend(hf_models(copy), "m"),
        PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store"), progress=False)
    assert r1.n_asked == len(questions) and r2.n_asked == len(questions)


def test_hub_id_without_revision_is_rejected():
    with pytest.raises(ConfigError, match="revision"):
        build_backend({"x": {"backend": "hf", "model_id": "llava-hf/llava-1.5-7b-hf"}}, "x")


def test_unknown_and_disabled_models_are_config_errors():
    models = {"a": {"backend": "random"}, "b": {"backend": "hf", "enabled": False, "model_id": "x"}}
    with pytest.raises(ConfigError, match="unknown model 'zz'.*a, b"):
        build_backend(models, "zz")
    with pytest.raises(ConfigError, match="disabled"):
        build_backend(models, "b")


@pytest.mark.gpu
def test_cuda_answers_match_cpu(tiny_dir, shared_data, questions):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    items = items_for(questions, shared_data)
    cpu = build_backend(hf_models(tiny_dir, mode="logits"), "m").answer(items)
    gpu = build_backend(hf_models(tiny_dir, mode="logits", device="cuda"), "m").answer(items)
    assert [a.label for a in cpu] == [a.label for a in gpu]
    assert max(abs(a.p_yes - b.p_yes) for a, b in zip(cpu, gpu)) < 1e-3
