"""The control socket: a Unix socket in the run directory, for its owner alone; no TCP port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

from pydantic import ValidationError

from agent_eval.run.config import CONFIG_FILE
from agent_eval.run.control.protocol import SOCKET, ControlError, Reply, Request

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Reply]]
MAX_LINE = 64 * 1024
ASK_TIMEOUT = 30.0
_SUN_PATH = 100  # a Unix socket path is at most 107 bytes; a longer one goes through its folder
_UCRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


@contextlib.asynccontextmanager
async def listening(run_dir: Path, handle: Handler) -> AsyncIterator[bool]:
    """Take requests on RUN_DIR/control.sock while inside; yields False (and takes none) when
    another live process already listens there, or the folder takes no socket: the run
    goes on without control."""
    path = run_dir / SOCKET
    if await _answers(path):
        log.warning("%s answers for another process: this one takes no control requests", path)
        yield False
        return
    try:
        path.unlink(missing_ok=True)  # a run that died left it: nobody listens
        with _short(path) as where:
            server = await asyncio.start_unix_server(
                lambda r, w: _serve(r, w, handle), where, limit=MAX_LINE
            )
    except OSError as exc:
        log.warning("no control socket at %s (%s): agent-eval ctl cannot reach this run", path, exc)
        yield False
        return
    try:
        os.chmod(path, 0o600)  # the owner alone may connect; each peer is checked again
        yield True
    finally:
        server.close()
        path.unlink(missing_ok=True)
        await server.wait_closed()


async def ask(run_dir: Path, request: Request, timeout: float = ASK_TIMEOUT) -> Reply:
    """Send one request to the run playing in `run_dir`; its reply.

    Raises: ControlError when no run plays there.
    """
    path = run_dir / SOCKET
    idle = f"{run_dir} is not running: no process plays it now"
    try:
        with _short(path) as where:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(where), timeout)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise ControlError(f"{idle}{_how_to_finish(run_dir)}") from exc
    except PermissionError as exc:
        raise ControlError(f"{path} belongs to another user: only its owner controls it") from exc
    try:
        writer.write(request.model_dump_json().encode() + b"\n")
        line = await asyncio.wait_for(reader.readline(), timeout)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not line:
        raise ControlError(f"{idle}: it ended before answering")
    return Reply.model_validate_json(line)


async def _serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handle: Handler
) -> None:
    try:
        if not _same_user(writer):
            return
        line = await reader.readline()
        try:
            reply = await handle(Request.model_validate_json(line))
        except ValidationError as exc:
            reply = Reply(ok=False, message=f"not a control request: {_first_error(exc)}")
        except ControlError as exc:
            reply = Reply(ok=False, message=str(exc))
        writer.write(reply.model_dump_json().encode() + b"\n")
        await writer.drain()
    except (ConnectionError, ValueError):  # the client left, or sent a line over MAX_LINE
        pass
    finally:
        writer.close()


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer runs as this process's user: the socket's mode is not all we trust."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True  # no peer credentials here: the socket's mode (0600) decides alone
    _, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return uid == os.getuid()


async def _answers(path: Path) -> bool:
    """Whether a process listens on `path` now."""
    try:
        with _short(path) as where:
            _, writer = await asyncio.wait_for(asyncio.open_unix_connection(where), 5)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


@contextlib.contextmanager
def _short(path: Path) -> Iterator[str]:
    """`path` as a Unix socket can take it: through an open handle on its folder when long."""
    if len(os.fsencode(path)) <= _SUN_PATH:
        yield str(path)
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def _how_to_finish(run_dir: Path) -> str:
    """What to do with a run nobody plays: resume it if it was ever played, else start it."""
    if (run_dir / CONFIG_FILE).is_file():
        return f"; `agent-eval run --resume {run_dir}` plays what it has not finished"
    return " (a run takes control requests once its workers serve, and until it ends)"


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
