"""`dataset.subset`: a seeded random draw of samples, the same for the same seed, in file order."""

from __future__ import annotations

from pathlib import Path

from agent_eval.data import Sample
from agent_eval.data.subset import seeded_subset
from agent_eval.run.config import load_run_config
from agent_eval.run.identity import identity
from agent_eval.run.parts import dataset_items

ITEMS = [Sample(f"s{i}", f"q{i}", str(i)) for i in range(200)]


def ids(size: int, seed: int) -> list[str]:
    return [item.id for item in seeded_subset(iter(ITEMS), size, seed)]


def test_a_subset_is_seeded_ordered_and_nested() -> None:
    drawn = ids(20, seed=0)
    assert len(drawn) == len(set(drawn)) == 20
    assert drawn == sorted(drawn, key=lambda i: int(i[1:]))  # in the dataset's order
    assert drawn == ids(20, seed=0)
    assert drawn != ids(20, seed=1)
    assert set(ids(10, seed=0)) < set(drawn)  # a smaller draw lies inside a larger one
    assert drawn != [f"s{i}" for i in range(20)]  # not the first 20


def test_a_sample_is_in_or_out_wherever_it_sits_in_the_file() -> None:
    reordered = [*ITEMS[100:], *ITEMS[:100]]
    kept = [item.id for item in seeded_subset(iter(reordered), 20, seed=0)]
    assert set(kept) == set(ids(20, seed=0))


def test_a_subset_larger_than_the_dataset_is_the_whole_dataset() -> None:
    assert ids(500, seed=3) == [item.id for item in ITEMS]


def test_the_run_config_draws_its_subset_by_eval_seed_and_counts_it_in_the_identity(
    tmp_path: Path,
) -> None:
    config = load_run_config(None, {}, ["dataset.name=word_problems", "dataset.subset=5"])
    drawn = [item.id for item in dataset_items(config)]
    assert len(drawn) == 5
    reseeded = load_run_config(
        None, {}, ["dataset.name=word_problems", "dataset.subset=5", "eval.seed=9"]
    )
    assert [item.id for item in dataset_items(reseeded)] != drawn
    assert identity(config)["dataset.subset"] == 5
