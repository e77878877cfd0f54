"""`dataset.perturb`: each sample followed by its variants, seeded, linked to their original."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agent_eval.data import DataError, Sample, Session, Turn, load_dataset
from agent_eval.errors import ConfigError
from agent_eval.perturb import Variant
from agent_eval.perturb.expand import perturbed
from agent_eval.run.config import load_run_config
from agent_eval.run.identity import identity
from agent_eval.run.parts import dataset_items
from agent_eval.run.scoring import with_readable_golds

SHOUT = "tests.test_perturb_expand:shout"
DRAW = "tests.test_perturb_expand:draw"


def shout(sample: Sample, rng: random.Random) -> Variant | None:
    """A plug-in perturbation: the question in capitals; none for a question without letters."""
    question = sample.question or ""
    return Variant(question.upper(), sample.answer or "") if question.isalpha() else None


def draw(sample: Sample, rng: random.Random) -> Variant:
    """A plug-in that uses its random source: a drawn number after the question."""
    return Variant(f"{sample.question} {rng.randint(0, 10**9)}", sample.answer or "")


def goldless(sample: Sample, rng: random.Random) -> Variant:
    """A plug-in that loses the gold: its variant has an empty answer."""
    return Variant(f"{sample.question}?", "")


def broken(sample: Sample, rng: random.Random) -> Variant:
    """A plug-in with a bug."""
    raise ZeroDivisionError("division by zero")


def odd(sample: Sample, rng: random.Random) -> str:
    """A plug-in that returns the wrong thing."""
    return sample.question or ""


SAMPLES = [Sample("a", "one", "1"), Sample("b", "2 + 2", "4"), Sample("c", "three", "3")]


def test_each_sample_comes_first_then_its_variants_named_and_linked_to_it() -> None:
    played = list(perturbed(SAMPLES, [SHOUT, DRAW], seed=0))
    assert [s.id for s in played] == [
        "a", f"a~{SHOUT}", f"a~{DRAW}", "b", f"b~{DRAW}", "c", f"c~{SHOUT}", f"c~{DRAW}"
    ]  # fmt: skip
    variant = played[1]
    assert (variant.question, variant.answer) == ("ONE", "1")
    assert (variant.variant_of, variant.perturbation) == ("a", SHOUT)
    assert all(s.variant_of is None and s.perturbation is None for s in played if "~" not in s.id)


def test_variants_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    def questions(seed: int) -> list[str | None]:
        return [s.question for s in perturbed(SAMPLES, [DRAW], seed) if s.variant_of]

    assert questions(3) == questions(3)
    assert questions(3) != questions(4)
    # Each sample's source is its own: another sample before it changes nothing.
    alone = [s.question for s in perturbed(SAMPLES[2:], [DRAW], 3) if s.variant_of]
    assert alone == questions(3)[2:]


def test_sessions_are_refused_by_name() -> None:
    session = Session("chat-1", [Turn("hi", "hello")])
    with pytest.raises(DataError, match="'chat-1' is a multi-turn session"):
        list(perturbed([session], [SHOUT], 0))


def test_the_run_config_takes_perturbations_as_a_list_or_commas_and_checks_them() -> None:
    flagged = load_run_config(None, {"dataset.perturb": "numbers, names"}, [])
    assert flagged.dataset.perturb == ["numbers", "names"]
    assert identity(flagged)["dataset.perturb"] == ["numbers", "names"]
    with pytest.raises(ConfigError, match="did you mean 'distractor'"):
        load_run_config(None, {}, ["dataset.perturb=[distracter]"])
    with pytest.raises(ConfigError, match="named twice"):
        load_run_config(None, {}, ["dataset.perturb=names,names"])


def test_a_subset_draws_originals_and_brings_their_variants() -> None:
    config = load_run_config(
        None, {}, ["dataset.name=word_problems", "dataset.subset=3", f"dataset.perturb={DRAW}"]
    )
    items = list(dataset_items(config))
    originals = [s for s in items if s.variant_of is None]
    assert len(originals) == 3 and len(items) == 6
    assert [s.variant_of for s in items if s.variant_of] == [s.id for s in originals]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.test_perturb_expand:broken", "failed on sample 'a': ZeroDivisionError"),
        ("tests.test_perturb_expand:odd", "returned str for sample 'a'; it must return"),
    ],
)
def test_a_plug_in_that_fails_is_named_with_the_sample(spec: str, message: str) -> None:
    with pytest.raises(DataError, match=None) as refused:
        list(perturbed(SAMPLES, [spec], 0))
    assert message in str(refused.value) and spec in str(refused.value)


TAKEN = f"a~{DRAW}"  # the id the DRAW variant of sample `a` gets
ROW_A = {"id": "a", "question": "one", "answer": "1"}
ROW_TAKING = {"id": TAKEN, "question": "two", "answer": "2"}


def variant_of_a(line: int) -> str:
    """How a refusal names the DRAW variant of `a`, read from line `line` of `{path}`."""
    return f"the {DRAW} variant of sample 'a' ({{path}} line {line})"


@pytest.mark.parametrize(
    ("rows", "refusal"),
    [
        (
            [ROW_A, ROW_TAKING],
            f"{{path}} line 2: id {TAKEN!r} is already the id of {variant_of_a(1)}",
        ),
        (
            [ROW_TAKING, ROW_A],
            f"{variant_of_a(2)}: id {TAKEN!r} is already the id of {{path}} line 1",
        ),
    ],
    ids=["variant-first", "row-first"],
)
def test_a_row_with_a_variants_id_is_refused_naming_both_lines(
    tmp_path: Path, rows: list[dict[str, str]], refusal: str
) -> None:
    """Issue 28, item 9: `a~KIND` in the file and the KIND variant of `a` would share an id."""
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DataError) as refused:
        list(perturbed(load_dataset(str(path)), [SHOUT, DRAW], seed=0))
    assert str(refused.value) == (
        f"{refusal.format(path=path)}; ids ending in '~{SHOUT}', '~{DRAW}' are the ids of "
        "--perturb's variants: rename that row"
    )


def test_variants_keep_the_line_of_their_original(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"question": "one", "answer": "1"}) + "\n")
    original, variant = perturbed(load_dataset(str(path)), [DRAW], seed=0)
    assert original.origin == variant.origin and str(variant.origin) == f"{path} line 1"


def test_a_variant_without_a_gold_is_refused_before_a_run(tmp_path: Path) -> None:
    """Issue 28, item 10: a variant with an empty answer could only ever score 0."""
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "one", "answer": "1"}) + "\n")
    spec = "tests.test_perturb_expand:goldless"
    with pytest.raises(DataError) as refused:
        list(with_readable_golds(perturbed(load_dataset(str(path)), [spec], seed=0), None))
    assert str(refused.value) == (
        f"the {spec} variant of sample 'a' ({path} line 1): field 'answer' gives no gold answer "
        "to score against"
    )
