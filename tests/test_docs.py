"""README and docs/: short, self-contained, and generated where they restate the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig
from agent_eval.cli import app
from agent_eval.launch.config import LaunchConfig, ServeConfig
from agent_eval.proxy.fleet.breaker import CircuitBreaker
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import RequestInfo
from agent_eval.results.schemas import with_section
from agent_eval.run.config import RunConfig

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_FILE = re.compile(r"`([\w./-]+\.(?:md|png|sh|py|yaml|cmake))`")


def test_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_stay_inside_the_repository(page: Path) -> None:
    """Every link and every file a page names is a file of this repository."""
    text = page.read_text()
    links = [t.partition("#") for t in LINK.findall(text) if "://" not in t]
    targets = [(page.parent / path if path else page).resolve() for path, _, _ in links]
    missing = [t for t in targets if not t.is_file()]
    outside = [t for t in targets if REPO not in t.parents]
    anchors = [
        f"{path}#{anchor}"
        for (path, _, anchor), target in zip(links, targets, strict=True)
        if anchor and target.is_file() and anchor not in _anchors(target)
    ]
    named = [n for n in NAMED_FILE.findall(text) if n.startswith("../") or n.endswith(".md")]
    unknown = [n for n in named if not _repository_file(page, n)]
    assert not (missing or outside or anchors or unknown), (missing, outside, anchors, unknown)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def _repository_file(page: Path, name: str) -> bool:
    candidates = [(page.parent / name).resolve(), (REPO / name).resolve()]
    return any(REPO in c.parents and c.is_file() for c in candidates)


def test_readme_gives_each_command_a_line_and_a_page() -> None:
    # By attribute: typer vendors its own click, whose Group is not click's.
    top: dict[str, Any] = getattr(typer.main.get_command(app), "commands", {})
    commands = [
        f"{name} {sub}".strip()
        for name, command in top.items()
        for sub in getattr(command, "commands", None) or [""]
    ]
    assert "run" in commands and "workers up" in commands
    items = re.split(r"\n(?=- )|\n\n", README.read_text())
    for command in commands:
        item = next((x for x in items if x.startswith(f"- `agent-eval {command}")), None)
        assert item is not None, f"README.md has no item for agent-eval {command}"
        assert "](docs/" in item, f"README.md's item for {command} links no page of docs/"


def test_readme_commands_are_short_and_use_the_install_script() -> None:
    """The two commands a newcomer copies: the first run, and the tests `.ci/run` runs."""
    text = README.read_text()
    first = re.search(r"```bash\n(.+?)\n```", text, re.DOTALL)
    tests = re.search(r"<!-- test-command -->\n```bash\n(.+?)\n```\n<!-- /test-command -->", text)
    assert first is not None and tests is not None
    for command in (first.group(1), tests.group(1)):
        assert "\n" not in command and len(command) <= 100, command
        assert command.startswith("bash scripts/install.sh "), command


def test_install_script_builds_llama_cpp_portably(tmp_path: Path) -> None:
    """scripts/install.sh makes .venv and installs the extras with the portable build flags,
    then BFCL's package without its dependencies."""
    (tmp_path / "scripts").mkdir()
    for name in ("install.sh", "llama-cpp-no-common.cmake"):
        (tmp_path / "scripts" / name).write_bytes((REPO / "scripts" / name).read_bytes())
    fake = tmp_path / "bin"
    fake.mkdir()
    # A python3 whose venv's pip writes down how it was called, instead of installing.
    (fake / "pip").write_text(
        '#!/bin/sh\nprintf "%s\\n" "$PWD" "$*" "$CMAKE_ARGS" >> "$0.called"\n'
    )
    (fake / "python3").write_text(
        f'#!/bin/sh\n[ "$*" = "-m venv .venv" ] && mkdir -p .venv/bin && cp {fake}/pip .venv/bin/\n'
    )
    for program in ("pip", "python3"):
        (fake / program).chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    env.pop("CMAKE_ARGS", None)
    subprocess.run(["bash", "scripts/install.sh", "test"], cwd=tmp_path, env=env, check=True)
    called = (tmp_path / ".venv/bin/pip.called").read_text().splitlines()
    (where, args, cmake), bfcl = called[:3], called[3:]
    assert (where, args) == (str(tmp_path), "install -e .[test]")
    assert bfcl[1] == "install --no-deps bfcl-eval==2026.3.23"
    assert "-DGGML_NATIVE=OFF" in cmake.split()  # no AMX or AVX-512 the sandbox may refuse
    include = cmake.split("-DCMAKE_PROJECT_llama.cpp_INCLUDE=")[1].split()[0]
    assert Path(include) == tmp_path / "scripts" / "llama-cpp-no-common.cmake"


def _leaves(model: type[BaseModel], prefix: str = "") -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found += _leaves(annotation, f"{prefix}{name}.")
        else:
            found.append((f"{prefix}{name}", field.description))
    return found


@pytest.mark.parametrize("model", [RunConfig, ServeConfig, LaunchConfig])
def test_every_setting_says_what_it_does(model: type[BaseModel]) -> None:
    undocumented = [key for key, description in _leaves(model) if not description]
    assert not undocumented, f"give these settings a description: {undocumented}"


def test_configuration_page_is_generated_from_the_settings() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "agent_eval.cli.settings_doc"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    page = REPO / "docs" / "configuration.md"
    assert page.is_file() and page.read_text() == generated, (
        "docs/configuration.md is out of date: "
        "python -m agent_eval.cli.settings_doc > docs/configuration.md"
    )
    for key, _ in _leaves(RunConfig):
        assert f"`{key}`" in generated, key


def _examples(page: str) -> dict[str, Any]:
    """What the Python examples of docs/`page` define, each run as written."""
    namespace: dict[str, Any] = {}
    for block in (REPO / "docs" / page).read_text().split("```python")[1:]:
        exec(compile(block.split("```")[0], page, "exec"), namespace)
    return namespace


def test_extending_page_examples_work() -> None:
    """The reward, backend and policy of docs/extending.md do what the page says."""
    examples = _examples("extending.md")
    assert examples["last_line"]("Let me add.\n42", "42") is True
    assert examples["last_line"]("", "42") is False
    command = examples["LlamaServer"]().command(
        WorkerConfig(model="m.gguf", extra_args=["-c", "4096"]),
        Allocation.parse("llama_server:d2"),
        "127.0.0.1",
        20001,
    )
    assert command.argv == [
        "llama-server", "-m", "m.gguf", "--host", "127.0.0.1", "--port", "20001", "-c", "4096"
    ]  # fmt: skip
    workers = [Worker(f"http://w{i}", "/health", CircuitBreaker(5, 10.0)) for i in range(3)]
    workers[0].served, workers[1].served, workers[2].served = 4, 1, 2
    least_served = examples["LeastServed"]
    policy = least_served.from_settings(least_served.settings_model())
    assert policy.choose(workers, RequestInfo("/v1/chat/completions")) is workers[1]
    assert policy.choose([], RequestInfo("/v1/chat/completions")) is None


def test_results_page_shows_the_schemas_generated_from_the_models() -> None:
    page = (REPO / "docs" / "results.md").read_text()
    assert page == with_section(page), (
        "docs/results.md's JSON Schemas are out of date: "
        "python -m agent_eval.results.schemas docs/results.md"
    )
