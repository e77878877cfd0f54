"""A run whose directory's file system fills up: one message, whole lines, nothing left running,
and a resume that finishes it as if nothing had happened.

The file systems are real: small tmpfs mounts of their own, which takes root. Elsewhere the
tests skip, and fail instead where CI sets AGENT_EVAL_REQUIRE_MOUNT.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import NoReturn

import pytest

from agent_eval.errors import StorageError
from agent_eval.results.files import RunDirectory
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, slow_run, summary
from tests.helpers.proxy import StartWorkers, worker_starter
from tests.helpers.waits import eventually

REQUIRE = "AGENT_EVAL_REQUIRE_MOUNT"
STORAGE_EXIT_CODE = 4


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of the test's own, unmounted after it."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        _unavailable("mounting a small file system takes root and mount(8)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        _unavailable(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason}, but {REQUIRE} is set: the full-disk tests must run here")
    pytest.skip(reason)


def fill(disk: Path) -> Path:
    """Take every free byte of `disk` with one file; returns it (delete it to free the space)."""
    ballast = disk / "ballast"
    with ballast.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return ballast


def working_in(folder: Path) -> list[int]:
    """Pids of the live processes whose working directory is `folder`, read from /proc."""
    found = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if cwd.readlink() == folder:
                found.append(int(cwd.parent.name))
        except OSError:
            continue
    return found


async def test_writes_that_run_out_of_room_leave_every_file_as_it_was(small_disk: Path) -> None:
    run = RunDirectory(small_disk / "run")
    await asyncio.to_thread(run.prepare)
    first = b'{"sample_id": "a"}\n'
    await run.append_line(first)
    # Larger than the whole file system: part of it is written before the disk is full.
    big = "x" * (2 << 20)
    with pytest.raises(StorageError) as raised:
        await run.append_line(b'{"sample_id": "b", "pad": "' + big.encode() + b'"}\n')
    assert run.samples.read_bytes() == first
    message = str(raised.value)
    assert f"cannot write {run.samples}: No space left on device" in message
    assert "free on its file system" in message
    with pytest.raises(StorageError, match=r"summary\.json: No space left on device"):
        run.write_json("summary.json", {"pad": big})
    assert sorted(p.name for p in run.path.iterdir()) == ["samples.jsonl"]


async def _uninterrupted(folder: Path) -> Path:
    """The directory of `slow_run`'s run played to its end, over mock workers of its own."""
    async with AsyncExitStack() as stack:
        common = await slow_run(worker_starter(stack), folder)
        run_dir = folder / "clean"
        process = await agent_eval("run", *common, "-o", str(run_dir), cwd=folder)
        code, _, err = await finish(process)
        assert code == 0, err
    return run_dir


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`_uninterrupted`, made once: the resumed runs of each test end as it did."""
    return asyncio.run(_uninterrupted(tmp_path_factory.mktemp("clean")))


@pytest.mark.parametrize("processes", [1, 2])
async def test_a_full_disk_stops_the_run_cleanly_and_resume_finishes_it(
    start_workers: StartWorkers, tmp_path: Path, small_disk: Path, processes: int, clean: Path
) -> None:
    common = await slow_run(start_workers, tmp_path)
    run = small_disk / "run"

    async def run_in_tmp_path(*args: str) -> asyncio.subprocess.Process:
        # Every process it starts works in tmp_path too: that is how one left behind is found.
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent_eval", "run", *args, cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    process = await run_in_tmp_path(*common, "-o", str(run), f"eval.processes={processes}")
    samples = run / "samples.jsonl"
    await eventually(lambda: samples.exists() and samples.read_bytes().count(b"\n") >= 4, 60)
    ballast = await asyncio.to_thread(fill, small_disk)
    code, out, err = await finish(process)
    assert code == STORAGE_EXIT_CODE, out + err
    assert "Traceback" not in out + err
    assert f"cannot write {run}" in err and "No space left on device" in err
    assert "free on its file system" in err
    assert f"Once there is room, resume with: agent-eval run --resume {run}" in err
    data_lines = samples.read_bytes().splitlines(keepends=True)
    assert all(line.endswith(b"\n") and json.loads(line) for line in data_lines)
    kept = len(data_lines)
    assert 4 <= kept < ROWS * 2
    assert f"{kept} finished attempts are kept" in err
    assert not list(run.glob("*.partial")) and not (run / "summary.json").exists()
    # The proxy, engine and scoring processes; multiprocessing's resource tracker ends a moment
    # after the run, once it reads the end of its pipe.
    await eventually(lambda: working_in(tmp_path) == [], 10, lambda: "processes outlived the run")

    ballast.unlink()
    code, _, err = await finish(await run_in_tmp_path("--resume", str(run)))
    assert code == 0, err
    played = [(r["sample_id"], r["attempt"]) for r in lines(run)]
    assert len(played) == len(set(played)) == ROWS * 2
    assert sorted(played) == sorted((r["sample_id"], r["attempt"]) for r in lines(clean))
    resumed, uninterrupted = summary(run), summary(clean)
    for key in ("quality", "stability", "attempts", "scored", "unscored", "complete"):
        assert resumed[key] == uninterrupted[key], key


async def test_a_read_only_file_system_is_a_storage_error_too(small_disk: Path) -> None:
    run = RunDirectory(small_disk / "run")
    await asyncio.to_thread(run.prepare)
    first = b'{"sample_id": "a"}\n'
    await run.append_line(first)
    remount = ["mount", "-o", "remount,ro", str(small_disk)]
    await asyncio.to_thread(subprocess.run, remount, check=True)
    with pytest.raises(StorageError, match=r"samples\.jsonl: Read-only file system \(.* free"):
        await run.append_line(b'{"sample_id": "b"}\n')
    with pytest.raises(StorageError, match=r"summary\.json: Read-only file system"):
        run.write_json("summary.json", {})
    assert run.samples.read_bytes() == first
    assert sorted(p.name for p in run.path.iterdir()) == ["samples.jsonl"]
