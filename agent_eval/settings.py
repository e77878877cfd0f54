"""Settings as pydantic sections, filled in order: defaults, a YAML file, flags, `a.b=value`.

Every command (`run`, `watch`, `serve`, `workers up`) loads its settings through
`load_settings`, so they take the same dotted keys and give the same errors.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from agent_eval.errors import ConfigError

S = TypeVar("S", bound=BaseModel)


class Section(BaseModel):
    """A group of settings; an unknown key is an error, never ignored."""

    model_config = ConfigDict(extra="forbid")


def load_settings(
    model: type[S],
    path: Path | None,
    flags: dict[str, Any],
    overrides: list[str],
    preset: dict[str, Any] | None = None,
) -> S:
    """Defaults, a preset's, the YAML file, flags (dotted keys, None: not given), overrides."""
    data = merged(preset or {}, read_yaml(path) if path is not None else {})
    for key, value in flags.items():
        if value is not None:
            _set(data, key.split("."), value)
    return validated(model, apply_overrides(model, data, overrides), path)


def validated(model: type[S], data: dict[str, Any], path: Path | None = None) -> S:
    """`data` as `model`; each problem named by key (and by `path`, the file it came from)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(model, exc, path)) from None


def apply_overrides(
    model: type[BaseModel], data: dict[str, Any], overrides: list[str]
) -> dict[str, Any]:
    """A copy of `data` with each `a.b=value` set; values are read as YAML (3, true, [a, b])."""
    values = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"setting {item!r} is not key=value, like eval.seed=3")
        values[key.strip()] = yaml.safe_load(raw) if raw.strip() else None
    return with_values(model, data, values)


def with_values(
    model: type[BaseModel], data: dict[str, Any], values: dict[str, Any]
) -> dict[str, Any]:
    """A copy of `data` with each dotted key of `values` set to its value; keys are checked."""
    result = _deep_copy(data)
    for key, value in values.items():
        check_key(model, key)
        _set(result, key.split("."), value)
    return result


def field_of(model: type[BaseModel], key: str) -> Any:
    """The pydantic field a dotted key names in `model` (its description, its default)."""
    path = key.split(".")
    check_key(model, key)
    current: Any = model
    for part in path[:-1]:
        current = current.model_fields[part].annotation
    return current.model_fields[path[-1]]


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file of settings; a missing or malformed file is a ConfigError naming it."""
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist; check the path") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {data!r}")
    return data


def check_key(model: type[BaseModel], key: str) -> None:
    """Refuse a dotted key `model` has no setting for, naming the nearest one there is."""
    path = key.split(".")
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
        current = section_of(annotation)


def section_of(annotation: Any) -> type[BaseModel] | None:
    """The section a field's annotation is, or None for a plain value."""
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def value_at(data: Mapping[str, Any], key: str) -> Any:
    """What nested mappings hold at a dotted key, or None where the path leads nowhere."""
    found: Any = data
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def renamed_keys(data: Any, old_names: Mapping[str, str]) -> Any:
    """A section's raw data with keys under their old names moved to the new ones.

    Files written before a rename (a run's config.yaml, which `--resume` reads) still load; a
    new key given beside its old one wins.
    """
    if not isinstance(data, dict):
        return data
    kept = {key: value for key, value in data.items() if key not in old_names}
    old = {old_names[key]: value for key, value in data.items() if key not in kept}
    return {**old, **kept}


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {})
    data[path[-1]] = value


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on it, mapping by mapping."""
    result = _deep_copy(base)
    for key, value in over.items():
        below = result.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            value = merged(below, value)
        result[key] = value
    return result


def _deep_copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in data.items()}


def _explain(model: type[BaseModel], exc: ValidationError, path: Path | None) -> str:
    """One part per problem, naming the key and, for an unknown key, the nearest valid one."""
    problems = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            # Flags and overrides are checked as they are set: only a file brings unknown keys.
            problems.append(f"unknown setting {key!r} in {path}{_nearest(model, error['loc'])}")
        else:
            problems.append(f"{key}: {validation_message(error)} (got {error['input']!r})")
    return "; ".join(problems)


def validation_message(error: Any) -> str:
    """A pydantic error's message, without the `Value error, ` our own validators' get."""
    return str(error["msg"]).removeprefix("Value error, ")


def _nearest(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        field = current.model_fields.get(str(part)) if current is not None else None
        current = section_of(field.annotation) if field is not None else None
    if current is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), current.model_fields, n=1)
    prefix = ".".join(str(part) for part in loc[:-1])
    return f"; did you mean {'.'.join(filter(None, [prefix, close[0]]))!r}?" if close else ""
