"""Ports for workers, from a range no one else takes them from in the meantime."""

from __future__ import annotations

# Linux hands client sockets ephemeral ports from 32768-60999 and SGLang binds its own
# internal ports late, in 22000-29999; a port picked from neither is not taken by them
# between our choice and the server's bind, minutes later for a server loading weights.
WORKER_PORTS = range(20000, 22000)
