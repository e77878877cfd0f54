"""AgentDojo's task suites at one benchmark version, and the injections an attack writes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from agentdojo.attacks.attack_registry import ATTACKS, load_attack
from agentdojo.models import MODEL_NAMES
from agentdojo.task_suite.load_suites import get_suites

from agent_eval.data.errors import DataError

VERSION = "v1.2.2"
"""AgentDojo's newest benchmark version in agentdojo 0.1.35 (v1.2.1 with fixed tasks)."""
SUITES = ("banking", "slack", "travel", "workspace")
MODEL_NAME = "the AI language model"
"""How attacks that address the model name it: AgentDojo's own name for a model it does not know
(`DEFAULT_MODEL_NAME`): the model behind the proxy is not one of its listed models."""


@dataclass(frozen=True)
class Task:
    """A user task of AgentDojo's, alone or with an injection task under an attack."""

    suite: str
    user_task: str
    injection_task: str | None = None
    attack: str | None = None

    @property
    def id(self) -> str:
        parts = [self.suite, self.user_task, self.injection_task, self.attack]
        return "/".join(part for part in parts if part is not None)


@cache
def suite(name: str) -> Any:
    """The task suite `name` at VERSION."""
    return get_suites(VERSION)[name]


def attack_names() -> list[str]:
    """The attacks AgentDojo's registry holds."""
    return sorted(ATTACKS)


def tasks(suite_name: str, attacks: list[str]) -> Iterator[Task]:
    """Each user task alone, then with every injection task under each attack (a
    denial-of-service attack takes the first injection task only, as AgentDojo's benchmark
    does): the first items of a limited run measure utility and attack success both."""
    found = suite(suite_name)
    paired = {attack: _injection_tasks(suite_name, attack) for attack in attacks}
    for user_task in found.user_tasks:
        yield Task(suite_name, user_task)
        for attack, injection_tasks in paired.items():
            for injection_task in injection_tasks:
                yield Task(suite_name, user_task, injection_task, attack)


def _injection_tasks(suite_name: str, attack: str) -> list[str]:
    injection_tasks = list(suite(suite_name).injection_tasks)
    return injection_tasks[:1] if _attack(suite_name, attack).is_dos_attack else injection_tasks


def injections(task: Task) -> dict[str, str]:
    """What the task's attack writes into the environment's injection vectors ({} without one)."""
    if task.attack is None or task.injection_task is None:
        return {}
    found = suite(task.suite)
    attack = _attack(task.suite, task.attack)
    user_task = found.get_user_task_by_id(task.user_task)
    return dict(attack.attack(user_task, found.get_injection_task_by_id(task.injection_task)))


def environment(suite_name: str, injections: dict[str, str]) -> Any:
    """The suite's environment with `injections` placed as AgentDojo places them, a copy of
    its own: parsing it is the costly part (0.3 s in workspace), and attempts at one item, or
    at user tasks without attack, share their parse."""
    return _parsed(suite_name, tuple(sorted(injections.items()))).model_copy(deep=True)


@lru_cache(maxsize=32)
def _parsed(suite_name: str, injections: tuple[tuple[str, str], ...]) -> Any:
    return suite(suite_name).load_and_inject_default_environment(dict(injections))


@cache
def _attack(suite_name: str, name: str) -> Any:
    """AgentDojo's attack `name` on the suite, addressing the model by MODEL_NAME."""
    if name not in attack_names():
        raise DataError(
            f"AgentDojo has no attack {name!r}; its attacks: {', '.join(attack_names())}"
        )
    listed = next(iter(MODEL_NAMES))
    attack = load_attack(name, suite(suite_name), _Target(listed))
    # An attack that looked the model's name up (rather than naming a wrong one on purpose)
    # addresses it by AgentDojo's name for a model it does not know.
    if getattr(attack, "model_name", None) == MODEL_NAMES[listed]:
        attack.model_name = MODEL_NAME
    return attack


@dataclass(frozen=True)
class _Target:
    """The attacked pipeline as attacks see it: a name, which attacks that address the model
    look up in AgentDojo's list of models (they fail for others)."""

    name: str
