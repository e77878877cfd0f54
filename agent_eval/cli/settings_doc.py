"""docs/configuration.md, generated from the settings models so the page never drifts from them.

`python -m agent_eval.cli.settings_doc > docs/configuration.md`; tests/test_docs.py checks it.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from agent_eval.cli.options import FLAGS
from agent_eval.launch.config import LaunchConfig, ServeConfig
from agent_eval.run.config import EMBEDDED_DEFAULT, RunConfig
from agent_eval.settings import field_of, section_of, value_at
from agent_eval.system.credentials import VARIABLES

# The commands that take settings, and the model each reads them into.
COMMANDS: dict[str, type[BaseModel]] = {
    "run, watch, tune": RunConfig,
    "serve": ServeConfig,
    "workers up": LaunchConfig,
}
FLAG_OF = {flag.key: flag.names for flag in FLAGS.values()}
MIB = 1024**2

INTRO = """\
# Configuration

Generated from the settings models, with
`python -m agent_eval.cli.settings_doc > docs/configuration.md`:
`tests/test_docs.py` fails when this page and the models differ.

Every setting has a dotted key. A command fills its settings in this order, the last one
given winning: the defaults below, a YAML file (`--config`; `run`, `watch` and `tune`), flags
(each a short name for one key: `--seed 3` is `eval.seed=3`), then `key=value` arguments
after the flags, values read as YAML (`3`, `true`, `[a, b]`). An unknown key is refused,
naming the nearest valid one. `configs/` holds a file for each way to run, its command in a
comment ([running](running.md#settings)). The keys a proxy checks or sends are read from
the environment too, so that they stay off the command line:
{variables}.

| command | sections |
|---|---|
{commands}
"""


def reference() -> str:
    """The whole page."""
    variables = ", ".join(f"`proxy.{field}` from `{name}`" for field, name in VARIABLES.items())
    commands = "\n".join(
        f"| `{names}` | {', '.join(f'[{s}](#{s})' for s in model.model_fields)} |"
        for names, model in COMMANDS.items()
    )
    parts = [INTRO.format(variables=variables, commands=commands)]
    parts += _sections(RunConfig, "")
    return "\n".join(parts)


def _sections(model: type[BaseModel], prefix: str) -> list[str]:
    """A heading and a table of leaf settings per section, nested sections after their parent."""
    leaves = {n: f for n, f in model.model_fields.items() if section_of(f.annotation) is None}
    parts = []
    if prefix:
        level = "#" * (prefix.count(".") + 1)
        parts.append(f"{level} {prefix.rstrip('.')}\n\n{_first_line(model.__doc__)}\n")
    if leaves:
        parts.append(_table(prefix, leaves))
    for name, field in model.model_fields.items():
        nested = section_of(field.annotation)
        if nested is not None:
            parts += _sections(nested, f"{prefix}{name}.")
    return parts


def _table(prefix: str, fields: dict[str, FieldInfo]) -> str:
    rows = ["| key | type | default | flag | what it sets |", "|---|---|---|---|---|"]
    for name, field in fields.items():
        key = f"{prefix}{name}"
        cells = [
            f"`{key}`",
            _type_text(field.annotation),
            _default_text(key, field),
            ", ".join(f"`{flag}`" for flag in FLAG_OF.get(key, ())),
            _escaped(field.description or ""),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _default_text(key: str, field: FieldInfo) -> str:
    """The default, and where `serve` or the embedded first run sets another."""
    default = field.get_default(call_default_factory=True)
    text = _value_text(key, default)
    if key.split(".")[0] in ServeConfig.model_fields:
        serve = field_of(ServeConfig, key).get_default(call_default_factory=True)
        if serve != default:
            text += f" (serve: {_value_text(key, serve)})"
    embedded = _embedded(key)
    if embedded is not None:
        text += f"; embedded first run: {_value_text(key, embedded)}"
    return text


def _embedded(key: str) -> Any:
    """The value EMBEDDED_DEFAULT gives this key, if any."""
    return value_at(EMBEDDED_DEFAULT, key)


def _value_text(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, dict):
        return "`{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}`"
    if isinstance(value, list):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    if key.endswith("bytes") and isinstance(value, int) and value % MIB == 0:
        return f"`{value}` ({value // MIB} MiB)"
    return f"`{value}`"


def _type_text(annotation: Any) -> str:
    """A type as a reader of YAML thinks of it: int, path, list of str, one of a / b."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args if a is not type(None))
    if origin is typing.Literal:
        return " / ".join(str(a) for a in args)
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return "mapping"
    names = {Path: "path", SecretStr: "secret"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if doc else ""


def _escaped(text: str) -> str:
    """Text safe in a table cell: no pipe ends it, no <word> reads as HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def main() -> None:
    """Print the page."""
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
