"""A run observer for tests that watch nothing."""

from __future__ import annotations

from agent_eval.proxy.admin_client import WorkerLoad
from agent_eval.run.engine import Progress


class QuietObserver:
    """A run observer that shows nothing."""

    def waiting(self, reason: str) -> None:
        pass

    def set_proxy(
        self, base_url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        pass

    def on_progress(self, progress: Progress) -> None:
        pass
