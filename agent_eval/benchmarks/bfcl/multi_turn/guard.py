"""What of a model's answer may reach BFCL's `eval`: calls of backend methods with literal
arguments, and prompt-mode answers whose arithmetic is on plain literals.

BFCL's executor runs each decoded call with `eval` in its own module, and its prompt-mode
decoder `eval`s any binary operation it meets in an argument. On a model's words that is
arbitrary code: a function named `open`, or an argument `__import__('os').system(...) + 1`.
Calls of the backends' methods with literal arguments are all that BFCL's data asks for, so
everything else is refused before it gets there; a refused call runs as a call of a function
that does not exist, which BFCL's executor answers with its own error, and a refused
prompt-mode answer is one BFCL could not decode.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterable
from functools import cache

from agent_eval.benchmarks.bfcl.multi_turn.package import constants

REFUSED_CALL = "unknown_function()"
"""What a refused call runs as: BFCL's executor answers it with a NameError."""

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)


def guarded(calls: Iterable[str], classes: Iterable[str]) -> list[str]:
    """`calls`, each refused one replaced by `REFUSED_CALL`."""
    methods = frozenset().union(*(backend_methods(name) for name in classes))
    return [call if _allowed(call, methods) else REFUSED_CALL for call in calls]


@cache
def backend_methods(class_name: str) -> frozenset[str]:
    """The public methods of one backend class, as BFCL's executor maps calls to them."""
    module_path = constants("executable_backend_config").CLASS_FILE_PATH_MAPPING[class_name]
    module = importlib.import_module(module_path)
    instance = getattr(module, class_name)()
    members = inspect.getmembers(instance, predicate=inspect.ismethod)
    return frozenset(name for name, _ in members if not name.startswith("_"))


def _allowed(call: str, methods: frozenset[str]) -> bool:
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id not in methods or any(k.arg is None for k in node.keywords):
        return False
    return all(_literal(value) for value in [*node.args, *(k.value for k in node.keywords)])


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def safe_prompt_answer(text: str) -> bool:
    """Whether BFCL's prompt-mode decoder may read `text`: every binary operation in it adds,
    subtracts, multiplies or divides literals (no string multiplied), as its data's do."""
    cleaned = text.strip("`\n ")
    cleaned = cleaned if cleaned.startswith("[") else "[" + cleaned
    cleaned = cleaned if cleaned.endswith("]") else cleaned + "]"
    try:
        tree = ast.parse(cleaned.strip().strip("'"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True  # BFCL's decoder fails on it too, before any eval
    return all(_plain_arithmetic(n) for n in ast.walk(tree) if isinstance(n, ast.BinOp))


def _plain_arithmetic(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, str)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub | ast.UAdd) and _plain_arithmetic(node.operand)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC)):
        return False
    if isinstance(node.op, ast.Mult) and _has_text(node):
        return False  # 'a' * 10**12 fills the memory
    return _plain_arithmetic(node.left) and _plain_arithmetic(node.right)


def _has_text(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(node))
