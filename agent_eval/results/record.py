"""One finished attempt with its trajectory: what the engine records, one line of samples.jsonl."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from operator import itemgetter
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore
from agent_eval.metrics.attempt import SCHEMA, Attempt
from agent_eval.metrics.continuity import recorded_continuity


@dataclass
class AttemptRecord(Attempt):
    """One scored attempt at one sample, with its trajectory (the runner's Trajectory.to_dict())."""

    # Keyword-only: it follows the attempt's fields with defaults, and stays last on the line.
    trajectory: dict[str, Any] = field(kw_only=True)

    def to_line(self) -> bytes:
        """The record as one samples.jsonl line, newline included."""
        # orjson writes a dataclass natively, in field order: no dict is built on the way.
        return orjson.dumps(self, option=orjson.OPT_APPEND_NEWLINE)

    @classmethod
    def from_line(cls, line: bytes, where: str) -> AttemptRecord:
        """Read one line back; a corrupt or newer one is a ConfigError that names `where`."""
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(
                f"{where} is not valid JSON ({exc}); fix or delete that line"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{where} is not an attempt record; was it written by agent-eval?")
        version = data.get("schema", 1)
        if not isinstance(version, int) or version > SCHEMA:
            raise ConfigError(
                f"{where} has record schema {version!r}, which this agent-eval cannot read (it "
                f"reads schema {SCHEMA} and older): upgrade agent-eval to the one that wrote it"
            )
        try:
            # Keys this version does not know are left out, as a reader by key would; keys
            # added since (with a default) may be missing from older lines.
            data = {**_ADDED, **_with_replays(data)}
            return cls(*_VALUES(data), trajectory=data["trajectory"])
        except KeyError as exc:
            raise ConfigError(
                f"{where} is not an attempt record (it lacks {exc}); was it written by agent-eval?"
            ) from None

    def score(self) -> AttemptScore:
        """What the metrics count of this attempt: all of it but the trajectory, whose model
        calls give their cache hits, times to first token and continuity."""
        return AttemptScore(*_VALUES(self.__dict__), **_call_telemetry(self.trajectory))


def _with_replays(data: dict[str, Any]) -> dict[str, Any]:
    """A line's dict with its trajectory's earlier plays under `replays`, in place of the
    `retries` versions 1 and 2 wrote them under."""
    trajectory = data.get("trajectory")
    if not isinstance(trajectory, dict) or "retries" not in trajectory:
        return data
    renamed = {("replays" if key == "retries" else key): v for key, v in trajectory.items()}
    return {**data, "trajectory": renamed}


def _call_telemetry(trajectory: dict[str, Any]) -> dict[str, Any]:
    """The cache hits, times to first token and continuity of a trajectory's model calls, as
    AttemptScore counts them; calls recorded before these were kept count as not reported."""
    cached = prompt = 0
    ttft: list[float] = []
    calls = trajectory.get("model_calls") or ()
    for call in calls:
        if call.get("cached_tokens") is not None:
            cached += call["cached_tokens"]
            prompt += call.get("prompt_tokens", 0)
        if call.get("ttft_s") is not None:
            ttft.append(call["ttft_s"])
    return {
        "cached_tokens": cached,
        "cache_prompt_tokens": prompt,
        "ttft_s": tuple(ttft),
        "continuity": recorded_continuity(calls).counts(),
    }


_ATTEMPT = [f for f in fields(Attempt) if f.init]
# The attempt's values in the order __init__ takes them; a missing key is a KeyError naming it.
_VALUES = itemgetter(*(f.name for f in _ATTEMPT))
_ADDED = {f.name: f.default for f in _ATTEMPT if f.default is not MISSING}
