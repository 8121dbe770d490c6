"""The functional environment interface both problems' environments share (gymnax's shape).

    obs, state = env.reset(key, params)
    obs, state, reward, done, info = env.step(key, state, action, params)

State and params are pytrees; params is the instance (a workload and catalogue, or a network and
a collective), so `vmap` over params runs thousands of different instances under one compile.
Static sizes live on the env object. A subclass writes the dynamics only: `reset_env` (the
initial state), `step_env` (one transition) and `observation`; `step` owns auto-reset: where
an episode is done it selects the reset state (a `jnp.where` over the state pytree, never a
Python branch) and observes that. Masked logits use hps.config.limits.MASKED_LOGIT.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def traced_bounds(split, bounds_type):
    """The numbers of an instance split (a frozen dataclass naming the range of instances a
    generator draws) as the jnp scalars of `bounds_type` (a struct dataclass holding a subset
    of its field names), so that one compiled generator serves every split."""
    return bounds_type(**{name: jnp.asarray(getattr(split, name)) for name in bounds_type.__dataclass_fields__})


def select_tree(done, if_done, otherwise):
    """The pytree `if_done` where `done` (a scalar bool), else `otherwise`, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.where(done, a, b), if_done, otherwise)


class Environment:
    """Base of the functional environments: subclasses define reset_env, step_env, observation."""

    def reset_env(self, key, params):
        """The initial state of an episode of instance `params`."""
        raise NotImplementedError

    def step_env(self, key, state, action, params):
        """One transition without reset: (state, reward, done, info)."""
        raise NotImplementedError

    def observation(self, state, params):
        """The fixed-shape observation of `state`."""
        raise NotImplementedError

    def reset(self, key, params):
        """(obs, state) of a fresh episode."""
        state = self.reset_env(key, params)
        return self.observation(state, params), state

    def auto_reset(self, key, done, state, params):
        """`state`, or the reset state where the episode is done."""
        return select_tree(done, self.reset_env(key, params), state)

    def step(self, key, state, action, params):
        """(obs, state, reward, done, info); the returned state is already reset where done,
        and reward and info belong to the transition that ended the episode."""
        state, reward, done, info = self.step_env(key, state, action, params)
        state = self.auto_reset(key, done, state, params)
        return self.observation(state, params), state, reward, done, info
