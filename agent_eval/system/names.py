"""File names built from input (session ids, sample ids): nothing that leaves the folder."""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
MAX_STEM = 80


def safe_stem(text: str, empty: str = "unnamed") -> str:
    """`text` as a file name without separators, leading dot or unbounded length (`empty` when
    nothing is left); when cleaning changed it, a short hash of the original keeps distinct
    texts apart."""
    clean = _UNSAFE.sub("_", text).lstrip(".")[:MAX_STEM]
    if clean != text or not clean:
        digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
        clean = f"{clean or empty}-{digest}"
    return clean
