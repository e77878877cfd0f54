"""The processes of the proxy benchmark: started with logs to files, all stopped at the end."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from agent_eval.testing.ports import free_port
from bench.parts import ROOT

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
READY_WORKER = re.compile(r"READY (http://\S+)")
READY_PROXY = re.compile(r"listening at (http://\S+)/v1")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0  # seconds between SIGTERM and SIGKILL
LOG_TAIL = 2000  # characters of a dead process's log shown in the error
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")

# The GSM8K test set in the shared data beside the repository, or in the folder
# AGENT_EVAL_SHARED names (as for the tests).
SHARED = Path(os.environ.get("AGENT_EVAL_SHARED") or ROOT.parent / "shared")
GSM8K_TEST = SHARED / "data" / "gsm8k" / "test.jsonl"


class BenchError(RuntimeError):
    """A benchmark step failed; the message names the cause."""


class FleetError(BenchError):
    """A benchmark process died or never became ready; the message carries its log tail."""


@dataclass
class Proc:
    """One started process and the file its stdout and stderr go to."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return ANSI.sub("", self.log.read_text(errors="replace"))

    def check_alive(self) -> None:
        """Raises: FleetError with the log tail when the process has exited."""
        if (code := self.popen.poll()) is not None:
            tail = self.output()[-LOG_TAIL:]
            raise FleetError(f"{self.name} exited with code {code}; its log ends:\n{tail}")

    def cpu_seconds(self) -> float:
        """User plus system CPU time so far, all threads, its running children's included (a
        proxy of several processes), from Linux /proc. Raises: FleetError."""
        self.check_alive()
        return sum(_cpu_ticks(stat) for stat in _family_stats(self.pid)) / _CLOCK_TICKS

    def rss_bytes(self) -> int:
        """Resident memory of the process and its living children, from Linux /proc.
        Raises: FleetError."""
        self.check_alive()
        return sum(int(fields[21]) * _PAGE for fields in _family_stats(self.pid))


def children(pid: int) -> list[int]:
    """The living processes whose parent is `pid`, from Linux /proc."""
    return sorted(child for child, fields in _all_stats().items() if int(fields[1]) == pid)


def _all_stats() -> dict[int, list[str]]:
    """The /proc stat fields (after the name) of every living process, by pid."""
    stats: dict[int, list[str]] = {}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            stats[int(path.parent.name)] = path.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
    return stats


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time so far of this one process, all its threads; 0 once gone."""
    fields = _all_stats().get(pid)
    return 0.0 if fields is None else _cpu_ticks(fields) / _CLOCK_TICKS


def _family_stats(pid: int) -> list[list[str]]:
    """The /proc stat fields (after the name) of a process and its living descendants."""
    stats = _all_stats()
    family, found = {pid}, True
    while found:
        found = False
        for child, fields in stats.items():
            if child not in family and int(fields[1]) in family:
                family.add(child)
                found = True
    return [stats[member] for member in family if member in stats]


def _cpu_ticks(fields: list[str]) -> int:
    return int(fields[11]) + int(fields[12])


class Fleet:
    """Starts processes and stops every one of them on exit: SIGTERM, then SIGKILL."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._procs: list[Proc] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Proc:
        log = self.log_dir / f"{name}.log"
        with log.open("wb") as sink:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
            )
        proc = Proc(name, popen, log)
        self._procs.append(proc)
        return proc

    def stop(self) -> None:
        _terminate(list(reversed(self._procs)))
        self._procs.clear()

    def stop_one(self, proc: Proc) -> None:
        """Stop one process now, leaving the others running."""
        self._procs.remove(proc)
        _terminate([proc])

    def __enter__(self) -> Fleet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _terminate(procs: list[Proc]) -> None:
    """SIGTERM to each, then SIGKILL to those still running after STOP_TIMEOUT."""
    for proc in procs:
        if proc.popen.poll() is None:
            proc.popen.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait()


def wait_for_line(proc: Proc, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
    """The first match of `pattern` in the process's output. Raises: FleetError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if match := pattern.search(proc.output()):
            return match
        proc.check_alive()
        time.sleep(0.05)
    raise FleetError(f"{proc.name} printed no {pattern.pattern!r} in {timeout:.0f} s")


def wait_for_ok(proc: Proc, url: str, timeout: float) -> None:
    """Poll `url` until it answers 200. Raises: FleetError when the process dies or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc.check_alive()
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise FleetError(f"{proc.name}: {url} did not answer 200 in {timeout:.0f} s")


def run_command(argv: list[str], what: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a command to its end, its output captured. Raises: BenchError naming `what` when it
    fails or outlasts `timeout` seconds."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what} took over {timeout:.0f} s") from None
    if done.returncode != 0:
        raise BenchError(f"{what} failed:\n{done.stderr[-2000:]}")
    return done


def run_with_fleet(name: str, keep: bool, body: Callable[[Fleet, Path], None]) -> None:
    """Run `body` with a fleet in a fresh work folder; SIGTERM or Ctrl-C stops every process."""
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    try:
        with Fleet(work) as fleet:
            body(fleet, work)
    except BenchError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        print("interrupted: every process the benchmark started is stopped")
        sys.exit(130)
    finally:
        if keep:
            print(f"run directories and logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def exit_on_sigterm(signum: int, frame: object) -> NoReturn:
    """SIGTERM as an exception, so the fleet's exit stops its processes."""
    raise SystemExit(128 + signum)  # unwinds through the fleet, which stops its processes


def worker_urls(workers: list[Proc]) -> list[str]:
    """The base URLs mock workers announce on their READY lines."""
    return [wait_for_line(w, READY_WORKER, START_TIMEOUT).group(1) for w in workers]


def start_mock_workers(fleet: Fleet, names: Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    """Mock workers by these names, answering; their base URLs.

    `extra` are more mock worker options, such as `("--two-step",)`.
    """
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--port", "0", *extra]
    return worker_urls([fleet.start(name, [*argv, "--name", name]) for name in names])


def start_mock_worker_group(
    fleet: Fleet, name: str, count: int, extra: Sequence[str] = ()
) -> tuple[Proc, list[str]]:
    """One process serving `count` mock workers on ports of their own (NAME-0, NAME-1, ...);
    the process and the workers' base URLs."""
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--port", "0"]
    proc = fleet.start(name, [*argv, "--name", name, "--count", str(count), *extra])
    return proc, wait_for_lines(proc, READY_WORKER, count, START_TIMEOUT)


def wait_for_lines(proc: Proc, pattern: re.Pattern[str], count: int, timeout: float) -> list[str]:
    """The first group of the first `count` matches of `pattern` in the process's output.

    Raises: FleetError when the process dies or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(found := pattern.findall(proc.output())) >= count:
            return found[:count]
        proc.check_alive()
        time.sleep(0.1)
    raise FleetError(
        f"{proc.name} printed fewer than {count} {pattern.pattern!r} in {timeout:.0f} s"
    )


def start_broken_worker(fleet: Fleet, case: str) -> tuple[Proc, str]:
    """The broken worker playing `case` (agent_eval.testing.broken_worker.CASES), answering its
    health route; the process and its base URL."""
    port = free_port("127.0.0.1")
    argv = [sys.executable, "-m", "agent_eval.testing.broken_worker", "--case", case]
    worker = fleet.start(f"broken-{case}", [*argv, "--port", str(port)])
    url = f"http://127.0.0.1:{port}"
    wait_for_ok(worker, url + "/health", START_TIMEOUT)
    return worker, url


def start_agent_eval(
    fleet: Fleet,
    urls: list[str],
    policy: str,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
    name: str = "agent-eval",
    ready: str = "/readiness",
) -> tuple[Proc, str]:
    """`agent-eval serve` over these workers, answering; the process and its root URL.

    `extra` are more `serve` options, such as `("--client-timeout", "5")`; `env` more
    environment variables, such as a PYTHONPATH where a policy of the benchmark's own is;
    `name` names its log, for a bench that starts two; `ready` is the path that answers 200
    once it is ready (`/health` for a proxy with no workers).
    """
    cli = Path(sys.executable).with_name("agent-eval")
    endpoints = [arg for url in urls for arg in ("--endpoint", url)]
    argv = [str(cli), "serve", "--port", "0", *endpoints, "--policy", policy, *extra]
    proxy = fleet.start(name, argv, env)
    proxy_url = wait_for_line(proxy, READY_PROXY, START_TIMEOUT).group(1)
    wait_for_ok(proxy, proxy_url + ready, START_TIMEOUT)
    return proxy, proxy_url


def start_sglang_router(
    fleet: Fleet,
    urls: list[str],
    policy: str,
    extra: Sequence[str] = (),
    name: str = "sglang-router",
) -> tuple[Proc, str]:
    """sglang-router over these workers, answering; the process and its root URL.

    It listens on a free loopback port; HF_ENDPOINT points at a closed port so no hub is
    asked. `extra` are more `launch_router` options, such as `("--queue-size", "0")`; `name`
    names its log, for a bench that starts two.
    """
    port, metrics_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    argv = [sys.executable, "-m", "sglang_router.launch_router", "--worker-urls", *urls]
    argv += ["--policy", policy, "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port)]
    argv += ["--log-level", "warn", *extra]
    router = fleet.start(name, argv, {"HF_ENDPOINT": "http://127.0.0.1:9"})
    router_url = f"http://127.0.0.1:{port}"
    wait_for_ok(router, router_url + "/readiness", START_TIMEOUT)
    return router, router_url
