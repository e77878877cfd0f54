"""Agent runners: each plays whole trajectories through the proxy."""

from agent_eval.agents.base import AgentRunner, RunContext, Sampling, load_runner
from agent_eval.agents.trajectory import Trajectory

__all__ = ["AgentRunner", "RunContext", "Sampling", "Trajectory", "load_runner"]
