"""agent-eval's session placement before requests in flight counted: a named baseline.

`python -m bench.inflight_spread` runs it beside the `session` policy of today, as
`--policy bench.parts.placement_before:SessionByHash` with the repository on PYTHONPATH.
"""

from __future__ import annotations

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Candidates, as_candidates
from agent_eval.proxy.policies.session import SessionAffinity


class SessionByHash(SessionAffinity):
    """A new session takes the first worker clockwise under the session bound, however many
    requests it has in flight."""

    def _place(self, key: str, candidates: Candidates, moving: bool) -> Worker:
        bound = self._bound(len(candidates), extra=0 if moving else 1)
        under = [w for w in candidates if self._load.get(w.url, 0) < bound]
        if not under:
            return min(candidates, key=lambda w: self._load.get(w.url, 0))
        return self._ring.first(key, as_candidates(under))
