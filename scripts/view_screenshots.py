"""Screenshots of `agent-eval view`'s pages, taken by headless Chromium, for README.

Serves the runs under ROOT as `agent-eval view ROOT` does, opens the runs page, the first run's
page (all attempts, then only the wrong ones) and one of its samples, and saves each as a PNG.
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


async def shoot(page: Page, url: str, ready: str, path: Path) -> None:
    """Open `url`, wait for `ready` to show, and save the page as `path`."""
    await page.goto(url)
    await page.wait_for_selector(ready)
    await page.screenshot(path=str(path), full_page=False)
    print(f"wrote {path}")


async def tour(page: Page, base: str, out: Path) -> None:
    """The runs page, a run's page (all, then wrong answers) and one sample."""
    await shoot(page, base, "#runs-table tr[data-run]", out / "runs.png")
    run_id = await page.get_attribute("#runs-table tr[data-run]", "data-run")
    run = f"{base}#/run/{quote(run_id or '', safe='')}"
    await shoot(page, run, "#rows-table tr[data-index]", out / "run.png")
    await page.select_option("#filter-outcome", "wrong")
    await page.wait_for_selector("#rows-table tr.wrong")
    await page.screenshot(path=str(out / "run-wrong.png"))
    print(f"wrote {out / 'run-wrong.png'}")
    await page.click("#rows-table tr[data-index] a")
    await page.wait_for_selector("#attempts .tool-call")
    await page.screenshot(path=str(out / "sample.png"), full_page=True)
    print(f"wrote {out / 'sample.png'}")


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
