"""Training parallel-plan policies: `make_train(config)` → `train_chunk(state)`, one jitted chunk
of REINFORCE updates on a fixed pool of generated instances (`hps.placement.env.parallel_generator`
splits, built on the host once: `instance_pool`).

Each update draws config.draws instances of the pool at random and plays each
samples_per_instance times (`hps.placement.agent.parallel_rollout`); the env batch is sharded
over a 1-D device mesh ("envs",), parameters replicated. The env's figures are float64, so the
chunk runs under `jax.enable_x64`; parameters, log-probabilities and returns are float32.
The kind registers as "parallel" (`hps train --kind parallel`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hps.errors import ConfigError
from hps.placement.agent.parallel_demonstrations import imitation_loss, make_demonstrations, teacher_plans
from hps.placement.agent.parallel_policy import ParallelPolicyFunctions, ParallelPolicySpec
from hps.placement.agent.parallel_rollout import replay, rollout
from hps.placement.agent.train import episode_metrics
from hps.placement.env.parallel_env import ParallelPlanEnv
from hps.placement.env.parallel_generator import SPLITS
from hps.placement.env.parallel_instance import instance_pool
from hps.rl import driver
from hps.rl.agent import Agent
from hps.rl.algorithms import make_update
from hps.rl.driver import BaseTrainConfig, TrainState
from hps.rl.policy_kind import PolicyKind, register_policy_kind
from hps.rl.sharding import check_divisible, env_mesh, replicated, shard_envs


@dataclass(frozen=True)
class ParallelTrainConfig(BaseTrainConfig):
    """A parallel-policy training run (hashable; JSON-able via `dataclasses.asdict`); the common
    fields come from `BaseTrainConfig`. split: a `hps.placement.env.parallel_generator` split name;
    pool_size: instances of it (seeds 0 .. pool_size − 1) the run trains on; max_stages: the
    most stages a plan may have; eval_instances: instances of eval_split the learning curve's
    evaluation plays (greedy). Imitation: demonstrations > 0 labels that many pool instances
    with the exact solver's best plan within teacher_seconds each before training
    (`parallel_demonstrations`); each update then adds imitation_coef × the cross-entropy of
    demo_batch of them, and policy_gradient_coef weighs the REINFORCE loss."""

    policy: ParallelPolicySpec = field(default_factory=ParallelPolicySpec)
    split: str = "mixing-train"
    eval_split: str = "mixing-held-out"
    pool_size: int = 64
    max_stages: int = 16
    eval_instances: int = 8
    num_envs: int = 256
    samples_per_instance: int = 16
    updates_per_chunk: int = 5
    num_chunks: int = 40
    top_fraction: float = 0.25
    entropy_coef: float = 0.01
    demonstrations: int = 0
    teacher_seconds: float = 5.0
    demo_batch: int = 32
    imitation_coef: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        for name in ("split", "eval_split"):
            if getattr(self, name) not in SPLITS:
                problem = f"must be one of {', '.join(SPLITS)}, got {getattr(self, name)!r}"
                raise ConfigError("ParallelTrainConfig", name, problem)
        if self.algorithm != "reinforce":
            raise ConfigError("ParallelTrainConfig", "algorithm", "the parallel policy trains with reinforce")
        if self.demonstrations > self.pool_size:
            raise ConfigError("ParallelTrainConfig", "demonstrations", f"must be at most pool_size ({self.pool_size})")
        if not self.teacher_seconds > 0:
            raise ConfigError("ParallelTrainConfig", "teacher_seconds", f"must be > 0, got {self.teacher_seconds!r}")
        for name in ("pool_size", "max_stages", "eval_instances", "demo_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError("ParallelTrainConfig", name, f"must be an integer >= 1, got {value!r}")

    @property
    def draws(self) -> int:
        """Instances per update."""
        return self.num_envs // self.samples_per_instance


def default_parallel_config() -> ParallelTrainConfig:
    """The recipe `hps train --kind parallel` uses: 64 generated instances of the split where
    mixing hardware pays, each labelled by the exact solver's best plan within 3 s (a few minutes
    before training on 2 CPU cores), imitation weighted 5 against risk-seeking REINFORCE on 16
    samples an instance."""
    return ParallelTrainConfig(pool_size=64, demonstrations=64, teacher_seconds=3.0, imitation_coef=5.0)


def parallel_agent(config: ParallelTrainConfig, policy, env, mesh, pool, demos=None) -> Agent:
    """The `hps.rl.agent` contract: each update draws config.draws instances of the pool at
    random, each played by samples_per_instance envs; with `demos` (`Demonstrations` on `pool`),
    the extra loss is imitation_coef × their cross-entropy on demo_batch of them."""

    def play(params, pool, index, draw_key, play_key):
        del index
        size = jax.tree.leaves(pool)[0].shape[0]
        chosen = jax.random.randint(draw_key, (config.draws,), 0, size)
        batch = jax.tree.map(lambda x: x[chosen], pool)
        trajectory = rollout(policy, params, env, batch, play_key, samples=config.samples_per_instance)
        return shard_envs(trajectory, mesh)

    def imitation(params, key):
        chosen = jax.random.randint(key, (config.demo_batch,), 0, demos.actions.shape[0])
        loss, agreement = imitation_loss(policy, params, env, pool, jax.tree.map(lambda x: x[chosen], demos))
        return config.imitation_coef * loss, {"imitation": loss, "agreement": agreement}

    return Agent(
        rollout=play,
        replay=lambda params, trajectory: replay(policy, params, env, trajectory),
        extra_loss=None if demos is None else imitation,
        episode_metrics=episode_metrics,
        shard=lambda tree: shard_envs(tree, mesh),
        critic=False,
    )


@dataclass(frozen=True)
class ParallelChunk:
    """`train_chunk(state) -> (state, metrics)`: the jitted `program(state, pool, demos)` on the
    fixed pool (and demonstrations, or None), under float64."""

    program: Any
    pool: Any
    demos: Any = None

    def __call__(self, state: TrainState):
        with jax.enable_x64(True):
            return self.program(state, self.pool, self.demos)


def make_train(config: ParallelTrainConfig, *, devices=None, instances=None) -> ParallelChunk:
    """The chunk program of `config` on `instances` (stacked ParallelInstances; default the
    split's first pool_size)."""
    mesh = env_mesh(devices)
    check_divisible(config.num_envs, mesh, "num_envs")
    policy = ParallelPolicyFunctions(config.policy)
    env = ParallelPlanEnv(config.max_stages)
    problems, default = instance_pool(config.split, 0, config.pool_size)
    instances = default if instances is None else instances
    demos = None
    if config.demonstrations:
        labelled = teacher_plans(config.split, config.demonstrations, config.teacher_seconds)
        demos = make_demonstrations(problems, instances, labelled, env)
    with jax.enable_x64(True):
        pool = jax.device_put(instances, replicated(mesh))
        demos = None if demos is None else jax.device_put(demos, replicated(mesh))

    def chunk(state: TrainState, pool, demos):
        agent = parallel_agent(config, policy, env, mesh, pool, demos)
        update = make_update(agent, config, driver.make_optimizer(config))
        return driver.scan_chunk(update, state, pool, config.updates_per_chunk)

    return ParallelChunk(jax.jit(chunk, out_shardings=replicated(mesh)), pool, demos)


def init_train_state(config: ParallelTrainConfig, *, devices=None) -> TrainState:
    return driver.fresh_state(config, ParallelPolicyFunctions(config.policy), devices=devices)


def config_from_dict(data: dict) -> ParallelTrainConfig:
    """The ParallelTrainConfig of its `dataclasses.asdict` form (a checkpoint's spec)."""
    return ParallelTrainConfig(**dict(data, policy=ParallelPolicySpec.from_dict(data["policy"])))


def heldout_metrics(config: ParallelTrainConfig):
    """params -> {"eval_feasible", "eval_cost_ratio"}: greedy plans of the first eval_instances
    held-out instances, their feasible share and the mean cost of the feasible ones over their
    instance's lower bound (left out where none is feasible)."""
    _, instances = instance_pool(config.eval_split, 0, config.eval_instances)
    policy = ParallelPolicyFunctions(config.policy)
    env = ParallelPlanEnv(config.max_stages)

    @jax.jit
    def greedy(params, instances):
        return rollout(policy, params, env, instances, jax.random.PRNGKey(0), greedy=True)

    def evaluate(params) -> dict:
        with jax.enable_x64(True):
            trajectory = jax.device_get(greedy(params, instances))
        feasible = np.asarray(trajectory.feasible)
        ratio = np.asarray(trajectory.cost_ratio)[feasible]
        found = {"eval_feasible": float(feasible.mean())}
        return found | ({"eval_cost_ratio": float(ratio.mean())} if len(ratio) else {})

    return evaluate


PARALLEL = register_policy_kind(
    PolicyKind(
        name="parallel",
        config_type=ParallelTrainConfig,
        config_from_dict=config_from_dict,
        config_to_dict=dataclasses.asdict,
        init_state=lambda config, **kw: init_train_state(config, **kw),
        make_train=lambda config, **kw: make_train(config, **kw),
        policy=lambda config: ParallelPolicyFunctions(config.policy),
        evaluator=heldout_metrics,
    )
)
