"""The parallel-plan policy: one small network scores every action slot of a decision.

Each slot's candidate features (`hps.placement.env.parallel_env.ParallelObs.candidates`) are
joined with the decision's context (its phase, the stage, the work placed so far, the slowest
stage against the time budget, b and the micro-batch count) and go through a two-layer MLP to a
logit; masked slots get MASKED_LOGIT. The value head reads the mean of the allowed slots' hidden
codes with the context. No parameter's shape depends on the instance's sizes, so one set of
parameters plans any workload and catalogue, and permuting the catalogue permutes the type
decision's probabilities with it.

Flax NNX builds the module; `ParallelPolicyFunctions` exposes pure functions of a plain
parameter dict (`nnx.to_pure_dict`), merged back inside each call, so parameters flow through
jit, optax and orbax as ordinary pytrees. Shapes are per decision (unbatched).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp
from flax import nnx

from hps.config.limits import MASKED_LOGIT
from hps.placement.env.parallel_env import N_CONTEXT, N_FEATURES, ParallelObs
from hps.rl.modules import module_graphdef


@dataclass(frozen=True)
class ParallelPolicySpec:
    """Architecture: the MLP's hidden width. JSON-serialisable via `to_dict`."""

    hidden: int = 32

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ParallelPolicySpec:
        return cls(**data)


class ParallelPolicy(nnx.Module):
    """The NNX module (see the module docstring)."""

    def __init__(self, spec: ParallelPolicySpec, *, rngs: nnx.Rngs):
        width = spec.hidden
        self.joint = nnx.Linear(N_FEATURES + N_CONTEXT, width, rngs=rngs)
        self.context = nnx.Linear(N_CONTEXT, width, rngs=rngs)
        self.hidden = nnx.Linear(width, width, rngs=rngs)
        self.logit = nnx.Linear(width, 1, rngs=rngs)
        self.value_hidden = nnx.Linear(width + N_CONTEXT, width, rngs=rngs)
        self.value = nnx.Linear(width, 1, rngs=rngs)

    def __call__(self, obs: ParallelObs):
        """(logits (A,), value ()) of one decision."""
        slots = obs.candidates.shape[0]
        context = jnp.broadcast_to(obs.context, (slots, N_CONTEXT))
        code = jnp.tanh(self.joint(jnp.concatenate([obs.candidates, context], axis=1)))
        code = jnp.tanh(self.hidden(code * jnp.tanh(self.context(obs.context))[None, :] + code))
        logits = jnp.where(obs.mask, self.logit(code)[:, 0], MASKED_LOGIT)
        weights = obs.mask.astype(code.dtype)[:, None]
        pooled = jnp.sum(code * weights, axis=0) / jnp.maximum(jnp.sum(weights), 1.0)
        value = self.value(jnp.tanh(self.value_hidden(jnp.concatenate([pooled, obs.context]))))[0]
        return logits, value


class ParallelPolicyFunctions:
    """Pure functions of (params, …) for one ParallelPolicySpec; params is a plain nested dict."""

    def __init__(self, spec: ParallelPolicySpec = ParallelPolicySpec()):
        self.spec = spec
        self.graphdef = module_graphdef(ParallelPolicy, spec)

    def __eq__(self, other) -> bool:  # equal specs make equal functions (one compile under jit)
        return isinstance(other, ParallelPolicyFunctions) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash((ParallelPolicyFunctions, self.spec))

    def init(self, key) -> dict:
        """Fresh parameters (a plain dict of float32 arrays) from a PRNG key."""
        return nnx.to_pure_dict(nnx.state(ParallelPolicy(self.spec, rngs=nnx.Rngs(params=key))))

    def apply(self, params, obs: ParallelObs):
        """(logits (A,), value ()) of the decision `obs` asks for."""
        return nnx.merge(self.graphdef, params)(obs)
