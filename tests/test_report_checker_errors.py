"""The report's count of BFCL's error types per category: wrong scored attempts only, most first,
as text."""

from __future__ import annotations

from typing import Any

from agent_eval.metrics import AttemptScore
from agent_eval.report.checker_errors import checker_errors, checker_errors_section
from tests.helpers.records import attempt
from tests.helpers.reports import EVIL, Page

COUNT = "simple_function_checker:wrong_count"
VALUE = "value_error:string"


def bfcl(n: int, category: str, error_type: str | None, **kw: Any) -> AttemptScore:
    found = {"category": category, "error_type": error_type, "error": "why"}
    return attempt(f"{category}_{n}", 0, error_type is None, benchmark=found, **kw)


def test_wrong_attempts_are_counted_by_category_and_error_type() -> None:
    scores = [
        bfcl(0, "simple_python", None),
        bfcl(1, "simple_python", VALUE),
        bfcl(2, "simple_python", VALUE),
        bfcl(3, "simple_python", COUNT),
        bfcl(4, "parallel", COUNT),
        bfcl(5, "parallel", EVIL),
        bfcl(6, "parallel", VALUE, scored=False, error_kind="timeout"),  # unscored: not counted
        attempt("gsm8k_0", 0, False),  # no benchmark's: not counted
    ]
    assert checker_errors(scores) == {
        ("simple_python", VALUE): 2,
        ("simple_python", COUNT): 1,
        ("parallel", COUNT): 1,
        ("parallel", EVIL): 1,
    }
    rows = Page(checker_errors_section(scores)).rows["checker-error-types"]
    assert rows[1] == ["simple_python", VALUE, "2"]  # most first
    assert ["parallel", EVIL, "1"] in rows  # escaped, read back as text


def test_a_run_without_error_types_has_no_section() -> None:
    assert checker_errors_section([bfcl(0, "simple_python", None), attempt("x", 0)]) == ""
