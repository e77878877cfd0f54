"""The view's ES modules joined into one classic script: a page opened from file:// may load
scripts but not modules (Chromium refuses their imports there, origin null)."""

from __future__ import annotations

import re
from pathlib import Path

from agent_eval.errors import AgentEvalError

IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"\./([\w.-]+\.js)";[ \t]*$', re.M)
EXPORT = re.compile(r"^export\s+((?:async\s+)?function\*?|const|let|class)\s+(\w+)", re.M)
LEFT = re.compile(r"^\s*(import|export)\b", re.M)


class BundleError(AgentEvalError):
    """A module the bundler cannot join: an import or export form it does not know, a cycle."""


def bundle(folder: Path, entry: str) -> str:
    """`entry` and the modules it imports (from `folder`), each in a function of its own run
    after those it imports, as one script."""
    order: list[str] = []
    _visit(folder, entry, order, [])
    wrapped = [f"modules[{name!r}] = (() => {{\n{_module(folder, name)}\n}})();" for name in order]
    return "(() => {\n'use strict';\nconst modules = {};\n" + "\n".join(wrapped) + "\n})();\n"


def _visit(folder: Path, name: str, order: list[str], path: list[str]) -> None:
    """Depth first: a module's imports go into `order` before it."""
    if name in order:
        return
    if name in path:
        raise BundleError(f"modules import each other: {' -> '.join([*path, name])}")
    for _names, imported in IMPORT.findall(_source(folder, name)):
        _visit(folder, imported, order, [*path, name])
    order.append(name)


def _source(folder: Path, name: str) -> str:
    try:
        return (folder / name).read_text()
    except FileNotFoundError:
        raise BundleError(f"no module {name!r} in {folder}") from None


def _module(folder: Path, name: str) -> str:
    """The module's body: imports read from `modules`, exports returned at its end."""
    source = IMPORT.sub(_imported, _source(folder, name))
    exported = EXPORT.findall(source)
    source = EXPORT.sub(r"\1 \2", source)
    if found := LEFT.search(source):
        line = source.count("\n", 0, found.start()) + 1
        raise BundleError(f"{name} line {line}: an import or export this bundler cannot join")
    return f"{source}\nreturn {{ {', '.join(n for _kind, n in exported)} }};"


def _imported(match: re.Match[str]) -> str:
    names = [part.strip() for part in match.group(1).split(",") if part.strip()]
    bound = [": ".join(n.split(" as ")) if " as " in n else n for n in names]
    return f"const {{ {', '.join(bound)} }} = modules[{match.group(2)!r}];"
