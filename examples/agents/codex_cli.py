"""OpenAI's Codex CLI (`codex exec`) as agent-eval's `command` agent, unmodified.

Codex gets the sample's `question` as its prompt and works in the current directory, the
attempt's own. Its model provider is the proxy: $OPENAI_BASE_URL over the Responses API,
keyed by $OPENAI_API_KEY, set with -c flags in a CODEX_HOME of its own (no login, no user
config). `codex exec` prints only its final message on stdout: the answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

PROVIDER = "agent-eval"
# Tools a served model cannot back: web search runs on OpenAI's servers, and the sub-agent
# tools come as a `namespace` tool, which Chat Completions workers have no form for.
WITHOUT_HOSTED_TOOLS = ["-c", 'web_search="disabled"', "--disable", "multi_agent"]


def read_sample() -> dict[str, object]:
    """The sample: the file agent-eval names, or else stdin."""
    path = os.environ.get("AGENT_EVAL_SAMPLE_FILE")
    if path:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    return json.load(sys.stdin)


def provider_flags(base_url: str) -> list[str]:
    """-c flags that make the proxy Codex's one model provider."""
    settings = {
        "model_provider": PROVIDER,
        f"model_providers.{PROVIDER}.name": PROVIDER,
        f"model_providers.{PROVIDER}.base_url": base_url,
        f"model_providers.{PROVIDER}.env_key": "OPENAI_API_KEY",
        f"model_providers.{PROVIDER}.wire_api": "responses",
    }
    # json.dumps quotes each value as a TOML basic string.
    return [
        flag for key, value in settings.items() for flag in ("-c", f"{key}={json.dumps(value)}")
    ]


def codex_command(question: str) -> list[str]:
    """`codex exec` for one question: commands run without asking, able to write only in the
    attempt's directory and the temporary one (Codex's sandbox, bubblewrap on Linux)."""
    return [
        os.environ.get("CODEX_BIN", "codex"),
        "exec",
        *provider_flags(os.environ["OPENAI_BASE_URL"]),
        "--model",
        os.environ["AGENT_EVAL_MODEL"],
        "--skip-git-repo-check",
        "--ephemeral",
        "--color",
        "never",
        "--sandbox",
        "workspace-write",
        "-c",
        'approval_policy="never"',
        *WITHOUT_HOSTED_TOOLS,
        question,
    ]


def main() -> int:
    question = str(read_sample()["question"])
    with tempfile.TemporaryDirectory(prefix="codex-home-") as home:
        env = {**os.environ, "CODEX_HOME": home}
        return subprocess.run(codex_command(question), env=env, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
