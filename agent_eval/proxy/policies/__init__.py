"""Routing policies, built from the proxy's config by one factory."""

from __future__ import annotations

from collections.abc import Callable

from agent_eval.proxy.config import PolicyName, SessionConfig
from agent_eval.proxy.policies.base import Policy, RequestInfo, session_key
from agent_eval.proxy.policies.least_requests import LeastRequests
from agent_eval.proxy.policies.power_of_two import PowerOfTwo
from agent_eval.proxy.policies.round_robin import RoundRobin
from agent_eval.proxy.policies.session import SessionAffinity

POLICIES: dict[str, Callable[[SessionConfig], Policy]] = {
    "session": lambda cfg: SessionAffinity(cfg.balance_factor, cfg.ttl, cfg.max_sessions),
    "round_robin": lambda _cfg: RoundRobin(),
    "least_requests": lambda _cfg: LeastRequests(),
    "power_of_two": lambda _cfg: PowerOfTwo(),
}


def build_policy(name: PolicyName, sessions: SessionConfig) -> Policy:
    """The policy named in the config."""
    return POLICIES[name](sessions)


__all__ = ["POLICIES", "Policy", "RequestInfo", "build_policy", "session_key"]
