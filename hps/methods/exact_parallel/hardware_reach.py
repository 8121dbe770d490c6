"""The most throughput each hardware of a parallel-plan problem reaches alone, within its caps:
the exact dual solver on the problem restricted to that hardware, with a certificate.

A hardware is a base type with its second pools (`h100` and `h100-pool2` are one hardware:
the same devices, network and site at another price and cap). Restricted to one hardware of
pools with caps U_1..U_k, its plans are plans of one merged type whose stage may hold the largest
U_i units and whose stages together hold at most U = Σ U_i (a relaxation where k > 1: a stage of
the merged type may not fit a pool). The merged type is priced 1 $/hour a unit and the budget is
U $/hour, so the dual's budget row is the pooled cap itself: every least-rate plan within the
budget meets the cap, no region is left to the plan-by-plan search, and the dual certifies its
answer within seconds where, with the cap left to the search, it had not within 60 s. Its bound
(samples/s) is then an upper bound on every plan of the hardware alone; its plan, one such plan's
throughput.
"""

from __future__ import annotations

import dataclasses
import math

from hps.contract.types import GAP_ROUNDING
from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.dual import solve_max_throughput

POOL_MARK = "-pool"
"""A second pool of a type is named `<type>-pool<k>` (`parallel_generator.random_catalog`)."""
ANY_FLOOR = 1e-9
"""The floor (samples/s) of the restricted problems: every plan meets it."""


def hardware_of(type_name: str) -> str:
    """The base hardware of a catalogue type: its name less any `-pool<k>` suffix."""
    return type_name.split(POOL_MARK)[0]


@dataclasses.dataclass(frozen=True)
class HardwareReach:
    """One hardware alone: its catalogue `types` (pools), `units` their caps' sum (devices),
    `throughput` the best plan the dual found on it alone (samples/s; 0: none), `bound` the dual's
    certified upper bound on every plan of it alone (samples/s) and `seconds` the solve's time."""

    hardware: str
    types: tuple[str, ...]
    units: int
    throughput: float
    bound: float
    seconds: float

    @property
    def certified(self) -> bool:
        """Whether the bound is the best plan's throughput (to the solver's rounding)."""
        return self.bound <= self.throughput * (1 + GAP_ROUNDING)


def hardware_problem(problem: ParallelProblem, hardware: str) -> ParallelProblem:
    """`problem` on `hardware` alone: its pools merged into one type priced 1 $/hour a unit,
    the budget its pooled units (so the budget is the cap), every plan above the floor."""
    pools = [r for r in problem.catalog.resources if hardware_of(r.name) == hardware]
    if not pools:
        raise ValueError(f"no type of hardware {hardware!r} in catalogue {problem.catalog.name!r}")
    units = sum(r.max_units for r in pools)
    merged = dataclasses.replace(pools[0], name=hardware, price_per_hour=1.0, max_units=max(r.max_units for r in pools))
    catalog = dataclasses.replace(problem.catalog, resources=(merged,))
    job = dataclasses.replace(problem.job, throughput=ANY_FLOOR, budget_per_hour=float(units))
    return ParallelProblem(problem.workload, catalog, job, clock=problem.clock, pooled_units=(units,))


def hardware_reach(problem: ParallelProblem, seconds: float = math.inf) -> tuple[HardwareReach, ...]:
    """Each hardware of `problem` alone (catalogue order of its first type), each solve within
    `seconds`: past it the bound is still an upper bound, only looser."""
    out = []
    for hardware in dict.fromkeys(hardware_of(r.name) for r in problem.catalog.resources):
        alone = hardware_problem(problem, hardware)
        found = solve_max_throughput(alone, seconds=seconds)
        throughput = float(found.score.throughput) if found.score is not None and found.score.feasible else 0.0
        types = tuple(r.name for r in problem.catalog.resources if hardware_of(r.name) == hardware)
        units = int(alone.pooled_caps[0])
        out.append(HardwareReach(hardware, types, units, throughput, float(found.bound), float(found.seconds)))
    return tuple(out)
