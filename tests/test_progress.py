"""The live view of a run: plain lines for logs, a rich screen for terminals, workers polled."""

from __future__ import annotations

import asyncio
import io
import re
import threading
from collections import Counter

import pytest
from rich.console import Console

from agent_eval.metrics import AttemptCounts
from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.attempt import Attempt
from agent_eval.metrics.performance import Throughput
from agent_eval.progress import RunView
from agent_eval.progress.stats import RunStats, duration_text, errors_text, stats_parts
from agent_eval.progress.view import HEARTBEAT_INTERVALS
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.listener import running_proxy
from agent_eval.run.engine import Progress
from agent_eval.testing.ports import free_port
from tests.helpers.proxy import FAST_HEALTH, StartProxy, StartWorkers
from tests.helpers.waits import eventually, wait_ready

FAST = {"plain_interval": 0.02, "poll_interval": 0.02}
ERROR_KINDS = {3: "max_turns", 10: "timeout", 20: "timeout", 30: "timeout"}


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=80), out


def live_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=120, record=True)


def finished(i: int) -> Attempt:
    """Attempt i of a run: 3 of every 4 right, some ended by the model's errors (ERROR_KINDS)."""
    kind = ERROR_KINDS.get(i)
    return Attempt(
        **dict.fromkeys(("turn_rewards", "turn_answers", "challenge_turns", "answer"), None),
        sample_id=f"s{i}",
        attempt=0,
        seed=0,
        session_id=f"s{i}-0",
        reward=float(i % 4 != 0),
        correct=i % 4 != 0,
        latency_s=1.0,
        prompt_tokens=25,
        completion_tokens=6,
        model_calls=1,
        tool_calls=0,
        tool_errors=0,
        error=None if kind is None else {"kind": kind, "class": "model"},
    )


def counts(
    done: int,
    correct: int = 0,
    errors: Counter[str] | None = None,
    unscored: Counter[str] | None = None,
    **tokens: int,
) -> AttemptCounts:
    """`done` attempts at original samples, `correct` of them right, `unscored` of them stopped
    by the infrastructure."""
    stopped = unscored or Counter()
    scored = done - stopped.total()
    return AttemptCounts(
        attempts=done,
        scored=scored,
        original_scored=scored,
        correct=correct,
        unscored=stopped,
        errors=errors or Counter(stopped),
        **tokens,
    )


async def finish(view: RunView, progress: Progress, attempts: int, start: int = 0) -> None:
    """Play `attempts` finished attempts into the view, as the engine does, one at a time."""
    for i in range(start, start + attempts):
        progress.add(finished(i))
        view.on_progress(progress)
        await asyncio.sleep(0)  # let the poller and the ticker run between attempts


class TickCountingStats(RunStats):
    """RunStats that counts how often `started` is asked: the plain ticker asks once a tick, so
    a test can wait for ticks to pass instead of for time to."""

    asked = 0

    @property
    def started(self) -> bool:
        self.asked += 1
        return super().started


async def poller_pass(view: RunView) -> None:
    """Wake the view's worker poller and wait until it has gone round its loop once more."""
    poller = view._poller
    poller.refresh()
    # Each pass clears the wake flag before it decides whether to poll.
    await eventually(lambda: not poller._wake.is_set(), why=lambda: "the poller never woke")


def expected_accuracy(correct: int, n: int) -> str:
    estimate = accuracy(correct, n)
    return f"acc {estimate.value:.3f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def rate(line: str, unit: str) -> float:
    match = re.search(rf"([\d,.]+) {unit}", line)
    assert match, f"no {unit} in {line!r}"
    return float(match.group(1).replace(",", ""))


async def test_plain_lines_count_every_attempt_of_a_resumed_run_over_a_real_proxy(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers)
    console, out = plain_console()
    # A resumed run: 60 attempts were on disk, 45 of them right; 40 are played here.
    kept = counts(60, 45)
    progress = Progress(total=100, run=kept.copy())
    async with RunView(console, "gsm8k x1", proxy_url=base_url, kept=kept, **FAST) as view:
        await eventually(lambda: view.workers is not None)
        await finish(view, progress, 20)
        await eventually(lambda: "[ 80/100  80%]" in out.getvalue())
        await finish(view, progress, 20, start=20)

    text = out.getvalue()
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "gsm8k x1"
    final = lines[-1]
    assert final.startswith("[100/100 100%] ")
    assert expected_accuracy(45 + 30, 100) in final  # the summary's: kept and played
    for unit in ("attempts/s", "completion tokens/s", "prompt tokens/s"):
        assert rate(final, unit) > 0
    # The rates are of the attempts played here: 6 completion tokens for 25 of the prompt.
    assert rate(final, "prompt tokens/s") / rate(final, "completion tokens/s") == pytest.approx(
        25 / 6, rel=0.01
    )
    assert "errors timeout=3, max_turns=1" in final
    assert "workers 2/2 healthy, 0 in flight" in final
    assert final.endswith("eta 0s")


def test_a_resumed_run_shows_its_kept_attempts_before_it_plays_one() -> None:
    unscored = Counter(timeout=2)
    kept = counts(12, 6, unscored=unscored)
    stats = RunStats(total=40, kept=kept)
    for moment in ("before the proxy is ready", "after"):
        snapshot = stats.snapshot()
        assert (snapshot.done, snapshot.total) == (12, 40), moment
        assert snapshot.accuracy == accuracy(6, 10), moment  # the 2 unscored left out
        assert snapshot.unscored == {"timeout": 2}, moment
        assert (snapshot.attempts_per_s, snapshot.eta_s) == (None, None), moment  # none played
        stats.start()
    assert stats_parts(stats.snapshot())[1:4] == [
        "- attempts/s",
        "- completion tokens/s",
        "- prompt tokens/s",
    ]


async def test_plain_lines_before_the_first_attempt_show_the_total_and_the_model_calls(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(2))
    console, out = plain_console()
    async with RunView(console, "run", live=False, total=8, **FAST) as view:
        view.waiting("waiting for the proxy to see a healthy worker")
        view.set_proxy(base_url)  # ready: the wait is over, attempts are under way
        await eventually(lambda: "model calls answered" in out.getvalue())

    calls = next(line for line in out.getvalue().splitlines() if "model calls" in line)
    assert calls == (
        "[0/8   0%] no attempt finished yet | 0 model calls answered"
        " | workers 2/2 healthy, 0 in flight | eta -"
    )


async def test_plain_waits_print_each_reason_once() -> None:
    console, out = plain_console()
    view = RunView(console, "run", live=False, **FAST)
    view._stats = stats = TickCountingStats()
    async with view:
        for reason in ("Slurm job 7 is PENDING (Priority)",) * 3 + ("waiting for 2 worker(s)",):
            view.waiting(reason)
        # Ticks pass, past a heartbeat's worth: nothing to report before the first attempt.
        asked = stats.asked
        await eventually(
            lambda: stats.asked > asked + HEARTBEAT_INTERVALS,
            why=lambda: f"the plain ticker ticked {stats.asked - asked} times",
        )

    assert out.getvalue().splitlines() == [
        "run",
        "Slurm job 7 is PENDING (Priority)",
        "waiting for 2 worker(s)",
    ]


async def test_live_screen_shows_workers_and_accuracy_and_cleans_up(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    console = live_console()
    async with RunView(console, "gsm8k x1", **FAST) as view:
        view.waiting("waiting for 2 worker(s) to answer")
        await eventually(lambda: "waiting for 2 worker(s)" in console.export_text(clear=False))
        base_url = await start_proxy(workers)
        view.set_proxy(base_url)  # known only once the workers are up
        await eventually(lambda: view.workers is not None and len(view.workers.workers) == 2)
        await finish(view, Progress(total=8), 8)

    text = console.export_text()
    for worker in workers:
        assert worker.url in text
    assert "healthy" in text and "closed" in text
    assert "waiting for 2 worker(s) to answer" in text
    assert expected_accuracy(6, 8) in text
    assert "errors max_turns=1" in text
    assert console.file.getvalue().endswith("\x1b[?25h")  # type: ignore[attr-defined]
    assert not [t for t in asyncio.all_tasks() if "RunView" in repr(t) or "Poller" in repr(t)]
    # Frames are drawn on the event loop: no thread of Live's is left drawing.
    await eventually(lambda: not [t for t in threading.enumerate() if "Refresh" in repr(type(t))])


@pytest.mark.parametrize("live", [False, True])
async def test_a_proxy_that_does_not_answer_is_shown_not_raised(live: bool) -> None:
    console, out = plain_console()
    if live:
        console = live_console()
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}/v1"
    async with RunView(console, "run", proxy_url=url, live=live, **FAST) as view:
        await eventually(lambda: view.workers is not None)
        await finish(view, Progress(total=4), 1)

    text = console.export_text() if live else out.getvalue()
    assert f"proxy not answering at {url.removesuffix('/v1')}" in text


async def test_a_proxy_stopped_at_the_end_keeps_its_last_view(
    start_workers: StartWorkers,
) -> None:
    (worker,) = await start_workers(1)
    console, out = plain_console()
    config = ProxyConfig(endpoints=[worker.url], port=0, health=FAST_HEALTH)
    async with RunView(console, "run", live=False, **FAST) as view:
        async with running_proxy(config) as base_url:
            await wait_ready(base_url, 1)
            view.set_proxy(base_url)
            await eventually(lambda: view.workers is not None and view.workers.error is None)
            view.set_proxy(None)  # as the run does before its proxy stops
        # The poller goes round after the proxy is gone: a poll in flight when it stopped has
        # ended by then, and the pass itself must not ask the stopped proxy.
        await poller_pass(view)
        await finish(view, Progress(total=4), 1)

    last = out.getvalue().strip().splitlines()[-1]
    assert "workers 1/1 healthy" in last and "not answering" not in out.getvalue()


async def test_a_proxy_with_a_key_needs_it(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), api_key="sesame")
    console, _ = plain_console()
    async with RunView(console, "run", proxy_url=base_url, **FAST) as view:
        await eventually(lambda: view.workers is not None)
        assert view.workers is not None and view.workers.error == (
            "proxy answered HTTP 401 on /workers"
        )
        view.set_proxy(base_url, api_key="sesame")
        await eventually(lambda: view.workers is not None and view.workers.error is None)
        assert view.workers.summary() == "workers 1/1 healthy, 0 in flight"


def test_rates_and_eta_count_this_process_from_the_proxy_being_ready() -> None:
    now = [100.0]
    kept = counts(50, 25)  # 50 were on disk
    stats = RunStats(total=100, kept=kept, at_once=8, clock=lambda: now[0])
    stats.start()  # the proxy is ready
    now[0] = 110.0  # 8 attempts at once: the first ends 10 s later, the others with it
    played = counts(1, prompt_tokens=180, completion_tokens=20)
    stats.update(Progress(total=100, run=counts(51, 26), played=played))
    first = stats.snapshot()
    assert first.attempts_per_s == 0.1  # no head start before the first end
    # One attempt over its 10 s says 490 s left; the 7 ending with it say 8x less.
    assert first.eta_s is None
    now[0] = 111.0
    played = counts(8, prompt_tokens=1440, completion_tokens=160)
    stats.update(Progress(total=100, run=counts(58, 31, Counter(timeout=1)), played=played))
    now[0] = 112.0
    snapshot = stats.snapshot()
    assert snapshot.attempts_per_s == 8 / 12  # 8 attempts over 12 s, the summary's definition
    assert snapshot.completion_tokens_per_s == 160 / 12
    assert snapshot.prompt_tokens_per_s == 1440 / 12
    assert snapshot.eta_s == 42 / (8 / 12)  # once as many have ended as run at once
    assert snapshot.accuracy == accuracy(31, 58)  # the kept attempts count, as in the summary
    assert snapshot.errors == {"timeout": 1}


def test_the_eta_of_a_run_smaller_than_its_concurrency_waits_for_its_last_attempt() -> None:
    now = [0.0]
    stats = RunStats(total=4, kept=counts(1), at_once=8, clock=lambda: now[0])
    for now[0], done in ((5.0, 2), (5.5, 3)):
        stats.update(Progress(total=4, run=counts(done), played=counts(done - 1)))
        assert stats.snapshot().eta_s is None
    now[0] = 6.0
    stats.update(Progress(total=4, run=counts(4), played=counts(3)))
    assert stats.snapshot().eta_s == 0


def test_rates_stop_with_the_last_attempt_and_end_as_the_summary_says() -> None:
    now = [0.0]
    stats = RunStats(total=2, clock=lambda: now[0])
    for now[0], done in ((3.0, 1), (4.0, 2)):
        played = counts(done, prompt_tokens=4 * done, completion_tokens=done)
        stats.update(Progress(total=2, run=played, played=played))
    now[0] = 9.0  # the summary is being written: the run's wall time is over
    assert stats.snapshot().attempts_per_s == 0.5
    stats.finish(Throughput(wall_time_s=4.001, attempts_per_s=0.4999, completion_tokens_per_s=0.5,
                            prompt_tokens_per_s=2.0))  # fmt: skip
    assert stats.snapshot().attempts_per_s == 0.4999
    assert stats_parts(stats.snapshot())[1:4] == [
        "0.50 attempts/s",
        "0.5 completion tokens/s",
        "2.0 prompt tokens/s",
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0.4, "0s"), (59.4, "59s"), (185, "3m05s"), (7440, "2h04m")],
)
def test_duration_text(seconds: float | None, text: str) -> None:
    assert duration_text(seconds) == text


def test_errors_text_puts_the_most_frequent_first() -> None:
    assert errors_text({}) == "no errors"
    assert errors_text({"max_turns": 1, "timeout": 2}) == "errors timeout=2, max_turns=1"


def test_the_live_accuracy_leaves_out_unscored_attempts_and_says_so() -> None:
    stats = RunStats(total=10)
    unscored = Counter(no_healthy_worker=2, timeout=1)
    progress = Progress(total=10, run=counts(8, 3, unscored=unscored))
    stats.update(progress)
    snapshot = stats.snapshot()
    assert snapshot.accuracy == accuracy(3, 5)  # 3 right of the 5 scored, not of the 8 played
    shown = stats_parts(snapshot)[0]
    assert shown == (
        "acc 0.600 [0.23, 0.88] over 5 scored; 3 unscored (no_healthy_worker=2, timeout=1)"
    )
