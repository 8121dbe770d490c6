"""The schedule choices of a parallel-plan job besides the micro-batch: interleaved (virtual)
pipeline stages, FP8 matmuls, activation recomputation and the memory headroom (docs/parallel-plans.md).

A job fixes each of virtual_stages, fp8 and recompute or leaves it open (None): a planner then
searches `variants(job)`, one job per combination of the open choices, and a plan records the
choices it was scored under. Every check raises ``ConfigError(source, field, problem)``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

from hps.config.types import RECOMPUTE, Job
from hps.errors import ConfigError

VIRTUAL_STAGE_CHOICES = (1, 2, 4)
"""Model chunks a device a planner tries where the job leaves virtual_stages open."""
MAX_VIRTUAL_STAGES = 64
"""The most model chunks a device a job may name."""
OPEN_FIELDS = ("virtual_stages", "fp8", "recompute")
"""The job fields a planner searches where the job leaves them None."""


def check_recompute(value: Any, source: str, path: str, *, open_allowed: bool = False) -> str | None:
    """One of RECOMPUTE (none, selective, full), or None where `open_allowed`."""
    if value is None and open_allowed:
        return None
    if not isinstance(value, str) or value not in RECOMPUTE:
        raise ConfigError(source, path, f"unknown recompute {value!r}; must be one of {', '.join(RECOMPUTE)}")
    return value


def check_virtual_stages(value: Any, source: str, path: str, *, open_allowed: bool = False) -> int | None:
    """Model chunks a device: an integer 1 to MAX_VIRTUAL_STAGES (not a bool), or None where `open_allowed`."""
    if value is None and open_allowed:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VIRTUAL_STAGES:
        raise ConfigError(
            source, path, f"must be an integer 1 to {MAX_VIRTUAL_STAGES} (model chunks a device), got {value!r}"
        )
    return int(value)


def check_fp8(value: Any, source: str, path: str, *, open_allowed: bool = False) -> bool | None:
    """true or false, or None where `open_allowed`."""
    if value is None and open_allowed:
        return None
    if not isinstance(value, bool):
        raise ConfigError(source, path, f"must be true or false, got {value!r}")
    return value


def check_headroom(value: Any, source: str, path: str) -> float | None:
    """A fraction of memory left free, in [0, 1), or None (each type's own)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(source, path, f"must be a number in [0, 1), got {value!r}")
    if not 0 <= value < 1:
        raise ConfigError(source, path, f"must be in [0, 1) (a fraction of memory left free), got {value!r}")
    return float(value)


def check_plan_space(job: Job, source: str) -> None:
    """ConfigError naming `source` and the field for a virtual_stages, fp8, recompute or
    memory_headroom out of its domain (None is open for the first three)."""
    check_virtual_stages(job.virtual_stages, source, "virtual_stages", open_allowed=True)
    check_fp8(job.fp8, source, "fp8", open_allowed=True)
    check_recompute(job.recompute, source, "recompute", open_allowed=True)
    check_headroom(job.memory_headroom, source, "memory_headroom")


def open_fields(job: Job) -> tuple[str, ...]:
    """The fields of OPEN_FIELDS the job leaves to the planner."""
    return tuple(name for name in OPEN_FIELDS if getattr(job, name) is None)


def variants(job: Job) -> list[Job]:
    """One job per combination of the choices `job` leaves open (the job itself where it fixes
    them all), the plainest first: fewer chunks, BF16 and less recomputation first."""
    choices = {
        "virtual_stages": VIRTUAL_STAGE_CHOICES,
        "fp8": (False, True),
        "recompute": RECOMPUTE,
    }
    fields = open_fields(job)
    return [
        dataclasses.replace(job, **dict(zip(fields, values)))
        for values in itertools.product(*(choices[name] for name in fields))
    ]
