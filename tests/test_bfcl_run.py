"""`agent-eval run --agent bfcl` as users type it, over a mock worker scripted to answer BFCL's
first simple entries right and wrong in turn: the summary's accuracy is the known share."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.edits import EDITS
from agent_eval.data import Sample
from agent_eval.perturb.expand import perturbed
from agent_eval.testing.bfcl_answers import answer_kinds, python_text
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.proxy import StartWorkers

ENTRIES = 6  # right on even entries, a wrong value on odd ones


def scripted(index: int, gold: str) -> Reply:
    truth = json.loads(gold)
    kind = "right" if index % 2 == 0 else "wrong_value"
    entry = {"id": "simple_python_0", "function": truth["functions"]}
    calls = dict(answer_kinds(entry, truth["ground_truth"]))[kind]
    assert isinstance(calls, list)
    return Reply(tool_calls=[ToolCall(name, arguments) for name, arguments in calls])


async def test_a_run_on_bfcl_simple_scores_the_known_share(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    samples = [s for s, _ in zip(bfcl_items("simple"), range(ENTRIES), strict=False)]
    worker.script(*(scripted(i, s.answer or "") for i, s in enumerate(samples)))
    run_dir = tmp_path / "run"
    process = await agent_eval(
        "run", "--agent", "bfcl", "--dataset", "bfcl:simple", "--endpoint", worker.url,
        "-j", "1", "-o", str(run_dir), f"dataset.limit={ENTRIES}", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    worker.assert_script_used_up()
    assert summary(run_dir)["quality"]["accuracy"]["value"] == 0.5
    records = {r["sample_id"]: r for r in lines(run_dir)}
    assert [records[s.id]["correct"] for s in samples] == [True, False] * (ENTRIES // 2)
    # What BFCL's checker found is in each record: the category, and why a wrong one was wrong.
    found = [records[s.id]["benchmark"] for s in samples]
    assert {f["category"] for f in found} == {"simple_python"}
    assert [f["error_type"] is None for f in found] == [True, False] * (ENTRIES // 2)
    assert all(f["error_type"].startswith("value_error:") for f in found[1::2]), found
    first = records[samples[0].id]
    assert first["tool_calls"] == 1 and first["prompt_tokens"] > 0
    assert first["trajectory"]["model_calls"][0]["worker"] is not None
    sent = worker.requests_to("/v1/chat/completions")
    assert len(sent) == ENTRIES
    # The functions reach the model as OpenAI tools, with BFCL's Python hint in their description.
    tool = sent[0]["tools"][0]["function"]
    assert tool["name"] == samples[0].metadata["functions"][0]["name"].replace(".", "_")
    assert tool["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert tool["parameters"]["type"] == "object"


async def test_prompt_mode_puts_the_functions_in_the_system_prompt_and_reads_calls_in_text(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    samples = [s for s, _ in zip(bfcl_items("simple"), range(2), strict=False)]
    right = scripted(0, samples[0].answer or "").tool_calls
    worker.script(Reply(python_text([(c.name, c.arguments) for c in right])), Reply("No idea."))
    run_dir = tmp_path / "run"
    process = await agent_eval(
        "run", "--agent", "bfcl", "--dataset", "bfcl:simple", "--endpoint", worker.url,
        "-j", "1", "-o", str(run_dir), "dataset.limit=2", "agent.options.mode=prompt",
        cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    records = {r["sample_id"]: r for r in lines(run_dir)}
    assert [records[s.id]["correct"] for s in samples] == [True, False]
    sent = worker.requests_to("/v1/chat/completions")[0]
    assert "tools" not in sent
    system = sent["messages"][0]
    assert (
        system["role"] == "system"
        and samples[0].metadata["functions"][0]["name"] in system["content"]
    )


async def test_a_perturbed_run_plays_each_numbers_variant_and_scores_it_by_its_new_values(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    """The variant's question reaches the model; an answer with the original's values is
    wrong on it, one with the variant's values right; summary.json's robustness says so."""
    (worker,) = await start_workers(1)
    first = list(islice(bfcl_items("simple"), 2))
    played = [s for s in perturbed(first, ["numbers"], 0, EDITS) if isinstance(s, Sample)]
    assert [s.id for s in played] == [
        "simple_python_0", "simple_python_0~numbers", "simple_python_1", "simple_python_1~numbers",
    ]  # fmt: skip
    answered_with = [played[0], played[0], played[2], played[3]]  # the first variant: old values
    worker.script(*(scripted(0, sample.answer or "") for sample in answered_with))
    run_dir = tmp_path / "run"
    process = await agent_eval(
        "run", "--agent", "bfcl", "--dataset", "bfcl:simple", "--endpoint", worker.url,
        "-j", "1", "-o", str(run_dir), "--perturb", "numbers", "dataset.limit=2", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    worker.assert_script_used_up()
    sent = worker.requests_to("/v1/chat/completions")
    assert [request["messages"][-1]["content"] for request in sent] == [
        sample.question for sample in played
    ]
    records = {r["sample_id"]: r for r in lines(run_dir)}
    assert [records[s.id]["correct"] for s in played] == [True, False, True, True]
    result = summary(run_dir)
    assert result["quality"]["accuracy"]["value"] == 1.0  # the originals only
    numbers = result["robustness"]["by_kind"]["numbers"]
    assert numbers["accuracy"]["value"] == 0.5
    assert [numbers[name] for name in ("variants", "skipped", "pairs", "broke", "fixed")] == [
        2, 0, 2, 1, 0,
    ]  # fmt: skip
    assert result["robustness"]["robust_accuracy"]["value"] == 0.5
