"""The one error the translation raises: a request field it cannot serve."""

from __future__ import annotations


class UnsupportedField(ValueError):
    """A Responses request field that has no Chat Completions translation; answer with a 400."""

    def __init__(self, field: str, why: str) -> None:
        self.field = field
        self.why = why
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The user-facing text: names the field, says why and what to do instead."""
        return f"the proxy's /v1/responses cannot serve `{self.field}`: {self.why}"
