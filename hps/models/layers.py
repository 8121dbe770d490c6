"""Layer modules shared by the zoo models: each is one row of a layer table, maps an `Activation`
dict to the next (keys it does not touch pass through) and holds the parameters the row counts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from hps.models.base import Activation, per_example_cross_entropy


class DenseLayer(nnx.Module):
    """x[source] (n, d_in) -> x[target] (n, d_out) = Linear (+ ReLU unless `last`); `source` is
    consumed when it differs from `target` (default: the same key, "x"); other keys pass through."""

    def __init__(
        self,
        d_in: int,
        d_out: int,
        *,
        last: bool = False,
        source: str = "x",
        target: str | None = None,
        rngs: nnx.Rngs,
    ):
        self.linear = nnx.Linear(d_in, d_out, rngs=rngs)
        self.last = last
        self.source, self.target = source, target or source

    def __call__(self, x: Activation) -> Activation:
        return self.with_projection(x, self.linear)

    def with_projection(self, x: Activation, project) -> Activation:
        """The layer with x[source] -> pre-activation computed by `project` (the module's own
        `linear`, or one tensor-parallel rank's column- or row-parallel share of it)."""
        y = project(x[self.source])
        rest = {k: v for k, v in x.items() if k != self.source}
        return {**rest, self.target: y if self.last else jax.nn.relu(y)}


class PooledEmbedding(nnx.Module):
    """Sum-pooled lookups: x[source] int (n, slots, ids) -> x[target] (n, slots, dim) float32, or
    (n, slots * dim) when `flatten`. One `nnx.Embed` of `rows` x `dim` (the row's sparse parameters).

    With `slot_rows`, slot s owns rows [s * slot_rows, (s + 1) * slot_rows) of the table and its ids
    are local (in [0, slot_rows)): one table per slot, stored as one.
    """

    def __init__(
        self,
        rows: int,
        dim: int,
        *,
        source: str,
        target: str,
        flatten: bool = False,
        slot_rows: int | None = None,
        rngs: nnx.Rngs,
    ):
        self.table = nnx.Embed(rows, dim, rngs=rngs)
        self.source, self.target = source, target
        self.flatten, self.slot_rows = flatten, slot_rows

    def __call__(self, x: Activation) -> Activation:
        return self.with_lookup(x, self.table)

    def with_lookup(self, x: Activation, lookup) -> Activation:
        """The layer with table rows looked up by `lookup` (ids (n, slots, ids) int -> (n, slots,
        ids, dim)): the module's own `table`, or a lookup in a row-sharded table."""
        ids = x[self.source]
        if self.slot_rows is not None:
            ids = ids + self.slot_rows * jnp.arange(ids.shape[1], dtype=ids.dtype)[None, :, None]
        pooled = lookup(ids).sum(axis=2)
        if self.flatten:
            pooled = pooled.reshape(pooled.shape[0], -1)
        rest = {k: v for k, v in x.items() if k != self.source}
        return {**rest, self.target: pooled}


class SoftmaxLoss(nnx.Module):
    """Softmax cross-entropy of x["x"] (n, classes) logits against x["label"]: loss (n,)."""

    def __call__(self, x: Activation) -> jax.Array:
        return per_example_cross_entropy(x["x"], x["label"])


class SigmoidLoss(nnx.Module):
    """Binary cross-entropy of x["x"] (n,) or (n, 1) logits against x["label"] in {0, 1}: loss (n,)."""

    def __call__(self, x: Activation) -> jax.Array:
        logits = x["x"].reshape(x["x"].shape[0]).astype(jnp.float32)
        return jax.nn.softplus(logits) - x["label"].astype(jnp.float32) * logits
