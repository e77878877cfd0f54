"""The search space: run settings by dotted key, each with the distribution a trial draws from.

space.yaml maps keys to one of `{float: [low, high]}`, `{int: [low, high]}` (either with
`log: true` or a `step`) or `{categorical: [a, b, ...]}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_eval.errors import ConfigError
from agent_eval.run.config import RunConfig
from agent_eval.settings import check_key, read_yaml, validation_message

if TYPE_CHECKING:
    import optuna

Choice = str | int | float | bool | None
TUNE_OWNS = ("output", "dataset.subset")
"""Settings the tune sets for each trial itself: searching them would lose its results."""


class Dimension(BaseModel):
    """One setting's distribution, as space.yaml writes it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    float_range: tuple[float, float] | None = Field(None, alias="float")
    int_range: tuple[int, int] | None = Field(None, alias="int")
    categorical: list[Choice] | None = None
    log: bool = False
    step: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        kinds = [self.float_range, self.int_range, self.categorical]
        if sum(kind is not None for kind in kinds) != 1:
            raise ValueError("give one of float: [low, high], int: [low, high], categorical")
        if self.categorical is not None:
            return self._check_choices(self.categorical)
        low, high = self.float_range or self.int_range or (0, 0)
        if not low < high:
            raise ValueError(f"the range [{low}, {high}] is empty: low must be below high")
        if self.log and low <= 0:
            raise ValueError(f"log: true needs a low above 0, got {low}")
        if self.log and self.step is not None:
            raise ValueError("give log: true or a step, not both")
        if self.int_range is not None and self.step is not None and self.step != int(self.step):
            raise ValueError(f"an int range takes a whole step, got {self.step}")
        return self

    def _check_choices(self, choices: list[Choice]) -> Self:
        if len(choices) < 2:
            raise ValueError("categorical needs at least two choices")
        if self.log or self.step is not None:
            raise ValueError("log and step apply to ranges, not to categorical choices")
        return self

    def extremes(self) -> list[Any]:
        """The values a trial can draw that are likeliest to be refused: the ends, each choice."""
        if self.categorical is not None:
            return list(self.categorical)
        return list(self.float_range or self.int_range or ())

    def suggest(self, trial: optuna.Trial, key: str) -> Any:
        """This dimension's value for `trial`, drawn by the study's sampler."""
        if self.float_range is not None:
            low, high = self.float_range
            return trial.suggest_float(key, low, high, log=self.log, step=self.step)
        if self.int_range is not None:
            low, high = self.int_range
            return trial.suggest_int(key, low, high, log=self.log, step=int(self.step or 1))
        assert self.categorical is not None, "a dimension has one kind"
        return trial.suggest_categorical(key, self.categorical)

    def as_written(self) -> dict[str, Any]:
        """The dimension as space.yaml gives it, for the study's record."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


class SearchSpace:
    """The settings a tune searches, each checked against the run config's keys."""

    def __init__(self, dimensions: dict[str, Dimension], source: Path) -> None:
        self.dimensions, self.source = dimensions, source

    @classmethod
    def load(cls, path: Path) -> Self:
        """space.yaml read and checked: known keys, one distribution each, non-empty ranges."""
        raw = read_yaml(path)
        if not raw:
            raise ConfigError(f"{path} names no setting to search; see configs/tune/space.yaml")
        dimensions = {}
        for key, written in raw.items():
            _check_searchable(str(key), path)
            if not isinstance(written, dict):
                raise ConfigError(
                    f"{path}: {key} must map to a distribution such as {{float: [0.0, 1.0]}}, "
                    f"not {written!r}"
                )
            dimensions[str(key)] = _dimension(str(key), written, path)
        return cls(dimensions, path)

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Every setting's value for `trial`, by dotted key."""
        return {key: dimension.suggest(trial, key) for key, dimension in self.dimensions.items()}

    def as_written(self) -> dict[str, dict[str, Any]]:
        """The space as space.yaml gives it (checked), for the study's record."""
        return {key: dimension.as_written() for key, dimension in self.dimensions.items()}

    def corners(self) -> list[dict[str, Any]]:
        """One setting at a time at each of its extremes: the values to try before any launch."""
        return [
            {key: value}
            for key, dimension in self.dimensions.items()
            for value in dimension.extremes()
        ]


def _check_searchable(key: str, path: Path) -> None:
    try:
        check_key(RunConfig, key)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if any(key == owned or key.startswith(f"{owned}.") for owned in TUNE_OWNS):
        raise ConfigError(
            f"{path}: {key} is set by the tune for each trial (its run directory, the subset); "
            "leave it out of the space"
        )


def _dimension(key: str, written: dict[str, Any], path: Path) -> Dimension:
    try:
        return Dimension.model_validate(written)
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        raise ConfigError(f"{path}: {key}: {problems}") from None


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field {where!r} (known: float, int, categorical, log, step)"
    message = validation_message(error)
    return f"{where}: {message}" if where else message
