"""Sequence encoders over a model's layers (one env, unbatched; vmap over envs outside).

Both map projected layer inputs (L, input_width_factor · H) and the layer mask (L,) to
per-layer codes (L, H); padded layers neither send nor receive information.

- `LSTMEncoder` (HeterPS's choice): an LSTM run from the last layer to the first, so the code of
  layer l summarises layers l..L−1 — what the rest of the model needs. The past (layers already
  placed and their types) is the autoregressive decoder's job.
- `AttentionEncoder`: a small pre-LayerNorm transformer encoder (self-attention over all real
  layers, fixed sinusoidal position codes, ReLU feed-forward of width 2H).

Neither has a parameter whose shape depends on the number of layers, so one set of parameters
encodes a model of any length.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from hps.placement.agent.lstm import lstm_update


class LSTMEncoder(nnx.Module):
    """Reverse-direction LSTM, hidden H. It reads layer inputs as gate pre-activations (L, 4H)
    (the caller's projection of the layer features); the scan carries only the recurrent part."""

    input_width_factor = 4  # inputs are (L, 4H) gate pre-activations

    def __init__(self, hidden: int, *, rngs: nnx.Rngs):
        self.hidden = hidden
        self.recurrent = nnx.Linear(hidden, 4 * hidden, use_bias=False, rngs=rngs)

    def __call__(self, gates_in, mask):
        zeros = jnp.zeros((self.hidden,), gates_in.dtype)

        def step(carry, inputs):
            hidden, cell = carry
            gates, real = inputs
            new_hidden, new_cell = lstm_update(gates + self.recurrent(hidden), cell)
            hidden = jnp.where(real, new_hidden, zeros)
            cell = jnp.where(real, new_cell, zeros)
            return (hidden, cell), hidden

        _, codes = jax.lax.scan(step, (zeros, zeros), (gates_in, mask), reverse=True)
        return codes


class AttentionBlock(nnx.Module):
    """Pre-LayerNorm transformer block: x + MHA(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, hidden: int, heads: int, *, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(hidden, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(heads, hidden, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(hidden, rngs=rngs)
        self.ffn_in = nnx.Linear(hidden, 2 * hidden, rngs=rngs)
        self.ffn_out = nnx.Linear(2 * hidden, hidden, rngs=rngs)

    def __call__(self, x, attention_mask):
        x = x + self.attention(self.norm1(x), mask=attention_mask)
        return x + self.ffn_out(jax.nn.relu(self.ffn_in(self.norm2(x))))


def sinusoidal_positions(length: int, width: int) -> jnp.ndarray:
    """(length, width) fixed position codes: sin and cos of position / 10000^(2i/width)
    (Vaswani et al.), for any length; width even."""
    position = jnp.arange(length, dtype=jnp.float32)[:, None]
    rates = 1.0 / (10000.0 ** (jnp.arange(0, width, 2, dtype=jnp.float32) / width))
    angles = position * rates
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(length, width)


class AttentionEncoder(nnx.Module):
    """`blocks` transformer blocks over the layers, then a LayerNorm. It reads layer
    embeddings (L, H), adds a learned scale of the sinusoidal position codes (any L)."""

    input_width_factor = 1

    def __init__(self, hidden: int, heads: int, blocks: int, *, rngs: nnx.Rngs):
        self.position_scale = nnx.Param(jnp.full((hidden,), 0.1))
        self.blocks = nnx.List([AttentionBlock(hidden, heads, rngs=rngs) for _ in range(blocks)])
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)

    def __call__(self, x, mask):
        positions = sinusoidal_positions(x.shape[0], x.shape[1])
        x = jax.nn.relu(x) + self.position_scale[...] * positions
        attention_mask = nnx.make_attention_mask(mask, mask)  # (1, L, L): real layers see real layers
        for block in self.blocks:
            x = block(x, attention_mask)
        return jnp.where(mask[:, None], self.norm(x), 0.0)


def make_encoder(kind: str, hidden: int, heads: int, blocks: int, *, rngs: nnx.Rngs):
    """The encoder named `kind` ("lstm" or "attention")."""
    if kind == "lstm":
        return LSTMEncoder(hidden, rngs=rngs)
    if kind == "attention":
        return AttentionEncoder(hidden, heads, blocks, rngs=rngs)
    raise ValueError(f"unknown encoder {kind!r}; known: lstm, attention")
