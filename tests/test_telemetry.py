"""Per-model-call telemetry in the trajectory (worker, first token, retries, cached tokens), and
the run's cache hit rate and time-to-first-token percentiles built from it."""

from __future__ import annotations

import json
import math
from contextlib import AsyncExitStack
from typing import Any

import pytest
from agents import RunConfig, Runner
from openai import AsyncOpenAI
from rich.console import Console

from agent_eval.agents.base import RunContext
from agent_eval.agents.recording import AttemptRecorder
from agent_eval.agents.sdk import play, sdk_agent
from agent_eval.agents.trajectory import ModelCallRecord, Trajectory
from agent_eval.metrics import AttemptScore, Summary, summarize
from agent_eval.report.table import summary_table
from agent_eval.results.record import AttemptRecord
from tests.helpers.caching_worker import MODEL, CachingWorker
from tests.helpers.proxy import MakeClient, StartProxy
from tests.helpers.records import OLD_LINE, session_record
from tests.helpers.records import attempt as scored


def attempt(sample_id: str, model_calls: int, **telemetry: Any) -> AttemptScore:
    return scored(sample_id, 0, True, "4", model_calls=model_calls, **telemetry)


def table_lines(summary: Summary) -> list[str]:
    console = Console(record=True, width=100)
    console.print(summary_table(summary))
    return [" ".join(line.split()) for line in console.export_text().splitlines()]


def context(client: AsyncOpenAI) -> RunContext:
    return RunContext(client, MODEL, "s-0", 1)


async def one_call(ctx: RunContext, stream: bool = False) -> ModelCallRecord:
    """Play a tool-less agent once, plain or streamed; its one model call's record."""
    agent = sdk_agent("solver", "Answer briefly.", [], ctx, "chat_completions")
    trajectory = Trajectory()
    if stream:
        recorder = AttemptRecorder(trajectory)
        with recorder.listening():
            config = RunConfig(tracing_disabled=True)
            result = Runner.run_streamed(agent, "2 + 2?", hooks=recorder, run_config=config)
            assert [event async for event in result.stream_events()]
    else:
        assert await play(agent, "2 + 2?", 3, trajectory) is not None
    (call,) = trajectory.model_calls
    return call


async def test_a_streamed_call_keeps_its_worker_first_token_and_cached_tokens(
    stack: AsyncExitStack, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    worker = await stack.enter_async_context(CachingWorker(prompt_tokens=50, cached_tokens=30))
    call = await one_call(context(make_client(await start_proxy([worker.url]))), stream=True)
    assert (call.worker, call.retries, call.cached_tokens, call.prompt_tokens) == (
        worker.url,
        0,
        30,
        50,
    )
    assert call.ttft_s is not None and 0 < call.ttft_s <= call.latency_s


async def test_a_plain_call_has_no_first_token_time_and_says_when_the_cache_went_unreported(
    stack: AsyncExitStack, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    worker = await stack.enter_async_context(CachingWorker(cached_tokens=None))
    call = await one_call(context(make_client(await start_proxy([worker.url]))))
    assert (call.worker, call.ttft_s, call.cached_tokens, call.prompt_tokens) == (
        worker.url,
        None,
        None,
        100,
    )


async def test_retries_count_the_proxys_and_the_clients_own(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    # Both workers fail once: the proxy tries one, then the other, then the first again.
    first, second = [await stack.enter_async_context(CachingWorker(fail_next=1)) for _ in "ab"]
    base_url = await start_proxy([first.url, second.url], policy="round_robin")
    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=1)
    stack.push_async_callback(client.close)
    call = await one_call(context(client))
    assert call.retries == 2 and call.cached_tokens == 60
    assert call.worker == (first.url if first.served else second.url)
    # One worker failing twice: the proxy gives up (no other worker), the client sends again.
    (alone,) = [await stack.enter_async_context(CachingWorker(fail_next=1))]
    retry = {"max_retries": 0, "backoff_base": 0.001, "backoff_max": 0.01}
    client = client.with_options(base_url=await start_proxy([alone.url], retry=retry))
    assert (await one_call(context(client))).retries == 1


def test_the_fields_land_in_samples_jsonl_and_count_in_the_score() -> None:
    record = session_record()
    calls = record.trajectory["model_calls"]
    calls[0] |= {"prompt_tokens": 100, "cached_tokens": 75, "ttft_s": 0.25, "retries": 1}
    calls[1] |= {"prompt_tokens": 40}  # no cached tokens reported: out of the hit rate
    line = json.loads(record.to_line())
    assert set(line["trajectory"]["model_calls"][1]) >= {"ttft_s", "retries", "cached_tokens"}
    score = AttemptRecord.from_line(record.to_line(), "here").score()
    assert (score.cached_tokens, score.cache_prompt_tokens, score.ttft_s) == (75, 100, (0.25,))


def test_an_old_line_without_the_fields_still_reads() -> None:
    old = json.loads(OLD_LINE)
    old["trajectory"]["model_calls"] = [{"latency_s": 0.3, "prompt_tokens": 9, "worker": None}]
    score = AttemptRecord.from_line(json.dumps(old).encode(), "here").score()
    assert (score.cached_tokens, score.cache_prompt_tokens, score.ttft_s) == (0, 0, ())
    assert math.isnan(summarize([score], wall_time_s=1.0).cache_hit_rate)


def test_the_summary_has_the_hit_rate_and_first_token_percentiles() -> None:
    scores = [
        attempt("a", 2, cached_tokens=60, cache_prompt_tokens=100, ttft_s=(0.1, 0.2)),
        attempt("b", 3, cached_tokens=90, cache_prompt_tokens=100, ttft_s=(0.5, 0.3, 0.4)),
        attempt("c", 1),  # its worker did not report: left out
    ]  # fmt: skip
    summary = summarize(scores, wall_time_s=1.0)
    efficiency = summary.to_dict()["efficiency"]
    assert efficiency["cache_hit_rate"] == 0.75
    # 0.1 .. 0.5: the median 0.3; p90 at rank 3.6, 0.4 + 0.6 * 0.1; p99 at rank 3.96
    ttft = efficiency["ttft_s"]
    assert (ttft["n"], ttft["p50"]) == (5, 0.3)
    assert (ttft["p90"], ttft["p99"]) == (pytest.approx(0.46), pytest.approx(0.496))
    assert summary.to_dict()["higher_is_better"]["efficiency"]["cache_hit_rate"] is True
    lines = table_lines(summary)
    assert "prefix cache hit rate 75.0%" in lines
    assert "time to first token p50 / p90 / p99 (s) 0.300 / 0.460 / 0.496" in lines
    again = Summary.read(summary.to_dict())  # as `agent-eval view` reads summary.json back
    assert again is not None and (again.cache_hit_rate, again.ttft_s) == (0.75, summary.ttft_s)


def test_a_run_whose_workers_reported_no_cache_says_so_and_never_zero() -> None:
    summary = summarize([attempt("a", 2)], wall_time_s=1.0)
    assert summary.to_dict()["efficiency"]["cache_hit_rate"] is None
    assert summary.to_dict()["efficiency"]["ttft_s"]["n"] == 0
    lines = table_lines(summary)
    assert "prefix cache hit rate not reported" in lines
    assert not [line for line in lines if "first token" in line]
    # summary.json written before these metrics reads back, as not reported
    data = summary.to_dict()
    for name in ("cache_hit_rate", "ttft_s"):
        del data["efficiency"][name]
    older = Summary.read(data)
    assert older is not None and math.isnan(older.cache_hit_rate) and older.ttft_s.n == 0


def test_a_summary_written_when_tokens_per_s_summed_both_reads_them_apart() -> None:
    summary = summarize([attempt("a", 2)], wall_time_s=2.0)
    data = json.loads(json.dumps(summary.to_dict()))
    rates = data["efficiency"]["throughput"]
    both = rates["completion_tokens_per_s"] + rates.pop("prompt_tokens_per_s")
    rates["tokens_per_s"] = both
    older = Summary.read(data)
    assert older is not None and older.throughput == summary.throughput
