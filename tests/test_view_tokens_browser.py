"""Model calls' tokens in a real browser: the call that drifts is marked with where its tokens
first differ, a call's tokens unfold on demand, each completion token shaded by its
probability and saying its id and logprob on hover, drawn as its text by the run's tokenizer
(ids where the run's model is not here); the run page shows the drift rate."""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from llama_cpp import Llama

from agent_eval.agents.trajectory import CallTokens
from agent_eval.backends.llamacpp import embedded_model
from tests.helpers.browser import BrowserPage
from tests.helpers.token_calls import RENDERED_ANEW, conversation, drift_index, line_with_tokens
from tests.helpers.view_runs import run_route, served, write_run

CALLS = conversation(3, drift_at=2)
ON_VLLM = {"rollout.backend": "vllm:d1", "model.path": "HuggingFaceTB/SmolLM2-135M-Instruct"}
"""A model this machine holds no GGUF file of: its ids are drawn, not their text."""
ASKED = "<|im_start|>user\nWhat colour is the sky?<|im_end|>\n<|im_start|>assistant\n"
ANSWER = "The sky is blue.\n"


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    runs = tmp_path / "runs"
    write_run(runs / "tokens", [line_with_tokens("q", 0, [*CALLS, None])], settings=ON_VLLM)
    vocab = Llama(model_path=str(embedded_model()), vocab_only=True, verbose=False)
    prompt = vocab.tokenize(ASKED.encode(), add_bos=False, special=True)
    completion = [*vocab.tokenize(ANSWER.encode(), add_bos=False), vocab.token_eos()]
    said = CallTokens(prompt, completion, [-0.02 - k / 10 for k in range(len(completion))])
    write_run(runs / "smollm2", [line_with_tokens("q", 0, [said])])
    async with served([runs]) as base:
        yield base


def alpha(color: str) -> float:
    """The alpha of a computed `rgba(r, g, b, a)` colour (1 for `rgb(...)`)."""
    parts = re.findall(r"[\d.]+", color)
    return float(parts[3]) if len(parts) == 4 else 1.0


async def test_the_drifting_call_is_marked_and_its_tokens_shaded(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/tokens") + "/sample/q")
    marks = page.locator("#attempt-0 td.continuity")
    expected, at = CALLS[1].completion_ids[-1], drift_index(CALLS, 2)
    drifts = f"^drifts from call 1 at token {at}: {expected} sent back as {RENDERED_ANEW}"
    await expect(marks).to_have_text(
        [
            re.compile("^starts a conversation"),
            re.compile("^continues call 0"),
            re.compile(drifts),
            "no tokens recorded",
        ]
    )
    await expect(page.locator("#attempt-0 td.continuity.drift")).to_have_count(1)
    assert await page.locator(".token").count() == 0  # nothing drawn before it is asked for

    await page.locator("#attempt-0 td.continuity.drift summary").click()
    prompt = page.locator(".call-tokens .token.prompt")
    await expect(prompt).to_have_count(len(CALLS[2].prompt_ids))
    drift = page.locator(".token.drift-at")
    await expect(drift).to_have_text(str(RENDERED_ANEW))
    await expect(drift).to_have_attribute("title", re.compile(f"earlier call had {expected} here"))

    tokens = page.locator(".call-tokens .token.completion")
    await expect(tokens).to_have_text([str(i) for i in CALLS[2].completion_ids])
    await expect(page.locator(".tokens-text")).to_contain_text("is not a GGUF file")
    logprobs = CALLS[2].logprobs or []
    for n, logprob in enumerate(logprobs):
        token = tokens.nth(n)
        await expect(token).to_have_attribute("title", re.compile(f"logprob {logprob:.4f}"))
        color = await token.evaluate("node => getComputedStyle(node).backgroundColor")
        assert alpha(color) == pytest.approx(0.85 * (1 - math.exp(logprob)), abs=0.01)
    assert browser.errors == []


async def test_a_calls_tokens_show_their_text_with_id_and_logprob_on_hover(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/smollm2") + "/sample/q")
    await page.locator("#attempt-0 td.continuity summary").click()
    await expect(page.locator(".tokens-text")).to_contain_text(embedded_model().name)
    tokens = page.locator(".call-tokens .token.completion")
    shown = [" sky", " is", " blue", ".", "\\n", "<|im_end|>"]
    await expect(tokens).to_have_count(len(shown) + 1)
    drawn = await tokens.evaluate_all("nodes => nodes.map(node => node.textContent)")
    assert drawn[0] == "The" and drawn[1:] == shown  # a leading space kept, a line end escaped
    said = await tokens.evaluate_all("nodes => nodes.map(node => node.title)")
    assert said[1].startswith('" sky" · id ') and "logprob -0.1200" in said[1]
    assert said[-1].startswith('"<|im_end|>" · id 2 · logprob')
    color = await tokens.nth(3).evaluate("node => getComputedStyle(node).backgroundColor")
    assert alpha(color) == pytest.approx(0.85 * (1 - math.exp(-0.32)), abs=0.01)
    prompt = await page.locator(".token.prompt").evaluate_all("ns => ns.map(n => n.textContent)")
    assert "".join(prompt) == ASKED.replace("\n", "\\n")
    assert browser.errors == []


async def test_the_run_page_shows_the_drift_rate(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    await browser.page.goto(url + run_route("runs/tokens"))
    section = browser.page.locator('[data-dimension="continuity"]')
    await expect(section).to_contain_text("drift rate")
    # 1 of the 2 turns checked drifts: Wilson 95% interval 0.09 to 0.91
    await expect(section).to_contain_text("0.500 ± 0.354 [0.09, 0.91] over 2 turns checked")
    assert browser.errors == []
