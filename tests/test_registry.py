"""One registry for every kind of extension: built in, by entry point, or `package.module:attr`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_eval.agents import RunContext, load_runner
from agent_eval.backends import Backend, get_backend
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import Policy, RequestInfo, build_policy
from agent_eval.registry import Registry, UnknownNameError
from agent_eval.rewards import load_reward
from agent_eval.run.workers import build_scheduler
from agent_eval.schedulers.local import LocalScheduler

# --- a third party's extensions, one of each kind ------------------------------------------


class MyRunner:
    async def run(self, sample: object, ctx: RunContext) -> object:
        return sample


class MyBackend(Backend):
    name = "mine"


def my_reward(prediction: str, gold: str) -> bool:
    return prediction == gold


class MyScheduler(LocalScheduler):
    name = "mine"


class MyPolicy(Policy):
    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        return workers[0] if workers else None


KINDS: dict[str, tuple[str, Callable[[str, Path], Any], Any]] = {
    "agents": ("MyRunner", lambda spec, _: type(load_runner(spec)), MyRunner),
    "backends": ("MyBackend", lambda spec, _: type(get_backend(spec)), MyBackend),
    "rewards": ("my_reward", lambda spec, _: load_reward(spec), my_reward),
    "schedulers": (
        "MyScheduler",
        lambda spec, run_dir: type(
            build_scheduler(LaunchConfig.model_validate({"scheduler": {"type": spec}}), run_dir)
        ),
        MyScheduler,
    ),
    "policies": (
        "MyPolicy",
        lambda spec, _: type(build_policy(spec)),
        MyPolicy,
    ),
}


def install(root: Path, entry_points: str) -> None:
    """Put a distribution with these entry points on sys.path, as `pip install` would."""
    info = root / "agent_eval_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-eval-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package adding one extension of each kind, all called `mine`."""
    install(
        tmp_path / "site",
        "".join(
            f"[agent_eval.{kind}]\nmine = tests.test_registry:{attr}\n"
            for kind, (attr, _, _) in KINDS.items()
        ),
    )
    monkeypatch.syspath_prepend(tmp_path / "site")


@pytest.mark.parametrize("kind", KINDS)
def test_a_third_party_adds_each_kind_by_entry_point(
    kind: str, plugin: None, tmp_path: Path
) -> None:
    _, build, expected = KINDS[kind]
    assert build("mine", tmp_path) is expected


@pytest.mark.parametrize("kind", KINDS)
def test_a_third_party_adds_each_kind_by_module_path(kind: str, tmp_path: Path) -> None:
    attr, build, expected = KINDS[kind]
    assert build(f"tests.test_registry:{attr}", tmp_path) is expected


# --- the registry itself --------------------------------------------------------------------


@pytest.fixture
def lazy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module on sys.path, not imported yet, whose import needs a package that is missing."""
    (tmp_path / "lazy_thing.py").write_text("VALUE = 42\n")
    (tmp_path / "needs_extra.py").write_text("import no_such_package_anywhere\n")
    monkeypatch.syspath_prepend(tmp_path)
    yield "lazy_thing"
    for name in ("lazy_thing", "needs_extra"):
        sys.modules.pop(name, None)


def things() -> Registry[Any]:
    return Registry(
        "thing",
        "agent_eval.things",
        {
            "lazy": "lazy_thing:VALUE",
            "optional": "needs_extra:VALUE",
            "nested": "json:JSONDecoder.decode",
        },
        installs={"optional": "pip install 'agent-eval[extra]'"},
    )


def test_a_built_in_is_imported_only_when_loaded(lazy_module: str) -> None:
    registry = things()
    assert registry.check("lazy") == "lazy"
    assert lazy_module not in sys.modules
    assert registry.load("lazy") == 42
    assert registry.load("nested").__qualname__ == "JSONDecoder.decode"


def test_a_spec_names_its_target_directly(lazy_module: str) -> None:
    assert things().load("lazy_thing:VALUE") == 42


def test_an_entry_point_adds_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(tmp_path, "[agent_eval.things]\ntheirs = json:dumps\n")
    monkeypatch.syspath_prepend(tmp_path)
    registry = things()
    assert registry.load("theirs") is json.dumps
    assert registry.names() == ["lazy", "optional", "nested", "theirs"]


def test_an_unknown_name_gets_the_nearest_and_every_known_one() -> None:
    with pytest.raises(UnknownNameError) as caught:
        things().check("lazzy")
    assert str(caught.value) == (
        "unknown thing 'lazzy'; did you mean 'lazy'? expected 'lazy', 'optional', 'nested' "
        "or 'package.module:Class'"
    )
    assert isinstance(caught.value, ConfigError)


def test_a_missing_optional_package_names_the_extra(lazy_module: str) -> None:
    with pytest.raises(ConfigError, match=r"No module named 'no_such_package_anywhere'") as caught:
        things().load("optional")
    assert str(caught.value).endswith("; pip install 'agent-eval[extra]'")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_pkg.mod:x", "module 'no_such_pkg.mod' not found"),
        ("needs_extra:VALUE", "importing 'needs_extra' failed (ModuleNotFoundError"),
        ("lazy_thing:NOPE", "module 'lazy_thing' has no attribute 'NOPE'"),
        ("lazy_thing:", "unknown thing 'lazy_thing:'"),
    ],
)
def test_a_spec_that_does_not_load_says_why(lazy_module: str, spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        things().load(spec)
    assert message in str(caught.value)


def test_a_misspelt_policy_or_scheduler_stops_the_config_at_its_field() -> None:
    with pytest.raises(ValidationError, match=r"policy\n.*did you mean 'session'"):
        ProxyConfig(policy="sesion")
    with pytest.raises(ValidationError, match=r"scheduler.type\n.*did you mean 'slurm'"):
        LaunchConfig.model_validate({"scheduler": {"type": "slurn"}})
