"""Event-driven simulator of chunked hierarchical All-Reduce (docs/collective-model.md).

Shapes: C chunks (padded, with a mask), D = 4 or 6 dimensions (padded with size 1), 2D phase slots
per chunk: slot j < D is the Reduce-Scatter on orders[c, j], slot 2D−1−j the All-Gather on the
same dimension. Slots on dimensions of size 1 are skipped (phase_dim −1).

Phase durations follow from the orders alone, so ``phase_table`` computes them up front; the
simulation only decides *when* each phase starts: a ``lax.fori_loop`` of C·2D decisions (one
per phase, masked no-ops after the last), each a few (C,) passes and reductions over the
deciding dimension's waiting phases (the earliest ready time per dimension is kept
incrementally), and one-index gathers and scatters for the chunk it starts. The completion
time is carried through the loop (``timeline``), so a caller that keeps only SimResult.time
compiles no per-phase start array; callers simulate networks without their dimensions of size 1
where they can (``network.phase_dims``): fewer slots, fewer decisions, the same timeline.
Everything is float32, jit- and vmap-able over networks, chunk sizes, release times, orders and
chunk counts; ``scf`` is traced, so both intra-dimension disciplines share one compile.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from hps.collective.model.network import NetworkParams, ideal_time, steps_per_phase_codes
from hps.collective.model.themis import ag_seconds, rs_seconds
from hps.config.limits import MAX_IN_FLIGHT


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
    """time: completion (s); busy (D,) s, the sum of phase durations per dimension over its
    in_flight;
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


def phase_table(net: NetworkParams, chunk_bytes, orders, chunk_mask, kinds=None) -> PhaseTable:
    """Every phase of every chunk: RS on d entered with s takes steps_d·a_d + s·(P_d−1)/P_d/B'_d,
    AG steps_d·a_d + s·(P_d−1)/B'_d, where B'_d = B_d / in_flight_d is one lane's share of the
    bandwidth (B_d itself with one phase in flight).

    chunk_bytes (C,) bytes, orders (C, D) int32, chunk_mask (C,) bool. The size a phase enters
    with is chunk_bytes / (integer product of the sizes already passed), one division, so equal
    phase data compare equal whatever the order of the dimensions before it.

    kinds: None for All-Reduces over every dimension, else (group (C, D) bool, the dimensions
    each chunk's collective spans, others counted as size 1; first (C,) bool, the chunk runs
    the Reduce-Scatter half; second (C,) bool, the All-Gather half; exchange (C,) bool, an
    All-to-All: each first-half phase enters with the whole chunk), as
    `hps.collective.model.kinds` builds them.
    """
    if kinds is None:
        p_int = net.size[orders]
    else:
        p_int = jnp.take_along_axis(jnp.where(kinds[0], net.size[None, :], 1), orders, axis=1)
    p = p_int.astype(jnp.float32)
    bandwidth = net.bandwidth[orders] / net.in_flight[orders].astype(jnp.float32)
    latency = net.latency[orders]
    fixed = steps_per_phase_codes(net.algorithm[orders], p_int) * latency
    before = _exclusive_cumprod(p_int).astype(jnp.float32)
    if kinds is not None:
        before = jnp.where(kinds[3][:, None], 1.0, before)
    rs_in = chunk_bytes[:, None] / before
    ag_in = chunk_bytes[:, None] / (before * p)
    rs = fixed + rs_seconds(rs_in, p, bandwidth)
    ag = fixed + ag_seconds(ag_in, p, bandwidth)
    on = (p_int > 1) & chunk_mask[:, None]
    if kinds is None:
        first = second = jnp.where(on, orders, -1)
    else:
        first = jnp.where(on & kinds[1][:, None], orders, -1)
        second = jnp.where(on & kinds[2][:, None], orders, -1)
    dim = jnp.concatenate([first, second[:, ::-1]], axis=1).astype(jnp.int32)
    duration = jnp.concatenate([rs, ag[:, ::-1]], axis=1)
    data = jnp.concatenate([rs_in, rs_in[:, ::-1]], axis=1)
    return slot_table(dim, duration, data)


def slot_table(dim, duration, data) -> PhaseTable:
    """The PhaseTable of slots (C, 2D): dim (int32, −1 skipped), duration (s), data (bytes);
    fills in each chunk's next and first active slot."""
    n_slots = dim.shape[1]
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


DIM_BITS = 3  # a phase code is (phase id << DIM_BITS) | (dimension + 1); D < 2**DIM_BITS


@struct.dataclass
class PhaseChains:
    """Every phase as a flat id p = chunk·2D + slot, plus one "no phase" id P = C·2D, arrays (P+1,):
    duration (s), data (bytes), code (int32: (p << DIM_BITS) | (dim + 1), dim −1 for none),
    next_code and next_data (the chunk's next phase's code and data; code of P when none);
    first (C,) int32, each chunk's first phase code. A code carries the phase and its dimension
    in one int, so a step reads and writes one array for both."""

    duration: jnp.ndarray
    data: jnp.ndarray
    code: jnp.ndarray
    next_code: jnp.ndarray
    next_data: jnp.ndarray
    first: jnp.ndarray


def phase_chains(table: PhaseTable) -> PhaseChains:
    """The PhaseTable (C, 2D) as flat chains of phase codes, so one step of the simulation
    reads a phase and its successor with one-index gathers."""
    n_chunks, n_slots = table.dim.shape
    assert n_slots // 2 < 2**DIM_BITS
    none = n_chunks * n_slots
    base = jnp.arange(n_chunks, dtype=jnp.int32)[:, None] * n_slots

    def flat(values, fill):
        return jnp.concatenate([values.reshape(-1), jnp.full((1,), fill, values.dtype)])

    successor = flat(jnp.where(table.next_slot < n_slots, base + table.next_slot, none), none)
    ids = jnp.arange(none + 1, dtype=jnp.int32)
    code = (ids << DIM_BITS) | (flat(table.dim, -1) + 1)
    data = flat(table.data, 0.0)
    first = jnp.where(table.first_slot < n_slots, base[:, 0] + table.first_slot, none)
    return PhaseChains(
        duration=flat(table.duration, 0.0),
        data=data,
        code=code,
        next_code=code[successor],
        next_data=data[successor],
        first=code[first],
    )


def code_dim(code):
    """The dimension (int32, −1 for none) of phase codes."""
    return (code & (2**DIM_BITS - 1)) - 1


def _row_min(values):
    """Minimum over the last axis. The reduce_precision (exact on float32, a no-op) stops XLA:CPU
    from fusing the broadcast of the result into the reduction, which makes a kernel several times
    slower (docs/results.md, "Implementation choices")."""
    return jax.lax.reduce_precision(jnp.min(values, axis=-1), exponent_bits=8, mantissa_bits=23)


def earliest_dimension(t):
    """(index as float32, value) of the first minimum of t (D,) s: the dimension that decides
    next (ties: lower index), and when; value inf when nothing is left."""
    begin = _row_min(t)
    return _first_index(t == begin), begin


def _first_index(mask):
    """Float32 index of the first True along the last axis (its length when none)."""
    n = mask.shape[-1]
    return _row_min(jnp.where(mask, jnp.arange(n, dtype=jnp.float32), float(n)))


def discipline_choice(row, start, data, scf):
    """The chunk (float32 index) a dimension serves at `start` s.

    row (C,) s: ready time of each chunk's waiting phase if it waits for this dimension, else
    inf; data (C,) bytes. Among the phases ready by start: FIFO = earliest ready, then lowest
    chunk id; SCF = smallest data, then earliest ready, then lowest id. Reductions only (float
    indices), no argmin: a variadic reduce is several times slower on CPU.
    """
    candidate = row <= start
    smallest = _row_min(jnp.where(candidate, data, jnp.inf))
    key = jnp.where(candidate & (~scf | (data == smallest)), row, jnp.inf)
    return _first_index(key == _row_min(key))


def decide(chains: PhaseChains, scf, state):
    """One decision: the dimension d with the smallest next start time t_d = max(free_d,
    earliest_d) (ties: lower index), free_d the time its first lane frees, starts the phase its
    discipline ranks first among those ready by t_d, on that lane (ties: lower lane).

    state = (ready s, data bytes, code (int32 phase code, PhaseChains)) each (C,) for each
    chunk's waiting phase; lanes (D, MAX_IN_FLIGHT) s, when each lane of each dimension frees
    (inf past the dimension's in_flight); earliest (D,) s, the earliest ready time among phases
    waiting for each dimension (inf: none), kept exact incrementally; start (P,) s, the start of
    every phase so far; finish s, the latest end so far. Only the chosen chunk, lane and two
    dimensions change, written with one-index scatters (cheaper than masked selects over (C,)
    here; with one lane per dimension, a select over (D,)). Returns the next state.
    """
    ready, data, code, lanes, earliest, start, finish = state
    n_chunks, n_phases = ready.shape[0], start.shape[0]
    one_lane = lanes.shape[1] == 1
    free = lanes[:, 0] if one_lane else _row_min(lanes)
    d, begin = earliest_dimension(jnp.maximum(free, earliest))
    valid = jnp.isfinite(begin)
    row = jnp.where(code_dim(code) == d.astype(jnp.int32), ready, jnp.inf)
    chunk_f = discipline_choice(row, begin, data, scf)
    others = jnp.arange(n_chunks, dtype=jnp.float32) != chunk_f
    remaining = _row_min(jnp.where(others, row, jnp.inf))  # d's earliest once the chunk leaves
    chunk = jnp.where(valid, chunk_f.astype(jnp.int32), n_chunks)  # n_chunks: dropped below
    started = jnp.where(valid, code[jnp.minimum(chunk, n_chunks - 1)] >> DIM_BITS, n_phases)
    end = begin + chains.duration[started]
    next_code = chains.next_code[started]
    dims = jnp.arange(free.shape[0], dtype=jnp.float32)
    on_d = (dims == d) & valid
    d_row = jnp.where(valid, d.astype(jnp.int32), free.shape[0])  # D: dropped below
    d_index = jnp.minimum(d_row, free.shape[0] - 1)
    earliest = jnp.where(on_d, remaining, earliest)
    earliest = jnp.where(dims == code_dim(next_code), jnp.minimum(earliest, end), earliest)
    if one_lane:
        lanes = jnp.where(on_d[:, None], end, lanes)
    else:
        lanes = lanes.at[d_row, first_lane(lanes, free, d_index)].set(end, mode="drop")
    return (
        ready.at[chunk].set(end, mode="drop"),
        data.at[chunk].set(chains.next_data[started], mode="drop"),
        code.at[chunk].set(next_code, mode="drop"),
        lanes,
        earliest,
        start.at[started].set(begin, mode="drop"),
        jnp.where(valid, jnp.maximum(finish, end), finish),
    )


def first_lane(lanes, free, d):
    """The first lane (int32) of dimension d that frees at free[d]."""
    return _first_index(lanes[d] == free[d]).astype(jnp.int32)


def run_decisions(table: PhaseTable, release, scf, in_flight, lanes: int = MAX_IN_FLIGHT):
    """phase_start (C, 2D) s (0 on skipped slots): `timeline`'s starts."""
    return timeline(table, release, scf, in_flight, lanes)[0]


def timeline(table: PhaseTable, release, scf, in_flight, lanes: int = MAX_IN_FLIGHT):
    """All decisions in time order -> (phase_start (C, 2D) s (0 on skipped slots), the
    completion time s: the latest phase end or release). The completion time is carried
    through the loop beside the starts, so a caller that keeps only it (SimResult.time) lets
    XLA drop the (C·2D,) start array and its scatter from every step.

    One decision per step of a fori_loop of a fixed C·2D steps (the most phases there can be;
    masked no-ops once every phase has started): the count stays unbatched under vmap, so no
    per-member select of the carry is needed (a batched while_loop is several times slower).
    Each step costs a few (C,) passes and reductions: the earliest ready time per dimension is
    kept incrementally instead of recomputed over (C, D), and only the deciding dimension's row
    is scanned. in_flight (D,) int32: the lanes of each dimension, each at most `lanes` (static:
    the lanes kept per dimension, NetworkParams.lanes). (Committing every dimension
    whose next decision provably cannot change in one step is exact too, but needs (D, C) work
    per step for fewer than two decisions per step on the benchmark's worst cases, and is slower
    on CPU; docs/results.md, "Implementation choices".)
    """
    n_chunks, n_slots = table.dim.shape
    n_dims, n_phases = n_slots // 2, n_chunks * n_slots
    chains = phase_chains(table)
    ready = release.astype(jnp.float32)
    waits = code_dim(chains.first)[None, :] == jnp.arange(n_dims)[:, None]
    state = (
        ready,
        chains.data[chains.first >> DIM_BITS],
        chains.first,
        jnp.where(jnp.arange(lanes)[None, :] < in_flight[:, None], 0.0, jnp.inf).astype(jnp.float32),
        jnp.min(jnp.where(waits, ready[None, :], jnp.inf), axis=1),
        jnp.zeros((n_phases,), jnp.float32),
        jnp.max(ready),
    )
    state = jax.lax.fori_loop(0, n_phases, lambda _, s: decide(chains, scf, s), state)
    return state[-2].reshape(n_chunks, n_slots), state[-1]


def busy_per_dim(table: PhaseTable, in_flight):
    """(D,) s: the sum of phase durations on each dimension over its lanes in_flight (D,): the
    time the whole dimension is held (the sum itself with one phase in flight)."""
    n_dims = table.dim.shape[1] // 2
    on = table.dim[:, :, None] == jnp.arange(n_dims)[None, None, :]
    return jnp.sum(jnp.where(on, table.duration[:, :, None], 0.0), axis=(0, 1)) / in_flight.astype(jnp.float32)


@jax.jit
def simulate(net: NetworkParams, chunk_bytes, release, orders, chunk_mask, scf) -> SimResult:
    """Simulate chunks through the network.

    net: NetworkParams (D,); chunk_bytes (C,) bytes; release (C,) s, when each chunk's first
    phase becomes ready; orders (C, D) int32, the Reduce-Scatter order (All-Gather reverses it);
    chunk_mask (C,) bool; scf: bool (False = FIFO). Keeps net.lanes lanes per dimension (one
    compile per lane count). Returns SimResult.
    """
    chunk_mask = chunk_mask.astype(bool)
    table = phase_table(net, chunk_bytes.astype(jnp.float32), orders.astype(jnp.int32), chunk_mask)
    release = jnp.where(chunk_mask, release, 0.0).astype(jnp.float32)
    start, finish = timeline(table, release, jnp.asarray(scf).astype(bool), net.in_flight, net.lanes)
    active = table.dim >= 0
    end = jnp.where(active, start + table.duration, 0.0)
    has_phase = jnp.any(active, axis=1)
    chunk_end = jnp.where(has_phase, jnp.max(end, axis=1), release)
    return SimResult(
        time=finish,
        busy=busy_per_dim(table, net.in_flight),
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
def simulate_allreduce(net: NetworkParams, total_bytes, n_chunks, orders, scf, max_chunks: int | None = None):
    """One All-Reduce of S = total_bytes (bytes) in C = n_chunks ≤ max_chunks equal chunks, all
    released at 0. orders (≥ max_chunks, D) int32 (rows ≥ C unused). max_chunks (static): the
    padded chunk count the simulation runs over (its C·2D decisions); None: the rows of orders,
    which the policies pad to the chunk bucket of C (256 rows up to 256 chunks, 1,024 up to
    1,024). Returns SimResult, per-chunk arrays (max_chunks, ...)."""
    if max_chunks is None:
        max_chunks = orders.shape[0]
    if orders.shape[0] < max_chunks:
        raise ValueError(f"orders have {orders.shape[0]} rows, fewer than max_chunks {max_chunks}")
    chunk_bytes, mask = equal_chunks(total_bytes, n_chunks, max_chunks)
    release = jnp.zeros((max_chunks,), jnp.float32)
    return simulate(net, chunk_bytes, release, orders[:max_chunks], mask, scf)


def utilization(net: NetworkParams, total_bytes, time):
    """Bandwidth utilization T_ideal / T (1 when nothing needs to move, T = 0)."""
    return jnp.where(time > 0, ideal_time(net, total_bytes) / jnp.where(time > 0, time, 1.0), 1.0)
