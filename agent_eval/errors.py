"""The one exception family: every message is written for the user and says what to do next."""


class AgentEvalError(Exception):
    """Root of every error agent-eval raises on purpose."""


class ConfigError(AgentEvalError):
    """A setting the user gave is invalid."""


class ProxyStartError(AgentEvalError):
    """The proxy could not start (port taken, bad address)."""


def mistakes_only(group: BaseExceptionGroup) -> str | None:
    """The messages of a group of concurrent errors that are all AgentEvalErrors, joined; None
    when anything else is among them (a bug, to show as it is)."""
    mistakes, others = group.split(AgentEvalError)
    if mistakes is None or others is not None:
        return None
    return "; ".join(dict.fromkeys(str(exc) for exc in _leaves(mistakes)))


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [
        leaf
        for exc in group.exceptions
        for leaf in (_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    ]
