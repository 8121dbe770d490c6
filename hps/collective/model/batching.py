"""How a batch of networks goes through the collective simulator: one home for the choice.

The simulator is a sequential event loop (C·2D decisions) vmapped over networks. On an
accelerator backend (``jax.default_backend() != "cpu"``) the whole batch is one device call: the
loop's steps are launched once for all networks, and the device's width is what makes it fast
(cutting the batch into parts multiplies the launches of a sequential loop). On CPU one XLA
computation uses one core and releases the GIL, so the batch is cut into parts of at most
``CPU_PART`` networks that run on one thread per core: parts small enough that each step's
arrays (part × C) stay in cache, and as many of them in flight as there are cores.

``batch_parts`` decides the cut; ``prepared_call`` slices the batch once, outside any timed
region, and returns a function that runs every part and joins the results in order.
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
    count = jax.tree.leaves(args)[0].shape[0]
    ranges = batch_parts(count, accelerator)
    if len(ranges) == 1:
        return lambda: jax.tree.map(np.asarray, jax.block_until_ready(fn(*args)))
    padded = jax.tree.map(lambda x: _pad_rows(x, ranges[-1][1]), args)
    pieces = [rows(padded, lo, hi) for lo, hi in ranges]
    workers = pool or ThreadPoolExecutor(cpu_cores())

    def run_parts():
        futures = [workers.submit(lambda p: jax.block_until_ready(fn(*p)), p) for p in pieces]
        results = [jax.tree.map(np.asarray, f.result()) for f in futures]
        return jax.tree.map(lambda *leaves: np.concatenate(leaves, axis=0)[:count], *results)

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
