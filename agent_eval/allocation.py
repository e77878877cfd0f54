"""Allocation strings such as "sglang:d4p1t2": a backend and its parallel sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_eval.errors import ConfigError

SIZE_LETTERS = {"d": "data-parallel workers", "t": "tensor-parallel GPUs", "p": "pipeline stages"}
_SIZE = re.compile(r"([a-zA-Z])(\d+)")


class AllocationError(ConfigError):
    """An allocation string that cannot be read."""


@dataclass(frozen=True)
class Allocation:
    """`dp` workers, each spanning `tp * pp` GPUs."""

    backend: str
    dp: int = 1
    tp: int = 1
    pp: int = 1

    @property
    def gpus_per_worker(self) -> int:
        return self.tp * self.pp

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    def __str__(self) -> str:
        return f"{self.backend}:d{self.dp}t{self.tp}p{self.pp}"

    @classmethod
    def parse(cls, text: str) -> Allocation:
        """Read `backend[:sizes]`; sizes are d, t and p with a count, in any order, each once."""
        backend, sep, sizes = text.strip().partition(":")
        if not sep and not backend.isalpha():
            raise AllocationError(
                f"allocation {text!r}: use ':' between the backend and the sizes, like sglang:d4t1"
            )
        if not backend.isidentifier():
            raise AllocationError(
                f"allocation {text!r}: the backend name {backend!r} is not a name"
            )
        return cls(backend.lower(), **_parse_sizes(text, sizes))


def _parse_sizes(text: str, sizes: str) -> dict[str, int]:
    found: dict[str, int] = {}
    position = 0
    for match in _SIZE.finditer(sizes):
        if match.start() != position:
            break
        letter, count = match.group(1).lower(), int(match.group(2))
        if letter not in SIZE_LETTERS:
            known = ", ".join(f"{k} ({v})" for k, v in SIZE_LETTERS.items())
            raise AllocationError(
                f"allocation {text!r}: unknown size {letter!r}; sizes are {known}"
            )
        if letter in found:
            raise AllocationError(
                f"allocation {text!r}: {letter!r} is given twice; give each size once"
            )
        if count < 1:
            raise AllocationError(
                f"allocation {text!r}: sizes start at 1 ({letter}{count} asks for none)"
            )
        found[letter] = count
        position = match.end()
    if position != len(sizes):
        raise AllocationError(
            f"allocation {text!r}: cannot read {sizes[position:]!r}; "
            "write sizes as a letter and a count, like d4t2p1"
        )
    return {f"{letter}p": count for letter, count in found.items()}
