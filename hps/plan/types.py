"""The one contract every planner of the parallel-plan model keeps (docs/parallel-plans.md, "Planners").

plan(problem: ParallelProblem, budget: Budget) -> PlanResult
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

from hps.config.types import ParallelStage
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import PlanScore
from hps.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Budget:
    """What a planner may spend: wall-clock `seconds` (no completion starts past them, and the
    one running gets what is left), `evaluations` (type sequences completed, None: the planner's
    own default; the exact solver ignores it) and the `seed` of its random choices."""

    seconds: float = math.inf
    evaluations: int | None = None
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class PlanResult:
    """A planner's answer. plan, micro_batch and score are None when it found no feasible plan.
    bound is a proven lower bound on the cost of every plan ($): the exact solver's certificate,
    exhaustive's least completion bound over every type sequence, and nan for the planners that
    prove none (inf: proven that no plan is feasible). seconds is the planner's wall time;
    evaluations the type sequences it completed (cache hits not counted), or for the exact solver
    the plans it scored."""

    planner: str
    plan: tuple[ParallelStage, ...] | None
    micro_batch: int | None
    score: PlanScore | None
    bound: float
    seconds: float
    evaluations: int

    @property
    def feasible(self) -> bool:
        return self.score is not None and self.score.feasible

    @property
    def cost(self) -> float:
        """The plan's cost ($), inf without a feasible plan."""
        return self.score.cost if self.feasible else math.inf


class Planner(Protocol):
    def __call__(self, problem: ParallelProblem, budget: Budget) -> PlanResult: ...


class SpaceTooLarge(ConfigError):
    """A planner was asked to enumerate more type sequences than its evaluation budget allows."""

    def __init__(self, problem: str):
        super().__init__("--budget", "budget", problem)
