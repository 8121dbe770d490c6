"""Training placement policies: `make_train(config)` → `train_chunk(state)`, a pure, jitted
chunk program fed the chunk's pool of instances.

A chunk draws a pool of instances (fresh from the generator's own jitted program, or a fixed
pool given by the caller), then scans `updates_per_chunk` updates of REINFORCE or PPO
(`hps.rl.algorithms`, written once for both agents); the placement agent (`placement_agent`, the
`hps.rl.agent` contract) supplies the rollout (each update draws `num_envs` instances from the
pool and plays one episode per env, `rollout`), its replay and the imitation term. Metrics are averaged
inside the scan. The env batch is sharded over a 1-D device mesh ("envs",); parameters stay
replicated.

`run_training` is the thin Python driver between chunks: it calls `on_chunk(index, state,
metrics)` (progress bars, checkpoints and evaluation plug in there) and prints nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from hps.errors import ConfigError
from hps.placement.agent.demonstrations import TEACHERS, imitation_loss, make_demonstrations
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.agent.rollout import replay, rollout
from hps.placement.env.env import PlacementEnv
from hps.placement.env.generator import TRAIN, InstanceSplit, generate_instances
from hps.rl import driver
from hps.rl.agent import Agent
from hps.rl.algorithms import make_update
from hps.rl.driver import BaseTrainConfig, TrainState
from hps.rl.policy_kind import PolicyKind, register_policy_kind
from hps.rl.sharding import check_divisible, env_mesh, env_shardings, put_alike, replicated, shard_envs


@dataclass(frozen=True)
class TrainConfig(BaseTrainConfig):
    """Everything a training run depends on (hashable; JSON-able via `dataclasses.asdict`); the
    fields both trainers have come from `hps.rl.driver.BaseTrainConfig` (the algorithm and
    its options among them).

    pool_size: instances generated per chunk; each update draws num_envs / samples_per_instance
    of them at random (samples_per_instance consecutive envs share an instance). 0: every update
    plays fresh instances, each generated once, when a chunk's updates need at most num_envs of
    them; otherwise a pool of num_envs. learning_rate: Adam's, after
    clipping gradients to global norm max_grad_norm. REINFORCE: baseline_decay of the
    moving-average baseline, normalize_advantages (divide by the batch return std);
    samples_per_instance > 1 replaces the moving average by the mean of the other samples of
    the same instance (leave-one-out) and normalises per instance; top_fraction < 1 makes it
    risk-seeking (only each instance's best samples learn; see `reinforce.advantages`).
    PPO: gamma, gae_lambda, ppo_epochs, ppo_minibatches, clip_eps, value_coef (each PPO env
    plays its own copy of its instance). Both: entropy_coef. Imitation (REINFORCE only): demonstrations > 0
    labels that many instances of the split with `teacher` ("exact": the exact solver's optimum;
    "climb": the stage-move hill climb; `hps.placement.agent.demonstrations`) before training;
    each update then adds imitation_coef × the cross-entropy of the teacher's plans on
    demo_batch of them to the loss, and policy_gradient_coef (1; 0 for imitation alone)
    weighs the REINFORCE loss."""

    policy: PolicySpec = field(default_factory=PolicySpec)
    split: InstanceSplit = TRAIN
    pool_size: int = 0
    demonstrations: int = 0
    demo_batch: int = 256
    imitation_coef: float = 1.0
    teacher: str = "exact"

    def __post_init__(self):
        super().__post_init__()
        if self.teacher not in TEACHERS:
            raise ConfigError("TrainConfig", "teacher", f"must be one of {', '.join(TEACHERS)}, got {self.teacher!r}")
        if not self.demonstrations and not self.policy_gradient_coef > 0:
            raise ConfigError("TrainConfig", "policy_gradient_coef", "must be > 0 without demonstrations")
        if self.demonstrations and self.algorithm != "reinforce":
            raise ConfigError("TrainConfig", "demonstrations", "imitation is implemented for reinforce only")

    @property
    def draws(self) -> int:
        """Instances per update."""
        return self.num_envs // self.samples_per_instance

    @property
    def fresh_instances(self) -> bool:
        """Whether each update plays instances of its own (pool_size 0 and few enough draws)."""
        return self.pool_size == 0 and self.draws * self.updates_per_chunk <= self.num_envs

    @property
    def instances_per_chunk(self) -> int:
        if self.fresh_instances:
            return self.draws * self.updates_per_chunk
        return self.pool_size or self.num_envs

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


DEMO_SALT = 7919  # folded into the seed for the demonstration pool's key


def default_placement_config() -> TrainConfig:
    """The recipe `hps train` uses for the general placement policy: a hidden width of 32
    (several times the training throughput of 64 on CPU), 16 samples of each instance per update
    with per-instance normalised advantages, the risk-seeking objective (only each instance's
    best quarter of samples learn), which targets best-of-K planning (the policy is used by
    sampling 64 plans and keeping the best), and imitation of the search teacher on 4,096
    labelled instances, weighted 5 against the policy gradient: imitation is what brings the
    sampled plans near the optimum (docs/results.md, "Learned policies")."""
    return TrainConfig(
        policy=PolicySpec(hidden=32),
        samples_per_instance=16,
        top_fraction=0.25,
        entropy_coef=0.01,
        demonstrations=4096,
        imitation_coef=5.0,
    )


def init_train_state(config: TrainConfig, *, devices=None) -> TrainState:
    """Fresh state of the placement policy from config.seed, replicated over the device mesh."""
    return driver.fresh_state(config, PolicyFunctions(config.policy), devices=devices)


def episode_metrics(trajectory) -> dict:
    """The episode metrics of a placement trajectory (either model's: `feasible`, `cost_ratio`
    and `episode_reward` (N,)): mean reward, feasible share, mean cost ratio of the feasible."""
    feasible = trajectory.feasible
    ratio = jnp.where(feasible, trajectory.cost_ratio, 0.0)
    return {
        "reward": jnp.mean(trajectory.episode_reward),
        "feasible": jnp.mean(feasible.astype(jnp.float32)),
        "cost_ratio": jnp.sum(ratio) / jnp.maximum(jnp.sum(feasible), 1),
    }


def placement_agent(config: TrainConfig, policy, env, mesh, num_steps: int, demos=None, *, fixed_pool=False) -> Agent:
    """The placement agent of the `hps.rl.agent` contract. Its rollout draws config.draws
    instances of the chunk's pool (the update's own slice of fresh instances, or at random from
    a fixed or shared pool), each played by samples_per_instance envs (PPO: each env its own
    copy, so minibatches can split envs) for num_steps decisions. Its extra loss, with
    demonstrations `demos`, is imitation_coef × the cross-entropy of the teacher's plans on
    demo_batch of them drawn at random (aux: imitation, agreement)."""

    def play(params, pool, index, draw_key, play_key):
        pool_size = jax.tree.leaves(pool)[0].shape[0]
        draws = config.draws
        if not fixed_pool and config.fresh_instances:
            chosen = index * draws + jnp.arange(draws)
        else:
            chosen = jax.random.randint(draw_key, (draws,), 0, pool_size)
        samples = config.samples_per_instance
        if config.algorithm == "ppo":  # PPO's minibatches split envs, so each env keeps its own copy
            chosen, samples = jnp.repeat(chosen, samples), 1
        batch = shard_envs(jax.tree.map(lambda x: x[chosen], pool), mesh)
        trajectory = rollout(policy, params, env, batch, play_key, num_steps, samples=samples)
        return shard_envs(trajectory, mesh)

    def imitation(params, key):
        index = jax.random.randint(key, (config.demo_batch,), 0, config.demonstrations)
        demo_batch = shard_envs(jax.tree.map(lambda x: x[index], demos), mesh)
        loss, agreement = imitation_loss(params, policy, demo_batch)
        return config.imitation_coef * loss, {"imitation": loss, "agreement": agreement}

    return Agent(
        rollout=play,
        replay=lambda params, trajectory: replay(policy, params, trajectory),
        extra_loss=None if demos is None else imitation,
        episode_metrics=episode_metrics,
        shard=lambda tree: shard_envs(tree, mesh),
    )


@dataclass(frozen=True)
class TrainChunk:
    """`train_chunk(state) -> (state, metrics)`: draw_pool(state) -> (state, pool) picks the
    chunk's instances (fresh ones from the generator's own jitted program, or the fixed pool),
    then `program(state, pool)`, one jitted program, runs the chunk's updates. The pool is an
    argument, not part of the program: every training config of one pool size and size bucket
    shares the generator's compile (and the persistent cache serves it across processes), and a
    fixed pool is never folded into the program as a constant."""

    program: Any
    draw_pool: Callable

    def __call__(self, state: TrainState):
        return self.program(*self.draw_pool(state))


def make_train(config: TrainConfig, *, devices=None, instances=None) -> TrainChunk:
    """The `train_chunk(state) -> (state, metrics)` of `config` (a `TrainChunk`).

    devices: the mesh's devices (default all). instances: an optional fixed pool (leading axis
    P, a multiple of the device count) used instead of generating `instances_per_chunk` fresh
    instances of config.split every chunk."""
    mesh = env_mesh(devices)
    check_divisible(config.num_envs, mesh, "num_envs")
    policy = PolicyFunctions(config.policy)
    env = PlacementEnv()
    tx = driver.make_optimizer(config)
    if instances is None:
        num_steps = config.split.max_layers
        check_divisible(config.instances_per_chunk, mesh, "pool size")
    else:
        num_steps = int(jnp.max(jnp.sum(instances.placement.layer_mask, axis=-1)))
        check_divisible(jax.tree.leaves(instances)[0].shape[0], mesh, "instance pool size")
        instances = jax.device_put(instances, env_shardings(instances, mesh))
    demos = None
    if config.demonstrations:
        check_divisible(config.demo_batch, mesh, "demo_batch")
        demo_key = jax.random.fold_in(jax.random.PRNGKey(config.seed), DEMO_SALT)
        demos = make_demonstrations(demo_key, config.demonstrations, config.split, num_steps, config.teacher)
    agent = placement_agent(config, policy, env, mesh, num_steps, demos, fixed_pool=instances is not None)
    update = make_update(agent, config, tx)

    def chunk(state: TrainState, pool):
        return driver.scan_chunk(update, state, shard_envs(pool, mesh), config.updates_per_chunk)

    program = jax.jit(chunk, out_shardings=replicated(mesh))
    if instances is not None:
        return TrainChunk(program, lambda state: (state, instances))

    def draw_pool(state: TrainState):
        key, pool_key = jax.random.split(state.key)
        pool = generate_instances(pool_key, config.instances_per_chunk, config.split)
        return state.replace(key=key), put_alike(pool, env_shardings(pool, mesh))

    return TrainChunk(program, draw_pool)


def run_training(config: TrainConfig, *, on_chunk=None, devices=None, instances=None, state=None, stop=None):
    """Train up to config.num_chunks chunks from `state` (default fresh); see `run_chunks`."""
    train_chunk = make_train(config, devices=devices, instances=instances)
    state = init_train_state(config, devices=devices) if state is None else state
    return driver.run_chunks(
        train_chunk, state, config.updates_per_chunk, config.num_chunks, on_chunk=on_chunk, stop=stop
    )


def config_from_dict(data: dict) -> TrainConfig:
    """The TrainConfig of its `dataclasses.asdict` form (a checkpoint's spec)."""
    data = dict(data, policy=PolicySpec.from_dict(data["policy"]), split=InstanceSplit(**data["split"]))
    return TrainConfig(**data)


def heldout_metrics(config: TrainConfig):
    """The learning curve's evaluator (params -> {"eval_…": float}) on held-out instances."""
    from hps.placement.agent.evaluation import (
        heldout_evaluator,  # evaluation needs the planner and the searches
    )

    return heldout_evaluator(config)


PLACEMENT = register_policy_kind(
    PolicyKind(
        name="placement",
        config_type=TrainConfig,
        config_from_dict=config_from_dict,
        config_to_dict=dataclasses.asdict,
        init_state=lambda config, **kw: init_train_state(config, **kw),
        make_train=lambda config, **kw: make_train(config, **kw),  # late-bound: tests patch make_train
        policy=lambda config: PolicyFunctions(config.policy),
        evaluator=heldout_metrics,
    )
)
