"""Check that the engine's memory stays flat with run size: results are streamed, not held.

Two mock workers and the agent-eval proxy run as processes; this process runs the Engine over
N generated samples (one chat completion each) and reads its own RSS every `--every` attempts.
Run from the repository root:
`python -m bench.engine_memory [--attempts N] [--keep] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import ModelCallRecord, Trajectory
from agent_eval.data.records import Sample
from agent_eval.results.files import RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import Engine, Progress
from agent_eval.run.parts import engine_config
from bench.parts.fleet import BenchError, Fleet, Proc, run_with_fleet, start_agent_eval, worker_urls
from bench.parts.results_file import add_json_option, machine, write_results

MODEL = "mock-model"
LIMIT_MB = 200.0


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size in MB, from /proc/<pid>/status (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


def samples(n: int) -> Iterator[Sample]:
    """N samples, made one at a time: the engine never sees a list."""
    for i in range(n):
        yield Sample(id=f"s{i}", question=f"What is {i} plus 1?", answer=f"#### {i + 1}")


class OneCallRunner:
    """One chat completion per attempt; the reply is the final output."""

    async def run(self, sample: Sample, ctx: RunContext) -> Trajectory:
        started = time.monotonic()
        response = await ctx.client.chat.completions.create(
            model=ctx.model,
            messages=[{"role": "user", "content": sample.question or ""}],
            max_tokens=ctx.sampling.max_tokens,
            temperature=ctx.sampling.temperature,
            seed=ctx.seed,
        )
        usage = response.usage
        call = ModelCallRecord(
            latency_s=time.monotonic() - started,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )
        return Trajectory(final_output=response.choices[0].message.content, model_calls=[call])


class Meter:
    """Reads RSS at the warm-up mark and every `every` attempts; prints one row each time."""

    def __init__(self, total: int, warmup: int, every: int, proxy: Proc) -> None:
        self.total, self.warmup, self.every, self.proxy = total, warmup, every, proxy
        self.base: float | None = None
        self.last: float | None = None
        self.peak_growth = 0.0
        self.readings: list[dict[str, float]] = []
        self._mark = (0, time.monotonic())

    def header(self) -> None:
        print(f"{'attempts':>9} {'RSS MB':>8} {'growth MB':>10} {'attempts/s':>11} {'proxy MB':>9}")

    def __call__(self, progress: Progress) -> None:
        done = progress.done
        if done != self.warmup and done % self.every and done != self.total:
            return  # cheap: nothing is read between marks
        rss, now = rss_mb(), time.monotonic()
        rate = (done - self._mark[0]) / max(now - self._mark[1], 1e-9)
        self._mark = (done, now)
        if done < self.warmup or (done == self.warmup and self.base is not None):
            return
        if self.base is None:
            self.base = rss
        growth = rss - self.base
        self.last, self.peak_growth = rss, max(self.peak_growth, growth)
        proxy = rss_mb(self.proxy.pid)
        print(f"{done:>9,} {rss:>8.1f} {growth:>+10.1f} {rate:>11.0f} {proxy:>9.1f}", flush=True)
        self.readings.append(
            {"attempts": done, "rss_mb": rss, "growth_mb": growth, "rate": rate, "proxy_mb": proxy}
        )


def start_fleet(fleet: Fleet) -> tuple[str, Proc]:
    """Two mock workers and the proxy in front of them; the proxy's /v1 base URL."""
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--port", "0"]
    workers = [fleet.start(n, [*argv, "--name", n, "--model", MODEL]) for n in ("w0", "w1")]
    proxy, proxy_url = start_agent_eval(fleet, worker_urls(workers), "least_requests")
    return proxy_url + "/v1", proxy


async def run_engine(
    args: argparse.Namespace, base_url: str, proxy: Proc, run_dir: Path
) -> dict[str, Any]:
    """The run with RSS read along the way; its figures."""
    n = args.attempts
    every = min(args.every, max(n // 5, 1))
    meter = Meter(n, min(args.warmup, every), every, proxy)
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    settings = {"eval": {"concurrency": args.concurrency}, "sampling": {"max_tokens": 16}}
    config = engine_config(RunConfig.model_validate(settings), MODEL)
    directory = RunDirectory(run_dir)
    print(f"engine: {n:,} attempts, concurrency {args.concurrency}, run dir {run_dir}")
    meter.header()
    try:
        async with RewardScorer(max_workers=2) as scorer:
            engine = Engine(OneCallRunner(), scorer, client, config, on_progress=meter)
            started = time.monotonic()
            summary = await engine.run(samples(n), directory, total=n)
            elapsed = time.monotonic() - started
    finally:
        await client.close()
    after_summary = rss_mb()
    base, last = meter.base or after_summary, meter.last or after_summary
    size = directory.samples.stat().st_size
    print(f"\n{n:,} attempts in {elapsed:.1f} s ({n / elapsed:,.0f} attempts/s)")
    errors = dict(engine.progress.run.errors) or "none"
    print(f"accuracy {summary.accuracy.value:.4f} (the mock echoes the question), errors {errors}")
    print(f"samples.jsonl: {size / 2**20:.1f} MB ({size / n:.0f} bytes per attempt)")
    print(
        f"RSS after the summary pass: {after_summary:.1f} MB "
        f"({after_summary - last:+.1f} MB over the last mark, {after_summary - base:+.1f} total)"
    )
    growth = last - base
    verdict = "OK" if growth < LIMIT_MB else "OVER"
    print(f"RSS growth over {n:,} attempts: {growth:.1f} MB (limit {LIMIT_MB:.0f} MB): {verdict}")
    return {
        "attempts": n,
        "seconds": elapsed,
        "attempts_per_s": n / elapsed,
        "accuracy": summary.accuracy.value,
        "errors": dict(engine.progress.run.errors),
        "samples_mb": size / 2**20,
        "readings": meter.readings,
        "rss_growth_mb": growth,
        "rss_after_summary_mb": after_summary,
        "limit_mb": LIMIT_MB,
    }


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=1000, help="attempts before the baseline")
    parser.add_argument("--every", type=int, default=10_000, help="attempts between readings")
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    add_json_option(parser, "engine_memory")
    return parser.parse_args()


def main() -> None:
    args = _parse_args()
    about = machine()

    def measure(fleet: Fleet, work: Path) -> None:
        print("starting 2 mock workers and the agent-eval proxy ...")
        base_url, proxy = start_fleet(fleet)
        figures = asyncio.run(run_engine(args, base_url, proxy, work / "run"))
        write_results(args, figures, about)

    run_with_fleet("engine-memory", args.keep, measure)


if __name__ == "__main__":
    main()
