"""Observation features of the CollectiveEnv: per dimension, per candidate permutation and
position, per permutation, and per episode. Pure jnp of one instance (D = POLICY_DIMS = 4, K = D! = 24).

Every time is made dimensionless: loads by T_ideal of the whole collective, per-chunk times by
the chunk's ideal time c_ideal = T_ideal / C; ratios that grow without bound (a slow dimension's
time can be thousands of c_ideal) enter as log(1 + x), spreads as tanh. Bandwidths enter as logs and as shares of the
network's total, so a uniform bandwidth scale changes nothing but the absolute-bandwidth feature.

Actions are permutations (rows of PERMUTATIONS). Only the relative order of the dimensions that
take part (size > 1) changes a collective, so the action mask keeps one *canonical* permutation
per distinct order: the active dimensions in that order, then the size-1 dimensions in index
order (D_active! actions: 24, 6, 2 or 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.collective.model.network import NetworkParams, steps_per_phase_codes
from hps.collective.model.orders import PERMUTATIONS
from hps.collective.model.themis import chunk_loads, themis_order

N_ALGORITHMS = 4
N_DIM_FEATURES = 11 + N_ALGORITHMS
N_STEP_FEATURES = 6
N_PERM_FEATURES = 6
N_GLOBAL_FEATURES = 7
_TINY = 1e-30


def permutations():
    """(K, D) int32 PERMUTATIONS as a jnp array."""
    return jnp.asarray(PERMUTATIONS)


def canonical_mask(active):
    """(K,) bool: permutations listing every active dimension before every size-1 one, and
    the size-1 ones in increasing index order. active (D,) bool."""
    perms = permutations()
    act = active[perms]  # (K, D)
    actives_first = jnp.all(act[:, :-1] | ~act[:, 1:], axis=1)
    both_idle = ~act[:, :-1] & ~act[:, 1:]
    idle_sorted = jnp.all(~both_idle | (perms[:, :-1] < perms[:, 1:]), axis=1)
    return actives_first & idle_sorted


def canonical_order(order, active):
    """The canonical permutation (D,) int32 with the same order of active dimensions as
    `order` (D,) int."""
    n_dims = order.shape[0]
    key = jnp.where(active[order], jnp.arange(n_dims), n_dims + order)
    return order[jnp.argsort(key)].astype(jnp.int32)


def permutation_index(order):
    """Index into PERMUTATIONS of a full permutation `order` (D,) int (int32 scalar)."""
    return jnp.argmax(jnp.all(permutations() == order[None, :], axis=1)).astype(jnp.int32)


def themis_action(load, chunk_bytes, net: NetworkParams):
    """The canonical permutation index Themis's greedy picks for the next chunk given `load`
    (D,) s — what the greedy does with the same loads."""
    order = themis_order(load, chunk_bytes, net.size, net.bandwidth)
    return permutation_index(canonical_order(order, net.size > 1))


def chunk_times(instance):
    """(chunk_bytes, c_ideal s): one chunk's bytes and ideal time T_ideal / C."""
    n_chunks = instance.n_chunks.astype(jnp.float32)
    return instance.total_bytes / n_chunks, jnp.maximum(instance.ideal / n_chunks, _TINY)


def _active_min(values, active):
    """Minimum over the active entries of the last axis (kept), 0 when none is active."""
    low = jnp.min(jnp.where(active, values, jnp.inf), axis=-1, keepdims=True)
    return jnp.where(jnp.isfinite(low), low, 0.0)


def _active_max(values, active):
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
        jnp.tanh((load - _active_min(load, active)[0]) / c_ideal),
        active.astype(jnp.float32),
        (size - 1.0) / size,
        jnp.log1p(busy(load, chunk, net) / ideal),
    ]
    onehot = net.algorithm[:, None] == jnp.arange(N_ALGORITHMS)[None, :]
    out = jnp.concatenate([jnp.stack(columns, axis=1), onehot.astype(jnp.float32)], axis=1)
    return jnp.where(active[:, None], out, 0.0)


def candidate_features(instance, load, chunk, themis):
    """Per candidate permutation k, what this chunk would do under it.

    Returns (step (K, D, N_STEP_FEATURES), perm (K, N_PERM_FEATURES)). step, per position j
    (dimension d = π_k(j)): fraction of log P already reduced before d, log(1 + the chunk's
    bandwidth time on d / c_ideal), log(1 + load after / T_ideal), tanh((load after − min load
    after) / c_ideal),
    whether j is the last active position (where Reduce-Scatter turns to All-Gather),
    tanh((busy after − min busy after) / c_ideal).
    perm: whether k is Themis's choice, log(1 + (max load after − max load now) / c_ideal),
    tanh(spread of the loads after (max − min) / c_ideal), log(1 + max load after / T_ideal), and
    the same increase and maximum for the busy time (load plus latency, `busy`)."""
    net = instance.net
    perms = permutations()
    active = net.size > 1
    chunk_bytes, c_ideal = chunk_times(instance)
    ideal = jnp.maximum(instance.ideal, _TINY)
    added = jax.vmap(lambda p: chunk_loads(p, chunk_bytes, net.size, net.bandwidth))(perms)  # (K, D)
    after = load[None, :] + added
    log_size = jnp.log2(net.size.astype(jnp.float32))
    reduced = jnp.cumsum(log_size[perms], axis=1) - log_size[perms]  # (K, D) log2 of sizes before
    positions = jnp.arange(perms.shape[1])
    last = positions == jnp.sum(active) - 1
    after_min = _active_min(after, active[None, :])
    after_at = jnp.take_along_axis(after, perms, axis=1)
    busy_now = busy(load, chunk, net)
    busy_after = busy_now[None, :] + added + chunk_latency(net)[None, :]
    busy_at = jnp.take_along_axis(busy_after, perms, axis=1)
    busy_min = _active_min(busy_after, active[None, :])
    step = jnp.stack(
        [
            reduced / jnp.maximum(jnp.sum(log_size), _TINY),
            jnp.log1p(jnp.take_along_axis(added, perms, axis=1) / c_ideal),
            jnp.log1p(after_at / ideal),
            jnp.tanh((after_at - after_min) / c_ideal),
            jnp.broadcast_to(last, perms.shape).astype(jnp.float32),
            jnp.tanh((busy_at - busy_min) / c_ideal),
        ],
        axis=-1,
    )
    step = jnp.where(active[perms][..., None], step, 0.0)
    after_max = _active_max(after, active[None, :])
    load_max = jnp.max(jnp.where(active, load, 0.0))
    busy_after_max = _active_max(busy_after, active[None, :])
    busy_max = jnp.max(jnp.where(active, busy_now, 0.0))
    perm = jnp.stack(
        [
            (jnp.arange(perms.shape[0]) == themis).astype(jnp.float32),
            jnp.log1p((after_max - load_max) / c_ideal),
            jnp.tanh((after_max - after_min[:, 0]) / c_ideal),
            jnp.log1p(after_max / ideal),
            jnp.log1p((busy_after_max - busy_max) / c_ideal),
            jnp.log1p(busy_after_max / ideal),
        ],
        axis=-1,
    )
    return step, perm


def global_features(instance, chunk):
    """(N_GLOBAL_FEATURES,): progress c/C, chunks left / C, log2 C / 6, log2(S / MiB) / 12,
    active dimensions / D, log(1 + Σ 2·steps·a / T_ideal), log(1 + one chunk's latency / c_ideal)."""
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
            jnp.sum(active) / active.shape[0],
            jnp.log1p(latency / jnp.maximum(instance.ideal, _TINY)),
            jnp.log1p(latency / c_ideal),
        ]
    )
