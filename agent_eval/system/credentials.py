"""The keys of a run: each has one environment variable, the only way it reaches a child process.

Keys never go on a command line or into a file the run writes (both can be read by others).
The exceptions are forced on us: SGLang takes its key only as an argument (expanded from the
variable by the shell that starts it), and a Slurm task script, made 0600, carries the
variables of its workers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import SecretStr

VARIABLES = {
    "api_key": "AGENT_EVAL_API_KEY",
    "worker_api_key": "AGENT_EVAL_WORKER_API_KEY",
    "admin_token": "AGENT_EVAL_ADMIN_TOKEN",
}
API_KEY = VARIABLES["api_key"]
WORKER_API_KEY = VARIABLES["worker_api_key"]
"""Where launched workers find the key they require (the proxy's worker key)."""
NO_KEY = "unused"
"""What a client sends to a proxy that checks no key: OpenAI's clients insist on one."""


def client_key(api_key: SecretStr | None) -> str:
    """The key a run's own clients send to its proxy."""
    return api_key.get_secret_value() if api_key is not None else NO_KEY


def child_environment(keys: Mapping[str, str | None]) -> dict[str, str]:
    """This process's environment with exactly `keys` set (by field name): none from the shell."""
    env = dict(os.environ)
    for field, variable in VARIABLES.items():
        env.pop(variable, None)
        value = keys.get(field)
        if value is not None:
            env[variable] = value
    return env


def environment_keys() -> dict[str, str | None]:
    """The keys a parent process passed, by field name."""
    return {field: os.environ.get(variable) for field, variable in VARIABLES.items()}
