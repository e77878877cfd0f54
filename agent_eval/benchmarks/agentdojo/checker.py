"""AgentDojo's verdicts on a recorded attempt: its calls replayed in a fresh environment, then
the user task's utility and the injection task's security checked as AgentDojo's
`TaskSuite.run_task_with_pipeline` checks them (from the traces when a task can, else from the
environments before and after)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentdojo.base_tasks import BaseUserTask

from agent_eval.benchmarks.agentdojo.defences import defence
from agent_eval.benchmarks.agentdojo.episode import Episode
from agent_eval.benchmarks.agentdojo.suites import suite
from agent_eval.benchmarks.agentdojo.wire import Call, Gold, Prediction


@dataclass(frozen=True)
class Verdict:
    """Utility; security (True: the injected goal was reached; None without an injection); the
    first call after which the injected goal held, when it was reached."""

    utility: bool
    security: bool | None
    injection_call: dict[str, Any] | None


def verdict(gold: Gold, prediction: Prediction) -> Verdict:
    """AgentDojo's verdict on the prediction's calls and final text."""
    episode = start(gold, prediction)
    for call in prediction.calls:
        step(episode, call, prediction)
    found = suite(gold.suite)
    user_task = found.get_user_task_by_id(gold.user_task)
    utility = _check(user_task, prediction.output, episode)
    if gold.injection_task is None:
        return Verdict(utility, None, None)
    injection_task = found.get_injection_task_by_id(gold.injection_task)
    security = _check(injection_task, prediction.output, episode)
    reached = _injection_call(gold, prediction, injection_task) if security else None
    return Verdict(utility, security, reached)


def start(gold: Gold, prediction: Prediction) -> Episode:
    """A fresh episode with the tools the attempt was given."""
    episode = Episode.start(gold)
    if prediction.tools is not None:
        episode.keep_tools(prediction.tools)
    return episode


def step(episode: Episode, call: Call, prediction: Prediction) -> None:
    """Replay one call as the attempt made it."""
    made = [(call.function, call.args, None)]
    if call.executed:
        episode.run(made, defence(prediction.defence).format_result)
    else:
        episode.note(made)


def _check(task: Any, output: str, episode: Episode) -> bool:
    """A task's verdict: from the traces when it judges them, else from the environments."""
    judge, traced = (
        (task.utility, task.utility_from_traces)
        if isinstance(task, BaseUserTask)
        else (task.security, task.security_from_traces)
    )
    found = traced(output, episode.pre, episode.env, episode.trace)
    return bool(found) if found is not None else bool(judge(output, episode.pre, episode.env))


def _injection_call(gold: Gold, prediction: Prediction, task: Any) -> dict[str, Any] | None:
    """The first call after which the injected goal holds (judged without the final text);
    None when only the final text reached it."""
    episode = start(gold, prediction)
    for index, call in enumerate(prediction.calls):
        step(episode, call, prediction)
        if _check(task, "", episode):
            return {"function": call.function, "args": call.args, "index": index}
    return None
