"""The OpenAI-compatible backend over real HTTP against the fault-injecting mock server."""

from __future__ import annotations

import json
import time

import pytest

from probmed.core.errors import BackendError, EndpointUnreachableError
from probmed.core.settings import get_setting
from probmed.inference.answer_store import AnswerStore
from probmed.inference.models.mock_server import MockChatServer, deterministic_answer
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet

PROMPTS = PromptSet.from_params({})


def api_models(base_url: str, **extra) -> dict:
    cfg = {
        "backend": "openai", "model_id": "gpt-4o-mock", "base_url": base_url, "api_key_env": "PROBMED_TEST_KEY",
        "concurrency": 4, "max_retries": 3, "timeout_s": 0.5, "backoff_base_s": 0.01, "backoff_max_s": 1.0,
        "max_tokens": 8, "logprobs": True, "max_image_side": 128,
    }
    cfg.update(extra)
    return {"api": cfg}


PRICING = {"gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}


@pytest.mark.slow
def test_faults_end_answered_or_recorded_failed(tmp_path, shared_data, questions, monkeypatch):
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-test-fault")
    q = questions.copy()
    # give every question a marker so each one gets its own fault script
    markers = ["429", "500", "timeout", "malformed", "empty", "refusal", "content_filter", "dead500"]
    scripts = {
        "429": ["429", "ok"], "500": ["500", "500", "ok"], "timeout": ["timeout", "ok"],
        "malformed": ["malformed", "ok"], "empty": ["empty", "ok"], "refusal": ["refusal"],
        "content_filter": ["content_filter"], "dead500": ["500"],
    }
    for i, m in enumerate(markers):
        q.loc[i, "question"] = f"[{m}] " + q.loc[i, "question"]
    with MockChatServer(faults={f"[{m}]": s for m, s in scripts.items()}, timeout_sleep_s=1.5) as srv:
        backend = build_backend(api_models(srv.base_url), "api", pricing=PRICING)
        t0 = time.perf_counter()
        result = run_predictions(q, backend,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store"), progress=False)
        elapsed = time.perf_counter() - t0
        backend.close()
        preds = result.predictions.set_index("qid")
        assert list(result.predictions["qid"]) == list(q["qid"])  # every question, in order, once
        by_marker = {m: preds.loc[q.loc[i, "qid"]] for i, m in enumerate(markers)}
        for m in ("429", "500", "timeout", "malformed", "empty"):
            row = by_marker[m]
            assert row["error"] == "" and row["label"] in ("yes", "no"), (m, row.to_dict())
        assert by_marker["refusal"]["label"] == "refusal"
        assert by_marker["content_filter"]["label"] == "refusal"
        dead = by_marker["dead500"]
        assert dead["error"].startswith("gave up after 4 attempts") and dead["label"] == "unparsed"
        # untouched questions: the server's deterministic answer, parsed; logprobs read
        clean = preds.loc[q.loc[len(markers):, "qid"]]
        assert all(clean["error"] == "")
        for qid, row in clean.iterrows():
            text = row["response"]
            assert row["label"] == text.strip(".").lower()
            assert (row["p_yes"] > 0.5) == (row["label"] == "yes")
        assert (clean["cost_usd"] > 0).all()
        assert result.backend_stats["retries"] == 1 + 2 + 1 + 1 + 1 + 3
        assert elapsed >= 0.2  # Retry-After: 0.2 honoured
        # no request without an image, none asked more than its script needs
        assert all(r["image"] for r in srv.requests)
        n_requests = len(srv.requests)
        # the store: one line per question, the failure included; a re-run re-asks only the failure
        store = AnswerStore(tmp_path / "store" / "api")
        assert len(store) == len(q)
        backend = build_backend(api_models(srv.base_url), "api", pricing=PRICING)
        again = run_predictions(q, backend,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store"), progress=False)
        backend.close()
        assert again.n_cached == len(q) - 1 and again.n_asked == 1
        assert len(srv.requests) == n_requests + 4
    lines = (tmp_path / "store" / "api" / "answers.jsonl").read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert len(keys) == len(q) + 1  # the dead question recorded twice (two failed runs), nothing else


@pytest.mark.slow
def test_concurrency_and_rate_limit(tmp_path, shared_data, questions, monkeypatch):
    """Checked on the server's side: how many requests it held at once, and how far apart they arrived."""
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with MockChatServer(latency_s=0.3) as srv:
        b = build_backend(api_models(srv.base_url, concurrency=15), "api")
        run_predictions(questions, b,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "a"), progress=False)
        b.close()
        concurrent = srv.max_in_flight
    with MockChatServer(latency_s=0.3) as srv:
        b = build_backend(api_models(srv.base_url, concurrency=15, rpm=600), "api")  # one request per 0.1 s
        run_predictions(questions, b,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "b"), progress=False)
        b.close()
        starts = sorted(r["t"] for r in srv.requests)
    assert len(questions) == 15 and concurrent >= 5, concurrent  # many of the 15 in flight together, not one by one
    assert len(starts) == 15 and starts[-1] - starts[0] >= 14 * 0.1 * 0.9  # starts 0.1 s apart (600 a minute)


@pytest.mark.slow
def test_bad_credentials_and_unreachable_endpoint(tmp_path, shared_data, questions, monkeypatch):
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-wrong-key-123")
    with MockChatServer(required_key="sk-right") as srv:
        b = build_backend(api_models(srv.base_url), "api")
        with pytest.raises(BackendError) as err:
            run_predictions(questions, b,
                PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "s"), progress=False)
        b.close()
    assert not isinstance(err.value, EndpointUnreachableError)
    assert "credentials" in str(err.value) and "sk-wrong-key-123" not in str(err.value)
    b = build_backend(api_models("http://127.0.0.1:9/v1", max_retries=1), "api")
    with pytest.raises(EndpointUnreachableError, match="unreachable"):
        run_predictions(questions, b,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "s"), progress=False)
    b.close()


def test_missing_key_for_hosted_api_is_a_config_error(monkeypatch):
    from probmed.core.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    models = {"gpt": {"backend": "openai", "model_id": "gpt-4o", "api_key_env": "OPENAI_API_KEY"}}
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_backend(models, "gpt")


def test_deterministic_answers_are_balanced():
    answers = [deterministic_answer(f"question {i}") for i in range(200)]
    assert 60 < answers.count("Yes.") < 140


@pytest.mark.slow
def test_huge_responses_are_capped_with_the_truncation_recorded(tmp_path, shared_data, questions, monkeypatch):
    """11 answers of 10 MB once made a 110 MB store; now each is cut to max_response_chars."""

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-test-huge")
    q = questions.copy()
    for i in range(3):
        q.loc[i, "question"] = "[huge] " + q.loc[i, "question"]
    q.loc[3, "question"] = "[nested] " + q.loc[3, "question"]
    with MockChatServer(faults={"[huge]": ["huge"], "[nested]": ["nested", "ok"]}, huge_chars=2_000_000) as srv:
        backend = build_backend(api_models(srv.base_url, timeout_s=10), "api", pricing=PRICING)
        result = run_predictions(q, backend,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store",
                       max_response_chars=1000, disk_reserve_mb=0), progress=False)
        backend.close()
    preds = result.predictions.set_index("qid")
    store = AnswerStore(tmp_path / "store" / "api")
    for i in range(3):
        row = preds.loc[q.loc[i, "qid"]]
        assert len(row["response"]) == 1000 and row["label"] == "yes"
        assert store.get(row["cache_key"])["truncated_from"] == len("Yes. ") + 2_000_000
    nested = preds.loc[q.loc[3, "qid"]]  # a body nested 100,000 deep is a malformed reply: retried, then fine
    assert nested["error"] == "" and nested["label"] in ("yes", "no")
    assert result.n_truncated == 3 and result.summary()["truncated"] == 3
    assert (tmp_path / "store" / "api" / "answers.jsonl").stat().st_size < 100_000


def test_server_reports_requests_in_flight_until_their_log_line_is_written(tmp_path):
    """A request its client gave up on is logged late; readers wait for in_flight == 0 before splitting the log."""
    import threading
    import urllib.request

    log = tmp_path / "server.jsonl"

    def stats(srv: MockChatServer) -> dict:
        with urllib.request.urlopen(srv.base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            return json.loads(resp.read())

    def ask(srv: MockChatServer) -> None:
        body = json.dumps({"messages": [{"role": "user", "content": "[slow] is it?"}]}).encode()
        req = urllib.request.Request(srv.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=0.2)
        except OSError:
            pass  # the client gives up first, like predict's timeout

    with MockChatServer(faults={"[slow]": ["timeout"]}, timeout_sleep_s=1.0, log_path=str(log)) as srv:
        t = threading.Thread(target=ask, args=(srv,))
        t.start()
        t.join()
        assert stats(srv)["in_flight"] == 1 and not log.exists()
        deadline = time.monotonic() + 10
        while stats(srv)["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stats(srv) == {"requests": 1, "in_flight": 0}
        assert [json.loads(x)["action"] for x in log.read_text().splitlines()] == ["timeout"]
