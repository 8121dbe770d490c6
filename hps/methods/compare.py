"""Planners beside the certified optimum: the loop `hps search` and the studies that take planners by name use."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from hps.contract.types import Budget, NotApplicable, PlanResult, SpaceTooLarge
from hps.errors import InstanceTooLarge, SearchSpaceTooLarge
from hps.methods.problem import Problem
from hps.methods.registry import run

YARDSTICK = "exact"
"""The planner every other is measured against: its plan is the proven optimum where its gap is 0,
and its bound a certified lower bound on every plan's cost either way."""
SKIPPED = (SpaceTooLarge, SearchSpaceTooLarge, InstanceTooLarge, NotApplicable)
"""Refusals that leave one planner out of a comparison (its space or arrays exceed the budget or
memory, or it cannot plan this job) rather than end it."""


@dataclasses.dataclass(frozen=True)
class Comparison:
    """results in the order planned (the yardstick first where it ran) and {planner: why it was
    left out}."""

    results: tuple[PlanResult, ...]
    skipped: dict[str, str]

    @property
    def reference(self) -> PlanResult | None:
        """The yardstick's result, where it ran."""
        return next((r for r in self.results if r.planner == YARDSTICK), None)

    @property
    def best(self) -> PlanResult:
        """The first of the cheapest results (the yardstick where it ties)."""
        return min(self.results, key=lambda r: r.cost)

    def over_optimum(self, result: PlanResult) -> float | None:
        """result's cost over the yardstick's plan (None where either has no feasible plan)."""
        reference = self.reference
        if reference is None or not (reference.feasible and result.feasible) or reference.cost <= 0:
            return None
        return result.cost / reference.cost

    def over_bound(self, result: PlanResult) -> float | None:
        """result's cost over the yardstick's certified bound (None without both)."""
        reference = self.reference
        if reference is None or not result.feasible or not (math.isfinite(reference.bound) and reference.bound > 0):
            return None
        return result.cost / reference.bound


def compare(
    problem: Problem,
    names: Sequence[str],
    budget: Budget,
    *,
    options: dict | None = None,
    on_start: Callable[[str], None] | None = None,
) -> Comparison:
    """Plan `problem` with each planner of `names` (the yardstick moved first) within `budget`
    each; options: keyword options of the planners that take them; on_start(name) before each.
    A planner refused for its space or memory is left out with the reason; with one name the
    refusal is raised."""
    ordered = sorted(dict.fromkeys(names), key=lambda name: name != YARDSTICK)
    results, skipped = [], {}
    for name in ordered:
        if on_start is not None:
            on_start(name)
        try:
            results.append(run(name, problem, budget, **(options or {}).get(name, {})))
        except SKIPPED as error:
            if len(ordered) == 1:
                raise
            skipped[name] = getattr(error, "problem", str(error))
    if not results:
        reasons = "; ".join(f"{name}: {why}" for name, why in skipped.items())
        raise InstanceTooLarge(f"no planner can plan this instance here: {reasons}")
    return Comparison(tuple(results), skipped)
