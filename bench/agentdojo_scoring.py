"""Measure AgentDojo items scored per second: our reward (score_agentdojo) beside AgentDojo's own
checker (its pipeline replaying the same calls through TaskSuite.run_task_with_pipeline), on the
same scripted outputs, in one process, one after the other.

The items are each suite's user tasks alone and with every injection task under
important_instructions, taken by a stride to reach --items; their outputs rotate through right,
wrong, following the injection and malformed. Both sides parse each item's environment; ours
also replays an attempt that reached the injected goal once more, to find the call that did.
Run from the repository root:
`python -m bench.agentdojo_scoring [--items N] [--suites banking,slack] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from itertools import islice
from typing import Any

from agent_eval.benchmarks.agentdojo.datasets import item
from agent_eval.benchmarks.agentdojo.reward import score_agentdojo
from agent_eval.benchmarks.agentdojo.suites import SUITES, tasks
from agent_eval.data.records import Sample
from agent_eval.testing.agentdojo_scripts import KINDS, Script, official, prediction, script
from bench.parts.results_file import add_json_option, describe, machine, write_results

ATTACK = "important_instructions"


def chosen(suites: list[str], count: int) -> list[tuple[Sample, Script]]:
    """About `count` items spread over the suites, each with its scripted output."""
    share = max(1, count // len(suites))
    picked: list[Sample] = []
    for name in suites:
        found = list(tasks(name, [ATTACK]))
        picked += [item(task) for task in islice(found, 0, None, max(1, len(found) // share))]
    return [(sample, script(sample, KINDS[n % len(KINDS)])) for n, sample in enumerate(picked)]


def rate(score: Callable[[Sample, Script], Any], played: list[tuple[Sample, Script]]) -> float:
    """Items scored per second."""
    started = time.perf_counter()
    for sample, scripted in played:
        score(sample, scripted)
    return len(played) / (time.perf_counter() - started)


def ours(sample: Sample, played: Script) -> Any:
    return score_agentdojo(prediction(played), sample.answer or "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300, help="items to score (about)")
    parser.add_argument("--suites", default="banking,slack", help=f"of {', '.join(SUITES)}")
    add_json_option(parser, "agentdojo_scoring")
    args = parser.parse_args()
    about = machine()
    played = chosen(args.suites.split(","), args.items)
    for score in (official, ours):  # first calls build what later ones reuse: not timed
        score(*chosen(args.suites.split(",")[:1], 1)[0])
    theirs = rate(official, played)
    mine = rate(ours, played)
    figures = {
        "items": len(played),
        "ours_items_per_s": round(mine, 2),
        "agentdojo_items_per_s": round(theirs, 2),
        "ratio_ours_to_agentdojo": round(mine / theirs, 2),
    }
    print(f"{len(played)} items ({args.suites}, alone and under {ATTACK})")
    print(f"  ours (score_agentdojo)          {mine:8.1f} items/s")
    print(f"  AgentDojo (run_task_with_pipeline) {theirs:5.1f} items/s")
    print(f"  ratio ours / AgentDojo          {mine / theirs:8.2f}")
    print(describe(about))
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
