"""Numbers a solution brings itself, cued by a word of its question: "half" brings 2."""

from __future__ import annotations

import re

# An ordinal ("the second month", "the third day") cues nothing. A question number equal to
# one of them stays as it is: the solution's use of that value might be either.
CUES: dict[str, tuple[int, ...]] = {
    r"half|halves|twice|double|both|pairs?|couples?|twins?|each other": (2,),
    r"triple|triplets?|thrice|thirds|(?:a|one|two)[- ]third": (3,),
    r"quadruple|quadrupled": (4,),
    r"quarters?|fourths?": (4, 25, 100),
    r"fifths?": (5,),
    r"sixths?|sevenths?|eighths?|ninths?|tenths?": (6, 7, 8, 9, 10),
    r"dozens?": (12,),
    r"weeks?|weekly": (7, 52),
    r"weekdays?|work ?days?|weekends?": (5, 2),
    # A day brings 24 where its question speaks of hours, 30 where of a month: those words cue them.
    r"days?|daily|nights?": (7, 365),
    r"hours?|hrs?|minutes?|mins?|seconds|(?:a|per|one) second|hourly": (60, 24, 3600),
    r"months?|monthly|years?|yearly|annual|january|february|march|april|may|june|july|august"
    r"|september|october|november|december": (12, 52, 365, 30, 31),
    r"months?|monthly": (4,),
    r"decades?": (10,),
    # A dollar brings 100 only where the question counts cents or coins, which cue it themselves.
    r"centur(?:y|ies)|percent(?:ages?)?|%|cents?|penn(?:y|ies)|coins?": (100,),
    r"feet|foot|inch(?:es)?": (12,),
    r"yards?": (3,),
    r"miles?": (5280,),
    r"pounds?|ounces?|oz|lbs?": (16,),
    r"gallons?|quarts?": (4,),
    r"pints?": (2, 8),
    r"dimes?": (10, 100),
    r"nickels?": (5, 100),
    r"thousand|kilo\w*|grams?|meters?|liters?|millimeters?": (1000, 100),
}


def cued_by(question: str) -> set[int]:
    """The numbers the question's words may bring into its solution."""
    return {
        value for pattern, values in CUES.items() for value in values if _cues(pattern, question)
    }


def _cues(pattern: str, question: str) -> bool:
    return re.search(rf"(?<![a-z])(?:{pattern})(?![a-z])", question, re.IGNORECASE) is not None


_ORDINALS = ["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_ORDINAL = re.compile(rf"\b(?:(?P<word>{'|'.join(_ORDINALS)})|(?P<digits>\d+)(?:nd|rd|th))\b", re.I)


def ordinals(question: str) -> set[int]:
    """The values of the ordinals a question writes ("her third eight days" 3, "the 5th" 5)."""
    return {
        _ORDINALS.index(m["word"].lower()) + 2 if m["word"] else int(m["digits"])
        for m in _ORDINAL.finditer(question)
    }
