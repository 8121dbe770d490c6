"""The agent contract of hps.rl (docs/environments.md, "Training"): REINFORCE and PPO written once,
run here on a toy agent of neither problem (a bandit played through an `Environment`'s step)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from hps.rl import driver
from hps.rl.agent import Agent
from hps.rl.algorithms import make_update
from hps.rl.driver import BaseTrainConfig
from hps.rl.env import Environment

ARMS = jnp.asarray([0.0, 0.2, 1.0, 0.5])  # the payoff of each arm; arm 2 is best
STEPS = 3  # pulls per episode; the return is their sum, paid at the last


class ArmsEnv(Environment):
    """STEPS pulls of one of len(params) arms; state (pulls so far, their total payoff)."""

    def reset_env(self, key, params):
        return (jnp.int32(0), jnp.float32(0.0))

    def step_env(self, key, state, action, params):
        pulls, total = state[0] + 1, state[1] + params[action]
        done = pulls >= STEPS
        return (pulls, total), jnp.where(done, total, 0.0), done, {}

    def observation(self, state, params):
        return state[0]


@struct.dataclass
class Played:
    actions: jnp.ndarray  # (N, S) int32
    log_probs: jnp.ndarray  # (N, S)
    valid: jnp.ndarray  # (N, S) bool
    values: jnp.ndarray  # (N, S)
    returns: jnp.ndarray  # (N,)


class Policy:
    """A softmax over the arms (one logit each) and a value per step."""

    def init(self, key):
        del key
        return {"logits": jnp.zeros(len(ARMS)), "value": jnp.zeros(STEPS)}


def toy_agent(num_envs: int, *, critic: bool = True, extra: bool = False) -> Agent:
    env = ArmsEnv()
    step = jax.vmap(env.step, in_axes=(None, 0, 0, None))

    def rollout(params, context, index, draw_key, play_key):
        _, state = env.reset(None, context)
        state = jax.tree.map(lambda x: jnp.broadcast_to(x, (num_envs,)), state)

        def one(state, key):
            action = jax.random.categorical(key, jnp.broadcast_to(params["logits"], (num_envs, len(ARMS))))
            _, state, reward, done, _ = step(None, state, action, context)
            return state, (action, reward)

        _, (actions, rewards) = jax.lax.scan(one, state, jax.random.split(play_key, STEPS))
        log_p = jax.nn.log_softmax(params["logits"])
        return Played(
            actions=actions.T,
            log_probs=log_p[actions.T],
            valid=jnp.ones((num_envs, STEPS), bool),
            values=jnp.broadcast_to(params["value"], (num_envs, STEPS)) if critic else jnp.zeros((num_envs, STEPS)),
            returns=rewards[-1],
        )

    def replay(params, trajectory):
        log_p = jax.nn.log_softmax(params["logits"])
        entropy = -jnp.sum(jnp.exp(log_p) * log_p)
        n = trajectory.actions.shape[0]
        values = jnp.broadcast_to(params["value"], (n, STEPS)) if critic else jnp.zeros((n, STEPS))
        return log_p[trajectory.actions], jnp.full((n, STEPS), entropy), values

    def prefer_arm_one(params, key):  # an extra term pulling towards arm 1
        loss = -jax.nn.log_softmax(params["logits"])[1]
        return 0.5 * loss, {"extra": loss}

    return Agent(
        rollout=rollout,
        replay=replay,
        extra_loss=prefer_arm_one if extra else None,
        episode_metrics=lambda trajectory: {"return": jnp.mean(trajectory.returns)},
        critic=critic,
    )


def train(config: BaseTrainConfig, agent: Agent, updates: int = 30):
    state = driver.fresh_state(config, Policy(), devices=jax.devices()[:1])
    update = make_update(agent, config, driver.make_optimizer(config))
    chunk = jax.jit(lambda state: driver.scan_chunk(update, state, ARMS, updates))
    state, first = chunk(state)
    state, last = chunk(state)
    return state, jax.device_get(first), jax.device_get(last)


@pytest.mark.parametrize(
    "algorithm, critic, samples",
    [("reinforce", True, 1), ("reinforce", True, 4), ("ppo", True, 1), ("ppo", False, 4), ("ppo", False, 1)],
)
def test_both_algorithms_learn_the_best_arm_through_the_contract(algorithm, critic, samples):
    config = BaseTrainConfig(
        num_envs=64, samples_per_instance=samples, algorithm=algorithm, learning_rate=0.1, ppo_minibatches=2
    )
    state, first, last = train(config, toy_agent(64, critic=critic))
    best = float(jax.nn.softmax(state.params["logits"])[2])
    assert int(state.step) == 60 and best > 0.9, (best, first, last)
    uniform = STEPS * float(jnp.mean(ARMS))  # the initial policy's expected return, 1.275
    assert first["return"] > uniform and last["return"] > 2.7, (first, last)  # the optimum is 3
    assert all(np.isfinite(v) for v in [*first.values(), *last.values()])
    if algorithm == "ppo":
        assert {"approx_kl", "clip_fraction", "value_loss"} <= set(last)
        if critic:  # the value head learns the return (no discount: the same at every step)
            np.testing.assert_allclose(state.params["value"], last["return"], atol=0.3)
        else:
            assert not np.any(np.asarray(state.params["value"]))  # no critic: no value gradient
    else:
        assert "baseline" in last and last["baseline"] > 2.5


def test_the_agents_extra_loss_joins_the_reinforce_loss_weighed_by_policy_gradient_coef():
    config = BaseTrainConfig(num_envs=64, learning_rate=0.1, policy_gradient_coef=0.0)
    state, first, last = train(config, toy_agent(64, extra=True), updates=10)
    probs = np.asarray(jax.nn.softmax(state.params["logits"]))
    assert probs[1] > 0.9 and last["extra"] < first["extra"], probs  # the extra term alone trains


def test_the_agents_extra_loss_joins_the_ppo_loss():
    config = BaseTrainConfig(num_envs=64, algorithm="ppo", learning_rate=0.1, ppo_minibatches=2)
    plain, _, _ = train(config, toy_agent(64), updates=5)
    pulled, first, last = train(config, toy_agent(64, extra=True), updates=5)
    prob_one = [float(jax.nn.softmax(state.params["logits"])[1]) for state in (plain, pulled)]
    assert "extra" in last and prob_one[1] > prob_one[0] + 0.05, prob_one
