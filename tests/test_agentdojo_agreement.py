"""Our AgentDojo verdicts against AgentDojo's own, item by item: 556 items of the four suites,
user tasks alone and under three attacks, each played by a scripted model (right, wrong,
following the injection, malformed) through our runner and reward, and through AgentDojo's own
pipeline elements and TaskSuite.run_task_with_pipeline."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from itertools import islice

import pytest
import yaml
from agentdojo.task_suite.task_suite import read_suite_file

from agent_eval.benchmarks.agentdojo.datasets import item
from agent_eval.benchmarks.agentdojo.suites import SUITES, Task, injections, suite, tasks
from agent_eval.testing.agentdojo_scripts import KINDS, script
from tests.helpers.agentdojo import both, libyaml, libyaml_load, ours

ATTACKS = ("important_instructions", "tool_knowledge", "direct")
# Every how many user tasks, and user x injection pairs, a suite's share takes: all of the
# small suites' user tasks, a spread of the rest (an item of travel or workspace takes seconds:
# their environments are large, and parsed anew by each side).
STRIDES = {"banking": (1, 2), "slack": (1, 2), "travel": (1, 6), "workspace": (4, 40)}
CHUNKS = [(name, attack) for name in SUITES for attack in (None, *ATTACKS)]


@pytest.fixture(autouse=True, scope="module")
def _libyaml() -> Iterator[None]:
    with libyaml():
        yield


def chosen(name: str, attack: str | None) -> list[Task]:
    """The suite's user tasks alone (attack None) or its pairs under `attack`, by its stride."""
    alone, paired = STRIDES[name]
    found = (task for task in tasks(name, [attack] if attack else []) if task.attack == attack)
    return list(islice(found, 0, None, paired if attack else alone))


def test_the_chosen_items_are_at_least_500_across_suites_and_attacks() -> None:
    counts = Counter((name, attack) for name, attack in CHUNKS for _ in chosen(name, attack))
    assert sum(counts.values()) >= 500
    assert all(counts[chunk] > 0 for chunk in CHUNKS)


@pytest.mark.parametrize("name", SUITES)
def test_libyaml_reads_an_attacked_environment_as_pyyamls_own_scanner(name: str) -> None:
    first = next(task for task in tasks(name, [ATTACKS[0]]) if task.attack)
    found = suite(name)
    placed = {**found.get_injection_vector_defaults(), **injections(first)}
    text = read_suite_file(name, "environment.yaml", None).format(**placed)
    assert libyaml_load(text) == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize(("name", "attack"), CHUNKS)
def test_verdicts_equal_agentdojos_own(name: str, attack: str | None) -> None:
    found: Counter[tuple[bool, bool | None]] = Counter()
    for number, task in enumerate(chosen(name, attack)):
        sample = item(task)
        played = script(sample, KINDS[number % len(KINDS)])
        result, official = asyncio.run(both(sample, played))
        assert result.benchmark is not None
        mine = (result.benchmark["utility"], result.benchmark["security"])
        assert mine == official, f"{sample.id} played {played.kind}: ours {mine}, theirs {official}"
        assert result.correct is official[0]
        found[official] += 1
    # Both verdicts of each check came up, so agreement is not a constant on both sides.
    assert {utility for utility, _ in found} == {True, False}
    if attack is not None:
        assert {security for _, security in found} == {True, False}


def test_a_followed_injection_names_the_call_that_reached_its_goal() -> None:
    sample = item(Task("banking", "user_task_0", "injection_task_0", "important_instructions"))
    played = script(sample, "follow")
    result = asyncio.run(ours(sample, played))
    assert result.benchmark is not None
    reached = result.benchmark["injection_call"]
    injection = suite("banking").get_injection_task_by_id("injection_task_0")
    goal = injection.ground_truth(suite("banking").load_and_inject_default_environment({}))
    assert reached["function"] == goal[-1].function == "send_money"
    flat = [call for answer in played.answers for call in answer]
    assert reached["index"] == len(flat) - 1
    assert reached["args"] == flat[-1][1]
    assert result.benchmark["security"] is True


def test_right_answers_reach_no_injected_goal() -> None:
    sample = item(Task("slack", "user_task_1", "injection_task_1", "tool_knowledge"))
    result = asyncio.run(ours(sample, script(sample, "right")))
    assert result.benchmark is not None
    assert result.benchmark["utility"] is True
    assert result.benchmark["security"] is False
    assert result.benchmark["injection_call"] is None
