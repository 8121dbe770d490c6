"""Inter-dimension chunk orders (docs/collective-model.md, "Chunk orders"), in fluid (load) form.

Everything here is a pure jnp function over fixed-shape arrays of D dimensions (padded with
size-1 dimensions, which take no part), so it jits once and vmaps over networks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.model.loads import LOAD_TIE_RTOL, THEMIS_GAP_FRACTION
from hps.config.limits import CHUNK_BUCKETS, chunks_bucket


def rs_seconds(size_bytes, dim_size, bandwidth):
    """Bandwidth time (s) of a Reduce-Scatter phase entered with size_bytes: s·(P−1)/P / B."""
    return size_bytes * (dim_size - 1.0) / dim_size / bandwidth


def ag_seconds(size_bytes, dim_size, bandwidth):
    """Bandwidth time (s) of an All-Gather phase entered with size_bytes: s·(P−1) / B."""
    return size_bytes * (dim_size - 1.0) / bandwidth


def chunk_loads(order, chunk_bytes, sizes, bandwidths):
    """Per-dimension bandwidth time (D,) seconds that one chunk puts on the network when it
    Reduce-Scatters through `order` (D,) int and All-Gathers back in reverse.

    The All-Gather on a dimension enters with the size the Reduce-Scatter left there, so it
    costs the same as that Reduce-Scatter: (s/P)·(P−1)/B = s·(P−1)/P/B.
    """
    n_dims = sizes.shape[0]
    size_in_order = sizes[order].astype(jnp.float32)
    entering = chunk_bytes / jnp.cumprod(jnp.concatenate([jnp.ones((1,)), size_in_order[:-1]]))
    per_position = 2.0 * rs_seconds(entering, size_in_order, bandwidths[order])
    placed = order[:, None] == jnp.arange(n_dims)[None, :]
    return jnp.sum(jnp.where(placed, per_position[:, None], 0.0), axis=0)


def loads_tied(a, b):
    """Loads (s) that differ by at most LOAD_TIE_RTOL of the larger count as equal.

    Mathematically equal loads (identical dimensions, or "nice" bandwidth ratios) reach float
    sums in different orders and differ in their last bits; the tolerance makes the greedy act
    on the exact loads, as the greedy is meant in exact arithmetic, in float32 and float64 alike."""
    return jnp.abs(a - b) <= LOAD_TIE_RTOL * jnp.maximum(jnp.abs(a), jnp.abs(b))


def least_loaded_order(load, active):
    """Active dimensions sorted by (load, index) ascending with tied loads equal, then the
    size-1 dimensions: (D,) int32."""
    n_dims = load.shape[0]
    index = jnp.arange(n_dims)
    tied = loads_tied(load[:, None], load[None, :])
    before = (load[:, None] < load[None, :]) & ~tied | tied & (index[:, None] < index[None, :])
    rank = jnp.sum(before & active[:, None], axis=0)  # [e, d]: e ranks before d
    key = jnp.where(active, rank, n_dims) * n_dims + index
    return jnp.argsort(key).astype(jnp.int32)


def themis_order(load, chunk_bytes, sizes, bandwidths):
    """Themis's greedy order for the next chunk given current loads (D,) seconds.

    Least-loaded active dimension first (ties: lower index); if the gap between the most and
    the least loaded, in bytes of the least loaded dimension, is under chunk/16, the baseline
    order 0..D−1 instead. Size-1 dimensions sort last and add no load either way.
    """
    n_dims = sizes.shape[0]
    active = sizes > 1
    order = least_loaded_order(load, active)
    n_active = jnp.sum(active)
    lo = order[0]
    hi = order[jnp.maximum(n_active - 1, 0)]
    p_lo = sizes[lo].astype(jnp.float32)
    share_lo = jnp.where(p_lo > 1, (p_lo - 1.0) / p_lo, 1.0)
    gap_load = jnp.where(loads_tied(load[hi], load[lo]), 0.0, load[hi] - load[lo])
    gap_bytes = gap_load * bandwidths[lo] / share_lo
    threshold = chunk_bytes * THEMIS_GAP_FRACTION
    below = (gap_bytes < threshold) & ~loads_tied(gap_bytes, threshold)
    baseline = jnp.arange(n_dims, dtype=jnp.int32)
    return jnp.where(below, baseline, order)


def padded_chunks(n_chunks, max_chunks: int | None = None) -> int:
    """The static padded chunk count (rows of chunk-order arrays) for C = n_chunks chunks:
    max_chunks itself when given; else chunks_bucket(C) (256 up to 256 chunks, 1,024 up to
    1,024; ValueError past) when C is a concrete number (a Python or numpy int, a concrete
    array); else, C being traced (under jit or vmap), the smallest bucket, 256: a traced count
    past 256 needs an explicit max_chunks."""
    if max_chunks is not None:
        return int(max_chunks)
    if isinstance(n_chunks, jax.core.Tracer):
        return CHUNK_BUCKETS[0]
    return chunks_bucket(int(np.asarray(n_chunks)))


def collective_orders(sizes, bandwidths, total_bytes, n_chunks, use_themis, max_chunks: int | None = None):
    """Orders for every chunk and the resulting per-dimension loads.

    sizes (D,) int, bandwidths (D,) bytes/s, total_bytes: collective size S (bytes), n_chunks:
    C (traced or not), use_themis: bool (traced; False gives the baseline order), max_chunks:
    the static rows of the orders, C ≤ max_chunks (None: `padded_chunks`, the chunk bucket of
    a concrete C, 256 for a traced one). Returns (orders (max_chunks, D) int32, loads (D,)
    seconds); rows ≥ C are unused and add no load. The loads count all C chunks whatever
    max_chunks is (only the orders of chunks ≥ max_chunks are not kept).
    """
    rows = padded_chunks(n_chunks, max_chunks)
    n_dims = sizes.shape[0]
    chunk_bytes = total_bytes / n_chunks
    baseline = jnp.arange(n_dims, dtype=jnp.int32)

    def one_chunk(index, carry):
        load, orders = carry
        greedy = themis_order(load, chunk_bytes, sizes, bandwidths)
        order = jnp.where(use_themis, greedy, baseline)
        load = load + chunk_loads(order, chunk_bytes, sizes, bandwidths)
        return load, orders.at[index].set(order, mode="drop")

    load0 = jnp.zeros((n_dims,), jnp.float32)
    orders0 = jnp.tile(baseline, (rows, 1))
    loads, orders = jax.lax.fori_loop(0, n_chunks, one_chunk, (load0, orders0))
    return orders, loads
