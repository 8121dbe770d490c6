"""Observation features of the CollectiveEnv and the decoder's per-position features. Pure jnp
of one instance; D is the network's padded width (4 or 6), and no feature depends on it, so a
network reads the same padded to 4 or to 6 dimensions.

Every time is made dimensionless: loads by T_ideal of the whole collective, per-chunk times by
the chunk's ideal time c_ideal = T_ideal / C; ratios that grow without bound (a slow dimension's
time can be thousands of c_ideal) enter as log(1 + x), spreads as tanh. Bandwidths enter as logs
and as shares of the network's total, so a uniform bandwidth scale changes nothing but the
absolute-bandwidth feature.

An action is an order of the dimensions (a permutation (D,) int32). Only the relative order of
the dimensions that take part (size > 1) changes a collective, so orders are kept *canonical*:
the active dimensions in the chosen order, then the size-1 dimensions in index order.

The policy builds an order one position at a time (`position_features`): at position j, with
the dimensions already placed and the bytes still entering (the chunk divided by their sizes),
each open dimension shows what placing it next would do (the bandwidth time it adds, its load
after, against the least and most loaded dimension), so the features of a position are exact,
not a guess about the positions after it.
"""

from __future__ import annotations

import jax.numpy as jnp

from hps.collective.model.network import NetworkParams, steps_per_phase_codes
from hps.collective.model.themis import rs_seconds, themis_order
from hps.config.limits import MAX_DIMS

N_ALGORITHMS = 4
N_DIM_FEATURES = 11 + N_ALGORITHMS
N_POSITION_FEATURES = 7
N_GLOBAL_FEATURES = 7
_TINY = 1e-30


def canonical_order(order, active):
    """The canonical order (D,) int32 with the same order of active dimensions as `order`
    (D,) int: the active ones as in `order`, then the size-1 ones in index order."""
    n_dims = order.shape[0]
    key = jnp.where(active[order], jnp.arange(n_dims), n_dims + order)
    return order[jnp.argsort(key)].astype(jnp.int32)


def themis_canonical(load, chunk_bytes, net: NetworkParams):
    """The canonical order (D,) int32 Themis's greedy picks for the next chunk given `load`
    (D,) s — what the greedy does with the same loads."""
    order = themis_order(load, chunk_bytes, net.size, net.bandwidth)
    return canonical_order(order, net.size > 1)


def chunk_times(instance):
    """(chunk_bytes, c_ideal s): one chunk's bytes and ideal time T_ideal / C."""
    n_chunks = instance.n_chunks.astype(jnp.float32)
    return instance.total_bytes / n_chunks, jnp.maximum(instance.ideal / n_chunks, _TINY)


def active_min(values, active):
    """Minimum over the active entries of the last axis, 0 when none is active."""
    low = jnp.min(jnp.where(active, values, jnp.inf), axis=-1)
    return jnp.where(jnp.isfinite(low), low, 0.0)


def active_max(values, active):
    """Maximum over the active entries of the last axis, 0 when none is active."""
    high = jnp.max(jnp.where(active, values, -jnp.inf), axis=-1)
    return jnp.where(jnp.isfinite(high), high, 0.0)


def chunk_latency(net: NetworkParams):
    """(D,) s: the latency one chunk's two phases spend on each dimension, 2·steps_d·a_d
    (the same whatever the order)."""
    return 2.0 * steps_per_phase_codes(net.algorithm, net.size) * net.latency


def busy(load, chunk, net: NetworkParams):
    """(D,) s: load plus the latency of the `chunk` chunks ordered so far — each dimension's
    busy time in the fluid view (Themis's load leaves latency out)."""
    return load + jnp.asarray(chunk, jnp.float32) * chunk_latency(net)


def dim_features(instance, load, chunk):
    """(D, N_DIM_FEATURES): log2 size/4, log10(B / GiB/s)/3, B / max B, B / ΣB, log2(1+steps)/4,
    log(1 + steps·a / c_ideal), log(1 + load / T_ideal), tanh((load − min load) / c_ideal), active,
    phase share (P−1)/P, log(1 + busy / T_ideal), algorithm one-hot. Padded dimensions are zero."""
    net = instance.net
    active = net.size > 1
    size = net.size.astype(jnp.float32)
    bandwidth = jnp.where(active, net.bandwidth, 0.0)
    steps = steps_per_phase_codes(net.algorithm, net.size)
    _, c_ideal = chunk_times(instance)
    ideal = jnp.maximum(instance.ideal, _TINY)
    columns = [
        jnp.log2(size) / 4.0,
        jnp.log10(jnp.maximum(net.bandwidth, 1.0) / 2.0**30) / 3.0,
        bandwidth / jnp.maximum(jnp.max(bandwidth), _TINY),
        bandwidth / jnp.maximum(jnp.sum(bandwidth), _TINY),
        jnp.log2(1.0 + steps) / 4.0,
        jnp.log1p(steps * net.latency / c_ideal),
        jnp.log1p(load / ideal),
        jnp.tanh((load - active_min(load, active)) / c_ideal),
        active.astype(jnp.float32),
        (size - 1.0) / size,
        jnp.log1p(busy(load, chunk, net) / ideal),
    ]
    onehot = net.algorithm[:, None] == jnp.arange(N_ALGORITHMS)[None, :]
    out = jnp.concatenate([jnp.stack(columns, axis=1), onehot.astype(jnp.float32)], axis=1)
    return jnp.where(active[:, None], out, 0.0)


def global_features(instance, chunk):
    """(N_GLOBAL_FEATURES,): progress c/C, chunks left / C, log2 C / 6, log2(S / MiB) / 12,
    active dimensions / MAX_DIMS, log(1 + Σ 2·steps·a / T_ideal), log(1 + one chunk's latency /
    c_ideal)."""
    net = instance.net
    active = net.size > 1
    n_chunks = instance.n_chunks.astype(jnp.float32)
    chunk = jnp.asarray(chunk, jnp.float32)
    latency = jnp.sum(chunk_latency(net))
    _, c_ideal = chunk_times(instance)
    return jnp.stack(
        [
            chunk / n_chunks,
            (n_chunks - chunk) / n_chunks,
            jnp.log2(n_chunks) / 6.0,
            jnp.log2(instance.total_bytes / 2.0**20) / 12.0,
            jnp.sum(active) / MAX_DIMS,
            jnp.log1p(latency / jnp.maximum(instance.ideal, _TINY)),
            jnp.log1p(latency / c_ideal),
        ]
    )


def added_load(entering, size, bandwidth, active):
    """Bandwidth time (s) a chunk entering a dimension with `entering` bytes puts on it (its
    Reduce-Scatter and the mirrored All-Gather, 2·s·(P − 1)/P / B); 0 where not `active`.
    Broadcasts over dimensions."""
    return jnp.where(active, 2.0 * rs_seconds(entering, size, bandwidth), 0.0)


def position_features(obs, placed, partial_load, entering):
    """(D, N_POSITION_FEATURES) of each dimension as the next position of the chunk's order.

    obs: a CollectiveObs (its size, bandwidth, latency, load, busy (D,) and scale); placed (D,)
    bool: the dimensions already in the order; partial_load (D,) s: load plus what the placed
    positions of this chunk added; entering () bytes: the chunk divided by the placed sizes.
    Per dimension d: log(1 + the bandwidth time d would add / c_ideal), log(1 + d's load after /
    T_ideal), tanh((load after − least partial load) / c_ideal), tanh((load after − most partial
    load) / c_ideal), tanh((busy after − least busy) / c_ideal), the share of log2 P already
    reduced, and the open active dimensions / MAX_DIMS. Zero except on open active dimensions.
    """
    active = obs.dim_mask
    c_ideal, ideal = obs.scale[1], obs.scale[2]
    added = added_load(entering, obs.size, obs.bandwidth, active)
    after = partial_load + added
    busy_partial = obs.busy + (partial_load - obs.load) + jnp.where(placed, obs.latency, 0.0)
    busy_after = busy_partial + added + obs.latency
    log_size = jnp.log2(obs.size)
    reduced = jnp.sum(jnp.where(placed, log_size, 0.0))
    open_ = active & ~placed
    ones = jnp.ones_like(added)
    columns = [
        jnp.log1p(added / c_ideal),
        jnp.log1p(after / ideal),
        jnp.tanh((after - active_min(partial_load, active)) / c_ideal),
        jnp.tanh((after - active_max(partial_load, active)) / c_ideal),
        jnp.tanh((busy_after - active_min(busy_partial, active)) / c_ideal),
        ones * reduced / jnp.maximum(jnp.sum(log_size), _TINY),
        ones * jnp.sum(open_) / MAX_DIMS,
    ]
    return jnp.where(open_[:, None], jnp.stack(columns, axis=1), 0.0)
