"""Event-driven simulator of chunked hierarchical All-Reduce (SPEC "Collective model (event-driven)").

Shapes: C chunks (padded, with a mask), D = 4 dimensions (padded with size 1), 2D phase slots
per chunk: slot j < D is the Reduce-Scatter on orders[c, j], slot 2D−1−j the All-Gather on the
same dimension. Slots on dimensions of size 1 are skipped (phase_dim −1).

Phase durations follow from the orders alone, so ``phase_table`` computes them up front; the
simulation only decides *when* each phase starts: a ``lax.fori_loop`` of C·2D decisions (one
per phase, masked no-ops after the last), each a few masked minimums over fixed-shape arrays.
Everything is float32, jit- and vmap-able over networks, chunk sizes, release times, orders and
chunk counts; ``scf`` is traced, so both intra-dimension disciplines share one compile.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from hps.collective.network import NetworkParams, ideal_time, steps_per_phase
from hps.collective.themis import MAX_CHUNKS, ag_seconds, rs_seconds


@struct.dataclass
class PhaseTable:
    """Per chunk and slot, (C, 2D): dim (int32, −1 skipped or padded), duration (s),
    data (bytes: the larger of the phase's input and output size), next_slot (int32: the chunk's
    next active slot after this one, 2D when none); first_slot (C,) int32."""

    dim: jnp.ndarray
    duration: jnp.ndarray
    data: jnp.ndarray
    next_slot: jnp.ndarray
    first_slot: jnp.ndarray


@struct.dataclass
class SimResult:
    """time: completion (s); busy (D,) s, the sum of phase durations per dimension;
    phase_start, phase_end (C, 2D) s (0 on skipped slots); phase_dim (C, 2D) int32 (−1 on
    skipped or padded slots); chunk_end (C,) s (release when a chunk has no phase, 0 if padded)."""

    time: jnp.ndarray
    busy: jnp.ndarray
    phase_start: jnp.ndarray
    phase_end: jnp.ndarray
    phase_dim: jnp.ndarray
    chunk_end: jnp.ndarray


def _exclusive_cumprod(values):
    """(C, D) int -> (C, D) int32 Π_{i<j} values[:, i] (integer-exact)."""
    ones = jnp.ones_like(values[:, :1])
    return jnp.cumprod(jnp.concatenate([ones, values[:, :-1]], axis=1), axis=1).astype(jnp.int32)


def phase_table(net: NetworkParams, chunk_bytes, orders, chunk_mask) -> PhaseTable:
    """Every phase of every chunk: RS on d entered with s takes steps_d·a_d + s·(P_d−1)/P_d/B_d,
    AG steps_d·a_d + s·(P_d−1)/B_d.

    chunk_bytes (C,) bytes, orders (C, D) int32, chunk_mask (C,) bool. The size a phase enters
    with is chunk_bytes / (integer product of the sizes already passed), one division, so equal
    phase data compare equal whatever the order of the dimensions before it.
    """
    n_chunks, n_dims = orders.shape
    p_int = net.size[orders]
    p = p_int.astype(jnp.float32)
    bandwidth, latency = net.bandwidth[orders], net.latency[orders]
    fixed = steps_per_phase(net.algorithm[orders], p_int) * latency
    before = _exclusive_cumprod(p_int).astype(jnp.float32)
    rs_in = chunk_bytes[:, None] / before
    ag_in = chunk_bytes[:, None] / (before * p)
    rs = fixed + rs_seconds(rs_in, p, bandwidth)
    ag = fixed + ag_seconds(ag_in, p, bandwidth)
    dim = jnp.where((p_int > 1) & chunk_mask[:, None], orders, -1).astype(jnp.int32)
    dim = jnp.concatenate([dim, dim[:, ::-1]], axis=1)
    duration = jnp.concatenate([rs, ag[:, ::-1]], axis=1)
    data = jnp.concatenate([rs_in, rs_in[:, ::-1]], axis=1)
    n_slots = 2 * n_dims
    slot = jnp.arange(n_slots)
    active_slot = jnp.where(dim >= 0, slot, n_slots)  # (C, 2D)
    later = slot[None, :] > slot[:, None]  # later[j, k]: slot k comes after slot j
    next_slot = jnp.min(jnp.where(later[None], active_slot[:, None, :], n_slots), axis=2)
    return PhaseTable(
        dim=dim,
        duration=jnp.where(dim >= 0, duration, 0.0),
        data=data,
        next_slot=next_slot.astype(jnp.int32),
        first_slot=jnp.min(active_slot, axis=1).astype(jnp.int32),
    )


def next_start_times(free, ready, waiting_dim, n_dims):
    """t_d = max(time d is free, earliest ready time among phases waiting for d); inf when
    none waits. free (D,) s, ready (C,) s, waiting_dim (C,) int32 (−1: none) -> (D,) s."""
    waits = waiting_dim[:, None] == jnp.arange(n_dims)[None, :]
    earliest = jnp.min(jnp.where(waits, ready[:, None], jnp.inf), axis=0)
    return jnp.maximum(free, earliest)


def discipline_choice(candidate, ready, data, scf):
    """The chunk (int32) a dimension serves among `candidate` (C,) bool: FIFO = earliest ready,
    then lowest chunk id; SCF = smallest phase data, then earliest ready, then lowest id."""
    smallest = jnp.min(jnp.where(candidate, data, jnp.inf))
    candidate = jnp.where(scf, candidate & (data == smallest), candidate)
    return jnp.argmin(jnp.where(candidate, ready, jnp.inf)).astype(jnp.int32)  # first = lowest id


def _flat(table: PhaseTable):
    """(dim, duration, data, next_slot) flattened to (C·2D,) for one-index gathers."""
    return tuple(a.reshape(-1) for a in (table.dim, table.duration, table.data, table.next_slot))


def _phase_at(flat, n_slots, chunk, slot):
    """(dim, duration, data) of phase `slot` of `chunk` (arrays of one shape); dim −1 when the
    chunk is done (slot = 2D)."""
    index = chunk * n_slots + jnp.minimum(slot, n_slots - 1)
    dim = jnp.where(slot < n_slots, flat[0][index], -1)
    return dim, flat[1][index], flat[2][index]


def decide(flat, n_slots, scf, state):
    """One decision: the dimension with the smallest next start time t (ties: lower index)
    starts the phase its discipline ranks first among those ready by t.

    state = (slot, ready s, waiting dim, duration s, data bytes) each (C,) for each chunk's
    waiting phase, and free (D,) s. Returns (state, flat phase index started (C·2D when
    nothing is left), start s).
    """
    slot, ready, dim_of, duration, data, free = state
    n_chunks, n_dims = slot.shape[0], free.shape[0]
    t = next_start_times(free, ready, dim_of, n_dims)
    dim = jnp.argmin(t)
    start = t[dim]
    valid = jnp.isfinite(start)
    chunk = discipline_choice((dim_of == dim) & (ready <= start), ready, data, scf)
    end = start + duration[chunk]
    started = chunk * n_slots + slot[chunk]
    following = flat[3][started]
    next_dim, next_duration, next_data = _phase_at(flat, n_slots, chunk, following)
    mine = (jnp.arange(n_chunks) == chunk) & valid
    state = (
        jnp.where(mine, following, slot),
        jnp.where(mine, end, ready),
        jnp.where(mine, next_dim, dim_of),
        jnp.where(mine, next_duration, duration),
        jnp.where(mine, next_data, data),
        jnp.where((jnp.arange(n_dims) == dim) & valid, end, free),
    )
    return state, jnp.where(valid, started, n_chunks * n_slots), start


def run_decisions(table: PhaseTable, release, scf):
    """All decisions in time order -> phase_start (C, 2D) s (0 on skipped slots).

    A fori_loop of a fixed C·2D decisions (at least one per phase; masked no-ops once every
    phase has started). A fixed count keeps the loop predicate unbatched under vmap, so no
    per-member select of the carry is needed. Each decision logs (phase index, start); the
    log is scattered into (C, 2D) once at the end.
    """
    n_chunks, n_slots = table.dim.shape
    flat = _flat(table)
    chunks = jnp.arange(n_chunks)
    first = _phase_at(flat, n_slots, chunks, table.first_slot)
    free0 = jnp.zeros((n_slots // 2,), jnp.float32)
    state0 = (table.first_slot, release.astype(jnp.float32), *first, free0)
    log_size = n_chunks * n_slots
    log0 = (jnp.full((log_size,), log_size, jnp.int32), jnp.zeros((log_size,), jnp.float32))

    def body(i, carry):
        state, (log_phase, log_start) = carry
        state, phase, start = decide(flat, n_slots, scf, state)
        return state, (log_phase.at[i].set(phase), log_start.at[i].set(start))

    _, (log_phase, log_start) = jax.lax.fori_loop(0, log_size, body, (state0, log0))
    start = jnp.zeros((log_size,), jnp.float32).at[log_phase].set(log_start, mode="drop")
    return start.reshape(n_chunks, n_slots)


def busy_per_dim(table: PhaseTable):
    """(D,) s: the sum of phase durations on each dimension."""
    n_dims = table.dim.shape[1] // 2
    on = table.dim[:, :, None] == jnp.arange(n_dims)[None, None, :]
    return jnp.sum(jnp.where(on, table.duration[:, :, None], 0.0), axis=(0, 1))


@jax.jit
def simulate(net: NetworkParams, chunk_bytes, release, orders, chunk_mask, scf) -> SimResult:
    """Simulate chunks through the network.

    net: NetworkParams (D,); chunk_bytes (C,) bytes; release (C,) s, when each chunk's first
    phase becomes ready; orders (C, D) int32, the Reduce-Scatter order (All-Gather reverses it);
    chunk_mask (C,) bool; scf: bool (False = FIFO). Returns SimResult.
    """
    chunk_mask = chunk_mask.astype(bool)
    table = phase_table(net, chunk_bytes.astype(jnp.float32), orders.astype(jnp.int32), chunk_mask)
    release = jnp.where(chunk_mask, release, 0.0).astype(jnp.float32)
    start = run_decisions(table, release, scf)
    active = table.dim >= 0
    end = jnp.where(active, start + table.duration, 0.0)
    has_phase = jnp.any(active, axis=1)
    chunk_end = jnp.where(has_phase, jnp.max(end, axis=1), release)
    return SimResult(
        time=jnp.max(jnp.where(chunk_mask, chunk_end, 0.0)),
        busy=busy_per_dim(table),
        phase_start=start,
        phase_end=end,
        phase_dim=table.dim,
        chunk_end=chunk_end,
    )


def equal_chunks(total_bytes, n_chunks, max_chunks):
    """(chunk_bytes (max_chunks,) bytes, chunk_mask (max_chunks,) bool): S in C equal chunks."""
    mask = jnp.arange(max_chunks) < n_chunks
    return jnp.where(mask, total_bytes / n_chunks, 0.0).astype(jnp.float32), mask


@partial(jax.jit, static_argnames="max_chunks")
def simulate_allreduce(net: NetworkParams, total_bytes, n_chunks, orders, scf, max_chunks=MAX_CHUNKS):
    """One All-Reduce of S = total_bytes in C = n_chunks ≤ max_chunks equal chunks, all released
    at 0. orders (≥ max_chunks, D) int32 (rows ≥ C unused). Returns SimResult."""
    chunk_bytes, mask = equal_chunks(total_bytes, n_chunks, max_chunks)
    release = jnp.zeros((max_chunks,), jnp.float32)
    return simulate(net, chunk_bytes, release, orders[:max_chunks], mask, scf)


def utilization(net: NetworkParams, total_bytes, time):
    """Bandwidth utilization T_ideal / T (1 when nothing needs to move, T = 0)."""
    return jnp.where(time > 0, ideal_time(net, total_bytes) / jnp.where(time > 0, time, 1.0), 1.0)
