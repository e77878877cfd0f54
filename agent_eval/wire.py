"""Header names on the wire between the harness's parts: set by the proxy, read by the agents."""

SESSION_HEADER = "X-Session-ID"
"""The conversation a request belongs to; the proxy keeps a session on one worker by it."""
WORKER_HEADER = "X-Agent-Eval-Worker"
"""The worker that answered a request through the proxy (or whose error it passes on)."""
RETRIES_HEADER = "X-Agent-Eval-Retries"
"""How many workers failed the request before the one that answered (or the last one)."""
