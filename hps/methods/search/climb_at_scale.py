"""Stage moves at any size: the hill climb of `hps.methods.search.refine` in numpy float64.

`refine` scores its candidates against the jnp model's segment table (L²·T entries), which does
not fit past about a hundred layers at 16 types. The moves are the same (retype a stage's tail
l … end of l's stage, or its head start … l, to another type t), and each changes only the
stage holding l and, where the new type equals a neighbour's, merges with that neighbour. So a
candidate is priced by provisioning its one or two new stages (`provision`, vectorised over
every candidate of a round) and combining them with the plan's untouched stages:

    dollars/h   = D − Σ_window r_j + Σ_new r                 (prefix sums over the stages)
    max τ       = max(max τ before the window, after it, τ of the new stages)
    units_t     = U_t − window units_t + new units_t
    failing     = failing layers outside the window + those of failing new stages

and the plan's cost, c · dollars/h / throughput with throughput = B / (bubble(S') · max τ),
follows. Candidates rank as every search ranks (hps.methods.search.scoring): feasible plans
by cost, the rest by the graded penalty ln(R / throughput)⁺ + failing layers / L + Σ_t units
over cap_t / cap_t. A round applies the best candidate if it ranks strictly better; rounds
repeat until none does, `max_rounds` ran or the deadline passed.

Where micro-batches are finite the bubble and every stage's replicas depend on the stage
count S. Candidates keep the other stages as provisioned at S (their new stages get bubble(S')),
so their figures are estimates there; each chosen move is checked by `evaluate_plan` and the
climb stops at the first that the exact score does not confirm. With M = ∞ the figures are
exact (the tests compare them with `evaluate_plan`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from hps.costmodel.schedule.plan import evaluate_plan, schedule_plan
from hps.costmodel.schedule.provisioning import FEASIBLE, Instance, provision

MAX_ROUNDS = 4096


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((1, *values.shape[1:])), np.cumsum(values, axis=0)])


class _Plan:
    """A plan's stages (S,) first, last, type and their provisioning, with the prefix sums
    that price a candidate's untouched stages in O(T)."""

    def __init__(self, inst: Instance, schedule: np.ndarray):
        spans = np.array(schedule_plan(schedule.tolist()), np.int64)
        self.first, self.last, self.types = spans[:, 0], spans[:, 1], spans[:, 2]
        stages = provision(inst, self.first, self.last, self.types, len(spans))
        self.time = stages.time
        rate = stages.replicas * inst.price[self.types]
        onehot = np.zeros((len(spans), inst.num_types))
        onehot[np.arange(len(spans)), self.types] = stages.replicas
        failing = np.where(stages.reason != FEASIBLE, self.last - self.first + 1, 0)
        self.rate_prefix, self.unit_prefix, self.fail_prefix = _prefix(rate), _prefix(onehot), _prefix(failing)
        self.before_max = np.maximum.accumulate(np.concatenate([[0.0], self.time]))  # [j]: max τ of stages < j
        self.after_max = np.maximum.accumulate(np.concatenate([self.time, [0.0]])[::-1])[::-1]  # [j]: of ≥ j


def _moves(plan: _Plan, num_types: int):
    """Every stage move of `plan` to one of `num_types` types: window (w0, w1) of replaced
    stages and two new stages (first, last, type), the first of which may be absent (valid1
    False); each (N,)."""
    n_stages, types = len(plan.first), np.arange(num_types)
    stage_of = np.repeat(np.arange(n_stages), plan.last - plan.first + 1)
    layer, t = (a.ravel() for a in np.meshgrid(np.arange(len(stage_of)), types, indexing="ij"))
    j = stage_of[layer]
    a, b, u = plan.first[j], plan.last[j], plan.types[j]
    prev_same = (j > 0) & (plan.types[np.maximum(j - 1, 0)] == t)
    next_same = (j < n_stages - 1) & (plan.types[np.minimum(j + 1, n_stages - 1)] == t)
    prev_first, next_last = plan.first[np.maximum(j - 1, 0)], plan.last[np.minimum(j + 1, n_stages - 1)]
    retyped = t != u
    # tail: [a, l−1] on u (when l > a), [l, b] on t, merged with a neighbour on t
    tail_merge_prev = (layer == a) & prev_same
    tail = dict(
        w0=np.where(tail_merge_prev, j - 1, j),
        w1=np.where(next_same, j + 1, j),
        first1=a,
        last1=layer - 1,
        type1=u,
        valid1=layer > a,
        first2=np.where(tail_merge_prev, prev_first, layer),
        last2=np.where(next_same, next_last, b),
        type2=t,
        ok=retyped,
    )
    # head: [a, l] on t (merged with the stage before when it is on t), [l+1, b] on u; l < b
    head = dict(
        w0=np.where(prev_same, j - 1, j),
        w1=j,
        first1=np.where(prev_same, prev_first, a),
        last1=layer,
        type1=t,
        valid1=np.ones_like(retyped),
        first2=layer + 1,
        last2=b,
        type2=u,
        ok=retyped & (layer < b),
    )
    keep = [np.flatnonzero(m["ok"]) for m in (tail, head)]
    return {k: np.concatenate([m[k][i] for m, i in zip((tail, head), keep)]) for k in tail if k != "ok"}


def _price(inst: Instance, plan: _Plan, moves: dict):
    """(feasible (N,), cost (N,) $ (inf where infeasible), penalty (N,)) of every move."""
    n_stages = len(plan.first)
    removed = moves["w1"] - moves["w0"] + 1
    count = n_stages - removed + 1 + moves["valid1"]
    new = {}
    for piece in ("1", "2"):
        first, last, types = moves["first" + piece], moves["last" + piece], moves["type" + piece]
        valid = moves["valid1"] if piece == "1" else np.ones_like(moves["valid1"])
        k, tau, failing = np.zeros(len(first)), np.zeros(len(first)), np.zeros(len(first))
        for stages in np.unique(count):
            rows = np.flatnonzero(valid & (count == stages))
            got = provision(inst, first[rows], last[rows], types[rows], int(stages))
            k[rows], tau[rows] = got.replicas, got.time
            failing[rows] = np.where(got.reason != FEASIBLE, last[rows] - first[rows] + 1, 0)
        new[piece] = (k, tau, failing, types)
    w0, w1 = moves["w0"], moves["w1"] + 1
    dollars = plan.rate_prefix[-1] - (plan.rate_prefix[w1] - plan.rate_prefix[w0])
    units = plan.unit_prefix[-1] - (plan.unit_prefix[w1] - plan.unit_prefix[w0])
    failing = plan.fail_prefix[-1] - (plan.fail_prefix[w1] - plan.fail_prefix[w0])
    slowest = np.maximum(plan.before_max[w0], plan.after_max[w1])
    rows = np.arange(len(w0))
    for k, tau, fail, types in new.values():
        dollars = dollars + k * inst.price[types]
        units[rows, types] += k
        failing = failing + fail
        slowest = np.maximum(slowest, tau)
    bubble = np.array([inst.bubble(int(s)) for s in range(int(count.max()) + 1)])[count]
    throughput = inst.job.batch / (bubble * slowest)
    return _rank(inst, dollars, units, failing, throughput)


def _rank(inst: Instance, dollars, units, failing, throughput):
    """(feasible, cost, penalty) of plans from their totals (any leading shape)."""
    cap = inst.max_units.astype(np.float64)
    overflow = np.sum(np.maximum(units - cap, 0.0) / np.maximum(cap, 1.0), axis=-1)
    feasible = (failing == 0) & (overflow == 0)
    with np.errstate(divide="ignore"):
        shortfall = np.maximum(np.log(inst.job.throughput / throughput), 0.0)
    penalty = shortfall + failing / inst.num_layers + overflow
    cost = np.where(feasible, dollars * (inst.job.samples / throughput) / 3600.0, np.inf)
    return feasible, cost, np.where(feasible, 0.0, penalty)


def _key(feasible: bool, cost: float, penalty: float) -> tuple:
    return (0, cost) if feasible else (1, penalty)


def _exact_key(inst: Instance, plan: _Plan) -> tuple:
    """The rank key of a whole provisioned plan, as its `evaluate_plan` score ranks."""
    units = plan.unit_prefix[-1]
    dollars, failing = plan.rate_prefix[-1], plan.fail_prefix[-1]
    throughput = inst.job.batch / (inst.bubble(len(plan.first)) * float(np.max(plan.time)))
    feasible, cost, penalty = _rank(inst, np.float64(dollars), units, np.float64(failing), throughput)
    return _key(bool(feasible), float(cost), float(penalty))


def climb_at_scale(inst: Instance, schedule, *, max_rounds: int = MAX_ROUNDS, seconds: float = math.inf):
    """(schedule (L,) int, its `evaluate_plan` score, candidates priced): the stage-move hill
    climb from `schedule` (one type index per layer) on an instance of any size, for at most
    `max_rounds` rounds or `seconds` of wall time."""
    deadline = time.perf_counter() + seconds
    current = np.asarray(schedule, np.int64).copy()
    plan = _Plan(inst, current)
    key, evaluations = _exact_key(inst, plan), 0
    for _ in range(max_rounds):
        if time.perf_counter() > deadline:
            break
        moves = _moves(plan, inst.num_types)
        feasible, cost, penalty = _price(inst, plan, moves)
        evaluations += len(feasible)
        best = int(np.argmin(cost)) if feasible.any() else int(np.argmin(penalty))
        candidate_key = _key(bool(feasible[best]), float(cost[best]), float(penalty[best]))
        if not _improves(candidate_key, key):
            break
        moved = _apply(current, moves, best)
        moved_plan = _Plan(inst, moved)  # the next round's plan, once confirmed
        exact = _exact_key(inst, moved_plan)
        if not _improves(exact, key):  # an estimate the exact score did not confirm (finite M)
            break
        current, plan, key = moved, moved_plan, exact
    return current, evaluate_plan(inst, schedule_plan(current.tolist())), evaluations


def best_single_type(inst: Instance) -> np.ndarray:
    """(L,) the schedule of the best single-type plan: the cheapest feasible one, else the
    least infeasible (by the graded penalty)."""
    schedules = [np.full(inst.num_layers, t, np.int64) for t in range(inst.num_types)]
    return min(schedules, key=lambda schedule: _exact_key(inst, _Plan(inst, schedule)))


def _improves(new: tuple, old: tuple) -> bool:
    return new[0] < old[0] or (new[0] == old[0] and new[1] < old[1] * (1 - 1e-12))


def _apply(schedule: np.ndarray, moves: dict, i: int) -> np.ndarray:
    """The schedule with move i's new stages written in."""
    out = schedule.copy()
    for piece in ("1", "2"):
        if piece == "2" or moves["valid1"][i]:
            out[moves["first" + piece][i] : moves["last" + piece][i] + 1] = moves["type" + piece][i]
    return out
