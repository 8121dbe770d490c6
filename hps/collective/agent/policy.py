"""The collective policy: a distribution over the chunk's permutation of the dimensions.

Each dimension is embedded from its features (size, bandwidth, latency, algorithm, current load
and busy time) and the episode's features, then mixed with the mean over the active dimensions
(a set encoding). Each candidate permutation k is scored from the features of its dimensions
*in its order*: position j of k adds the embedding of dimension π_k(j) and what this chunk would
do there (`collective_features.candidate_features`: the bandwidth time it adds, the loads after,
the position); the sum over the active positions, with k's own features (loads after, whether
it is Themis's choice) and the episode's, goes through an MLP to one logit. A learned weight on
"is Themis's choice", initialised to `themis_prior`, lets training start near Themis.

Dimensions are inputs, never output slots: relabelling the network's dimensions relabels the
permutations with them and leaves every probability in place (except through Themis's own
tie-breaking by index). Padded dimensions are masked out of the sums; permutations outside the
env's action mask get the large finite negative MASKED_LOGIT. The policy has no recurrent state:
the loads in the observation carry everything earlier chunks did (autoregressive over chunks).

Flax NNX builds the module; `CollectivePolicyFunctions` exposes pure functions of a plain
parameter dict (`nnx.to_pure_dict`), so parameters flow through jit, optax and orbax as plain
pytrees. Shapes are per env (unbatched).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx

from hps.collective.env.features import (
    N_DIM_FEATURES,
    N_GLOBAL_FEATURES,
    N_PERM_FEATURES,
    N_STEP_FEATURES,
    permutations,
)
from hps.config.limits import MASKED_LOGIT
from hps.rl.reinforce import masked_mean

SPEC_FORMAT_VERSION = 1  # of the policy spec (`to_dict`); checkpoints have their own (hps.rl.checkpoint)


@dataclass(frozen=True)
class CollectivePolicySpec:
    """Architecture: hidden width H and the initial logit bonus of Themis's choice.
    JSON-serialisable via `to_dict` (with kind and format version)."""

    hidden: int = 64
    themis_prior: float = 2.0

    def to_dict(self) -> dict:
        return {"kind": "collective", "format_version": SPEC_FORMAT_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> CollectivePolicySpec:
        data = dict(data)
        kind, version = data.pop("kind", "collective"), data.pop("format_version", SPEC_FORMAT_VERSION)
        if kind != "collective" or version != SPEC_FORMAT_VERSION:
            raise ValueError(f"not a collective policy spec of format {SPEC_FORMAT_VERSION}: {kind!r} v{version}")
        return cls(**data)


class CollectivePolicy(nnx.Module):
    """The NNX module (see the module docstring)."""

    def __init__(self, spec: CollectivePolicySpec, *, rngs: nnx.Rngs):
        h = spec.hidden
        n_dims = permutations().shape[1]
        linear = lambda i, o, bias=True: nnx.Linear(i, o, use_bias=bias, rngs=rngs)  # noqa: E731
        self.dim_in = linear(N_DIM_FEATURES + N_GLOBAL_FEATURES, h)
        self.dim_mix = linear(h, h)
        self.position_key = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (n_dims, h, h)))
        self.step_in = linear(n_dims * N_STEP_FEATURES, h, bias=False)
        self.perm_in = linear(N_PERM_FEATURES + N_GLOBAL_FEATURES, h)
        self.perm_hidden = linear(h, h)
        self.out = linear(h, 1, bias=False)  # a shared bias would not change the softmax
        self.themis_weight = nnx.Param(jnp.asarray(spec.themis_prior, jnp.float32))

    def __call__(self, obs):
        """Logits (K,) over PERMUTATIONS for one observation (a CollectiveObs)."""
        perms = permutations()
        n_perms, n_dims = perms.shape
        glob = obs.global_features
        tiled = lambda n: jnp.broadcast_to(glob, (n, glob.shape[0]))  # noqa: E731
        dims = jax.nn.relu(self.dim_in(jnp.concatenate([obs.dim_features, tiled(n_dims)], -1)))
        dims = jax.nn.relu(dims + self.dim_mix(masked_mean(dims, obs.dim_mask)))
        keys = jnp.einsum("dh,jhg->jdg", dims, self.position_key[...])  # (position, dimension, H)
        placed = (perms[..., None] == jnp.arange(n_dims)) & obs.dim_mask  # (K, position, dimension)
        ordered = jnp.einsum("kjd,jdh->kh", placed.astype(keys.dtype), keys)  # Σ over active positions
        steps = self.step_in(obs.step_features.reshape(n_perms, -1))
        perm = self.perm_in(jnp.concatenate([obs.perm_features, tiled(n_perms)], -1))
        hidden = jax.nn.relu(ordered + steps + perm)
        hidden = hidden + jax.nn.relu(self.perm_hidden(hidden))
        themis = jnp.arange(n_perms) == obs.themis_action
        logits = self.out(hidden)[:, 0] + jnp.where(themis, self.themis_weight[...], 0.0)
        return jnp.where(obs.action_mask, logits, MASKED_LOGIT)


class CollectivePolicyFunctions:
    """Pure functions of (params, …) for one CollectivePolicySpec; params is a plain nested dict."""

    def __init__(self, spec: CollectivePolicySpec = CollectivePolicySpec()):
        self.spec = spec
        self.graphdef, _ = nnx.split(CollectivePolicy(spec, rngs=nnx.Rngs(0)))

    def __eq__(self, other):  # equal specs share compiled functions (jit static arguments, caches)
        return type(other) is type(self) and other.spec == self.spec

    def __hash__(self):
        return hash((type(self).__name__, self.spec))

    def init(self, key) -> dict:
        """Fresh parameters (a plain dict of arrays) from a PRNG key."""
        return nnx.to_pure_dict(nnx.state(CollectivePolicy(self.spec, rngs=nnx.Rngs(params=key))))

    def model(self, params) -> CollectivePolicy:
        return nnx.merge(self.graphdef, params)

    def apply(self, params, obs):
        """Logits (K,) of one observation."""
        return self.model(params)(obs)
