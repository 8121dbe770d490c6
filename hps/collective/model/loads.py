"""Fluid All-Reduce loads of many used-size vectors at once, in numpy float64.

The same chunk orders as `hps.collective.model.themis.collective_orders` (docs/collective-model.md,
"Chunk orders"), batched over V networks instead of jitted for one: a one-off plan evaluation or
the exact placement solver needs the loads of a few hundred used-size vectors (one per distinct
way k replicas fill a type's network), which numpy computes faster than XLA compiles them.
"""

from __future__ import annotations

import numpy as np

THEMIS_GAP_FRACTION = 1.0 / 16.0
"""Themis keeps the baseline order while the load gap, in bytes, is under this share of a chunk."""
LOAD_TIE_RTOL = 1e-4
"""Loads this close (relative) are the same load to the greedy (see themis.loads_tied)."""


def _tied(a, b):
    return np.abs(a - b) <= LOAD_TIE_RTOL * np.maximum(np.abs(a), np.abs(b))


def _orders(load, active, chunk_bytes, sizes, bandwidths):
    """(V, D) int: each row's Themis order for the next chunk (least-loaded active dimension
    first, tied loads equal; the baseline 0..D−1 when the load gap is under chunk/16)."""
    n_dims = load.shape[1]
    index = np.arange(n_dims)
    tied = _tied(load[:, :, None], load[:, None, :])
    before = ((load[:, :, None] < load[:, None, :]) & ~tied) | (tied & (index[:, None] < index[None, :]))
    rank = np.sum(before & active[:, :, None], axis=1)
    ranked = np.argsort(np.where(active, rank, n_dims) * n_dims + index, axis=1, kind="stable")
    rows = np.arange(load.shape[0])
    lo = ranked[:, 0]
    hi = ranked[rows, np.maximum(np.sum(active, axis=1) - 1, 0)]
    p_lo = sizes[rows, lo]
    share_lo = np.where(p_lo > 1, (p_lo - 1.0) / np.maximum(p_lo, 1), 1.0)
    gap = np.where(_tied(load[rows, hi], load[rows, lo]), 0.0, load[rows, hi] - load[rows, lo])
    gap_bytes = gap * bandwidths[rows, lo] / share_lo
    threshold = chunk_bytes * THEMIS_GAP_FRACTION
    below = (gap_bytes < threshold) & ~_tied(gap_bytes, threshold)
    return np.where(below[:, None], index[None, :], ranked)


def fluid_loads(sizes, bandwidths, total_bytes: float, chunks: int, themis: bool) -> np.ndarray:
    """(V, D) seconds of bandwidth time per dimension of an All-Reduce of total_bytes in
    `chunks` chunks, for V networks: sizes (V, D) used NPUs per dimension (1: not used),
    bandwidths (V, D) bytes/s per NPU. themis: Themis's greedy orders, else the baseline."""
    sizes = np.asarray(sizes, np.float64)
    bandwidths = np.asarray(bandwidths, np.float64)
    n_rows, n_dims = sizes.shape
    active = sizes > 1
    chunk_bytes = total_bytes / chunks
    load = np.zeros((n_rows, n_dims))
    rows = np.arange(n_rows)[:, None]
    baseline = np.broadcast_to(np.arange(n_dims), (n_rows, n_dims))
    for _ in range(chunks):
        order = _orders(load, active, chunk_bytes, sizes, bandwidths) if themis else baseline
        in_order = sizes[rows, order]
        entering = chunk_bytes / np.cumprod(np.concatenate([np.ones((n_rows, 1)), in_order[:, :-1]], axis=1), axis=1)
        added = 2.0 * entering * (in_order - 1.0) / in_order / bandwidths[rows, order]
        np.add.at(load, (np.broadcast_to(rows, order.shape), order), added)
    return load
