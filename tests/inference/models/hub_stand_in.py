"""A stand-in for the Hugging Face hub's model-info endpoint, served over real HTTP on 127.0.0.1.

`GET /api/models/{namespace}/{name}/revision/{revision}` answers what the hub
answers: the repository id and the commit sha the revision points to, or a 404
with the hub's error code header (RepoNotFound / RevisionNotFound), which
huggingface_hub turns into its own exceptions.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


class StandInHub:
    def __init__(self, repos: dict[str, dict[str, str]]):
        """`repos`: repo id -> {revision (branch, tag or sha): commit sha}."""
        self.repos = repos
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook name
                hub.requests.append(self.path)
                status, headers, body = hub.answer(self.path.split("?", 1)[0])
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, path: str) -> tuple[int, dict[str, str], bytes]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if len(parts) != 6 or parts[:2] != ["api", "models"] or parts[4] != "revision":
            return 404, {"X-Error-Code": "EntryNotFound"}, b'{"error": "not found"}'
        repo, revision = f"{parts[2]}/{parts[3]}", parts[5]
        if repo not in self.repos:
            return 404, {"X-Error-Code": "RepoNotFound"}, json.dumps({"error": "Repository not found"}).encode()
        sha = self.repos[repo].get(revision) or (revision if revision in self.repos[repo].values() else None)
        if sha is None:
            msg = {"error": f"Invalid rev id: {revision}"}
            return 404, {"X-Error-Code": "RevisionNotFound"}, json.dumps(msg).encode()
        info = {"_id": "stand-in", "id": repo, "modelId": repo, "sha": sha, "private": False, "tags": [],
                "siblings": [{"rfilename": "config.json"}]}
        return 200, {}, json.dumps(info).encode()

    def __enter__(self) -> "StandInHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
