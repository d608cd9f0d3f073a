"""A real Ray cluster on loopback addresses: a head (127.0.0.2) and a worker node (127.0.0.3), each started with
`ray start` as its own processes, a temp dir and ports of its own, token authentication on.

Why 127.0.0.2 and .3 rather than 127.0.0.1: `ray start` replaces 127.0.0.1 (and localhost) by the machine's
network address (ray._private.services.resolve_ip_for_localhost), so a worker node told to join 127.0.0.1
looks for the head elsewhere; any other loopback address is kept, and two of them give the nodes distinct
addresses, as on two machines.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HEAD, WORKER = "127.0.0.2", "127.0.0.3"
RAY = str(Path(sys.executable).with_name("ray"))


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    out: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry.name)] = (ppid, cmdline)
    return out


def _with_descendants(roots: set[int], procs: dict[int, tuple[int, str]]) -> set[int]:
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _) in procs.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


class RayCluster:
    """Head and worker node of `cpus` CPUs each; `env` is what a driver needs to join (the auth token)."""

    def __init__(self, folder: Path, cpus: int = 2):
        self.folder = folder
        self.cpus = cpus
        self.temp = Path(tempfile.mkdtemp(prefix="pmray-"))  # short: Ray's socket paths must stay under 108 bytes
        self.port = free_port(HEAD)
        token = folder / "token"
        token.write_text(secrets.token_hex(32))
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
                    "RAY_USAGE_STATS_ENABLED": "0"}
        self.startup_s = 0.0

    @property
    def address(self) -> str:
        return f"{HEAD}:{self.port}"

    def _start(self, *args: str) -> None:
        done = subprocess.run([RAY, "start", "--disable-usage-stats", f"--num-cpus={self.cpus}", *args],
                              env=self.env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"ray start {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")

    def start(self) -> "RayCluster":
        t0 = time.perf_counter()
        self._start("--head", f"--node-ip-address={HEAD}", f"--port={self.port}", "--include-dashboard=false",
                    f"--dashboard-agent-listen-port={free_port(HEAD)}", f"--temp-dir={self.temp}")
        self._start(f"--address={self.address}", f"--node-ip-address={WORKER}",
                    f"--dashboard-agent-listen-port={free_port(WORKER)}")
        self.startup_s = time.perf_counter() - t0
        return self

    def _pids(self, marker: str) -> set[int]:
        """This cluster's processes whose command line holds `marker`, with everything they started."""
        procs = _processes()
        roots = {pid for pid, (_, cmd) in procs.items() if marker in cmd and str(self.temp) in cmd}
        roots |= {pid for pid, (_, cmd) in procs.items() if marker in cmd and f"127.0.0.2:{self.port}" in cmd}
        return _with_descendants(roots, procs)

    def worker_node_pids(self) -> set[int]:
        """The worker node's raylet, its agents and its worker processes."""
        return self._pids(WORKER)

    def running_on_worker_node(self, task: str) -> bool:
        procs = _processes()
        return any(procs[pid][1].startswith(f"ray::{task}") for pid in self.worker_node_pids() if pid in procs)

    def kill_worker_node_when(self, ready: Callable[[], bool], task: str = "answer_chunk",
                              timeout_s: float = 600) -> float:
        """SIGKILL the worker node once `ready()` holds while a `task` runs there; when (time.monotonic())."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if ready() and self.running_on_worker_node(task):
                t_kill = time.monotonic()
                assert self.kill_worker_node() > 0
                return t_kill
            time.sleep(0.05)
        raise AssertionError(f"no {task} task ran on the worker node once the run was ready to be cut")

    def kill_worker_node(self) -> int:
        """SIGKILL every process of the worker node (as when its machine dies); how many there were."""
        pids = self.worker_node_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def stop(self) -> None:
        for pid in self._pids("") | self.worker_node_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)
