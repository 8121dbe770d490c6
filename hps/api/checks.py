"""Argument checks of the Python API: each raises a ConfigError naming the argument, as the
command line's checks name the flag. Numbers may be Python or numpy scalars (np.int64 where a
count is taken, np.float32 or np.int64 where a number is); each check returns a Python int or
float, so what the API keeps and prints holds no numpy scalar."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable

from hps.config.validation import as_real, describe, is_integer
from hps.errors import ConfigError

MAX_SEED = 2**32 - 1
"""Seeds are unsigned 32-bit integers (what jax.random.key and numpy's generators take)."""
MAX_COUNT = 2**31 - 1
"""Counts (evaluations, plans, steps) stay within int32, the arrays' index type."""


def check_choice(value: object, choices, name: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(name, "", f"must be one of {', '.join(choices)}; got {describe(value)}")
    return value


def check_count(value: object, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer (int or numpy integer) in minimum..maximum, as int."""
    if not is_integer(value) or not minimum <= value <= maximum:
        raise ConfigError(name, "", f"must be an integer in {minimum}..{maximum:,}, got {describe(value)}")
    return int(value)


def check_seed(value: object, name: str = "seed") -> int:
    return check_count(value, name, 0, MAX_SEED)


def check_seconds(value: object, name: str) -> float:
    """A positive number of seconds, finite or inf (no limit); an integer too large for a float
    is refused."""
    seconds = as_real(value)
    if seconds is None or not seconds > 0 or (math.isinf(seconds) and is_integer(value)):
        raise ConfigError(name, "", f"must be a positive number of seconds (or inf), got {describe(value)}")
    return seconds


def check_positive(value: object, name: str) -> float:
    """A positive, finite number."""
    number = as_real(value)
    if number is None or not (math.isfinite(number) and number > 0):
        raise ConfigError(name, "", f"must be a positive, finite number, got {describe(value)}")
    return number


def check_flag(value: object, name: str) -> bool:
    """A bool (a numpy bool included)."""
    kind = type(value)
    if not (isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))):
        raise ConfigError(name, "", f"must be True or False, got {describe(value)}")
    return bool(value)


def check_path(value: object, name: str) -> str:
    """A path: a non-empty str or an os.PathLike (pathlib.Path), as str."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str) or not path:
        raise ConfigError(name, "", f"must be a path (a str or pathlib.Path), got {describe(value)}")
    return path


def as_tuple(values: object, name: str) -> tuple:
    """Any iterable but a str (a list, a tuple, a generator, read once) as a tuple; ConfigError
    naming `name` for anything else."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ConfigError(name, "", f"must be a sequence (any iterable but a str), got {describe(values)}")
    return tuple(values)


NUMBER_FIELDS = ("batch", "throughput", "samples", "budget_per_hour", "micro_batches", "micro_batch")
INTEGER_FIELDS = ("chunks", "zero")


def plain_job(job):
    """`job` with its numbers as Python floats and its counts as Python ints where they are
    numpy (or other non-builtin real) scalars: what the models compute with and the reports
    print. Python ints and floats, and values that are not numbers, are kept (`validate_job`
    names the latter)."""
    changes = {}
    for name in NUMBER_FIELDS:
        value = getattr(job, name)
        number = as_real(value)
        plain = type(value) in (int, float) or (math.isinf(number or 0.0) and is_integer(value))
        if number is not None and not plain:
            changes[name] = number
    for name in INTEGER_FIELDS:
        value = getattr(job, name)
        if is_integer(value) and type(value) is not int:
            changes[name] = int(value)
    return dataclasses.replace(job, **changes) if changes else job
