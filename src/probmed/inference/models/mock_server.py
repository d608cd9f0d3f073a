"""A small OpenAI-compatible chat server with deterministic answers and injectable faults.

For tests, benchmarks and offline demos of the API backend over real HTTP on
127.0.0.1: answers are a pure function of the prompt text (so an interrupted
and an uninterrupted run must agree), an optional latency imitates a remote
model, and faults are scripted per prompt: each request whose last user text
contains a marker consumes the next action of that marker's script:

    ok | 429 (Retry-After) | 500 | timeout | malformed | empty | refusal |
    content_filter | 401 (echoes the Authorization header, as a careless
    gateway might) | echo500 / echo400 (500 / 400 echoing the Authorization header)

`die_after=N` closes the listening socket after N requests (an endpoint that
goes away mid-run). Not a model: never used to produce reported numbers.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def deterministic_answer(text: str) -> str:
    """"Yes." or "No." from a hash of the prompt text."""
    return "Yes." if hashlib.sha256(text.encode()).digest()[0] % 2 == 0 else "No."


class MockChatServer:
    def __init__(
        self,
        faults: dict[str, list[str]] | None = None,
        latency_s: float = 0.0,
        retry_after: str = "0.2",
        timeout_sleep_s: float = 2.0,
        die_after: int | None = None,
        required_key: str | None = None,
    ):
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.latency_s = latency_s
        self.retry_after = retry_after
        self.timeout_sleep_s = timeout_sleep_s
        self.die_after = die_after
        self.required_key = required_key
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # every request: {"text", "action", "auth"}
        self.attempts: dict[str, int] = defaultdict(int)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- lifecycle ------------------------------------------------------------

    def start(self, port: int = 0) -> "MockChatServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes: without this, Nagle + delayed ACK add ~40 ms
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/") == "/stats":
                    with server.lock:
                        self._send(200, {"requests": len(server.requests)})
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "mock", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.handle(self, body)

            def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None, raw: bytes | None = None):
                data = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default backlog of 5 drops concurrent connects (1 s SYN retry)

        self._httpd = Server(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "MockChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- behaviour -------------------------------------------------------------

    def _action(self, text: str) -> str:
        with self.lock:
            for marker, script in self.faults.items():
                if marker in text:
                    n = self.attempts[marker + "\0" + text]
                    self.attempts[marker + "\0" + text] += 1
                    return script[min(n, len(script) - 1)]  # the last action repeats
        return "ok"

    def handle(self, h: Any, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        text = ""
        has_image = False
        for m in messages:
            if m.get("role") != "user":
                continue
            content = m.get("content")
            if isinstance(content, str):
                text = content
            else:
                for part in content or []:
                    if part.get("type") == "text":
                        text = part.get("text", "")
                    elif part.get("type") == "image_url":
                        has_image = True
        auth = h.headers.get("Authorization", "")
        action = self._action(text)
        with self.lock:
            self.requests.append({"text": text, "action": action, "auth": auth, "image": has_image})
            n_requests = len(self.requests)
        if self.die_after is not None and n_requests > self.die_after:
            threading.Thread(target=self.stop, daemon=True).start()
            h.close_connection = True
            h.connection.close()
            return
        if self.required_key is not None and auth != f"Bearer {self.required_key}":
            action = "401"
        if self.latency_s:
            time.sleep(self.latency_s)
        if action == "429":
            h._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": self.retry_after})
        elif action == "500":
            h._send(500, {"error": {"message": "internal error"}})
        elif action == "echo500":
            h._send(500, {"error": {"message": f"upstream failed for {auth}"}})
        elif action == "echo400":
            h._send(400, {"error": {"message": f"bad request from {auth}", "type": "invalid_request_error"}})
        elif action == "401":
            h._send(401, {"error": {"message": f"invalid key: {auth}", "type": "invalid_request_error"}})
        elif action == "timeout":
            time.sleep(self.timeout_sleep_s)
            h._send(200, self._completion(body, text, "Yes."))
        elif action == "malformed":
            h._send(200, None, raw=b'{"id": "x", "choices": [ {"message": ')
        elif action == "empty":
            h._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"), "choices": []})
        elif action == "refusal":
            h._send(200, self._completion(body, text, None, refusal="I can't help with that."))
        elif action == "content_filter":
            h._send(200, self._completion(body, text, "", finish="content_filter"))
        else:
            h._send(200, self._completion(body, text, deterministic_answer(text)))

    def _completion(self, body: dict[str, Any], text: str, content: str | None, refusal: str | None = None,
                    finish: str = "stop") -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "finish_reason": finish,
        }
        if body.get("logprobs") and content:
            word = content.strip(".").lower()
            other = "no" if word == "yes" else "yes"
            choice["logprobs"] = {"content": [{
                "token": content.strip("."), "logprob": -0.1, "bytes": None,
                "top_logprobs": [{"token": content.strip("."), "logprob": -0.1, "bytes": None},
                                 {"token": other.capitalize(), "logprob": -2.4, "bytes": None}],
            }]}
        return {
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [choice],
            "usage": {"prompt_tokens": len(text.split()) + 85, "completion_tokens": 2,
                      "total_tokens": len(text.split()) + 87},
        }


def main() -> None:  # pragma: no cover - manual use
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--latency-ms", type=float, default=0.0)
    args = p.parse_args()
    srv = MockChatServer(latency_s=args.latency_ms / 1000).start(args.port)  # GET /stats: request count
    print(f"mock OpenAI-compatible server on {srv.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
