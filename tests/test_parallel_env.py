"""The parallel-plan environment (hps.placement.env.parallel_env): random episodes under its masks
end in plans that the numpy reference scorer (`score_plan`) scores exactly as the env's reward
says, the masks keep every plan within its pooled caps and whole, and the reward is −log(cost /
reference) for feasible plans and below INFEASIBLE_REWARD for the others."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.config.types import ParallelStage
from hps.costmodel.parallel.batched_params import bucket_for
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.placement.env.parallel_env import INFEASIBLE_REWARD, MICRO_BATCH, TYPE, ParallelPlanEnv
from hps.placement.env.parallel_instance import cost_lower_bound, parallel_instance

EPISODES = 96


def _problems():
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.placement.env.parallel_generator import TRAIN, generate

    base = load_catalog(resolve_topology("cloud-2026", "catalogs", "test"))
    problems = []
    for seed, scale in ((0, 1.0), (1, 0.02), (2, 0.002)):  # the drawn floor, and floors most plans meet
        problem = generate(TRAIN, seed, base).problem
        job = dataclasses.replace(problem.job, throughput=problem.job.throughput * scale)
        problems.append(ParallelProblem(problem.workload, problem.catalog, job))
    return problems


@pytest.fixture(scope="module")
def episodes():
    """(problem, instance, outcome) per problem: EPISODES random masked episodes each."""
    env = ParallelPlanEnv(max_stages=8)
    problems = _problems()
    bucket = bucket_for(*problems)

    def play(key, instance):
        _, state = env.reset(key, instance)
        plan0 = env.plan_of(state, instance)

        def body(carry, k):
            state, finished, out = carry
            obs = env.observation(state, instance)
            action = jax.random.categorical(k, jnp.where(obs.mask, 0.0, -1e9))
            _, state, reward, done, info = env.step(k, state, action, instance)
            record = done & ~finished
            new = (reward, info["feasible"], info["cost_ratio"], info["plan"])
            out = jax.tree.map(lambda a, b: jnp.where(record, a, b), new, out)
            return (state, finished | done, out), None

        out0 = (jnp.float64(0.0), jnp.bool_(False), jnp.float64(0.0), plan0)
        keys = jax.random.split(key, env.max_steps)
        (_, finished, out), _ = jax.lax.scan(body, (state, jnp.bool_(False), out0), keys)
        return finished, out

    results = []
    with jax.enable_x64(True):
        run = jax.jit(jax.vmap(play, in_axes=(0, None)))
        for i, problem in enumerate(problems):
            instance = parallel_instance(problem, bucket)
            finished, out = jax.device_get(run(jax.random.split(jax.random.PRNGKey(i), EPISODES), instance))
            results.append((problem, instance, finished, out))
    return results


def _stages(problem, plan, i):
    count = int(plan.stage_mask[i].sum())
    names = [r.name for r in problem.catalog.resources]
    return tuple(
        ParallelStage(int(plan.first[i, j]), int(plan.last[i, j]), names[int(plan.types[i, j])],
                      int(plan.tp[i, j]), int(plan.dp[i, j]))
        for j in range(count)
    )  # fmt: skip


def test_every_episode_ends_within_the_longest_plan(episodes):
    for _, _, finished, _ in episodes:
        assert finished.all()


def test_the_env_scores_its_plans_as_the_reference_scorer(episodes):
    feasible_seen = 0
    for problem, instance, _, (reward, feasible, ratio, plan) in episodes:
        for i in range(EPISODES):
            stages, b = _stages(problem, plan, i), int(plan.micro_batch[i])
            reference = score_plan(problem, stages, b)
            assert bool(feasible[i]) == reference.feasible, (i, reference.reason)
            if reference.feasible:
                feasible_seen += 1
                assert ratio[i] * float(instance.reference) == pytest.approx(reference.cost, rel=1e-9)
                assert reward[i] == pytest.approx(-np.log(reference.cost / float(instance.reference)), rel=1e-9)
            else:
                assert reward[i] <= INFEASIBLE_REWARD
    assert feasible_seen >= 12  # the low floors make some random plans feasible (most run out of memory)


def test_masked_plans_are_whole_contiguous_and_within_their_caps(episodes):
    for problem, _, _, (_, _, _, plan) in episodes:
        caps = np.array([r.max_units for r in problem.catalog.resources])
        for i in range(EPISODES):
            stages, b = _stages(problem, plan, i), int(plan.micro_batch[i])
            assert stages[0].first == 0 and stages[-1].last == problem.num_layers - 1
            assert all(s.first == p.last + 1 for p, s in zip(stages, stages[1:]))
            assert all(problem.cut_after[s.last] for s in stages)
            assert int(problem.job.batch) % b == 0 and all(b % s.dp == 0 for s in stages)
            used = np.zeros(len(caps))
            for s in stages:
                used[problem.catalog.index(s.type)] += s.tp * s.dp
                assert s.tp in problem.tp_choices(problem.catalog.index(s.type))
            assert (used <= caps).all()


def test_the_reference_cost_is_below_every_feasible_plan(episodes):
    for problem, instance, _, (_, feasible, ratio, _) in episodes:
        assert float(instance.reference) == pytest.approx(cost_lower_bound(problem))
        assert (ratio[feasible] >= 1.0).all()


def test_the_first_decision_is_the_micro_batch_and_then_a_stage_type():
    env = ParallelPlanEnv(max_stages=4)
    problem = _problems()[2]
    with jax.enable_x64(True):
        instance = jax.tree.map(jnp.asarray, parallel_instance(problem, bucket_for(problem)))
        obs, state = env.reset(None, instance)
        assert int(state.phase) == MICRO_BATCH
        divisors = int(np.sum(np.asarray(instance.params.divisors) <= int(problem.job.batch)))
        assert int(obs.mask.sum()) == divisors
        _, state, reward, done, _ = env.step(None, state, jnp.int32(0), instance)
        assert int(state.phase) == TYPE and float(reward) == 0.0 and not bool(done)


def test_a_job_that_fixes_the_micro_batch_lets_the_env_take_only_it():
    env = ParallelPlanEnv(max_stages=4)
    problem = _problems()[2]
    fixed = ParallelProblem(problem.workload, problem.catalog, dataclasses.replace(problem.job, micro_batch=8.0))
    with jax.enable_x64(True):
        instance = jax.tree.map(jnp.asarray, parallel_instance(fixed, bucket_for(fixed)))
        obs, _ = env.reset(None, instance)
    allowed = np.flatnonzero(np.asarray(obs.mask))
    assert [int(instance.params.divisors[k]) for k in allowed] == [8]
