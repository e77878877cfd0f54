"""Routing policies, found by name and built from the proxy's config by one factory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.proxy.policies.base import Policy, RequestInfo, session_key
from agent_eval.registry import Registry

if TYPE_CHECKING:  # see policies.base
    from agent_eval.proxy.config import ProxyConfig

FIXED_POLICY = "fixed"
"""The policy `rollout.reproducible` sets: each session on the same worker every run."""

POLICIES: Registry[type[Policy]] = Registry(
    "policy",
    "agent_eval.policies",
    {
        "session": "agent_eval.proxy.policies.session:SessionAffinity",
        "round_robin": "agent_eval.proxy.policies.round_robin:RoundRobin",
        "least_requests": "agent_eval.proxy.policies.least_requests:LeastRequests",
        "power_of_two": "agent_eval.proxy.policies.power_of_two:PowerOfTwo",
        "prefix": "agent_eval.proxy.policies.prefix:PrefixAware",
        FIXED_POLICY: "agent_eval.proxy.policies.fixed:FixedRoutes",
    },
)


def build_policy(config: ProxyConfig) -> Policy:
    """The policy named in the config."""
    return POLICIES.load(config.policy).from_proxy_config(config)


__all__ = ["FIXED_POLICY", "POLICIES", "Policy", "RequestInfo", "build_policy", "session_key"]
