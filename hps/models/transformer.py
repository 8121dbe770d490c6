"""A BERT-style encoder classifier as a LayeredModel, layer for layer the zoo's "transformer"
table (`hps.workloads.nlp.transformer`): embedding, layerN.attention and layerN.ffn per encoder
layer (post-LN, as BERT), head (pooler + classifier on the first position), loss.

The input embedding tables are plain `nnx.Param`s, not `nnx.Embed`: as in the table they are
dense parameters (small, kept whole and all-reduced by every replica).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from hps.config.limits import MASKED_LOGIT
from hps.models.base import Activation, LayeredModel
from hps.models.layers import SoftmaxLoss

TYPE_VOCAB = 2
"""Segment ids: sentence A or B (as `hps.workloads.layers.token_embedding`'s type_vocab)."""


class TokenEmbedding(nnx.Module):
    """x["tokens"], x["segments"] int (n, S) -> x["h"] (n, S, H) = LayerNorm(word + position +
    segment embeddings); x["mask"] (n, S) and the label pass through."""

    def __init__(self, vocab: int, hidden: int, max_position: int, *, rngs: nnx.Rngs):
        init = jax.nn.initializers.normal(0.02)
        self.word = nnx.Param(init(rngs.params(), (vocab, hidden), jnp.float32))
        self.position = nnx.Param(init(rngs.params(), (max_position, hidden), jnp.float32))
        self.segment = nnx.Param(init(rngs.params(), (TYPE_VOCAB, hidden), jnp.float32))
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)

    def __call__(self, x: Activation) -> Activation:
        seq_len = x["tokens"].shape[1]
        h = self.word[...][x["tokens"]] + self.position[...][:seq_len][None] + self.segment[...][x["segments"]]
        rest = {k: v for k, v in x.items() if k not in ("tokens", "segments")}
        return {**rest, "h": self.norm(h)}


def _same(value):
    """The identity (no tensor-parallel collective)."""
    return value


class SelfAttention(nnx.Module):
    """x["h"] (n, S, H) -> LayerNorm(h + multi-head self-attention(h)), padding keys masked by
    x["mask"] (n, S), 1 = token, 0 = padding."""

    def __init__(self, hidden: int, heads: int, *, rngs: nnx.Rngs):
        self.query, self.key, self.value, self.out = (nnx.Linear(hidden, hidden, rngs=rngs) for _ in range(4))
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)
        self.heads = heads

    def __call__(self, x: Activation) -> Activation:
        return self.attend(x, self.heads)

    def attend(self, x: Activation, heads: int, enter=_same, reduce=_same) -> Activation:
        """The layer on `heads` of its heads, those whose projection columns (query, key, value)
        and output-projection rows this module holds: all of them, or one tensor-parallel rank's
        share. `enter` is applied to the projections' input and `reduce` to the output
        projection's (partial) product before its bias (Megatron's f and g under tensor
        parallelism; identities otherwise)."""
        h = x["h"]
        n, s, d = h.shape
        width = d // self.heads
        hf = enter(h)

        def split(y):  # (n, S, heads·width) -> (n, heads, S, width)
            return y.reshape(n, s, heads, width).transpose(0, 2, 1, 3)

        # The key bias adds one value per query row to every logit of that row, which the softmax
        # cancels: its gradient is zero mathematically, so only rounding noise would move it.
        key = hf @ self.key.kernel[...] + jax.lax.stop_gradient(self.key.bias[...])
        query = hf @ self.query.kernel[...] + self.query.bias[...]
        value = hf @ self.value.kernel[...] + self.value.bias[...]
        q, k, v = split(query), split(key), split(value)
        logits = jnp.einsum("nhqd,nhkd->nhqk", q, k) / jnp.sqrt(width).astype(h.dtype)
        logits = jnp.where(x["mask"][:, None, None, :] > 0, logits, MASKED_LOGIT)
        context = jnp.einsum("nhqk,nhkd->nhqd", jax.nn.softmax(logits, axis=-1), v)
        context = context.transpose(0, 2, 1, 3).reshape(n, s, heads * width)
        out = reduce(context @ self.out.kernel[...]) + self.out.bias[...]
        return {**x, "h": self.norm(h + out)}


class FeedForward(nnx.Module):
    """x["h"] (n, S, H) -> LayerNorm(h + W2 GELU(W1 h)), W1: H -> F, W2: F -> H."""

    def __init__(self, hidden: int, ffn: int, *, rngs: nnx.Rngs):
        self.up, self.down = nnx.Linear(hidden, ffn, rngs=rngs), nnx.Linear(ffn, hidden, rngs=rngs)
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)

    def __call__(self, x: Activation) -> Activation:
        return self.feed(x)

    def feed(self, x: Activation, enter=_same, reduce=_same) -> Activation:
        """The layer on the hidden units whose up-projection columns and down-projection rows
        this module holds (all, or one tensor-parallel rank's share); `enter` and `reduce` as in
        `SelfAttention.attend`."""
        h = x["h"]
        hidden = jax.nn.gelu(enter(h) @ self.up.kernel[...] + self.up.bias[...])
        return {**x, "h": self.norm(h + reduce(hidden @ self.down.kernel[...]) + self.down.bias[...])}


class ClassificationHead(nnx.Module):
    """x["h"][:, 0] (the first position) -> tanh pooler H -> H -> classifier -> x["x"] (n, classes)."""

    def __init__(self, hidden: int, classes: int, *, rngs: nnx.Rngs):
        self.pooler = nnx.Linear(hidden, hidden, rngs=rngs)
        self.classifier = nnx.Linear(hidden, classes, rngs=rngs)

    def __call__(self, x: Activation) -> Activation:
        pooled = jnp.tanh(self.pooler(x["h"][:, 0]))
        rest = {k: v for k, v in x.items() if k not in ("h", "mask")}
        return {**rest, "x": self.classifier(pooled)}


class Transformer(LayeredModel):
    """Encoder classifier with the zoo "transformer"'s hyperparameters (`layers` encoder layers of
    width `hidden`, `heads` heads, FFN width `ffn`, `seq_len` tokens of a `vocab` vocabulary).
    Trained at SGD step 0.002: at the default 0.05 its 5-step loss climbs (0.70 -> 3.20)."""

    learning_rate = 0.002

    def __init__(
        self,
        *,
        layers: int,
        hidden: int,
        heads: int,
        ffn: int,
        seq_len: int,
        vocab: int,
        max_position: int,
        classes: int,
        rngs: nnx.Rngs,
    ):
        self.seq_len, self.vocab, self.classes = seq_len, vocab, classes
        modules, names = [TokenEmbedding(vocab, hidden, max_position, rngs=rngs)], ["embedding"]
        for i in range(1, layers + 1):
            modules += [SelfAttention(hidden, heads, rngs=rngs), FeedForward(hidden, ffn, rngs=rngs)]
            names += [f"layer{i}.attention", f"layer{i}.ffn"]
        modules += [ClassificationHead(hidden, classes, rngs=rngs), SoftmaxLoss()]
        self.layers = nnx.List(modules)
        self.layer_names = (*names, "head", "loss")

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        """Token ids in [0, vocab), sentence B from a random split point on, a random length of at
        least half the sequence (the rest padding), a class label."""
        k_tok, k_split, k_len, k_label = jax.random.split(key, 4)
        positions = jnp.arange(self.seq_len)[None, :]
        split = jax.random.randint(k_split, (n, 1), 1, self.seq_len + 1)
        length = jax.random.randint(k_len, (n, 1), (self.seq_len + 1) // 2, self.seq_len + 1)
        return {
            "tokens": jax.random.randint(k_tok, (n, self.seq_len), 0, self.vocab, jnp.int32),
            "segments": (positions >= split).astype(jnp.int32),
            "mask": (positions < length).astype(jnp.int32),
            "label": jax.random.randint(k_label, (n,), 0, self.classes, jnp.int32),
        }
