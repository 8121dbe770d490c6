"""What every placement search returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchResult:
    """The best schedule a search found.

    schedule: type index per real layer. cost: dollars (+inf when `feasible` is False; then the
    schedule is the least-bad infeasible one by the graded penalty of `hps.methods.search.scoring`).
    reason: index into `hps.placement.REASONS` (0 when feasible). throughput: samples/s.
    evaluations: schedules scored by the search. wall_seconds: the whole call, compile included
    unless the search was asked to warm up first.
    """

    method: str
    schedule: tuple[int, ...]
    cost: float
    feasible: bool
    reason: int
    throughput: float
    dollars_per_hour: float
    evaluations: int
    wall_seconds: float
