"""BFCL's checkers and executable backends, imported without the model clients its package
imports beside them.

`bfcl_eval.eval_checker.ast_eval.ast_checker` imports `bfcl_eval.constants.model_config`
for one table, `MODEL_CONFIG_MAPPING`, read only to learn whether a model's function names
had their dots replaced by underscores; that module imports every model handler and so
every vendor's SDK (mistralai, cohere, google-genai, qwen-agent, boto3, ...), with pins
that conflict with this project's numpy. A stand-in module holds the one entry agent-eval's
calls need: tools reach the model in OpenAI's format, whose names allow no dots, so dots
became underscores (BFCL's own OpenAI function-calling handlers say the same).
Its constants module also makes result/, score/ and .file_locks/ folders on import, beside the
package unless BFCL_PROJECT_ROOT says where: in site-packages, which may be read-only. They are
put in a folder of the user's own under the temporary directory instead.
Checked against bfcl-eval 2026.3.23.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from dataclasses import dataclass
from types import ModuleType

MODEL_CONFIG = "bfcl_eval.constants.model_config"
MODEL_NAME = "agent-eval"
"""The model name agent-eval gives BFCL's checkers (`model_name` in their signatures)."""


@dataclass(frozen=True)
class _ModelConfig:
    """The one field of BFCL's ModelConfig its checkers read."""

    underscore_to_dot: bool = True


def bfcl_module(name: str) -> ModuleType:
    """`bfcl_eval.<name>`, imported with the stand-in model table.

    Raises: ModuleNotFoundError when bfcl-eval is not installed.
    """
    scratch = os.path.join(tempfile.gettempdir(), f"agent-eval-bfcl-{os.getuid()}")
    os.environ.setdefault("BFCL_PROJECT_ROOT", scratch)  # read once, when BFCL's constants load
    if MODEL_CONFIG not in sys.modules:
        stand_in = ModuleType(MODEL_CONFIG, "agent-eval's stand-in: see agent_eval.shims")
        stand_in.MODEL_CONFIG_MAPPING = {MODEL_NAME: _ModelConfig()}  # type: ignore[attr-defined]
        sys.modules[MODEL_CONFIG] = stand_in
    return importlib.import_module(f"bfcl_eval.{name}")
