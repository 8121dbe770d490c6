"""Argument checks of the Python API: each raises a ConfigError naming the argument, as the
command line's checks name the flag."""

from __future__ import annotations

import math

from hps.errors import ConfigError

MAX_SEED = 2**32 - 1
"""Seeds are unsigned 32-bit integers (what jax.random.key and numpy's generators take)."""
MAX_COUNT = 2**31 - 1
"""Counts (evaluations, plans, steps) stay within int32, the arrays' index type."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_choice(value: object, choices, name: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(name, "", f"must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_count(value: object, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    if not _is_int(value) or not minimum <= value <= maximum:
        raise ConfigError(name, "", f"must be an integer in {minimum}..{maximum:,}, got {value!r}")
    return int(value)


def check_seed(value: object, name: str = "seed") -> int:
    return check_count(value, name, 0, MAX_SEED)


def check_seconds(value: object, name: str) -> float:
    """A positive number of seconds (inf: no limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(name, "", f"must be a positive number of seconds, got {value!r}")
    return float(value)


def check_positive(value: object, name: str) -> float:
    """A positive, finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ConfigError(name, "", f"must be a positive, finite number, got {value!r}")
    return float(value)
