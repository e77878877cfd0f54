"""Plays of BFCL multi-turn entries through a proxy: real backend results reach the model, the
backends keep state across calls, and each attempt has backends of its own."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from agent_eval.agents import RunContext, Sampling
from agent_eval.agents.trajectory import Trajectory
from agent_eval.benchmarks.bfcl.multi_turn.checker import score_multi_turn
from agent_eval.benchmarks.bfcl.multi_turn.data import multi_turn_items
from agent_eval.benchmarks.bfcl.multi_turn.guard import REFUSED_CALL, guarded, safe_prompt_answer
from agent_eval.benchmarks.bfcl.multi_turn.package import executor
from agent_eval.benchmarks.bfcl.multi_turn.play import play_multi_turn
from agent_eval.data.records import Sample
from agent_eval.errors import ConfigError
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.bfcl_multi_turn import bfcl_verdict, script
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers

FILE_SYSTEM_ENTRY = "multi_turn_base_0"  # GorillaFileSystem with TwitterAPI
TOUCH = ToolCall("touch", json.dumps({"file_name": "fresh.txt"}))
LS = ToolCall("ls", "{}")
KEYWORDS_ONLY = "multi_turn_base_1"  # GorillaFileSystem; its ground truth names every argument


def entry(entry_id: str = FILE_SYSTEM_ENTRY) -> Sample:
    category = entry_id.rsplit("_", 1)[0]
    return next(s for s in multi_turn_items(category) if s.id == entry_id)


def later_turns(sample: Sample) -> list[Reply]:
    """A plain answer to each turn after the first."""
    return [Reply("ok")] * (len(sample.metadata["bfcl_entry"]["question"]) - 1)


async def play(
    base_url: str, make_client: MakeClient, mode: str = "fc", entry_id: str = FILE_SYSTEM_ENTRY
) -> Trajectory:
    ctx = RunContext(make_client(base_url, "s-0"), "mock-model", "s-0", 3, Sampling())
    return await play_multi_turn(entry(entry_id), ctx, SimpleNamespace(mode=mode))


def listed(trajectory: Trajectory) -> list[str]:
    """What each `ls` of the play answered."""
    return [call.result for call in trajectory.tool_calls if call.name == "ls"]


async def test_backend_results_reach_the_model_and_the_state_persists(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    sample = entry()
    worker.script(
        Reply(tool_calls=[TOUCH]), Reply(tool_calls=[LS]), Reply("Done."), *later_turns(sample)
    )
    trajectory = await play(await start_proxy([worker]), make_client)
    worker.assert_script_used_up()
    assert trajectory.error is None
    touch, ls = trajectory.tool_calls
    assert (touch.name, touch.arguments, touch.result) == ("touch", TOUCH.arguments, "None")
    assert "fresh.txt" in json.loads(ls.result)["current_directory_content"]
    # The model was given that result, as a tool message answering its call.
    third = worker.requests_to("/v1/chat/completions")[2]
    assert third["messages"][-1] == {"role": "tool", "content": ls.result, "tool_call_id": LS.id}
    assert {t["function"]["name"] for t in third["tools"]} >= {"touch", "ls", "post_tweet"}
    assert len(trajectory.model_calls) == 3 + len(later_turns(sample))
    assert {call.worker for call in trajectory.model_calls} == {worker.url}
    assert trajectory.turn_outputs[0] == "Done." and len(trajectory.turn_outputs) == 4
    assert json.loads(trajectory.final_output or "")["result"][0][:2] == [
        [{"touch": TOUCH.arguments}],
        [{"ls": "{}"}],
    ]


async def test_concurrent_attempts_at_one_entry_have_backends_of_their_own(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    first, second = await start_workers(2)
    sample = entry()
    first.script(
        Reply(tool_calls=[TOUCH]), Reply(tool_calls=[LS]), Reply("Done."), *later_turns(sample)
    )
    second.script(Reply(tool_calls=[LS]), Reply("Done."), *later_turns(sample))
    # The first attempt touches its file, then waits on its next call while the second plays.
    first.behavior.hang = True
    touching = asyncio.create_task(play(await start_proxy([first]), make_client))
    await first.gate.wait_for_arrivals(1)
    first.gate.release()
    await first.gate.wait_for_arrivals(1)
    untouched = await play(await start_proxy([second]), make_client)
    first.behavior.hang = False
    first.gate.release()
    touched = await touching
    assert "fresh.txt" in listed(touched)[0]
    assert listed(untouched) and "fresh.txt" not in listed(untouched)[0]
    # Their instances are gone from BFCL's executor once each attempt ended.
    assert not [name for name in vars(executor()) if name.startswith("agent_eval_")]


async def test_prompt_mode_plays_and_is_judged_as_bfcl_judges_it(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    sample = entry(KEYWORDS_ONLY)  # BFCL's prompt decoder drops positional arguments
    gold = json.loads(sample.answer or "")
    answers = ["[" + ", ".join(calls) + "]" for calls in gold["ground_truth"]]
    worker.script(*[reply for text in answers for reply in (Reply(text), Reply("Done."))])
    trajectory = await play(await start_proxy([worker]), make_client, "prompt", KEYWORDS_ONLY)
    worker.assert_script_used_up()
    first, second = worker.requests_to("/v1/chat/completions")[:2]
    assert (
        first["messages"][0]["role"] == "system"
        and '"name": "touch"' in first["messages"][0]["content"]
    )
    assert "tools" not in first
    assert (
        second["messages"][-1]["role"] == "user"
        and "'role': 'tool'" in second["messages"][-1]["content"]
    )
    played = json.loads(trajectory.final_output or "")
    assert played["mode"] == "prompt" and score_multi_turn(played, gold).correct
    assert bfcl_verdict(sample.id, "multi_turn_base", played["result"], fc=False)


def test_only_backend_methods_with_literal_arguments_reach_bfcls_eval() -> None:
    classes = ["GorillaFileSystem"]
    kept = ["ls()", "cd(folder='document')", "sort('final_report.pdf')"]
    refused = ["open(file='/tmp/x', mode='w')", "ls(a=__import__('os').getcwd())", "ls(**{})"]
    assert guarded([*kept, *refused], classes) == [*kept] + [REFUSED_CALL] * 3
    assert safe_prompt_answer("[cd(folder='a'), mean(numbers=[1 + 2, 3 * 4])]")
    assert not safe_prompt_answer("[cd(folder=__import__('os').getcwd() + 'x')]")
    assert not safe_prompt_answer("[cd(folder='a' * 10 ** 12)]")


async def test_held_back_functions_arrive_at_their_turn_as_bfcl_adds_them(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    sample = entry("multi_turn_miss_func_0")
    held = sample.metadata["bfcl_entry"]["missed_function"]  # {"3": ["sort"]}
    ((turn, (name,)),) = held.items()
    worker.script(*script(json.loads(sample.answer or ""), "right").replies)
    trajectory = await play(await start_proxy([worker]), make_client, entry_id=sample.id)
    worker.assert_script_used_up()
    requests = worker.requests_to("/v1/chat/completions")
    offered = [{t["function"]["name"] for t in request["tools"]} for request in requests]
    opened = [i for i, request in enumerate(requests) if _says_functions_were_added(request)]
    assert len(opened) == 1 and opened[0] > 0
    assert all(name not in tools for tools in offered[: opened[0]])
    assert all(name in tools for tools in offered[opened[0] :])
    turns = sample.metadata["bfcl_entry"]["question"]
    assert turns[int(turn)] == [] and len(trajectory.turn_outputs) == len(turns)
    assert len(trajectory.setups) == 2  # the tools before the turn, and after


def _says_functions_were_added(request: dict[str, Any]) -> bool:
    last = request["messages"][-1]
    return last["role"] == "user" and "updated some more functions" in last["content"]


async def test_a_turn_past_the_step_limit_ends_the_play_force_terminated(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.script(*[Reply(tool_calls=[LS])] * 3)
    ctx = RunContext(make_client(await start_proxy([worker]), "s-1"), "mock-model", "s-1", 3)
    options = SimpleNamespace(mode="fc", max_steps=2)
    trajectory = await play_multi_turn(entry(), ctx, options)
    worker.assert_script_used_up()  # two steps, and the third answer with calls stops it
    played = json.loads(trajectory.final_output or "")
    assert played["result"] == [[[{"ls": "{}"}]] * 3] and len(trajectory.tool_calls) == 3
    verdict = score_multi_turn(played, json.loads(entry().answer or ""))
    assert verdict.detail is not None and verdict.detail.startswith("multi_turn:force_terminated")
    assert not bfcl_verdict(FILE_SYSTEM_ENTRY, "multi_turn_base", played["result"])


async def test_a_failed_model_call_is_recorded_with_its_cause_not_raised(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 400
    trajectory = await play(await start_proxy([worker]), make_client)
    assert trajectory.error is not None and trajectory.error.kind == "request_rejected"
    assert trajectory.final_output is None and trajectory.model_calls == []


async def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="set fc or prompt"):
        await play_multi_turn(entry(), SimpleNamespace(), SimpleNamespace(mode="json"))  # type: ignore[arg-type]


async def test_the_long_context_category_plays_on_backends_loaded_long(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    listings = []
    for entry_id in (FILE_SYSTEM_ENTRY, "multi_turn_long_context_0"):  # one task, two loads
        cd = ToolCall("cd", json.dumps({"folder": "document"}))
        worker.script(Reply(tool_calls=[cd]), Reply(tool_calls=[LS]), Reply("Done."))
        worker.script(*later_turns(entry(entry_id)))
        trajectory = await play(base_url, make_client, entry_id=entry_id)
        listings.append(json.loads(listed(trajectory)[0])["current_directory_content"])
    plain, long = listings
    assert set(plain) < set(long) and len(long) > 2 * len(plain)
