"""Against the real OpenAI API (marker `api`): runs only with OPENAI_API_KEY set; costs a fraction of a cent."""

from __future__ import annotations

import os

import pytest

from probmed.core.config import load_params, to_plain
from probmed.core.settings import get_setting
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet


@pytest.mark.api
def test_gpt4o_answers_two_questions(tmp_path, repo_root, shared_data, questions):
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("needs OPENAI_API_KEY")
    cfg = load_params(repo_root / "params.yaml", ["models.gpt-4o.enabled=true", "models.gpt-4o.max_image_side=256"])
    backend = build_backend(to_plain(cfg.models), "gpt-4o", pricing=to_plain(cfg.pricing))
    prompts = PromptSet.from_params(to_plain(cfg.settings))
    job = PredictJob.in_folders(get_setting("vanilla"), prompts, shared_data, tmp_path)
    result = run_predictions(questions.head(2), backend, job, progress=False)
    backend.close()
    preds = result.predictions
    assert (preds["error"] == "").all() and preds["label"].isin(["yes", "no", "refusal"]).all()
    assert (preds["cost_usd"] > 0).all() and preds["p_yes"].notna().all()
    assert os.environ["OPENAI_API_KEY"] not in (tmp_path / "gpt-4o" / "answers.jsonl").read_text()
