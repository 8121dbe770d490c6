"""The solver's best plan so far: (cost $, plan), plan a tuple of stages (first, last, type)."""

from __future__ import annotations


def keep_cheaper(best, scale: float, total: float, rho: float, plan):
    """`best` (cost, plan), or (c·Σ r·max τ, plan) where `plan` (of rate Σ r = total $/h and max
    τ = rho s; None: no plan) is cheaper. scale: c ($ per $/h·s)."""
    if plan is None:
        return best
    cost = scale * total * rho
    return (cost, plan) if cost < best[0] else best
