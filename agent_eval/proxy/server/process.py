"""The proxy in processes of its own, so the engine's CPU work never slows routing.

The parent writes the config (without keys) to RUN_DIR/proxy.json, passes keys through the
environment, and reads one line on each child's stdout that gives the base URL. With more than
one process (`proxy.processes`) every child listens on the same port with SO_REUSEPORT, and the
kernel spreads connections over them; the parent holds the port meanwhile (bound, not
listening, so it takes no connection), their metrics files are under RUN_DIR/proxy-metrics, and
what they share (their own ports, the Responses store) under RUN_DIR/proxy-group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_eval.errors import ProxyExitedError, ProxyStartError
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.responses.shared_store import prepare_store
from agent_eval.proxy.server.auth import save_admin_token
from agent_eval.proxy.server.group import GROUP_DIR, GROUP_SIZE, RESPONSES_FILE, Group
from agent_eval.proxy.server.listener import serve_forever
from agent_eval.proxy.server.metrics_shared import MULTIPROC_DIR
from agent_eval.system.children import dying_with_parent, stop_groups
from agent_eval.system.credentials import VARIABLES, child_environment, environment_keys
from agent_eval.system.diagnostics import log_tail, open_to_append, writing
from agent_eval.system.lifecycle import run_child_main

READY = "agent-eval proxy ready at "
STOP_GRACE = 10.0


@dataclass
class ProxyGroup:
    """The running proxy processes and the base URL they share."""

    base_url: str
    processes: list[asyncio.subprocess.Process]
    log_path: Path

    async def first_exit(self) -> str:
        """Wait until one of the processes exits; what to tell the user about it."""
        # Left running, not cancelled: under uvloop a cancelled wait() cancels the process's
        # other waits too, stop_groups' among them. They end as the group is stopped.
        waits = {asyncio.ensure_future(p.wait()): i for i, p in enumerate(self.processes)}
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        ended = next(iter(done))
        return (
            f"proxy process {waits[ended]} exited with code {ended.result()}; its log "
            f"({self.log_path}) ends with:\n{log_tail(self.log_path)}"
        )


@contextlib.asynccontextmanager
async def proxy_process(
    config: ProxyConfig, run_dir: Path, timeout: float = 60.0
) -> AsyncIterator[str]:
    """The proxy's processes inside the block; yields their base URL (`http://HOST:PORT/v1`)."""
    async with proxy_group(config, run_dir, timeout) as group:
        yield group.base_url


@contextlib.asynccontextmanager
async def proxy_group(
    config: ProxyConfig, run_dir: Path, timeout: float = 60.0
) -> AsyncIterator[ProxyGroup]:
    """`config.process_count()` proxy processes on one port inside the block, all ready."""
    config_path, log_path = run_dir / "proxy.json", run_dir / "proxy.log"
    config = config.with_admin_token()
    token = config.admin_token
    assert token is not None, "with_admin_token() made one"
    count = config.process_count()
    env: dict[str, str] = {}
    with contextlib.ExitStack() as held:
        if count > 1:
            port = held.enter_context(held_port(config.host, config.port))
            config = config.model_copy(update={"port": port})
            env[MULTIPROC_DIR] = str(await asyncio.to_thread(_empty_dir, run_dir / "proxy-metrics"))
            env[GROUP_DIR] = str(await asyncio.to_thread(_group_dir, run_dir / "proxy-group"))
            env[GROUP_SIZE] = str(count)
        await asyncio.to_thread(_write_config, config, config_path)
        await asyncio.to_thread(save_admin_token, token, run_dir)
        processes: list[asyncio.subprocess.Process] = []
        try:
            for index in range(count):
                member = index if count > 1 else None
                processes.append(await _spawn(config, config_path, log_path, member, env))
            urls = [await _wait_ready(process, log_path, timeout) for process in processes]
            yield ProxyGroup(urls[0], processes, log_path)
        finally:
            await stop_groups(processes, STOP_GRACE)


async def serve_proxy(
    config: ProxyConfig, run_dir: Path, on_ready: Callable[[str, ProxyConfig], None]
) -> None:
    """Serve in `config.process_count()` processes until cancelled; with one, in this process.

    Raises: ProxyExitedError when a process of several exits: the others are stopped then,
    since what it held (open attempts, sessions' places) is gone with it."""
    if config.process_count() == 1:
        await serve_forever(config, on_ready)
        return
    config = config.with_admin_token()
    async with proxy_group(config, run_dir) as group:
        on_ready(group.base_url, config)
        raise ProxyExitedError(await group.first_exit())


@contextlib.contextmanager
def held_port(host: str, port: int) -> Iterator[int]:
    """The port a group's processes listen on (`port`, or a free one for 0), held for its life.

    Raises: ProxyStartError off Linux, whose SO_REUSEPORT alone spreads connections over the
    processes (elsewhere the last to bind would take them all), or when the port is taken."""
    if not sys.platform.startswith("linux"):
        raise ProxyStartError(
            "more than one proxy process needs Linux (SO_REUSEPORT); set proxy.processes=1"
        )
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise ProxyStartError(
                f"cannot listen on {host}:{port} ({exc.strerror}); "
                "pass another --port, or --port 0 for a free one"
            ) from None
        yield sock.getsockname()[1]


def _empty_dir(path: Path) -> Path:
    """`path`, made empty: a group's metrics start from nothing, not an earlier group's files."""
    with writing(path):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    return path


def _group_dir(path: Path) -> Path:
    """The group's folder, made empty, with the Responses store its processes share."""
    _empty_dir(path)
    with writing(path):
        prepare_store(path / RESPONSES_FILE)
    return path


def _write_config(config: ProxyConfig, path: Path) -> None:
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config.model_dump_json(exclude=set(VARIABLES), indent=2))


async def _spawn(
    config: ProxyConfig,
    config_path: Path,
    log_path: Path,
    member: int | None,
    extra_env: dict[str, str],
) -> asyncio.subprocess.Process:
    secrets = {field: getattr(config, field) for field in VARIABLES}
    keys = {field: s.get_secret_value() if s is not None else None for field, s in secrets.items()}
    env = {**child_environment(keys), **extra_env}
    command = [sys.executable, "-m", "agent_eval.proxy.server.process", str(config_path)]
    argv, preexec = dying_with_parent([*command, *([] if member is None else [str(member)])])
    with open_to_append(log_path) as log_file:
        return await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=log_file, env=env, start_new_session=True, preexec_fn=preexec,
        )  # fmt: skip


async def _wait_ready(process: asyncio.subprocess.Process, log_path: Path, timeout: float) -> str:
    assert process.stdout is not None
    try:
        async with asyncio.timeout(timeout):
            while line := (await process.stdout.readline()).decode():
                if line.startswith(READY):
                    return line.removeprefix(READY).strip()
    except TimeoutError:
        raise ProxyStartError(
            f"the proxy did not start within {timeout:g} s; its log ({log_path}) ends with:\n"
            f"{log_tail(log_path)}"
        ) from None
    await process.wait()
    raise ProxyStartError(f"the proxy exited during start-up:\n{log_tail(log_path)}")


def main(config_path: str, member: str | None = None) -> None:
    """The child's side: serve until SIGTERM, announcing the base URL on stdout.

    `member`: this process's index in a group sharing the port; its log lines say which."""
    prefix = "" if member is None else f"[proxy {member}] "
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s {prefix}%(message)s")
    data = ProxyConfig.model_validate_json(Path(config_path).read_text()).model_dump()
    config = ProxyConfig.model_validate({**data, **environment_keys()})

    def announce(base_url: str, _: ProxyConfig) -> None:
        sys.stdout.write(f"{READY}{base_url}\n")
        sys.stdout.flush()

    group = Group.from_environment(int(member)) if member is not None else None
    run_child_main(serve_forever(config, announce, group))


if __name__ == "__main__":
    main(*sys.argv[1:3])
