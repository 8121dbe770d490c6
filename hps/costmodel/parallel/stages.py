"""Every quantity of a parallel-plan stage, vectorised over stages (docs/parallel-plans.md).

A stage is (first layer, last layer, type, t, d) under a micro-batch of b samples: each of its d
replicas runs m = b / d samples a micro-batch on a t-way tensor-parallel group. All arrays are
(N,) over N stages, float64 seconds and bytes.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hps.costmodel.parallel.problem import (
    BUCKET_BYTES,
    FP8_WEIGHT_BYTES,
    ZERO3_GATHER,
    ZERO3_REDUCE,
    ParallelProblem,
)


@dataclasses.dataclass(frozen=True)
class StageArrays:
    """Per stage: `time` (s per micro-batch: layers + pipeline boundary on the stage's NICs),
    `boundary` (s per micro-batch: the boundary's share of `time`), `tail` (s per iteration after
    the last backward: exposed gradient sync + optimizer step), `sync` (s: the exposed sync's
    share of `tail`),
    `static_memory` (bytes per device: states, gathered parameters, embedding shards, the
    recompute peak), `activation_memory` (bytes per device per micro-batch in flight), `units`
    (t·d) and `rate` ($ per hour)."""

    time: np.ndarray
    boundary: np.ndarray
    tail: np.ndarray
    sync: np.ndarray
    static_memory: np.ndarray
    activation_memory: np.ndarray
    units: np.ndarray
    rate: np.ndarray

    def memory(self, in_flight) -> np.ndarray:
        """Bytes per device holding `in_flight` micro-batches."""
        return self.static_memory + in_flight * self.activation_memory


def measured_boundary(inward: np.ndarray, gradient: np.ndarray, first, last, row=0) -> np.ndarray:
    """Seconds per micro-batch a stage first..last receives (its input where first > 0, its
    output's gradient where last is not the final layer), from measured moves: inward and gradient
    (K, L) or (L,), `measured_moves` of K (type, tp, m) keys, `row` the stage's key (first, last
    and row broadcast); NaN where a move it needs is unmeasured."""
    inward, gradient = np.atleast_2d(inward), np.atleast_2d(gradient)
    first, last = np.asarray(first), np.asarray(last)
    n_layers = inward.shape[-1]
    receive = np.where(first > 0, inward[row, first], 0.0)
    return receive + np.where(last < n_layers - 1, gradient[row, np.minimum(last + 1, n_layers - 1)], 0.0)


def range_max(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """max(values[first..last]) per stage (first and last broadcast together), by a sparse table
    over the layers."""
    shape = np.broadcast_shapes(np.shape(first), np.shape(last))
    first, last = (np.ravel(x) for x in np.broadcast_arrays(first, last))
    table = [values]
    width = 1
    while 2 * width <= len(values):
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    span = last - first + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    out = np.empty(len(first))
    for k in np.unique(level):
        sel = level == k
        out[sel] = np.maximum(table[k][first[sel]], table[k][last[sel] - (1 << k) + 1])
    return out.reshape(shape)


def _keys(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of the (N,) integer columns, (K, C), ascending, and each row's index into
    them, (N,)."""
    if len(columns[0]) <= 64:  # a plan's stages: fewer steps in Python than in numpy
        rows = list(zip(*(c.tolist() for c in columns)))
        distinct = sorted(set(rows))
        place = {row: k for k, row in enumerate(distinct)}
        keys = np.array(distinct, np.int64).reshape(len(distinct), len(columns))
        return keys, np.array([place[row] for row in rows], np.int64)
    stacked = np.stack(columns, axis=1) if len(columns[0]) else np.zeros((0, len(columns)), np.int64)
    code, space = np.zeros(len(stacked), np.int64), 1
    for j in range(stacked.shape[1]):
        top = int(stacked[:, j].max(initial=0)) + 1
        code, space = code * top + stacked[:, j], space * top
    if space > 4 * len(code) + 1024:  # a sparse code space: sort
        _, first, where = np.unique(code, return_index=True, return_inverse=True)
        return stacked[first], where.reshape(-1)
    present = np.zeros(space, bool)
    present[code] = True
    index = np.cumsum(present) - 1
    codes = np.flatnonzero(present)
    some = np.zeros(space, np.int64)  # a row of each code (rows of one code are equal)
    some[code] = np.arange(len(code))
    return stacked[some[codes]], index[code]


def stage_memory(problem: ParallelProblem, b: int, first, last, tp, dp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage (N,): (static bytes per device, activation bytes per device per micro-batch in
    flight, bytes of parameter states per device); first, last, tp and dp are (N,) ints (or any
    shapes that broadcast together, e.g. spans (N, 1) against options (1, K)). Under
    FP8 a stage keeps its layers' FP8 stashes and FP8 weight copies; under full recomputation
    each pipeline unit's input and, while one layer's backward runs, that layer's whole stash."""
    first, last, tp, dp = (np.asarray(x, np.int64) for x in (first, last, tp, dp))
    m = b // dp
    p_bytes, g_bytes, o_bytes = problem.precision_bytes
    zero = problem.job.zero
    shard = lambda level: np.where(zero >= level, dp, 1)  # noqa: E731
    params = problem.params_prefix[last + 1] - problem.params_prefix[first]
    states = params / tp * (p_bytes / shard(3) + g_bytes / shard(2) + o_bytes / shard(1))
    static = states + (problem.sparse_prefix[last + 1] - problem.sparse_prefix[first]) / (tp * dp)
    if zero >= 3:
        static = static + np.where(dp > 1, range_max(problem.parameters, first, last) * p_bytes / tp, 0.0)
    if problem.fp8:
        static = static + params / tp * FP8_WEIGHT_BYTES
    if problem.job.recompute == "full":
        static = static + m * range_max(problem.recompute_peak, first, last) / tp
    kept = problem.kept_prefix[last + 1] - problem.kept_prefix[first]
    return static, m * kept / tp, states


def stage_arrays(problem: ParallelProblem, b: int, first, last, types, tp, dp) -> StageArrays:
    """The quantities of N stages under micro-batch b: first, last, types, tp, dp are (N,) ints
    (dp dividing b, tp·dp within the type's units)."""
    first, last, types, tp, dp = (np.asarray(x, np.int64) for x in (first, last, types, tp, dp))
    n_layers = problem.num_layers
    m = b // dp
    resources = problem.catalog.resources
    nic = np.array([r.nic_bw for r in resources])[types]
    mem_bw = np.array([r.mem_bw for r in resources])[types]
    keys, where = _keys(types, tp, m)
    prefixes = [problem.time_prefix(int(y), int(t), int(mb)) for y, t, mb in keys]
    prefix = np.stack(prefixes) if prefixes else np.zeros((0, n_layers + 1))
    compute = prefix[where, last + 1] - prefix[where, first] + problem.call_seconds[types]
    pairs, which = _keys(types, tp)
    coefficients = [problem.dp_allreduce(int(y), int(t)) for y, t in pairs]
    reach = max(len(a) for a, _ in coefficients) if coefficients else 0
    table = np.full((2, len(pairs), reach), np.nan)
    for k, (a, c) in enumerate(coefficients):
        table[0, k, : len(a)], table[1, k, : len(c)] = a, c
    within = dp <= reach  # past the network's reach the All-Reduce has no time: nan
    alpha, beta = (np.where(within, table[k, which, np.minimum(dp, reach) - 1], np.nan) for k in (0, 1))
    a_in = np.where(first > 0, problem.act_bytes[np.maximum(first - 1, 0)], 0.0)
    a_out = np.where(last < n_layers - 1, problem.act_bytes[last], 0.0)
    boundary = m * 2 * (a_in + a_out) / (tp * nic)
    moves = [problem.moves(int(y), int(t), int(mb)) for y, t, mb in keys]
    if any(not np.all(np.isnan(inward)) for inward, _ in moves):
        inward, gradient = (np.stack([move[k] for move in moves]) for k in (0, 1))  # (keys, L) each
        measured = measured_boundary(inward, gradient, first, last, where)
        boundary = np.where(np.isnan(measured), boundary, measured)
    static, activation, states = stage_memory(problem, b, first, last, tp, dp)

    params = problem.params_prefix[last + 1] - problem.params_prefix[first]
    grad_bytes = params * problem.precision_bytes[1] / tp
    sync = np.where((dp > 1) & (grad_bytes > 0), grad_bytes * alpha + beta, 0.0)
    busy = compute
    if problem.job.zero >= 3:  # gradients reduce-scattered once; parameters gathered again each micro-batch,
        sync = sync * ZERO3_REDUCE  # prefetched under the compute: what exceeds it shows
        param_bytes = params * problem.precision_bytes[0] / tp
        gather = np.where((dp > 1) & (param_bytes > 0), (param_bytes * alpha + beta) * ZERO3_GATHER, 0.0)
        busy = np.maximum(compute, gather)
    buckets = np.maximum(1, np.ceil(grad_bytes / BUCKET_BYTES))
    exposed = np.where(buckets == 1, sync, np.maximum(sync / buckets, sync - 2.0 / 3.0 * compute))
    optimizer = 2 * states / mem_bw
    units = tp * dp
    return StageArrays(
        time=busy + boundary,
        boundary=boundary,
        tail=exposed + optimizer,
        sync=exposed,
        static_memory=static,
        activation_memory=activation,
        units=units,
        rate=units * problem.price[types],
    )
