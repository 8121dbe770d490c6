"""Sparse recommendation models as LayeredModels, layer for layer the zoo's tables in
`hps.workloads.recsys` (same hyperparameter names; build them with `hps.models.registry`).

Raw inputs: feature ids are int32 (the tables count int64 ids read from storage), dense features
float32, labels int32. Every pooled lookup is an `nnx.Embed` (sparse parameters); the rest is dense.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from hps.models.base import Activation, LayeredModel
from hps.models.layers import DenseLayer, PooledEmbedding, SigmoidLoss, SoftmaxLoss


def _dense_stack(
    prefix: str, d_in: int, widths: Sequence[int], *, key: str, last: bool, rngs: nnx.Rngs, source: str | None = None
):
    """(names, DenseLayers) d_in -> widths on x[key] (the first reading x[source], default x[key]);
    the final one linear when `last`."""
    layers, names, width = [], [], d_in
    for i, d_out in enumerate(widths, start=1):
        first_source = (source or key) if i == 1 else key
        layers.append(
            DenseLayer(width, d_out, last=last and i == len(widths), source=first_source, target=key, rngs=rngs)
        )
        names.append(f"{prefix}{i}")
        width = d_out
    return names, layers


def _ids(key: jax.Array, n: int, slots: int, ids_per_slot: int, rows: int) -> jax.Array:
    return jax.random.randint(key, (n, slots, ids_per_slot), 0, rows, jnp.int32)


class ConcatLayer(nnx.Module):
    """x["emb"] (n, slots * dim) and x["dense"] (n, features) -> x["x"] (n, slots * dim + features)."""

    def __call__(self, x: Activation) -> Activation:
        rest = {k: v for k, v in x.items() if k not in ("emb", "dense")}
        return {**rest, "x": jnp.concatenate([x["emb"], x["dense"]], axis=-1)}


class CTRDNN(LayeredModel):
    """HeterPS's CTR-DNN: embedding (sum-pooled per slot; carries the dense features and the label)
    -> concat -> fc1..fcL (ReLU) -> fc_out -> softmax loss. Table: `hps.workloads.recsys.ctr_dnn`."""

    def __init__(
        self,
        *,
        slots: int,
        ids_per_slot: int,
        rows: int,
        dim: int,
        dense_features: int,
        hidden: Sequence[int],
        classes: int,
        rngs: nnx.Rngs,
    ):
        self.slots, self.ids_per_slot, self.rows = slots, int(ids_per_slot), int(rows)
        self.dense_features, self.classes = dense_features, classes
        fc_names, fcs = _dense_stack("fc", slots * dim + dense_features, hidden, key="x", last=False, rngs=rngs)
        self.layers = nnx.List(
            [
                PooledEmbedding(self.rows, dim, source="ids", target="emb", flatten=True, rngs=rngs),
                ConcatLayer(),
                *fcs,
                DenseLayer(hidden[-1], classes, last=True, rngs=rngs),
                SoftmaxLoss(),
            ]
        )
        self.layer_names = ("embedding", "concat", *fc_names, "fc_out", "loss")

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        k_ids, k_dense, k_label = jax.random.split(key, 3)
        return {
            "ids": _ids(k_ids, n, self.slots, self.ids_per_slot, self.rows),
            "dense": jax.random.normal(k_dense, (n, self.dense_features), jnp.float32),
            "label": jax.random.randint(k_label, (n,), 0, self.classes, jnp.int32),
        }


class DotInteraction(nnx.Module):
    """DLRM's interaction: x["x"] (n, dim) bottom-MLP output and x["emb"] (n, tables, dim) -> x["x"]
    (n, dim + V (V - 1) / 2), the bottom output then the pairwise dot products of the V = tables + 1
    vectors (strictly lower triangle)."""

    def __call__(self, x: Activation) -> Activation:
        vectors = jnp.concatenate([x["x"][:, None, :], x["emb"]], axis=1)
        gram = jnp.einsum("nid,njd->nij", vectors, vectors)
        rows, cols = np.tril_indices(vectors.shape[1], k=-1)
        rest = {k: v for k, v in x.items() if k not in ("x", "emb")}
        return {**rest, "x": jnp.concatenate([x["x"], gram[:, rows, cols]], axis=-1)}


class DLRM(LayeredModel):
    """DLRM: embedding (one pooled vector per table; carries the dense features and the label) ->
    bottom_fc1..  (ReLU, the last of width `dim`) -> interaction -> top_fc1.. (ReLU) -> top_fc_out
    -> sigmoid loss. Table: `hps.workloads.recsys.dlrm` (its `tables` tables are one `nnx.Embed`
    of tables x rows_per_table rows, each table's ids local to it)."""

    def __init__(
        self,
        *,
        tables: int,
        ids_per_table: int,
        rows_per_table: int,
        dim: int,
        dense_features: int,
        bottom_hidden: Sequence[int],
        top: Sequence[int],
        rngs: nnx.Rngs,
    ):
        self.tables, self.ids_per_table, self.rows_per_table = tables, int(ids_per_table), int(rows_per_table)
        self.dense_features = dense_features
        bottom = (*bottom_hidden, dim)
        bottom_names, bottom_fcs = _dense_stack(
            "bottom_fc", dense_features, bottom, key="x", source="dense", last=False, rngs=rngs
        )
        top_in = dim + (tables + 1) * tables // 2
        top_names, top_fcs = _dense_stack("top_fc", top_in, top, key="x", last=False, rngs=rngs)
        self.layers = nnx.List(
            [
                PooledEmbedding(
                    tables * self.rows_per_table,
                    dim,
                    source="ids",
                    target="emb",
                    slot_rows=self.rows_per_table,
                    rngs=rngs,
                ),
                *bottom_fcs,
                DotInteraction(),
                *top_fcs,
                DenseLayer(top[-1], 1, last=True, rngs=rngs),
                SigmoidLoss(),
            ]
        )
        self.layer_names = ("embedding", *bottom_names, "interaction", *top_names, "top_fc_out", "loss")

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        k_ids, k_dense, k_label = jax.random.split(key, 3)
        return {
            "ids": _ids(k_ids, n, self.tables, self.ids_per_table, self.rows_per_table),
            "dense": jnp.log1p(jnp.abs(jax.random.normal(k_dense, (n, self.dense_features), jnp.float32))),
            "label": jax.random.bernoulli(k_label, 0.5, (n,)).astype(jnp.int32),
        }


class Cosine(nnx.Module):
    """Two-tower score: `scale` * cos(x["query"], x["item"]) -> x["x"] (n,); `scale` (fixed, DSSM's
    smoothing factor) lets the sigmoid loss reach beyond cos's [-1, 1]."""

    def __init__(self, scale: float = 5.0):
        self.scale = scale

    def __call__(self, x: Activation) -> Activation:
        q, i = x["query"], x["item"]
        eps = 1e-12
        cos = (q * i).sum(-1) / jnp.sqrt(((q * q).sum(-1) + eps) * ((i * i).sum(-1) + eps))
        rest = {k: v for k, v in x.items() if k not in ("query", "item")}
        return {**rest, "x": self.scale * cos}


class TwoTower(LayeredModel):
    """Two-tower matching (the zoo's "matchnet"): query_embedding, item_embedding (sum-pooled per
    slot, flattened) -> query_fc1.. and item_fc1.. (ReLU, each tower's last linear) -> cosine ->
    sigmoid loss. Table: `hps.workloads.recsys.matchnet`."""

    def __init__(
        self,
        *,
        query_slots: int,
        query_ids_per_slot: int,
        query_rows: int,
        item_slots: int,
        item_ids_per_slot: int,
        item_rows: int,
        dim: int,
        hidden: Sequence[int],
        rngs: nnx.Rngs,
    ):
        self.query = (query_slots, int(query_ids_per_slot), int(query_rows))
        self.item = (item_slots, int(item_ids_per_slot), int(item_rows))
        q_names, q_fcs = _dense_stack("query_fc", query_slots * dim, hidden, key="query", last=True, rngs=rngs)
        i_names, i_fcs = _dense_stack("item_fc", item_slots * dim, hidden, key="item", last=True, rngs=rngs)
        self.layers = nnx.List(
            [
                PooledEmbedding(self.query[2], dim, source="query_ids", target="query", flatten=True, rngs=rngs),
                PooledEmbedding(self.item[2], dim, source="item_ids", target="item", flatten=True, rngs=rngs),
                *q_fcs,
                *i_fcs,
                Cosine(),
                SigmoidLoss(),
            ]
        )
        self.layer_names = ("query_embedding", "item_embedding", *q_names, *i_names, "cosine", "loss")

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        k_query, k_item, k_label = jax.random.split(key, 3)
        return {
            "query_ids": _ids(k_query, n, *self.query),
            "item_ids": _ids(k_item, n, *self.item),
            "label": jax.random.bernoulli(k_label, 0.5, (n,)).astype(jnp.int32),
        }
