"""The plan contract (docs/plan-contract.md): what every planner takes and returns.

    plan(problem: Problem, budget: Budget) -> PlanResult

A `Plan` is stages of (first layer, last layer, type, tp, dp) and a micro-batch; a HeterPS
schedule is the plan of its maximal runs with tp = 1 and dp the replicas provisioned. A plan's
`PlanScore` is the same shape in both cost models; a `PlanResult` is a planner's answer with its
certificate and status.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

from hps.config.types import ParallelStage
from hps.errors import ConfigError

GAP_ROUNDING = 1e-12
"""Relative slack when a bound meets a cost computed in another order (as the exact solver's)."""
STATUSES = ("optimal", "feasible", "infeasible", "unknown")
"""A planner's verdict: a plan proven best, a plan with no proof, a proof that no plan meets
the job's constraints, or no plan and no proof."""
OBJECTIVES = ("cost", "throughput")
"""What a planner optimises: the least dollars to train under the throughput floor, or the most
samples/s within the job's budget in dollars per hour (and above its floor)."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """stages in pipeline order, contiguous and covering every layer; micro_batch: samples per
    pipeline micro-batch across a stage's replicas (None in the schedule model, which pipelines
    in steady state); choices: what the planner chose where the job left a choice open."""

    stages: tuple[ParallelStage, ...]
    micro_batch: int | None = None
    choices: tuple[tuple[str, object], ...] = ()
    """The schedule choices the job left open and the planner made, as (job field, value) pairs
    (virtual_stages, fp8, recompute; `hps.config.plan_space`); empty: the job's own."""


@dataclasses.dataclass(frozen=True)
class StageScore:
    """One stage: its plan entry, site, per-replica micro-batch (samples), time per micro-batch
    (s), tail (s), memory per device (bytes), units and $/hour; mode (how its state is held:
    replicated, or sharded across its replicas) and reason (why the stage alone fails, None when
    it does not). In the schedule model a stage runs the whole batch per pipeline slot: the
    per-replica micro-batch is B/k samples and the time per micro-batch the stage's time per
    iteration."""

    stage: ParallelStage
    site: str
    replica_micro_batch: float
    time_per_microbatch_s: float
    tail_s: float
    memory_per_device_bytes: float
    memory_limit_bytes: float
    units: int
    dollars_per_hour: float
    time_source: str = "roofline"
    """What its layer times come from: "measured", "interpolated", the clock's name or a mix."""
    mode: str = "replicated"
    reason: str | None = None
    boundary_s: float = 0.0
    """Of time_per_microbatch_s, the pipeline boundary's share (s)."""
    sync_s: float = 0.0
    """Of tail_s, the exposed gradient All-Reduce's share (s; the rest is the optimizer step)."""


@dataclasses.dataclass(frozen=True)
class PlanScore:
    """A plan's score. `reason` is None when feasible; `detail` says what failed and where.
    iteration_s, throughput (samples/s), dollars_per_hour, egress_dollars (whole run), cost
    (dollars, inf when infeasible), bottleneck_s (the largest time per micro-batch of a stage
    or a link between sites) and mfu (model FLOPs over the units' peak). micro_batch (samples)
    is None in the schedule model, whose micro_batches may be inf (steady state)."""

    feasible: bool
    reason: str | None
    detail: str
    micro_batch: int | None
    micro_batches: float
    iteration_s: float
    bottleneck_s: float
    throughput: float
    dollars_per_hour: float
    egress_dollars: float
    cost: float
    mfu: float
    stages: tuple[StageScore, ...]
    clock: str | None = None
    """What timed the plan's layers (a clock's name; None in the schedule model's own roofline)."""
    throughput_range: tuple[float, float] | None = None
    """(low, high) samples/s: the true throughput the prediction stands for, by the clock's
    held-out residuals on the plan's types (the widest band among them); None where not known."""


def training_cost(dollars_per_hour: float, samples: float, throughput: float) -> float:
    """Dollars to train `samples` at `throughput` (samples/s) on units costing dollars_per_hour."""
    return dollars_per_hour * (samples / throughput) / 3600


@dataclasses.dataclass(frozen=True)
class Budget:
    """What a planner may spend: wall-clock `seconds` (no completion starts past them, and the
    one running gets what is left), `evaluations` (the planner's own count: type sequences
    completed, schedules scored; None: its default; the exact solvers ignore it) and the `seed`
    of its random choices."""

    seconds: float = math.inf
    evaluations: int | None = None
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class PlanResult:
    """A planner's answer. plan and score are None when it found no plan (score is the best
    plan's even when infeasible, for planners that keep the least-bad one). bound is the
    planner's certificate, nan for planners that prove none. Under the objective "cost": a proven
    lower bound on the cost of every feasible plan ($; inf: proven that none is feasible). Under
    "throughput": a proven upper bound on the throughput of every feasible plan (samples/s; 0:
    proven that none is feasible). seconds: the planner's wall time; evaluations: its own count
    (None where it keeps none)."""

    planner: str
    plan: Plan | None
    score: PlanScore | None
    bound: float
    seconds: float
    evaluations: int | None
    objective: str = "cost"
    """One of OBJECTIVES."""
    open: str | None = None
    """Where the bound is short of the plan (a gap > 0, or no plan and no proof): what is left
    unsearched that holds the bound, and what would close it; None where nothing is known."""

    @property
    def feasible(self) -> bool:
        return self.score is not None and self.score.feasible

    @property
    def cost(self) -> float:
        """The plan's cost ($), inf without a feasible plan."""
        return self.score.cost if self.feasible else math.inf

    @property
    def throughput(self) -> float:
        """The plan's throughput (samples/s), 0 without a feasible plan."""
        return self.score.throughput if self.feasible else 0.0

    def better_than(self, other: PlanResult) -> bool:
        """Whether this answer's plan beats `other`'s under their objective (a feasible plan
        beats none; ties do not beat)."""
        if self.objective == "throughput":
            return self.throughput > other.throughput
        return self.cost < other.cost

    @property
    def gap(self) -> float | None:
        """Under "cost", (cost − bound)/bound; under "throughput", (bound − throughput)/throughput:
        0 where the plan is proven optimal (or, with no feasible plan, where it is proven that
        none exists), None where nothing is proven."""
        if self.objective == "throughput":
            return throughput_gap(self.throughput, self.bound, self.feasible)
        return gap_of(self.cost, self.bound, self.feasible)

    @property
    def status(self) -> str:
        """One of STATUSES."""
        if self.feasible:
            return "optimal" if self.gap == 0.0 else "feasible"
        return "infeasible" if self.gap == 0.0 else "unknown"


def gap_of(cost: float, bound: float, found: bool) -> float | None:
    """(cost − bound)/bound under a proven bound: 0 when it proves the plan optimal (or, with no
    plan found, that none is feasible), None where nothing is proven."""
    if math.isnan(bound):
        return None
    if not found:
        return 0.0 if math.isinf(bound) else None
    if bound >= cost * (1 - GAP_ROUNDING):
        return 0.0
    gap = (cost - bound) / bound if bound > 0 else math.inf
    return gap if math.isfinite(gap) else None


def throughput_gap(throughput: float, bound: float, found: bool) -> float | None:
    """(bound − throughput)/throughput under a proven upper bound on throughput: 0 when it
    proves the plan optimal (or, with no plan found, bound 0: that none is feasible), None where
    nothing is proven."""
    if math.isnan(bound):
        return None
    if not found:
        return 0.0 if bound <= 0 else None
    if bound <= throughput * (1 + GAP_ROUNDING):
        return 0.0
    gap = (bound - throughput) / throughput
    return gap if math.isfinite(gap) else None


class Planner(Protocol):
    """What the registry holds per name and model: plan `problem` within `budget`, with the
    planner's own keyword options."""

    def __call__(self, problem, budget: Budget, **options) -> PlanResult: ...


class SpaceTooLarge(ConfigError):
    """A planner was asked to enumerate more plans than its evaluation budget allows."""

    def __init__(self, problem: str):
        super().__init__("evaluations", "", problem)


class NotApplicable(ConfigError):
    """A planner that cannot plan this problem's job (e.g. a search of the schedule model's
    steady-state schedules asked to plan finite micro-batches)."""

    def __init__(self, planner: str, problem: str):
        super().__init__("method", "", problem)
        self.planner = planner
