"""The proxy's workers for the live view, polled from its `/workers` admin route."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from typing import Any

import aiohttp
from rich.table import Table
from rich.text import Text

from agent_eval.proxy.admin_client import WorkerLoad, fetch_workers, load_since, proxy_root

# A proxy busy with a whole run can be slow to answer; a late answer still helps.
_REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=5)


@dataclass(frozen=True)
class WorkerRow:
    """One worker as `/workers` reports it."""

    url: str
    healthy: bool
    breaker: str
    in_flight: int
    served: int
    failures: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerRow:
        """Raises: KeyError or TypeError on a body of another shape."""
        return cls(
            str(data["url"]),
            bool(data["healthy"]),
            str(data["breaker"]),
            int(data["in_flight"]),
            int(data["served"]),
            int(data["failures"]),
        )


@dataclass(frozen=True)
class WorkerStatus:
    """The latest poll: the workers, or why there are none to show."""

    workers: tuple[WorkerRow, ...] = ()
    error: str | None = None

    @property
    def in_flight(self) -> int:
        """Model calls the workers are answering now."""
        return sum(w.in_flight for w in self.workers)

    @property
    def served(self) -> int:
        """Model calls the workers answered so far."""
        return sum(w.served for w in self.workers)

    def summary(self) -> str:
        """`workers 2/2 healthy, 3 in flight`, or the error."""
        if self.error is not None:
            return self.error
        healthy = sum(w.healthy for w in self.workers)
        return f"workers {healthy}/{len(self.workers)} healthy, {self.in_flight} in flight"


class WorkerPoller:
    """Polls `/workers` every `interval` seconds; failures become a status, never an error."""

    def __init__(self, proxy_url: str | None, interval: float, api_key: str | None = None) -> None:
        self.interval = interval
        self.status: WorkerStatus | None = None
        self._wake = asyncio.Event()
        self._root: str | None = None
        self._api_key: str | None = None
        self._since: WorkerLoad | None = None
        if proxy_url is not None:
            self.set_proxy(proxy_url, api_key)

    def set_proxy(
        self, url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        """Poll this proxy from now on; `url` may end in /v1. `api_key` if the proxy has one.

        `since`: the proxy's workers before this run; their counters show less those.
        None: the proxy is going away; polling stops and the last status stays.
        """
        if url is None:
            self._root = None
            return
        self._root = proxy_root(url)
        self._api_key, self._since = api_key, since
        self.status = None
        self.refresh()  # a new proxy's workers show at once, not an interval later

    def refresh(self) -> None:
        """Poll now, not at the next interval: the last attempt ended, show the proxy after it."""
        self._wake.set()

    async def run(self) -> None:
        """Poll until cancelled."""
        async with aiohttp.ClientSession(timeout=_REQUEST_TIMEOUT) as http:
            while True:
                self._wake.clear()  # before the poll: a refresh asked during it polls again
                if (root := self._root) is not None:
                    self._keep(root, await self._poll(http, root, self._since))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):
                        await self._wake.wait()

    def _keep(self, root: str, status: WorkerStatus) -> None:
        """Keep a poll's answer unless the proxy changed while it was asked."""
        if root == self._root:
            self.status = status
        elif self._root is None and status.error is None:
            # The run ended during the poll: this answer came after its last attempt.
            self.status = status
        # Else a proxy stopped meanwhile, which is not "not answering", or another took over.

    async def _poll(
        self, http: aiohttp.ClientSession, root: str, since: WorkerLoad | None
    ) -> WorkerStatus:
        try:
            workers = await fetch_workers(http, root, self._api_key)
            counted = workers if since is None else load_since(since, workers)
            return WorkerStatus(tuple(WorkerRow.from_json(w) for w in counted))
        except aiohttp.ClientResponseError as exc:
            return WorkerStatus(error=f"proxy answered HTTP {exc.status} on /workers")
        except TimeoutError:
            return WorkerStatus(error=f"proxy not answering at {root} (timed out)")
        except (aiohttp.ClientError, OSError) as exc:
            return WorkerStatus(error=f"proxy not answering at {root} ({_why(exc)})")
        except (ValueError, KeyError, TypeError) as exc:
            return WorkerStatus(error=f"proxy sent an unexpected /workers body ({exc!r})")


def _why(exc: BaseException) -> str:
    """A short cause: "Connection refused" beats aiohttp's long connector message."""
    errno = getattr(exc, "errno", None)
    return os.strerror(errno) if errno else type(exc).__name__


def worker_table(status: WorkerStatus) -> Table | Text:
    """One row per worker; the error in yellow when the proxy did not answer."""
    if status.error is not None:
        return Text(status.error, style="yellow")
    table = Table(box=None, padding=(0, 2), header_style="bold")
    table.add_column("worker", overflow="fold")
    for name in ("health", "breaker", "in flight", "served", "failures"):
        table.add_column(name, justify="left" if name in ("health", "breaker") else "right")
    for w in status.workers:
        health = Text("healthy", "green") if w.healthy else Text("down", "red")
        breaker = Text(w.breaker, "" if w.breaker == "closed" else "yellow")
        failures = Text(str(w.failures), "red" if w.failures else "")
        table.add_row(w.url, health, breaker, str(w.in_flight), str(w.served), failures)
    return table
