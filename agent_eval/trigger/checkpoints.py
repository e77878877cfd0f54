"""Find the checkpoints a trainer has finished writing, each once, for `agent-eval watch`.

    finder = CheckpointFinder(Path("runs/grpo"), settle_seconds=30)
    while training:
        for checkpoint in await asyncio.to_thread(finder.poll):
            evaluate(checkpoint.path, checkpoint.step)
        await asyncio.sleep(10)

What counts as a checkpoint, under `root`:
- a Hugging Face model directory: a directory directly under `root` holding `config.json`, or
  its `huggingface/` or `actor/huggingface/` subdirectory (verl saves
  `global_step_N/actor/huggingface/`). `root` itself counts too when it holds `config.json`:
  HF Trainer's final `save_model()` writes there, next to its `checkpoint-N` directories, and
  one may watch a single directory being copied.
- a `.gguf` file directly under `root`, for llama.cpp; a split model
  (`name-00001-of-00003.gguf`) is one checkpoint: its first part, once every part is there.

A checkpoint is complete when all of these hold:
- its weights are there: the files `model.safetensors.index.json` names, else
  `model.safetensors`, else the same for `pytorch_model.bin` (the first format present must be
  whole, as SGLang's loader picks safetensors whenever they are present); weight files are
  not empty.
- nothing looks in progress: no name ending in .tmp, .temp, .part, .partial, .incomplete,
  .lock or .gstmp, no rsync temporary (`.name.XXXXXX`); the directory's own name carries no
  `tmp`/`temp`/`partial`/`incomplete` word and does not start with a dot.
- the names, sizes and mtimes of its files (the top level of the model directory: trainers put
  optimizer shards in subdirectories SGLang never reads) are the same at two polls at least
  `settle_seconds` apart. Recent HF Trainers write straight into `checkpoint-N`, so a name
  alone never proves a save is over, and a copy in progress keeps growing.

Steps come from the directory or file name: the number after the last `checkpoint`, `ckpt`,
`step` or `iter` (`checkpoint-500`, `global_step500`, `step_500`, `iter_0000500`,
`epoch_3_step_500`, AReaL's `epoch1epochstep5globalstep500`), else the last number in the name
once quantisation tags such as `Q4_K_M` or `f16` are dropped. `root` itself takes a step only
from a keyword, since a run's name (`run-3`) rarely numbers a step. A checkpoint without a step
(`final`, `best`) gets the step after the largest this finder has returned, with a warning, so
it sorts as the newest: it is usually the model saved when training ended.

Paths are resolved through symlinks and reported once for the finder's life, even if rewritten
later: a `latest` link to a checkpoint under `root` is that checkpoint, not another one.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import total_ordering
from pathlib import Path

import orjson

from agent_eval.errors import ConfigError

log = logging.getLogger(__name__)

# Staging names seen in trainers: HF Trainer saved to `tmp-checkpoint-N`, then renamed, in
# transformers 4.36-4.38 (PRs #28364, #28848; removed by #29370) and again briefly in 2025
# (#35580, reverted by #36112); NeMo RL stages into `.<name>.staging-<id>` (PR #3864); Orbax
# into `<name>.orbax-checkpoint-tmp-<time>`.
_IN_PROGRESS_NAME = re.compile(r"(?i)(?:^|[-_.])(?:tmp|temp|partial|incomplete)(?:$|[-_.])")
# Files being written: editors and savers (.tmp), downloaders (.part, .incomplete as in the
# huggingface_hub cache), file locks, gsutil (.gstmp).
_IN_PROGRESS_SUFFIXES = (".tmp", ".temp", ".part", ".partial", ".incomplete", ".lock", ".gstmp")
# rsync writes `.name.XXXXXX` (mktemp) and renames it when the file is whole.
_RSYNC_TEMP = re.compile(r"^\..+\.[A-Za-z0-9]{6}$")
_STEP_KEYWORD = re.compile(r"(?i)(?:checkpoint|ckpt|step|iter)[-_]?(\d+)")
_QUANT_TAG = re.compile(r"(?i)(?<![a-z0-9])(?:i?q\d(?:_[a-z0-9]{1,3})*|b?fp?(?:16|32))(?![a-z0-9])")
_NUMBER = re.compile(r"\d+")
_GGUF_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<parts>\d{5})\.gguf$")
_MODEL_SUBDIRS = ("", "huggingface", "actor/huggingface")
_WEIGHT_FORMATS = (
    ("model.safetensors.index.json", "model.safetensors"),
    ("pytorch_model.bin.index.json", "pytorch_model.bin"),
)

_Fingerprint = tuple[tuple[str, int, int], ...]  # (file name, size, mtime in ns), sorted


@total_ordering
@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: the path a server loads (directory or .gguf file) and its step."""

    path: Path
    step: int

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Checkpoint):
            return NotImplemented
        return (self.step, str(self.path)) < (other.step, str(other.path))


@dataclass(frozen=True)
class _Candidate:
    """Something under the root that may be a checkpoint, before it is checked."""

    path: Path  # what a server loads
    step: int | None
    gguf_parts: tuple[Path, ...] = ()  # every file of a .gguf model; () for a directory


@dataclass(frozen=True)
class _Look:
    """What one poll saw of a candidate."""

    fingerprint: _Fingerprint
    complete: bool


@dataclass
class _Sighting:
    """A candidate's fingerprint and since when it has been unchanged."""

    fingerprint: _Fingerprint
    since: float
    warned: bool = False


class CheckpointFinder:
    """Reports the checkpoints under `root` that became complete since the last `poll`.

    Cheap enough to call every few seconds through `asyncio.to_thread`: a poll stats files and
    reads only the small weight index JSON of checkpoints not yet reported. A checkpoint is
    reported at the earliest by the second poll that sees it, even with `settle_seconds=0`.
    Raises: ConfigError when `root` is not an existing directory or `settle_seconds` < 0.
    """

    def __init__(
        self,
        root: Path,
        settle_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if settle_seconds < 0:
            raise ConfigError(f"settle_seconds is {settle_seconds}; pass 0 or more seconds")
        self.root = Path(os.path.realpath(root))
        _check_root(self.root, root)
        self.settle_seconds = settle_seconds
        self._given_root = root
        self._clock = clock
        self._pending: dict[Path, _Sighting] = {}
        self._reported: set[Path] = set()
        self._max_step: int | None = None

    def poll(self) -> list[Checkpoint]:
        """The checkpoints that became complete since the last poll, oldest step first.

        Raises: ConfigError when `root` has gone or is unreadable.
        """
        _check_root(self.root, self._given_root)
        now = self._clock()
        ready: list[_Candidate] = []
        seen: set[Path] = set()
        for candidate in self._candidates():
            seen.add(candidate.path)
            if self._settled(candidate, now):
                ready.append(candidate)
        for gone in self._pending.keys() - seen:
            del self._pending[gone]  # deleted or renamed: a new sighting starts over
        return self._report(ready)

    def _candidates(self) -> Iterator[_Candidate]:
        """Every not yet reported candidate under the root, each path once."""
        found = [*_root_candidate(self.root), *self._children()]
        unique = {candidate.path: candidate for candidate in found}
        return (c for path, c in unique.items() if path not in self._reported)

    def _children(self) -> Iterator[_Candidate]:
        try:
            entries = list(os.scandir(self.root))
        except OSError as exc:
            raise ConfigError(f"cannot list checkpoint directory {self.root}: {exc}") from exc
        for entry in entries:
            # A `latest` link resolves to its target, which `_candidates` then keeps once.
            path = Path(os.path.realpath(entry.path)) if entry.is_symlink() else Path(entry.path)
            if not _looks_in_progress(entry.name) and not _looks_in_progress(path.name):
                yield from _child_candidate(path)

    def _settled(self, candidate: _Candidate, now: float) -> bool:
        """True once the candidate is complete and unchanged for `settle_seconds`."""
        look = _look(candidate)
        sighting = self._pending.get(candidate.path)
        if look is None:
            self._pending.pop(candidate.path, None)
            return False
        if sighting is None or sighting.fingerprint != look.fingerprint:
            self._pending[candidate.path] = _Sighting(look.fingerprint, now)
            return False
        if now - sighting.since < self.settle_seconds:
            return False
        if not look.complete and not sighting.warned:
            sighting.warned = True
            _warn_stalled(candidate.path, now - sighting.since)
        return look.complete

    def _report(self, ready: list[_Candidate]) -> list[Checkpoint]:
        """Give steps to the unnumbered, remember them all as reported; sorted by step."""
        numbered = sorted(Checkpoint(c.path, c.step) for c in ready if c.step is not None)
        unnumbered = sorted((c.path for c in ready if c.step is None), key=str)
        for checkpoint in numbered:
            self._max_step = max(checkpoint.step, self._max_step or 0)
        for path in unnumbered:
            step = 0 if self._max_step is None else self._max_step + 1
            log.warning("%s has no step in its name; it is reported as step %d", path, step)
            numbered.append(Checkpoint(path, step))
            self._max_step = step
        for checkpoint in numbered:
            self._reported.add(checkpoint.path)
            self._pending.pop(checkpoint.path, None)
            log.info("checkpoint complete: step %d at %s", checkpoint.step, checkpoint.path)
        return numbered


def step_of(name: str) -> int | None:
    """The training step a checkpoint's name carries (see the module docstring), or None."""
    if keyed := _STEP_KEYWORD.findall(name):
        return int(keyed[-1])
    numbers = _NUMBER.findall(_QUANT_TAG.sub("", name))
    return int(numbers[-1]) if numbers else None


def _check_root(root: Path, given: Path) -> None:
    """Raises: ConfigError unless `root` is an existing directory."""
    if not root.exists():
        raise ConfigError(
            f"checkpoint directory {given} does not exist: pass the directory the trainer saves "
            "checkpoints into (its output_dir), and create it first if training has not started"
        )
    if not root.is_dir():
        raise ConfigError(
            f"{given} is not a directory: pass the directory the trainer saves checkpoints "
            "into, the parent of its checkpoint-N directories or .gguf files"
        )


def _warn_stalled(path: Path, seconds: float) -> None:
    """Say why a checkpoint that stopped changing is still not reported."""
    hint = " (verl saves weights here only with hf_model in checkpoint.save_contents)"
    log.warning(
        "%s has not changed for %.0f s but is incomplete: weights missing, or files that look "
        "in progress (*.tmp, *.lock, ...); it is reported once that changes%s",
        path,
        seconds,
        hint if path.name == "huggingface" else "",
    )


def _looks_in_progress(name: str) -> bool:
    return name.startswith(".") or bool(_IN_PROGRESS_NAME.search(name))


def _model_dir(path: Path) -> Path | None:
    """The directory holding the model's config.json in a checkpoint directory, if any."""
    for sub in _MODEL_SUBDIRS:
        if (path / sub / "config.json").is_file():
            return path / sub
    return None


def _root_candidate(root: Path) -> Iterator[_Candidate]:
    if (model_dir := _model_dir(root)) is not None:
        keyed = _STEP_KEYWORD.findall(root.name)
        yield _Candidate(model_dir, int(keyed[-1]) if keyed else None)


def _child_candidate(path: Path) -> Iterator[_Candidate]:
    if path.suffix == ".gguf" and path.is_file():
        yield from _gguf_candidate(path)
    elif (model_dir := _model_dir(path)) is not None:
        yield _Candidate(model_dir, step_of(path.name))


def _gguf_candidate(path: Path) -> Iterator[_Candidate]:
    """A .gguf model; a split one is named by its first part and counts all of them."""
    split = _GGUF_SPLIT.match(path.name)
    if split is None:
        yield _Candidate(path, step_of(path.stem), gguf_parts=(path,))
    elif int(split["part"]) == 1:
        stem, count = split["stem"], int(split["parts"])
        parts = tuple(
            path.with_name(f"{stem}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)
        )
        yield _Candidate(path, step_of(stem), gguf_parts=parts)


def _look(candidate: _Candidate) -> _Look | None:
    """The candidate's fingerprint and completeness now; None when it cannot be read."""
    try:
        if candidate.gguf_parts:
            return _look_gguf(candidate.gguf_parts)
        return _look_model_dir(candidate.path)
    except OSError as exc:
        # Rotation (save_total_limit) may delete a checkpoint while we look at it.
        log.debug("cannot inspect %s: %s", candidate.path, exc)
        return None


def _look_gguf(parts: tuple[Path, ...]) -> _Look:
    files = {path.name: stat for path in parts if (stat := _stat(path)) is not None}
    complete = len(files) == len(parts) and all(size for size, _ in files.values())
    return _Look(_fingerprint(files), complete)


def _look_model_dir(model_dir: Path) -> _Look:
    files: dict[str, tuple[int, int]] = {}
    busy = False
    with os.scandir(model_dir) as entries:
        for entry in entries:
            busy = busy or _file_in_progress(entry.name)
            if entry.is_file():
                stat = entry.stat()
                files[entry.name] = (stat.st_size, stat.st_mtime_ns)
    sizes = {name: size for name, (size, _) in files.items()}
    complete = not busy and "config.json" in files and _weights_complete(model_dir, sizes)
    return _Look(_fingerprint(files), complete)


def _file_in_progress(name: str) -> bool:
    return name.endswith(_IN_PROGRESS_SUFFIXES) or bool(_RSYNC_TEMP.match(name))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _fingerprint(files: Mapping[str, tuple[int, int]]) -> _Fingerprint:
    return tuple(sorted((name, size, mtime) for name, (size, mtime) in files.items()))


def _weights_complete(model_dir: Path, sizes: Mapping[str, int]) -> bool:
    """True when the first weight format present is whole: its index's shards, or its file."""
    for index, single in _WEIGHT_FORMATS:
        if index in sizes:
            return _shards_present(model_dir / index, sizes)
        if single in sizes:
            return sizes[single] > 0
    return False


def _shards_present(index: Path, sizes: Mapping[str, int]) -> bool:
    """True when every shard the index's weight_map names is there and not empty."""
    try:
        weight_map = orjson.loads(index.read_bytes())["weight_map"]
        shards = set(weight_map.values())
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return False  # an index still being written, or not an index
    return bool(shards) and all(sizes.get(shard, 0) > 0 for shard in shards)
