"""vLLM's token fields on the llama.cpp worker's answers, for requests that ask with
`return_token_ids`: `prompt_token_ids` and each choice's `token_ids`, placed as vLLM places them.

Chat puts the prompt's ids at the top level, completions in the choice (vLLM's protocol.py);
in a stream the first chunk carries them and each chunk its own tokens. Our chat handler writes
its stream's fields itself (llamacpp_chat); whole answers pass llama-cpp-python's response
model, which drops unknown fields, so they are added here, as are a completion stream's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from agent_eval.backends.llamacpp_tokens import Tokens, Wanted

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
IDS_FIELD = b"return_token_ids"


def wanted(body: bytes, path: str) -> Wanted | None:
    """What a request asks for of its tokens; None for nothing (most requests: not parsed)."""
    if IDS_FIELD not in body and b"logprobs" not in body:
        return None
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None  # the server's own validation answers malformed requests
    if not isinstance(request, dict):
        return None
    ids = request.get("return_token_ids") is True
    asked = Wanted(ids, *_logprobs(request, path == CHAT_PATH))
    return asked if ids or asked.logprobs else None


def _logprobs(request: dict[str, Any], chat: bool) -> tuple[bool, int]:
    """Whether a request asked for logprobs, and how many alternatives a token."""
    value = request.get("logprobs")
    if not chat:
        # llama-cpp-python writes completions' logprobs; only their stop token's are ours.
        return type(value) is int, value if type(value) is int else 0
    top = request.get("top_logprobs")
    return value is True, top if value is True and type(top) is int else 0


class TokenFields:
    """An ASGI `send` that adds the recorded token ids to the answer of one request.

    The fields are spliced into the server's bytes, never re-rendered, so every other byte of
    the answer stays as the server wrote it."""

    def __init__(self, send: Send, tokens: Tokens, path: str) -> None:
        self.send, self.tokens, self.chat = send, tokens, path == CHAT_PATH
        self.start: Message | None = None
        self.body: list[bytes] = []
        self.passing = self.stream = False
        self.first = True
        self.covered = self.target = 0  # a completion stream's text bytes, matched by ids'

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.stream = _content_type(message).startswith(b"text/event-stream")
            # Errors pass as they are, and chat streams carry their fields already.
            self.passing = message["status"] != 200 or (self.stream and self.chat)
            if self.passing or self.stream:
                await self.send(message)
            else:
                self.start = message
        elif message["type"] != "http.response.body" or self.passing:
            await self.send(message)
        elif self.stream:
            await self.send({**message, "body": self._events(message.get("body", b""))})
        else:
            await self._whole(message)

    async def _whole(self, message: Message) -> None:
        self.body.append(message.get("body", b""))
        if message.get("more_body") or self.start is None:
            return
        body = self._answer(b"".join(self.body))
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", b"%d" % len(body)))
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})

    def _answer(self, body: bytes) -> bytes:
        ids = _field("token_ids", self.tokens.completion.ids)
        prompt = _field("prompt_token_ids", self.tokens.prompt_ids)
        if not self.chat:
            return _into_choice(body, b"%s,%s," % (prompt, ids), WHOLE_CHOICE)
        return _into_choice(body, ids + b",", WHOLE_CHOICE)[:-1] + b"," + prompt + b"}"

    def _events(self, body: bytes) -> bytes:
        lines = body.split(b"\n")
        return b"\n".join(self._chunk(line) if line.startswith(DATA) else line for line in lines)

    def _chunk(self, line: bytes) -> bytes:
        choice = json.loads(line.removeprefix(b"data: "))["choices"][0]
        fields = b""
        if self.first:
            fields, self.first = _field("prompt_token_ids", self.tokens.prompt_ids, b": "), False
            fields += b", "
        ids = self._ids_of(choice["text"], choice.get("finish_reason") is not None)
        fields += _field("token_ids", ids, b": ") + b", "
        return _into_choice(line, fields, STREAM_CHOICE)

    def _ids_of(self, text: str, last: bool) -> list[int]:
        """The tokens a completion chunk's text came from: the stream runs ahead of this send,
        so they are matched by their bytes; the last chunk takes the rest (a stop's tokens)."""
        ids, llama, start = self.tokens.completion.ids, self.tokens.llama, self.tokens.taken
        self.target += len(text.encode())
        end = start
        while llama is not None and end < len(ids) and (last or self.covered < self.target):
            self.covered += len(llama.detokenize([ids[end]]))
            end += 1
        self.tokens.taken = end
        return ids[start:end]


DATA = b'data: {"'
WHOLE_CHOICE = b'"choices":[{'
STREAM_CHOICE = b'"choices": [{'


def _field(name: str, ids: list[int] | None, colon: bytes = b":") -> bytes:
    separator = b", " if colon == b": " else b","
    values = separator.join(b"%d" % i for i in ids or [])
    return b'"%s"%s[%s]' % (name.encode(), colon, values)


def _into_choice(body: bytes, fields: bytes, opening: bytes) -> bytes:
    """`fields` (each followed by a comma) first in the first choice. A quote in a JSON string
    is escaped, so `opening` matches only the answer's own "choices"."""
    at = body.index(opening) + len(opening)
    return body[:at] + fields + body[at:]


def _content_type(message: Message) -> bytes:
    return next((v for k, v in message["headers"] if k.lower() == b"content-type"), b"")
