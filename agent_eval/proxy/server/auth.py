"""Who may call the proxy: the API key opens the routes, the admin token changes the workers."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from multidict import CIMultiDictProxy
from pydantic import SecretStr

from agent_eval.proxy.routes import is_anthropic
from agent_eval.system.diagnostics import writing


def new_admin_token() -> SecretStr:
    """A fresh admin token, for a proxy started without one."""
    return SecretStr(secrets.token_urlsafe(32))


ADMIN_TOKEN_FILE = "admin-token"


def save_admin_token(token: SecretStr, directory: Path) -> Path:
    """Write the token to DIR/admin-token, readable by its owner alone (like Jupyter's)."""
    path = directory / ADMIN_TOKEN_FILE
    with writing(path):
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # a file left from before may have wider bits
        with os.fdopen(fd, "w") as handle:
            handle.write(token.get_secret_value() + "\n")
    return path


def secret_bytes(secret: SecretStr | None) -> bytes | None:
    """A configured key as the bytes a client must send."""
    return secret.get_secret_value().encode() if secret is not None else None


def bearer_matches(header: str, key: bytes) -> bool:
    """Whether an Authorization header carries `key` as a Bearer token.

    The scheme is matched without regard to case (RFC 9110, 11.1); a bare key without a
    scheme is refused, as OpenAI does. Header bytes that are not UTF-8 are compared as sent.
    """
    scheme, _, credentials = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    sent = credentials.strip().encode("utf-8", "surrogateescape")
    return hmac.compare_digest(sent, key)


def client_authorized(path: str, headers: CIMultiDictProxy[str], key: bytes) -> bool:
    """Whether a request to `path` carries the client key: as a Bearer token, or on
    Anthropic's routes as `x-api-key`, where Anthropic's SDK sends it. The one check of a
    client's key, compared in constant time."""
    if bearer_matches(headers.get("Authorization", ""), key):
        return True
    sent = headers.get("x-api-key") if is_anthropic(path) else None
    return sent is not None and hmac.compare_digest(
        sent.strip().encode("utf-8", "surrogateescape"), key
    )
