"""Measure how many BFCL answers per second agent-eval's `score_bfcl` scores, beside BFCL's own
evaluation of the same answers, in one run.

Scripted answers of every kind (right, wrong value or type, missing parameter, wrong function,
extra call, malformed arguments, text, nothing) to every single-turn entry, as the proxy returns
them. Ours: the runner's prediction document scored by `score_bfcl`, as a scoring process does.
BFCL's: the answer its OpenAI handler kept, read from its result file's line with the entry and
its possible answer, decoded and judged by its eval_runner's per-entry functions: both start
from text, as each does in a run. Both in this one process, after a warm-up, in turns; each
path's best round counts; the verdicts are compared too.
Run from the repository root:
`python -m bench.bfcl_scoring [--kinds N] [--rounds N] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openai.types.chat import ChatCompletion

from agent_eval.benchmarks.bfcl.categories import SINGLE_TURN
from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.reward import score_bfcl
from agent_eval.benchmarks.bfcl.single_turn import model_result, prediction
from agent_eval.shims import bfcl_official
from agent_eval.testing.bfcl_answers import answer_kinds, completion
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.parts.tables import number, ratio


@dataclass
class Scored:
    """One answer as text, for both paths: our prediction document and gold; BFCL's result
    file line, entry line and possible-answer line."""

    category: str
    document: str
    gold: str
    result_line: str
    entry_line: str
    truth_line: str


def answers(kinds: int) -> list[Scored]:
    """The first `kinds` scripted answers to every single-turn entry."""
    handler = bfcl_official.openai_handler(fc=True)
    prepared = []
    for category in SINGLE_TURN:
        for sample in bfcl_items(category):
            gold = sample.answer or ""
            truth = _truth(gold)
            entry = {"id": sample.id, "function": sample.metadata["functions"]}
            lines = json.dumps(entry), json.dumps({"id": sample.id, "ground_truth": truth})
            for _, answer in itertools.islice(answer_kinds(entry, truth), kinds):
                reply = ChatCompletion.model_validate(completion(answer))
                document = prediction(category, "fc", model_result(reply.choices[0].message, "fc"))
                kept = bfcl_official.kept_answer(handler, reply)
                result = json.dumps({"id": sample.id, "result": kept})
                prepared.append(Scored(category, document, gold, result, *lines))
    return prepared


def _truth(gold: str) -> Any:
    return json.loads(gold)["ground_truth"]


def ours(items: list[Scored]) -> list[bool]:
    return [score_bfcl(item.document, item.gold).correct for item in items]


def theirs(items: list[Scored]) -> list[bool]:
    """BFCL's evaluation from its files' lines, read as its eval_runner reads them."""
    handler = bfcl_official.openai_handler(fc=True)
    return [_official(handler, item) for item in items]


def _official(handler: Any, item: Scored) -> bool:
    result = json.loads(item.result_line)["result"]
    entry, truth = json.loads(item.entry_line), json.loads(item.truth_line)["ground_truth"]
    return bool(bfcl_official.evaluate(handler, result, entry, truth, item.category)["valid"])


def timed(
    paths: dict[str, Callable[[list[Scored]], list[bool]]], items: list[Scored], rounds: int
) -> dict[str, tuple[float, list[bool]]]:
    """Each path's best rate (items/s) over `rounds` rounds taken in turn, and its verdicts:
    on a shared machine, taking turns and the best round keep the load from picking a winner."""
    for score in paths.values():
        score(items[:200])  # warm-up
    best: dict[str, tuple[float, list[bool]]] = {}
    for _ in range(rounds):
        for name, score in paths.items():
            started = time.perf_counter()
            verdicts = score(items)
            rate = len(items) / (time.perf_counter() - started)
            best[name] = max(best.get(name, (0.0, verdicts)), (rate, verdicts), key=lambda r: r[0])
    return best


def entries(items: list[Scored]) -> int:
    return len({json.loads(item.entry_line)["id"] for item in items})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", type=int, default=12, help="answers per entry (at most 12)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each path, in turn")
    add_json_option(parser, "bfcl_scoring")
    args = parser.parse_args()
    about = machine()
    items = answers(args.kinds)
    rates = timed({"ours": ours, "theirs": theirs}, items, args.rounds)
    (our_rate, our_verdicts), (their_rate, their_verdicts) = rates["ours"], rates["theirs"]
    disagreements = sum(a != b for a, b in zip(our_verdicts, their_verdicts, strict=True))
    print(f"{len(items):,} answers to {entries(items):,} entries")
    print(f"{'':24}{'items/s':>10}")
    print(f"{'agent-eval score_bfcl':24}{number(our_rate):>10}")
    print(f"{'BFCL eval_runner':24}{number(their_rate):>10}")
    print(f"ours / BFCL's: {ratio(our_rate, their_rate)}; verdicts that differ: {disagreements}")
    print(describe(about))
    figures = {
        "answers": len(items),
        "entries": entries(items),
        "ours_items_per_s": our_rate,
        "bfcl_items_per_s": their_rate,
        "ratio": our_rate / their_rate,
        "disagreements": disagreements,
    }
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
