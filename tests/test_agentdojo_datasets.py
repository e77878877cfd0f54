"""AgentDojo's items as agentdojo:SUITE[+ATTACK...] gives them: the package's counts, stable
ids, the attack's injections in the gold, and errors that name the parts there are."""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice

import pytest

from agent_eval.benchmarks.agentdojo.datasets import agentdojo_items
from agent_eval.benchmarks.agentdojo.suites import MODEL_NAME, SUITES, VERSION, suite, tasks
from agent_eval.data.errors import DataError
from agent_eval.data.loaders import load_dataset

ATTACKS = ["important_instructions", "tool_knowledge", "direct"]


@pytest.mark.parametrize("name", SUITES)
def test_counts_are_the_packages(name: str) -> None:
    from agentdojo.task_suite.load_suites import get_suite

    theirs = get_suite(VERSION, name)
    users, injections = len(theirs.user_tasks), len(theirs.injection_tasks)
    counts = Counter(task.attack for task in tasks(name, ATTACKS))
    assert counts == {None: users, **{attack: users * injections for attack in ATTACKS}}
    ids = [task.id for task in tasks(name, ATTACKS)]
    assert len(set(ids)) == len(ids)


def test_the_four_suites_hold_97_user_tasks_and_949_pairs_per_attack() -> None:
    counts = Counter(task.attack for name in SUITES for task in tasks(name, ["direct"]))
    assert counts == {None: 97, "direct": 949}


def test_a_denial_of_service_attack_takes_the_first_injection_task_only() -> None:
    paired = [task for task in tasks("slack", ["dos"]) if task.attack]
    assert {task.injection_task for task in paired} == {"injection_task_1"}
    assert len(paired) == len(suite("slack").user_tasks)


def test_items_carry_the_prompt_and_the_attacks_injections() -> None:
    first = list(islice(load_dataset("agentdojo:banking+important_instructions"), 3))
    assert [item.id for item in first] == [
        "banking/user_task_0",
        "banking/user_task_0/injection_task_0/important_instructions",
        "banking/user_task_0/injection_task_1/important_instructions",
    ]
    prompt = suite("banking").get_user_task_by_id("user_task_0").PROMPT
    assert all(item.question == prompt for item in first)
    alone, attacked = (json.loads(item.answer or "") for item in first[:2])
    assert alone["injections"] == {} and alone["attack"] is None
    goal = suite("banking").get_injection_task_by_id("injection_task_0").GOAL
    [text] = attacked["injections"].values()
    assert goal in text and f"to you, {MODEL_NAME}." in text and "Emma Johnson" in text
    assert attacked["version"] == VERSION == "v1.2.2"
    assert first[1].metadata == attacked


def test_ids_are_stable_across_reads() -> None:
    def read() -> list[str]:
        return [item.id for item in islice(agentdojo_items("slack+direct"), 12)]

    assert read() == read()


@pytest.mark.parametrize(
    ("part", "named"),
    [
        ("bank", "banking, slack, travel, workspace, all"),
        ("banking+important", "important_instructions"),
    ],
)
def test_a_part_it_does_not_have_names_those_it_has(part: str, named: str) -> None:
    with pytest.raises(DataError, match=named):
        list(load_dataset(f"agentdojo:{part}"))
