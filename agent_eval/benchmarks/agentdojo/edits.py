"""How AgentDojo's tasks may be perturbed without making their gold wrong.

A task's gold is its code: the utility check compares the environment and the answer with
values its author wrote for the prompt as it stands, so no number or name of the prompt may
change (`swappable` holds none). Words about something else may be added to the prompt: what
the task asks of the environment does not move, and the added words keep clear of every number
and word the task's checks hold (`context`), so they cannot make an answer pass either.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping

from agent_eval.benchmarks.agentdojo.suites import suite
from agent_eval.data.records import Sample


class AgentDojoEdits:
    """AgentDojo's `SampleEdits` (agent_eval.data.edits)."""

    def text(self, sample: Sample) -> str | None:
        return sample.question

    def context(self, sample: Sample) -> str:
        found = suite(sample.metadata["suite"])
        checks = [inspect.getsource(type(found.get_user_task_by_id(sample.metadata["user_task"])))]
        injection = sample.metadata.get("injection_task")
        if injection is not None:
            checks.append(inspect.getsource(type(found.get_injection_task_by_id(injection))))
        return "\n".join([sample.answer or "", *checks])

    def swappable(self, sample: Sample) -> list[str]:
        return []

    def swapped(self, sample: Sample, new: Mapping[str, str]) -> Sample | None:
        return None

    def told(self, sample: Sample, text: str) -> Sample | None:
        return dataclasses.replace(sample, question=text)


EDITS = AgentDojoEdits()
