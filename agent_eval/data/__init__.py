"""Datasets: loaders that stream samples and sessions, and the small sets the project ships."""

from __future__ import annotations

from agent_eval.data.errors import DataError
from agent_eval.data.loaders import DATASETS, DatasetSpec, dataset_file, load_dataset
from agent_eval.data.records import Item, Sample, Session, Turn

__all__ = [
    "DATASETS",
    "DataError",
    "DatasetSpec",
    "Item",
    "Sample",
    "Session",
    "Turn",
    "dataset_file",
    "load_dataset",
]
