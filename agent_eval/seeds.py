"""What a run's seed fixes, and what may still change its results, on each backend."""

from __future__ import annotations

from dataclasses import dataclass

FIXES = "the samples drawn and each attempt's sampling seed, sent with every model call"
GPU_SUMS = "GPU sums, by the batch a call shares and by prefix-cache hits"
# Per backend: what may still vary as launched by default, then with rollout.reproducible.
MAY_VARY: dict[str, tuple[str, str]] = {
    "llamacpp": (
        "answers, by what the worker read before (its prompt cache) and which worker answers; "
        "--reproducible pins both",
        "nothing on the same llama.cpp build and CPU: one thread per worker, each prompt read "
        "whole, each attempt on the same worker",
    ),
    "sglang": (
        f"{GPU_SUMS} (SGLang's --enable-deterministic-inference pins them)",
        f"{GPU_SUMS} (SGLang's --enable-deterministic-inference pins them); "
        "each attempt stays on one worker",
    ),
    "vllm": (
        f"{GPU_SUMS} (VLLM_BATCH_INVARIANT=1 in the workers' environment pins them)",
        f"{GPU_SUMS} (VLLM_BATCH_INVARIANT=1 in the workers' environment pins them); "
        "each attempt stays on one worker",
    ),
}
SERVERS = (
    "whatever the servers do: they may ignore the seed, batch calls, or spread them over machines",
    "whatever the servers do (each attempt stays on one): they may ignore the seed or batch calls",
)


@dataclass(frozen=True)
class SeedScope:
    """A run's seed, its backend, whether --reproducible pinned the rest, and what that leaves."""

    value: int
    backend: str
    pinned: bool
    fixes: str
    may_vary: str

    def line(self) -> str:
        """One sentence for the printed summary and the report."""
        return f"seed {self.value} fixes {self.fixes}; may vary: {self.may_vary}."


def seed_scope(value: int, backend: str, pinned: bool) -> SeedScope:
    """What seed `value` fixes on `backend` (external servers and plug-ins: what they do)."""
    may_vary = MAY_VARY.get(backend, SERVERS)[pinned]
    return SeedScope(value, backend, pinned, FIXES, may_vary)
