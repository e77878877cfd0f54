"""The prefix policy on its own: where each request goes by the conversation it carries."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import RequestInfo
from agent_eval.proxy.policies.prefix import (
    PrefixAware,
    PrefixSettings,
    conversation_start,
    routing_text,
)
from agent_eval.proxy.policies.prefix_chain import PrefixSet, chunk_chain
from tests.helpers.policies import make_workers

CHAT = "/v1/chat/completions"
SYSTEM = {"role": "system", "content": "You are a careful assistant with tools. " * 8}
TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]


def question(tag: str) -> dict[str, Any]:
    return {"role": "user", "content": f"Task {tag}: " + f"{tag} needs working out. " * 40}


def step(tag: str, k: int) -> list[dict[str, Any]]:
    """One tool round trip and a follow-up question: what a turn adds to the history."""
    call = {"id": f"{tag}-{k}", "type": "function", "function": {"name": "calc", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"{tag}-{k}", "content": f"result {k} of {tag}"},
        {"role": "user", "content": f"And next, step {k} of {tag}?"},
    ]


def history(tag: str, turns: int) -> list[dict[str, Any]]:
    """The messages of a conversation's turn `turns`, counting from 1."""
    messages = [SYSTEM, question(tag)]
    for k in range(1, turns):
        messages += step(tag, k)
    return messages


def chat(messages: list[dict[str, Any]], key: str | None = None, **kw: Any) -> RequestInfo:
    payload = {"model": "m", "tools": TOOLS, "messages": messages}
    return RequestInfo(CHAT, session_key=key, payload=payload, **kw)


def policy_over(workers: list[Worker], **settings: Any) -> PrefixAware:
    settings.setdefault("chunk_bytes", 64)
    policy = PrefixAware(PrefixSettings(**settings))
    policy.on_workers_changed([w.url for w in workers])
    return policy


def serve(policy: PrefixAware, workers: list[Worker], info: RequestInfo) -> Worker:
    """Route a request and count it served, as the forwarder would once it ends."""
    worker = policy.choose(workers, info)
    assert worker is not None
    worker.served += 1
    return worker


def test_conversations_sharing_a_system_prompt_follow_their_own_history() -> None:
    workers = make_workers(2)
    policy = policy_over(workers)
    homes = {tag: serve(policy, workers, chat(history(tag, 1))) for tag in ("a", "b")}
    assert homes["a"] is not homes["b"]
    for turn in range(2, 6):
        for tag, home in homes.items():
            # The other worker is idler, so only the history can bring the turn home.
            home.in_flight = 1
            assert serve(policy, workers, chat(history(tag, turn))) is home
            home.in_flight = 0


def test_a_match_below_the_threshold_goes_to_the_least_loaded() -> None:
    workers = make_workers(2)
    text = "x" * 2000
    known = {"role": "user", "content": text}
    policy = policy_over(workers, cache_threshold=0.5)
    home = serve(policy, workers, chat([known]))
    home.in_flight = 1
    other = workers[1] if home is workers[0] else workers[0]
    shares_less = {"role": "user", "content": text[:600] + "y" * 1400}
    shares_more = {"role": "user", "content": text[:1400] + "y" * 600}
    assert policy.choose(workers, chat([shares_less])) is other
    assert policy.choose(workers, chat([shares_more])) is home


def test_prefix_set_evicts_tails_of_the_least_recently_used_first() -> None:
    held = PrefixSet(capacity=15)
    first, second = chunk_chain(b"a" * 640, 64), chunk_chain(b"b" * 640, 64)
    held.add(first)
    held.add(second)
    assert len(held) == 15
    assert held.match(second) == 10
    assert held.match(first) == 5  # its start survives: a shared prefix outlives its branches
    held.add(chunk_chain(b"c" * 640, 64))
    assert held.match(first) == 0
    assert held.match(second) == 5


def test_remembered_bytes_stay_under_the_bound() -> None:
    workers = make_workers(2)
    policy = policy_over(workers, max_bytes=4096)
    homes = {f"c{i}": serve(policy, workers, chat(history(f"c{i}", 3))) for i in range(50)}
    held = [policy.held_bytes(w.url) for w in workers]
    assert sum(held) <= 4096
    assert min(held) > 2048 - 64  # both full: the bound is what stopped them
    policy.on_workers_changed([w.url for w in make_workers(3)])  # a third worker joins
    assert sum(policy.held_bytes(w.url) for w in workers) <= 4096 * 2 / 3
    for tag, remembered in (("c49", True), ("c0", False)):
        home = homes[tag]
        home.in_flight = 1
        chosen = policy.choose(workers, chat(history(tag, 4)))
        assert (chosen is home) is remembered  # the oldest is forgotten: it goes by load
        home.in_flight = 0


def test_a_large_imbalance_sends_every_request_to_the_least_loaded() -> None:
    workers = make_workers(2)
    policy = policy_over(
        workers, balance_abs_threshold=16, balance_rel_threshold=1.5, load_factor=10
    )
    home = serve(policy, workers, chat(history("a", 1)))
    other = workers[1] if home is workers[0] else workers[0]
    home.in_flight, other.in_flight = 20, 10  # 10 apart: within the bound
    assert policy.choose(workers, chat(history("a", 2))) is home
    home.in_flight, other.in_flight = 20, 2  # 18 apart and 10 times as many
    assert policy.choose(workers, chat(history("a", 2))) is other


def test_no_worker_passes_the_load_bound_for_its_cache() -> None:
    workers = make_workers(3)
    policy = policy_over(workers, load_factor=1.25)
    home = serve(policy, workers, chat(history("a", 1)))
    others = [w for w in workers if w is not home]
    others[0].in_flight, others[1].in_flight = 1, 1
    home.in_flight = 2  # one more stays within the bound, ceil(1.25 * 5 / 3) = 3
    assert policy.choose(workers, chat(history("a", 2))) is home
    home.in_flight = 3  # at it, ceil(1.25 * 6 / 3) = 3: one more would pass it
    assert policy.choose(workers, chat(history("a", 2))) in others


def test_a_session_keeps_its_worker_and_only_a_new_one_is_placed_by_prefix() -> None:
    workers = make_workers(3)
    policy = policy_over(workers)
    a_home = serve(policy, workers, chat(history("a", 1)))
    b_home = serve(policy, workers, chat(history("b", 1), key="s"))
    assert b_home is not a_home
    # The session's text now matches a's worker best; the session stays where it is.
    assert serve(policy, workers, chat(history("a", 3), key="s")) is b_home
    # A new session is placed where its conversation is, then sticks.
    c_home = serve(policy, workers, chat(history("c", 1)))
    c_home.served += 10  # by load alone the session would go elsewhere
    assert serve(policy, workers, chat(history("c", 2), key="t")) is c_home
    assert serve(policy, workers, chat(history("b", 9), key="t")) is c_home


def test_a_retry_never_goes_back_to_the_worker_it_left() -> None:
    workers = make_workers(2)
    policy = policy_over(workers)
    home = serve(policy, workers, chat(history("a", 1)))
    retry = chat(history("a", 2), detour_from=frozenset({home.url}))
    assert policy.choose(workers, retry) is not home


def test_removed_workers_are_forgotten() -> None:
    workers = make_workers(2)
    policy = policy_over(workers)
    home = serve(policy, workers, chat(history("a", 1)))
    other = workers[1] if home is workers[0] else workers[0]
    policy.on_workers_changed([other.url])
    assert policy.held_bytes(home.url) == 0
    policy.on_workers_changed([w.url for w in workers])
    other.served, home.served = 0, 5  # least loaded is now `other`, and no history says otherwise
    assert policy.choose(workers, chat(history("a", 2))) is other


@pytest.mark.parametrize(
    ("route", "earlier", "later", "newest"),
    [
        (
            CHAT,
            {"tools": TOOLS, "messages": history("a", 1)},
            {"tools": TOOLS, "messages": history("a", 3)},
            b"result 2 of a",
        ),
        ("/v1/completions", {"prompt": "Once upon"}, {"prompt": "Once upon a time"}, b"a time"),
        (
            "/v1/responses",
            {"instructions": "Be brief.", "input": [{"role": "user", "content": "hi"}]},
            {
                "instructions": "Be brief.",
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "c1", "output": "forty-two"},
                ],
            },
            b"forty-two",
        ),
    ],
)
def test_routing_text_is_the_whole_conversation_and_grows_at_its_end(
    route: str, earlier: dict[str, Any], later: dict[str, Any], newest: bytes
) -> None:
    before = routing_text(RequestInfo(route, payload={"model": "m", "stream": True, **earlier}))
    after = routing_text(RequestInfo(route, payload={"model": "n", **later}))
    assert newest in after
    assert after.startswith(before[:-2])  # all but the closing brackets or quote


def test_the_config_builds_the_policy_and_refuses_wrong_settings() -> None:
    settings = {"cache_threshold": 0.8, "chunk_bytes": 128, "sessions": {"ttl": 5.0}}
    config = ProxyConfig(policy="prefix", policies={"prefix": settings})
    policy = config.routing_policy()
    assert isinstance(policy, PrefixAware)
    assert policy.settings.cache_threshold == 0.8
    assert policy.settings.sessions.ttl == 5.0
    with pytest.raises(ValidationError, match="cache_threshold"):
        ProxyConfig(policy="prefix", policies={"prefix": {"cache_threshold": 1.5}})
    with pytest.raises(ValidationError, match=r"max_bytes \(2048\) is smaller than chunk_bytes"):
        PrefixSettings(max_bytes=2048, chunk_bytes=4096)


def test_on_the_ring_each_process_places_every_turn_of_a_conversation_alike() -> None:
    # Two proxy processes, each seeing its own loads and its own share of the turns.
    workers = make_workers(4)
    processes = [policy_over(workers, placement="ring") for _ in range(2)]
    homes: dict[str, set[str]] = {}
    for turn in range(1, 6):
        for tag in "abcdefgh":
            loads = (2, 1, 2, 1) if turn % 2 else (1, 2, 1, 2)  # all under the bound, 3
            for load, worker in zip(loads, workers, strict=True):
                worker.in_flight = load
            chosen = processes[turn % 2].choose(workers, chat(history(tag, turn)))
            assert chosen is not None
            homes.setdefault(tag, set()).add(chosen.url)
    assert all(len(urls) == 1 for urls in homes.values()), homes
    assert len(set.union(*homes.values())) > 1


def test_on_the_ring_a_busy_worker_passes_a_conversation_to_the_next() -> None:
    workers = make_workers(3)
    policy = policy_over(workers, placement="ring")
    home = serve(policy, workers, chat(history("a", 1)))
    home.in_flight = 2  # ceil(1.25 * 3 / 3) = 2: one more would pass the bound
    moved = policy.choose(workers, chat(history("a", 2)))
    assert moved is not None and moved is not home
    home.in_flight = 0
    assert policy.choose(workers, chat(history("a", 3))) is home
    retry = chat(history("a", 3), detour_from=frozenset({home.url}))
    assert policy.choose(workers, retry) is moved  # the next clockwise, as under load


def test_a_conversations_start_ends_at_its_first_user_message() -> None:
    start = conversation_start(chat(history("a", 4)), 2048)
    assert start == conversation_start(chat(history("a", 1)), 2048)
    assert start != conversation_start(chat(history("b", 1)), 2048)
    assert b"And next" not in start and b"Task a" in start
    prompt = RequestInfo("/v1/completions", payload={"prompt": "x" * 10 + "tail"})
    assert conversation_start(prompt, 10) == b'["xxxxxxxxxx"]'


def test_a_group_of_processes_places_prefix_conversations_by_the_ring() -> None:
    policy = ProxyConfig(policy="prefix", processes=2).routing_policy()
    assert isinstance(policy, PrefixAware) and policy.settings.placement == "ring"
    assert policy.settings.sessions.placement == "ring"
    alone = ProxyConfig(policy="prefix", processes=1).routing_policy()
    assert isinstance(alone, PrefixAware) and alone.settings.placement is None
    kept = {"prefix": {"placement": "tree"}}
    chosen = ProxyConfig(policy="prefix", processes=2, policies=kept).routing_policy()
    assert isinstance(chosen, PrefixAware) and chosen.settings.placement == "tree"
