"""The proxy in a process of its own, so the engine's CPU work never slows routing.

The parent writes the config (without keys) to RUN_DIR/proxy.json, passes keys through the
environment, and reads one line on the child's stdout that gives the base URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from agent_eval.errors import ProxyStartError
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.auth import save_admin_token
from agent_eval.proxy.server.listener import serve_forever
from agent_eval.system.children import dying_with_parent, stop_groups
from agent_eval.system.credentials import VARIABLES, child_environment, environment_keys
from agent_eval.system.diagnostics import log_tail, open_to_append, writing
from agent_eval.system.lifecycle import run_child_main

READY = "agent-eval proxy ready at "
STOP_GRACE = 10.0


@contextlib.asynccontextmanager
async def proxy_process(
    config: ProxyConfig, run_dir: Path, timeout: float = 60.0
) -> AsyncIterator[str]:
    """A proxy process inside the block; yields its base URL (`http://HOST:PORT/v1`)."""
    config_path, log_path = run_dir / "proxy.json", run_dir / "proxy.log"
    config = config.with_admin_token()
    token = config.admin_token
    assert token is not None, "with_admin_token() made one"
    await asyncio.to_thread(_write_config, config, config_path)
    await asyncio.to_thread(save_admin_token, token, run_dir)
    process = await _spawn(config, config_path, log_path)
    try:
        yield await _wait_ready(process, log_path, timeout)
    finally:
        await stop_groups([process], STOP_GRACE)


def _write_config(config: ProxyConfig, path: Path) -> None:
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config.model_dump_json(exclude=set(VARIABLES), indent=2))


async def _spawn(
    config: ProxyConfig, config_path: Path, log_path: Path
) -> asyncio.subprocess.Process:
    secrets = {field: getattr(config, field) for field in VARIABLES}
    env = child_environment(
        {field: s.get_secret_value() if s is not None else None for field, s in secrets.items()}
    )
    argv, preexec = dying_with_parent(
        [sys.executable, "-m", "agent_eval.proxy.server.process", str(config_path)]
    )
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


def main(config_path: str) -> None:
    """The child's side: serve until SIGTERM, announcing the base URL on stdout."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    data = ProxyConfig.model_validate_json(Path(config_path).read_text()).model_dump()
    config = ProxyConfig.model_validate({**data, **environment_keys()})

    def announce(base_url: str, _: ProxyConfig) -> None:
        sys.stdout.write(f"{READY}{base_url}\n")
        sys.stdout.flush()

    run_child_main(serve_forever(config, announce))


if __name__ == "__main__":
    main(sys.argv[1])
