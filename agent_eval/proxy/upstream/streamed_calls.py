"""Tool calls spelled out across a Chat Completions stream, gathered for a translation.

A translation announces a call (a Messages tool_use block, a Responses function_call item)
only once its name is known, and where it announced it is the call's `slot`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.proxy.upstream.chunks import ToolCallDelta


@dataclass
class StreamedCall:
    """One tool call as its deltas arrive: the first id and name win, arguments add up."""

    position: int
    call_id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)  # joined once: `+=` copies every time
    slot: int | None = None

    def arguments_so_far(self) -> str:
        return "".join(self.arguments)


class StreamedCalls:
    """The calls of one choice, by the `index` their deltas carry."""

    def __init__(self) -> None:
        self._by_index: dict[int, StreamedCall] = {}

    def get(self, delta: ToolCallDelta) -> StreamedCall | None:
        return self._by_index.get(delta.get("index", 0))

    def add(self, delta: ToolCallDelta) -> tuple[StreamedCall, str]:
        """The call `delta` belongs to, with it merged in, and the arguments it carried."""
        index = delta.get("index", 0)
        if index not in self._by_index:
            self._by_index[index] = StreamedCall(position=len(self._by_index))
        call = self._by_index[index]
        function = delta.get("function") or {}
        call.call_id = call.call_id or delta.get("id")
        call.name = call.name or function.get("name")
        fragment = function.get("arguments") or ""
        call.arguments.append(fragment)
        return call, fragment

    def announced(self) -> list[dict[str, Any]]:
        """The announced calls in Chat Completions' shape, in the order they began."""
        return [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_so_far()},
            }
            for call in self._by_index.values()  # a dict keeps the order calls began in
            if call.slot is not None
        ]
