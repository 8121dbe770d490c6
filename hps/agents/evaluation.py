"""How good is a trained placement policy? Compared with the exhaustive optimum and the genetic
algorithm on held-out instances small enough to enumerate (≤ 10 layers, ≤ 4 types).

Per instance: the policy's best of `samples` sampled plans plus its greedy plan, and its greedy
plan alone, all scored by the exact cost model; the genetic algorithm given the same number of
evaluations (one generation of samples + 1 individuals, so it is seeded with single-type
plans and random ones); and the exhaustive optimum. Costs are compared as cost / optimum over
the instances where a feasible plan exists. `heldout_evaluator` is the cheaper greedy-only check
a training session runs for its learning curve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np

from hps.agents.planner import candidate_schedules
from hps.agents.policy import PolicyFunctions
from hps.agents.rollout import rollout
from hps.envs.generators import HELDOUT, HELDOUT_LARGE, InstanceSplit, generate_instances
from hps.envs.placement import PlacementEnv
from hps.search import exhaustive, genetic, single
from hps.search.scoring import RANK_FEASIBLE, batch_best, score
from hps.placement.model import segment_table

HELDOUT_SMALL = InstanceSplit("heldout-small", 4, 10, 2, 4, salt=3)
EVAL_KEY = 77
EVAL_SEED = 2024  # the learning curve's held-out pool


@dataclass(frozen=True)
class Comparison:
    """instances: evaluated; with_feasible: those where the optimum is feasible; found_feasible:
    of those, where the policy's best sample was feasible (greedy_feasible: its greedy plan);
    *_ratio: mean cost / optimum over the instances where the method found a feasible plan;
    genetic_*: the GA at the same evaluations; worst_ / median_sampled_ratio: of the policy's
    best samples; within_3_percent: instances where that best sample is within 3 % of optimum."""

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

    def to_dict(self) -> dict:
        return asdict(self)


def heldout_evaluator(config, split: InstanceSplit = HELDOUT, count: int = 256):
    """For the learning curve of a placement TrainConfig: params -> {"eval_reward",
    "eval_cost_ratio", "eval_feasible"}, greedy decoding on a fixed pool of `count` instances of
    `split` (cost ratio = cost / reference cost, over feasible plans)."""
    pool = generate_instances(jax.random.PRNGKey(EVAL_SEED), count, split)
    policy, env = PolicyFunctions(config.policy), PlacementEnv()
    steps = min(split.max_layers, config.policy.max_layers)

    @jax.jit
    def evaluate(params):
        traj = rollout(policy, params, env, pool, jax.random.PRNGKey(0), steps, greedy=True)
        feasible = traj.feasible
        ratio = jnp.sum(jnp.where(feasible, traj.cost_ratio, 0.0)) / jnp.maximum(jnp.sum(feasible), 1)
        return {
            "eval_reward": jnp.mean(traj.episode_reward),
            "eval_cost_ratio": ratio,
            "eval_feasible": jnp.mean(feasible.astype(jnp.float32)),
        }

    return lambda params: {k: float(v) for k, v in jax.device_get(evaluate(params)).items()}


@jax.jit
def _best_and_greedy(params, schedules):
    """(cost of the best schedule, its feasibility, greedy (last row) cost, greedy feasibility)."""
    scored = score(segment_table(params), params, schedules)
    best = batch_best(scored)
    feasible = scored.rank == RANK_FEASIBLE
    return best.primary, best.rank == RANK_FEASIBLE, scored.primary[-1], feasible[-1]


def _policy_best(policy, params, instance, seed: int, samples: int, num_layers: int, temperature: float = 1.0):
    """(best cost, best feasible, greedy cost, greedy feasible) of the policy's samples + greedy
    plan of one instance, scored by the exact model (schedules padded to the instance's layers)."""
    placement = instance.placement
    schedules = candidate_schedules(policy, params, instance, jax.random.PRNGKey(seed), samples, num_layers, temperature)
    padded = jnp.zeros((schedules.shape[0], placement.max_layers), jnp.int32).at[:, :num_layers].set(schedules)
    return jax.device_get(_best_and_greedy(placement, padded))


def _mean_ratio(costs, optimum, found):
    ratios = np.asarray(costs)[found] / np.asarray(optimum)[found]
    return float(np.mean(ratios)) if ratios.size else float("nan"), ratios


def compare_with_optimum(policy, params, *, count: int = 50, samples: int = 64,
                         split: InstanceSplit = HELDOUT_SMALL, seed: int = EVAL_KEY, temperature: float = 1.0) -> Comparison:
    """Evaluate the policy against exhaustive search and the GA on `count` instances of `split`."""
    pool = generate_instances(jax.random.PRNGKey(seed), count, split)
    rows = {name: [] for name in ("optimum", "has", "best", "best_ok", "greedy", "greedy_ok", "ga", "ga_ok")}
    for i in range(count):
        instance = jax.tree.map(lambda x: x[i], pool)
        placement = instance.placement
        optimum = exhaustive(placement)
        best, best_ok, greedy_cost, greedy_ok = _policy_best(policy, params, instance, i, samples, split.max_layers,
                                                             temperature)
        ga = genetic(placement, key=jax.random.PRNGKey(i), budget=samples + 1)
        for name, value in (("optimum", optimum.cost), ("has", optimum.feasible), ("best", best), ("best_ok", best_ok),
                            ("greedy", greedy_cost), ("greedy_ok", greedy_ok), ("ga", ga.cost), ("ga_ok", ga.feasible)):  # fmt: skip
            rows[name].append(value)
    has = np.asarray(rows["has"], bool)
    found = has & np.asarray(rows["best_ok"], bool)
    greedy_found = has & np.asarray(rows["greedy_ok"], bool)
    ga_found = has & np.asarray(rows["ga_ok"], bool)
    sampled_ratio, ratios = _mean_ratio(rows["best"], rows["optimum"], found)
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
    )


def compare_on_large(policy, params, *, count: int = 20, samples: int = 64, split: InstanceSplit = HELDOUT_LARGE,
                     seed: int = EVAL_KEY, genetic_budget: int | None = None) -> dict:
    """Held-out 24–32-layer instances (too large to enumerate): the policy's best of samples + 1
    against the genetic algorithm (at `genetic_budget` evaluations, default its own 51,200, and
    at the policy's samples + 1) and the best single-type plan. Returns mean cost / best
    single-type cost for each, over instances where both are feasible, and feasible counts."""
    pool = generate_instances(jax.random.PRNGKey(seed), count, split)
    names = ("policy", "genetic", "genetic_equal", "single")
    costs = {name: [] for name in names}
    for i in range(count):
        instance = jax.tree.map(lambda x: x[i], pool)
        placement = instance.placement
        best, best_ok, _, _ = _policy_best(policy, params, instance, i, samples, split.max_layers)
        ga = genetic(placement, key=jax.random.PRNGKey(i), budget=genetic_budget)
        ga_equal = genetic(placement, key=jax.random.PRNGKey(i), budget=samples + 1)
        one = single(placement)
        for name, (cost, ok) in zip(names, ((best, best_ok), (ga.cost, ga.feasible),
                                            (ga_equal.cost, ga_equal.feasible), (one.cost, one.feasible))):  # fmt: skip
            costs[name].append(float(cost) if ok else float("inf"))
    table = {name: np.asarray(values) for name, values in costs.items()}
    base = table["single"]
    out = {"instances": count, "samples": samples}
    for name in names:
        both = np.isfinite(table[name]) & np.isfinite(base)
        out[f"{name}_feasible"] = int(np.isfinite(table[name]).sum())
        out[f"{name}_vs_single"] = float(np.mean(table[name][both] / base[both])) if both.any() else float("nan")
    return out
