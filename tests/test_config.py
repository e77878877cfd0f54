"""Run configs: shipped files, precedence, overrides of any key, mistakes named with a fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent_eval.cli.options import FLAGS
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig, ServeConfig
from agent_eval.proxy.policies.prefix import PrefixAware, PrefixSettings
from agent_eval.proxy.policies.session import SessionSettings
from agent_eval.run.config import RunConfig, load_run_config, save_run_config
from agent_eval.settings import field_of, load_settings

CONFIGS = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
FLAT_POLICY_SETTINGS = Path(__file__).parent / "golden" / "config_flat_policy_settings.yaml"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_is_valid(path: Path) -> None:
    config = load_run_config(path, {}, [])
    assert config.backend().name == config.rollout.backend.split(":")[0]


def test_shipped_configs_cover_each_way_to_run() -> None:
    loaded = {p.stem: load_run_config(p, {}, []) for p in CONFIGS}
    kinds = {(c.rollout.backend.split(":")[0], c.scheduler.type) for c in loaded.values()}
    assert {("llamacpp", "local"), ("sglang", "local"), ("sglang", "ray")} <= kinds
    assert ("sglang", "slurm") in kinds and ("external", "local") in kinds
    assert any(c.agent.name == "multi_turn_chat" for c in loaded.values())


def test_the_cpu_default_file_is_what_no_config_gives() -> None:
    spelled = load_run_config(Path("configs/cpu_default.yaml"), {}, ["output.dir=x"])
    bare = load_run_config(None, {"agent.name": "math_calculator"}, ["output.dir=x"], True)
    assert spelled.model_dump() == bare.model_dump()
    assert bare.dataset_name == "word_problems" and bare.eval.n_samples == 4


def test_the_embedded_default_fills_only_what_no_one_gave(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"eval": {"n_samples": 2}, "agent": {"options": {"x": 1}}}))
    config = load_run_config(path, {"sampling.temperature": 0.0}, ["agent.max_turns=5"], True)
    assert (config.eval.n_samples, config.sampling.temperature, config.agent.max_turns) == (2, 0, 5)
    assert config.agent.options == {"tool_use": "stop_on_first_tool", "x": 1}
    assert config.dataset_name == "word_problems" and config.sampling.max_tokens == 64


@pytest.mark.parametrize(
    ("flags", "overrides"),
    [
        ({"model.path": "model.gguf"}, []),
        ({"rollout.endpoints": ["http://127.0.0.1:8000"]}, []),
        ({"rollout.backend": "sglang:d1"}, []),
        ({"agent.name": "multi_turn_chat"}, []),
    ],
    ids=["a model", "an endpoint", "another backend", "another agent"],
)
def test_any_other_model_or_agent_keeps_the_plain_defaults(
    flags: dict[str, object], overrides: list[str]
) -> None:
    config = load_run_config(None, flags, overrides, True)
    assert not config.on_embedded_model()
    assert config.eval.n_samples == 1 and config.sampling.temperature == 0.0
    assert config.dataset_name != "word_problems" and config.agent.options == {}


def test_a_watch_keeps_the_plain_defaults() -> None:
    config = load_run_config(None, {}, [])
    assert config.on_embedded_model() and config.dataset_name == "gsm8k_mini"


def test_defaults_then_file_then_flags_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"eval": {"n_samples": 2, "concurrency": 3, "seed": 4}}))
    config = load_run_config(path, {"eval.concurrency": 5, "eval.seed": 6}, ["eval.seed=7"])
    assert (config.eval.n_samples, config.eval.concurrency, config.eval.seed) == (2, 5, 7)
    assert config.sampling.max_tokens == 512  # untouched default


def test_the_issue_s_cluster_overrides_reach_the_launch() -> None:
    config = load_run_config(
        Path("configs/gsm8k_sglang_slurm.yaml"),
        {},
        ["scheduler.type=slurm", "rollout.backend=sglang:d96p1t1", "model.path=/ckpt"],
    )
    worker = config.worker()
    assert (config.scheduler.type, config.rollout.backend, worker.model) == (
        "slurm",
        "sglang:d96p1t1",
        "/ckpt",
    )
    assert worker.tool_call_parser == "qwen25"  # the file's worker settings stay


def test_every_key_can_be_overridden_including_runner_options() -> None:
    config = load_run_config(
        None,
        {},
        [
            "rollout.worker.threads=2",
            "scheduler.slurm.partition=debug",
            "proxy.health.interval=0.5",
            "agent.options.tools=true",
            "eval.ks=[1, 2]",
        ],
    )
    assert config.rollout.worker.threads == 2 and config.scheduler.slurm.partition == "debug"
    assert config.proxy.health.interval == 0.5 and config.agent.runner_options() == {"tools": True}
    assert config.eval.ks == [1, 2]


def test_endpoints_alone_launch_nothing() -> None:
    config = load_run_config(None, {"rollout.endpoints": ["http://127.0.0.1:30000"]}, [])
    assert config.rollout.backend == "external"
    assert config.proxy.port == 0  # a run's proxy takes a free port


def test_unknown_key_in_a_file_names_the_file_and_the_nearest_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rollout:\n  bakend: sglang:d2\n")
    with pytest.raises(ConfigError) as caught:
        load_run_config(path, {}, [])
    message = str(caught.value)
    assert "rollout.bakend" in message and str(path) in message
    assert "did you mean 'rollout.backend'?" in message


def test_unknown_override_and_bad_value_are_named() -> None:
    with pytest.raises(ConfigError, match=r"'eval.n_sample'.*did you mean 'eval.n_samples'"):
        load_run_config(None, {}, ["eval.n_sample=3"])
    with pytest.raises(ConfigError, match=r"eval.n_samples: .*integer.*'many'"):
        load_run_config(None, {}, ["eval.n_samples=many"])
    with pytest.raises(ConfigError, match=r"scheduler\.type"):
        load_run_config(None, {"scheduler.type": "kubernetes"}, [])


@pytest.mark.parametrize(
    ("text", "problem"),
    [("- a\n- b\n", "must hold a mapping"), ("eval: [\n", "not valid YAML")],
)
def test_a_file_that_is_not_a_config_says_so(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        load_run_config(path, {}, [])
    with pytest.raises(ConfigError, match="does not exist"):
        load_run_config(tmp_path / "missing.yaml", {}, [])


def test_the_saved_config_reloads_to_the_same_run_and_hides_keys(tmp_path: Path) -> None:
    config = load_run_config(None, {}, ["proxy.api_key=s3cret", f"output.dir={tmp_path}"])
    saved = save_run_config(config, tmp_path)
    assert "s3cret" not in saved.read_text()
    again = load_run_config(saved, {}, [])
    assert again.model_dump(exclude={"proxy"}) == config.model_dump(exclude={"proxy"})


def test_a_config_with_the_policy_settings_beside_the_policy_loads_to_the_same_settings(
    tmp_path: Path,
) -> None:
    """A run's config.yaml from before (read again on --resume), as run and as serve take it."""
    sessions = SessionSettings(balance_factor=1.5, ttl=42.0, max_sessions=500)
    prefix = PrefixSettings(
        cache_threshold=0.7, chunk_bytes=128, max_bytes=1024 * 1024, sessions=sessions
    )
    run = load_run_config(FLAT_POLICY_SETTINGS, {}, [])
    serve_file = tmp_path / "serve.yaml"
    serve_file.write_text(
        yaml.safe_dump({"proxy": yaml.safe_load(FLAT_POLICY_SETTINGS.read_text())["proxy"]})
    )
    served = load_settings(ServeConfig, serve_file, {}, [])
    for proxy in (run.proxy, served.proxy):
        assert (proxy.policy, proxy.policies.session, proxy.policies.prefix) == (
            "prefix",
            sessions,
            prefix,
        )
    policy = run.proxy.routing_policy()
    assert isinstance(policy, PrefixAware) and policy.settings == prefix
    save_run_config(run, tmp_path)
    assert load_run_config(tmp_path / "config.yaml", {}, []).proxy == run.proxy


def test_a_flag_lays_its_setting_over_a_config_with_the_settings_beside_the_policy() -> None:
    flags = {"proxy.policies.session.ttl": 7.0}
    proxy = load_run_config(FLAT_POLICY_SETTINGS, flags, []).proxy
    assert (proxy.policies.session.ttl, proxy.policies.session.max_sessions) == (7.0, 500)
    assert proxy.policies.prefix.sessions.ttl == 42.0


def test_a_config_written_before_replays_had_their_word_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"eval": {"retries": 5, "retry_backoff": 0.5}}))
    config = load_run_config(path, {}, [])
    assert (config.eval.replays, config.eval.replay_backoff) == (5, 0.5)
    # A resume given the new key beside the file's old one takes the new one.
    assert load_run_config(path, {}, ["eval.replays=0"]).eval.replays == 0
    saved = yaml.safe_load(save_run_config(config, tmp_path / "again").read_text())
    assert saved["eval"]["replays"] == 5 and "retries" not in saved["eval"]


def test_the_proxy_timeout_once_named_attempt_reads_as_the_worker_timeout(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"proxy": {"timeouts": {"attempt": 30.0}}}))
    for config in (load_run_config(path, {}, []), load_settings(ServeConfig, path, {}, [])):
        assert config.proxy.timeouts.worker == 30.0
    assert load_run_config(path, {}, ["proxy.timeouts.worker=5"]).proxy.timeouts.worker == 5.0


def test_run_directories_are_named_safely() -> None:
    config = load_run_config(None, {"agent.name": "../evil/pkg.mod:Agent"}, [])
    assert config.run_dir.parent == Path("runs")
    assert "/" not in config.run_dir.name and ".." not in config.run_dir.name


def test_every_flag_names_one_setting_of_its_commands() -> None:
    for name, flag in FLAGS.items():
        root = ServeConfig if flag.key.startswith("proxy.") else RunConfig
        assert field_of(root, flag.key) is not None, name
    keys = [flag.key for flag in FLAGS.values()]
    # serve's --processes is run's --proxy-processes: run's --processes is the engine's.
    repeated = {key for key in keys if keys.count(key) > 1}
    assert repeated == {"proxy.processes"}, "two flags give the same setting"


def test_launch_settings_are_one_section_shared_by_run_and_serve() -> None:
    given = ["rollout.backend=sglang:d2", "model.path=/ckpt", "rollout.worker.seed=3"]
    run = load_run_config(None, {}, given)
    serve = load_settings(ServeConfig, None, {}, given)
    assert run.worker() == serve.worker()
    assert run.worker().model == "/ckpt" and run.worker().seed == 3
    assert RunConfig().rollout.backend == LaunchConfig().rollout.backend == "llamacpp:d2"


def test_serve_launches_only_for_a_backend_named() -> None:
    assert not ServeConfig().launches()
    assert not load_settings(ServeConfig, None, {}, ["rollout.endpoints=[http://h:1]"]).launches()
    assert load_settings(ServeConfig, None, {"rollout.backend": "llamacpp:d1"}, []).launches()
