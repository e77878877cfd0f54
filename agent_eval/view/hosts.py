"""The names the view answers to: those it listens on, so no other site's page reads the runs.

A page on another site can point its own name at 127.0.0.1 (DNS rebinding) and read whatever
answers there; its requests still carry its own name in `Host`, so the view refuses any name
it was not bound for. An address (`192.168.1.5`) cannot be rebound: a server listening on
every interface answers to any address, and to this machine's own name.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

LOOPBACK = ("127.0.0.1", "localhost", "::1")
EVERY_INTERFACE = ("", "0.0.0.0", "::")
# A Host header: a name or an IPv4 address, or an IPv6 address in brackets; then a port.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^\[\]:@/\\\s]+))(?::[0-9]{0,5})?")


@dataclass(frozen=True)
class AllowedHosts:
    """The names a server bound to one host answers to, whatever the port."""

    names: frozenset[str]
    any_address: bool
    """Listening on every interface: any IP address is a name the server answers to."""

    @classmethod
    def bound_to(cls, host: str) -> AllowedHosts:
        """The names of a server listening on `host` (`--host`), loopback's always among them."""
        given = _plain(host)
        every = given in EVERY_INTERFACE
        own = {_plain(socket.gethostname())} if every else set()
        return cls(frozenset({*LOOPBACK, given, *own} - {""}), every)

    def allows(self, header: str | None) -> bool:
        """Whether a request whose Host header is `header` is for this server."""
        found = _HOST.fullmatch(header.lower()) if header else None
        if found is None:
            return False
        name = _plain(found["v6"] or found["name"])
        return name in self.names or (self.any_address and _is_address(name))

    def refusal(self, header: str | None) -> str:
        """Why a request for `header` is not answered, and where to open the page instead."""
        shown = ", ".join(sorted(self.names))
        return (
            f"this server answers to {shown}, not to the host {header!r}: open the page by "
            "one of those names. Other names are refused so that no other site's page can "
            "read your runs (DNS rebinding)"
        )


def _plain(name: str) -> str:
    """A host as it is compared: lower case, without brackets or a final dot."""
    return name.strip().strip("[]").lower().removesuffix(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
