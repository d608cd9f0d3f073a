"""A small OpenAI-compatible chat server with deterministic answers and injectable faults.

For tests, benchmarks and offline demos of the API backend over real HTTP on
127.0.0.1: answers are a pure function of the prompt text (so an interrupted
and an uninterrupted run must agree), an optional latency imitates a remote
model, and faults are scripted per prompt: each request whose last user text
contains a marker consumes the next action of that marker's script:

    ok | 429 (Retry-After) | 500 | timeout | malformed | empty | refusal |
    content_filter | 401 (echoes the Authorization header, as a careless
    gateway might) | 400 / 403 / 404 / 422 (errors no retry heals) | echo500 /
    echo400 (500 / 400 echoing the Authorization header) | echo_auth /
    echo_pct / echo_b64 / echo_prefix (200 whose answer echoes the header as
    is, percent-encoded, base64-encoded, or its first 12 characters) |
    echo500pct (500 echoing it percent-encoded) | huge (a 200 answer of
    `huge_chars` characters) | nested (a 200 body nested 100,000 levels deep) |
    trickle (a 200 whose body comes one byte every `trickle_s` seconds: each
    read is quick, the whole response slow)

Besides scripts, `fault_rates` ({"429": 0.05, "500": 0.02, "timeout": 0.01})
draws a fault for any request at those rates, from a hash of (seed, prompt,
attempt), so a run is reproducible. `die_after=N` closes the listening socket
after N requests (an endpoint that goes away mid-run). `tls` (an
`ssl.SSLContext`) serves https; `connections` counts every connection accepted,
TLS handshakes that fail included. `answered` counts the responses sent in full:
what a paid API would have billed. `log_path` appends one
JSON line per request once its response is sent ({"text", "action"}), so a
server process that is killed and restarted keeps an exact count (`python -m
probmed.inference.models.mock_server --log FILE`). Not a model: never used to
produce reported numbers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def deterministic_answer(text: str) -> str:
    """"Yes." or "No." from a hash of the prompt text."""
    return "Yes." if hashlib.sha256(text.encode()).digest()[0] % 2 == 0 else "No."


class MockChatServer:
    """The server on 127.0.0.1 in a background thread, with the faults and latency described above."""

    def __init__(
        self,
        faults: dict[str, list[str]] | None = None,
        latency_s: float = 0.0,
        retry_after: str = "0.2",
        timeout_sleep_s: float = 2.0,
        die_after: int | None = None,
        required_key: str | None = None,
        fault_rates: dict[str, float] | None = None,
        seed: int = 0,
        log_path: str | None = None,
        huge_chars: int = 10_000_000,
        trickle_s: float = 0.05,
        tls: ssl.SSLContext | None = None,
    ):
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.fault_rates = dict(fault_rates or {})
        self.seed = seed
        self.log_path = log_path
        self.huge_chars = huge_chars
        self.trickle_s = trickle_s
        self.tls = tls
        self.connections = 0  # connections accepted (a failed TLS handshake included)
        self.answered = 0  # responses sent in full
        self.trickles: list[dict[str, int]] = []  # per trickled response: {"sent": bytes, "size": bytes}
        self.latency_s = latency_s
        self.retry_after = retry_after
        self.timeout_sleep_s = timeout_sleep_s
        self.die_after = die_after
        self.required_key = required_key
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # every request: {"text", "action", "auth", "image", "t"}
        self.attempts: dict[str, int] = defaultdict(int)
        self.in_flight = 0  # requests received and not yet logged (a late line would land after a reader's split)
        self.max_in_flight = 0  # the most requests the server held at once: the client's real concurrency
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
                        stats = {"requests": len(server.requests), "in_flight": server.in_flight}
                    self._send(200, stats)
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "mock", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server.handle(self, body)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> bool:
                data = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return False
                return True

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # the default backlog of 5 drops concurrent connects (1 s SYN retry)

            def get_request(self) -> Any:
                with server.lock:
                    server.connections += 1
                return super().get_request()  # with TLS, the handshake happens here

        self._httpd = Server(("127.0.0.1", port), Handler)
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

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
            if self.fault_rates:
                n = self.attempts[text]
                self.attempts[text] += 1
                u = int.from_bytes(hashlib.sha256(f"{self.seed}\0{text}\0{n}".encode()).digest()[:8], "big") / 2**64
                for action, rate in self.fault_rates.items():
                    if u < rate:
                        return action
                    u -= rate
        return "ok"

    def _log(self, text: str, action: str, sent: bool) -> None:
        if self.log_path:
            with self.lock, open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"text": text, "action": action, "sent": sent}) + "\n")

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
            self.requests.append({"text": text, "action": action, "auth": auth, "image": has_image,
                                  "t": time.monotonic()})
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
        sent = self._respond(h, body, text, action, auth)
        if sent:
            with self.lock:
                self.answered += 1
        self._log(text, action, sent)

    def _respond(self, h: Any, body: dict[str, Any], text: str, action: str, auth: str) -> bool:
        """Send the response `action` calls for; False if the client had gone."""
        secret = auth.removeprefix("Bearer ")
        echoes = {
            "echo_pct": "Yes. Your key " + urllib.parse.quote(secret, safe="").replace("-", "%2D") + " was used.",
            "echo_b64": "Yes. Token " + base64.b64encode(auth.encode()).decode(),
            "echo_prefix": f"No. The key {secret[:12]}... is near its quota.",
        }
        if action in echoes:
            return h._send(200, self._completion(body, text, echoes[action]))
        elif action == "echo_auth":
            return h._send(200, self._completion(body, text, f"Yes. You sent {auth}."))
        elif action in ("400", "403", "404", "422"):
            return h._send(int(action), {"error": {"message": f"HTTP {action} from the mock", "type": "invalid_request_error"}})
        elif action == "trickle":
            return self._trickle(h, json.dumps(self._completion(body, text, deterministic_answer(text))).encode())
        elif action == "echo500pct":
            return h._send(500, {"error": {"message": "upstream failed for " + urllib.parse.quote(auth, safe="")}})
        elif action == "huge":
            return h._send(200, self._completion(body, text, "Yes. " + "x" * self.huge_chars))
        elif action == "nested":
            return h._send(200, None, raw=b'{"id": "x", "choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        elif action == "429":
            return h._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": self.retry_after})
        elif action == "500":
            return h._send(500, {"error": {"message": "internal error"}})
        elif action == "echo500":
            return h._send(500, {"error": {"message": f"upstream failed for {auth}"}})
        elif action == "echo400":
            return h._send(400, {"error": {"message": f"bad request from {auth}", "type": "invalid_request_error"}})
        elif action == "401":
            return h._send(401, {"error": {"message": f"invalid key: {auth}", "type": "invalid_request_error"}})
        elif action == "timeout":
            time.sleep(self.timeout_sleep_s)
            return h._send(200, self._completion(body, text, "Yes."))
        elif action == "malformed":
            return h._send(200, None, raw=b'{"id": "x", "choices": [ {"message": ')
        elif action == "empty":
            return h._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"), "choices": []})
        elif action == "refusal":
            return h._send(200, self._completion(body, text, None, refusal="I can't help with that."))
        elif action == "content_filter":
            return h._send(200, self._completion(body, text, "", finish="content_filter"))
        else:
            return h._send(200, self._completion(body, text, deterministic_answer(text)))

    def _trickle(self, h: Any, data: bytes) -> bool:
        """A 200 whose body comes one byte every `trickle_s` seconds; stops when the client hangs up."""
        record = {"sent": 0, "size": len(data)}
        with self.lock:
            self.trickles.append(record)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        try:
            for i in range(len(data)):
                h.wfile.write(data[i: i + 1])
                h.wfile.flush()
                record["sent"] = i + 1
                time.sleep(self.trickle_s)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
            return False
        return True

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


def main() -> None:
    """A server process (tests and benchmarks kill and restart it): prints its URL once it listens."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--fault-rates", default="{}", help='JSON, e.g. {"429": 0.05, "500": 0.02, "timeout": 0.01}')
    p.add_argument("--timeout-sleep-s", type=float, default=2.0)
    p.add_argument("--retry-after", default="0.2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", help="append one JSON line per answered request")
    args = p.parse_args()
    srv = MockChatServer(latency_s=args.latency_ms / 1000, fault_rates=json.loads(args.fault_rates),
                         timeout_sleep_s=args.timeout_sleep_s, retry_after=args.retry_after, seed=args.seed,
                         log_path=args.log).start(args.port)  # GET /stats: request count
    print(f"mock OpenAI-compatible server on {srv.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
