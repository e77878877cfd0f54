"""Commands imported when they run: `agent-eval ctl` need not import the engine, nor `run`
the report's pages (each command module imports the packages it works with, which takes
seconds on a busy machine, paid by every start)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup


def lazy_group(commands: dict[str, str]) -> type[TyperGroup]:
    """A typer group class whose commands, `name: "module:attribute"`, are each imported on
    first use: a command function, or a `typer.Typer` of subcommands."""

    class LazyGroup(TyperGroup):
        def __init__(self, **settings: Any) -> None:
            super().__init__(**settings)
            self.commands = LazyCommands(commands)

    return LazyGroup


class LazyCommands(MutableMapping[str, Any]):
    """Command name to its click command, built from its module at the first lookup (typed
    Any: typer's click is a private copy of its own, whose Command has no public name)."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = dict(paths)
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            self._built[name] = _command(name, self._paths[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._paths.setdefault(name, "")
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._paths[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _command(name: str, path: str) -> Any:
    module, _, attribute = path.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if isinstance(found, typer.Typer):
        return typer.main.get_group(found)
    single = typer.Typer(add_completion=False)
    single.command(name)(found)
    return typer.main.get_command(single)
