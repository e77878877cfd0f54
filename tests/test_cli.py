"""The `agent-eval` command as a user runs it: help, serve, mistakes, shutdown."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import CLI, served_url_in
from tests.helpers.waits import wait_ready

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_serve_help_explains_every_flag() -> None:
    result = run_cli("serve", "--help")
    assert result.returncode == 0
    flags = set(re.findall(r"--[a-z][a-z-]+", result.stdout))
    expected = {
        *("--endpoint", "--host", "--port", "--policy", "--record"),
        *("--api-key", "--worker-api-key", "--max-body-bytes", "--max-response-bytes"),
        *("--max-choices", "--max-event-bytes"),
        *("--health-path", "--health-interval", "--failure-threshold", "--success-threshold"),
        *("--breaker-failures", "--breaker-cooldown", "--session-balance", "--session-ttl"),
        *("--max-retries", "--connect-timeout", "--timeout", "--stream-idle-timeout"),
    }
    assert expected <= flags, expected - flags


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "localhost:30000"], "is not an http(s) URL"),
        (["--max-retries", "-1"], "retry.max_retries"),
        (["--policy", "random"], "random"),
    ],
)
def test_user_mistakes_end_in_one_message_and_exit_2(args: list[str], message: str) -> None:
    result = run_cli("serve", "--port", "0", *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_port_in_use_says_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--port", str(port))
    assert result.returncode == 2
    assert "--port 0" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture
def serve_process(request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *request.param], stdout=subprocess.PIPE, text=True
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.mark.parametrize("serve_process", [[]], indirect=True)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_serve_runs_until_signalled(
    serve_process: subprocess.Popen[str], signum: signal.Signals
) -> None:
    first = serve_process.stdout.readline()
    base_url = served_url_in(first)
    # The first line says how to give it workers: the embedded model, or servers of one's own.
    assert "no workers yet" in first and "--backend llamacpp:d2" in first, first
    assert "--endpoint URL" in first and "POST /workers" in first, first
    line = serve_process.stdout.readline()
    token = line.removeprefix("  admin token for /workers and /attempts: ").strip()
    assert len(token) >= 32, line
    async with MockWorker() as worker, aiohttp.ClientSession() as http:
        workers = base_url.removesuffix("/v1") + "/workers"
        async with http.post(workers, json={"url": worker.url}) as r:
            assert r.status == 401, "a worker was added without the admin token"
        auth = {"Authorization": f"Bearer {token}"}
        async with http.post(workers, json={"url": worker.url}, headers=auth) as r:
            assert r.status == 201
        await wait_ready(base_url, 1)
        body = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}
        async with http.post(f"{base_url}/chat/completions", json=body) as response:
            assert response.status == 200
    os.kill(serve_process.pid, signum)
    assert serve_process.wait(timeout=15) == 0


def test_repository_root_imports_the_agents_sdk() -> None:
    probe = "import agents, sys; print(agents.__file__); print(hasattr(agents, 'Runner'))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    path, has_runner = result.stdout.split()
    assert has_runner == "True"
    assert "site-packages" in Path(path).parts, f"'agents' is not the installed SDK: {path}"
    assert not (REPO / "agents").exists() and not (REPO / "proxy").exists()


async def test_keys_never_reach_the_logs() -> None:
    client_key, worker_key = "client-key-0d6f1c", "worker-key-93ab27"
    keys = {"AGENT_EVAL_API_KEY": client_key, "AGENT_EVAL_WORKER_API_KEY": worker_key}
    body = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}
    async with MockWorker() as worker:
        process = await asyncio.create_subprocess_exec(
            *CLI, "--debug", "serve", "--port", "0", "--endpoint", worker.url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **keys},
        )  # fmt: skip
        try:
            base_url = served_url_in((await process.stdout.readline()).decode())
            await wait_ready(base_url, 1)
            async with aiohttp.ClientSession() as http:
                for key, status in ((client_key, 200), ("wrong-key", 401), (client_key, 503)):
                    worker.behavior.error_status = 503 if status == 503 else None
                    headers = {"Authorization": f"Bearer {key}"}
                    url = f"{base_url}/chat/completions"
                    async with http.post(url, json=body, headers=headers) as response:
                        assert response.status == status
        finally:
            process.terminate()
            out, err = (text.decode() for text in await process.communicate())
    assert worker.stats.authorizations[0] == f"Bearer {worker_key}"
    assert "attempt 1 failed" in err, "debug logging was off, so the check proves nothing"
    for key in (client_key, worker_key):
        assert key not in out + err


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--backend", "sglnag:d2"], {}, "unknown backend 'sglnag'; did you mean 'sglang'?"),
        (["--backend", "sglang.d4"], {}, "use ':' between the backend and the sizes"),
        (["--backend", "sglang:d0"], {}, "sizes start at 1"),
        (["--backend", "sglang:d2"], {}, "needs a model: pass --model"),
        (
            ["--backend", "sglang:d2t4", "--model", "m"],
            {"CUDA_VISIBLE_DEVICES": "0"},
            "needs 8 GPUs",
        ),
        (["--backend", "llamacpp:d1", "--model", "/no/such.gguf"], {}, "is not a file"),
        (
            ["--backend", "llamacpp:d1", "rollout.worker.sead=1"],
            {},
            "did you mean 'rollout.worker.seed'",
        ),
        (["--backend", "llamacpp:d1", "--scheduler", "pbs"], {}, "scheduler"),
        (
            ["--backend", "llamacpp:d1", "rollout.worker.extra_args=[--bogus]"],
            {},
            "exited with code",
        ),
    ],
)
def test_workers_up_mistakes_end_in_one_message(
    args: list[str], env: dict[str, str], message: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [*CLI, "workers", "up", "--run-dir", str(tmp_path), *args],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **env},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_workers_up_on_a_taken_port_says_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        result = run_cli(
            "workers", "up", "--backend", "llamacpp:d1", "--run-dir", str(tmp_path),
            f"rollout.worker.base_port={port}",
        )  # fmt: skip
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr


@pytest.mark.parametrize(
    "command", [[], ["run"], ["serve"], ["watch"], ["report"], ["workers", "up"]]
)
def test_help_shows_flags_as_flags(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output  # a flag takes no value
    assert re.search(r"--help\s+Show this message", result.output)
    if not command:
        assert re.search(r"--debug\s+Show tracebacks", result.output)


def test_results_page_names_every_file_of_the_run_directory() -> None:
    page = (REPO / "docs" / "results.md").read_text()
    table = page.split("## The run directory")[1].split("\n\n")[2]
    named = set(re.findall(r"`([^`]+)`", table))
    files = {"config.yaml", "samples.jsonl", "summary.json", "workers.json", "proxy.json"}
    assert files | {"proxy.log", "admin-token", "report.html"} <= named
