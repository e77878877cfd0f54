"""A value swapped in a BFCL entry's messages and possible answers alike, or refused.

A literal may be swapped when the messages write it and the possible answers hold it as a
value, and every other place either writes it is one the swap rewrites: a literal left behind
in another form (`5m`, `10L`, `john@`) or named by the function docs refuses the swap, and so
does a number the answers may leave out (`[5, ""]`: the function's default, which a new value
would not move). A number is swappable only when every number the answers hold is written in
the messages (or may be left out): a value computed from the question's could depend on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

Json = Any
OMITTED = ""
"""A possible answer's way of saying the argument may be left out."""

# A number written as a quantity (not part of a date, a time, a version or a word); a word.
_AROUND_NUMBER = (r"(?<![\w.,/:-])", r"(?![\w/:]|[.,-]\d)")
_AROUND_WORD = (r"(?<![\w'-])", r"(?![\w-])")
NUMBER = re.compile(r"\d+(?:\.\d+)?".join(_AROUND_NUMBER))
WORD = re.compile("[A-Za-z]+".join(_AROUND_WORD))


def swappable(texts: list[str], truth: Json, docs: Json) -> list[str]:
    """Numbers and words of `texts` that `truth` holds and `swapped` can swap faithfully."""
    joined = "\n".join(texts)
    numbers = [n for n in _unique(NUMBER.findall(joined)) if _number_held(n, truth)]
    if not _numbers_written(joined, truth):
        numbers = []
    words = [w for w in _unique(WORD.findall(joined)) if _word_held(w, truth)]
    return [
        literal
        for literal in numbers + words
        if _faithful(literal, joined, truth, docs) and not _optional(literal, truth)
    ]


def swapped_texts(texts: list[str], swaps: Mapping[str, str]) -> list[str]:
    """`texts` with each literal's bounded occurrences replaced."""
    return [_swapped_text(text, swaps) for text in texts]


def swapped_truth(truth: Json, swaps: Mapping[str, str]) -> Json:
    """`truth` with each literal swapped in every value that holds it."""
    for old, new in swaps.items():
        truth = _map_leaves(truth, lambda leaf, o=old, n=new: _swapped_leaf(leaf, o, n))
    return truth


def consistent(texts: list[str], truth: Json, docs: Json, swaps: Mapping[str, str]) -> bool:
    """Whether each swap is faithful and its new literal meets no value already there."""
    joined, held = "\n".join(texts), json.dumps([truth, docs])
    return all(
        old in swappable(texts, truth, docs) and not _loose(new).search(joined + held)
        for old, new in swaps.items()
    )


def _unique(found: list[str]) -> list[str]:
    return list(dict.fromkeys(found))


def _number_held(literal: str, truth: Json) -> bool:
    value = float(literal)
    return any(_number(leaf) == value or leaf == literal for leaf in _leaves(truth))


def _word_held(word: str, truth: Json) -> bool:
    bounded = _bounded(word)
    return any(isinstance(leaf, str) and bounded.search(leaf) for leaf in _leaves(truth))


def _numbers_written(text: str, truth: Json) -> bool:
    """Every number the answers require is one the messages write."""
    written = {float(n) for n in NUMBER.findall(text)}
    required = (
        _number(leaf)
        for alternatives in _alternatives(truth)
        if OMITTED not in alternatives
        for leaf in _leaves(alternatives)
    )
    return all(value is None or value in written for value in required)


def _faithful(literal: str, text: str, truth: Json, docs: Json) -> bool:
    """Every occurrence of `literal` in the messages is one a swap rewrites, none is left in
    the answers after it, and the function docs never name it."""
    loose = _loose(literal)
    if len(loose.findall(text)) != len(_bounded(literal).findall(text)):
        return False
    marked = _map_leaves(truth, lambda leaf: _marked(leaf, literal))
    return not loose.search(json.dumps(marked)) and not loose.search(json.dumps(docs))


def _optional(literal: str, truth: Json) -> bool:
    """An argument that holds `literal` may be left out."""
    return any(
        OMITTED in alternatives and _marked(leaf, literal) != leaf
        for alternatives in _alternatives(truth)
        for leaf in _leaves(alternatives)
    )


def _bounded(literal: str) -> re.Pattern[str]:
    """The literal as a whole number or word, as `NUMBER` and `WORD` find it."""
    around = _AROUND_NUMBER if literal[0].isdigit() else _AROUND_WORD
    return re.compile(re.escape(literal).join(around))


def _loose(literal: str) -> re.Pattern[str]:
    """The literal in any form: its digits among other characters, its word in any case."""
    if literal[0].isdigit():
        return re.compile(rf"(?<![\d.]){re.escape(literal)}(?!\d|\.\d)")
    return re.compile(rf"(?<![A-Za-z]){re.escape(literal)}(?![A-Za-z])", re.IGNORECASE)


def _swapped_text(text: str, swaps: Mapping[str, str]) -> str:
    for old, new in swaps.items():
        text = _bounded(old).sub(new, text)
    return text


def _swapped_leaf(leaf: Json, old: str, new: str) -> Json:
    if old[0].isalpha():
        return _bounded(old).sub(new, leaf) if isinstance(leaf, str) else leaf
    if leaf == old:
        return new
    if _number(leaf) == float(old):
        return int(new) if isinstance(leaf, int) and new.isdigit() else float(new)
    return leaf


def _marked(leaf: Json, old: str) -> Json:
    """The leaf with what a swap of `old` rewrites blanked out, for what is left to be seen."""
    if old[0].isalpha():
        return _bounded(old).sub("\x00", leaf) if isinstance(leaf, str) else leaf
    return None if leaf == old or _number(leaf) == float(old) else leaf


def _number(leaf: Json) -> float | None:
    is_number = isinstance(leaf, int | float) and not isinstance(leaf, bool)
    return float(leaf) if is_number else None


def _alternatives(truth: Json) -> Iterator[list[Json]]:
    """Each argument's possible values, over every call of every possible answer."""
    for call in truth:
        for arguments in call.values():
            yield from arguments.values()


def _leaves(value: Json) -> Iterator[Json]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _map_leaves(value: Json, change: Any) -> Json:
    if isinstance(value, dict):
        return {key: _map_leaves(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_leaves(item, change) for item in value]
    return change(value)
