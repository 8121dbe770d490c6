"""Timing helpers: compile excluded, block_until_ready, repeats until a minimum duration."""

from __future__ import annotations

import time

import jax


def compile_seconds(fn, *args) -> float:
    """Wall time of the first (compiling) call."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def timed_calls(fn, *args, repeats: int = 3, min_seconds: float = 0.0, fastest: bool = False) -> tuple[float, float]:
    """(seconds of the first, compiling call; seconds per call after it: the mean of at least
    `repeats` calls, more until `min_seconds` have passed, or with `fastest` the quickest of
    them, the one a shared machine disturbed least). Results blocked on."""
    first = compile_seconds(fn, *args)
    times, start = [], time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_seconds:
        began = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - began)
    return first, (min(times) if fastest else sum(times) / len(times))


def side_by_side(call, per_call: int, run_one, items, seconds: float = 2.0, rounds: int = 4) -> tuple[float, float]:
    """(jax items/s, reference items/s), measured in alternating rounds so that drift on a
    shared machine hits both sides alike.

    call(): one already-compiled batched call doing per_call items (blocked until ready here);
    run_one(item): one plain-Python item. Each round gives each side seconds / rounds (at least
    one call / one item); the reference walks through items in order across rounds.
    """
    slice_s = seconds / rounds
    jax_done = jax_time = ref_done = ref_time = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        while True:
            jax.block_until_ready(call())
            jax_done += per_call
            if time.perf_counter() - start >= slice_s:
                break
        jax_time += time.perf_counter() - start
        start = time.perf_counter()
        while True:
            run_one(items[int(ref_done) % len(items)])
            ref_done += 1
            if time.perf_counter() - start >= slice_s:
                break
        ref_time += time.perf_counter() - start
    return jax_done / jax_time, ref_done / ref_time
