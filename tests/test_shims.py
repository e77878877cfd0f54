"""Each shim in agent_eval/shims, pinned: the library's private parts it relies on are there and
behave as it expects, so a library that changes under a shim fails here, not silently."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import httpx2
import typer
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from llama_cpp import Llama
from openai import AsyncOpenAI
from typer.core import TyperOption
from typer.testing import CliRunner

from agent_eval.backends.llamacpp import embedded_model
from agent_eval.shims import bfcl_official
from agent_eval.shims.aiohttp_expect import send_continue
from agent_eval.shims.aiohttp_server import ErrorAnsweringRunner
from agent_eval.shims.bfcl_checker import MODEL_NAME, bfcl_module
from agent_eval.shims.llama_generations import (
    Answer,
    edit_completions,
    ends_generation,
    logprobs_after,
    watch_generations,
)
from agent_eval.shims.openai_hooks import add_response_hook
from agent_eval.shims.ray_logs import SIGTERM_NOTE, hide_sigterm_note
from agent_eval.shims.typer_help import show_flags_without_a_value


@contextlib.asynccontextmanager
async def serving(runner: web.AppRunner) -> AsyncIterator[int]:
    """Serve `runner` on a free local port: the port."""
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


def status(answer: bytes) -> int:
    """An answer's status code (aiohttp answers HTTP/1.0 to a request line it could not parse)."""
    return int(answer.split(b" ", 2)[1])


async def send(port: int, request: bytes) -> bytes:
    """Send bytes as they are on a fresh connection; all the server says until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        async with asyncio.timeout(10):
            return await reader.read(-1)
    finally:
        writer.close()


# typer: rich help asks each option for its type through TyperOption.display_type_rich.


def test_typer_rich_help_shows_a_flag_without_a_type_and_an_option_with_its_own() -> None:
    show_flags_without_a_value()
    show_flags_without_a_value()  # a second call wraps nothing twice
    assert getattr(TyperOption.display_type_rich, "flags_without_value", False)
    app = typer.Typer(add_completion=False)

    @app.command()
    def main(
        loud: bool = typer.Option(False, "--loud", help="Shout."),
        name: str = typer.Option("x", "--name", help="Who."),
    ) -> None:
        """One flag, one option with a value."""

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert re.search(r"--loud\s+Shout\.", result.output), result.output
    assert re.search(r"--name\s+<str>\s+Who\.", result.output), result.output


# aiohttp: a server connection's own error answers.


def test_aiohttp_handle_error_keeps_the_signature_the_connection_overrides() -> None:
    parameters = inspect.signature(RequestHandler.handle_error).parameters
    assert list(parameters) == ["self", "request", "status", "exc", "message"]
    assert parameters["status"].default == 500


async def crash(request: web.Request) -> web.Response:
    raise RuntimeError("a handler's bug")


async def hello(request: web.Request) -> web.Response:
    return web.Response(text="hello")


def ours(status: int, message: str | None) -> web.Response:
    return web.Response(status=status, text=f"ours: {status} ({message or 'no reason'})")


async def test_aiohttp_connections_answer_bad_http_and_crashes_with_the_runners_answer() -> None:
    app = web.Application()
    app.router.add_get("/crash", crash)
    app.router.add_get("/hello", hello)
    async with serving(ErrorAnsweringRunner(app, ours, access_log=None)) as port:
        smuggled = await send(
            port,
            b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        )
        crashed = await send(port, b"GET /crash HTTP/1.1\r\nHost: x\r\n\r\n")
        fine = await send(port, b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status(smuggled) == 400 and b"\r\n\r\nours: 400 (" in smuggled
    assert status(crashed) == 500 and crashed.endswith(b"ours: 500 (no reason)")
    assert status(fine) == 200 and fine.endswith(b"\r\n\r\nhello")


# aiohttp: the 100 Continue of its private default expect handler.


async def refuse_other_expectations(request: web.Request) -> web.Response | None:
    if request.headers.get("Expect", "").lower() == "100-continue":
        await send_continue(request)
        return None
    return web.Response(status=417, text="ours")


async def echo(request: web.Request) -> web.Response:
    return web.Response(body=await request.read())


async def test_aiohttp_sends_100_continue_before_the_body_then_the_answer() -> None:
    app = web.Application()
    app.router.add_post("/echo", echo, expect_handler=refuse_other_expectations)
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n"
    async with serving(web.AppRunner(app, access_log=None)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(head + b"Expect: 100-continue\r\n\r\n")
            async with asyncio.timeout(10):
                interim = await reader.readuntil(b"\r\n\r\n")
                writer.write(b"howdy")
                answer = await reader.read(-1)
        finally:
            writer.close()
        refused = await send(port, head + b"Expect: 0\r\n\r\nhowdy")
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert status(answer) == 200 and answer.endswith(b"\r\n\r\nhowdy")
    assert status(refused) == 417 and refused.endswith(b"ours")


# openai: the hooks of the HTTP client a client and its with_options copies share.


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": []}, headers={"X-Answered-By": "tiny"})


async def test_openai_response_hooks_see_every_answer_of_a_client_and_its_copies() -> None:
    app = web.Application()
    app.router.add_get("/v1/models", models)
    heard: list[str | None] = []

    async def hook(response: httpx2.Response) -> None:
        heard.append(response.headers.get("X-Answered-By"))

    async with serving(web.AppRunner(app, access_log=None)) as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        async with AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            add_response_hook(client, hook)
            add_response_hook(client, hook)  # added once
            await client.models.list()
            await client.with_options(timeout=5).models.list()
    assert heard == ["tiny", "tiny"]


# ray: its SIGTERM note, from the logger of its private module.


def test_ray_warns_of_sigterm_through_the_logger_the_shim_filters() -> None:
    from ray._private import worker  # imported here: Ray is an extra

    assert worker.logger is logging.getLogger("ray._private.worker")
    assert re.search(rf'logger\.warning\(\s*"{SIGTERM_NOTE}', inspect.getsource(worker.init))
    hide_sigterm_note()
    hide_sigterm_note()  # a second call adds nothing
    assert len(worker.logger.filters) == 1

    def record(message: str) -> logging.LogRecord:
        return worker.logger.makeRecord(
            worker.logger.name, logging.WARNING, "", 0, message, (), None
        )

    assert not worker.logger.filter(record(f"{SIGTERM_NOTE} because current thread is not main."))
    assert worker.logger.filter(record("another warning"))


# BFCL: its checkers imported with a stand-in model table; its handler and eval_runner steps.


def test_bfcls_ast_checker_reads_the_stand_in_table_and_turns_dots_into_underscores() -> None:
    checker = bfcl_module("eval_checker.ast_eval.ast_checker")
    assert checker.MODEL_CONFIG_MAPPING[MODEL_NAME].underscore_to_dot is True
    assert checker.convert_func_name("a.b", MODEL_NAME) == "a_b"
    assert checker.convert_func_name("a_b", MODEL_NAME) == "a_b"


def test_bfcls_eval_runner_steps_keep_the_signatures_bfcl_official_calls() -> None:
    runner = bfcl_module("eval_checker.eval_runner")
    ast_entry = inspect.signature(runner._evaluate_single_ast_entry).parameters
    assert list(ast_entry)[:9] == [
        "handler", "index", "model_result_item", "possible_answer_item", "prompt_entry",
        "model_name", "test_category", "language", "return_format",
    ]  # fmt: skip
    relevance = inspect.signature(runner._evaluate_single_relevance_entry).parameters
    assert list(relevance) == [
        "handler", "index", "model_result_item", "prompt_entry", "model_name", "test_category"
    ]  # fmt: skip


def test_bfcls_openai_handler_made_without_a_client_keeps_and_decodes_answers() -> None:
    handler = bfcl_official.openai_handler(fc=True)
    assert handler.is_fc_model is True and not hasattr(handler, "client")
    assert handler.decode_ast([{"f": '{"x": 1}'}], None, False) == [{"f": {"x": 1}}]
    entry = {"id": "simple_python_0", "function": [{"name": "f", "parameters": {}}]}
    verdict = bfcl_official.evaluate(handler, [{"f": "{"}], entry, [{"f": {}}], "simple_python")
    assert verdict["valid"] is False and verdict["error_type"] == "ast_decoder:decoder_failed"
    prompting = bfcl_official.openai_handler(fc=False)
    assert prompting.decode_ast(
        "[f(x=1)]", bfcl_module("constants.enums").ReturnFormat.PYTHON, False
    ) == [{"f": {"x": 1}}]


# agentdojo: its OpenAI element's private conversion of a tool to OpenAI's format.


def test_agentdojo_tools_reach_the_model_as_its_openai_element_sends_them() -> None:
    from agentdojo.agent_pipeline.llms import openai_llm  # imported here: AgentDojo is an extra

    from agent_eval.benchmarks.agentdojo.suites import suite
    from agent_eval.shims.agentdojo_tools import openai_tool

    send_money = next(f for f in suite("banking").tools if f.name == "send_money")
    tool = openai_tool(send_money)
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "send_money"
    assert tool["function"]["description"] == send_money.description
    assert set(tool["function"]["parameters"]["properties"]) == {
        "recipient", "amount", "subject", "date",
    }  # fmt: skip
    assert "openai_tools = [_function_to_openai(tool)" in inspect.getsource(openai_llm.OpenAILLM)


# llama-cpp-python: each generation's prompt and sampled tokens, and the logits behind them.

SAY_HI = "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"


def test_llama_generations_are_seen_as_completions_count_them_and_score_them() -> None:
    llama = Llama(
        model_path=str(embedded_model()), logits_all=True, n_ctx=256, n_threads=1, verbose=False
    )
    seen: list[tuple[list[int], list[int]]] = []

    def watch(model: Llama, prompt: list[int]) -> Callable[[int], None]:
        seen.append((prompt, []))
        return seen[-1][1].append

    watch_generations(lambda model, prompt: None)
    watch_generations(watch)  # replaces the watch, wraps nothing twice
    try:
        done = cast(
            dict[str, Any],
            llama.create_completion(SAY_HI, max_tokens=48, temperature=0, logprobs=1),
        )
    finally:
        watch_generations(lambda model, prompt: None)
    ((given, sampled),) = seen
    (choice,) = done["choices"]
    assert given == llama.tokenize(SAY_HI.encode(), add_bos=False, special=True)
    assert choice["finish_reason"] == "stop" and ends_generation(llama, sampled[-1])
    written = sampled[:-1]
    assert not any(ends_generation(llama, token) for token in written)
    assert len(written) == done["usage"]["completion_tokens"]
    assert llama.detokenize(written).decode() == choice["text"]
    rows = [logprobs_after(llama, len(given) - 1 + k) for k in range(len(written))]
    scored = [
        float(row[token]) for row, token in zip(rows, written, strict=True) if row is not None
    ]
    assert scored == choice["logprobs"]["token_logprobs"]


def test_completions_answers_are_edited_whole_and_chunk_by_chunk() -> None:
    llama = Llama(model_path=str(embedded_model()), n_ctx=256, n_threads=1, verbose=False)
    asked: list[str] = []

    def edit(model: Llama, options: dict[str, Any]) -> Callable[[Answer], None]:
        asked.append(options["prompt"])
        return lambda answer: answer.update(edited=len(asked))

    edit_completions(lambda model, options: None)
    edit_completions(edit)  # replaces the edit, wraps nothing twice
    try:
        whole = cast(dict[str, Any], llama(prompt=SAY_HI, max_tokens=3, temperature=0))
        chunks = list(llama(prompt=SAY_HI, max_tokens=3, temperature=0, stream=True))
        created = cast(dict[str, Any], llama.create_completion(SAY_HI, max_tokens=3))
    finally:
        edit_completions(lambda model, options: None)
    assert not hasattr(Llama.__call__.__wrapped__, "hook")  # type: ignore[attr-defined]
    assert asked == [SAY_HI, SAY_HI]  # chat handlers call create_completion: not edited
    assert whole["edited"] == 1 and "edited" not in created
    assert len(chunks) > 1 and all(chunk["edited"] == 2 for chunk in chunks)  # type: ignore[index]
