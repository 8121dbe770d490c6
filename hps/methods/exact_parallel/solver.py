"""The exact solver of the parallel-plan model (docs/parallel-plans.md, "The exact solver").

For a plan of S stages under micro-batch b (M = B/b micro-batches), with Σ r its $/hour, θ its
largest time per micro-batch (links included), φ its largest tail and E its egress per iteration:

    cost = (N / B) · (Σ r · ((M + (S − 1)/v)·θ + φ) / 3600 + E)

For each b and S the solver keeps regions (θ̄, φ̄) of plans whose every τ ≤ θ̄ and φ ≤ φ̄. The
least-rate dynamic program (`StageTable.least_rate`) gives D, the least Σ r in the region, and a
plan P of it with (θ_P, φ_P). Every plan of the region costs at least
(N/B)·D·((M+(S−1)/v)·θ_lb + φ_lb)/3600 (θ_lb, φ_lb: the least τ and φ any allowed stage covering the
worst-covered layer can have); once that reaches the best cost the region is closed. Otherwise
every plan with θ ≥ θ_P and φ ≥ φ_P has Σ r ≥ D and costs at least P's cost without egress, so
where P has no egress (or that bound already reaches the best) those plans are dropped and two
regions are left: θ < θ_P, and φ < φ_P. A region whose least-rate plan breaks a pooled cap or
pays egress that keeps it open is searched plan by plan (`dfs.search_region`), exactly.
"""

from __future__ import annotations

import functools
import heapq
import math
import time

import numpy as np

from hps.config.types import ParallelStage
from hps.contract.types import GAP_ROUNDING as ROUNDING
from hps.contract.types import Plan, PlanResult, PlanScore
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.caps import CapPrices
from hps.methods.exact_parallel.copies import copy_classes, solve_merged
from hps.methods.exact_parallel.dfs import search_region
from hps.methods.exact_parallel.micro_batches import ordered, work_floor
from hps.methods.exact_parallel.reach import max_throughput
from hps.methods.exact_parallel.table import SharedTables, StageTable, TableUnfinished

SEEDS = 8
"""One-stage plans of each micro-batch offered as incumbents, cheapest first, until one is feasible."""
SPLIT = 0.01
"""A region whose largest τ may range over more than this ratio is halved (geometrically) so
that each half is bounded by its own least τ."""


class Left:
    """The bound left open when a search stops early, and what holds it: the least (`least`,
    the cost solver's lower bounds) or the largest (the dual's upper bounds on throughput) of
    the bounds offered, with the text saying what is left unsearched and what would close it."""

    def __init__(self, least: bool = True):
        self.least = least
        self.bound, self.what = (math.inf if least else 0.0), None

    def add(self, bound: float, what: str) -> None:
        if (bound < self.bound) if self.least else (bound > self.bound):
            self.bound, self.what = bound, what


def unsearched(choices: list[int]) -> str:
    """What holds the bound where micro-batches were left unsearched, and what would close it."""
    others = f" and {len(choices) - 1} more" if len(choices) > 1 else ""
    return (
        f"micro-batch {choices[0]}{others} not searched (bounded by the work it needs); raise --seconds, "
        f"or fix --micro-batch {choices[0]} to search it alone"
    )


def regions_open(stages: int, b: int, by_plan: bool = False) -> str:
    """What holds the bound where regions of plans of one stage count were left open."""
    kind = "plan-by-plan regions (the pooled caps bind)" if by_plan else "regions"
    return f"{kind} of {stages}-stage plans under micro-batch {b} left open; raise --seconds"


class Deadline:
    """A wall-clock limit (time.perf_counter seconds)."""

    def __init__(self, at: float):
        self.at = at

    def passed(self) -> bool:
        return time.perf_counter() > self.at


class _Best:
    """The incumbent: the least `measure` of a feasible plan (a PlanScore field: "cost" in $, or
    "iteration_s" for the dual), its plan and micro-batch; and the count of plans scored."""

    def __init__(self, measure: str = "cost"):
        self.measure = measure
        self.value, self.plan, self.b, self.evaluations = math.inf, None, None, 0

    def offer(self, problem: ParallelProblem, plan, b: int) -> PlanScore:
        self.evaluations += 1
        score = score_plan(problem, plan, b)
        if score.feasible and getattr(score, self.measure) < self.value:
            self.value, self.plan, self.b = getattr(score, self.measure), plan, b
        return score


def _below(x: float) -> float:
    """The largest threshold that excludes x itself."""
    return np.nextafter(x, -np.inf) if math.isfinite(x) else x


class _Micro:
    """The search under one micro-batch b. Its region search prunes by a cost incumbent (`best` of
    measure "cost"); the dual uses only its table and least-rate program, with its own incumbent."""

    def __init__(
        self, problem, b: int, best: _Best, tables: SharedTables | None = None, deadline=None, prune=True, figures=None
    ):
        """TableUnfinished where `deadline` passes while its stage table is built. prune: False
        leaves the table's dominated entries until `prune()` (the work bound needs no pruning).
        figures: how the table's figures are computed (`StageTable`)."""
        self.problem, self.b, self.best = problem, b, best
        if tables is None:
            self.table = StageTable(problem, b, deadline, prune, figures)
        else:
            self.table = tables.get(problem, b, deadline)
        t = self.table
        self.scale = problem.job.samples / problem.job.batch / 3600  # $ per (Σ r · seconds)
        self.limit = problem.job.batch / problem.job.throughput * (1 + FLOOR_TOLERANCE)  # longest iteration
        # spans are first-major over boundaries i ≤ j: span (i, j) is cell (i, j) of the upper triangle
        self.triangle = np.triu_indices(len(t.starts))
        self.refresh()
        self.cache = {}
        self.most = t.max_stages  # the largest stage count still open
        self.deferred = []  # (bound, stages, θ̄, φ̄) of regions left to the plan-by-plan search
        self.prices = CapPrices(problem)
        self.repaired = set()  # stage counts whose plans were repaired to meet the caps
        self.region_prices = {}  # (stages, θ_lo, θ̄, φ̄) -> the cap prices of the region's best bound
        # Σ r·max τ ≥ Σ_j r_j·τ_j: the least Σ r·τ of S stages bounds every plan of S stages
        top = self.limit / t.micro_batches
        self.work = t.least_work(top, self.limit)

    def prune(self) -> None:
        """Drop the table's dominated entries (before its regions are searched)."""
        if not self.table.pruned:
            self.table.prune()
            self.cache.clear()
            self.refresh()

    def refresh(self) -> None:
        """Index the table's entries by span (after the table changed)."""
        t = self.table
        self.span_start = np.flatnonzero(np.concatenate([[True], t.entry_span[1:] != t.entry_span[:-1]]))

    def floors(self, allowed: np.ndarray) -> tuple[float, float]:
        """(θ_lb, φ_lb): over layers, the largest of the least τ (φ) of an allowed stage covering it."""
        t = self.table
        if not allowed.any() or not len(self.span_start):
            return math.inf, math.inf
        n = len(t.starts)
        out = []
        for values in (t.time, t.tail):
            per = np.minimum.reduceat(np.where(allowed, values, np.inf), self.span_start)
            spans = np.full(len(t.span_first), np.inf)
            spans[t.entry_span[self.span_start]] = per
            grid = np.full((n, n), np.inf)  # grid[i, j]: the least over spans from boundary i to segment j
            grid[self.triangle] = spans
            # segment k is covered by the spans (i, j) with i ≤ k ≤ j: a suffix min over j, a prefix min over i
            covering = np.minimum.accumulate(np.minimum.accumulate(grid[:, ::-1], axis=1)[:, ::-1], axis=0)
            out.append(float(covering.diagonal().max()))
        return out[0], out[1]

    def solve(self, theta: float, phi: float, stages: int):
        """(least Σ r per S, the program's back-pointers, (θ_lb, φ_lb)) of the region, for
        stage counts up to max(`self.most`, stages) (cached; an answer for more serves)."""
        key, most = (theta, phi), max(self.most, stages)
        if self.table.v > 1:  # what a stage holds depends on the stage count: one answer per count
            key, most = (theta, phi, stages), stages
        if key not in self.cache or self.cache[key][3] < most:
            allowed = (self.table.time <= theta) & (self.table.tail <= phi)
            least, solved = self.table.least_rate(theta, phi, most=most, stages=stages)
            self.cache[key] = (least, solved, self.floors(allowed), most)
        return self.cache[key][:3]

    def to_plan(self, entries) -> tuple[ParallelStage, ...]:
        names = self.problem.catalog.names
        return tuple(ParallelStage(f, l, names[y], t, d) for f, l, y, t, d in map(self.table.stage, entries))

    def work_bound(self, counts: np.ndarray) -> np.ndarray:
        """The least cost ($) of any plan of each of `counts` stages: (N/B)·(M + (S − 1)/v)·least Σ r·τ."""
        return self.scale * self.problem.bubble_slots_of(self.table.micro_batches, counts) * self.work[counts]

    def open_counts(self) -> np.ndarray:
        """Stage counts whose work bound is below the best cost, by that bound, least first."""
        counts = np.arange(1, self.table.max_stages + 1)
        first = self.work_bound(counts)
        keep = first < self.best.value * (1 - ROUNDING)
        return counts[keep][np.argsort(first[keep], kind="stable")]

    def stage_count(self, stages: int, deadline: Deadline) -> float:
        """Close every region of plans of `stages` stages; returns the lower bound left open
        (inf when all are closed). A region holds the plans whose largest τ lies in
        [θ_lo, θ_hi] and whose φ ≤ φ_hi; regions are taken least bound first."""
        m_bubble = self.problem.bubble_slots_of(self.table.micro_batches, stages)
        top = self.limit / self.table.micro_batches  # the region of S = 1, shared by every S
        heap, seen, open_bound = [(0.0, 0.0, top, self.limit)], set(), math.inf
        while heap:
            _, lo, theta, phi = heapq.heappop(heap)
            if (lo, theta, phi) in seen or lo > theta:
                continue
            seen.add((lo, theta, phi))
            least, solved, (theta_lb, phi_lb) = self.solve(theta, phi, stages)
            rate = least[stages] if stages < len(least) else math.inf
            if not math.isfinite(rate):
                continue
            low = max(lo, theta_lb)
            bound = self.scale * max(rate * (m_bubble * low + phi_lb), m_bubble * self.work[stages] + rate * phi_lb)
            if bound >= self.best.value * (1 - ROUNDING):
                continue
            if deadline.passed():
                open_bound = min([open_bound, bound, *(b for b, *_ in heap)])
                break
            plan = self.to_plan(self.table.plan_of(stages, solved))
            score = self.best.offer(self.problem, plan, self.b)
            theta_p = score.bottleneck_s
            phi_p = max(s.tail_s for s in score.stages)
            without_egress = self.scale * rate * score.iteration_s
            wide = low > 0 and theta > low * (1 + SPLIT)
            if score.reason == "pooled_cap" and not math.isfinite(self.best.value) and stages not in self.repaired:
                self.repaired.add(stages)
                fit = min(theta, (self.limit - phi_lb) / m_bubble)  # the floor, with the least tail
                self.prices.repaired(self, fit, phi, stages)
            if score.reason == "pooled_cap" and not wide:  # prices on the caps bound the plans that meet them
                least_lam, lam = self.prices.bound(self, theta, phi, stages)
                bound = max(bound, self.scale * max(least_lam * (m_bubble * low + phi_lb),
                                                    m_bubble * self.work[stages] + least_lam * phi_lb))  # fmt: skip
                if bound >= self.best.value * (1 - ROUNDING):
                    continue
                self.region_prices[(stages, lo, theta, phi)] = lam
            if score.reason == "pooled_cap" or (
                score.egress_dollars > 0 and without_egress < self.best.value * (1 - ROUNDING)
            ):  # P bounds nothing: halve the θ range, else search it plan by plan once the incumbent is good
                if wide:
                    middle = math.sqrt(low * theta)
                    heapq.heappush(heap, (bound, lo, _below(middle), phi))
                    heapq.heappush(heap, (bound, middle, theta, phi))
                else:
                    self.deferred.append((bound, stages, lo, theta, phi))
                continue
            # plans with θ ≥ θ_P and φ ≥ φ_P cost at least P's cost (or exceed the floor as P does)
            cap = self.best.value / (self.scale * rate) if math.isfinite(self.best.value) else math.inf
            below = min(_below(theta_p), (cap - phi_lb) / m_bubble)
            within = (cap - phi_lb) / m_bubble  # a plan of larger θ costs more than the best
            children = [(max(lo, theta_p), min(theta, within), min(_below(phi_p), cap - m_bubble * low))]
            if low > 0 and below > low * (1 + SPLIT):  # a narrower θ range bounds by its own least θ
                middle = math.sqrt(low * below)
                children += [(lo, _below(middle), phi), (middle, below, phi)]
            else:
                children.append((lo, below, phi))
            for child in children:
                heapq.heappush(heap, (bound, *child))
        return open_bound

    def search_deferred(self, deadline: Deadline, left: Left) -> None:
        """Search the deferred regions plan by plan, least bound first; the bounds left open go to `left`."""
        for bound, stages, lo, theta, phi in sorted(self.deferred):
            if bound >= self.best.value * (1 - ROUNDING):
                break
            if deadline.passed():
                left.add(bound, regions_open(stages, self.b, by_plan=True))
                break
            lam = self.region_prices.get((stages, lo, theta, phi))
            found, rest = search_region(self, stages, lo, theta, phi, deadline, lam)
            for entries in found:
                self.best.offer(self.problem, self.to_plan(entries), self.b)
            left.add(rest, regions_open(stages, self.b, by_plan=True))


def solve_parallel(
    problem: ParallelProblem,
    *,
    seconds: float = math.inf,
    incumbent: Plan | None = None,
    tables: SharedTables | None = None,
    jax_tables: bool = False,
) -> PlanResult:
    """The cheapest parallel plan of `problem` and its certificate (the result's bound), within
    `seconds` of search (then gap > 0 where regions were left open). incumbent: a plan to prune against
    from the start; the result does not depend on it, only the time to reach it. tables: stage
    tables shared with other solves of problems that differ only in floor, samples and prices.
    Types that are copies of one another are searched as one (`copies.solve_merged`), except
    with shared tables (which serve one catalogue). jax_tables: the stage tables' figures by the
    batched JAX scorer's code (`batched_stages.StageFigures`; equal to rounding, so ties among
    entries may fall otherwise; slower cold on a CPU, importing and compiling JAX) instead of numpy's."""
    classes = copy_classes(problem) if tables is None else None
    if classes is not None:
        search = functools.partial(_search, jax_tables=jax_tables)
        return solve_merged(problem, classes, search, seconds=seconds, incumbent=incumbent)
    return _search(problem, seconds=seconds, incumbent=incumbent, tables=tables, jax_tables=jax_tables)


def _search(
    problem: ParallelProblem,
    *,
    seconds: float = math.inf,
    incumbent: Plan | None = None,
    tables: SharedTables | None = None,
    jax_tables: bool = False,
) -> PlanResult:
    """`solve_parallel` over the problem's types as they are."""
    started = time.perf_counter()
    figures = None
    if jax_tables and tables is None:
        from hps.costmodel.parallel.batched_stages import StageFigures

        figures = StageFigures(problem)
    deadline = Deadline(started + seconds)
    if problem.job.throughput > max_throughput(problem) * (1 + FLOOR_TOLERANCE):  # proven: no plan
        return PlanResult("exact", None, None, math.inf, time.perf_counter() - started, 0)
    best = _Best()
    if incumbent is not None:
        best.offer(problem, incumbent.stages, incumbent.micro_batch)
    choices = [(work_floor(problem), b) for b in problem.micro_batch_choices()]
    if len(choices) > 1:  # every one-stage plan as an incumbent; the micro-batches by their bound
        choices, seeds = ordered(problem, [b for _, b in choices], SEEDS)
        for plans in seeds.values():
            for _, stages, b in plans:
                if best.offer(problem, stages, b).feasible:
                    break
    left, searched = Left(), []
    for index, (work, b) in enumerate(choices):
        if work >= best.value * (1 - ROUNDING):  # no plan under b can beat the best
            continue
        micro = None
        if not deadline.passed():
            try:
                micro = _Micro(problem, b, best, tables, deadline, prune=False, figures=figures)  # pruned once searched
            except TableUnfinished:
                pass
        if micro is None:  # out of time before or while building its table: this and those left, by their work
            rest = [c for w, c in sorted(choices[index:]) if w < best.value * (1 - ROUNDING)]
            left.add(min(w for w, _ in choices[index:]), unsearched(rest))
            break
        searched.append(micro)
        if len(micro.open_counts()):
            micro.prune()
        # stage counts by their work bound, least first: good plans come early and prune the rest
        for stages in micro.open_counts():
            if stages not in micro.open_counts():
                continue
            if deadline.passed():  # this and the stage counts left (bounded no lower): their work bound
                left.add(float(micro.work_bound(stages)), regions_open(int(stages), b))
                break
            if not math.isfinite(best.value):  # no incumbent yet: solve for this stage count alone
                micro.most = int(stages)
                left.add(micro.stage_count(int(stages), deadline), regions_open(int(stages), b))
                continue
            micro.most = int(micro.open_counts().max())
            if micro.most <= micro.table.compacted_to // 2:  # fewer entries serve the stage counts left
                micro.table.compact(micro.most)
                micro.cache.clear()
                micro.refresh()
            left.add(micro.stage_count(int(stages), deadline), regions_open(int(stages), b))
    for micro in searched:
        micro.search_deferred(deadline, left)
    bound = min(best.value, left.bound)
    score = score_plan(problem, best.plan, best.b) if best.plan is not None else None
    plan = None if best.plan is None else Plan(tuple(best.plan), best.b)
    held = left.what if left.bound < best.value * (1 - ROUNDING) else None
    return PlanResult("exact", plan, score, bound, time.perf_counter() - started, best.evaluations, open=held)
