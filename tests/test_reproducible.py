"""`--reproducible`: what a seed fixes, said in every summary; what it cannot fix, pinned."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agents.models.chatcmpl_converter import Converter
from openai import AsyncOpenAI

from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.math_calculator import INSTRUCTIONS
from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.backends.llamacpp import FRESH_PROMPTS
from agent_eval.errors import ConfigError
from agent_eval.launch.config import ServeConfig
from agent_eval.metrics import Summary
from agent_eval.proxy.fleet.breaker import CircuitBreaker
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import RequestInfo
from agent_eval.proxy.policies.fixed import FixedRoutes
from agent_eval.run.config import load_run_config
from agent_eval.run.engine import attempt_seed
from agent_eval.schedulers.local import LocalScheduler
from agent_eval.seeds import SeedScope
from agent_eval.settings import load_settings
from tests.helpers.cli_runs import agent_eval, finish, lines, summary, write_dataset
from tests.helpers.llamacpp import MODEL, run_embedded
from tests.helpers.proxy import StartWorkers

BUS = "A bus has 11 rows with 2 seats in each row. How many seats does the bus have?"
KEYS = [f"gsm8k-{i}-{attempt}" for i in range(40) for attempt in range(4)]


def routed(ports: range, busy: int | None = None) -> list[int]:
    """The position of the worker each of KEYS goes to, among workers on these ports."""
    workers = [Worker(f"http://127.0.0.1:{p}", "/health", CircuitBreaker(5, 10.0)) for p in ports]
    if busy is not None:
        workers[busy].in_flight = 100
    policy = FixedRoutes()
    policy.on_workers_changed([w.url for w in workers])
    picks = [
        policy.choose(workers, RequestInfo("/v1/chat/completions", session_key=key)) for key in KEYS
    ]
    return [workers.index(pick) for pick in picks]


def test_fixed_routes_depend_on_the_session_and_the_position_only() -> None:
    first = routed(range(20000, 20002))
    assert routed(range(20500, 20502)) == first  # another run's ports
    assert routed(range(20500, 20502), busy=0) == first  # whatever the load
    assert set(first) == {0, 1}  # and the sessions spread over every worker


def test_a_worker_out_of_the_pool_sends_its_sessions_to_the_next_one() -> None:
    workers = [Worker(f"http://w{i}", "/health", CircuitBreaker(5, 10.0)) for i in range(3)]
    policy = FixedRoutes()
    policy.on_workers_changed([w.url for w in workers])
    infos = [RequestInfo("/v1/chat/completions", session_key=key) for key in KEYS]
    whole = [policy.choose(workers, info) for info in infos]
    without = [policy.choose([workers[0], workers[2]], info) for info in infos]
    for before, after in zip(whole, without, strict=True):
        assert after is (workers[2] if before is workers[1] else before)


def test_reproducible_pins_one_thread_fresh_prompts_and_fixed_routes() -> None:
    config = load_run_config(None, {}, ["rollout.reproducible=true"])
    argv = config.backend().command(config.worker(), config.allocation(), "127.0.0.1", 1).argv
    assert argv[argv.index("--n_threads") + 1] == argv[argv.index("--n_threads_batch") + 1] == "1"
    assert FRESH_PROMPTS in argv
    assert config.proxy.policy == "fixed"
    served = load_settings(ServeConfig, None, {"rollout.reproducible": True}, [])
    assert served.proxy_config().policy == "fixed"
    default = load_run_config(None, {}, [])
    argv = default.backend().command(default.worker(), default.allocation(), "127.0.0.1", 1).argv
    assert FRESH_PROMPTS not in argv and default.proxy.policy == "session"


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("rollout.worker.threads=4", "rollout.worker.threads"),
        ("proxy.policy=session", "proxy.policy"),
    ],
)
def test_reproducible_refuses_what_would_undo_it(setting: str, named: str) -> None:
    with pytest.raises(ConfigError, match=f"rollout.reproducible.*{named}"):
        load_run_config(None, {}, ["rollout.reproducible=true", setting])


async def test_the_summary_says_what_the_seed_fixes_and_routes_stay_fixed(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(4)
    data = write_dataset(tmp_path / "say.jsonl")
    runs = {}
    for name, pair in (("first", workers[:2]), ("second", workers[2:])):
        endpoints = [arg for w in pair for arg in ("--endpoint", w.url)]
        run_dir = tmp_path / name
        args = ("--dataset", str(data), *endpoints, "-n", "2", "--reproducible", "-o", str(run_dir))
        code, out, err = await finish(await agent_eval("run", *args, cwd=tmp_path))
        assert code == 0, err
        runs[name] = run_dir
    seed = summary(runs["first"])["seed"]
    assert seed["value"] == 0 and seed["backend"] == "external" and seed["pinned"] is True
    assert "each attempt's sampling seed" in seed["fixes"]
    assert "the servers" in seed["may_vary"]  # an endpoint's server decides the rest
    assert Summary.read(summary(runs["first"])).seed == SeedScope(**seed)
    assert f"seed 0 fixes {seed['fixes']}; may vary: {seed['may_vary']}." in " ".join(out.split())
    assert worker_positions(runs["first"]) == worker_positions(runs["second"])


def worker_positions(run_dir: Path) -> dict[tuple[str, int], list[int]]:
    """Each attempt's model calls, by the position of the worker that answered them."""
    endpoints = json.loads((run_dir / "proxy.json").read_text())["endpoints"]
    return {
        (r["sample_id"], r["attempt"]): [
            endpoints.index(call["worker"]) for call in r["trajectory"]["model_calls"]
        ]
        for r in lines(run_dir)
    }


def attempts(run_dir: Path) -> dict[tuple[str, int], tuple[object, ...]]:
    """What each attempt did: its answer, its model's tool calls and its completion tokens."""
    return {
        (r["sample_id"], r["attempt"]): (
            r["answer"],
            r["trajectory"]["final_output"],
            [(c["name"], c["arguments"]) for c in r["trajectory"]["tool_calls"]],
            r["completion_tokens"],
        )
        for r in lines(run_dir)
    }


async def test_two_reproducible_runs_of_the_embedded_model_play_the_same_attempts(
    tmp_path: Path,
) -> None:
    runs = [tmp_path / "first", tmp_path / "second"]
    pinned = "with 1 thread(s), 1 for prompts, one request at a time, each prompt read whole"
    args = ("--agent", "math_calculator", "--limit", "2", "-n", "2", "--reproducible")
    # Side by side, each on workers of its own: a run pinned to one thread leaves a core free.
    ended = await asyncio.gather(
        *(run_embedded("run", *args, "-o", str(run_dir), cwd=tmp_path) for run_dir in runs)
    )
    for (code, _, err), run_dir in zip(ended, runs, strict=True):
        assert code == 0, err
        logs = [log.read_text() for log in (run_dir / "workers").glob("*.log")]
        assert len(logs) == 2 and all(pinned in log for log in logs)
    first, second = (attempts(run_dir) for run_dir in runs)
    assert len(first) == 4 and first == second
    positions = worker_positions(runs[0])
    assert positions == worker_positions(runs[1])
    assert {p for calls in positions.values() for p in calls} == {0, 1}  # both workers answered
    assert summary(runs[0])["seed"]["pinned"] is True


async def test_a_reproducible_worker_answers_alike_whatever_it_read_before(tmp_path: Path) -> None:
    """The first problem the embedded run answered by what its worker had read before."""
    async with LocalScheduler(tmp_path) as scheduler:
        (worker,) = await scheduler.launch(
            get_backend("llamacpp"), WorkerConfig(reproducible=True), Allocation.parse("llamacpp")
        )
        await scheduler.wait_ready(timeout=180)
        async with AsyncOpenAI(base_url=worker.url + "/v1", api_key="-", max_retries=0) as client:
            first = await ask_the_bus_problem(client, attempt=0)
            # The worker now holds that prompt: unpinned, it would read only its last token.
            assert await ask_the_bus_problem(client, attempt=0) == first


async def ask_the_bus_problem(client: AsyncOpenAI, attempt: int) -> tuple[str, str]:
    """One call of the default run's attempt at word_problems-2, as the Agents SDK sends it."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": BUS},
        ],
        tools=[Converter.tool_to_openai(tool) for tool in calculator_tools()],
        temperature=0.3,
        top_p=1.0,
        max_tokens=64,
        seed=attempt_seed(0, "word_problems-2", attempt),
    )
    (call,) = answer.choices[0].message.tool_calls
    return call.function.name, call.function.arguments
