"""The proxy's share of the machine: open files raised to the hard limit, in-flight work capped."""

from __future__ import annotations

import logging
import resource

log = logging.getLogger(__name__)

# Descriptors kept for the listening socket, health probes, logs and the admin routes.
_RESERVED_FILES = 256


def raise_open_files_limit() -> int:
    """Raise the soft open-files limit to the hard one; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open-files limit from %d to %d: %s", soft, hard, exc)
        return soft
    return hard


def in_flight_cap(configured: int) -> int:
    """Requests the proxy may hold at once: each holds a client and a worker connection."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    allowed = max((soft - _RESERVED_FILES) // 2, 1)
    if allowed < configured:
        log.warning(
            "the open-files limit (%d) allows %d requests in flight, not %d; raise it "
            "(ulimit -n) to allow more",
            soft,
            allowed,
            configured,
        )
    return min(configured, allowed)
