"""A small version of benchmarks/soak_api.py: predict against the fault-injecting server (5% 429, 2% 500,
1% timeouts, the server process SIGKILLed half way and restarted), then a re-run over the same store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_soak_every_question_answered_or_failed_and_none_paid_twice(tmp_path, repo_root, shared_data):
    out = tmp_path / "soak.json"
    proc = subprocess.run([sys.executable, str(repo_root / "benchmarks" / "soak_api.py"), "--questions", "400",
                           "--baseline", "0", "--data", str(shared_data), "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["problems"] == []
    assert result["answered"] + result["recorded_failed"] == 400 and result["unaccounted"] == 0
    assert result["server_killed_after_requests"] is not None and sum(result["faults"].values()) > 0
    assert result["requests"] > 400  # faults were retried ...
    assert result["duplicate_paid_requests"] == 0  # ... but no question was answered twice
    assert result["rerun_requests_for_answered"] == 0  # the re-run asks the recorded failures only
    assert (result["rerun_requests"] == 0) == (result["recorded_failed"] == 0)
    assert result["peak_rss_mib"] > 0
