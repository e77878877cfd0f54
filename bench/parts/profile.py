"""Reading a cProfile of the harness: own time charged to its parts (SDK, openai, pydantic...)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.parts import ROOT

TOP = 15
SMALL = 0.005  # parts of the profile below this share are summed on one line
Func = tuple[str, int, str]  # a profiled function: file, line, name

HTTP = "HTTP client (httpx2, httpcore2, h11, anyio)"
LOOP = "event loop, sockets, threads"
# A profiled function's package -> the part of the harness it belongs to.
PACKAGES = {
    "agents": "Agents SDK",
    "openai": "openai client",
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "typing_inspection": "pydantic",
    "griffe": "Agents SDK",  # parses tool docstrings
    **dict.fromkeys(("httpx2", "httpcore2", "h11", "anyio", "sniffio", "certifi"), HTTP),
    **dict.fromkeys(("asyncio", "uvloop", "selectors", "socket", "ssl", "threading"), LOOP),
    **dict.fromkeys(("concurrent", "multiprocessing", "pickle", "queue"), "scoring (client side)"),
}
AGENT_EVAL = {"agents": "agent_eval runners", "rewards": "scoring (client side)"}
# General-purpose code whose own time is charged to whoever called it: C builtins, typing,
# copy, json... so that, say, pydantic's use of typing counts as pydantic.
HELPERS = {
    "typing", "typing_extensions", "copy", "inspect", "dataclasses", "functools", "abc",
    "enum", "re", "contextlib", "weakref", "_weakrefset", "logging", "json", "importlib",
    "collections", "types", "string", "traceback", "linecache", "tokenize", "ast", "warnings",
}  # fmt: skip


def owner(path: str) -> str | None:
    """The harness part code at `path` belongs to; None for a helper charged to its callers."""
    if path == "~" or path.startswith("<"):
        return None  # a C builtin, or code made at run time (dataclass __init__, frozen imports)
    if Path(path).is_relative_to(ROOT / "bench"):
        return "the bench itself"
    if "/agent_eval/" in path:
        return AGENT_EVAL.get(path.split("/agent_eval/")[1].split("/")[0], "agent_eval engine")
    top = (path.split("/site-packages/")[1] if "/site-packages/" in path else "").split("/")[0]
    if not top:  # the standard library: the module right under lib/python3.X
        top = path.split("/lib/python3")[-1].split("/")[1] if "/lib/python3" in path else ""
    top = top.removesuffix(".py")
    if top in HELPERS:
        return None
    return PACKAGES.get(top, f"other: {top or path}")


class Attribution:
    """Charges the own time of every profiled function to a harness part."""

    def __init__(self, entries: dict[Func, Any]) -> None:
        self.entries = entries
        self._memo: dict[Func, dict[str, float]] = {}

    def parts(self, func: Func, seen: frozenset[Func] = frozenset()) -> dict[str, float]:
        """Fractions by part: the function's own part, or its callers' split by time via each."""
        if (part := owner(func[0])) is not None:
            return {part: 1.0}
        if func in self._memo:
            return self._memo[func]
        callers = {c: t for c, t in self.entries[func][4].items() if c not in seen}
        weight = sum(t[3] for t in callers.values())
        fractions: defaultdict[str, float] = defaultdict(float)
        for caller, times in callers.items():
            via = times[3] / weight if weight else 1 / len(callers)
            for part, share in self.parts(caller, seen | {func}).items():
                fractions[part] += share * via
        result = dict(fractions) or {"unattributed builtins and helpers": 1.0}
        if not seen:
            self._memo[func] = result  # partial answers inside a cycle are not kept
        return result

    def totals(self) -> dict[str, float]:
        """Own time summed by part, largest first."""
        totals: defaultdict[str, float] = defaultdict(float)
        for func, entry in self.entries.items():
            for part, share in self.parts(func).items():
                totals[part] += entry[2] * share
        return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def label(func: Func) -> str:
    """`name (package/file.py:line)`, short enough for one line."""
    path, line, name = func
    if path == "~":
        return name
    short = "/".join(Path(path).parts[-2:])
    return f"{name} ({short}:{line})"


def top_cumulative(entries: dict[Func, Any]) -> list[tuple[Func, Any]]:
    """The top functions by cumulative time, skipping wrappers within 5% of the one above."""
    shown: list[tuple[Func, Any]] = []
    for func, entry in sorted(entries.items(), key=lambda kv: -kv[1][3]):
        if len(shown) == TOP:
            break
        if not shown or entry[3] < 0.95 * shown[-1][1][3]:
            shown.append((func, entry))
    return shown


def shares(profile: Any) -> dict[str, float]:
    """Own time by harness part, as shares of the whole, largest first."""
    entries: dict[Func, Any] = profile.stats
    total = sum(entry[2] for entry in entries.values())
    return {part: own / total for part, own in Attribution(entries).totals().items()}


def print_profile(runner: str, profile: Any) -> None:
    """Own time by harness part, then the top functions by own and by cumulative time."""
    entries: dict[Func, Any] = profile.stats
    total = sum(entry[2] for entry in entries.values())
    print(f"\n{runner} profile: {total:.1f} s wall clock on the event loop thread, by part")
    parts = shares(profile)
    small = [part for part, share in parts.items() if share < SMALL]
    for part, share in parts.items():
        if part not in small:
            print(f"  {100 * share:5.1f}%  {part}")
    rest = sum(parts[part] for part in small)
    print(f"  {100 * rest:5.1f}%  {len(small)} more parts under {100 * SMALL:g}% each")
    top_own = sorted(entries.items(), key=lambda kv: -kv[1][2])[:TOP]
    for title, key, top in (("own", 2, top_own), ("cumulative", 3, top_cumulative(entries))):
        print(f"  top {len(top)} by {title} time:")
        for func, entry in top:
            print(f"    {100 * entry[key] / total:5.1f}%  {entry[1]:>9,} calls  {label(func)}")
