"""LLM extractor against a scripted OpenAI-compatible server on 127.0.0.1 (no real LLM exists here)."""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from probmed.benchmark.curation.extract_llm import (
    SCHEMA,
    LLMAnswerError,
    LLMExtractor,
    parse_json_answer,
)
from probmed.cli import main
from probmed.core.params_schema import ExtractLLM

SECRET = "sk-test-do-not-leak-123"
SCRIPT = {
    "GOOD": json.dumps({"modality": "ct", "organ": "abdomen", "findings": [{"condition": "liver mass", "position": "right lobe"}]}),
    "FENCED": "```json\n" + json.dumps({"modality": "mri", "organ": "brain", "findings": []}) + "\n```",
    "BADJSON": "Sure! The modality is CT {",
    "BADSCHEMA": json.dumps({"modality": "pet", "organ": "brain", "findings": []}),
}


class Server:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.auth: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.auth.append(self.headers.get("Authorization", ""))
                user = body["messages"][-1]["content"]
                content = next((v for k, v in SCRIPT.items() if k in user), SCRIPT["BADJSON"])
                out = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def settings(server: Server, tmp_path: Path, **kw) -> ExtractLLM:
    return ExtractLLM(base_url=server.url, model="scripted-1", api_key_env="PROBMED_TEST_KEY", cache=str(tmp_path / "cache.jsonl"), max_retries=0, **kw)


@pytest.mark.slow
def test_extracts_validates_and_caches(server: Server, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROBMED_TEST_KEY", SECRET)
    ex = LLMExtractor(settings(server, tmp_path))
    got = ex.extract("r1", "GOOD caption")
    assert (got.modality, got.organ, got.findings) == ("ct", "abdomen", [{"condition": "liver mass", "position": "right lobe"}])
    assert ex.extract("r2", "FENCED caption").modality == "mri"
    assert len(server.requests) == 2 and server.auth[0] == f"Bearer {SECRET}"
    assert "Examples:" in server.requests[0]["messages"][0]["content"]  # the few-shot prompt is sent
    # same caption, prompt version and model: served from the cache, also by a fresh extractor
    LLMExtractor(settings(server, tmp_path)).extract("r1", "GOOD caption")
    assert len(server.requests) == 2
    # another model or prompt version is another cache key
    s = dataclasses.replace(settings(server, tmp_path), model="scripted-2")  # sections are frozen
    LLMExtractor(s).extract("r1", "GOOD caption")
    s2 = settings(server, tmp_path, prompt_version="v3")  # the default is v2
    LLMExtractor(s2).extract("r1", "GOOD caption")
    assert len(server.requests) == 4
    assert SECRET not in (tmp_path / "cache.jsonl").read_text()


@pytest.mark.slow
def test_invalid_answers_are_reported_not_crashed_on(server: Server, tmp_path: Path, repo_root: Path, capsys) -> None:
    tsv = tmp_path / "c.tsv"
    tsv.write_text("a\tGOOD one\nb\tBADJSON two\nc\tBADSCHEMA three\n")
    out = tmp_path / "o.jsonl"
    rc = main(["extract", str(tsv), f"extract.llm.base_url={server.url}", f"extract.llm.cache={tmp_path / 'cache.jsonl'}",
               "extract.llm.max_retries=0", "--method", "llm", "--out", str(out), "--params", str(repo_root / "params.yaml")])
    assert rc == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["a"]
    rep = json.loads(out.with_suffix(".report.json").read_text())
    errs = rep["excluded"]["extractor error"]["ids"]
    assert errs[0].startswith("b: invalid JSON") and errs[1].startswith("c: schema violation at modality")
    # the paid-for invalid answers are kept in the cache and not bought again
    n = len(server.requests)
    main(["extract", str(tsv), f"extract.llm.base_url={server.url}", f"extract.llm.cache={tmp_path / 'cache.jsonl'}",
          "--method", "llm", "--out", str(out), "--params", str(repo_root / "params.yaml")])
    assert len(server.requests) == n == 3


def test_schema() -> None:
    with pytest.raises(LLMAnswerError, match="findings/0"):
        parse_json_answer('{"modality": "ct", "organ": "chest", "findings": [{"condition": ""}]}', SCHEMA)


def test_unreachable_endpoint_fails_clearly(tmp_path: Path, repo_root: Path, capsys, monkeypatch) -> None:
    import socket

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tsv = tmp_path / "c.tsv"
    tsv.write_text("a\tGOOD one\n")
    rc = main(["extract", str(tsv), f"extract.llm.base_url=http://127.0.0.1:{port}/v1", f"extract.llm.cache={tmp_path / 'c.jsonl'}",
               "extract.llm.max_retries=0", "extract.llm.timeout_s=2", "--method", "llm", "--out", str(tmp_path / "o.jsonl"),
               "--params", str(repo_root / "params.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and "unusable" in err and SECRET not in err
    assert not (tmp_path / "o.jsonl").exists()
