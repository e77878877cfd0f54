"""Extensions found by name: built in, by entry point, or as `package.module:attr`.

Agents, backends, rewards, schedulers and policies are each one `Registry`; nothing a name
points to is imported until that name is chosen.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from agent_eval.errors import ConfigError

T = TypeVar("T")


class UnknownNameError(ConfigError, ValueError):
    """A name no registry knows; a ValueError too, so pydantic reports it at its field."""


class Registry(Generic[T]):
    """One kind of extension: built-in names, the entry points of `group`, or a direct spec."""

    def __init__(
        self,
        kind: str,
        group: str,
        built_in: Mapping[str, str],
        own: str = "package.module:Class",
        installs: Mapping[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self.built_in = dict(built_in)
        self.own = own
        self.installs = dict(installs or {})
        """Built-in name -> the command that installs what it imports (agent_eval.installs)."""

    def names(self) -> list[str]:
        """Every name a spec may be: built-ins first, then what installed packages add."""
        added = (point.name for point in entry_points(group=self.group))
        return list(dict.fromkeys([*self.built_in, *added]))

    def check(self, spec: str) -> str:
        """`spec` unchanged if it names something; nothing is imported. Raises: UnknownNameError."""
        self.target(spec)
        return spec

    def target(self, spec: str) -> str:
        """The `package.module:attr` a spec stands for. Raises: UnknownNameError."""
        if spec in self.built_in:
            return self.built_in[spec]
        for point in entry_points(group=self.group, name=spec):
            return point.value
        module_name, _, attr = spec.partition(":")
        if module_name and attr:
            return spec
        known = self.names()
        close = difflib.get_close_matches(spec, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        expected = ", ".join(repr(name) for name in known)
        raise UnknownNameError(
            f"unknown {self.kind} {spec!r}; {hint}expected {expected} or {self.own!r}"
        )

    def load(self, spec: str) -> T:
        """What `spec` names, imported now. Raises: ConfigError saying what to fix or install."""
        module_name, _, attr = self.target(spec).partition(":")
        failed = f"cannot load {self.kind} {spec!r}"
        try:
            target: Any = importlib.import_module(module_name)
        except Exception as exc:  # whatever a module raises on import is for its owner to fix
            raise ConfigError(f"{failed}: {self._import_failure(spec, module_name, exc)}") from exc
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise ConfigError(
                    f"{failed}: module {module_name!r} has no attribute {attr!r}"
                ) from None
        return target

    def _import_failure(self, spec: str, module_name: str, exc: Exception) -> str:
        """Why `module_name` did not import, and what to do about it."""
        failed = f"importing {module_name!r} failed ({type(exc).__name__}: {exc})"
        install = self.installs.get(spec)
        if install:
            return f"{failed}; {install}"
        if isinstance(exc, ModuleNotFoundError) and f"{module_name}.".startswith(f"{exc.name}."):
            return f"module {module_name!r} not found ({exc}); install it or put it on PYTHONPATH"
        return f"{failed}; fix the module or its installation"
