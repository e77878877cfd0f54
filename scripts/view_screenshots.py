"""Screenshots of `agent-eval view`'s pages, taken by headless Chromium, for README.

Serves the runs under ROOT as `agent-eval view ROOT` does, opens each page (runs; a run, all
attempts then the wrong ones; a sample; two runs compared; a multi-turn run's heatmap and one
session; a model call's tokens, of a run with tokens recorded; a watch directory) and saves
each as a PNG.
Needs playwright and a system Chromium (Debian: apt-get install chromium; AGENT_EVAL_CHROMIUM
names another). Run: `python scripts/view_screenshots.py ROOT [--out docs/screenshots]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
from pathlib import Path
from urllib.parse import quote

from aiohttp import web
from playwright.async_api import Page, async_playwright

from agent_eval.view.server import create_app

SIZE = {"width": 1280, "height": 860}


async def shoot(page: Page, url: str, ready: str, path: Path, full: bool = False) -> None:
    """Open `url`, wait for `ready` to show, and save the page as `path`."""
    await page.goto(url)
    await page.wait_for_selector(ready)
    await page.wait_for_load_state("networkidle")  # the plots are images loaded after
    await page.screenshot(path=str(path), full_page=full)
    print(f"wrote {path}")


def route(kind: str, *ids: str) -> str:
    """A hash route of the app: `#/run/ID`, `#/compare/A/B`, ..."""
    return f"#/{kind}/" + "/".join(quote(run_id, safe="") for run_id in ids)


async def tour(page: Page, base: str, out: Path) -> None:
    """Every page: runs, a run (all, then wrong answers), a sample, a comparison of the first
    two runs of one agent, a multi-turn run's heatmap and session, and a watch directory."""
    runs = (await (await page.request.get(base + "api/runs")).json())["runs"]
    plain = [r["id"] for r in runs if r["kind"] == "run" and r["agent"] == "math_calculator"]
    chats = [r["id"] for r in runs if r["agent"] == "multi_turn_chat"]
    watches = [r["id"] for r in runs if r["kind"] == "watch"]
    await shoot(page, base, "#runs-table tr[data-run]", out / "runs.png")
    await shoot(page, base + route("run", plain[0]), "#figures img", out / "run.png")
    await page.select_option("#filter-outcome", "wrong")
    await page.wait_for_selector("#rows-table tr.wrong")
    await page.locator("#samples").scroll_into_view_if_needed()
    await page.screenshot(path=str(out / "run-wrong.png"))
    print(f"wrote {out / 'run-wrong.png'}")
    await page.click("#rows-table tr[data-index] a")
    await page.wait_for_selector("#attempts .tool-call")
    await page.screenshot(path=str(out / "sample.png"), full_page=True)
    print(f"wrote {out / 'sample.png'}")
    if len(plain) > 1:
        compare = base + route("compare", plain[0], plain[1])
        await shoot(page, compare, "#compare-metrics", out / "compare.png", full=True)
    if chats:
        await shoot(page, base + route("run", chats[0]), "#session-heatmap a", out / "sessions.png")
        await page.click("#session-heatmap td.challenge a")
        await page.wait_for_selector(".turn.focused")
        await page.screenshot(path=str(out / "session.png"))
        print(f"wrote {out / 'session.png'}")
    tokened = [r["id"] for r in runs if r["kind"] == "run" and await _has_tokens(page, base, r)]
    if tokened:
        await tokens(page, base, tokened[0], out / "tokens.png")
    if watches:
        await shoot(page, base + route("watch", watches[0]), "#curve a.point", out / "watch.png")


async def _has_tokens(page: Page, base: str, run: dict[str, str]) -> bool:
    summary = await (await page.request.get(base + f"api/runs/{run['id']}/summary")).json()
    continuity = (summary.get("summary") or {}).get("continuity") or {}
    return bool((continuity.get("drift_rate") or {}).get("n"))


async def tokens(page: Page, base: str, run_id: str, path: Path) -> None:
    """The first sample of `run_id`, its last model call's tokens unfolded, as `path`."""
    rows = (await (await page.request.get(base + f"api/runs/{run_id}/rows")).json())["rows"]
    await page.goto(base + route("run", run_id) + "/sample/" + quote(rows[0]["sample_id"]))
    await page.locator("#attempt-0 td.continuity summary").last.click()
    await page.wait_for_selector(".call-tokens .token.completion")
    shown = page.locator("#attempt-0 .call-tokens[open]").last
    await shown.scroll_into_view_if_needed()
    await shown.screenshot(path=str(path))
    print(f"wrote {path}")


async def main(root: Path, out: Path) -> None:
    runner = web.AppRunner(create_app([root]), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    chromium = shutil.which(os.environ.get("AGENT_EVAL_CHROMIUM") or "chromium")
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, headless=True)
            page = await browser.new_page(viewport=SIZE)
            await tour(page, f"http://{host}:{port}/", out)
            await browser.close()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="A folder of run directories.")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(args.root, args.out))
