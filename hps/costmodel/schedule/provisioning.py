"""Stage provisioning of the general placement model in numpy float64, at any scale.

docs/placement-model.md states the model. Here a stage (first layer, last layer, type) of a
plan of S stages gets k = the smallest k ≤ max_units for which an allowed state mode fits
memory and meets bubble(S)·time(k, mode) ≤ B/R, vectorised over any number of stages and
without scanning every k: memory gives k a closed-form lower bound, and the throughput floor
another, k ≥ B·(compute + boundary per sample) / (B/(R·bubble) − sync_lb(k)), where sync_lb(k)
bounds the All-Reduce time of every k' ≥ k from below (suffix minima of its coefficients).
Raising k to that bound until it stops moving and then testing k exactly finds the smallest k
(every skipped k is proven infeasible); `provision` returns it with the stage's time and mode.

The jnp model (hps.costmodel.schedule.cost) scans k = 1..K instead, which vectorises over millions
of schedules of a small instance; this path serves one-off evaluations and the exact solver
of instances up to thousands of layers, dozens of types and 65,536 units per type.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from hps.collective.model.loads import fluid_loads
from hps.config.types import Catalog, Job, Network, Workload, steps_per_phase

FEASIBLE, INVALID_TYPE, MEMORY, THROUGHPUT, POOLED_CAP = range(5)
REPLICATED, SHARDED = 0, 1
MODES = ("replicated", "sharded")
SHARDED_SYNC = 1.5
"""A sharded stage's traffic per iteration in All-Reduces: the gradient Reduce-Scatter and the
parameter All-Gathers of the forward and backward passes, each half an All-Reduce's bytes."""


def used_sizes(sizes: tuple[int, ...], replicas: np.ndarray) -> np.ndarray:
    """(K, D) int64: P'_d = min(P_d, ⌈k / Π_{e<d} P'_e⌉) for every k of `replicas` (K,)."""
    used, filled = [], np.ones_like(replicas)
    for size in sizes:
        p = np.minimum(size, (replicas + filled - 1) // filled)
        used.append(p)
        filled = filled * p
    return np.stack(used, axis=1) if used else np.ones((len(replicas), 0), np.int64)


@functools.lru_cache(maxsize=256)
def allreduce_coefficients(network: Network, max_units: int, chunks: int, themis: bool):
    """(alpha (K,) s/byte, beta (K,) s, last (K,) int), K = max_units: allreduce(W, k) =
    W·alpha[k−1] + beta[k−1] on `network` (for k = 1 both are 0), the same for every k up to
    last[k−1] (k replicas use the same NPUs per dimension). Computed once per distinct
    used-size vector."""
    k = np.arange(1, max_units + 1, dtype=np.int64)
    sizes = tuple(d.size for d in network.dimensions)
    used = used_sizes(sizes, k)  # changes only where k fills one more NPU of some dimension
    changes = np.concatenate([[True], np.any(used[1:] != used[:-1], axis=1)])
    distinct, inverse = used[changes], np.cumsum(changes) - 1
    bandwidth = np.array([d.bandwidth for d in network.dimensions], np.float64)
    loads = fluid_loads(distinct, np.broadcast_to(bandwidth, distinct.shape), 1.0, chunks, themis)
    latency = [
        sum(2 * steps_per_phase(d.algorithm, int(p)) * d.latency for d, p in zip(network.dimensions, row))
        for row in distinct
    ]
    alpha = np.max(loads, axis=1, initial=0.0)[inverse]
    beta = np.asarray(latency, np.float64)[inverse]
    ends = np.append(np.flatnonzero(changes)[1:], max_units)  # each region's last k
    return alpha, beta, ends[inverse]


def allreduce_table(catalog: Catalog, job: Job, types: int, units: int) -> tuple[np.ndarray, np.ndarray]:
    """(alpha s/byte, beta s), each (types, units) float32: allreduce_t(W, k) = W·alpha[t, k−1] +
    beta[t, k−1] for every k up to `units` (past max_units too, the replicas filling the whole
    network as far as it goes), zeros for the padded types: the jnp model's table
    (`hps.costmodel.schedule.allreduce.allreduce_table`) computed in float64, once per distinct
    used-size vector (a few hundred per type, where the jnp table runs every k), then rounded to
    float32."""
    alpha, beta = np.zeros((types, units)), np.zeros((types, units))
    for t, resource in enumerate(catalog.resources):
        alpha[t], beta[t], _ = allreduce_coefficients(resource.network, units, job.chunks, job.collective == "themis")
    return alpha.astype(np.float32), beta.astype(np.float32)


def suffix_min(values: np.ndarray) -> np.ndarray:
    """min over positions ≥ k along the last axis, for every k."""
    return np.minimum.accumulate(values[..., ::-1], axis=-1)[..., ::-1]


@dataclass(frozen=True)
class Instance:
    """One placement instance as numpy arrays, float64. Per layer (L,): dense, sparse, act
    bytes; per layer and type (L, T): seconds per sample; per type (T,): nic_bw, memory,
    price_per_hour, max_units; per type and k (T, K), K = the largest max_units: All-Reduce
    coefficients alpha, beta, their suffix minima and the last k with the same coefficients
    (padded past a type's max_units with the last value). Prefix sums (L+1, …) make every stage's sums O(1)."""

    workload: Workload
    catalog: Catalog
    job: Job
    time_prefix: np.ndarray
    dense_prefix: np.ndarray
    sparse_prefix: np.ndarray
    act_prefix: np.ndarray
    dense: np.ndarray
    act: np.ndarray
    nic_bw: np.ndarray
    memory: np.ndarray
    price: np.ndarray
    max_units: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    alpha_lb: np.ndarray
    beta_lb: np.ndarray
    region_end: np.ndarray

    @property
    def num_layers(self) -> int:
        return len(self.workload.layers)

    @property
    def num_types(self) -> int:
        return len(self.catalog.resources)

    @functools.cached_property
    def model_flops(self) -> float:
        """FLOP per sample of the whole workload (forward + backward)."""
        return float(sum(layer.flops for layer in self.workload.layers))

    def bubble(self, stages: int) -> float:
        """1 + (S − 1)/M for a plan of S stages; 1 when M = inf."""
        m = self.job.micro_batches
        return 1.0 if math.isinf(m) else 1.0 + (stages - 1) / m


def layer_times(workload: Workload, catalog: Catalog) -> np.ndarray:
    """(L, T) seconds per sample: max(compute, memory roofline) + input io, unless measured."""
    out = np.empty((len(workload.layers), len(catalog.resources)))
    for t, r in enumerate(catalog.resources):
        for i, layer in enumerate(workload.layers):
            if r.name in layer.measured_time:
                out[i, t] = layer.measured_time[r.name]
                continue
            efficiency = r.efficiency_sparse if layer.kind == "sparse" else r.efficiency_dense
            roofline = max(layer.flops / (r.peak_flops * efficiency), layer.mem_bytes / r.mem_bw)
            out[i, t] = roofline + layer.io_bytes / r.io_bw
    return out


def build_instance(workload: Workload, catalog: Catalog, job: Job) -> Instance:
    """The arrays `provision` reads, for one workload × catalogue × job."""
    per_layer = lambda name: np.array([getattr(l, name) for l in workload.layers], np.float64)  # noqa: E731
    prefix = lambda values: np.concatenate([np.zeros((1, *values.shape[1:])), np.cumsum(values, axis=0)])  # noqa: E731
    res = catalog.resources
    k_max = max(r.max_units for r in res)
    themis = job.collective == "themis"
    coefficients = [allreduce_coefficients(r.network, r.max_units, job.chunks, themis) for r in res]
    pad = lambda v: np.concatenate([v, np.full(k_max - len(v), v[-1])])  # noqa: E731
    alpha, beta, region_end = (np.stack([pad(c[i]) for c in coefficients]) for i in range(3))
    dense = per_layer("dense_param_bytes")
    return Instance(
        workload=workload,
        catalog=catalog,
        job=job,
        time_prefix=prefix(layer_times(workload, catalog)),
        dense_prefix=prefix(dense),
        sparse_prefix=prefix(per_layer("sparse_param_bytes")),
        act_prefix=prefix(per_layer("act_bytes")),
        dense=dense,
        act=per_layer("act_bytes"),
        nic_bw=np.array([r.nic_bw for r in res]),
        memory=np.array([r.memory for r in res]),
        price=np.array([r.price_per_hour for r in res]),
        max_units=np.array([r.max_units for r in res], np.int64),
        alpha=alpha,
        beta=beta,
        alpha_lb=suffix_min(alpha),
        beta_lb=suffix_min(beta),
        region_end=region_end,
    )


@dataclass(frozen=True)
class Stages:
    """Provisioned stages, each field (N,): replicas k, time (s per iteration at k), reason
    code (FEASIBLE, MEMORY or THROUGHPUT), mode (REPLICATED or SHARDED), memory (bytes per unit
    at k)."""

    replicas: np.ndarray
    time: np.ndarray
    reason: np.ndarray
    mode: np.ndarray
    memory: np.ndarray


def boundary_bytes(inst: Instance, first, last) -> np.ndarray:
    """a_in + a_out (bytes per sample) of stages first..last: the activation of the layer
    before the stage (none for the first stage) and of its last layer (none for the last)."""
    act_in = np.where(first > 0, inst.act[np.maximum(first - 1, 0)], 0.0)
    act_out = np.where(last < inst.num_layers - 1, inst.act[last], 0.0)
    return act_in + act_out


class _Segments:
    """The per-sample sums and bytes of stages first..last on types, each (N,)."""

    def __init__(self, inst: Instance, first, last, types, dense_max):
        self.types = types
        self.time_sum = inst.time_prefix[last + 1, types] - inst.time_prefix[first, types]
        self.boundary = boundary_bytes(inst, first, last)
        self.dense = inst.dense_prefix[last + 1] - inst.dense_prefix[first]
        self.dense_max = dense_max
        self.sparse = inst.sparse_prefix[last + 1] - inst.sparse_prefix[first]
        self.act_sum = inst.act_prefix[last + 1] - inst.act_prefix[first]


def _sync(inst: Instance, dense, types, k):
    """allreduce_t(W, k), seconds: W·alpha + beta at k (0 for k = 1 or no dense bytes)."""
    index = types * inst.alpha.shape[1] + np.minimum(k, inst.alpha.shape[1]) - 1
    raw = dense * inst.alpha.ravel()[index] + inst.beta.ravel()[index]
    return np.where((k > 1) & (dense > 0), raw, 0.0)


def _seconds(inst: Instance, time_sum, boundary, types, k, sync, mode):
    """time_j(k, mode), seconds per iteration, as the reference writes it, from the stage's
    per-sample compute (time_sum), boundary bytes and All-Reduce time `sync`."""
    batch = inst.job.batch
    compute = batch / k * time_sum
    transfer = batch / k * 2 * boundary / inst.nic_bw[types]
    return compute + transfer + np.where(mode == SHARDED, SHARDED_SYNC * sync, sync)


def _time(inst: Instance, seg: _Segments, k, mode):
    """time_j(k, mode), seconds per iteration, as the reference writes it."""
    return _seconds(inst, seg.time_sum, seg.boundary, seg.types, k, _sync(inst, seg.dense, seg.types, k), mode)


def _memory(inst: Instance, seg: _Segments, k, mode):
    """mem_j(k, mode), bytes per unit, as the reference writes it."""
    rest = seg.sparse / k + inst.job.batch / k * seg.act_sum
    return np.where(mode == SHARDED, 4 * seg.dense / k + seg.dense_max + rest, 4 * seg.dense + rest)


def _memory_bound(inst: Instance, seg: _Segments, mode: int):
    """The least k whose memory fits (float, maybe below 1; inf where none does)."""
    capacity = inst.memory[seg.types]
    if mode == SHARDED:
        room, shrinking = capacity - seg.dense_max, 4 * seg.dense + seg.sparse + inst.job.batch * seg.act_sum
    else:
        room, shrinking = capacity - 4 * seg.dense, seg.sparse + inst.job.batch * seg.act_sum
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(room > 0, shrinking / room, np.where((room == 0) & (shrinking == 0), 1.0, np.inf))


def stage_cap(inst: Instance, types):
    """The most replicas a stage of each of `types` can have: its type's max_units, and no more
    than the samples of a micro-batch (`Job.max_stage_replicas`: each replica runs a whole one)."""
    return np.minimum(inst.max_units[types], inst.job.max_stage_replicas)


def _least_fitting(inst: Instance, seg: _Segments, mode: int, start: int):
    """The least k ≥ start whose memory fits (memory falls as k grows); inf where none can."""
    k = np.maximum(start, np.ceil(_memory_bound(inst, seg, mode) * (1 - 1e-12)))
    finite = np.isfinite(k) & (k <= stage_cap(inst, seg.types))
    k = np.where(finite, k, 1).astype(np.int64)
    short = finite & (_memory(inst, seg, k, mode) > inst.memory[seg.types])  # rounding at the bound
    return np.where(finite, k + short, np.inf)


def _smallest_k(inst: Instance, seg: _Segments, mode: int, bubble: float, start: int):
    """(k, fits): the smallest k ≥ start ≤ max_units that fits memory and meets the floor in
    `mode` (max_units + 1 where none does), and whether some k ≤ max_units fits memory; (N,).

    Each pass raises k to the floor's lower bound; where k already meets it but the floor
    fails (the All-Reduce time at k is above its suffix minimum), k moves to the least k of
    its coefficient region that could meet the floor, or past the region. A pass touches only
    the stages still open."""
    cap = stage_cap(inst, seg.types)
    lowest = _least_fitting(inst, seg, mode, start)
    fits_memory = lowest <= cap
    k = np.where(fits_memory, lowest, cap + 1).astype(np.int64)
    target = inst.job.batch / (inst.job.throughput * bubble)
    per_sample = inst.job.batch * (seg.time_sum + 2 * seg.boundary / inst.nic_bw[seg.types])
    scale = SHARDED_SYNC if mode == SHARDED else 1.0
    width = inst.alpha.shape[1]
    alpha_lb, beta_lb, region_end = (a.ravel() for a in (inst.alpha_lb, inst.beta_lb, inst.region_end))
    open_ = np.flatnonzero(k <= cap)
    while open_.size:
        kk, dense, types = k[open_], seg.dense[open_], seg.types[open_]
        column = types * width + np.minimum(kk, width) - 1
        lower = np.where((kk > 1) & (dense > 0), dense * alpha_lb[column] + beta_lb[column], 0.0)
        room = target - scale * lower
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            following = np.where(room > 0, np.ceil(per_sample[open_] / room * (1 - 1e-12)), np.inf)
        at_bound = np.flatnonzero(following <= kk)  # the floor's lower bound allows kk: test it
        here, k_here = open_[at_bound], kk[at_bound]
        sync = _sync(inst, dense[at_bound], types[at_bound], k_here)
        seconds = _seconds(inst, seg.time_sum[here], seg.boundary[here], types[at_bound], k_here, sync, mode)
        ok = inst.job.batch / (bubble * seconds) >= inst.job.throughput
        room = target - scale * sync
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            need = np.where(room > 0, np.ceil(per_sample[here] / room * (1 - 1e-12)), np.inf)
        end = region_end[column[at_bound]]
        following[at_bound] = np.where(ok, k_here, np.where(need <= end, np.maximum(k_here + 1, need), end + 1))
        k[open_] = np.minimum(following, cap[open_] + 1).astype(np.int64)
        keep = k[open_] <= cap[open_]
        keep[at_bound[ok]] = False
        open_ = open_[keep]
    return k, fits_memory


def range_max(values: np.ndarray, first, last) -> np.ndarray:
    """max(values[first..last]) for arrays of ranges (N,), by a sparse table of O(L log L)."""
    levels = [values]
    while 2 ** len(levels) <= len(values):
        prev, width = levels[-1], 2 ** (len(levels) - 1)
        levels.append(np.maximum(prev[:-width], prev[width:]))
    span = last - first + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    out = np.empty(len(first))
    for j in np.unique(level):
        rows = level == j
        table = levels[j]
        out[rows] = np.maximum(table[first[rows]], table[last[rows] - 2**j + 1])
    return out


def every_stage(num_layers: int, num_types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, last, type), (L·(L+1)/2·T,) each: every stage, sorted by (first, last, type)."""
    first, last = np.triu_indices(num_layers)
    return np.repeat(first, num_types), np.repeat(last, num_types), np.tile(np.arange(num_types), len(first))


def fastest_fitting(inst: Instance, first: int, last: int, type_index: int) -> tuple[int, float] | None:
    """(k, seconds per iteration) of the fastest provisioning of stage first..last on type
    `type_index` over the unit counts k = 1..max_units whose memory fits (replicated, or sharded
    where the job allows it); None when no count fits. More units are not always faster: the
    All-Reduce can outgrow the compute they save."""
    cap = int(stage_cap(inst, type_index))
    k = np.arange(1, cap + 1)
    first_, last_, types = np.full(cap, first), np.full(cap, last), np.full(cap, type_index)
    seg = _Segments(inst, first_, last_, types, range_max(inst.dense, first_, last_))
    modes = (REPLICATED, SHARDED) if inst.job.state_sharding == "auto" else (REPLICATED,)
    best = None
    for mode in modes:
        seconds = _time(inst, seg, k, mode)
        fits = (_memory(inst, seg, k, mode) <= inst.memory[type_index]) & ((mode == REPLICATED) | (k >= 2))
        if fits.any():
            i = int(np.argmin(np.where(fits, seconds, np.inf)))
            if best is None or seconds[i] < best[1]:
                best = (int(k[i]), float(seconds[i]))
    return best


def provision(inst: Instance, first, last, types, stages: int) -> Stages:
    """Provision stages first..last (inclusive layer indices) on types, arrays (N,), each a
    stage of a plan of `stages` stages (which sets the bubble)."""
    first, last, types = (np.asarray(x, np.int64).reshape(-1) for x in (first, last, types))
    seg = _Segments(inst, first, last, types, range_max(inst.dense, first, last))
    bubble = inst.bubble(stages)
    k_rep, fits_rep = _smallest_k(inst, seg, REPLICATED, bubble, 1)
    if inst.job.state_sharding == "auto":
        k_sh, fits_sh = _smallest_k(inst, seg, SHARDED, bubble, 2)
    else:
        k_sh, fits_sh = np.full_like(k_rep, np.iinfo(np.int64).max), np.zeros_like(fits_rep)
    cap = stage_cap(inst, types)
    feasible = np.minimum(k_rep, k_sh) <= cap
    mode = np.where(feasible & (k_sh < k_rep), SHARDED, REPLICATED)
    replicas = np.where(feasible, np.minimum(k_rep, k_sh), cap)
    reason = np.where(feasible, FEASIBLE, np.where(fits_rep | fits_sh, THROUGHPUT, MEMORY))
    time, memory = _time(inst, seg, replicas, mode), _memory(inst, seg, replicas, mode)
    return Stages(replicas=replicas, time=time, reason=reason, mode=mode, memory=memory)
