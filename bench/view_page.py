"""How soon `agent-eval view` shows a run's first attempt rows, and its whole page, in Chromium:
a 10-attempt run against a 100,000-attempt one, each on a view just started.

Writes each run (bench.view_index's generator; summary.json and config.yaml as a finished run
has them unless `--unfinished`) under a root of its own, starts the real server over it as a
user does (`python -m agent_eval view ROOT --port 0`), opens the run's page in a fresh headless
Chromium context and times, from the navigation: the first attempt rows shown, and the page
complete (headline, errors, workers, every plot's image loaded, rows). Prints both runs side
by side with the difference and the ratio; the issue's bound is first rows at most 1.5 s later.
Needs playwright and a system Chromium (AGENT_EVAL_CHROMIUM names another).
Run from the repository root:
`python -m bench.view_page [--attempts 100000] [--repeat 3] [--unfinished] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from playwright.async_api import Browser, async_playwright

from agent_eval.metrics import summarize
from agent_eval.report.runs import load_run
from agent_eval.run.config import load_run_config, save_run_config
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.view import server
from bench.view_index import write_run

SMALL = 10
LATER_S = 1.5
"""The issue's bound: the big run's first rows at most this much later than the small run's."""
ROWS = "#rows-table tr[data-index]"
# Every part drawn: the headline, errors and workers tables, the plots' images loaded (or the
# note saying why there are none) and the rows.
COMPLETE = """() => {
  const done = (id) => document.querySelector(`#${id} table, #${id} .note, #${id} .empty`);
  const images = [...document.querySelectorAll("#figures img")];
  const plots = document.querySelector("#figures .note")
    || (images.length > 0 && images.every((img) => img.complete && img.naturalWidth > 0));
  return document.querySelector("#headline .dimensions, #headline .note")
    && done("errors-section") && done("workers-section") && plots
    && document.querySelector("#rows-table tr[data-index]");
}"""


def make_run(root: Path, attempts: int, finished: bool) -> str:
    """A run of `attempts` attempts under `root`, finished unless told; its id."""
    run_dir = root / "run"
    run_dir.mkdir(parents=True)
    flags = {"agent.name": "math_calculator", "model.name": "qwen-bench"}
    save_run_config(load_run_config(None, flags, [f"output.dir={run_dir}"]), run_dir)
    write_run(run_dir, attempts)
    if finished:
        summary = summarize(load_run(run_dir).scores, 3600.0).to_dict()
        (run_dir / "summary.json").write_bytes(orjson.dumps(summary))
    return f"{root.name}/run"


async def open_once(browser: Browser, root: Path, run_id: str) -> tuple[float, float]:
    """Seconds from navigation to the first rows, and to the page complete, on a new view."""
    with server(root) as (_process, base):
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = await context.new_page()
            start = time.perf_counter()
            await page.goto(f"{base}/#/run/{quote(run_id, safe='')}", wait_until="commit")
            await page.wait_for_selector(ROWS, timeout=300_000)
            rows = time.perf_counter() - start
            await page.wait_for_function(COMPLETE, timeout=300_000, polling=20)
            return rows, time.perf_counter() - start
        finally:
            await context.close()


async def measure(runs: dict[int, tuple[Path, str]], repeat: int) -> dict[int, list[Any]]:
    """Each run's (rows, complete) seconds per repetition, small and big taken in turn."""
    chromium = os.environ.get("AGENT_EVAL_CHROMIUM") or shutil.which("chromium")
    timings: dict[int, list[Any]] = {count: [] for count in runs}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--disable-dev-shm-usage"]
        )
        try:
            for _ in range(repeat):
                for count, (root, run_id) in runs.items():
                    timings[count].append(await open_once(browser, root, run_id))
        finally:
            await browser.close()
    return timings


def report(timings: dict[int, list[Any]]) -> dict[str, Any]:
    """Medians side by side: small, big, big - small and big / small; returns them."""
    small, big = (timings[count] for count in sorted(timings))
    figures: dict[str, Any] = {}
    print(f"{'median s':<16} {SMALL:>9,} {max(timings):>11,} {'difference':>11} {'ratio':>7}")
    for n, name in enumerate(("first rows", "page complete")):
        a, b = (statistics.median(t[n] for t in runs) for runs in (small, big))
        print(f"{name:<16} {a:>9.2f} {b:>11.2f} {b - a:>+11.2f} {b / a:>7.2f}")
        figures[name] = {"small_s": a, "big_s": b, "difference_s": b - a, "ratio": b / a}
    later = figures["first rows"]["difference_s"]
    verdict = "within" if later <= LATER_S else "over"
    print(f"first rows {later:+.2f} s later for the big run: {verdict} the {LATER_S} s bound")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="openings of each run")
    parser.add_argument("--unfinished", action="store_true", help="no summary.json")
    add_json_option(parser, "view_page")
    args = parser.parse_args()
    about = machine()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for count in (SMALL, args.attempts):
            root = Path(tmp) / f"runs-{count}"
            runs[count] = (root, make_run(root, count, not args.unfinished))
        size = (runs[args.attempts][0] / "run" / "samples.jsonl").stat().st_size
        state = "unfinished" if args.unfinished else "finished"
        print(f"{describe(about)}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
        print(f"runs: {SMALL} and {args.attempts:,} attempts ({size / 1e6:.1f} MB), {state}")
        timings = asyncio.run(measure(runs, args.repeat))
    figures = report(timings)
    raw = {str(count): [list(t) for t in runs] for count, runs in timings.items()}
    write_results(args, {"medians": figures, "openings_s": raw, "samples_mb": size / 1e6}, about)


if __name__ == "__main__":
    main()
