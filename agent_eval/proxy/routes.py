"""The routes some workers serve themselves and others get translated to Chat Completions."""

from __future__ import annotations

CHAT_ROUTE = "/v1/chat/completions"
RESPONSES_ROUTE = "/v1/responses"
MESSAGES_ROUTE = "/v1/messages"
COUNT_TOKENS_ROUTE = "/v1/messages/count_tokens"
TOKENIZE_ROUTE = "/tokenize"
"""vLLM's and SGLang's tokenizer, which takes a chat request and answers its `count`."""
NATIVE_ROUTES = (RESPONSES_ROUTE, MESSAGES_ROUTE, COUNT_TOKENS_ROUTE)
"""Routes each worker is found to serve or lack, by a probe or by its first answer."""
# What a server answers to a POST it has no route for (405: the path exists, not for POST).
MISSING_ROUTE_STATUSES = frozenset({404, 405})


def is_anthropic(path: str) -> bool:
    """Whether `path` is one of Anthropic's routes, whose clients read Anthropic's shapes."""
    return path == MESSAGES_ROUTE or path.startswith(MESSAGES_ROUTE + "/")
