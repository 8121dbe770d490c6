"""Every planner on generated instances of any size, against the exact optimum.

Per instance, each planner's cost ($, +inf when it found no feasible plan) and seconds:

- the policy: its best of `samples` sampled plans plus its greedy plan, as `hps plan` picks
  (`hps.placement.agent.planner.best_by_numpy`, the float64 numpy model the exact solver uses),
  its greedy plan alone, and (where the segment table fits) its best refined by stage moves;
- the best single-type plan (the env's reference cost);
- where the jnp model's segment table fits (hps.config.limits.DENSE_MODEL_BYTES, up to about
  a hundred layers at 16 types): the searches of `hps search` at their default budgets (greedy,
  random, the genetic algorithm, the gradient search, which refuses past 64 padded layers at
  16 types) and the stage-move hill climb from the best single-type plan; past it the searches
  have no model to run on and are left out, not guessed, and both climbs (from the policy's
  best and from the best single type) run in numpy (`climb_at_scale`);
- the exact solver's best HeterPS schedule within `seconds`, with its proven bound and time.

Ratios are cost / the proven optimum over the instances the solver closed (gap 0), so no
figure rests on an unproven denominator; the instances it could not close are counted, with the
mean proven gap. Every planner's feasible fraction is over the instances with a feasible plan.
Times are medians (the first instance's searches include their compile).
"""

from __future__ import annotations

import math
import time
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np

from hps.contract.types import Budget
from hps.costmodel.schedule.from_params import generated_instance
from hps.costmodel.schedule.params import dense_size_fits
from hps.costmodel.schedule.plan import evaluate_plan, schedule_plan
from hps.methods.compare import compare
from hps.methods.problem import Problem
from hps.methods.search.climb_at_scale import best_single_type, climb_at_scale
from hps.placement.agent.evaluation import best_greedy_refined, climb_cost
from hps.placement.agent.planner import best_by_numpy, candidate_schedules
from hps.placement.env.generator import InstanceSplit, generate_instances

SEARCHES = ("greedy", "random", "genetic", "gradient")
PLANNERS = ("policy", "policy_greedy", "policy_refined", "single", *SEARCHES, "climb")
SCALE_KEY = 2026


def dense_fits(placement) -> bool:
    """Whether the segment table of a padded (unbatched) PlacementParams fits DENSE_MODEL_BYTES."""
    return dense_size_fits(placement.max_layers, placement.max_types, int(placement.unit_grid.shape[-1]))


def _timed(fn):
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def dense_planners(instance, inst, schedules, num_layers: int, seed: int, budget: int | None = None) -> dict:
    """{planner: cost} and {planner + "_seconds": s} of the planners that need the segment
    table: the policy's best refined by stage moves, the searches (at `budget` evaluations,
    None: each one's default) and the hill climb."""
    placement = instance.placement
    padded = jnp.zeros((schedules.shape[0], placement.max_layers), jnp.int32).at[:, :num_layers].set(schedules)
    refined, seconds = _timed(lambda: best_greedy_refined(placement, padded))
    out = {"policy_refined": float(refined[4]) if bool(refined[5]) else math.inf, "policy_refined_seconds": seconds}
    searched = compare(Problem.of_instance(inst, (placement, None)), SEARCHES, Budget(evaluations=budget, seed=seed))
    for found in searched.results:  # a search past its space (the gradient's past ~100 layers) is left out
        out[found.planner] = found.cost
        out[f"{found.planner}_seconds"] = found.seconds
    (cost, ok, _), seconds = _timed(lambda: climb_cost(placement))
    out.update(climb=float(cost) if bool(ok) else math.inf, climb_seconds=seconds)
    return out


def one_instance(
    policy, params, instance, arrays, *, samples: int, seed: int, seconds: float, budget: int | None = None
) -> dict:
    """Every planner's cost ($, inf when infeasible; absent when it cannot run at this size)
    and time (s) on one unbatched instance (`instance` on the device, `arrays` its host copy),
    and the exact solver's cost, bound, gap. budget: the searches' evaluations (None: default)."""
    from hps.methods.exact_schedule import solve_exact

    inst = generated_instance(arrays)
    key = jax.random.PRNGKey(seed)

    def sample():
        schedules = jax.block_until_ready(candidate_schedules(policy, params, instance, key, samples, inst.num_layers))
        return schedules, best_by_numpy(inst, schedules)[0]

    sample()  # compile
    (schedules, best), policy_seconds = _timed(sample)
    exact = solve_exact(inst, heterps=True, seconds=seconds)
    row = {
        "layers": inst.num_layers,
        "types": inst.num_types,
        "policy": best.score.cost,
        "policy_seconds": policy_seconds,
        "policy_greedy": evaluate_plan(inst, schedule_plan(np.asarray(schedules)[-1])).cost,
        "single": float(arrays.reference_cost),
        "exact": exact.cost,
        "exact_bound": exact.bound,
        "exact_gap": math.inf if exact.gap is None else exact.gap,
        "exact_seconds": exact.seconds,
    }
    if dense_fits(instance.placement):
        row.update(dense_planners(instance, inst, schedules, inst.num_layers, seed, budget))
    else:
        row.update(numpy_climbs(inst, best.schedule))
    return row


def numpy_climbs(inst, policy_best) -> dict:
    """{planner: cost} and {planner + "_seconds": s} where the segment table does not fit: the
    numpy stage-move climb (`climb_at_scale`) from the policy's best plan ("policy_refined")
    and from the best single-type plan ("climb")."""
    out = {}
    for name, start in (("policy_refined", lambda: policy_best), ("climb", lambda: best_single_type(inst))):
        began = time.perf_counter()
        _, score, _ = climb_at_scale(inst, start())
        out.update({name: score.cost, f"{name}_seconds": time.perf_counter() - began})
    return out


def _ratios(rows: list[dict], name: str) -> np.ndarray:
    return np.array([r[name] / r["exact"] for r in rows if name in r and math.isfinite(r[name])])


def summarize(rows: list[dict]) -> dict:
    """Per planner that ran: mean / p95 / worst cost over the proven optimum, the feasible
    fraction and the median seconds; the solver's closed count, mean gap where open, mean time."""
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
        ran = [r for r in with_plan if name in r]
        if not ran:
            continue
        ratios = _ratios(proven, name)
        timed = [r[f"{name}_seconds"] for r in rows if f"{name}_seconds" in r]
        out[name] = {
            "mean": float(ratios.mean()) if ratios.size else math.nan,
            "p95": float(np.percentile(ratios, 95)) if ratios.size else math.nan,
            "worst": float(ratios.max()) if ratios.size else math.nan,
            "feasible": sum(math.isfinite(r[name]) for r in ran) / len(ran),
            "seconds": float(np.median(timed)) if timed else math.nan,
        }
    return out


def compare_at_scale(
    policy,
    params,
    split: InstanceSplit,
    *,
    count: int = 10,
    samples: int = 64,
    seconds: float = 60.0,
    budget: int | None = None,
    on_row=None,
) -> dict:
    """`count` instances of `split` (drawn from SCALE_KEY): {"rows": per instance, "summary"}.
    budget: the searches' evaluations (None: their defaults, 51,200 for random, GA and
    gradient). on_row(row) after each instance (for progress)."""
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
            budget=budget,
        )
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return {"rows": rows, "summary": summarize(rows)}
