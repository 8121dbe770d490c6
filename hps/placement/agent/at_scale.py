"""A placement policy on instances far past its training size, against the exact optimum.

Instances of hundreds or thousands of layers have no segment table that fits in memory, so
everything here is scored by the float64 numpy model the exact solver uses
(`hps.placement.model.plan.evaluate_plan`), one plan at a time:

- the policy: its best of `samples` sampled plans plus its greedy plan, as `hps plan` picks
  (`hps.placement.agent.planner.best_by_numpy`), and its greedy plan alone, with the time to
  sample and score them (compile excluded);
- the best single-type plan (the env's reference cost);
- the exact solver's best HeterPS schedule within `seconds`, with its proven bound and time.

Ratios are cost / the proven optimum over the instances the solver closed (gap 0), so no
figure rests on an unproven denominator; the instances it could not close are counted, with the
mean proven gap. Every planner's feasible fraction is over the instances with a feasible plan.
"""

from __future__ import annotations

import math
import time
from operator import itemgetter

import jax
import numpy as np

from hps.placement.agent.planner import best_by_numpy, candidate_schedules
from hps.placement.env.generator import InstanceSplit, generate_instances
from hps.placement.model.from_params import generated_instance
from hps.placement.model.plan import evaluate_plan, schedule_plan

PLANNERS = ("policy", "policy_greedy", "single")
SCALE_KEY = 2026


def _cost(score: dict) -> float:
    return score["cost"] if score["feasible"] else math.inf


def one_instance(policy, params, instance, arrays, *, samples: int, seed: int, seconds: float) -> dict:
    """Every planner's cost ($, inf when infeasible) and time (s) on one unbatched instance
    (`instance` on the device, `arrays` its host copy), and the exact solver's cost, bound, gap."""
    from hps.placement.exact import solve_exact

    inst = generated_instance(arrays)
    key = jax.random.PRNGKey(seed)

    def sample():
        schedules = jax.block_until_ready(candidate_schedules(policy, params, instance, key, samples, inst.num_layers))
        return schedules, best_by_numpy(inst, schedules)[0]

    sample()  # compile
    start = time.perf_counter()
    schedules, best = sample()
    policy_seconds = time.perf_counter() - start
    exact = solve_exact(inst, heterps=True, seconds=seconds)
    return {
        "layers": inst.num_layers,
        "types": inst.num_types,
        "policy": _cost(best.score),
        "policy_greedy": _cost(evaluate_plan(inst, schedule_plan(np.asarray(schedules)[-1]))),
        "single": float(arrays.reference_cost),
        "policy_seconds": policy_seconds,
        "exact": exact.score["cost"] if exact.plan is not None else math.inf,
        "exact_bound": exact.bound,
        "exact_gap": exact.gap,
        "exact_seconds": exact.seconds,
    }


def summarize(rows: list[dict]) -> dict:
    """Per planner: mean / p95 / worst cost over the proven optimum and the feasible fraction;
    the solver's closed count, mean gap where open, mean time; the policy's mean time."""
    proven = [r for r in rows if math.isfinite(r["exact"]) and r["exact_gap"] == 0.0]
    with_plan = [r for r in rows if math.isfinite(r["exact"])]
    out = {
        "instances": len(rows),
        "with_feasible_plan": len(with_plan),
        "proven_optimal": len(proven),
        "open_mean_gap": float(np.mean([r["exact_gap"] for r in with_plan if r["exact_gap"] > 0]))
        if len(with_plan) > len(proven)
        else 0.0,
        "exact_seconds": float(np.mean([r["exact_seconds"] for r in rows])),
        "policy_seconds": float(np.mean([r["policy_seconds"] for r in rows])),
    }
    for name in PLANNERS:
        ratios = np.array([r[name] / r["exact"] for r in proven if math.isfinite(r[name])])
        found = sum(math.isfinite(r[name]) for r in with_plan)
        out[name] = {
            "mean": float(ratios.mean()) if ratios.size else math.nan,
            "p95": float(np.percentile(ratios, 95)) if ratios.size else math.nan,
            "worst": float(ratios.max()) if ratios.size else math.nan,
            "feasible": found / len(with_plan) if with_plan else math.nan,
        }
    return out


def compare_at_scale(
    policy, params, split: InstanceSplit, *, count: int = 10, samples: int = 64, seconds: float = 60.0, on_row=None
) -> dict:
    """`count` instances of `split` (drawn from SCALE_KEY): {"rows": per instance, "summary"}.
    on_row(row) after each instance (for progress)."""
    pool = generate_instances(jax.random.PRNGKey(SCALE_KEY), count, split)
    arrays = jax.device_get(pool)
    rows = []
    for i in range(count):
        row = one_instance(
            policy,
            params,
            jax.tree.map(itemgetter(i), pool),
            jax.tree.map(itemgetter(i), arrays),
            samples=samples,
            seed=i,
            seconds=seconds,
        )
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return {"rows": rows, "summary": summarize(rows)}
