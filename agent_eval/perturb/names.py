"""`names`: the people and a few objects of a problem renamed, the gold unchanged (GSM-Symbolic)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from agent_eval.data import Sample
from agent_eval.perturb.base import Variant

# Common first names of several origins, by the pronoun a problem uses for them, so that a
# swap keeps "she" and "he" right.
FEMALE = [
    "Janet",
    "Mary",
    "Emma",
    "Olivia",
    "Sophia",
    "Ava",
    "Mia",
    "Isabella",
    "Amelia",
    "Grace",
    "Chloe",
    "Lily",
    "Hannah",
    "Sarah",
    "Emily",
    "Rachel",
    "Anna",
    "Julia",
    "Laura",
    "Maria",
    "Rosa",
    "Carmen",
    "Lucia",
    "Sofia",
    "Elena",
    "Ana",
    "Priya",
    "Aisha",
    "Fatima",
    "Leila",
    "Mei",
    "Yuki",
    "Sakura",
    "Hana",
    "Amara",
    "Zara",
    "Nadia",
    "Ingrid",
    "Freya",
    "Marta",
    "Chiara",
    "Nia",
    "Ayesha",
    "Kiara",
    "Tamika",
    "Jane",
    "Susan",
    "Lisa",
    "Amy",
    "Kate",
    "Anne",
    "Julie",
    "Betty",
    "Carla",
    "Tina",
    "Nancy",
    "Alice",
    "Jenny",
    "Megan",
    "Claire",
    "Sally",
    "Linda",
    "Helen",
    "Nina",
    "Lucy",
    "Ella",
    "Ruby",
    "Zoe",
    "Jessica",
    "Jennifer",
    "Melissa",
    "Karen",
    "Rebecca",
    "Brenda",
    "Carol",
]
MALE = [
    "John",
    "James",
    "Michael",
    "David",
    "Robert",
    "William",
    "Thomas",
    "Daniel",
    "Mark",
    "Paul",
    "Peter",
    "George",
    "Jack",
    "Henry",
    "Samuel",
    "Carlos",
    "Jose",
    "Luis",
    "Diego",
    "Miguel",
    "Juan",
    "Ahmed",
    "Omar",
    "Ali",
    "Hassan",
    "Raj",
    "Arjun",
    "Ravi",
    "Wei",
    "Hiroshi",
    "Kenji",
    "Chen",
    "Tariq",
    "Kwame",
    "Kofi",
    "Jamal",
    "Andre",
    "Lars",
    "Sven",
    "Marco",
    "Luca",
    "Ivan",
    "Dmitri",
    "Mateo",
    "Tyrone",
    "Tom",
    "Sam",
    "Ben",
    "Joe",
    "Bob",
    "Jim",
    "Tim",
    "Max",
    "Jake",
    "Kevin",
    "Brian",
    "Eric",
    "Steve",
    "Tony",
    "Carl",
    "Adam",
    "Ryan",
    "Nick",
    "Ethan",
    "Noah",
    "Liam",
    "Jason",
    "Gary",
    "Frank",
    "Bill",
    "Jerry",
    "Greg",
    "Josh",
    "Matt",
    "Chris",
    "Andrew",
    "Anthony",
    "Richard",
]
_BY_NAME = {name: group for group in (FEMALE, MALE) for name in group}
_NAME = re.compile(rf"\b(?:{'|'.join(_BY_NAME)})\b")

# Objects a problem counts that another of its kind can stand in for; plurals add an "s".
_OBJECTS = (
    ("apple", "orange", "pear", "peach", "plum"),
    ("cookie", "muffin", "cupcake", "brownie", "pastry"),
    ("pencil", "crayon", "marker", "eraser"),
    ("marble", "sticker", "button", "bead"),
    ("book", "magazine", "notebook", "comic"),
    ("toy car", "toy robot", "toy train"),
)
_KIND = {thing: kind for kind in _OBJECTS for thing in kind}
_THING = re.compile(rf"\b({'|'.join(_KIND)})(s?)\b", re.IGNORECASE)


def new_names(sample: Sample, rng: random.Random) -> Variant | None:
    """`sample` with its people and counted objects renamed alike in question and answer."""
    if not sample.question or sample.answer is None:
        return None
    texts = (sample.question, sample.answer)
    found = renames(texts, rng)
    if not found:
        return None
    question, answer = (renamed(text, found) for text in texts)
    return Variant(question, answer)


def renames(texts: Iterable[str], rng: random.Random) -> dict[str, str]:
    """A new name for each person the first text mentions and each counted object the texts
    mention, none of them a name the texts already use."""
    texts = tuple(texts)
    return _people_renamed(texts, rng) | _objects_renamed(texts, rng)


def people(text: str) -> list[str]:
    """The first names from the built-in lists that `text` mentions, in order of appearance."""
    return list(dict.fromkeys(_NAME.findall(text)))


def _people_renamed(texts: Iterable[str], rng: random.Random) -> dict[str, str]:
    texts = tuple(texts)
    found = people(" ".join(texts))
    taken = set(found)
    renames: dict[str, str] = {}
    for name in people(texts[0]):
        choices = [other for other in _BY_NAME[name] if other not in taken]
        renames[name] = rng.choice(choices)
        taken.add(renames[name])
    return renames


def _objects_renamed(texts: Iterable[str], rng: random.Random) -> dict[str, str]:
    mentioned = [match.group(1).lower() for text in texts for match in _THING.finditer(text)]
    taken = set(mentioned)
    renames: dict[str, str] = {}
    for thing in dict.fromkeys(mentioned):
        choices = [other for other in _KIND[thing] if other not in taken]
        if choices:
            renames[thing] = rng.choice(choices)
            taken.add(renames[thing])
    return renames


def renamed(text: str, renames: dict[str, str]) -> str:
    """`text` with each name of `renames` (people and objects, plurals too) replaced."""
    people_renamed = _NAME.sub(lambda match: renames.get(match.group(0), match.group(0)), text)
    return _THING.sub(lambda match: _thing_renamed(match, renames), people_renamed)


def _thing_renamed(match: re.Match[str], renames: dict[str, str]) -> str:
    thing, plural = match.group(1), match.group(2)
    new = renames.get(thing.lower())
    if new is None:
        return match.group(0)
    return (new.capitalize() if thing[0].isupper() else new) + plural
