"""Dotted overrides (`worker.seed=3`) applied to a config model, with did-you-mean errors."""

from __future__ import annotations

import difflib
import typing
from typing import Any

import yaml
from pydantic import BaseModel

from agent_eval.errors import ConfigError


def apply_overrides(
    model: type[BaseModel], data: dict[str, Any], overrides: list[str]
) -> dict[str, Any]:
    """A copy of `data` with each `a.b=value` set; values are read as YAML (3, true, [a, b])."""
    result = _deep_copy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not key=value, like worker.seed=3")
        path = key.strip().split(".")
        _check_path(model, path)
        target = result
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = yaml.safe_load(raw) if raw.strip() else None
    return result


def _check_path(model: type[BaseModel], path: list[str]) -> None:
    current: type[BaseModel] | None = model
    for depth, part in enumerate(path):
        fields = current.model_fields if current is not None else {}
        if part not in fields:
            where = ".".join(path[:depth]) or "the top level"
            close = difflib.get_close_matches(part, fields, n=1)
            hint = f"; did you mean {'.'.join([*path[:depth], close[0]])!r}?" if close else ""
            raise ConfigError(f"unknown setting {'.'.join(path)!r} (no {part!r} in {where}){hint}")
        annotation = fields[part].annotation
        if typing.get_origin(annotation) is dict:
            return  # a free-form mapping (e.g. a runner's options) takes any key below it
        current = (
            annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel)
            else None
        )


def _deep_copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in data.items()}
