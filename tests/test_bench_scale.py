"""The scale bench at toy size: 20 mock workers in 2 processes and a lone one, 200 sessions
through the proxy, the lone worker killed halfway through the second turns."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_the_scale_bench_routes_every_session_and_loses_no_request_to_a_killed_worker(
    tmp_path: Path,
) -> None:
    out = tmp_path / "scale.json"
    argv = [sys.executable, "-m", "bench.scale", "--workers", "20", "--worker-processes", "2"]
    argv += ["--sessions", "200", "--concurrency", "16", "--idle-seconds", "0.3"]
    argv += ["--health-interval", "0.5", "--no-peer", "--json", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures = json.loads(out.read_text())["figures"]
    assert [i["workers"] for i in figures["idle"]] == [0, 20]
    [policy] = figures["policy"]
    assert (policy["workers"], policy["sessions"]) == (20, 200)
    assert policy["policy_new_per_s"] > 0 and policy["bytes_per_session"] > 0
    [routed] = figures["routed"]
    assert [p["requests"] for p in routed["phases"]] == [20, 180, 200]
    assert routed["detected_s"] is not None
    # The proxy retries what the killed worker held or refused: no client sees it.
    assert routed["failed_after_kill"] == 0 and not routed["errors"], routed["errors"]
    spread = routed["spread"]
    assert spread["workers_used"] == 20
    # No worker holds more than ceil(1.25 x average) sessions.
    assert spread["max_avg_sessions"] <= math.ceil(1.25 * 200 / 20) / (200 / 20)
