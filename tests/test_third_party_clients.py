"""Third-party clients through `agent-eval serve` as users run it, and the commands it prints."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli.serve import _launched_model
from agent_eval.cli.serve_screen import MODEL_PLACEHOLDER
from agent_eval.launch.config import LaunchConfig
from agent_eval.settings import load_settings
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.cli_runs import CLI, served_url_in
from tests.helpers.proxy import MakeClient, StartWorkers
from tests.helpers.waits import wait_ready

READY = "Ctrl-C stops it."


@dataclass
class Served:
    """A running `agent-eval serve` and what it printed so far."""

    process: asyncio.subprocess.Process
    base_url: str
    stdout: str
    stderr: str = ""

    async def read_until(self, marker: str, timeout: float = 30) -> None:
        """Read stdout until `marker` shows; fail if serve ends first."""
        while marker not in self.stdout:
            line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
            assert line, f"serve ended before printing {marker!r}:\n{self.stdout}"
            self.stdout += line.decode()


@contextlib.asynccontextmanager
async def serving(*args: str) -> AsyncIterator[Served]:
    """`agent-eval serve --port 0 ARGS` in a subprocess; stopped (SIGTERM) after the block."""
    # A key in the environment would reach serve through its --api-key envvar.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_EVAL_")}
    process = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--port", "0", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    served: Served | None = None
    try:
        first = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        served = Served(process, served_url_in(first), first)
        yield served
    finally:
        if process.returncode is None:
            process.terminate()
        stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
        if served is not None:
            served.stdout += stdout.decode()
            served.stderr = stderr.decode()
    assert process.returncode == 0, served.stderr if served else ""


@pytest.mark.parametrize("api_key", [None, "s3cret"])
async def test_serve_prints_paste_ready_commands_never_the_key(
    start_workers: StartWorkers, api_key: str | None
) -> None:
    model = "served-model-7"
    (worker,) = await start_workers(1, model=model)
    key_args = ["--api-key", api_key] if api_key else []
    async with serving("--endpoint", worker.url, *key_args) as served:
        await served.read_until(READY)
    out, url = served.stdout, served.base_url
    assert out.splitlines()[1].split() == ["worker", worker.url], "worker lines come right after"
    assert "lm_eval --model local-chat-completions --apply_chat_template" in out
    assert f"--model_args model={model},base_url={url}/chat/completions," in out
    assert f"AGENTEVAL_BASE_URL={url} " in out
    assert f"inspect eval task.py --model openai-api/agenteval/{model}" in out
    assert f'OpenAI(base_url="{url}"' in out and f'create(model="{model}"' in out
    assert f'set_default_openai_client(AsyncOpenAI(base_url="{url}"' in out
    assert f'Agent(name="a", model="{model}")' in out
    if api_key:
        assert api_key not in served.stdout + served.stderr
        assert "AGENTEVAL_API_KEY=$AGENT_EVAL_API_KEY" in out
        assert "OPENAI_API_KEY=$AGENT_EVAL_API_KEY lm_eval" in out
        assert 'api_key=os.environ["AGENT_EVAL_API_KEY"]' in out
    else:
        assert "AGENTEVAL_API_KEY=unused" in out and "$AGENT_EVAL_API_KEY" not in out


async def test_serve_without_workers_shows_a_model_placeholder() -> None:
    async with serving() as served:
        await served.read_until(READY)
    assert f"model={MODEL_PLACEHOLDER},base_url={served.base_url}/chat/" in served.stdout


@pytest.mark.parametrize(
    ("backend", "settings", "name"),
    [
        ("sglang:d1", ["model.path=/ckpt/step-5"], "/ckpt/step-5"),
        ("sglang:d1", ["model.path=/ckpt/step-5", "model.name=m"], "m"),
        ("llamacpp:d1", ["rollout.worker.model=/models/qwen.gguf"], "qwen"),
        ("external", [], None),
    ],
)
def test_launched_workers_name_their_model_from_the_config(
    backend: str, settings: list[str], name: str | None
) -> None:
    flags = {"rollout.backend": backend, "rollout.endpoints": ["http://127.0.0.1:1"]}
    launch = load_settings(LaunchConfig, None, flags, settings)
    assert _launched_model(launch) == name


def write_echo_task(directory: Path, worker: MockWorker, questions: list[str]) -> str:
    """A local lm-eval task over a JSONL, whose answers are what the mock worker echoes."""
    rows = directory / "rows.jsonl"
    lines = [
        json.dumps({"question": q, "answer": f"mock reply from {worker.name}: {q}"})
        for q in questions
    ]
    rows.write_text("\n".join(lines) + "\n")
    task = {
        "task": "agent_eval_echo",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(rows)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{question}}",
        "doc_to_target": "{{answer}}",
        "generation_kwargs": {"until": ["\n\n"], "max_gen_toks": 32},
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1.0},
    }
    (directory / "agent_eval_echo.yaml").write_text(json.dumps(task))  # JSON is YAML
    return "agent_eval_echo"


async def run_lm_eval(base_url: str, tasks: Path, task: str, output: Path) -> tuple[int, str]:
    """lm-eval's CLI against the proxy, offline: the task's data is a local file."""
    model_args = f"model=mock-model,base_url={base_url}/chat/completions,num_concurrent=2"
    offline = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(output / "hf")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lm_eval",
        "--model", "local-chat-completions", "--apply_chat_template",
        "--include_path", str(tasks), "--tasks", task,
        "--model_args", f"{model_args},tokenizer_backend=None",
        "--output_path", str(output),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **offline},
    )  # fmt: skip
    # The mock worker answers from this event loop, so lm-eval must not block it.
    printed, _ = await asyncio.wait_for(process.communicate(), 300)
    return process.returncode or 0, printed.decode()


def lm_eval_results(output: Path) -> dict[str, Any]:
    """The `results` of the one results file lm-eval wrote under `output`."""
    (found,) = output.rglob("results_*.json")
    return json.loads(found.read_text())["results"]


async def test_lm_eval_local_chat_completions_completes_through_serve(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    questions = [f"what is {i} plus {i}" for i in range(5)]
    (tmp_path / "tasks").mkdir()
    task = write_echo_task(tmp_path / "tasks", worker, questions)
    async with serving("--endpoint", worker.url) as served:
        await wait_ready(served.base_url, 1)
        code, printed = await run_lm_eval(served.base_url, tmp_path / "tasks", task, tmp_path)
    assert code == 0, printed[-4000:]
    assert worker.stats.requests["/v1/chat/completions"] == len(questions)
    results = lm_eval_results(tmp_path)
    assert results[task]["exact_match,none"] == 1.0, results


@pytest.mark.parametrize("native", [True, False], ids=["native", "translated"])
async def test_agents_sdk_default_responses_mode_completes_a_tool_call(
    start_workers: StartWorkers, make_client: MakeClient, native: bool
) -> None:
    from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool

    (worker,) = await start_workers(1, responses_api=native)
    worker.script(
        Reply(tool_calls=[ToolCall("add", json.dumps({"a": 2, "b": 3}))]),
        Reply("The answer is 5."),
    )
    ran: list[tuple[float, float]] = []

    @function_tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    async with serving("--endpoint", worker.url) as served:
        await wait_ready(served.base_url, 1)
        # The default provider (Responses API), as set_default_openai_client makes it.
        provider = OpenAIProvider(openai_client=make_client(served.base_url))
        agent = Agent(name="calc", instructions="Use the tools.", tools=[add], model="mock-model")
        config = RunConfig(model_provider=provider, tracing_disabled=True)
        result = await Runner.run(agent, "2 + 3?", run_config=config)
    assert ran == [(2, 3)]
    assert result.final_output == "The answer is 5."
    served, other = ("/v1/responses", "/v1/chat/completions")[:: 1 if native else -1]
    assert (len(worker.requests_to(served)), len(worker.requests_to(other))) == (2, 0)
    worker.assert_script_used_up()
