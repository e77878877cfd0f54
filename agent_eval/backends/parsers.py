"""The tool-call and reasoning parser names each server accepts, and their equivalents.

SGLang and vLLM call the same output format by different names (SGLang `qwen25` is vLLM
`hermes`); a name one accepts makes the other crash at start-up, so names are checked and
translated here, before anything starts. The lists are copied from the servers' sources:

- SGLang 0.5.23: `sglang/srt/function_call/parser_names.py` (TOOL_CALL_PARSER_NAMES),
  `sglang/srt/parser/reasoning_parser_names.py` (REASONING_PARSER_NAMES), and `auto`
  from the `--tool-call-parser` / `--reasoning-parser` choices in `sglang/srt/server_args.py`.
- vLLM 0.33.0: `vllm/tool_parsers/__init__.py` (_TOOL_PARSERS_TO_REGISTER),
  `vllm/reasoning/__init__.py` (_REASONING_PARSERS_TO_REGISTER).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agent_eval.errors import ConfigError

ParserKind = Literal["tool_call_parser", "reasoning_parser"]


@dataclass(frozen=True)
class Format:
    """One output format under a backend-neutral name and each server's name for it."""

    neutral: str
    names: dict[str, str]
    aliases: tuple[str, ...] = ()
    """Other names servers give the same format."""

    def known_as(self, name: str) -> bool:
        """Whether `name` means this format on some server, or is its neutral name."""
        return name == self.neutral or name in self.aliases or name in self.names.values()


@dataclass(frozen=True)
class ServerParsers:
    """The parser names one server version accepts, per kind of parser."""

    server: str
    version: str
    names: dict[ParserKind, frozenset[str]]
    plugin_flags: dict[ParserKind, str] = field(default_factory=dict)
    """Flags that register more parsers; with one in extra_args any name may be right."""

    def resolve(self, kind: ParserKind, name: str | None, extra_args: list[str]) -> str | None:
        """`name` as this server spells it; ConfigError if it has no such parser."""
        if name is None or name in self.names[kind]:
            return name
        for fmt in FORMATS[kind]:
            if fmt.known_as(name) and self.server in fmt.names:
                return fmt.names[self.server]
        if self._has_plugin(kind, extra_args):
            return name
        raise ConfigError(self._unknown(kind, name))

    def _has_plugin(self, kind: ParserKind, extra_args: list[str]) -> bool:
        flag = self.plugin_flags.get(kind)
        return flag is not None and any(a == flag or a.startswith(f"{flag}=") for a in extra_args)

    def _unknown(self, kind: ParserKind, name: str) -> str:
        neutral = sorted(f.neutral for f in FORMATS[kind] if self.server in f.names)
        return (
            f"rollout.worker.{kind}={name!r} is not a parser {self.server} {self.version} knows: "
            f"use one of {', '.join(sorted(self.names[kind]))} "
            f"(or a neutral name: {', '.join(neutral)})"
        )


# Same format, different names: checked against each server's parser classes.
FORMATS: dict[ParserKind, tuple[Format, ...]] = {
    "tool_call_parser": (
        Format("qwen25", {"sglang": "qwen25", "vllm": "hermes"}, aliases=("qwen", "qwen3_json")),
        Format("llama3", {"sglang": "llama3", "vllm": "llama3_json"}),
        Format("deepseek-v3", {"sglang": "deepseekv3", "vllm": "deepseek_v3"}),
        Format("deepseek-v31", {"sglang": "deepseekv31", "vllm": "deepseek_v31"}),
        Format("deepseek-v32", {"sglang": "deepseekv32", "vllm": "deepseek_v32"}),
        Format("deepseek-v4", {"sglang": "deepseekv4", "vllm": "deepseek_v4"}),
        Format("deepseek-v41", {"sglang": "deepseekv41", "vllm": "deepseek_v41"}),
        Format("gpt-oss", {"sglang": "gpt-oss", "vllm": "openai"}),
        Format("minimax-m2", {"sglang": "minimax-m2", "vllm": "minimax_m2"}),
        Format("minimax-m3", {"sglang": "minimax-m3", "vllm": "minimax_m3"}),
    ),
    "reasoning_parser": (
        Format("deepseek-r1", {"sglang": "deepseek-r1", "vllm": "deepseek_r1"}),
        Format("deepseek-v3", {"sglang": "deepseek-v3", "vllm": "deepseek_v3"}),
        Format("deepseek-v4", {"sglang": "deepseek-v4", "vllm": "deepseek_v4"}),
        Format("deepseek-v41", {"sglang": "deepseek-v41", "vllm": "deepseek_v41"}),
        Format("gpt-oss", {"sglang": "gpt-oss", "vllm": "openai_gptoss"}),
        Format("minimax-m2", {"sglang": "minimax", "vllm": "minimax_m2"}),
        Format(
            "minimax-m2-append-think",
            {"sglang": "minimax-append-think", "vllm": "minimax_m2_append_think"},
        ),
        Format("minimax-m3", {"sglang": "minimax-m3", "vllm": "minimax_m3"}),
        Format("nemotron-3", {"sglang": "nemotron_3", "vllm": "nemotron_v3"}),
    ),
}

SGLANG_PARSERS = ServerParsers(
    "sglang",
    "0.5.23",
    {
        "tool_call_parser": frozenset({
            "auto", "apertus2509", "beam", "cohere_command4", "deepseekv3", "deepseekv31",
            "deepseekv32", "deepseekv4", "deepseekv41", "dots", "glm", "glm45", "glm47",
            "gpt-oss", "k2_horizon", "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3", "mimo",
            "minicpm5", "mistral", "muse", "poolside_v1", "pythonic", "qwen", "qwen25",
            "qwen3_coder", "spark25", "step3", "step3p5", "minimax-m2", "minimax-m3",
            "nanbeige", "trinity", "interns1", "hermes", "hunyuan", "gigachat3", "gigachat35",
            "gemma4", "inkling", "iquest_q1", "response_template",
        }),
        "reasoning_parser": frozenset({
            "auto", "apertus2509", "beam", "deepseek-r1", "deepseek-v3", "deepseek-v4",
            "deepseek-v41", "dots", "glm45", "ling3", "hunyuan", "gpt-oss", "k2_horizon", "kimi",
            "kimi_k2", "kimi_k3", "mimo", "muse", "poolside_v1", "qwen3", "qwen3-thinking",
            "minimax", "minimax-append-think", "minimax-m3", "nanbeige", "step3", "step3p5",
            "mistral", "nemotron_3", "granite_thinking_parser", "interns1", "gemma4", "inkling",
            "iquest_q1", "cohere_command4", "gigachat35", "response_template",
        }),
    },
)  # fmt: skip

VLLM_PARSERS = ServerParsers(
    "vllm",
    "0.33.0",
    {
        "tool_call_parser": frozenset({
            "dots", "deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "deepseek_v41",
            "cohere_command3", "cohere_command4", "ernie45", "glm45", "glm47", "ling3",
            "granite-20b-fc", "granite", "granite4", "hermes", "hf", "beam", "poolside_v1",
            "hunyuan_a13b", "hy_v3", "hy_v4", "internlm", "jamba", "lfm2", "kimi_k2", "kimi_k3",
            "k2_horizon", "llama3_json", "llama4_json", "llama4_pythonic", "longcat", "mimo",
            "minimax_m2", "minimax_m3", "minicpm5", "mistral", "olmo3", "plamo3", "muse",
            "muse_glimmer", "musespark1x", "openai", "phi4_mini_json", "pythonic", "qwen3_coder",
            "qwen3_json", "qwen3_xml", "seed_oss", "step3", "step3p5", "step5", "inkling", "xlam",
            "gigachat3", "functiongemma", "gemma4", "apertus",
        }),
        "reasoning_parser": frozenset({
            "deepseek_r1", "deepseek_v3", "deepseek_v4", "deepseek_v41", "poolside_v1",
            "cohere_command3", "cohere_command4", "ernie45", "gemma4", "glm45", "glm47", "ling3",
            "openai_gptoss", "granite", "granite_thinking_parser", "hf", "beam", "holo2",
            "hunyuan_a13b", "hy_v3", "hy_v4", "kimi_k2", "kimi_k3", "k2_horizon", "mimo",
            "minicpmv", "minimax_m2", "minimax_m2_append_think", "minimax_m3", "mistral",
            "nemotron_v3", "olmo3", "plamo3", "muse", "muse_glimmer", "musespark1x", "qwen3",
            "seed_oss", "step3", "step3p5", "step5", "inkling",
        }),
    },
    plugin_flags={
        "tool_call_parser": "--tool-parser-plugin",
        "reasoning_parser": "--reasoning-parser-plugin",
    },
)  # fmt: skip
