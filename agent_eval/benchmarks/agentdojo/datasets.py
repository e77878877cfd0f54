"""AgentDojo's tasks as items: `agentdojo:SUITE[+ATTACK...]`, SUITE one of its suites or `all`.

Without an attack a part gives the suite's user tasks; each attack named after a `+` adds every
user task x injection task pair with that attack's injections in the environment, so one run
measures utility, utility under attack and attack success together.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from agent_eval.benchmarks.agentdojo.suites import (
    SUITES,
    VERSION,
    Task,
    attack_names,
    injections,
    suite,
    tasks,
)
from agent_eval.data.errors import DataError
from agent_eval.data.records import Item, Sample


def agentdojo_items(part: str) -> Iterator[Item]:
    """The items of `part` (`banking`, `all+important_instructions`, ...), in AgentDojo's order.

    Raises:
        DataError: a suite or attack AgentDojo does not have, named beside the ones it has.
    """
    suite_name, *attacks = part.split("+")
    names = _suites(suite_name)
    unknown = [attack for attack in attacks if attack not in attack_names()]
    if unknown:
        raise DataError(
            f"AgentDojo has no attack {unknown[0]!r} (in agentdojo:{part}); "
            f"name one of: {', '.join(attack_names())}, as agentdojo:{suite_name}+ATTACK"
        )
    for name in names:
        for task in tasks(name, attacks):
            yield item(task)


def item(task: Task) -> Sample:
    """The task as the engine runs it: the user's prompt, and as gold and metadata what the
    runner and the checker need (the environment's injections among it)."""
    gold = {
        "version": VERSION,
        "suite": task.suite,
        "user_task": task.user_task,
        "injection_task": task.injection_task,
        "attack": task.attack,
        "injections": injections(task),
    }
    prompt = suite(task.suite).get_user_task_by_id(task.user_task).PROMPT
    return Sample(id=task.id, question=prompt, answer=json.dumps(gold), metadata=gold)


def _suites(name: str) -> tuple[str, ...]:
    if name == "all":
        return SUITES
    if name in SUITES:
        return (name,)
    raise DataError(
        f"AgentDojo has no suite {name!r}; its parts: {', '.join((*SUITES, 'all'))}, "
        "each with optional attacks as SUITE+ATTACK (agentdojo:banking+important_instructions)"
    )
