"""Turn a native Messages event stream back into the message it spelled out, for the recorder."""

from __future__ import annotations

from typing import Any

from agent_eval.proxy.messages.response import tool_input


class MessageAssembler:
    """Follows a worker's own Messages events; `result()` gives the final message.

    A worker's stream may hold anything: an event of the wrong shape is left out, never
    trusted, and each piece of text is kept once and joined once.
    """

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._blocks: list[dict[str, Any]] = []
        self._pieces: list[list[str]] = []

    def follow(self, event: dict[str, Any]) -> None:
        """Take in one event's JSON."""
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            self._message = dict(event["message"])
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            self._blocks.append(dict(event["content_block"]))
            self._pieces.append([])
        elif kind == "content_block_delta" and self._pieces:
            self._add_delta(event.get("delta"))
        elif kind == "message_delta" and self._message is not None:
            _end(self._message, event)

    def result(self) -> dict[str, Any] | None:
        """The message so far; None before `message_start`."""
        if self._message is None:
            return None
        blocks = [
            self._whole(block, pieces)
            for block, pieces in zip(self._blocks, self._pieces, strict=True)
        ]
        return {**self._message, "content": blocks}

    def _add_delta(self, delta: object) -> None:
        if not isinstance(delta, dict):
            return
        piece = delta.get("text", delta.get("partial_json", delta.get("thinking")))
        if isinstance(piece, str):
            self._pieces[-1].append(piece)

    @staticmethod
    def _whole(block: dict[str, Any], pieces: list[str]) -> dict[str, Any]:
        text = "".join(pieces)
        kind = block.get("type")
        if kind == "text":
            return {**block, "text": text}
        if kind == "thinking":
            return {**block, "thinking": text}
        if kind == "tool_use" and text:
            return {**block, "input": tool_input(text)}
        return block


def _end(message: dict[str, Any], event: dict[str, Any]) -> None:
    """What `message_delta` says at the end: the stop reason and the final usage."""
    delta, usage = event.get("delta"), event.get("usage")
    if isinstance(delta, dict):
        message.update({k: delta[k] for k in ("stop_reason", "stop_sequence") if k in delta})
    if isinstance(usage, dict):
        before = message.get("usage")
        message["usage"] = {**(before if isinstance(before, dict) else {}), **usage}
