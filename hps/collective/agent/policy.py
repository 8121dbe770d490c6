"""The collective policy: a distribution over each chunk's order of the dimensions, built one
position at a time (a pointer decoder), for networks of any width up to MAX_DIMS.

Each dimension is embedded from its features (size, bandwidth, latency, algorithm, current load
and busy time) and the episode's features, then mixed with the mean over the active dimensions
(a set encoding). Position j of the order picks one of the open active dimensions: each
candidate d is scored from its embedding, what placing it next would do
(`features.position_features`: the bandwidth time it adds with the bytes still entering, its
load after against the least and most loaded dimension), the context of the positions already
placed (Σ over them of a position-keyed transform of their embeddings) and the episode's
features, through an MLP to one logit. A learned weight on "is Themis's next dimension" (the
first open one in Themis's order), initialised to `themis_prior`, lets training start near
Themis: with it alone the decoder plays Themis's order. Once every active dimension is placed,
the size-1 ones follow in index order with probability 1, so orders are canonical.

The log-probability of an order is the sum over its positions. `decode` samples (or takes the
argmax at each position) in a `lax.scan` over positions; `order_log_prob` scores a given order
with every position at once (teacher forcing); both call `position_logits`, so they agree.

Dimensions are inputs, never output slots: relabelling the network's dimensions relabels the
orders with them and leaves every probability in place (except through Themis's own
tie-breaking by index). No parameter depends on the number of dimensions or chunks (the
position keys cover MAX_DIMS positions; a network uses its first D). The policy has no recurrent
state: the loads in the observation carry everything earlier chunks did.

Flax NNX builds the module; `CollectivePolicyFunctions` exposes pure functions of a plain
parameter dict (`nnx.to_pure_dict`), so parameters flow through jit, optax and orbax as plain
pytrees. Shapes are per env (unbatched).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx, struct

from hps.collective.env.features import (
    N_DIM_FEATURES,
    N_GLOBAL_FEATURES,
    N_POSITION_FEATURES,
    added_load,
    position_features,
)
from hps.config.limits import MASKED_LOGIT, MAX_DIMS
from hps.rl.modules import module_graphdef
from hps.rl.reinforce import masked_mean

SPEC_FORMAT_VERSION = 2  # of the policy spec (`to_dict`); checkpoints have their own (hps.rl.checkpoint)
SPEC_HISTORY = {1: "a policy over the 24 orders of 4 dimensions, at most 256 chunks"}


@dataclass(frozen=True)
class CollectivePolicySpec:
    """Architecture: hidden width H and the initial logit bonus of Themis's next dimension.
    JSON-serialisable via `to_dict` (with kind and format version)."""

    hidden: int = 64
    themis_prior: float = 2.0

    def to_dict(self) -> dict:
        return {"kind": "collective", "format_version": SPEC_FORMAT_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> CollectivePolicySpec:
        data = dict(data)
        kind, version = data.pop("kind", "collective"), data.pop("format_version", SPEC_FORMAT_VERSION)
        if kind != "collective":
            raise ValueError(f"not a collective policy spec: {kind!r}")
        if version != SPEC_FORMAT_VERSION:
            written = f" ({SPEC_HISTORY[version]})" if version in SPEC_HISTORY else ""
            raise ValueError(
                f"collective policy format {version!r}{written}; this hps reads format {SPEC_FORMAT_VERSION} only: "
                "train the policy again with this hps (hps train --kind collective)"
            )
        return cls(**data)


@struct.dataclass
class Prefix:
    """The positions of one order placed before position j: placed (D,) bool, partial_load (D,)
    s (the loads plus what the placed positions of this chunk added), entering () bytes (the
    chunk divided by the placed sizes), context (H,) (Σ of the placed position keys)."""

    placed: jnp.ndarray
    partial_load: jnp.ndarray
    entering: jnp.ndarray
    context: jnp.ndarray


def allowed_next(obs, placed):
    """(D,) bool: the open active dimensions, or, once none is open, the lowest-index open
    size-1 dimension (so the tail of every order is forced and canonical)."""
    open_ = ~placed
    open_active = open_ & obs.dim_mask
    index = jnp.arange(placed.shape[0])
    lowest = index == jnp.argmin(jnp.where(open_, index, placed.shape[0]))
    return jnp.where(jnp.any(open_active), open_active, lowest & open_)


def themis_next(obs, placed):
    """(D,) bool: the first dimension of Themis's order not yet placed."""
    ranked_open = ~placed[obs.themis_order]
    first = obs.themis_order[jnp.argmax(ranked_open)]
    return jnp.arange(placed.shape[0]) == first


def place(obs, prefix: Prefix, dim, key_row):
    """The prefix after placing dimension `dim` (int32) with position key row key_row (H,)."""
    added = added_load(prefix.entering, obs.size[dim], obs.bandwidth[dim], obs.dim_mask[dim])
    return Prefix(
        placed=prefix.placed.at[dim].set(True),
        partial_load=prefix.partial_load.at[dim].add(added),
        entering=prefix.entering / obs.size[dim],
        context=prefix.context + key_row,
    )


class CollectivePolicy(nnx.Module):
    """The NNX module (see the module docstring)."""

    def __init__(self, spec: CollectivePolicySpec, *, rngs: nnx.Rngs):
        h = spec.hidden
        linear = lambda i, o, bias=True: nnx.Linear(i, o, use_bias=bias, rngs=rngs)  # noqa: E731
        self.dim_in = linear(N_DIM_FEATURES + N_GLOBAL_FEATURES, h)
        self.dim_mix = linear(h, h)
        self.position_key = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (MAX_DIMS, h, h)))
        self.candidate_in = linear(h, h, bias=False)
        self.position_in = linear(N_POSITION_FEATURES, h, bias=False)
        self.context_in = linear(h, h, bias=False)
        self.global_in = linear(N_GLOBAL_FEATURES, h)
        self.hidden = linear(h, h)
        self.out = linear(h, 1, bias=False)  # a shared bias would not change the softmax
        self.themis_weight = nnx.Param(jnp.asarray(spec.themis_prior, jnp.float32))

    def embed(self, obs):
        """(dims (D, H), keys (D positions, D dims, H)): dimension embeddings and, per position
        j, the key each dimension adds to the context when placed at j."""
        n_dims = obs.dim_mask.shape[0]
        glob = jnp.broadcast_to(obs.global_features, (n_dims, obs.global_features.shape[0]))
        dims = jax.nn.relu(self.dim_in(jnp.concatenate([obs.dim_features, glob], -1)))
        dims = jax.nn.relu(dims + self.dim_mix(masked_mean(dims, obs.dim_mask)))
        keys = jnp.einsum("dh,jhg->jdg", dims, self.position_key[:n_dims])
        return dims, keys

    def position_logits(self, obs, dims, prefix: Prefix):
        """Logits (D,) over the dimension at the next position after `prefix`."""
        feats = position_features(obs, prefix.placed, prefix.partial_load, prefix.entering)
        shared = self.context_in(prefix.context) + self.global_in(obs.global_features)
        hidden = jax.nn.relu(self.candidate_in(dims) + self.position_in(feats) + shared)
        hidden = hidden + jax.nn.relu(self.hidden(hidden))
        bonus = jnp.where(themis_next(obs, prefix.placed), self.themis_weight[...], 0.0)
        logits = self.out(hidden)[:, 0] + bonus
        return jnp.where(allowed_next(obs, prefix.placed), logits, MASKED_LOGIT)

    def empty_prefix(self, obs, dims):
        n_dims = obs.dim_mask.shape[0]
        return Prefix(jnp.zeros((n_dims,), bool), obs.load, obs.scale[0], jnp.zeros((dims.shape[1],), dims.dtype))


def _log_softmax_terms(logits, choice):
    """(log p of `choice`, entropy) of one position's logits (D,)."""
    log_p = jax.nn.log_softmax(logits)
    return log_p[choice], -jnp.sum(jnp.exp(log_p) * log_p)


class CollectivePolicyFunctions:
    """Pure functions of (params, …) for one CollectivePolicySpec; params is a plain nested dict."""

    def __init__(self, spec: CollectivePolicySpec = CollectivePolicySpec()):
        self.spec = spec
        self.graphdef = module_graphdef(CollectivePolicy, spec)

    def __eq__(self, other):  # equal specs share compiled functions (jit static arguments, caches)
        return type(other) is type(self) and other.spec == self.spec

    def __hash__(self):
        return hash((type(self).__name__, self.spec))

    def init(self, key) -> dict:
        """Fresh parameters (a plain dict of arrays) from a PRNG key."""
        return nnx.to_pure_dict(nnx.state(CollectivePolicy(self.spec, rngs=nnx.Rngs(params=key))))

    def model(self, params) -> CollectivePolicy:
        return nnx.merge(self.graphdef, params)

    def decode(self, params, obs, key, greedy: bool = False):
        """(order (D,) int32, log-probability (), entropy ()): one chunk's order, sampled
        position by position (the argmax at each position when `greedy`); entropy is the sum
        of the positions' entropies along the order."""
        model = self.model(params)
        dims, keys = model.embed(obs)
        n_dims = dims.shape[0]

        def one_position(prefix, inputs):
            position, step_key = inputs
            logits = model.position_logits(obs, dims, prefix)
            if greedy:
                choice = jnp.argmax(logits).astype(jnp.int32)
            else:
                choice = jax.random.categorical(step_key, logits).astype(jnp.int32)
            log_p, entropy = _log_softmax_terms(logits, choice)
            prefix = place(obs, prefix, choice, keys[position, choice])
            return prefix, (choice, log_p, entropy)

        inputs = (jnp.arange(n_dims), jax.random.split(key, n_dims))
        _, (order, log_p, entropy) = jax.lax.scan(one_position, model.empty_prefix(obs, dims), inputs)
        return order, jnp.sum(log_p), jnp.sum(entropy)

    def order_log_prob(self, params, obs, order):
        """(log-probability (), entropy ()) of the canonical order `order` (D,) int32, every
        position scored at once from the prefix before it (the same logits as `decode`)."""
        model = self.model(params)
        dims, keys = model.embed(obs)
        n_dims = dims.shape[0]
        onehot = order[:, None] == jnp.arange(n_dims)[None, :]  # (position, dimension)
        placed = (jnp.cumsum(onehot, axis=0) - onehot) > 0
        size = obs.size[order]
        entering = obs.scale[0] / jnp.cumprod(jnp.concatenate([jnp.ones((1,)), size[:-1]]))
        added = added_load(entering, size, obs.bandwidth[order], obs.dim_mask[order])
        earlier = jnp.tril(jnp.ones((n_dims, n_dims)), -1)  # [j, i]: position i comes before j
        partial_load = obs.load[None, :] + (earlier * added[None, :]) @ onehot.astype(added.dtype)
        context = earlier @ keys[jnp.arange(n_dims), order]
        prefixes = Prefix(placed, partial_load, entering, context)
        logits = jax.vmap(lambda prefix: model.position_logits(obs, dims, prefix))(prefixes)
        log_p, entropy = jax.vmap(_log_softmax_terms)(logits, order)
        return jnp.sum(log_p), jnp.sum(entropy)
