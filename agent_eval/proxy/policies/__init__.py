"""Routing policies, found by name and built with their settings by one factory."""

from __future__ import annotations

from agent_eval.proxy.policies.base import Policy, RequestInfo, session_key
from agent_eval.registry import Registry

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


def build_policy(name: str, settings: object = None) -> Policy:
    """The policy `name` with its settings: its settings model, a mapping of them, or None for
    the defaults. Raises: ConfigError when the policy cannot be loaded."""
    policy = POLICIES.load(name)
    return policy.from_settings(policy.settings_model.model_validate(settings or {}))


__all__ = ["FIXED_POLICY", "POLICIES", "Policy", "RequestInfo", "build_policy", "session_key"]
