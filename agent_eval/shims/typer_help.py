"""typer's rich help shows a flag as `--debug`, not `--debug <bool>` as if it took a value.

Relies on `typer.core.TyperOption.display_type_rich(self, ctx)`, which typer's rich help
(`typer.rich_utils`) calls for each option's type column. typer builds its options itself,
with no way to give a click option class of one's own, so the method is wrapped, once.
Checked against typer 0.29.2 (click 8.5.1).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption


def show_flags_without_a_value() -> None:
    """Make rich help show no type for flags; calling it again changes nothing."""
    # typer 0.29's rich help prints every option's type, flags included (its plain help does not).
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_without_value", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.flags_without_value = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
