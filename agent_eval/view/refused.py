"""A request the view's API cannot answer, with the HTTP status to answer it with."""

from __future__ import annotations

from agent_eval.errors import AgentEvalError


class Refused(AgentEvalError):
    """The status (400 for a bad parameter, 404, 409) and a message saying what to do."""

    def __init__(self, status: int, message: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.parameter = parameter
        """The URL parameter at fault, for a 400."""


class ParameterError(Refused):
    """A URL parameter the API cannot take; `parameter` says which."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(400, f"{name}: {message}", parameter=name)
