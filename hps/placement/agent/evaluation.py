"""How good is a trained placement policy? Compared with the exact solver's proven optimum and
the genetic algorithm on held-out instances, small ones (≤ 10 layers, ≤ 4 types, where
exhaustive search checks the optimum independently) and large ones (24–32 layers).

Per instance: the policy's best of `samples` sampled plans plus its greedy plan, and its greedy
plan alone, all scored by the exact cost model; the genetic algorithm given the same number of
evaluations (one generation of samples + 1 individuals, so it is seeded with single-type
plans and random ones); and the optimum (HeterPS schedules, `hps.methods.exact_schedule`). Costs are
compared as cost / optimum over the instances where a feasible plan exists.
`heldout_evaluator` is the cheaper greedy-only check a training session runs for its learning
curve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np

from hps.contract.types import Budget
from hps.costmodel.schedule.cost import segment_table
from hps.costmodel.schedule.from_params import generated_instance
from hps.methods.problem import Problem
from hps.methods.registry import run
from hps.methods.search.refine import climb_from_single, refine
from hps.methods.search.scoring import RANK_FEASIBLE, batch_best, score
from hps.placement.agent.planner import candidate_schedules
from hps.placement.agent.policy import PolicyFunctions
from hps.placement.agent.rollout import rollout
from hps.placement.env.env import PlacementEnv
from hps.placement.env.generator import (
    HELDOUT,
    HELDOUT_LARGE,
    InstanceSplit,
    generate_instances,
)

HELDOUT_SMALL = InstanceSplit("heldout-small", 4, 10, 2, 4, salt=3)
EVAL_KEY = 77
EVAL_SEED = 2024  # the learning curve's held-out pool


@dataclass(frozen=True)
class Comparison:
    """instances: evaluated; with_feasible: those where the optimum is feasible; found_feasible:
    of those, where the policy's best sample was feasible (greedy_feasible: its greedy plan);
    *_ratio: mean cost / optimum over the instances where the method found a feasible plan;
    genetic_*: the GA at the same evaluations (a population of EQUAL_POPULATION, so it evolves);
    gradient_*: the gradient search at the same evaluations; worst_ / median_sampled_ratio: of
    the policy's best samples; within_3_percent: instances where that best sample is within 3 %
    of optimum. refined_*: the best sample polished by stage moves (`hps.methods.search.refine`), which
    scored refine_evaluations more plans per instance on average; genetic_refined_ratio: the GA
    given the same total evaluations as the policy and its refinement on each instance.
    climb_*: the training teacher alone (stage moves from the best single-type plan,
    `hps.methods.search.refine.climb_from_single`), which scored climb_evaluations plans on average.
    exact_seconds: the exact solver's mean time per instance; exhaustive_agrees: instances
    where exhaustive search, the independent check, found the same optimum (to 1e-5)."""

    instances: int
    with_feasible: int
    found_feasible: int
    greedy_feasible: int
    genetic_feasible: int
    sampled_ratio: float
    greedy_ratio: float
    genetic_ratio: float
    worst_sampled_ratio: float
    median_sampled_ratio: float
    within_3_percent: int
    evaluations_per_instance: int
    gradient_feasible: int
    gradient_ratio: float
    refined_feasible: int
    refined_ratio: float
    worst_refined_ratio: float
    refined_within_3_percent: int
    refine_evaluations: float
    genetic_refined_ratio: float
    climb_feasible: int
    climb_ratio: float
    climb_evaluations: float
    exact_seconds: float
    exhaustive_agrees: int

    def to_dict(self) -> dict:
        return asdict(self)


def heldout_evaluator(config, split: InstanceSplit = HELDOUT, count: int = 256):
    """For the learning curve of a placement TrainConfig: params -> {"eval_reward",
    "eval_cost_ratio", "eval_feasible"}, greedy decoding on a fixed pool of `count` instances of
    `split` (cost ratio = cost / reference cost, over feasible plans)."""
    pool = generate_instances(jax.random.PRNGKey(EVAL_SEED), count, split)
    policy, env = PolicyFunctions(config.policy), PlacementEnv()
    steps = split.max_layers

    @jax.jit
    def evaluate(params, pool):  # the pool an argument, not a constant XLA would fold at compile time
        traj = rollout(policy, params, env, pool, jax.random.PRNGKey(0), steps, greedy=True)
        feasible = traj.feasible
        ratio = jnp.sum(jnp.where(feasible, traj.cost_ratio, 0.0)) / jnp.maximum(jnp.sum(feasible), 1)
        return {
            "eval_reward": jnp.mean(traj.episode_reward),
            "eval_cost_ratio": ratio,
            "eval_feasible": jnp.mean(feasible.astype(jnp.float32)),
        }

    return lambda params: {k: float(v) for k, v in jax.device_get(evaluate(params, pool)).items()}


@jax.jit
def best_greedy_refined(params, schedules):
    """(cost of the best schedule, its feasibility, greedy (last row) cost, greedy feasibility,
    cost and feasibility of the best after stage-move refinement, refine evaluations)."""
    table = segment_table(params)
    scored = score(table, params, schedules)
    best = batch_best(scored)
    feasible = scored.rank == RANK_FEASIBLE
    refined, evaluations = refine(table, params, best)
    return (
        best.primary,
        best.rank == RANK_FEASIBLE,
        scored.primary[-1],
        feasible[-1],
        refined.primary,
        refined.rank == RANK_FEASIBLE,
        evaluations,
    )


@jax.jit
def climb_cost(params):
    """(cost, feasible, evaluations) of the teacher's plan."""
    best, evaluations = climb_from_single(params)
    return best.primary, best.rank == RANK_FEASIBLE, evaluations


EQUAL_POPULATION = 32  # the GA's population when it gets as few evaluations as the policy


def genetic_at(problem: Problem, seed: int, budget: int):
    """The GA with at most `budget` evaluations: EQUAL_POPULATION individuals for budget //
    EQUAL_POPULATION generations (a single generation of `budget` when that is less than one)."""
    population = min(EQUAL_POPULATION, budget)
    options = {"population": population, "generations": budget // population, "elites": min(4, population - 1)}
    return run("genetic", problem, Budget(seed=seed), **options)


def problem_of(instance) -> Problem:
    """The schedule-model problem of one unbatched PlacementInstance, its searches on its padded
    params (one compile for every instance of a split)."""
    return Problem.of_instance(generated_instance(jax.device_get(instance)), (instance.placement, None))


def _policy_best(policy, params, instance, seed: int, samples: int, num_layers: int, temperature: float = 1.0):
    """(best cost, best feasible, greedy cost, greedy feasible, refined cost, refined feasible,
    refine evaluations) of the policy's samples + greedy plan of one instance, scored by the
    exact model (schedules padded to the instance's layers)."""
    placement = instance.placement
    schedules = candidate_schedules(
        policy, params, instance, jax.random.PRNGKey(seed), samples, num_layers, temperature
    )
    padded = jnp.zeros((schedules.shape[0], placement.max_layers), jnp.int32).at[:, :num_layers].set(schedules)
    return jax.device_get(best_greedy_refined(placement, padded))


def _mean_ratio(costs, optimum, found):
    ratios = np.asarray(costs)[found] / np.asarray(optimum)[found]
    return float(np.mean(ratios)) if ratios.size else float("nan"), ratios


def compare_with_optimum(policy, params, *, count: int = 50, samples: int = 64, split=HELDOUT_SMALL) -> Comparison:
    """Evaluate the policy (`samples` sampled plans + its greedy one, at temperature 1) against
    exhaustive search and the GA on `count` instances of `split`, drawn from EVAL_KEY."""
    pool = generate_instances(jax.random.PRNGKey(EVAL_KEY), count, split)
    names = (
        "optimum",
        "has",
        "best",
        "best_ok",
        "greedy",
        "greedy_ok",
        "refined",
        "refined_ok",
        "refine_evals",
        "ga",
        "ga_ok",
        "gradient",
        "gradient_ok",
        "ga_refined",
        "ga_refined_ok",
        "climb",
        "climb_ok",
        "climb_evals",
        "exact_s",
        "agrees",
    )
    rows = {name: [] for name in names}
    for i in range(count):
        instance = jax.tree.map(itemgetter(i), pool)
        placement = instance.placement
        problem = problem_of(instance)
        optimum = exact_optimum(problem)
        checked = run("exhaustive", problem, Budget())
        agrees = (checked.feasible == optimum["feasible"]) and (
            not optimum["feasible"] or abs(checked.cost - optimum["cost"]) <= 1e-5 * optimum["cost"]
        )
        policy_figures = _policy_best(policy, params, instance, i, samples, split.max_layers)
        ga = genetic_at(problem, i, samples + 1)
        descent = run("gradient", problem, Budget(evaluations=samples + 1, seed=i))
        ga_refined = genetic_at(problem, i, samples + 1 + int(policy_figures[-1]))
        values = (
            optimum["cost"],
            optimum["feasible"],
            *policy_figures,
            ga.cost,
            ga.feasible,
            descent.cost,
            descent.feasible,
            ga_refined.cost,
            ga_refined.feasible,
            *jax.device_get(climb_cost(placement)),
            optimum["seconds"],
            agrees,
        )
        for name, value in zip(names, values):
            rows[name].append(value)
    has = np.asarray(rows["has"], bool)
    found, greedy_found, ga_found, gradient_found, refined_found, ga_refined_found, climb_found = (
        has & np.asarray(rows[f"{name}_ok"], bool)
        for name in ("best", "greedy", "ga", "gradient", "refined", "ga_refined", "climb")
    )
    sampled_ratio, ratios = _mean_ratio(rows["best"], rows["optimum"], found)
    refined_ratio, refined = _mean_ratio(rows["refined"], rows["optimum"], refined_found)
    return Comparison(
        instances=count,
        with_feasible=int(has.sum()),
        found_feasible=int(found.sum()),
        greedy_feasible=int(greedy_found.sum()),
        genetic_feasible=int(ga_found.sum()),
        sampled_ratio=sampled_ratio,
        greedy_ratio=_mean_ratio(rows["greedy"], rows["optimum"], greedy_found)[0],
        genetic_ratio=_mean_ratio(rows["ga"], rows["optimum"], ga_found)[0],
        worst_sampled_ratio=float(ratios.max()) if ratios.size else float("nan"),
        median_sampled_ratio=float(np.median(ratios)) if ratios.size else float("nan"),
        within_3_percent=int(np.sum(ratios <= 1.03)),
        evaluations_per_instance=samples + 1,
        gradient_feasible=int(gradient_found.sum()),
        gradient_ratio=_mean_ratio(rows["gradient"], rows["optimum"], gradient_found)[0],
        refined_feasible=int(refined_found.sum()),
        refined_ratio=refined_ratio,
        worst_refined_ratio=float(refined.max()) if refined.size else float("nan"),
        refined_within_3_percent=int(np.sum(refined <= 1.03)),
        refine_evaluations=float(np.mean(rows["refine_evals"])),
        genetic_refined_ratio=_mean_ratio(rows["ga_refined"], rows["optimum"], ga_refined_found)[0],
        climb_feasible=int(climb_found.sum()),
        climb_ratio=_mean_ratio(rows["climb"], rows["optimum"], climb_found)[0],
        climb_evaluations=float(np.mean(rows["climb_evals"])),
        exact_seconds=float(np.mean(rows["exact_s"])),
        exhaustive_agrees=int(np.sum(rows["agrees"])),
    )


def exact_optimum(problem: Problem) -> dict:
    """{"cost" ($, inf when infeasible), "feasible", "seconds"}: the exact solver's proven
    optimum over HeterPS schedules of `problem`."""
    found = run("exact", problem, Budget(), heterps=True)
    return {"cost": found.cost, "feasible": found.feasible, "seconds": found.seconds}


def compare_on_large(
    policy,
    params,
    *,
    count: int = 20,
    samples: int = 64,
    split: InstanceSplit = HELDOUT_LARGE,
    genetic_budget: int | None = None,
) -> dict:
    """Held-out 24–32-layer instances (too large to enumerate): the policy's best of samples + 1
    against the genetic algorithm (at `genetic_budget` evaluations, default its own 51,200, and
    at the policy's samples + 1), the policy's best refined by stage moves (which scores more
    plans), the training teacher alone ("climb") and the best single-type plan. Returns mean cost / the
    exact solver's optimum ({name}_vs_optimum) and / the best single-type cost ({name}_vs_single)
    for each, over instances where both are feasible, feasible counts and the solver's mean time."""
    pool = generate_instances(jax.random.PRNGKey(EVAL_KEY), count, split)
    names = ("policy", "policy_refined", "genetic", "genetic_equal", "single", "climb")
    costs, seconds = {name: [] for name in (*names, "optimum")}, []
    for i in range(count):
        instance = jax.tree.map(itemgetter(i), pool)
        placement = instance.placement
        problem = problem_of(instance)
        best, best_ok, _, _, refined, refined_ok, _ = _policy_best(
            policy, params, instance, i, samples, split.max_layers
        )
        ga = run("genetic", problem, Budget(evaluations=genetic_budget, seed=i))
        ga_equal = genetic_at(problem, i, samples + 1)
        one = run("single", problem, Budget())
        climb, climb_ok, _ = climb_cost(placement)
        optimum = exact_optimum(problem)
        costs["optimum"].append(optimum["cost"])
        seconds.append(optimum["seconds"])
        for name, (cost, ok) in zip(
            names,
            (
                (best, best_ok),
                (refined, refined_ok),
                (ga.cost, ga.feasible),
                (ga_equal.cost, ga_equal.feasible),
                (one.cost, one.feasible),
                (climb, climb_ok),
            ),
        ):
            costs[name].append(float(cost) if ok else float("inf"))
    table = {name: np.asarray(values) for name, values in costs.items()}
    out = {"instances": count, "samples": samples, "exact_seconds": float(np.mean(seconds))}
    out["optimum_feasible"] = int(np.isfinite(table["optimum"]).sum())
    for name in names:
        out[f"{name}_feasible"] = int(np.isfinite(table[name]).sum())
        for base in ("single", "optimum"):
            both = np.isfinite(table[name]) & np.isfinite(table[base])
            ratio = float(np.mean(table[name][both] / table[base][both])) if both.any() else float("nan")
            out[f"{name}_vs_{base}"] = ratio
    return out
