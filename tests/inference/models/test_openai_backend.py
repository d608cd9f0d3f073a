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


# --- issue 40: a deadline per request (item 3), errors no retry heals (item 12), one key per endpoint (item 10) ---

def run_api(backend, q, shared_data, store_dir):
    """`q` answered by `backend` into the store at `store_dir` (the backend closed after)."""
    try:
        return run_predictions(q, backend, PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, store_dir),
                               progress=False)
    finally:
        backend.close()


@pytest.mark.slow
def test_a_server_trickling_its_answer_is_cut_at_the_requests_deadline(tmp_path, shared_data, questions, monkeypatch):
    """One byte a second held each request 40 s under timeout_s=3: httpx's timeout covers each read, not the
    request. The deadline covers the whole request, body included: each trickle is cut before its body is complete."""
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    q = questions.iloc[:3].copy()
    q.loc[0, "question"] = "[stuck] " + q.loc[0, "question"]
    q.loc[1, "question"] = "[once] " + q.loc[1, "question"]
    with MockChatServer(faults={"[stuck]": ["trickle"], "[once]": ["trickle", "ok"]}, trickle_s=0.05) as srv:
        result = run_api(build_backend(api_models(srv.base_url, timeout_s=1, max_retries=1), "api"), q, shared_data,
                         tmp_path / "store")
        trickles = [dict(t) for t in srv.trickles]
    preds = result.predictions.set_index("qid")
    stuck, once, clean = (preds.loc[q["qid"].iloc[i]] for i in range(3))
    assert stuck["error"] == "gave up after 2 attempts: timed out after 1 s", stuck["error"]
    assert once["error"] == "" and once["label"] in ("yes", "no") and clean["error"] == ""
    assert len(trickles) == 3  # stuck twice, once once: each a ~300-byte body at 20 bytes a second
    assert all(t["sent"] < t["size"] for t in trickles), trickles  # each cut before its body was complete


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_host_name_that_does_not_resolve_is_tried_once(tmp_path, shared_data, questions, monkeypatch):
    """A DNS failure was retried 6-7 times (62-64 s) before the error: it does not heal."""
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    backend = build_backend(api_models("http://probmed-no-such-host.invalid/v1", max_retries=5, concurrency=1,
                                       backoff_base_s=0.05), "api")
    with pytest.raises(EndpointUnreachableError, match="probmed-no-such-host.invalid.* does not resolve"):
        run_api(backend, questions, shared_data, tmp_path / "store")
    assert backend.stats()["requests"] == 1


@pytest.mark.parametrize("url", ["htp://127.0.0.1:8000/v1", "127.0.0.1:8000/v1", "http:///v1", "http://127.0.0.1:99999/v1",
                                 "http://[::1/v1", " http://127.0.0.1:8000/v1"])
def test_a_base_url_that_cannot_work_is_refused_before_any_request(url, monkeypatch):
    """An invalid URL was retried as if the endpoint were down; it is a configuration error, named, at once."""
    from probmed.core.errors import ConfigError

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with pytest.raises(ConfigError, match="models.api.base_url"):
        build_backend(api_models(url), "api")


def self_signed_tls(tmp_path):
    """A server-side TLS context with a fresh self-signed certificate for 127.0.0.1 (no client trusts it)."""
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return ctx


@pytest.mark.slow
def test_a_certificate_the_client_cannot_verify_is_not_retried(tmp_path, shared_data, questions, monkeypatch):
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with MockChatServer(tls=self_signed_tls(tmp_path)) as srv:
        backend = build_backend(api_models(srv.base_url, max_retries=5, concurrency=1), "api")
        with pytest.raises(BackendError, match="TLS") as err:
            run_api(backend, questions, shared_data, tmp_path / "store")
        assert srv.connections == 1 and srv.requests == []  # one handshake, refused by the client; no retry
    assert "certificate" in str(err.value) and not isinstance(err.value, EndpointUnreachableError)


@pytest.mark.slow
@pytest.mark.parametrize("status", ["401", "403", "404"])
def test_an_endpoint_refusing_every_request_is_asked_once(status, tmp_path, shared_data, questions, monkeypatch):
    """Bad credentials, a forbidden or unknown model: the run stops at the first answer, nothing retried."""
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with MockChatServer(fault_rates={status: 1.0}) as srv:
        with pytest.raises(BackendError, match=f"HTTP {status}"):
            run_api(build_backend(api_models(srv.base_url, max_retries=5, concurrency=1), "api"), questions,
                    shared_data, tmp_path / "store")
        assert len(srv.requests) == 1


@pytest.mark.slow
@pytest.mark.parametrize("status", ["400", "422"])
def test_a_request_the_server_cannot_process_is_recorded_failed_not_retried(status, tmp_path, shared_data, questions,
                                                                             monkeypatch):
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    q = questions.copy()
    q.loc[0, "question"] = "[bad] " + q.loc[0, "question"]
    with MockChatServer(faults={"[bad]": [status]}) as srv:
        result = run_api(build_backend(api_models(srv.base_url, max_retries=5), "api"), q, shared_data,
                         tmp_path / "store")
        asked = [r["action"] for r in srv.requests]
    failed = result.predictions.set_index("qid").loc[q["qid"].iloc[0]]
    assert failed["error"].startswith(f"HTTP {status}") and failed["label"] == "unparsed"
    assert asked.count(status) == 1 and len(asked) == len(q)  # one attempt each, the others answered
    assert result.n_failed == 1


@pytest.mark.slow
def test_transient_failures_are_retried_up_to_max_retries(tmp_path, shared_data, questions, monkeypatch):
    """A refused connection (a server restarting), 429, 5xx and timeouts heal: retried, attempts counted."""
    import threading

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    refused = build_backend(api_models(f"http://127.0.0.1:{free_port()}/v1", max_retries=2), "api")
    with pytest.raises(EndpointUnreachableError, match="connection failed 3 times"):
        run_api(refused, questions.iloc[:1], shared_data, tmp_path / "refused")
    assert refused.stats()["requests"] == 3  # one question: tried, then retried twice

    q = questions.copy()
    for i, marker in enumerate(["429", "500", "timeout"]):
        q.loc[i, "question"] = f"[{marker}] " + q.loc[i, "question"]
    scripts = {"[429]": ["429", "429", "ok"], "[500]": ["500", "500", "ok"], "[timeout]": ["timeout", "ok"]}
    port = free_port()
    restarted = MockChatServer(faults=scripts, timeout_sleep_s=1.5)
    later = threading.Timer(0.5, restarted.start, kwargs={"port": port})  # the server comes back while retried
    later.start()
    try:
        result = run_api(build_backend(api_models(f"http://127.0.0.1:{port}/v1", max_retries=5, backoff_base_s=0.2,
                                                  backoff_max_s=0.4), "api"), q, shared_data, tmp_path / "store")
        actions = [r["action"] for r in restarted.requests]
    finally:
        later.join()
        restarted.stop()
    assert result.n_failed == 0 and result.backend_stats["retries"] >= 2 + 2 + 1
    assert (actions.count("429"), actions.count("500"), actions.count("timeout")) == (2, 2, 1)
    assert len(actions) == len(q) + 5  # every question answered; only the scripted faults asked again


@pytest.mark.slow
def test_another_spelling_of_the_same_endpoint_asks_nothing_again(tmp_path, shared_data, questions, monkeypatch):
    """`127.0.0.1` then `localhost` asked all the questions again: the answer store keys the endpoint, not its spelling."""
    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with MockChatServer() as srv:
        first = run_api(build_backend(api_models(srv.base_url), "api"), questions, shared_data, tmp_path / "store")
        assert first.n_asked == len(questions) == len(srv.requests)
        for spelling in (f"http://localhost:{srv.port}/v1/", f"HTTP://LocalHost:{srv.port}/v1", f"http://[::1]:{srv.port}/v1",
                         f"http://0.0.0.0:{srv.port}//v1/"):
            again = run_api(build_backend(api_models(spelling), "api"), questions, shared_data, tmp_path / "store")
            assert (again.n_asked, again.n_cached) == (0, len(questions)), spelling
        assert len(srv.requests) == len(questions)
        other = run_api(build_backend(api_models(f"http://127.0.0.1:{srv.port}/v2"), "api"), questions, shared_data,
                        tmp_path / "store")
        assert other.n_asked == len(questions)  # another path is another endpoint


def test_the_default_api_url_spelled_out_is_the_same_endpoint_as_none(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    entry = {"backend": "openai", "model_id": "gpt-4o", "api_key_env": "OPENAI_API_KEY"}
    prints = [build_backend({"gpt": {**entry, **extra}}, "gpt").fingerprint()
              for extra in ({}, {"base_url": "https://api.openai.com/v1"}, {"base_url": "HTTPS://api.OpenAI.com:443/v1/"})]
    assert prints[0] == prints[1] == prints[2] and "base_url" not in prints[0]  # the key stores kept before
    gateway = build_backend({"gpt": {**entry, "base_url": "https://gateway.example/v1"}}, "gpt").fingerprint()
    assert gateway["base_url"] == "https://gateway.example/v1"


@pytest.mark.slow
def test_a_store_keyed_by_todays_spelling_is_still_read(tmp_path, shared_data, questions, monkeypatch):
    """Answers paid for under the key before endpoints were normalised (the URL as written, trailing slashes cut)
    are found under every spelling of that endpoint: nothing is asked again."""
    from probmed.inference.answer_store import cache_key, file_hash, stable_hash

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-x")
    with MockChatServer() as srv:
        run_api(build_backend(api_models(srv.base_url), "api"), questions, shared_data, tmp_path / "new")
        written_as = f"http://localhost:{srv.port}/v1"  # how the store's answers were keyed before this change
        backend = build_backend(api_models(written_as + "/"), "api")
        todays_fingerprint = {**backend.fingerprint(), "base_url": written_as}
        old = tmp_path / "old" / "api"
        old.mkdir(parents=True)
        with open(old / "answers.jsonl", "w") as fh:
            for line in (tmp_path / "new" / "api" / "answers.jsonl").read_text().splitlines():
                rec = json.loads(line)
                row = questions.set_index("qid").loc[rec["qid"]]
                image = file_hash(shared_data / row["image_path"])
                prompt = PROMPTS.question_prompt(get_setting("vanilla"), row["question"], None)
                rec["key"] = cache_key(todays_fingerprint, "vanilla", PROMPTS.version, prompt, image, row["question"])
                fh.write(json.dumps(rec) + "\n")
        assert stable_hash(todays_fingerprint) != stable_hash(backend.fingerprint())  # the key did change
        n = len(srv.requests)
        for spelling in (written_as, srv.base_url):
            again = run_api(build_backend(api_models(spelling), "api"), questions, shared_data, tmp_path / "old")
            assert (again.n_asked, again.n_cached) == (0, len(questions)), spelling
        assert len(srv.requests) == n


def test_two_questions_that_are_the_same_request_are_asked_once(tmp_path, shared_data, questions, monkeypatch):
    """Two rows whose prompt, image bytes and question coincide (a blank control makes many images one image)
    share one answer key: one request answers both, never two paid for the same thing."""
    import pandas as pd

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-test-shared")
    twin = questions.iloc[[0]].assign(qid="twin-of-" + str(questions.iloc[0]["qid"]))
    q = pd.concat([questions, twin], ignore_index=True)
    with MockChatServer() as srv:
        backend = build_backend(api_models(srv.base_url), "api", pricing=PRICING)
        job = PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "store")
        result = run_predictions(q, backend, job, progress=False)
        backend.close()
        assert len(srv.requests) == len(questions)  # the twin rode on its original's request
    preds = result.predictions.set_index("qid")
    assert result.n_asked == len(questions) and result.n_shared == 1
    assert preds.loc[twin.iloc[0]["qid"], "response"] == preds.loc[questions.iloc[0]["qid"], "response"] != ""
    assert list(result.predictions["qid"]) == list(q["qid"])
