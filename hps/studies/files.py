"""JSON files of a run folder: deterministic text, written atomically (hps.config.files), read
back leniently (a missing or unreadable item is recomputed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np


def json_ready(value):
    """`value` with NaN / inf as None and numpy scalars as Python numbers and bools, recursively
    (dicts, lists, tuples), so that strict JSON (allow_nan=False) can hold it."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(document) -> str:
    """Deterministic JSON: sorted keys, two-space indent, no NaN/inf, newline at the end."""
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"


def read_json(path):
    """The document in `path`, or None when it is missing or not valid JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
