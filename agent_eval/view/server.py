"""The web app of `agent-eval view`: a read-only JSON API over runs, and the page that uses it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from agent_eval.errors import ConfigError
from agent_eval.report.html import NO_WORKERS
from agent_eval.report.runs import read_workers
from agent_eval.results.files import WORKERS
from agent_eval.system.lifecycle import forever
from agent_eval.view.catalog import Catalog
from agent_eval.view.compare import Comparisons
from agent_eval.view.control import READ_ONLY, ViewControl, control_action, control_state
from agent_eval.view.figures import Plots, standalone
from agent_eval.view.headline import run_headline
from agent_eval.view.hosts import AllowedHosts
from agent_eval.view.index import RunIndex
from agent_eval.view.listing import (
    attempts_by_worker,
    error_rows,
    errors_by_kind,
    run_row,
    worker_rows,
)
from agent_eval.view.params import parse_query, parse_window
from agent_eval.view.refused import Refused
from agent_eval.view.robustness import robustness_body, sample_links
from agent_eval.view.runs import RunDir, written_summary
from agent_eval.view.samples import sample_body
from agent_eval.view.sessions import sessions_page
from agent_eval.view.tokens import call_tokens
from agent_eval.view.vocab import call_texts
from agent_eval.view.watch import watch_body

STATIC = Path(__file__).parent / "static"
CATALOG = web.AppKey("catalog", Catalog)
COMPARISONS = web.AppKey("comparisons", Comparisons)
HOSTS = web.AppKey("hosts", AllowedHosts)
PLOTS = web.AppKey("plots", Plots)
CONTROL = web.AppKey("control", ViewControl)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
BROKEN_SHOWN = 20
"""Broken pairs a robustness answer lists unless asked for another number."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve_view(
    roots: list[Path],
    host: str,
    port: int,
    on_ready: Callable[[str], None],
    control: ViewControl = READ_ONLY,
) -> None:
    """Serve the runs under `roots` until cancelled; `on_ready` gets the URL (port 0: any free),
    with the control token when `control` is on."""
    runner = web.AppRunner(create_app(roots, host, control), access_log=None)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port"
            ) from None
        bound_host, bound_port = runner.addresses[0][:2]
        on_ready(control.page_url(f"http://{_url_host(bound_host)}:{bound_port}/"))
        await forever()
    finally:
        await runner.cleanup()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def create_app(
    roots: list[Path], host: str = "127.0.0.1", control: ViewControl = READ_ONLY
) -> web.Application:
    """The app serving the runs under `roots`; it only reads (GET), but for the control POST
    that `control`, when on, lets the page send a running run.

    Only requests addressed to a name of `host`, the address it listens on, are answered."""
    app = web.Application(middlewares=[_secured, _for_this_server])
    app[CONTROL] = control
    app[HOSTS] = AllowedHosts.bound_to(host)
    app[CATALOG] = Catalog(roots)
    app[COMPARISONS] = Comparisons(app[CATALOG])
    app[PLOTS] = Plots(app[CATALOG])
    app.router.add_get("/", _page)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/runs", _runs)
    app.router.add_get("/api/runs/{id:.+}/summary", _summary)
    app.router.add_get("/api/runs/{id:.+}/rows", _rows)
    app.router.add_get("/api/runs/{id:.+}/samples/{sample_id}", _sample)
    app.router.add_get("/api/runs/{id:.+}/records/{i}", _record)
    app.router.add_get("/api/runs/{id:.+}/records/{i}/calls/{k}/tokens", _call_tokens)
    app.router.add_get("/api/runs/{id:.+}/sessions", _sessions)
    app.router.add_get("/api/runs/{id:.+}/watch", _watch)
    app.router.add_get("/api/compare", _compare)
    app.router.add_get("/api/runs/{id:.+}/headline", _headline)
    app.router.add_get("/api/runs/{id:.+}/errors", _errors)
    app.router.add_get("/api/runs/{id:.+}/workers", _workers)
    app.router.add_get("/api/runs/{id:.+}/robustness", _robustness)
    app.router.add_get("/api/runs/{id:.+}/figures", _figures)
    app.router.add_get("/api/runs/{id:.+}/figures/{name}.svg", _figure)
    app.router.add_get("/api/runs/{id:.+}/control", _control_state)
    app.router.add_post("/api/runs/{id:.+}/control", _control_action)
    return app


@web.middleware
async def _secured(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every response, errors included, forbids other origins' scripts and type sniffing."""
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = _json({"error": exc.reason}, exc.status) if exc.status >= 400 else exc
    except Refused as exc:
        parameter = {"parameter": exc.parameter} if exc.parameter else {}
        response = _json({"error": str(exc), **parameter}, exc.status)
    except ConfigError as exc:  # the run's files say something unreadable: a corrupt line
        response = _json({"error": str(exc)}, 409)
    response.headers.update(SECURITY_HEADERS)
    return response


@web.middleware
async def _for_this_server(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A request for another name is refused before any route sees it (see view.hosts)."""
    hosts, header = request.app[HOSTS], request.headers.get("Host")
    if not hosts.allows(header):
        raise Refused(403, hosts.refusal(header))
    return await handler(request)


def _json(data: Any, status: int = 200) -> web.Response:
    # orjson writes NaN as null: a reward or interval the run could not compute.
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _not_found(what: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(reason=f"no {what}")


async def _page(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


async def _static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    # Only the files shipped beside this module: a name is never joined into a path unchecked.
    if name not in {path.name for path in STATIC.iterdir() if path.is_file()}:
        raise _not_found(f"static file {name!r}")
    return web.FileResponse(STATIC / name)


async def _runs(request: web.Request) -> web.Response:
    catalog = request.app[CATALOG]
    return _json({"runs": [await _row(catalog, run) for run in await catalog.runs()]})


async def _row(catalog: Catalog, run: RunDir) -> dict[str, Any]:
    """A run's row; only an unfinished run's counts need its index."""
    summary = written_summary(run)
    index = None if summary or run.kind == "watch" else await catalog.index(run)
    return run_row(run, summary, index)


async def _found(request: web.Request) -> tuple[RunDir, RunIndex]:
    """The run the URL names and its refreshed index; a 404 for any id not found under a root."""
    catalog = request.app[CATALOG]
    run = await catalog.run(request.match_info["id"])
    if run is None:
        raise _not_found(f"run {request.match_info['id']!r} under the roots served")
    return run, await catalog.index(run)


async def _summary(request: web.Request) -> web.Response:
    run, index = await _found(request)
    summary = written_summary(run)
    return _json(
        {
            "run": run_row(run, summary, index),
            "summary": summary,
            "errors": errors_by_kind(index),
            "workers": attempts_by_worker(index),
            "perturbations": index.perturbations,
        }
    )


async def _rows(request: web.Request) -> web.Response:
    _run, index = await _found(request)
    query = parse_query(request.query, index.perturbations)
    page = index.rows(query.where, query.sort, query.descending, query.offset, query.limit)
    return _json({"total": page.total, "rows": [row.to_dict() for row in page.rows]})


async def _sample(request: web.Request) -> web.Response:
    run, index = await _found(request)
    sample_id = request.match_info["sample_id"]
    found = index.attempts_of(sample_id)
    if not found:
        raise _not_found(f"sample {sample_id!r} in this run")
    records = await asyncio.to_thread(lambda: [index.record(i) for i in found])
    body = await asyncio.to_thread(sample_body, run.path, sample_id, records)
    # Each attempt's record index: the page asks for a model call's tokens by it.
    return _json({**body, **sample_links(index, sample_id), "records": found})


async def _robustness(request: web.Request) -> web.Response:
    """Accuracy on the originals and per perturbation, and a page of the samples that break."""
    run, index = await _found(request)
    offset, limit = parse_window(request.query, BROKEN_SHOWN)
    summary = written_summary(run)
    return _json(await asyncio.to_thread(robustness_body, index, summary, offset, limit))


async def _record(request: web.Request) -> web.Response:
    _run, index = await _found(request)
    return _json(await asyncio.to_thread(index.record, _record_index(request, index)))


def _record_index(request: web.Request, index: RunIndex) -> int:
    """The record the URL names; a 404 for one the run does not have."""
    text = request.match_info["i"]
    if not text.isdigit() or int(text) >= len(index):
        raise _not_found(f"record {text!r}; records go from 0 to {len(index) - 1}")
    return int(text)


async def _call_tokens(request: web.Request) -> web.Response:
    """One model call's tokens and logprobs, asked for when the page shows them, with their
    text where the run's tokenizer can be loaded here."""
    run, index = await _found(request)
    record = await asyncio.to_thread(index.record, _record_index(request, index))
    call = request.match_info["k"]
    if not call.isdigit():
        raise _not_found(f"model call {call!r}; give its index, from 0")
    tokens = call_tokens(record, int(call))
    prompt, completion = tokens["prompt_ids"], tokens["completion_ids"]
    return _json({**tokens, **await asyncio.to_thread(call_texts, run.path, prompt, completion)})


async def _sessions(request: web.Request) -> web.Response:
    _run, index = await _found(request)
    query = parse_query(request.query, index.perturbations)
    page = await asyncio.to_thread(sessions_page, index, query)
    return _json(dataclasses.asdict(page))


async def _watch(request: web.Request) -> web.Response:
    return _json(await watch_body(request.app[CATALOG], request.match_info["id"]))


async def _compare(request: web.Request) -> web.Response:
    return _json(await request.app[COMPARISONS].answer(request.query))


async def _headline(request: web.Request) -> web.Response:
    run, _index = await _found(request)
    return _json(await run_headline(request.app[CATALOG], run))


async def _errors(request: web.Request) -> web.Response:
    _run, index = await _found(request)
    return _json({"errors": error_rows(index)})


async def _workers(request: web.Request) -> web.Response:
    """Attempts per worker from the index; the proxy's counts from the report, when it has them."""
    run, index = await _found(request)
    notes: list[str] = []
    loads = await asyncio.to_thread(read_workers, run.path / WORKERS, notes)
    note = NO_WORKERS if loads is None and not notes else " ".join(notes) or None
    return _json({"workers": worker_rows(index, loads), "note": note})


async def _figures(request: web.Request) -> web.Response:
    run, _index = await _found(request)
    try:
        drawn = await request.app[PLOTS].of(run)
    except ConfigError as exc:
        return _json({"figures": [], "note": str(exc)})
    listed = [{"name": plot.name, "caption": plot.caption} for plot in drawn.values()]
    return _json({"figures": listed, "note": None})


async def _figure(request: web.Request) -> web.Response:
    run, _index = await _found(request)
    name = request.match_info["name"]
    try:
        drawn = await request.app[PLOTS].of(run)
    except ConfigError as exc:
        raise _not_found(f"figures: {exc}") from None
    plot = drawn.get(name)
    if plot is None or plot.svg is None:
        raise _not_found(f"figure {name!r}; this run has {', '.join(drawn) or 'none'}")
    return web.Response(text=standalone(plot.svg), content_type="image/svg+xml")


async def _control_state(request: web.Request) -> web.Response:
    catalog, control = request.app[CATALOG], request.app[CONTROL]
    return _json(await control_state(catalog, control, request.match_info["id"]))


async def _control_action(request: web.Request) -> web.Response:
    catalog, control = request.app[CATALOG], request.app[CONTROL]
    return _json(await control_action(catalog, control, request.match_info["id"], request))
