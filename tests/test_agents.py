"""Agent runners through the real proxy and the Agents SDK, against scripted mock workers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from agent_eval.agents import RunContext, Sampling, load_runner
from agent_eval.agents.calculator import add, divide, multiply, subtract
from agent_eval.agents.math_calculator import INSTRUCTIONS, MathCalculatorAgent
from agent_eval.data import Session, Turn
from agent_eval.errors import ConfigError
from agent_eval.testing.replies import JSON, Reply, ToolCall
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.records import kinds
from tests.helpers.waits import eventually

QUESTION = SimpleNamespace(id="q1", question="A box holds 6 rows of 7 eggs. How many eggs?")


@pytest.fixture
def context(make_client: MakeClient) -> Callable[[str], RunContext]:
    """A run context for session q1-0 with seed 11; its client closes after the test."""

    def make(base_url: str) -> RunContext:
        client = make_client(base_url, "q1-0")
        return RunContext(
            client, "mock-model", "q1-0", 11, Sampling(temperature=0.3, max_tokens=64)
        )

    return make


def multiply_call(a: float, b: float) -> ToolCall:
    return ToolCall("multiply", json.dumps({"a": a, "b": b}))


def test_calculator_is_plain_arithmetic() -> None:
    assert (add(2, 3), subtract(2, 3), multiply(2.5, 4), divide(7, 2)) == (5, -1, 10.0, 3.5)
    assert divide(1, 0).startswith("error: division by zero")


async def test_math_calculator_records_a_whole_trajectory(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    tmp_path: Path,
    context: Callable[[str], RunContext],
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]), Reply("6 rows of 7 is 42.\nAnswer: 42"))
    base_url = await start_proxy([worker], record_dir=tmp_path)
    trajectory = await MathCalculatorAgent().run(QUESTION, context(base_url))
    worker.assert_script_used_up()
    assert trajectory.error is None
    assert trajectory.final_output.endswith("Answer: 42")
    (call,) = trajectory.tool_calls
    assert (call.name, json.loads(call.arguments), call.result) == (
        "multiply",
        {"a": 6, "b": 7},
        "42.0",
    )
    assert len(trajectory.model_calls) == 2
    assert all(c.latency_s > 0 and c.completion_tokens > 0 for c in trajectory.model_calls)
    assert trajectory.prompt_tokens > 0
    assert json.loads(json.dumps(trajectory.to_dict()))["tool_calls"][0]["name"] == "multiply"

    recorded = tmp_path / "q1-0.jsonl"
    await eventually(lambda: recorded.exists() and len(recorded.read_text().splitlines()) == 2)
    first = json.loads(recorded.read_text().splitlines()[0])["request"]
    assert (first["seed"], first["temperature"], first["max_tokens"]) == (11, 0.3, 64)
    assert {t["function"]["name"] for t in first["tools"]} == {
        "add",
        "subtract",
        "multiply",
        "divide",
    }


def sent_setup(request: JSON) -> dict[str, object]:
    """The system prompt and tools a Chat Completions request gave the model, as recorded."""
    system = request["messages"][0]
    assert system["role"] == "system"
    tools = [
        {key: tool["function"][key] for key in ("name", "description", "parameters")}
        for tool in request.get("tools") or ()
    ]
    return {"system_prompt": system["content"], "tools": tools}


async def test_what_the_model_was_given_is_recorded_once(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]), Reply("Answer: 42"))
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent().run(QUESTION, context(base_url))
    recorded = json.loads(json.dumps(trajectory.to_dict()))
    # Both calls were given the same prompt and tools: kept once, each call pointing at it.
    (setup,) = recorded["setups"]
    assert [call["setup"] for call in recorded["model_calls"]] == [0, 0]
    assert [sent_setup(r) for r in worker.requests_to("/v1/chat/completions")] == [setup] * 2
    assert setup["system_prompt"] == INSTRUCTIONS
    assert [tool["name"] for tool in setup["tools"]] == ["add", "subtract", "multiply", "divide"]
    assert setup["tools"][0]["parameters"]["required"] == ["a", "b"]


async def test_the_first_tool_result_can_be_the_answer(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]))
    base_url = await start_proxy([worker])
    runner = MathCalculatorAgent(tool_use="stop_on_first_tool")
    trajectory = await runner.run(QUESTION, context(base_url))
    worker.assert_script_used_up()  # one model call: no second one to read the result
    assert trajectory.error is None and trajectory.final_output == "42.0"
    assert len(trajectory.model_calls) == 1
    assert [call.result for call in trajectory.tool_calls] == ["42.0"]


async def test_endless_tool_calls_end_as_max_turns(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(*[Reply(tool_calls=[multiply_call(i, 2)]) for i in range(3)])
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent(max_turns=2).run(QUESTION, context(base_url))
    assert trajectory.final_output is None
    assert trajectory.error.kind == "max_turns"


async def test_unknown_tool_is_a_malformed_tool_call(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[ToolCall("sqrt", '{"x": 9}')]))
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent().run(QUESTION, context(base_url))
    assert trajectory.error.kind == "malformed_tool_call"
    assert "sqrt" in trajectory.error.message
    # The call the model made stays in the record, though it ended the attempt.
    assert kinds(trajectory.messages) == ["user", "function_call"]


async def test_upstream_failure_is_recorded_not_raised(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 400
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent().run(QUESTION, context(base_url))
    assert trajectory.error.to_dict()["kind"] == "request_rejected"
    assert trajectory.error.to_dict()["class"] == "infra"


@pytest.mark.parametrize("native", [True, False], ids=["native", "translated"])
async def test_responses_api_mode(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    context: Callable[[str], RunContext],
    native: bool,
) -> None:
    (worker,) = await start_workers(1, responses_api=native)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]), Reply("Answer: 42"))
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent(api="responses").run(QUESTION, context(base_url))
    assert trajectory.error is None, trajectory.error
    assert trajectory.final_output == "Answer: 42"
    assert [c.name for c in trajectory.tool_calls] == ["multiply"]
    (setup,) = trajectory.setups  # given as the request's `instructions`, not a message
    assert setup.system_prompt == INSTRUCTIONS and len(setup.tools) == 4
    served, other = ("/v1/responses", "/v1/chat/completions")[:: 1 if native else -1]
    assert (len(worker.requests_to(served)), len(worker.requests_to(other))) == (2, 0)


class EchoRunner:
    """A custom runner, as a user would write one."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    async def run(self, sample: object, ctx: RunContext) -> object:
        return self.prefix


def test_runners_load_by_name_path_and_say_what_exists() -> None:
    assert isinstance(load_runner("math_calculator", max_turns=3), MathCalculatorAgent)
    assert load_runner("tests.test_agents:EchoRunner", prefix="x").prefix == "x"
    with pytest.raises(ConfigError, match="did you mean 'math_calculator'"):
        load_runner("math_calculater")
    with pytest.raises(ConfigError, match=r"cannot load agent 'tests\.test_agents:Nope'"):
        load_runner("tests.test_agents:Nope")
    with pytest.raises(ConfigError, match=r"has no `async run\(sample, ctx\)` method"):
        load_runner("tests.test_agents:context_free_thing")


class context_free_thing:
    """Not a runner: no run method."""


SESSION = Session(
    "s1",
    [
        Turn("What is 2 + 3?", "5"),
        Turn("Now double it.", "10"),
        Turn("Are you sure? Check again.", challenge=True),
    ],
)


async def test_multi_turn_chat_sends_the_whole_history_each_turn(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    tmp_path: Path,
    context: Callable[[str], RunContext],
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply("Answer: 5"), Reply("Answer: 10"), Reply("Yes.\nAnswer: 10"))
    base_url = await start_proxy([worker], record_dir=tmp_path)
    trajectory = await load_runner("multi_turn_chat").run(SESSION, context(base_url))
    assert trajectory.error is None
    assert trajectory.turn_outputs == ["Answer: 5", "Answer: 10", "Yes.\nAnswer: 10"]
    assert trajectory.final_output == "Yes.\nAnswer: 10"
    recorded = tmp_path / "q1-0.jsonl"
    await eventually(lambda: recorded.exists() and len(recorded.read_text().splitlines()) == 3)
    last = json.loads(recorded.read_text().splitlines()[-1])["request"]["messages"]
    said = [(m["role"], m["content"]) for m in last if m["role"] in ("user", "assistant")]
    assert said == [
        ("user", "What is 2 + 3?"), ("assistant", "Answer: 5"),
        ("user", "Now double it."), ("assistant", "Answer: 10"),
        ("user", "Are you sure? Check again."),
    ]  # fmt: skip
    assert SESSION.expected_answers() == ["5", "10", "10"]
    # Three turns, each its own run of the agent: the one prompt, without tools, is kept once.
    recorded = trajectory.to_dict()
    assert recorded["setups"] == [sent_setup(worker.requests_to("/v1/chat/completions")[-1])]
    assert recorded["setups"][0]["tools"] == []
    assert [call["setup"] for call in recorded["model_calls"]] == [0, 0, 0]


async def test_multi_turn_failure_leaves_later_turns_unanswered(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply("Answer: 5"), Reply(tool_calls=[ToolCall("sqrt", '{"x": 100}')]))
    base_url = await start_proxy([worker])
    trajectory = await load_runner("multi_turn_chat", tools=True).run(SESSION, context(base_url))
    assert trajectory.turn_outputs == ["Answer: 5", None, None]
    assert trajectory.error.kind == "malformed_tool_call"
    worker.assert_script_used_up()


async def test_extending_page_runner_works(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    block = _docs_block("extending.md", "class OneShot")
    namespace: dict[str, object] = {}
    exec(compile(block, "extending.md", "exec"), namespace)  # the page's own example, verbatim
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    trajectory = await namespace["OneShot"]().run(QUESTION, context(base_url))
    assert trajectory.final_output == f"mock reply from w0: {QUESTION.question}"


def _docs_block(page: str, marker: str) -> str:
    """The Python example of docs/`page` that contains `marker`."""
    text = (Path(__file__).resolve().parent.parent / "docs" / page).read_text()
    return next(b for b in text.split("```python")[1:] if marker in b).split("```")[0]
