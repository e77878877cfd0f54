"""The one exception family: every message is written for the user and says what to do next."""


class AgentEvalError(Exception):
    """Root of every error agent-eval raises on purpose."""


class ConfigError(AgentEvalError):
    """A setting the user gave is invalid."""


class ProxyStartError(AgentEvalError):
    """The proxy could not start (port taken, bad address)."""
