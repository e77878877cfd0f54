"""An attempt as an ATIF trajectory (atif_models.py, v1.7), and an ATIF trajectory read back
into the shape of our record's trajectory (`Trajectory.to_dict()`).

Steps: the system prompt, then one step per message: a user's, an assistant's (its text, its
reasoning, its tool calls) with the tools' outputs as its observation, paired in order with the
model calls (one step per call, as the RFC asks) for their tokens: counts, and the token ids
and log probabilities a call captured (`prompt_token_ids` of v1.4, `completion_token_ids` of
v1.3, `logprobs`). Our own fields go under the key `agent_eval` of ATIF's `extra`: the
record's, at the root; a call's worker, latency, time to first token and retries, in its step's
`metrics.extra`.

Read back, an ATIF document keeps its session, its agent, its root `extra`, each step's source,
text, reasoning, tool calls and their results, and each agent step's prompt, completion and
cached tokens, and its token ids and log probabilities when it has both prompt and completion
ids. Not kept, as our record has no place for them: timestamps, `reasoning_effort`,
`is_copied_context`, `llm_call_count`, a step's `model_name` (the agent's is kept) and `extra`,
costs, completion ids and log probabilities without the prompt's ids, a tool call's or result's
`extra`, subagent references and embedded subagents, `trajectory_id`,
`continued_trajectory_ref`, `notes`, image parts. The totals are computed again from the steps,
as the RFC defines them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from agent_eval import __version__
from agent_eval.metrics.continuity import recorded_tokens
from agent_eval.results.exports.atif_models import Agent, Metrics, Step, Trajectory
from agent_eval.results.exports.atif_models import ToolCall as AtifCall
from agent_eval.results.messages import Message, ToolCall, messages
from agent_eval.results.record import AttemptRecord

EXTENSION = "agent_eval"
"""Our key in ATIF's `extra` objects."""
IN_STEPS = ("messages", "model_calls", "tool_calls", "setups")
"""What of our trajectory the steps and the agent hold; the rest (final output, error, replays,
a command's program) goes under `extra.agent_eval.trajectory`, with the record's own fields."""
TOKENS = ("prompt_tokens", "completion_tokens", "cached_tokens")
TOKEN_IDS = "tokens"
"""A model call's token ids and log probabilities: ATIF's own metrics fields, not `extra`."""
SYSTEM = {"system", "developer"}
"""Roles whose messages are ATIF system steps (Responses calls the system prompt developer's)."""
UNPAIRED = "model_calls_without_step"
"""Model calls beyond the assistant messages (a call that failed, say): kept under `extra`."""


@dataclass
class AtifAttempt:
    """What one ATIF document says of an attempt: its trajectory in our record's shape, the
    session, who played it, and the root's `extra` (ours: the record's own fields)."""

    trajectory: dict[str, Any]
    session_id: str | None
    agent: Agent
    extra: dict[str, Any] | None = None


def record_attempt(record: AttemptRecord, runner: str, model: str | None) -> AtifAttempt:
    """A record as ATIF sees it: played by `runner` (agent-eval's version) on `model`."""
    line = orjson.loads(record.to_line())
    trajectory = line.pop("trajectory")
    rest = {key: value for key, value in trajectory.items() if key not in IN_STEPS}
    tools = _tool_definitions(trajectory.get("setups") or ())
    agent = Agent(name=runner, version=__version__, model_name=model, tool_definitions=tools)
    ours = {**line, "trajectory": rest}
    return AtifAttempt(trajectory, record.session_id, agent, {EXTENSION: ours})


def to_atif(attempt: AtifAttempt) -> Trajectory:
    """The attempt as one ATIF trajectory, validated."""
    trajectory = attempt.trajectory
    steps = _steps(messages(trajectory.get("messages") or ()), _system_prompt(trajectory))
    steps = steps or [_nothing_said(trajectory)]
    calls = list(trajectory.get("model_calls") or ())
    agent_steps = [step for step in steps if step["source"] == "agent"]
    for step, call in zip(agent_steps, calls, strict=False):
        step["metrics"] = _metrics(call)
    extra = _with_unpaired(attempt.extra, calls[len(agent_steps) :])
    for place, step in enumerate(steps, start=1):
        step["step_id"] = place
    document = {
        "session_id": attempt.session_id,
        "agent": attempt.agent.model_dump(exclude_none=True),
        "steps": steps,
        "final_metrics": _totals([step.get("metrics") for step in agent_steps]),
        "extra": extra,
    }
    return Trajectory.model_validate(document)


def from_atif(document: Trajectory) -> AtifAttempt:
    """An ATIF trajectory as an attempt: its steps as our trajectory's messages, model calls
    and tool calls; what it cannot keep is named in this module's docstring."""
    ours = (document.extra or {}).get(EXTENSION) or {}
    said: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    for step in document.steps:
        said.append(_message(step))
        if step.source == "agent":
            calls.append(_call(step.metrics))
        outputs, answered = _outputs(step)
        said += outputs
        tools += answered
    trajectory = {
        "final_output": _last_answer(said),
        "messages": said,
        "tool_calls": tools,
        "model_calls": calls + list(ours.get(UNPAIRED) or ()),
        "turn_outputs": [],
        "error": None,
        "replays": [],
        "setups": [],
    }
    trajectory.update(ours.get("trajectory") or {})
    return AtifAttempt(trajectory, document.session_id, document.agent, document.extra)


def _system_prompt(trajectory: dict[str, Any]) -> str | None:
    """The system prompt the first model call was given, when the record has it."""
    setups = trajectory.get("setups") or ()
    calls = trajectory.get("model_calls") or ()
    first = calls[0].get("setup") if calls else None
    chosen = setups[first] if isinstance(first, int) and first < len(setups) else None
    return (chosen or (setups[0] if setups else {})).get("system_prompt")


def _tool_definitions(setups: Any) -> list[dict[str, Any]] | None:
    """Every tool any model call was given, once each, as OpenAI's function schema."""
    tools = {tool["name"]: tool for setup in setups for tool in setup.get("tools") or ()}
    return [_function(tool) for tool in tools.values()] or None


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"], "description": tool.get("description") or ""}
    if tool.get("parameters") is not None:
        function["parameters"] = tool["parameters"]
    return {"type": "function", "function": function}


def _steps(said: list[Message], system_prompt: str | None) -> list[dict[str, Any]]:
    """One step per message; a message of tool calls alone that follows an assistant's text
    (one model call's answer, recorded as two items) joins its step."""
    steps: list[dict[str, Any]] = []
    if system_prompt is not None and not any(m.role in SYSTEM for m in said):
        steps.append({"source": "system", "message": system_prompt})
    thought: list[str] = []
    for message in said:
        if message.role == "reasoning":
            thought.append(_plain(message.content))
        elif message.role == "tool":
            _observe(steps, message)
        elif message.role == "assistant" and message.content is None and _open(steps):
            steps[-1].setdefault("tool_calls", []).extend(map(_atif_call, message.tool_calls))
        else:
            steps.append(_step(message, thought))
            thought = []
    return steps


def _nothing_said(trajectory: dict[str, Any]) -> dict[str, Any]:
    """The one step of an attempt that ended before any message (ATIF needs one): a system
    step saying why."""
    error = trajectory.get("error") or {}
    why = f": it ended with {error.get('kind')}: {error.get('message')}" if error else ""
    return {"source": "system", "message": f"no message was recorded{why}"}


def _open(steps: list[dict[str, Any]]) -> bool:
    """Whether the last step is an agent's still waiting for its tools' outputs."""
    return bool(steps) and steps[-1]["source"] == "agent" and "observation" not in steps[-1]


def _step(message: Message, thought: list[str]) -> dict[str, Any]:
    """A message as a step; an agent's carries the reasoning items recorded before it."""
    source = "system" if message.role in SYSTEM else "user" if message.role == "user" else "agent"
    step: dict[str, Any] = {"source": source, "message": _content(message.content) or ""}
    if source == "agent":
        reasoning = [*thought, *([message.reasoning] if message.reasoning else [])]
        step["reasoning_content"] = "\n".join(reasoning) if reasoning else None
        if message.tool_calls:
            step["tool_calls"] = [_atif_call(call) for call in message.tool_calls]
    return step


def _observe(steps: list[dict[str, Any]], output: Message) -> None:
    """A tool's output into the observation of the step whose call it answers (the last step,
    when none claims it: a system step when there is none)."""
    owner = next(
        (s for s in reversed(steps) if _calls(s, output.call_id)),
        steps[-1] if steps else None,
    )
    if owner is None:
        owner = {"source": "system", "message": ""}
        steps.append(owner)
    answered = output.call_id if _calls(owner, output.call_id) else None
    result = {"source_call_id": answered, "content": _content(output.content)}
    owner.setdefault("observation", {"results": []})["results"].append(result)


def _plain(content: Any) -> str:
    """Content as plain text: a string, or its parts' texts joined."""
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return "" if content is None else str(content)


def _calls(step: dict[str, Any], call_id: str | None) -> bool:
    ids = {call["tool_call_id"] for call in step.get("tool_calls") or ()}
    return call_id is not None and call_id in ids


def _atif_call(call: ToolCall) -> dict[str, Any]:
    return {
        "tool_call_id": call.id or "",
        "function_name": call.name or "",
        "arguments": _arguments(call.arguments),
    }


def _arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as the object ATIF asks for; JSON that is no object goes under
    `input`, as the model wrote it."""
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = arguments
    return parsed if isinstance(parsed, dict) else {"input": arguments}


def _content(content: Any) -> Any:
    """Content as ATIF holds it: a string, its text parts, or None for none."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return [
            {"type": "text", "text": part["text"]}
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
    return json.dumps(content)


def _metrics(call: dict[str, Any]) -> dict[str, Any] | None:
    """A model call's tokens, and ours (worker, latency, ...) under `extra`."""
    metrics: dict[str, Any] = {key: call[key] for key in TOKENS if call.get(key) is not None}
    metrics.update(_token_ids(call))
    ours = {k: v for k, v in call.items() if k not in (*TOKENS, TOKEN_IDS) and v is not None}
    if ours:
        metrics["extra"] = {EXTENSION: ours}
    return metrics or None


def _token_ids(call: dict[str, Any]) -> dict[str, Any]:
    """The call's captured token ids and log probabilities as ATIF's metrics name them."""
    tokens = recorded_tokens(call)
    if tokens is None:
        return {}
    ids = {"prompt_token_ids": tokens.prompt_ids, "completion_token_ids": tokens.completion_ids}
    return ids if tokens.logprobs is None else {**ids, "logprobs": tokens.logprobs}


def _totals(metrics: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The steps' tokens summed; cached ones only when some step reported them."""
    given = [m for m in metrics if m]
    totals = {
        "total_prompt_tokens": sum(m.get("prompt_tokens", 0) for m in given),
        "total_completion_tokens": sum(m.get("completion_tokens", 0) for m in given),
    }
    if any("cached_tokens" in m for m in given):
        totals["total_cached_tokens"] = sum(m.get("cached_tokens", 0) for m in given)
    return totals


def _with_unpaired(extra: dict[str, Any] | None, unpaired: list[Any]) -> dict[str, Any] | None:
    if not unpaired:
        return extra
    extra = dict(extra or {})
    extra[EXTENSION] = {**(extra.get(EXTENSION) or {}), UNPAIRED: unpaired}
    return extra


def _message(step: Step) -> dict[str, Any]:
    """A step as a chat-completions message."""
    role = "assistant" if step.source == "agent" else step.source
    message: dict[str, Any] = {"role": role, "content": _chat_content(step.message)}
    if step.reasoning_content is not None:
        message["reasoning_content"] = step.reasoning_content
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.tool_call_id,
                "type": "function",
                "function": {"name": call.function_name, "arguments": json.dumps(call.arguments)},
            }
            for call in step.tool_calls
        ]
    return message


def _chat_content(content: Any) -> Any:
    """ATIF content as chat content: a string, or its text parts (image parts are not kept)."""
    if isinstance(content, str) or content is None:
        return content
    return [{"type": "text", "text": part.text} for part in content if part.type == "text"]


def _outputs(step: Step) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A step's observation as tool messages, and its calls with their results."""
    calls = {call.tool_call_id: call for call in step.tool_calls or ()}
    outputs: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    for result in step.observation.results if step.observation else ():
        content = _chat_content(result.content)
        outputs.append(_output(result.source_call_id, content))
        if result.source_call_id in calls:
            answered.append(_tool_call(calls[result.source_call_id], content))
    return outputs, answered


def _output(call_id: str | None, content: Any) -> dict[str, Any]:
    output: dict[str, Any] = {"role": "tool", "content": content}
    if call_id is not None:
        output["tool_call_id"] = call_id
    return output


def _call(metrics: Metrics | None) -> dict[str, Any]:
    """An agent step's metrics as one of our model calls; unknown latency is None."""
    if metrics is None:
        return {"latency_s": None, **dict.fromkeys(TOKENS)}
    ours = (metrics.extra or {}).get(EXTENSION) or {}
    call = {"latency_s": None, **{key: getattr(metrics, key) for key in TOKENS}, **ours}
    if metrics.prompt_token_ids is not None and metrics.completion_token_ids is not None:
        call[TOKEN_IDS] = {
            "prompt_ids": metrics.prompt_token_ids,
            "completion_ids": metrics.completion_token_ids,
            "logprobs": metrics.logprobs,
        }
    return call


def _tool_call(call: AtifCall, result: Any) -> dict[str, Any]:
    text = result if isinstance(result, str) else json.dumps(result)
    return {"name": call.function_name, "arguments": json.dumps(call.arguments), "result": text}


def _last_answer(said: list[dict[str, Any]]) -> str | None:
    """The last assistant message's text: an attempt's final output."""
    for message in reversed(said):
        if message["role"] == "assistant":
            content = message["content"]
            if isinstance(content, list):
                return "\n".join(part["text"] for part in content)
            return content
    return None
