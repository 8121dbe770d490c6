"""How a batch of networks goes through the collective simulator: one home for the choice.

The simulator is a sequential event loop (C·2D decisions) vmapped over networks. On an
accelerator backend (``jax.default_backend() != "cpu"``) the whole batch is one device call: the
loop's steps are launched once for all networks, and the device's width is what makes it fast
(cutting the batch into parts multiplies the launches of a sequential loop). On CPU one XLA
computation uses one core and releases the GIL, so the batch is cut into parts of at most
``CPU_PART`` networks that run on one thread per core: parts small enough that each step's
arrays (part × C) stay in cache, and as many of them in flight as there are cores.

``batch_parts`` decides the cut; ``prepared_call`` slices one batch once, outside any timed
region, and returns a function that runs every part and joins the results in order;
``prepared_calls`` does the same for several batches at once (each part of every batch in
flight together, no wait between batches).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from hps.config.machine import cpu_cores

CPU_PART = 128
"""Most networks in one part on CPU (1,024 × 64-chunk All-Reduces: 128 per part ran at least as
fast as 256 or 512 on 2 cores; docs/results.md, "Accelerator-aware batching")."""


def on_accelerator() -> bool:
    """True where JAX's default backend is not the CPU (a GPU or TPU runs the batch as one call)."""
    return jax.default_backend() != "cpu"


def batch_parts(count: int, accelerator: bool | None = None, part: int = CPU_PART) -> list[tuple[int, int]]:
    """[(lo, hi)] row ranges of one length covering 0..count: one range on an accelerator,
    ranges of at most `part` rows on CPU. All ranges have the length of the first, so one
    compile serves them: the last may run past count (prepared_call pads the batch to it).
    `accelerator` None: ask the backend."""
    if count <= 0:
        return []
    if accelerator is None:
        accelerator = on_accelerator()
    pieces = 1 if accelerator else -(-count // part)
    size = -(-count // pieces)
    return [(i * size, (i + 1) * size) for i in range(pieces)]


def rows(tree, lo: int, hi: int):
    """Rows lo:hi of every leaf of `tree` (leading axis: the batch)."""
    return jax.tree.map(lambda x: x[lo:hi], tree)


def prepared_call(fn: Callable, args: tuple, pool: ThreadPoolExecutor | None = None, accelerator: bool | None = None):
    """A no-argument function running fn(*args) over the batch (leading axis of every leaf of
    args) the backend's way, results joined along axis 0 as numpy arrays (a pytree of them).

    fn: a jitted, vmapped function of batched args, whose rows are independent. On CPU the
    parts run on `pool` (one thread per core when None: a pool made here, kept for the
    returned function's life); the batch is padded with copies of its last row to whole parts
    and the padding's results are dropped."""
    run_all = prepared_calls(fn, [args], pool, accelerator)
    return lambda: run_all()[0]


def prepared_calls(
    fn: Callable,
    batches: list[tuple],
    pool: ThreadPoolExecutor | None = None,
    accelerator: bool | None = None,
    costs: list[float] | None = None,
):
    """A no-argument function running fn(*args) for every args of `batches`, as prepared_call
    does for one, returning [result per batch]. On CPU every part of every batch is submitted
    at once, the costliest first (rows × the batch's cost per row, e.g. its loop's decision
    count; None: all alike), so no thread waits between batches."""
    if accelerator is None:
        accelerator = on_accelerator()
    counts = [jax.tree.leaves(args)[0].shape[0] for args in batches]
    cuts = [batch_parts(count, accelerator) for count in counts]
    if accelerator or sum(len(ranges) for ranges in cuts) <= 1:
        return lambda: [jax.tree.map(np.asarray, jax.block_until_ready(fn(*args))) for args in batches]
    pieces = []  # (cost, batch index, part index, args)
    for b, (args, ranges) in enumerate(zip(batches, cuts)):
        padded = jax.tree.map(lambda x, total=ranges[-1][1]: _pad_rows(x, total), args)
        work = 1.0 if costs is None else costs[b]
        pieces += [((hi - lo) * work, b, k, rows(padded, lo, hi)) for k, (lo, hi) in enumerate(ranges)]
    pieces.sort(key=lambda piece: -piece[0])
    workers = pool or ThreadPoolExecutor(cpu_cores())

    def run_parts():
        futures = [(b, k, workers.submit(lambda p: jax.block_until_ready(fn(*p)), p)) for _, b, k, p in pieces]
        results: list[list] = [[None] * len(ranges) for ranges in cuts]
        for b, k, future in futures:
            results[b][k] = jax.tree.map(np.asarray, future.result())
        return [
            jax.tree.map(lambda *leaves, n=count: np.concatenate(leaves, axis=0)[:n], *parts)
            for parts, count in zip(results, counts)
        ]

    return run_parts


def _pad_rows(x, total: int):
    """x with its last row repeated up to `total` rows."""
    extra = total - x.shape[0]
    if extra <= 0:
        return x
    return np.concatenate([np.asarray(x), np.repeat(np.asarray(x)[-1:], extra, axis=0)])


def run_batched(fn: Callable, *args, accelerator: bool | None = None):
    """fn(*args) over the batch, once, the backend's way (see prepared_call)."""
    with ThreadPoolExecutor(cpu_cores()) as pool:
        return prepared_call(fn, args, pool, accelerator)()
