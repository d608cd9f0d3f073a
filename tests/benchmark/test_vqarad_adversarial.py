"""The VQA-RAD adversarial ablation set on the real test split."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from probmed.benchmark.sources.vqarad import read_qa
from probmed.benchmark.vqarad_adversarial import build_vqarad_adversarial
from probmed.cli import main
from probmed.core.release_format import read_question_file


@pytest.fixture(scope="module")
def built(shared_data: Path, repo_root: Path):
    return build_vqarad_adversarial(shared_data / "vqa-rad", shared_data, seed=0)


def test_counts_and_exclusions(built) -> None:
    frame, report = built
    assert report["selected"] == 118
    assert report["twins_by_rules"] >= 90
    assert report["twins_by_rules"] + report["twins_by_llm"] + report["excluded"] == 118
    assert len(frame) == 2 * (report["twins_by_rules"] + report["twins_by_llm"])
    assert all(e["reason"] and e["qid"] for e in report["exclusions"])
    assert sum(report["twins_by_rule_kind"].values()) == report["twins_by_rules"]


def test_twins_are_pairs_and_never_a_yes_question(built, shared_data: Path) -> None:
    frame, _ = built
    qas = read_qa(shared_data / "vqa-rad")
    yes = {(q["image_name"].rsplit(".", 1)[0], re.sub(r"\W", "", q["question"].lower())) for q in qas if q["answer"].lower() == "yes"}
    gt, adv = frame.iloc[::2], frame.iloc[1::2]
    assert (gt.polarity == "gt").all() and (adv.polarity == "adversarial").all()
    assert (gt.answer == "yes").all() and (adv.answer == "no").all()
    assert (adv.strategy.str.startswith("rules:")).all() and (adv.evidence != "").all()
    for iid, q in zip(adv.image_id, adv.question):
        assert (iid, re.sub(r"\W", "", q.lower())) not in yes
    assert list(gt.qa_type.str.replace("gt", "hallu")) == list(adv.qa_type)
    # no image carries one question twice (an adversarial twin made twice was a probe's finding)
    texts = frame.image_id + "|" + frame.question.str.lower().str.replace(r"\W", "", regex=True)
    assert not texts.duplicated().any()
    # a side twin flips the side
    side = adv[adv.strategy == "rules:side"]
    assert "Is there a right apical pneumothorax?" in set(side.question)


def test_no_twin_is_true_for_its_image(built, shared_data: Path, repo_root: Path) -> None:
    """Every "no" checked against the image's metadata and every QA pair (the audit's truth check)."""
    from probmed.benchmark.audit.truthcheck import contradictions
    from probmed.benchmark.lint import lint_question
    from probmed.benchmark.sources.vqarad import load_vqarad

    frame, _ = built
    found = contradictions(frame, load_vqarad(shared_data / "vqa-rad", shared_data).records)
    assert found["checked"] and found["unmatched_images"] == 0 and found["count"] == 0, found["examples"]
    assert set(frame.loc[frame.answer == "no", "evidence"]) <= {"known_absent", "assumed_absent"}
    # twins read as well as their source: every question one capital letter and one question mark
    assert not [q for q in frame.question if {f.rule for f in lint_question(q)} & {"question-mark", "capital", "a-an"}]
    # a count noun put where the source had a mass noun takes an article ("Is there cardiomegaly?" -> "Is there a cyst?")
    twins = frame[frame.polarity == "adversarial"]
    assert "Is there a cyst present?" in set(twins.question)  # the source asks "Is there small bowel thickening present?"
    assert not [q for q in twins.question if lint_question(q)]


def test_condition_noun_form_fits_the_new_noun() -> None:
    from probmed.benchmark.vqarad_adversarial import _noun_form

    assert _noun_form("cyst", "cardiomegaly", "Is there ") == ("a cyst", "Is there ")
    assert _noun_form("rib fracture", "cardiomegaly", "Is ") == ("a rib fracture", "Is ")
    assert _noun_form("cyst", "cardiomegaly", "Is there any ") == ("cyst", "Is there any ")  # a determiner is there
    assert _noun_form("effusion", "mass", "Is there a ") == ("an effusion", "Is there ")
    assert _noun_form("pneumonia", "mass", "Is there a ") == ("pneumonia", "Is there ")  # a mass noun drops it
    assert _noun_form("pneumothorax", "cardiomegaly", "Is there ") == ("pneumothorax", "Is there ")  # either reads well


def test_cli_outputs_official_format(shared_data: Path, tmp_path: Path, repo_root: Path) -> None:
    out = tmp_path / "adv"
    rc = main(["vqarad-adversarial", "--data", str(shared_data / "vqa-rad"), "--image-root", str(shared_data),
               "--out", str(out / "a.parquet"), "--official", str(out / "a.json"), "--report", str(out / "r.md"),
               "--params", str(repo_root / "params.yaml")])
    assert rc == 0
    records = json.loads((out / "a.json").read_text())
    assert all(r["i"] % 2 == (0 if "_gt_" in r["qa_type"] else 1) for r in records)
    assert records[0]["image"].endswith(".jpg") and "/" not in records[0]["image"]
    assert records[0]["id"] == records[0]["image"][:-4] and records[0]["src_dataset"] == "VQA-RAD"
    back = read_question_file(out / "a.json")
    assert len(back) == len(records)
    md = (out / "r.md").read_text()
    assert "twins by rules" in md and "| qid | image | question | reason |" in md
    assert json.loads((out / "r.json").read_text())["excluded"] == md.count("\n| ") - 1


@pytest.mark.slow
def test_llm_path_for_uncovered_questions(shared_data: Path, tmp_path: Path, repo_root: Path) -> None:
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ctx = json.loads(body["messages"][-1]["content"])
            seen.append(ctx["question"])
            content = json.dumps({"question": "Is there a foreign body in this image?", "entity": "foreign body"})
            if "EKG" in ctx["question"]:
                content = "no idea"
            out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        out = tmp_path / "adv"
        rc = main(["vqarad-adversarial", f"extract.llm.base_url={url}", "questions.vqarad_adversarial.use_llm=true",
                   f"extract.llm.cache={tmp_path / 'c.jsonl'}", "extract.llm.max_retries=0",
                   "--data", str(shared_data / "vqa-rad"), "--image-root", str(shared_data),
                   "--out", str(out / "a.parquet"), "--official", str(out / "a.json"), "--report", str(out / "r.md"),
                   "--params", str(repo_root / "params.yaml")])
    finally:
        httpd.shutdown()
    assert rc == 0
    rep = json.loads((out / "r.json").read_text())
    # the EKG answer is invalid JSON: excluded, not crashed on; the server gives every question the same twin,
    # which an image gets once: a second one is excluded with the reason (no image asks one question twice)
    twice = [e for e in rep["exclusions"] if "['llm']" in e["reason"] and "already in the set" in e["reason"]]
    assert rep["twins_by_llm"] + len(twice) == len(seen) - 1 and rep["twins_by_llm"] > 0 and twice
    frame = pd.read_parquet(out / "a.parquet")
    assert not (frame.image_id + "|" + frame.question).duplicated().any()
    assert rep["twins_by_rules"] + rep["twins_by_llm"] + rep["excluded"] == 118
    assert any("EKG" in e["question"] for e in rep["exclusions"])
    assert not any("general-knowledge" in e["reason"] for e in rep["exclusions"] if e["question"] in seen)
