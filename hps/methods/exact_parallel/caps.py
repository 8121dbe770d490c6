"""Prices on the pooled caps: the Lagrangian relaxation of the exact solver's least-rate program
(docs/parallel-plans.md, "Pooled caps").

The least-rate program ignores the caps (at most U_y units of type y across the plan). With a price
λ_y ≥ 0 ($/hour per unit) on each type, every entry's weight becomes w = r + λ_y·units and, for any
plan that meets the caps, Σ r = Σ w − Σ_y λ_y·units_y ≥ Σ w − Σ_y λ_y·U_y. So the least Σ w of a
region minus Σ λ·U bounds the $/hour of every cap-meeting plan in it, whatever λ is; the prices are
moved towards the best bound by a sign step per type (raised where the least-weight plan breaks the
type's cap, lowered where it leaves units unused, the step halved when the sign turns), and every
least-weight plan is scored, so plans that meet the caps come early.
"""

from __future__ import annotations

import math

import numpy as np

ROUNDS = 3
"""Price steps per region (each solves the least-weight program once)."""


class CapPrices:
    """The prices λ (T,) and their steps, kept across regions of one micro-batch as a warm start."""

    def __init__(self, problem):
        self.caps = problem.pooled_caps.astype(np.float64)
        self.lam = np.zeros(problem.num_types)
        self.step = 0.5 * problem.price
        self.sign = np.zeros(problem.num_types)
        self.offered = set()  # least-weight plans already scored (tuples of entries)

    def weight(self, table, lam: np.ndarray | None = None) -> np.ndarray:
        """(entries,) r + λ_y·units, at the current prices unless `lam` is given."""
        lam = self.lam if lam is None else lam
        return table.rate + lam[table.entry_type] * table.units

    def units_by_type(self, table, entries) -> np.ndarray:
        """(T,) units a plan of table entries uses per type."""
        used = np.zeros(len(self.caps))
        np.add.at(used, table.entry_type[entries], table.units[entries])
        return used

    def move(self, used: np.ndarray) -> None:
        """One sign step of the prices towards the caps, given the units a plan used."""
        over = np.sign(used - self.caps)
        turned = (over != 0) & (self.sign != 0) & (over != self.sign)
        self.step = np.where(turned, self.step / 2, self.step)
        self.lam = np.maximum(0.0, self.lam + over * self.step)
        self.sign = np.where(over != 0, over, self.sign)

    def bound(self, micro, theta: float, phi: float, stages: int) -> tuple[float, np.ndarray | None]:
        """(the best lower bound found on Σ r of the region's cap-meeting plans of `stages`
        stages, the prices that gave it; None where no price beat λ = 0's bound of −∞)."""
        table = micro.table
        best, best_lam = -math.inf, None
        for _ in range(ROUNDS):
            weight = self.weight(table)
            least, solved = table.least_rate(theta, phi, weight=weight, most=stages, stages=stages)
            value = least[stages] if stages < len(least) else math.inf
            if not math.isfinite(value):
                return math.inf, self.lam.copy()
            entries = table.plan_of(stages, solved)
            used = self.units_by_type(table, entries)
            found = value - float(self.lam @ self.caps)
            if found > best:
                best, best_lam = found, self.lam.copy()
            if tuple(entries) in self.offered:  # prices that lead back to a plan already seen
                break
            self.offered.add(tuple(entries))
            micro.best.offer(micro.problem, micro.to_plan(entries), micro.b)
            if (used <= self.caps).all() and float(self.lam @ (self.caps - used)) <= 1e-12 * value:
                break  # the plan meets the caps with no slack priced: its Σ r is the region's least
            self.move(used)
        return best, best_lam

    def suffix(self, micro, theta: float, phi: float, stages: int, lam: np.ndarray) -> dict[int, np.ndarray]:
        """{boundary layer: (stages left + 1,) least Σ w of the plans from it} at prices `lam`."""
        table = micro.table
        weight = self.weight(table, lam)
        return table.least_from(
            table.least_rate(theta, phi, weight=weight, most=max(micro.most, stages), stages=stages)[1]
        )

    def repaired(self, micro, theta: float, phi: float, stages: int) -> None:
        """Offer plans of `stages` stages that meet the caps, by banning over-cap types layer by
        layer: the least-rate plan's stages of the type most over its cap are kept, most units
        first, while they fit; the type is banned from the layers of the others, and the program
        is solved again (at most once per type)."""
        table, problem = micro.table, micro.problem
        types = table.entry_type
        first, last = table.span_first[table.entry_span], table.span_last[table.entry_span]
        ban = np.zeros((problem.num_layers + 1, problem.num_types), np.int64)  # prefix counts of banned layers
        banned = np.zeros((problem.num_layers, problem.num_types), bool)
        for _ in range(problem.num_types):
            blocked = (ban[last + 1, types] - ban[first, types]) > 0
            weight = np.where(blocked, np.inf, table.rate)
            least, solved = table.least_rate(theta, phi, weight=weight, most=stages, stages=stages)
            if stages >= len(least) or not math.isfinite(least[stages]):
                return
            entries = table.plan_of(stages, solved)
            score = micro.best.offer(problem, micro.to_plan(entries), micro.b)
            used = self.units_by_type(table, entries)
            if score.reason != "pooled_cap":
                return
            worst = int(np.argmax(used / self.caps))
            room = self.caps[worst]
            for e in sorted((e for e in entries if types[e] == worst), key=lambda e: -table.units[e]):
                if table.units[e] <= room:
                    room -= table.units[e]
                else:
                    banned[first[e] : last[e] + 1, worst] = True
            ban[1:] = np.cumsum(banned, axis=0)
