"""The package's layers: every import goes down, and no modules import each other in a circle."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "agent_eval"

# Bottom first. A module may import from its own unit (a top-level module or package of
# agent_eval) and from units of lower layers only.
LAYERS: list[set[str]] = [
    {"errors", "shims"},
    {"settings", "registry", "installs", "allocation", "failures", "usage", "seeds"}
    | {"system", "wire"},
    {"data", "rewards"},
    {"agents", "backends", "proxy"},
    {"perturb", "launch", "metrics", "benchmarks"},
    {"results", "schedulers", "testing"},
    {"run"},
    {"trigger", "progress"},
    {"tune"},
    {"report"},
    {"view"},
    {"rescore"},
    {"cli"},
    {"__main__"},
]
LAYER = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports, for type checkers only (TYPE_CHECKING) too: a
    type-only import ties two modules together as much as any other."""
    found: set[str] = set()

    class Imports(ast.NodeVisitor):
        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            assert node.level == 0, f"{path}: a relative import; write the full module path"
            if node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)

    Imports().visit(ast.parse(path.read_text()))
    return {name for name in found if name in modules} - {module_name(path)}


@cache  # three tests read it; parsing the package once is a second or two
def import_graph() -> dict[str, frozenset[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: frozenset(imported(path, set(paths))) for name, path in paths.items()}


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


# Names a library spells with an underscore yet documents as public (namedtuple's methods,
# os._exit).
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make", "_exit"}
DOTTED = re.compile(r"[a-z_]\w*(\.\w+)+")


def private(name: str) -> bool:
    """A dotted name with a part that is private by convention (`_x`, not `__x__`)."""
    return any(part.startswith("_") and not part.endswith("__") for part in name.split("."))


def own_names(tree: ast.Module) -> set[str]:
    """The names a module defines itself: functions, classes, attributes and names it assigns."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def library_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing from a library (not from agent_eval)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("agent_eval"):
            names.update(alias.asname or alias.name for alias in node.names)
    return names - {"agent_eval"}


def reach(node: ast.AST, own: set[str], libraries: set[str]) -> str | None:
    """What `node` does inside a library, if anything: imports a private name, reads an
    attribute private to neither the module nor any namedtuple, patches a library's object."""
    if isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("agent_eval"):
        names = [f"{node.module}.{alias.name}" for alias in node.names]
        return next((f"imports {name}" for name in names if private(name)), None)
    if not isinstance(node, ast.Attribute):
        return None
    stored = isinstance(node.ctx, ast.Store)
    if node.attr == "__class__" and stored:
        return "swaps an object's class"
    if stored and isinstance(node.value, ast.Name) and node.value.id in libraries:
        return f"patches {node.value.id}.{node.attr}"
    if private(node.attr) and node.attr not in own | PUBLIC_UNDERSCORED:
        return f"reads {ast.unparse(node)}"
    return None


def names_a_private_module(node: ast.AST) -> str | None:
    """A string, such as a logger's name, that is a dotted module path with a private part."""
    text = node.value if isinstance(node, ast.Constant) else None
    if isinstance(text, str) and DOTTED.fullmatch(text) and private(text):
        return f"names the module {text}"
    return None


def reaches(path: Path) -> list[str]:
    """Where a module reaches inside a library, one line each."""
    tree = ast.parse(path.read_text())
    own, libraries = own_names(tree), library_names(tree)
    return [
        f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}: {what}"
        for node in ast.walk(tree)
        if (what := reach(node, own, libraries) or names_a_private_module(node))
    ]


def test_only_shims_reach_into_libraries() -> None:
    """A library's private parts and patches of its objects live in agent_eval/shims, where a
    test pins each; anywhere else they would break silently on an upgrade."""
    shims = PACKAGE / "shims"
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if shims not in path.parents
        for line in reaches(path)
    ]
    assert not found, "\n".join(found)
