"""A free port for a test's or a benchmark's own server, which binds it at once."""

from __future__ import annotations

import socket


def free_port(host: str) -> int:
    """A port the kernel has free on `host` now."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
