"""Timing helpers: compile excluded, block_until_ready, repeats until a minimum duration."""

from __future__ import annotations

import importlib
import sys
import time

import jax

from hps.config.paths import REPO_ROOT, reference_module_path


def load_reference(name: str):
    """Import tests/reference/<name>.py (module tests.reference.<name>) from the source checkout."""
    reference_module_path(name)  # a clear error when there is no checkout
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module(f"tests.reference.{name}")


def compile_seconds(fn, *args) -> float:
    """Wall time of the first (compiling) call."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def calls_per_second(fn, *args, min_seconds: float = 1.0, min_calls: int = 3) -> float:
    """Calls per second of an already-compiled function, each call blocked until ready."""
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < min_seconds:
        jax.block_until_ready(fn(*args))
        calls += 1
    return calls / (time.perf_counter() - start)


def items_per_second(run_one, items, min_seconds: float = 1.0) -> float:
    """Items per second of a plain-Python loop calling run_one(item), cycling through items."""
    done, start = 0, time.perf_counter()
    while done < len(items) and (done < 3 or time.perf_counter() - start < min_seconds):
        run_one(items[done])
        done += 1
    return done / (time.perf_counter() - start)
