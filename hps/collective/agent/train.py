"""Training collective policies: `make_collective_train(config)` → a pure, jitted
`train_chunk(state) -> (state, metrics)`, REINFORCE or PPO (`hps.rl.algorithms`, the same code
as the placement agent's) over the collective agent (`collective_agent`, the `hps.rl.agent`
contract).

An update draws num_envs / samples_per_instance fresh instances from the generator
(`hps.collective.env.generator`) and plays samples_per_instance episodes of each
(`collective_rollout`: one `lax.scan` over chunks of the env's `step`, vmapped over envs; the
simulator runs once per finished episode). REINFORCE takes an optax step (gradient clipping +
Adam) on
    −mean_envs[ adv · Σ_chunks log π(a | s) + entropy_coef · Σ_chunks entropy ].
The return is the log utilization, log(T_ideal / T) = −log(−reward), so every instance counts by
its *relative* gain (raw rewards span 1 to 1000 between bandwidth- and latency-bound
instances): with samples_per_instance K > 1 the advantage is the episode's return minus the mean
of the instance's other K − 1 episodes (leave-one-out), with K = 1 minus a moving average; then
divided by its batch standard deviation when normalize_advantages (advantage_scale "batch").
PPO: the policy has no value head, so its advantages are those episode advantages at every
decision of the episode (`hps.rl.ppo.advantage_targets`). The chunk counts of a batch are
stratified (`stratified_chunks`), so its number of real decisions is known when tracing and
the replay scores exactly those, packed (about a third of the padded (envs × max_chunks)
grid). A chunk scans `updates_per_chunk` updates; metrics are averaged inside the scan. The env
batch is sharded over a 1-D device mesh ("envs",); parameters stay replicated.

The train state is `hps.rl.driver.TrainState` (params, opt_state, baseline, key, step): plain
pytrees for orbax. `run_collective_training` is the thin Python driver (prints nothing).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from hps.collective.agent.policy import CollectivePolicyFunctions, CollectivePolicySpec
from hps.collective.agent.rollout import collective_rollout, replay
from hps.collective.env.env import CollectiveEnv
from hps.collective.env.generator import (
    HELDOUT_NETWORKS,
    TRAIN_NETWORKS,
    NetworkSplit,
    generate_collectives,
    stratified_chunks,
)
from hps.errors import ConfigError
from hps.rl import driver
from hps.rl.agent import Agent
from hps.rl.algorithms import make_update
from hps.rl.driver import BaseTrainConfig, TrainState
from hps.rl.policy_kind import PolicyKind, register_policy_kind
from hps.rl.sharding import check_divisible, env_mesh, replicated, shard_envs


@dataclass(frozen=True)
class CollectiveTrainConfig(BaseTrainConfig):
    """Everything a training run depends on (hashable; JSON-able via `to_dict`): the fields of
    `hps.rl.driver.BaseTrainConfig` (the algorithm and its options among them), with fewer envs,
    8 samples per instance, less entropy bonus and advantages scaled by their batch standard
    deviation by default, and these. max_chunks and scf configure the env (the padded chunk count
    and the intra-dimension discipline of the reward's simulation); the split's max_chunks must
    not exceed it."""

    num_envs: int = 512
    samples_per_instance: int = 8
    entropy_coef: float = 0.003
    advantage_scale: str = "batch"
    policy: CollectivePolicySpec = field(default_factory=CollectivePolicySpec)
    split: NetworkSplit = TRAIN_NETWORKS
    max_chunks: int = 64
    scf: bool = True

    def __post_init__(self):
        super().__post_init__()
        if not self.policy_gradient_coef > 0:
            raise ConfigError("CollectiveTrainConfig", "policy_gradient_coef", "must be > 0 (no other loss)")
        if self.split.max_chunks > self.max_chunks:
            raise ConfigError(
                "CollectiveTrainConfig",
                "max_chunks",
                f"must be at least split {self.split.name!r}'s {self.split.max_chunks} chunks, got {self.max_chunks}",
            )

    def env(self) -> CollectiveEnv:
        return CollectiveEnv(self.max_chunks, self.scf)

    def to_dict(self) -> dict:
        """JSON-able: the policy spec (with kind and format version), the split and the rest."""
        return {**dataclasses.asdict(self), "policy": self.policy.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> CollectiveTrainConfig:
        data = dict(data)
        policy = CollectivePolicySpec.from_dict(data.pop("policy"))
        return cls(policy=policy, split=NetworkSplit(**data.pop("split")), **data)


def checkpoint_spec(config: CollectiveTrainConfig) -> dict:
    """The JSON policy spec a checkpoint carries: the policy's architecture (kind, format
    version, hidden, themis_prior), the env it was trained for (max_chunks, scf) and the whole
    training config. `policy_from_spec` rebuilds the policy from it."""
    return {**config.policy.to_dict(), "max_chunks": config.max_chunks, "scf": config.scf, "training": config.to_dict()}


def policy_from_spec(spec: dict) -> CollectivePolicyFunctions:
    """The CollectivePolicyFunctions of a `checkpoint_spec` dict (its params template is
    `.init(jax.random.PRNGKey(0))`)."""
    fields = {name: spec[name] for name in ("kind", "format_version", "hidden", "themis_prior") if name in spec}
    return CollectivePolicyFunctions(CollectivePolicySpec.from_dict(fields))


def collective_agent(config: CollectiveTrainConfig, policy, env, mesh) -> Agent:
    """The collective agent of the `hps.rl.agent` contract: its rollout generates
    num_envs / samples_per_instance fresh instances (stratified chunk counts) from draw_key,
    each played by samples_per_instance consecutive envs for split.max_chunks steps; its replay
    scores the valid decisions packed (their number is fixed by the stratification); no critic,
    no extra loss. Episode metrics: reward, utilization, log_utilization (means)."""
    k = config.samples_per_instance
    draws = config.num_envs // k
    num_steps = config.split.max_chunks
    capacity = k * int(stratified_chunks(draws, config.split).sum())  # decisions per update

    def play(params, _context, _index, draw_key, play_key):
        drawn = generate_collectives(draw_key, draws, config.split, stratified=True)
        batch = shard_envs(jax.tree.map(lambda x: jnp.repeat(x, k, axis=0), drawn), mesh)
        return shard_envs(collective_rollout(policy, params, env, batch, play_key, num_steps), mesh)

    def episode_metrics(trajectory) -> dict:
        return {
            "reward": jnp.mean(trajectory.reward),
            "utilization": jnp.mean(-1.0 / trajectory.reward),
            "log_utilization": jnp.mean(trajectory.returns),
        }

    return Agent(
        rollout=play,
        replay=lambda params, trajectory: replay(policy, params, trajectory, capacity),
        episode_metrics=episode_metrics,
        shard=lambda tree: shard_envs(tree, mesh),
        critic=False,
    )


def init_collective_state(config: CollectiveTrainConfig, *, devices=None) -> TrainState:
    """Fresh state from config.seed, replicated over the device mesh."""
    return driver.fresh_state(config, CollectivePolicyFunctions(config.policy), devices=devices)


def make_collective_train(config: CollectiveTrainConfig, *, devices=None, compiler_options=None):
    """The jitted `train_chunk(state) -> (state, metrics)` of `config`. metrics (chunk means):
    reward, utilization, log_utilization, loss, grad_norm, entropy and REINFORCE's baseline or
    PPO's value_loss, approx_kl, clip_fraction. compiler_options
    go to `jax.jit` (e.g. {"xla_backend_optimization_level": 0} compiles faster and runs slower:
    worth it for short runs and tests)."""
    mesh = env_mesh(devices)
    check_divisible(config.num_envs, mesh, "num_envs")
    policy = CollectivePolicyFunctions(config.policy)
    agent = collective_agent(config, policy, config.env(), mesh)
    update = make_update(agent, config, driver.make_optimizer(config))

    def train_chunk(state: TrainState):
        return driver.scan_chunk(update, state, None, config.updates_per_chunk)

    return jax.jit(train_chunk, out_shardings=replicated(mesh), compiler_options=compiler_options)


def run_collective_training(
    config: CollectiveTrainConfig, *, on_chunk=None, devices=None, state=None, compiler_options=None, stop=None
):
    """Train up to config.num_chunks chunks from `state` (default: fresh); see
    `hps.rl.driver.run_chunks` (resume, on_chunk, stop, history)."""
    train_chunk = make_collective_train(config, devices=devices, compiler_options=compiler_options)
    state = init_collective_state(config, devices=devices) if state is None else state
    return driver.run_chunks(
        train_chunk, state, config.updates_per_chunk, config.num_chunks, on_chunk=on_chunk, stop=stop
    )


def heldout_metrics(config: CollectiveTrainConfig, count: int = 128):
    """Greedy decoding on `count` held-out networks: mean utilization, learned and Themis."""
    from hps.collective.agent.evaluation import (
        evaluate_instances,  # evaluation imports this module
    )

    instances = generate_collectives(jax.random.PRNGKey(2024), count, HELDOUT_NETWORKS)
    policy, env = CollectivePolicyFunctions(config.policy), config.env()

    def evaluate(params):
        mean = evaluate_instances(policy, params, env, instances, fixed=False)["mean"]
        return {"eval_utilization": mean["learned"], "eval_themis_utilization": mean["themis"]}

    return evaluate


COLLECTIVE = register_policy_kind(
    PolicyKind(
        name="collective",
        config_type=CollectiveTrainConfig,
        config_from_dict=CollectiveTrainConfig.from_dict,
        config_to_dict=lambda config: config.to_dict(),
        init_state=lambda config, **kw: init_collective_state(config, **kw),
        make_train=lambda config, **kw: make_collective_train(config, **kw),
        policy=lambda config: CollectivePolicyFunctions(config.policy),
        evaluator=heldout_metrics,
    )
)
