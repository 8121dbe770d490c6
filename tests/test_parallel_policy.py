"""The parallel-plan policy (hps.placement.agent.parallel_*): a teacher's plan replayed through the
env as its action sequence lays out that very plan; imitation on it drives the policy's argmax
to it; the planner returns a plan `score_plan` scores as the env did; `hps train --kind
parallel` and `hps plan --checkpoint` run end to end and write a plan file that `hps evaluate`
scores and `hps execute --check` runs as single-device training does."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hps.config.types import ParallelStage
from hps.contract.types import Plan
from hps.costmodel.parallel.batched_params import bucket_for
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.placement.agent.parallel_demonstrations import imitation_loss, make_demonstrations, plan_actions
from hps.placement.agent.parallel_planner import plan_with_policy
from hps.placement.agent.parallel_policy import ParallelPolicyFunctions, ParallelPolicySpec
from hps.placement.agent.parallel_rollout import play_forced
from hps.placement.env.parallel_env import ParallelPlanEnv
from hps.placement.env.parallel_instance import parallel_instance, stack_instances
from tests.helpers import run_cli_output


@pytest.fixture(scope="module")
def small():
    """A 64-row generated instance with a floor most plans meet, its instance and two plans."""
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.placement.env.parallel_generator import TRAIN, generate

    base = load_catalog(resolve_topology("cloud-2026", "catalogs", "test"))
    drawn = generate(TRAIN, 1, base).problem
    problem = ParallelProblem(drawn.workload, drawn.catalog, dataclasses.replace(drawn.job, throughput=1e-3))
    names = [r.name for r in problem.catalog.resources]
    n = problem.num_layers
    cuts = [i for i in range(n - 1) if problem.cut_after[i]]
    middle = cuts[len(cuts) // 2]
    plans = [
        Plan((ParallelStage(0, n - 1, names[0], 1, 2),), 4),
        Plan((ParallelStage(0, middle, names[1], 2, 1), ParallelStage(middle + 1, n - 1, names[0], 1, 4)), 8),
    ]
    instance = parallel_instance(problem, bucket_for(problem))
    return problem, instance, plans


def test_a_plan_as_actions_lays_out_that_plan(small):
    problem, instance, plans = small
    env = ParallelPlanEnv(4)
    batch = stack_instances([instance] * len(plans))
    demos = make_demonstrations([problem], stack_instances([instance]), [(0, plan) for plan in plans], env)
    assert demos.actions.shape == (2, env.max_steps) and demos.valid.sum(axis=1).tolist() == [5, 9]
    policy = ParallelPolicyFunctions(ParallelPolicySpec(hidden=8))
    params = policy.init(jax.random.PRNGKey(0))
    with jax.enable_x64(True):
        from hps.placement.agent.parallel_rollout import _play

        carry, _ = _play(policy, params, env, batch, jax.random.PRNGKey(0), 1, forced=jnp.asarray(demos.actions))
    plans_out = jax.device_get(carry[5])
    for i, plan in enumerate(plans):
        count = int(plans_out.stage_mask[i].sum())
        names = [problem.catalog.resources[int(y)].name for y in plans_out.types[i, :count]]
        laid = [(int(plans_out.first[i, j]), int(plans_out.last[i, j]), names[j], int(plans_out.tp[i, j]),
                 int(plans_out.dp[i, j])) for j in range(count)]  # fmt: skip
        assert laid == [(s.first, s.last, s.type, s.tp, s.dp) for s in plan.stages]
        assert int(plans_out.micro_batch[i]) == plan.micro_batch
        assert bool(carry[4][i]) == score_plan(problem, plan.stages, plan.micro_batch).feasible


def test_a_plan_the_action_space_cannot_express_is_left_out(small):
    problem, instance, plans = small
    env = ParallelPlanEnv(1)  # one stage at most: the two-stage plan cannot be laid out
    divisors = np.asarray(instance.params.divisors)
    assert plan_actions(problem, plans[1], env, divisors) is None
    assert plan_actions(problem, plans[0], env, divisors) is not None


def test_imitation_alone_teaches_the_policy_a_plan(small):
    problem, instance, plans = small
    env = ParallelPlanEnv(4)
    pool = stack_instances([instance])
    demos = make_demonstrations([problem], pool, [(0, plans[1])], env)
    policy = ParallelPolicyFunctions(ParallelPolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(1))
    tx = optax.adam(3e-2)
    with jax.enable_x64(True):
        pool_j, demos_j = jax.tree.map(jnp.asarray, pool), jax.tree.map(jnp.asarray, demos)

        @jax.jit
        def step(params, opt):
            (loss, agree), grads = jax.value_and_grad(
                lambda p: imitation_loss(policy, p, env, pool_j, demos_j), has_aux=True
            )(params)
            updates, opt = tx.update(grads, opt, params)
            return optax.apply_updates(params, updates), opt, loss, agree

        opt = tx.init(params)
        for _ in range(150):
            params, opt, loss, agree = step(params, opt)
        _, agreement = play_forced(policy, params, env, pool_j, demos_j.actions)
    assert float(agree) == 1.0 and float(loss) < 0.1
    assert float(jnp.sum(agreement * demos_j.valid)) == float(demos_j.valid.sum())


def test_the_planner_returns_a_plan_scored_as_the_reference_scores_it(small):
    problem, _, _ = small
    policy = ParallelPolicyFunctions(ParallelPolicySpec(hidden=8))
    params = policy.init(jax.random.PRNGKey(2))
    found = plan_with_policy(policy, params, problem, max_stages=4, samples=16)
    assert found.candidates == 17 and found.plan is not None
    score = score_plan(problem, found.plan.stages, found.plan.micro_batch)
    assert score.feasible == found.feasible
    again = plan_with_policy(policy, params, problem, max_stages=4, samples=16)
    assert again.plan == found.plan and again.compile_seconds == 0.0


@pytest.mark.slow
def test_train_a_parallel_policy_then_plan_with_it_and_evaluate_the_plan_file(tmp_path, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(
        "from hps.placement.agent.parallel_train import ParallelTrainConfig\n"
        "CONFIG = ParallelTrainConfig(pool_size=4, num_envs=32, samples_per_instance=8, updates_per_chunk=1, "
        "num_chunks=1, eval_instances=2, max_stages=4)\n"
    )
    run = tmp_path / "run"
    code, text, err = run_cli_output(["train", str(experiment), "--out", str(run), "--json"], capsys)
    assert code == 0, err
    record = json.loads(text)
    assert record["chunk"] == 0 and np.isfinite(record["loss"])
    plan_file = tmp_path / "plan.json"
    argv = ["plan", "--workload", "transformer-small", "--catalog", "small", "--checkpoint", str(run), "--plans", "8"]
    code, text, err = run_cli_output([*argv, "--out", str(plan_file)], capsys)
    assert code in (0, 1), err  # 1: no feasible plan among an untrained policy's, nothing written
    assert "policy" in text
    if code == 0:  # the plan file the policy wrote is scored and runs as written, as single-device training does
        code, text, err = run_cli_output(["evaluate", "--plan", str(plan_file), "--json"], capsys)
        assert code == 0, err
        code, text, err = run_cli_output(["execute", str(plan_file), "--check", "--steps", "2"], capsys)
        assert code == 0 and "parameters equal" in text, err


def test_the_policy_proposes_its_plans_type_sequences_best_first(small):
    from hps.methods.sequence.completion import segments
    from hps.placement.agent.parallel_planner import policy_type_sequences

    problem, _, _ = small
    policy = ParallelPolicyFunctions(ParallelPolicySpec(hidden=8))
    params = policy.init(jax.random.PRNGKey(2))
    spans = segments(problem)
    sequences = policy_type_sequences(policy, params, problem, spans, max_stages=4, samples=16)
    found = plan_with_policy(policy, params, problem, max_stages=4, samples=16)
    assert 1 <= len(sequences) <= 17 and len(set(sequences)) == len(sequences)
    assert all(len(s) == len(spans) for s in sequences)
    if found.feasible:  # the best plan's sequence comes first
        by_layer = {i: problem.catalog.index(s.type) for s in found.plan.stages for i in range(s.first, s.last + 1)}
        assert sequences[0] == tuple(by_layer[first] for first, _ in spans)
