"""Padded float64 numpy pytrees of parallel-plan instances and plans, for the batched JAX scorer
(`hps.costmodel.parallel.batched`), built once per instance on the host.

Shapes: L layers, T types (and sites: a site is some type's, so at most T of them), P
tensor-parallel levels (t = 1, 2, 4, .., 2^(P−1)), D divisors of the batch, S stages; each is a
size bucket (`Bucket`), the real sizes given by masks. Layer times come from the problem's own
numpy pieces as affine coefficients in the per-replica micro-batch m (`layer_coefficients`); the
per-layer memory figures from its arrays (`kept_prefix`, `recompute_peak`, the units between
cuts); the data-parallel All-Reduce (`ParallelProblem.dp_allreduce`) is kept only at the d a plan
may use, the divisors of the batch (every d divides b, and b the batch), so its size is T·P·D
whatever the types' max_units (cloud-2026 has thousands).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from flax import struct

from hps.config.limits import policy_bucket
from hps.config.types import ParallelStage
from hps.costmodel.parallel.problem import ParallelProblem, divisors

TP_LEVELS = 7
"""Tensor-parallel levels of the default bucket: t = 1, 2, .., 64."""
LAYER_BUCKETS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TYPE_BUCKETS = (2, 4, 8, 16, 32)
DIVISOR_BUCKETS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
STAGE_BUCKETS = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SPAN_COLUMNS = ("parameters", "sparse_bytes", "kept", "units")
"""Columns of `PlanParams.span_prefix`: dense parameters, embedding bytes, the activation bytes
per sample a stage keeps for its backward (`ParallelProblem.kept_prefix`: the job's stash under
its precision and recomputation) and pipeline units (`ParallelProblem.span_units`)."""
MAX_COLUMNS = ("parameters", "recompute_peak")
"""Columns of `PlanParams.span_max`: parameters (ZeRO-3's gathered layer) and the bytes per
sample a recomputed layer holds (`ParallelProblem.recompute_peak`)."""
DIVISOR_PAD = 2**40
"""The value of padded divisor slots: larger than any batch, so a search over divisors ends there."""


@dataclasses.dataclass(frozen=True)
class Bucket:
    """Padded sizes of one compiled program: layers L, types T, divisors of the batch D and
    tensor-parallel levels P (t up to 2^(P−1))."""

    layers: int
    types: int
    divisors: int
    tp_levels: int = TP_LEVELS


def bucket_for(*problems: ParallelProblem, tp_levels: int = TP_LEVELS) -> Bucket:
    """The least bucket that holds every one of `problems` (ValueError past the largest)."""
    return Bucket(
        policy_bucket(max(p.num_layers for p in problems), LAYER_BUCKETS),
        policy_bucket(max(p.num_types for p in problems), TYPE_BUCKETS),
        policy_bucket(max(len(divisors(int(p.job.batch))) for p in problems), DIVISOR_BUCKETS),
        tp_levels,
    )


@struct.dataclass
class PlanParams:
    """One instance (a leading instance axis when stacked). Layer-time coefficients (T, P, L),
    per type and level: a layer's seconds per micro-batch on one device of a t-way group at m
    samples per replica are max(compute_slope·m + compute_fixed, memory_slope·m) +
    other_slope·m + other_fixed (0 on padded layers and types)."""

    layer_mask: np.ndarray  # (L,) bool
    compute_slope: np.ndarray  # (T, P, L) s per sample: the clock's compute
    compute_fixed: np.ndarray  # (T, P, L) s: the clock's per-call cost (kernel clock), else 0
    memory_slope: np.ndarray  # (T, P, L) s per sample: HBM traffic hidden under the compute
    other_slope: np.ndarray  # (T, P, L) s per sample: serial HBM traffic, input reads, tp bytes
    other_fixed: np.ndarray  # (T, P, L) s: exposed tp All-Reduce latency
    act_bytes: np.ndarray  # (L,) bytes per sample of each layer's output activation
    span_prefix: np.ndarray  # (L + 1, len(SPAN_COLUMNS)) prefix sums, per sample / parameters
    span_max: np.ndarray  # (levels, L, len(MAX_COLUMNS)) sparse table: max over layers i..i+2^k−1
    banned_prefix: np.ndarray  # (L + 1, T) int32: layers before each that may not run on the type
    type_mask: np.ndarray  # (T,) bool
    site: np.ndarray  # (T,) int32: index of the type's site
    price: np.ndarray  # (T,) $ per unit-hour
    memory_limit: np.ndarray  # (T,) bytes a plan may use per unit (memory less headroom)
    max_units: np.ndarray  # (T,) int64
    nic_bw: np.ndarray  # (T,) bytes/s
    mem_bw: np.ndarray  # (T,) bytes/s
    peak_flops: np.ndarray  # (T,) FLOP/s (the MFU's denominator)
    call_s: np.ndarray  # (T,) s per micro-batch a stage spends on its calls (measured_call_s)
    residual_low: np.ndarray  # (T,) the clock's held-out residuals on the type (throughput_range)
    residual_high: np.ndarray  # (T,)
    allreduce_alpha: np.ndarray  # (T, P, D) s/byte at d = divisors; NaN past the network's reach
    allreduce_beta: np.ndarray  # (T, P, D) s
    link_bandwidth: np.ndarray  # (T, T) bytes/s between sites (inf on the diagonal, 0: no link)
    link_latency: np.ndarray  # (T, T) s
    link_price: np.ndarray  # (T, T) $ per byte
    divisors: np.ndarray  # (D,) int64 divisors of the batch ascending, DIVISOR_PAD past them
    num_layers: np.ndarray  # () int64
    batch: np.ndarray  # () int64 samples per iteration
    throughput_floor: np.ndarray  # () samples/s
    budget_per_hour: np.ndarray  # () $/hour the units may rent for (inf: no budget)
    samples: np.ndarray  # () samples to train
    zero: np.ndarray  # () int64 ZeRO level 0-3
    recompute_full: np.ndarray  # () bool
    fp8: np.ndarray  # () bool: the job computes in FP8 (FP8 weight copies in memory)
    state_bytes: np.ndarray  # (3,) bytes per parameter of parameters, gradients, optimizer state
    virtual_stages: np.ndarray  # () float model chunks per device: bubble M + (S − 1)/v
    model_flops: np.ndarray  # () FLOP per sample of the whole model


@struct.dataclass
class Plans:
    """N plans of at most S stages (a leading instance axis when stacked): per stage (N, S) int32
    first and last layer, type index, t and d, `stage_mask` (N, S) bool (the real stages first),
    and `micro_batch` (N,) int32 b. Stage j's replicas run m = b/d samples per micro-batch."""

    first: np.ndarray
    last: np.ndarray
    types: np.ndarray
    tp: np.ndarray
    dp: np.ndarray
    stage_mask: np.ndarray
    micro_batch: np.ndarray


def _pad(values, shape, fill=0.0, dtype=np.float64) -> np.ndarray:
    values = np.asarray(values, dtype)
    out = np.full(shape, fill, dtype)
    out[tuple(slice(0, n) for n in values.shape)] = values
    return out


def layer_coefficients(problem: ParallelProblem, type_index: int, tp: int) -> tuple[np.ndarray, ...]:
    """(compute_slope, compute_fixed, memory_slope, other_slope, other_fixed), each (L,), such
    that `problem.layer_times(type_index, tp, m)` = max(compute_slope·m + compute_fixed,
    memory_slope·m) + other_slope·m + other_fixed for every m. Read off the problem itself at
    m = 1 and m = 2, every term being affine in m: the compute is the clock's
    (`compute_seconds`, as layer_times asks it); the HBM traffic under the compute is the
    problem's arrays' (mem_bytes less serial_bytes, times 1 + recomputed); the rest (serial
    traffic, input reads, exposed tensor-parallel collectives) is what `layer_times` adds to
    their larger."""
    r = problem.catalog.resources[type_index]
    fp8 = problem.fp8 and r.fp8_peak_flops is not None
    clock = lambda m: problem.clock.compute_seconds(  # noqa: E731
        r, problem.flops, problem.sparse_kind, tp, m, problem.recomputed, fp8
    )
    hidden = (problem.mem_bytes - problem.serial_bytes) * (1 + problem.recomputed) / (tp * r.mem_bw)
    compute = [clock(1), clock(2)]
    rest = [problem.layer_times(type_index, tp, m) - np.maximum(compute[m - 1], m * hidden) for m in (1, 2)]
    compute_slope, other_slope = compute[1] - compute[0], rest[1] - rest[0]
    return compute_slope, compute[0] - compute_slope, hidden, other_slope, rest[0] - other_slope


def sparse_table(values: np.ndarray, levels: int) -> np.ndarray:
    """(levels, len(values), C) from (len(values), C): entry [k, i] the max over rows
    i..i+2^k−1 (clipped at the end)."""
    table = [values]
    for k in range(1, levels):
        prev, width = table[-1], 1 << (k - 1)
        shifted = np.concatenate([prev[width:], np.repeat(prev[-1:], width, axis=0)])[: len(prev)]
        table.append(np.maximum(prev, shifted))
    return np.stack(table)


def plan_params(problem: ParallelProblem, bucket: Bucket) -> PlanParams:
    """The instance as a PlanParams padded to `bucket`. ValueError where a layer has measured
    times (`layer.measured`: its times and moves are not affine in m; the workload's
    `measured_call_s` is taken) or the instance is past the bucket."""
    if any(layer.measured for layer in problem.workload.layers):
        raise ValueError("the batched scorer takes no measured layer times (layer.measured); use score_plan")
    n, types, batch = problem.num_layers, problem.num_types, int(problem.job.batch)
    found = divisors(batch)
    if n > bucket.layers or types > bucket.types or len(found) > bucket.divisors:
        raise ValueError(f"instance ({n} layers, {types} types, {len(found)} divisors) is past {bucket}")
    L, T, D, P = bucket.layers, bucket.types, bucket.divisors, bucket.tp_levels  # noqa: N806
    coefficients = np.zeros((5, T, P, L))
    alpha, beta = np.zeros((T, P, D)), np.zeros((T, P, D))
    index = np.asarray(found) - 1
    for y in range(types):
        for level in range(P):
            coefficients[:, y, level, :n] = layer_coefficients(problem, y, 1 << level)
            a, c = problem.dp_allreduce(y, 1 << level)
            within = index < len(a)
            alpha[y, level, : len(found)] = np.where(within, a[np.minimum(index, len(a) - 1)], np.nan)
            beta[y, level, : len(found)] = np.where(within, c[np.minimum(index, len(c) - 1)], np.nan)
    units = problem.span_units(np.zeros(n + 1, np.int64), np.arange(-1, n))  # units in layers 0..i−1
    prefix = np.stack([problem.params_prefix, problem.sparse_prefix, problem.kept_prefix, units], 1)
    prefix = np.concatenate([prefix, np.repeat(prefix[-1:], L - n, axis=0)])  # flat past the last layer
    levels = max(1, L.bit_length())
    per_layer = _pad(np.stack([problem.parameters, problem.recompute_peak], 1), (L, len(MAX_COLUMNS)))
    banned = np.zeros((n + 1, types), np.int64)
    if problem.allowed is not None:
        banned = np.vstack([np.zeros((1, types), np.int64), np.cumsum(~problem.allowed, axis=0)])
    bandwidth, latency, link_price = problem.link_matrix()
    resources = problem.catalog.resources
    per_type = lambda f, fill=0.0: _pad([f(r) for r in resources], (T,), fill)  # noqa: E731
    job, clock = problem.job, problem.clock
    residuals = np.array([clock.residuals(r, problem.fp8) for r in resources]).reshape(-1, 2)
    return PlanParams(
        layer_mask=_pad(np.ones(n, bool), (L,), False, bool),
        compute_slope=coefficients[0],
        compute_fixed=coefficients[1],
        memory_slope=coefficients[2],
        other_slope=coefficients[3],
        other_fixed=coefficients[4],
        act_bytes=_pad(problem.act_bytes, (L,)),
        span_prefix=prefix,
        span_max=sparse_table(per_layer, levels),
        banned_prefix=_pad(banned, (L + 1, T), 0, np.int32),
        type_mask=_pad(np.ones(types, bool), (T,), False, bool),
        site=_pad(problem.type_site, (T,), 0, np.int32),
        price=_pad(problem.price, (T,)),
        memory_limit=_pad(problem.memory_limit, (T,)),
        max_units=per_type(lambda r: r.max_units, 0).astype(np.int64),
        nic_bw=per_type(lambda r: r.nic_bw, 1.0),
        mem_bw=per_type(lambda r: r.mem_bw, 1.0),
        peak_flops=per_type(lambda r: r.peak_flops, 1.0),
        call_s=_pad(problem.call_seconds, (T,)),
        residual_low=_pad(residuals[:, 0], (T,)),
        residual_high=_pad(residuals[:, 1], (T,)),
        allreduce_alpha=alpha,
        allreduce_beta=beta,
        link_bandwidth=_pad(bandwidth, (T, T)),
        link_latency=_pad(latency, (T, T)),
        link_price=_pad(link_price, (T, T)),
        divisors=_pad(found, (D,), DIVISOR_PAD, np.int64),
        num_layers=np.int64(n),
        batch=np.int64(batch),
        throughput_floor=np.float64(job.throughput),
        budget_per_hour=np.float64(math.inf if job.budget_per_hour is None else job.budget_per_hour),
        samples=np.float64(job.samples),
        zero=np.int64(job.zero),
        recompute_full=np.bool_(job.recompute == "full"),
        fp8=np.bool_(problem.fp8),
        state_bytes=np.asarray(problem.precision_bytes, np.float64),
        virtual_stages=np.float64(problem.virtual_stages),
        model_flops=np.float64(problem.model_flops),
    )


def stack(trees: list):
    """PlanParams or Plans of several instances stacked on a leading instance axis."""
    return type(trees[0])(
        **{f.name: np.stack([getattr(t, f.name) for t in trees]) for f in dataclasses.fields(trees[0])}
    )


def plans_from_stages(problem: ParallelProblem, plans: list, stages: int) -> Plans:
    """Plans of `plans`, a list of (stages, b) (a tuple of ParallelStage and the micro-batch),
    padded to `stages` stages (ValueError for a longer plan)."""
    count = len(plans)
    out = {k: np.zeros((count, stages), np.int32) for k in ("first", "last", "types", "tp", "dp")}
    mask = np.zeros((count, stages), bool)
    micro_batch = np.zeros(count, np.int32)
    for i, (plan, b) in enumerate(plans):
        if len(plan) > stages:
            raise ValueError(f"plan {i} has {len(plan)} stages, past the bucket of {stages}")
        for j, s in enumerate(plan):
            row = (s.first, s.last, problem.catalog.index(s.type), s.tp, s.dp)
            for key, value in zip(("first", "last", "types", "tp", "dp"), row):
                out[key][i, j] = value
        mask[i, : len(plan)] = True
        micro_batch[i] = b
    return Plans(**out, stage_mask=mask, micro_batch=micro_batch)


def stages_of(problem: ParallelProblem, plans: Plans, i: int) -> tuple[tuple[ParallelStage, ...], int]:
    """(stages, b) of plan i of unstacked `plans`, as `score_plan` takes them."""
    count = int(plans.stage_mask[i].sum())
    names = [r.name for r in problem.catalog.resources]
    stages = tuple(
        ParallelStage(
            int(plans.first[i, j]), int(plans.last[i, j]), names[int(plans.types[i, j])],
            int(plans.tp[i, j]), int(plans.dp[i, j]),
        )
        for j in range(count)
    )  # fmt: skip
    return stages, int(plans.micro_batch[i])


def stage_bucket(count: int) -> int:
    """The least stage bucket that holds `count` stages."""
    return policy_bucket(max(1, count), STAGE_BUCKETS)


def layer_times_from(params: PlanParams, type_index: int, tp: int, m: int) -> np.ndarray:
    """(L,) the layer times the coefficients of unstacked `params` give on (type, t, m): what
    `ParallelProblem.layer_times` gives on the real layers."""
    level = int(math.log2(tp))
    at = lambda name: np.asarray(getattr(params, name))[type_index, level]  # noqa: E731
    n = int(params.num_layers)
    compute = at("compute_slope") * m + at("compute_fixed")
    times = np.maximum(compute, at("memory_slope") * m) + at("other_slope") * m + at("other_fixed")
    return times[:n]
