"""The package's layers: every import goes down, and no modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "agent_eval"

# Bottom first. A module may import from its own unit and from units of lower layers only.
LAYERS: list[set[str]] = [
    {"errors"},
    {
        "settings",
        "credentials",
        "registry",
        "allocation",
        "children",
        "lifecycle",
        "diagnostics",
        "failures",
        "usage",
        "seeds",
    },
    {"data", "rewards", "metrics", "agents", "backends", "proxy"},
    {"record", "scoring", "perturb"},
    {"results", "schedulers", "testing", "study_files"},
    {"launch", "engine"},
    {"config"},
    {"serving", "run_parts", "identity"},
    {"shards", "checkpoint_server"},
    {"evaluation"},
    {"trigger", "report", "progress"},
    {"view"},
    {"tune"},
    {"rescore"},
    {"cli"},
    {"__main__"},
]
LAYER = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports when it runs (not those for type checkers only)."""
    found: set[str] = set()

    class Imports(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for statement in node.orelse:
                    self.visit(statement)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            assert node.level == 0, f"{path}: a relative import; write the full module path"
            if node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)

    Imports().visit(ast.parse(path.read_text()))
    return {name for name in found if name in modules} - {module_name(path)}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imported(path, set(paths)) for name, path in paths.items()}


def unit(module: str) -> str:
    """The top-level module or package under agent_eval a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_unit_has_a_layer() -> None:
    units = {unit(module) for module in import_graph()} - {""}
    assert units <= set(LAYER), f"place these in LAYERS: {sorted(units - set(LAYER))}"


def test_imports_only_go_down_the_layers() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if unit(module) and unit(target) and unit(module) != unit(target)
        if LAYER[unit(target)] >= LAYER[unit(module)]
    ]
    assert not upward, "\n".join(sorted(upward))


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = import_graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(" -> ".join(circle) for circle in circles)
