"""Every quantity of a parallel-plan stage, vectorised over stages (docs/parallel-plans.md).

A stage is (first layer, last layer, type, t, d) under a micro-batch of b samples: each of its d
replicas runs m = b / d samples a micro-batch on a t-way tensor-parallel group. All arrays are
(N,) over N stages, float64 seconds and bytes.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hps.placement.model.parallel.problem import BUCKET_BYTES, ZERO3_SYNC, ParallelProblem


@dataclasses.dataclass(frozen=True)
class StageArrays:
    """Per stage: `time` (s per micro-batch: layers + pipeline boundary on the stage's NICs),
    `tail` (s per iteration after the last backward: exposed gradient sync + optimizer step),
    `static_memory` (bytes per device: states, gathered parameters, embedding shards, the
    recompute peak), `activation_memory` (bytes per device per micro-batch in flight), `units`
    (t·d) and `rate` ($ per hour)."""

    time: np.ndarray
    tail: np.ndarray
    static_memory: np.ndarray
    activation_memory: np.ndarray
    units: np.ndarray
    rate: np.ndarray

    def memory(self, in_flight) -> np.ndarray:
        """Bytes per device holding `in_flight` micro-batches."""
        return self.static_memory + in_flight * self.activation_memory


def range_max(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """max(values[first..last]) per stage, by a sparse table over the layers."""
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
    return out


def stage_arrays(problem: ParallelProblem, b: int, first, last, types, tp, dp) -> StageArrays:
    """The quantities of N stages under micro-batch b: first, last, types, tp, dp are (N,) ints
    (dp dividing b, tp·dp within the type's units)."""
    first, last, types, tp, dp = (np.asarray(x, np.int64) for x in (first, last, types, tp, dp))
    n_layers = problem.num_layers
    m = b // dp
    resources = problem.catalog.resources
    nic = np.array([resources[t].nic_bw for t in types])
    mem_bw = np.array([resources[t].mem_bw for t in types])
    compute = np.empty(len(first))
    alpha, beta = np.empty(len(first)), np.empty(len(first))
    for key in set(zip(types.tolist(), tp.tolist(), m.tolist())):
        sel = (types == key[0]) & (tp == key[1]) & (m == key[2])
        prefix = problem.time_prefix(*key)
        compute[sel] = prefix[last[sel] + 1] - prefix[first[sel]]
    for key in set(zip(types.tolist(), tp.tolist())):
        sel = (types == key[0]) & (tp == key[1])
        a, c = problem.dp_allreduce(*key)
        alpha[sel], beta[sel] = a[dp[sel] - 1], c[dp[sel] - 1]
    a_in = np.where(first > 0, problem.act_bytes[np.maximum(first - 1, 0)], 0.0)
    a_out = np.where(last < n_layers - 1, problem.act_bytes[last], 0.0)
    boundary = m * 2 * (a_in + a_out) / (tp * nic)

    p_bytes, g_bytes, o_bytes = problem.precision_bytes
    zero = problem.job.zero
    shard = lambda level: np.where(zero >= level, dp, 1)  # noqa: E731
    params = problem.params_prefix[last + 1] - problem.params_prefix[first]
    states = params / tp * (p_bytes / shard(3) + g_bytes / shard(2) + o_bytes / shard(1))
    gathered = np.zeros(len(first))
    if zero >= 3:
        gathered = np.where(dp > 1, range_max(problem.parameters, first, last) * p_bytes / tp, 0.0)
    sparse = (problem.sparse_prefix[last + 1] - problem.sparse_prefix[first]) / (tp * dp)
    if problem.job.recompute == "full":
        kept = problem.input_prefix[last + 1] - problem.input_prefix[first]
        peak = m * range_max(problem.stash, first, last) / tp
    else:
        kept, peak = problem.stash_prefix[last + 1] - problem.stash_prefix[first], 0.0

    grad_bytes = params * g_bytes / tp
    sync = np.where((dp > 1) & (grad_bytes > 0), grad_bytes * alpha + beta, 0.0)
    if zero >= 3:
        sync = sync * ZERO3_SYNC
    buckets = np.maximum(1, np.ceil(grad_bytes / BUCKET_BYTES))
    exposed = np.where(buckets == 1, sync, np.maximum(sync / buckets, sync - 2.0 / 3.0 * compute))
    optimizer = 2 * states / mem_bw
    units = tp * dp
    return StageArrays(
        time=compute + boundary,
        tail=exposed + optimizer,
        static_memory=states + gathered + sparse + peak,
        activation_memory=m * kept / tp,
        units=units,
        rate=units * problem.price[types],
    )
