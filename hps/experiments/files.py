"""Files of a run folder, written atomically (temporary file in the same folder, then os.replace),
so a kill never leaves a half-written results.json, item or report."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_text_atomic(path, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(path).name}-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def json_text(document) -> str:
    """Deterministic JSON: sorted keys, two-space indent, no NaN/inf, newline at the end."""
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_json_atomic(path, document) -> None:
    write_text_atomic(path, json_text(document))


def read_json(path):
    """The document in `path`, or None when it is missing or not valid JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
