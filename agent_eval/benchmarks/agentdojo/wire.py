"""What passes from the dataset to the runner and checker (the gold) and from the runner to the
checker (the prediction, the attempt's final output): JSON documents, checked at the edge."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Gold(BaseModel):
    """An item's task: its suite, user task and, under an attack, the injection and its texts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    suite: str
    user_task: str
    injection_task: str | None = None
    attack: str | None = None
    injections: dict[str, str] = {}


class Call(BaseModel):
    """A tool call as the model made it: `args` None when they were not a JSON object;
    `executed` false for the calls of an answer past the step limit, which nothing ran."""

    model_config = ConfigDict(extra="forbid")

    function: str
    args: dict[str, Any] | None
    executed: bool = True


class Prediction(BaseModel):
    """What an attempt did, as the checker replays it: the calls in order and the final text."""

    model_config = ConfigDict(extra="forbid")

    calls: list[Call]
    output: str
    defence: str | None = None
    tools: list[str] | None = None
    """The tools a tool filter left the model; None: all the suite's."""
