"""Numbers as a word problem writes them (1,000, $5, 3.5, 50%, four): found and written back."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUES = {
    **{word: value for value, word in enumerate(_UNITS)},
    **{word: 10 + value for value, word in enumerate(_TEENS)},
    **{word: 20 + 10 * value for value, word in enumerate(_TENS)},
}
# "one" and "zero" are left out: "one of them", "zero in on" are rarely counts to vary.
_COUNT_WORDS = "|".join(word for word in _WORD_VALUES if word not in ("zero", "one"))
_DIGITS = r"(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
_REFERRING = re.compile(r"\b(?:the|all|these|those|its|his|her|our|their|my|your)\s+$", re.I)
"""Before "the three measurements" a count names a group the problem set up elsewhere."""
_GLUED = r"(?:kg|km|cm|mm|mg|ml|lbs?|oz|kb|mb|gb|mph|ft|hrs?|mins?|g|m|l)(?!\w)"
"""A unit written against its number (15kg, 32MPH): the number is a quantity all the same."""
_NUMBER = re.compile(
    # Not part of a fraction (1/2), a time (3:30), an ordinal (5th), a version or a word (A4).
    rf"(?<![\w.:/])(?P<digits>{_DIGITS})(?:(?={_GLUED})|(?![\w:]|/\d|[.,]\d))"
    r"(?P<percent>\s?(?:%|percent\b))?"
    rf"|(?<![\w-])(?P<word>(?:{'|'.join(_TENS)})-(?:{'|'.join(_UNITS[1:])})|{_COUNT_WORDS})(?![\w-])",
    re.IGNORECASE,
)
_ANY = re.compile(rf"\d+(?:\.\d+)?|\.\d+|\b(?:{'|'.join(_TENS + _TEENS + _UNITS[2:])})\b", re.I)
"""Any number a text writes, as a quantity or not: the 6 of 1/6, the 11 of 7:11, fifty-dollar."""
_CENTS = re.compile(r"\s?(?:cents?\b|\u00a2)", re.I)
_WORKED = re.compile(rf"(?<![\w.])(?P<digits>{_DIGITS})(?![\w]|[.,]\d)(?P<percent>)")
"""A number in a solution's prose, where 4500/3 is a division, not a fraction."""


@dataclass(frozen=True)
class Mention:
    """One number written in a text: where, its value, and how it is written."""

    start: int
    end: int
    value: Fraction
    places: int
    """Digits after the decimal point as written (2 in 1.50)."""
    commas: bool
    word: bool
    percent: bool
    hundredths: bool
    """A percent or cents: a solution may use its hundredth (30% as .3, 45 cents as 0.45)."""
    referring: bool
    """A count word after a determiner ("the three measurements"): a group set up elsewhere.
    Digits after one ("out of the 200 students") introduce the quantity as often as not."""


def mentions(text: str) -> list[Mention]:
    """Every number a question writes as a quantity, digits or a count word, in order."""
    return [_mention(match) for match in _NUMBER.finditer(text)]


def worked(text: str) -> list[Mention]:
    """Every number written in digits in a solution's prose, in order."""
    return [_mention(match) for match in _WORKED.finditer(text)]


def written_values(text: str) -> set[Fraction]:
    """Every value `text` writes in digits or number words, as a quantity or not."""
    return {
        Fraction(_word_value(n) if n[0].isalpha() else n)
        for n in _ANY.findall(text.replace(",", ""))
    }


def _mention(match: re.Match[str]) -> Mention:
    digits, word = match.group("digits"), match.groupdict().get("word")
    start = match.start()
    if word is not None:
        value = Fraction(_word_value(word))
        referring = _REFERRING.search(match.string, max(0, start - 12), start) is not None
        return Mention(start, match.end(), value, 0, False, True, False, False, referring)
    end = match.end("digits")
    places = len(digits.partition(".")[2])
    value = Fraction(digits.replace(",", ""))
    percent = bool(match.group("percent"))
    hundredths = percent or _CENTS.match(match.string, match.end()) is not None
    return Mention(start, end, value, places, "," in digits, False, percent, hundredths, False)


def _word_value(word: str) -> int:
    tens, _, unit = word.lower().partition("-")
    return _WORD_VALUES[tens] + (_WORD_VALUES[unit] if unit else 0)


def decimal_places(value: Fraction) -> int | None:
    """Digits after the point that write `value` exactly; None when no finite number does."""
    denominator = value.denominator
    for places in range(12):
        if (10**places) % denominator == 0:
            return places
    return None


def plain(value: Fraction) -> str:
    """`value` as a calculator annotation writes it: 24, 3.5, -10. Value: a finite decimal."""
    return written(value, decimal_places(value) or 0, commas=False)


def written(value: Fraction, places: int, commas: bool) -> str:
    """`value` with `places` decimals (more if it needs them), thousands commas if asked."""
    places = max(places, decimal_places(value) or 0)
    scaled = abs(value) * 10**places
    whole, fraction = divmod(int(scaled), 10**places)
    text = f"{whole:,}" if commas else str(whole)
    if places:
        text += "." + str(fraction).zfill(places)
    return "-" + text if value < 0 else text


def rewritten(mention: Mention, text: str, value: Fraction) -> str:
    """`value` written as `mention` wrote its own number in `text`: a word for a word, if any."""
    if mention.word and value.denominator == 1 and 2 <= value < 100:
        word = _as_word(int(value))
        return word.capitalize() if text[mention.start].isupper() else word
    return written(value, mention.places, mention.commas)


def _as_word(value: int) -> str:
    if value < 20:
        return (_UNITS + _TEENS)[value]
    tens, unit = divmod(value, 10)
    return _TENS[tens - 2] + (f"-{_UNITS[unit]}" if unit else "")
