"""`agent-eval view RUN --export DIR`: a static copy of one run's pages that opens from file://.

The copy holds the page's scripts joined into one (view.bundle), and each answer of the API the
run's pages ask for (runs list, run page, every page of attempts in file order, every sample,
the plots) as a script of its own under data/, which the page loads as it needs them
(static/offline.js). The answers come from the view's own server, started on a free local port
for the copy: they are what `agent-eval view` would show.
"""

from __future__ import annotations

import asyncio
import html
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

import aiohttp
import orjson
import yarl
from aiohttp import web

from agent_eval.errors import ConfigError
from agent_eval.results.files import SAMPLES
from agent_eval.view.bundle import bundle
from agent_eval.view.server import STATIC, create_app

ROWS_PAGE, SESSIONS_PAGE, BROKEN_PAGE = 50, 50, 20
"""The page sizes the run page asks for (run.js, sessions.js, robustness.js)."""
AT_ONCE = 8
"""Requests to the local server at a time."""
COPIED = ("app.css", "favicon.svg", "offline.js")
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} · agent-eval view (static copy)</title>
<link rel="icon" href="static/favicon.svg">
<link rel="stylesheet" href="static/app.css">
</head>
<body>
<header><a href="#/">agent-eval view</a> · static copy of {title}</header>
<main id="app"></main>
<script src="static/offline.js"></script>
<script src="data/manifest.js"></script>
<script src="static/app.js"></script>
</body>
</html>
"""


@dataclass(frozen=True)
class Exported:
    """What a copy holds: its folder, the answers written, the samples and plots among them."""

    folder: Path
    answers: int
    samples: int
    figures: int


@dataclass
class _Copy:
    """The files of a copy being written, and which request each answers."""

    folder: Path
    files: dict[str, str] = field(default_factory=dict)
    """Request key -> data file (relative to the copy)."""
    assets: dict[str, str] = field(default_factory=dict)
    """Image path -> its file."""

    def answer(self, key: str, body: Any) -> None:
        name = f"data/{len(self.files):06d}.js"
        script = b"agentEvalData(" + orjson.dumps(key) + b", " + orjson.dumps(body) + b");\n"
        (self.folder / name).write_bytes(script)
        self.files[key] = name

    def asset(self, key: str, name: str, body: bytes) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "figure"
        file = f"figures/{len(self.assets):03d}-{safe}"
        (self.folder / file).write_bytes(body)
        self.assets[key] = file


def check_export(run_dir: Path, out: Path) -> None:
    """A ConfigError naming the mistake unless `run_dir` is a run and `out` new or empty."""
    if not (run_dir / SAMPLES).is_file():
        raise ConfigError(
            f"no run at {run_dir} (no {SAMPLES}); give one run's directory to export, "
            "as `agent-eval run` wrote it"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} is not an empty folder; give a new or empty one to export to")


def export_run(run_dir: Path, out: Path) -> Exported:
    """Write the copy of the run at `run_dir` into `out` (new or empty): whole, or not at all."""
    check_export(run_dir, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        exported = _write(run_dir.resolve(), partial)
        if out.exists():
            out.rmdir()
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Exported(out, exported.answers, exported.samples, exported.figures)


def _write(run_dir: Path, folder: Path) -> Exported:
    for sub in ("data", "figures", "static"):
        (folder / sub).mkdir()
    copy = _Copy(folder)
    run_id = run_dir.name  # a run served as a root is named by its folder
    samples, figures = asyncio.run(_fetched(run_dir, copy, run_id))
    for name in COPIED:
        shutil.copyfile(STATIC / name, folder / "static" / name)
    (folder / "static" / "app.js").write_text(bundle(STATIC, "app.js"))
    start = "#/run/" + quote(run_id, safe="")
    manifest = b"agentEvalManifest(%b, %b, %b);\n" % (
        orjson.dumps(copy.files),
        orjson.dumps(copy.assets),
        orjson.dumps(start),
    )
    (folder / "data" / "manifest.js").write_bytes(manifest)
    (folder / "index.html").write_text(PAGE.format(title=html.escape(run_id)))
    return Exported(folder, len(copy.files), samples, figures)


Get = Any  # (path, params) -> the answer's body, as JSON or bytes


async def _fetched(run_dir: Path, copy: _Copy, run_id: str) -> tuple[int, int]:
    """The answers, from the view's server over the run; the samples and plots among them."""
    async with _served(run_dir) as get:
        return await _answers(get, copy, run_id)


async def _answers(get: Get, copy: _Copy, run_id: str) -> tuple[int, int]:
    """Every answer the run's pages ask for, written to the copy; the samples and plots."""
    run = "/api/runs/" + quote(run_id, safe="")
    listed = await get("/api/runs")
    copy.answer("/api/runs", {"runs": [r for r in listed["runs"] if r["id"] == run_id]})
    summary = await _copied(get, copy, f"{run}/summary")
    for part in ("headline", "errors", "workers"):
        await _copied(get, copy, f"{run}/{part}")
    # A copy controls nothing, whether or not the run was playing when it was made.
    copy.answer(key(f"{run}/control", {}), {"enabled": False, "running": False})
    figures = await _copied(get, copy, f"{run}/figures")
    for figure in figures["figures"]:
        path = f"{run}/figures/{quote(figure['name'], safe='')}.svg"
        copy.asset(key(path, {}), f"{figure['name']}.svg", await get(path, raw=True))
    samples: dict[str, None] = {}
    for page in await _pages(get, copy, f"{run}/rows", {"sort": "row"}, ROWS_PAGE):
        samples.update(dict.fromkeys(row["sample_id"] for row in page["rows"]))
    sessions = await _copied(get, copy, f"{run}/sessions", _window(0, SESSIONS_PAGE, "sample_id"))
    if any(row["turn_rewards"] for row in sessions["rows"]):
        await _pages(get, copy, f"{run}/sessions", {"sort": "sample_id"}, SESSIONS_PAGE)
    if summary["perturbations"]:
        await _pages(get, copy, f"{run}/robustness", {}, BROKEN_PAGE, total=_broken)
    limit = asyncio.Semaphore(AT_ONCE)

    async def sample(sample_id: str) -> None:
        async with limit:
            await _copied(get, copy, f"{run}/samples/{quote(sample_id, safe='')}")

    await asyncio.gather(*(sample(sample_id) for sample_id in samples))
    return len(samples), len(figures["figures"])


def _window(offset: int, limit: int, sort: str | None = None) -> dict[str, str]:
    params = {"offset": str(offset), "limit": str(limit)}
    return params | ({"sort": sort} if sort else {})


def _broken(body: Mapping[str, Any]) -> int:
    total: int = body["broken"]["total"]
    return total


async def _pages(
    get: Get,
    copy: _Copy,
    path: str,
    params: dict[str, str],
    size: int,
    total: Any = None,
) -> list[Any]:
    """Every page of a paged answer, in order; `total` reads the count from one (else 'total')."""
    first = await _copied(get, copy, path, {**params, **_window(0, size)})
    count = total(first) if total else first["total"]
    pages = [first]
    for offset in range(size, count, size):
        pages.append(await _copied(get, copy, path, {**params, **_window(offset, size)}))
    return pages


async def _copied(get: Get, copy: _Copy, path: str, params: dict[str, str] | None = None) -> Any:
    """One answer (its path URL-encoded), fetched and written under the key offline.js gives
    its request."""
    body = await get(path, params)
    copy.answer(key(path, params or {}), body)
    return body


def key(path: str, params: Mapping[str, str]) -> str:
    """A request's key as offline.js makes it: the URL-encoded path's parts decoded, parameters
    sorted, empty ones and desc=0 left out."""
    decoded = "/".join(unquote(part) for part in path.split("/"))
    kept = sorted((k, v) for k, v in params.items() if v != "" and (k, v) != ("desc", "0"))
    return f"{decoded}?{urlencode(kept)}" if kept else decoded


@asynccontextmanager
async def _served(run_dir: Path) -> AsyncIterator[Get]:
    """The view's server over the run, on a free local port, and a function that asks it."""
    runner = web.AppRunner(create_app([run_dir]), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        async with aiohttp.ClientSession(f"http://{host}:{port}") as session:

            async def get(
                path: str, params: dict[str, str] | None = None, raw: bool = False
            ) -> Any:
                url = yarl.URL(path, encoded=True)
                async with session.get(url, params=params) as response:
                    body = await response.read()
                    if response.status != 200:
                        error = orjson.loads(body).get("error", response.reason)
                        raise ConfigError(f"cannot export {run_dir}: {path}: {error}")
                    return body if raw else orjson.loads(body)

            yield get
    finally:
        await runner.cleanup()
