"""Ray's note that it set no SIGTERM handler, kept out of the harness's terminal.

`ray.init` off the main thread warns "SIGTERM handler is not set because current thread is not
the main thread." through the logger of its private module `ray._private.worker`. The harness
starts Ray off the main thread on purpose and handles SIGTERM itself. Ray has no setting for
this one note; its logging level would hide every warning. Checked against ray 2.60.0.
"""

from __future__ import annotations

import logging

SIGTERM_NOTE = "SIGTERM handler is not set"
_LOGGER = "ray._private.worker"


def hide_sigterm_note() -> None:
    """Drop Ray's SIGTERM note from its log; calling it again changes nothing."""
    logging.getLogger(_LOGGER).addFilter(_not_the_sigterm_note)


def _not_the_sigterm_note(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(SIGTERM_NOTE)
