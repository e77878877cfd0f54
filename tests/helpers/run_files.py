"""Run files written by tests, checked against the JSON Schemas of the results' models."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

from agent_eval.results.schemas import record_schema, summary_schema


@cache
def _validators() -> tuple[jsonschema.Draft202012Validator, jsonschema.Draft202012Validator]:
    return jsonschema.Draft202012Validator(record_schema()), jsonschema.Draft202012Validator(
        summary_schema()
    )


def valid_record(line: dict[str, Any]) -> dict[str, Any]:
    """`line`, once checked to be a samples.jsonl line as agent-eval writes it."""
    _validators()[0].validate(line)
    return line


def valid_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """`summary`, once checked to be a summary.json as agent-eval writes it."""
    _validators()[1].validate(summary)
    return summary
