"""Tensor parallelism and sharded embedding tables inside a stage (docs/executor.md), run per
device inside ``jax.shard_map`` over the stage's (data axes…, "t") mesh.

Megatron-style (Shoeybi et al. 2019, "Megatron-LM", §3): a column-parallel projection holds
kernel[:, j-th block] (and its bias block) on tensor rank j and makes its block of the output
features; the row-parallel projection after it holds kernel[j-th block, :] and makes a partial
sum, All-Reduced over "t" (``reduce_from_tensor``, the paper's g) before its bias; the input of
the column-parallel projection passes ``copy_to_tensor`` (f): identity forward, All-Reduce of
the input gradient backward. Attention splits its heads over t (q, k, v column-parallel, the
output projection row-parallel); a feed-forward block and a pair of consecutive dense layers
split the hidden width. Every other layer runs whole on every tensor rank (replicated).

An embedding table (an ``nnx.Embed`` in a ``PooledEmbedding``) is split by rows over all the
stage's devices: rank r of the flattened mesh holds rows [r·R, (r+1)·R). A lookup gathers the
stage's ids over the data axes, looks up the rows it holds (zeros elsewhere) and sums over all
devices; its backward gathers the output gradient the same way and adds it into the local rows
only, so a table's gradient never leaves its device and is never All-Reduced.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from hps.models.layers import DenseLayer, PooledEmbedding
from hps.models.transformer import FeedForward, SelfAttention

TENSOR_AXIS = "t"
"""Name of the tensor-parallel mesh axis (innermost: tensor ranks are adjacent devices)."""


# ------------------------------------------------------------------ Megatron's f and g


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def copy_to_tensor(x, axis: str):
    """f: identity forward; backward All-Reduces (sums) the gradient over `axis`."""
    return x


def _copy_fwd(x, axis):
    return x, None


def _copy_bwd(axis, _, g):
    return (lax.psum(g, axis),)


copy_to_tensor.defvjp(_copy_fwd, _copy_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def reduce_from_tensor(x, axis: str):
    """g: All-Reduce (sum) over `axis` forward; identity backward."""
    return lax.psum(x, axis)


def _reduce_fwd(x, axis):
    return lax.psum(x, axis), None


def _reduce_bwd(axis, _, g):
    return (g,)


reduce_from_tensor.defvjp(_reduce_fwd, _reduce_bwd)


# ------------------------------------------------------------------ which layers split how

PLAIN, ATTENTION, FFN, COLUMN, ROW, EMBEDDING = "plain", "attention", "ffn", "column", "row", "embedding"


def layer_roles(layers, tensor: int, devices: int) -> list[str]:
    """How each layer of a stage runs on a stage of `devices` devices with `tensor` ranks per
    tensor group: attention (heads divisible by tensor), ffn, column/row for a pair of
    consecutive DenseLayers where the second reads the first's output (its width divisible by
    tensor), embedding for a PooledEmbedding when devices > 1, plain otherwise."""
    roles = [PLAIN] * len(layers)
    for i, layer in enumerate(layers):
        if isinstance(layer, PooledEmbedding) and devices > 1:
            roles[i] = EMBEDDING
        elif tensor > 1 and isinstance(layer, SelfAttention) and layer.heads % tensor == 0:
            roles[i] = ATTENTION
        elif tensor > 1 and isinstance(layer, FeedForward) and layer.up.out_features % tensor == 0:
            roles[i] = FFN
    if tensor > 1:
        i = 0
        while i + 1 < len(layers):
            a, b = layers[i], layers[i + 1]
            pair = isinstance(a, DenseLayer) and isinstance(b, DenseLayer) and b.source == a.target
            if pair and roles[i] == roles[i + 1] == PLAIN and a.linear.out_features % tensor == 0:
                roles[i], roles[i + 1] = COLUMN, ROW
                i += 2
            else:
                i += 1
    return roles


_COLUMN, _ROW, _BIAS = P(None, TENSOR_AXIS), P(TENSOR_AXIS, None), P(TENSOR_AXIS)
_SPLIT = {  # role -> {(module, parameter): spec}; parameters not named are replicated
    ATTENTION: {
        **{(m, "kernel"): _COLUMN for m in ("query", "key", "value")},
        **{(m, "bias"): _BIAS for m in ("query", "key", "value")},
        ("out", "kernel"): _ROW,
    },
    FFN: {("up", "kernel"): _COLUMN, ("up", "bias"): _BIAS, ("down", "kernel"): _ROW},
    COLUMN: {("linear", "kernel"): _COLUMN, ("linear", "bias"): _BIAS},
    ROW: {("linear", "kernel"): _ROW},
}


def _names(path) -> tuple[str, ...]:
    """Module and parameter names of a param state's key path (without the Param's ".value")."""
    if path and isinstance(path[-1], jax.tree_util.GetAttrKey):
        path = path[:-1]
    return tuple(str(getattr(k, "key", getattr(k, "name", k))) for k in path)


def param_specs(role: str, state, all_axes: tuple[str, ...]):
    """The PartitionSpec of every parameter of a layer state (same tree) for its role:
    split as `_SPLIT` says, an embedding table by rows over `all_axes`, else replicated P()."""

    def spec(path, _):
        names = _names(path)
        if role == EMBEDDING and names[-2:] == ("table", "embedding"):
            return P(all_axes, None)
        return _SPLIT.get(role, {}).get(names[-2:], P())

    return jax.tree.map_with_path(spec, state)


def is_table(role: str, state):
    """Same tree as `state`: True for a row-sharded embedding table (its gradient stays local)."""
    return jax.tree.map_with_path(
        lambda path, _: role == EMBEDDING and _names(path)[-2:] == ("table", "embedding"), state
    )


# ------------------------------------------------------------------ per-device layer functions


def _enter(h):
    return copy_to_tensor(h, TENSOR_AXIS)


def _reduce(y):
    return reduce_from_tensor(y, TENSOR_AXIS)


def attention(m: SelfAttention, x, tensor: int):
    """SelfAttention with its heads split over the tensor axis (this rank's heads / tensor)."""
    return m.attend(x, m.heads // tensor, enter=_enter, reduce=_reduce)


def feed_forward(m: FeedForward, x):
    """FeedForward with its hidden width split over the tensor axis."""
    return m.feed(x, enter=_enter, reduce=_reduce)


def dense(m: DenseLayer, x, role: str):
    """A DenseLayer as the column-parallel (its output features split) or row-parallel (its
    input features split, outputs summed over the tensor axis) half of a pair."""
    kernel, bias = m.linear.kernel[...], m.linear.bias[...]
    if role == COLUMN:
        return m.with_projection(x, lambda h: _enter(h) @ kernel + bias)
    return m.with_projection(x, lambda h: _reduce(h @ kernel) + bias)


def pooled_embedding(m: PooledEmbedding, x, data_axes: tuple[str, ...], all_axes: tuple[str, ...]):
    """PooledEmbedding on a row-sharded table (`sharded_lookup`)."""
    table = m.table.embedding[...]
    return m.with_lookup(x, lambda ids: sharded_lookup(table, ids, data_axes, all_axes))


def _gather_data(v, data_axes):
    return lax.all_gather(v, data_axes, axis=0, tiled=True) if data_axes else v


def _local_rows(rows: int, ids_all, all_axes):
    local = ids_all - lax.axis_index(all_axes) * rows
    held = (local >= 0) & (local < rows)
    return jnp.clip(local, 0, rows - 1), held


@partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def sharded_lookup(table, ids, data_axes: tuple[str, ...], all_axes: tuple[str, ...]):
    """table[ids] for this device's samples, table (R, dim) this device's rows of the full
    table (rank r of `all_axes` holds rows r·R..), ids (n, ...) int global row ids of this
    data shard: (n, ..., dim). The gradient w.r.t. table is this device's rows' only."""
    return _lookup_fwd(table, ids, data_axes, all_axes)[0]


def _lookup_fwd(table, ids, data_axes, all_axes):
    ids_all = _gather_data(ids, data_axes)
    local, held = _local_rows(table.shape[0], ids_all, all_axes)
    found = lax.psum(jnp.where(held[..., None], table[local], 0), all_axes)
    n = ids.shape[0]
    start = (lax.axis_index(data_axes) if data_axes else 0) * n
    return lax.dynamic_slice_in_dim(found, start, n, axis=0), (ids, jnp.zeros((table.shape[0], 0), table.dtype))


def _lookup_bwd(data_axes, all_axes, saved, g):
    ids, shape_of_rows = saved  # (R, 0): carries the row count only
    rows = shape_of_rows.shape[0]
    g_all = _gather_data(g, data_axes)
    local, held = _local_rows(rows, _gather_data(ids, data_axes), all_axes)
    contributions = jnp.where(held[..., None], g_all, 0).reshape(-1, g.shape[-1])
    grad = jnp.zeros((rows, g.shape[-1]), g.dtype).at[local.reshape(-1)].add(contributions)
    return grad, None


sharded_lookup.defvjp(_lookup_fwd, _lookup_bwd)


def apply_layer(module, role: str, x, tensor: int, data_axes, all_axes):
    """One layer of a stage on this device's activation dict, by its role."""
    if role == ATTENTION:
        return attention(module, x, tensor)
    if role == FFN:
        return feed_forward(module, x)
    if role in (COLUMN, ROW):
        return dense(module, x, role)
    if role == EMBEDDING:
        return pooled_embedding(module, x, data_axes, all_axes)
    return module(x)
