"""The placement policy: a sequence encoder over layers and an autoregressive LSTM decoder.

Per episode (`encode`): each resource type is embedded from ITS features (and the job), mixed
with the mean over the catalogue (a permutation-equivariant set encoding); each layer is embedded
from its features, the job and the catalogue summary, then run through the encoder (LSTM or
attention, `hps.placement.agent.encoders`); each (layer, type) pair gets a key from t's embedding and
the layer-on-type features (times and stage costs, `hps.placement.env.features.pair_features`).
Per decision (`decode`): an LSTM cell reads the layer's code and the previous action's type
embedding; the type head scores every type t by a query from the decoder state against the
layer's key for t, plus a static score of that key and a state-dependent bonus when t continues
the current stage; padded types get the large finite negative MASKED_LOGIT. A value head (for
PPO) reads the same state. Teacher-forced replay (`evaluate_batch`) runs the decoder's LSTM over
a whole batch at once with its own backward pass (`hps.placement.agent.lstm.lstm_sequence`). Types are
inputs, never output slots, and no parameter's shape depends on the layer or type count, so
one set of parameters plans any workload and catalogue (padded to a size bucket,
hps.config.limits), and permuting the catalogue permutes the probabilities with it.

Flax NNX builds the modules; `PolicyFunctions` splits them once (`nnx.split` of an abstract
build, `hps.rl.modules`) and exposes pure functions of a plain parameter dict
(`nnx.to_pure_dict`), merged back inside each call, so parameters flow through jit, optax and
orbax as ordinary pytrees. Shapes are per env (unbatched), except in `evaluate_batch`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx, struct

from hps.config.limits import MASKED_LOGIT
from hps.placement.agent.encoders import make_encoder
from hps.placement.agent.lstm import lstm_sequence, lstm_update
from hps.placement.env.features import (
    N_JOB_FEATURES,
    N_LAYER_FEATURES,
    N_PAIR_FEATURES,
    N_TYPE_FEATURES,
)
from hps.rl.batching import over_envs
from hps.rl.modules import module_graphdef
from hps.rl.reinforce import masked_mean


@dataclass(frozen=True)
class PolicySpec:
    """Architecture: encoder "lstm" or "attention", hidden width H, attention heads and blocks.
    No size: the parameters serve instances of any number of layers and types.
    JSON-serialisable via `to_dict`."""

    encoder: str = "lstm"
    hidden: int = 64
    heads: int = 4
    blocks: int = 1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PolicySpec:
        return cls(**data)


@struct.dataclass
class Context:
    """Per-episode tensors the decoder reads: layer_gates (L, 4H), type_gates (T, 4H) the decoder
    input gates of each type as the previous action, keys (L, T, H) and key_scores (L, T) (each
    type's embedding with its layer-on-type features, for the type head), action_mask (T,)."""

    layer_gates: jnp.ndarray
    type_gates: jnp.ndarray
    keys: jnp.ndarray
    key_scores: jnp.ndarray
    action_mask: jnp.ndarray


class PlacementPolicy(nnx.Module):
    """The NNX module (see the module docstring)."""

    def __init__(self, spec: PolicySpec, *, rngs: nnx.Rngs):
        h = spec.hidden
        self.hidden = h
        linear = lambda i, o, bias=True: nnx.Linear(i, o, use_bias=bias, rngs=rngs)  # noqa: E731
        self.type_in = linear(N_TYPE_FEATURES + N_JOB_FEATURES, h)
        self.type_mix = linear(h, h)
        self.encoder = make_encoder(spec.encoder, h, spec.heads, spec.blocks, rngs=rngs)
        width = self.encoder.input_width_factor * h
        self.layer_in = linear(N_LAYER_FEATURES + N_JOB_FEATURES, width)
        self.layer_catalogue = linear(h, width, bias=False)
        self.dec_layer = linear(h, 4 * h)
        self.dec_type = linear(h, 4 * h, bias=False)
        self.dec_start = nnx.Param(jnp.zeros((4 * h,)))
        self.dec_hidden = linear(h, 4 * h, bias=False)
        self.head_state = linear(h, h)
        self.head_type = linear(h, h, bias=False)
        self.head_pair = linear(N_PAIR_FEATURES, h, bias=False)
        self.head_out = linear(h, 1, bias=False)  # a shared bias would not change the softmax
        self.head_continue = linear(h, 1)
        self.value_hidden = linear(h, h)
        self.value_out = linear(h, 1)

    def encode(self, obs) -> Context:
        """Per-episode context from the static part of one observation."""
        job = obs.job_features
        tiled = lambda n: jnp.broadcast_to(job, (n, job.shape[0]))  # noqa: E731
        n_types, n_layers = obs.type_features.shape[0], obs.layer_features.shape[0]
        types = jax.nn.relu(self.type_in(jnp.concatenate([obs.type_features, tiled(n_types)], -1)))
        catalogue = masked_mean(types, obs.action_mask)
        types = jax.nn.relu(types + self.type_mix(catalogue))
        layers = self.layer_in(jnp.concatenate([obs.layer_features, tiled(n_layers)], -1))
        codes = self.encoder(layers + self.layer_catalogue(catalogue), obs.layer_mask)
        keys = jax.nn.relu(self.head_type(types)[None] + self.head_pair(obs.pair_features))
        return Context(
            layer_gates=self.dec_layer(codes),
            type_gates=self.dec_type(types),
            keys=keys,
            key_scores=self.head_out(keys)[..., 0],
            action_mask=obs.action_mask,
        )

    def initial_carry(self):
        """Decoder (hidden, cell), each (H,) zeros."""
        zeros = jnp.zeros((self.hidden,))
        return zeros, zeros

    def previous_gates(self, context: Context, previous_action):
        """Decoder input gates (…, 4H) of the previous decision's type; the learned start
        vector where previous_action < 0 (the first layer)."""
        previous_action = jnp.asarray(previous_action)
        start = (previous_action < 0)[..., None] * self.dec_start[...]
        return self.type_inputs(context, previous_action) + start

    @staticmethod
    def type_inputs(context: Context, previous_action):
        """The type gates (…, 4H) of each previous action, zeros where it is −1. The gates are
        computed once per instance; a decision selects its row by a one-hot matmul (T wide), not
        a gather, whose gradient would scatter."""
        type_gates = context.type_gates
        return jax.nn.one_hot(previous_action, type_gates.shape[0], dtype=type_gates.dtype) @ type_gates

    def heads(self, context: Context, hidden, keys, key_scores, previous_action):
        """Logits (…, T) and values (…) from decoder states hidden (…, H), the layers' type
        keys (…, T, H) and static scores (…, T), and the previous actions (…).

        A type's logit is its static score plus the dot product of a query (from the decoder
        state) with its key, plus a state-dependent bonus when it continues the current stage
        (it is the previous action). Scoring by dot products keeps (…, T, H) tensors out of
        the per-decision work: the keys are built once per instance."""
        n_types = keys.shape[-2]
        query = self.head_state(hidden)
        same = (jnp.arange(n_types) == jnp.asarray(previous_action)[..., None]).astype(keys.dtype)
        scores = jnp.einsum("...h,...th->...t", query, keys) + key_scores + same * self.head_continue(hidden)
        logits = jnp.where(context.action_mask, scores, MASKED_LOGIT)
        values = self.value_out(jax.nn.relu(self.value_hidden(hidden)))[..., 0]
        return logits, values

    def decode(self, context: Context, carry, layer_index, previous_action):
        """One decision: logits (T,) over types for layer `layer_index`, value (), new carry.
        previous_action: the type chosen for the previous layer, −1 at the first layer."""
        hidden, cell = carry
        gates_in = context.layer_gates[layer_index] + self.previous_gates(context, previous_action)
        hidden, cell = lstm_update(gates_in + self.dec_hidden(hidden), cell)
        logits, value = self.heads(
            context, hidden, context.keys[layer_index], context.key_scores[layer_index], previous_action
        )
        return logits, value, (hidden, cell)

    def decoder_inputs(self, context: Context, actions):
        """Teacher forcing of one episode with `actions` (L,): the decoder's input gates (L, 4H)
        and each decision's previous action (L,), −1 at the first."""
        previous = jnp.concatenate([jnp.full((1,), -1, jnp.int32), actions[:-1].astype(jnp.int32)])
        # the start vector goes to the instance's first layer once (not through a mask over
        # every decision, whose gradient would sum over all of them)
        layer_gates = context.layer_gates.at[0].add(self.dec_start[...])
        return layer_gates + self.type_inputs(context, previous), previous

    def evaluate_batch(self, obs, actions, samples: int = 1):
        """Teacher-forced logits (N, L, T) and values (N, L) of N = I × samples episodes:
        obs (I, …) one observation per instance (encoded once), actions (N, L) int, episode n
        on instance n // samples (entries past an episode's end are ignored).

        With the actions known, only the LSTM recurrence is sequential: its inputs are built
        before it, it runs over the whole batch at once (`lstm_sequence`, with its own backward
        pass), and the heads run after it on every decision."""
        context = jax.vmap(self.encode)(obs)
        gates_in, previous = over_envs(self.decoder_inputs, ("instance", "env"), samples)(context, actions)
        hidden = lstm_sequence(jnp.swapaxes(gates_in, 0, 1), self.dec_hidden.kernel[...])
        hidden = jnp.swapaxes(hidden, 0, 1)
        heads = lambda ctx, h, prev: self.heads(ctx, h, ctx.keys, ctx.key_scores, prev)  # noqa: E731
        return over_envs(heads, ("instance", "env", "env"), samples)(context, hidden, previous)

    def evaluate_actions(self, obs, actions):
        """Teacher-forced pass over a whole episode: logits (L, T) and values (L,) of every
        decision when the layers get `actions` (L,) int (entries past the end are ignored)."""
        batched = lambda x: x[None]  # noqa: E731
        logits, values = self.evaluate_batch(jax.tree.map(batched, obs), batched(actions))
        return logits[0], values[0]


class PolicyFunctions:
    """Pure functions of (params, …) for one PolicySpec; params is a plain nested dict."""

    def __init__(self, spec: PolicySpec = PolicySpec()):
        self.spec = spec
        self.graphdef = module_graphdef(PlacementPolicy, spec)

    def init(self, key) -> dict:
        """Fresh parameters (a plain dict of arrays) from a PRNG key."""
        return nnx.to_pure_dict(nnx.state(PlacementPolicy(self.spec, rngs=nnx.Rngs(params=key))))

    def model(self, params) -> PlacementPolicy:
        return nnx.merge(self.graphdef, params)

    def encode(self, params, obs) -> Context:
        return self.model(params).encode(obs)

    def initial_carry(self, params):
        return self.model(params).initial_carry()

    def decode(self, params, context, carry, layer_index, previous_action):
        return self.model(params).decode(context, carry, layer_index, previous_action)

    def evaluate_actions(self, params, obs, actions):
        """Teacher-forced logits (L, T) and values (L,) of a whole episode with `actions` (L,)."""
        return self.model(params).evaluate_actions(obs, actions)

    def evaluate_batch(self, params, obs, actions, samples: int = 1):
        """Teacher-forced logits (N, L, T) and values (N, L) of N = I × samples episodes
        `actions` (N, L) of the instances of obs (I, …)."""
        return self.model(params).evaluate_batch(obs, actions, samples)

    def apply(self, params, obs):
        """Logits (T,) and value () for the decision `obs` asks for (layer obs.layer_index,
        given the types in obs.actions so far)."""
        actions = jnp.maximum(obs.actions, 0)
        logits, values = self.evaluate_actions(params, obs, actions)
        return logits[obs.layer_index], values[obs.layer_index]
