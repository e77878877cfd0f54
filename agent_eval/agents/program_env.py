"""What an agent program is given: the proxy's address and key in its environment, and the
sample's fields in its command line."""

from __future__ import annotations

import os
import re
import shlex
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_eval.agents.base import RunContext
from agent_eval.errors import ConfigError
from agent_eval.system.credentials import NO_KEY, VARIABLES, child_environment

FIELDS = ("question", "id", "workdir", "sample_file", "answer_file", "model")
"""The template fields a command may name, as `{question}`."""
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
REDACTED = "***"


@dataclass(frozen=True)
class Endpoint:
    """Where an attempt's program sends its model calls, and the key it sends."""

    base_url: str
    """The proxy's OpenAI base URL, ending in /v1."""
    api_key: str

    @property
    def anthropic_url(self) -> str:
        """The same proxy for the anthropic SDK, which appends /v1/messages itself."""
        return self.base_url.removesuffix("/v1")


def attempt_endpoint(ctx: RunContext) -> Endpoint:
    """The proxy URL and key of this attempt: its own key when the engine gave it one (every
    call the program makes is then the attempt's), else the run's client's."""
    if ctx.base_url is not None and ctx.api_key is not None:
        return Endpoint(ctx.base_url.rstrip("/"), ctx.api_key)
    return Endpoint(str(ctx.client.base_url).rstrip("/"), ctx.client.api_key)


def program_environment(
    endpoint: Endpoint, model: str, paths: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, str]:
    """The harness's environment without its own keys, `extra`, and where the program finds the
    proxy, its model, its sample, its working directory and its answer file."""
    return {
        **child_environment({}),
        **extra,
        "OPENAI_BASE_URL": endpoint.base_url,
        "OPENAI_API_KEY": endpoint.api_key,
        "ANTHROPIC_BASE_URL": endpoint.anthropic_url,
        "ANTHROPIC_API_KEY": endpoint.api_key,
        "AGENT_EVAL_MODEL": model,
        "OPENAI_MODEL": model,
        "ANTHROPIC_MODEL": model,
        "AGENT_EVAL_SAMPLE_FILE": paths["sample_file"],
        "AGENT_EVAL_WORKDIR": paths["workdir"],
        "AGENT_EVAL_ANSWER_FILE": paths["answer_file"],
    }


def without_keys(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the proxy keys: what a check command gets."""
    return {name: value for name, value in env.items() if name not in KEY_VARIABLES}


def render(command: str | Sequence[str], values: Mapping[str, str]) -> str | list[str]:
    """The command with its template fields filled: shell-quoted in a command line, as they are
    in an argv list."""
    if isinstance(command, str):
        return command.format_map({k: shlex.quote(v) for k, v in values.items()})
    return [part.format_map(values) for part in command]


_WORD = re.compile(r"(?<!\S)([\w.@+-][\w./@+-]*)(?!\S)")
"""A plain word of a command line: no quotes, braces, operators or redirections in it."""


def anchored(command: str | Sequence[str], here: Path) -> str | list[str]:
    """The command with each word that names a file or folder relative to `here` (where
    agent-eval was started) made absolute: the program runs in a working directory of its
    own, where `python my_agent.py` would find nothing."""
    if isinstance(command, str):
        return _WORD.sub(lambda word: _anchor(word.group(1), here, shlex.quote), command)
    return [_anchor(part, here, str) for part in command]


def _anchor(word: str, here: Path, quote: Callable[[str], str]) -> str:
    if word in (".", "..") or word.startswith("-") or not ("/" in word or "." in word):
        return word  # an option, a program on PATH, a module name: not a path of here
    path = here / word
    return quote(str(path.resolve())) if path.exists() else word


def check_template(command: str | Sequence[str], option: str) -> None:
    """Refuse a template field that is not one of FIELDS, or braces that do not pair."""
    parts = [command] if isinstance(command, str) else list(command)
    for part in parts:
        try:
            named = [
                field for _, field, _, _ in string.Formatter().parse(part) if field is not None
            ]
        except ValueError as exc:
            raise ConfigError(
                f"agent option {option}={part!r}: {exc}; write a literal brace as {{{{ or }}}}"
            ) from None
        unknown = [field for field in named if field not in FIELDS]
        if unknown:
            raise ConfigError(
                f"agent option {option}={part!r} names the field {{{unknown[0]}}}, which is not "
                f"known; the fields are {', '.join('{' + f + '}' for f in FIELDS)} (write a "
                "literal brace as {{ or }})"
            )


def shown(command: str | Sequence[str], secrets: Sequence[str]) -> str:
    """The command (or a program's output) as a record keeps it: every secret in it replaced."""
    text = command if isinstance(command, str) else shlex.join(command)
    for secret in secrets:
        if secret and secret != NO_KEY:
            text = text.replace(secret, REDACTED)
    return text


def secrets(endpoint: Endpoint) -> list[str]:
    """Every key a record must not show: the attempt's and the harness's own."""
    own = (os.environ.get(variable) for variable in VARIABLES.values())
    return [endpoint.api_key, *(key for key in own if key)]
