"""The exact solver's stage table without the stages that cannot be in a cheaper plan.

Every stage (first, last, t) at k units has r·τ = price_t·k·time = price_t·(B·ps + k·sync(k)),
ps being its compute and boundary seconds per sample times B. For every k an allowed mode may
take, k ≥ k_lb (memory and the floor, with the All-Reduce time's suffix minimum sync_lb), so
r·τ ≥ w = price_t·(B·ps + k_lb·sync_lb(k_lb)), a closed form. A plan costs
c_S·Σ_j r_j·max τ ≥ c_S·Σ_j w_j. So with P(f) the least Σ w of stages covering layers before f
and Q(l+1) of those after l, no plan through the stage costs less than c_S·(P(f) + w + Q(l+1)).
Stages where that reaches the cost of a known plan are left out (rate inf) before any is
provisioned exactly. The known plan is the cheapest under the rates price_t·k_lb, scored
exactly.
"""

from __future__ import annotations

import math

import numpy as np

from hps.errors import InstanceTooLarge
from hps.placement.exact.dp import least_rate, least_span_rate
from hps.placement.exact.table import CHUNK, Table, fill_table, refuse_dense
from hps.placement.model.plan import evaluate_plan
from hps.placement.model.provisioning import Instance, boundary_bytes, range_max

SAFETY = 1e-9
"""Relative margin on the pruning test, for the floats of r·τ against those of its bound."""


def _ceil(values: np.ndarray) -> np.ndarray:
    return np.ceil(values * (1 - 1e-12))


def work_bounds(inst: Instance, first: np.ndarray, last: np.ndarray, stages: int):
    """(w, k_lb), (P, T) each, of spans first..last (P,) on every type, in a plan of `stages`
    stages: a lower bound on r·τ ($·s/h) and on k over every allowed mode; inf where no k ≤
    max_units can fit memory and meet the floor."""
    job = inst.job
    target = job.batch / (job.throughput * inst.bubble(stages))
    time_sum = inst.time_prefix[last + 1] - inst.time_prefix[first]  # (P, T)
    per_sample = job.batch * (time_sum + 2 * boundary_bytes(inst, first, last)[:, None] / inst.nic_bw)
    dense = (inst.dense_prefix[last + 1] - inst.dense_prefix[first])[:, None]
    shrinking = (inst.sparse_prefix[last + 1] - inst.sparse_prefix[first]) + job.batch * (
        inst.act_prefix[last + 1] - inst.act_prefix[first]
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        room = inst.memory - 4 * dense
        k_mem = np.where(room > 0, shrinking[:, None] / room, np.where(shrinking[:, None] == 0, 1.0, np.inf))
        if job.state_sharding == "auto":
            room = inst.memory - range_max(inst.dense, first, last)[:, None]
            sharded = np.where(room > 0, (4 * dense + shrinking[:, None]) / room, np.inf)
            k_mem = np.minimum(k_mem, np.maximum(2.0, sharded))
        k = np.maximum(np.maximum(1.0, _ceil(k_mem)), _ceil(per_sample / target))
        sync = _sync_lower(inst, dense, k)  # k ≥ B·ps / (target − sync_lb(k)): the floor with the least sync
        k = np.maximum(k, np.where(target - sync > 0, _ceil(per_sample / (target - sync)), np.inf))
        feasible = k <= inst.max_units
        k = np.where(feasible, k, np.inf)
        # sync_lb only grows with k, so sync_lb(k) ≥ the sync_lb taken before k rose: one gather
        work = np.where(feasible, inst.price * (per_sample + k * sync), np.inf)
    return work, k


def _sync_lower(inst: Instance, dense: np.ndarray, k: np.ndarray) -> np.ndarray:
    """sync_lb(k): the least All-Reduce time over every k' ≥ k (replicated, the least of the
    modes), (P, T); 0 where k = 1 or the span has no dense bytes."""
    width = inst.alpha_lb.shape[1]
    k = np.where(np.isfinite(k), k, 1.0)
    flat = np.arange(inst.num_types) * width + np.minimum(k, width).astype(np.int64) - 1
    value = dense * inst.alpha_lb.ravel()[flat] + inst.beta_lb.ravel()[flat]
    return np.where((k > 1) & (dense > 0), value, 0.0)


def _prefix_least(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q), (L + 1,) each: the least Σ cost of spans covering layers 0..f−1 and f..L−1, for
    span costs [first, last] (L, L)."""
    n = cost.shape[0]
    before, after = np.full(n + 1, np.inf), np.full(n + 1, np.inf)
    before[0], after[n] = 0.0, 0.0
    by_last = cost.T.copy()
    for i in range(1, n + 1):
        before[i] = np.min(before[:i] + by_last[i - 1, :i])
    for j in range(n - 1, -1, -1):
        after[j] = np.min(cost[j, j:] + after[j + 1 :])
    return before, after


def _guess(inst: Instance, first, last, rate, kind, stages: int | None, heterps: bool, work):
    """A plan to score first: the least Σ rate over spans first..last (P,) with each span's least
    rate (P,) on its type `kind` (P,); with heterps, the least Σ price·k over HeterPS schedules,
    k bounded by `work` (P, T) ≥ price·B·ps (where the dense form fits); None if none."""
    n = inst.num_layers
    if heterps:
        try:
            refuse_dense(inst)
        except InstanceTooLarge:
            return None
        typed = np.full((n, n, inst.num_types), np.inf)
        typed[first, last] = work
        return least_rate(typed, np.zeros_like(typed), stages, True)[1]
    by_last = np.full((n, n), np.inf)
    by_last[last, first] = rate
    spans = least_span_rate(by_last, np.zeros_like(by_last), stages)[1]
    if spans is None:
        return None
    kinds = np.full((n, n), -1)
    kinds[first, last] = kind
    return tuple((f, e, int(kinds[f, e])) for f, e in spans)


def pruned_table(inst: Instance, stages: int, heterps: bool, best: tuple) -> tuple[Table, tuple]:
    """(table, best): the stage table of plans of `stages` stages, every stage that no plan
    cheaper than the best known (cost, plan) can use left out, and that best, improved by the
    plan the rates price·k_lb pick where it is feasible. The bounds are computed CHUNK stages
    at a time and kept as float32 rounded down (still lower bounds), so memory stays bounded."""
    n, types = inst.num_layers, inst.num_types
    first, last = np.triu_indices(n)
    work = np.empty((len(first), types), np.float32)
    least_work, guess_rate, guess_type = (np.empty(len(first)) for _ in range(3))
    step = max(1, CHUNK // types)
    for start in range(0, len(first), step):
        part = slice(start, start + step)
        w, k_lb = work_bounds(inst, first[part], last[part], stages)
        low = w.astype(np.float32)
        work[part] = np.where(low > w, np.nextafter(low, np.float32(-np.inf)), low)
        least_work[part] = np.min(w, axis=1)
        rate = inst.price * k_lb
        guess_type[part] = np.argmin(rate, axis=1)
        guess_rate[part] = np.min(rate, axis=1)
    count = None if math.isinf(inst.job.micro_batches) else stages
    plan = _guess(inst, first, last, guess_rate, guess_type.astype(np.int64), count, heterps, work)
    if plan is not None:
        score = evaluate_plan(inst, plan)
        if score["feasible"] and score["cost"] < best[0]:
            best = (score["cost"], plan)
    scale = inst.bubble(stages) * inst.job.samples / (3600.0 * inst.job.batch)
    least = np.full((n, n), np.inf)
    least[first, last] = least_work
    before, after = _prefix_least(least)
    with np.errstate(invalid="ignore"):  # nan where no plan passes the span: dropped below, rightly
        room = best[0] * (1 + SAFETY) / scale - before[first] - after[last + 1]  # (P,): what a stage may cost
    spans, kinds = np.nonzero((work <= room[:, None].astype(np.float64)) & np.isfinite(work))
    return fill_table(inst, first[spans], last[spans], kinds, stages), best
