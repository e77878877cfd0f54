"""A run of 20,000 attempts exported to rl and sft in bounded memory: samples.jsonl is read a
line at a time and each output line written as it is made, so resident memory does not grow
with the run (127 MB in, 74 MB of rl out)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_eval.results.exports.run import PlayedBy, export_run
from agent_eval.results.files import SAMPLES
from tests.helpers.processes import rss_mb
from tests.helpers.token_records import calculator_attempt, continuing, write_run

ATTEMPTS = 20_000
BOUND_MB = 32
PLAYED_BY = PlayedBy("math_calculator", "mock-model")


@contextmanager
def peak_growth_mb() -> Iterator[list[float]]:
    """This process's highest resident memory while inside, less what it held on entry, in MB,
    sampled every 10 ms (the list holds one number once the block ends)."""
    before = rss_mb(os.getpid())
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], rss_mb(os.getpid()))

    sampler = threading.Thread(target=sample)
    sampler.start()
    grown: list[float] = []
    try:
        yield grown
    finally:
        done.set()
        sampler.join()
        grown.append(max(peak[0], rss_mb(os.getpid())) - before)


def large_run(path: Path) -> Path:
    """20,000 attempts of two calls with 400 prompt tokens each, written line by line."""
    tokens = continuing(list(range(1000, 1400)), [list(range(50)), list(range(60))], [7] * 40)
    line = calculator_attempt("q0", 0, tokens).to_line()
    write_run(path, [])
    with (path / SAMPLES).open("wb") as samples:
        for index in range(ATTEMPTS):
            samples.write(line.replace(b'"sample_id":"q0"', b'"sample_id":"q%d"' % index, 1))
    return path


def test_a_run_of_20_000_attempts_exports_in_bounded_memory(tmp_path: Path) -> None:
    run = large_run(tmp_path / "run")
    small = write_run(tmp_path / "small", [calculator_attempt("q0", 0, [None, None])])
    export_run(small, "sft", None, PLAYED_BY)  # what any export loads, before measuring
    for kind in ("rl", "sft"):
        with peak_growth_mb() as grown:
            exported = export_run(run, kind, None, PLAYED_BY)
        assert exported.written == ATTEMPTS
        assert grown[0] < BOUND_MB, f"{kind}: resident memory grew {grown[0]:.0f} MB"
    assert (run / SAMPLES).stat().st_size > 3 * BOUND_MB * 2**20
    assert (run / "rl.jsonl").stat().st_size > 2 * BOUND_MB * 2**20
