"""Ports for workers, from a range no one else takes them from in the meantime."""

from __future__ import annotations

import random
import socket
from collections.abc import Collection

from agent_eval.errors import ConfigError

# Linux hands client sockets ephemeral ports from 32768-60999 and SGLang binds its own
# internal ports late, in 22000-29999; a port picked from neither is not taken by them
# between our choice and the server's bind, minutes later for a server loading weights.
WORKER_PORTS = range(20000, 22000)

# How servers say their port was taken: Python/aiohttp and uvicorn, C++ servers, the errno.
_ADDRESS_IN_USE = ("address already in use", "address in use", "[errno 98]")


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind `port` on `host` now."""
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def choose_ports(host: str, count: int, avoid: Collection[int] = ()) -> list[int]:
    """`count` ports of WORKER_PORTS free on `host` now, none in `avoid`, from a random start.

    Raises: ConfigError when the range has fewer free ports.
    """
    start = random.randrange(len(WORKER_PORTS))
    chosen: list[int] = []
    for offset in range(len(WORKER_PORTS)):
        port = WORKER_PORTS[(start + offset) % len(WORKER_PORTS)]
        if port not in avoid and port_is_free(host, port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise ConfigError(
        f"fewer than {count} free ports in {WORKER_PORTS.start}-{WORKER_PORTS.stop - 1} on "
        f"{host}; stop what holds them, or set rollout.worker.base_port"
    )


def says_address_in_use(log: str) -> bool:
    """Whether a server's log says it could not bind its port because something else holds it."""
    lowered = log.lower()
    return any(phrase in lowered for phrase in _ADDRESS_IN_USE)
