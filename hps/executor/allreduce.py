"""The planned hierarchical All-Reduce (docs/executor.md, docs/collective-model.md), run inside
``jax.shard_map``: the input splits into C chunks; each chunk Reduce-Scatters
(``lax.psum_scatter``, tiled) over the mesh axes in its planned order, then All-Gathers
(``lax.all_gather``, tiled) over them in reverse. The result equals ``lax.psum`` over the axes.

Orders are static numpy (C, A) int arrays of mesh-axis indices; ``planned_orders`` derives them
from the collective simulator's policies on the network dimensions a stage spans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral

import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from hps.collective.model.orders import policy_orders
from hps.config.limits import MAX_CHUNKS
from hps.config.types import Network
from hps.errors import ConfigError
from hps.executor.mesh import used_network

PLANNED_POLICIES = ("baseline", "themis", "roundrobin", "best-fixed", "learned")


def check_orders(orders, n_axes: int) -> np.ndarray:
    """orders as (C, A) int numpy, every row a permutation of 0..A−1 (else ValueError)."""
    orders = np.asarray(orders)
    if orders.ndim != 2 or orders.shape[0] < 1 or orders.shape[1] != n_axes:
        raise ValueError(f"orders must be (chunks >= 1, {n_axes}), got shape {orders.shape}")
    if not (np.sort(orders, axis=1) == np.arange(n_axes)).all():
        raise ValueError(f"every order must be a permutation of 0..{n_axes - 1}, got {orders.tolist()}")
    return orders.astype(np.int32)


def chunk_allreduce(chunk, axes: Sequence[str]):
    """Sum of a (n,) chunk over `axes`: Reduce-Scatter through them in order, All-Gather back
    in reverse. n must divide by the product of the axis sizes. The result is typed invariant
    over the axes, as lax.psum's is, so shard_map accepts an unsharded out_spec for it."""
    for axis in axes:
        chunk = lax.psum_scatter(chunk, axis, scatter_dimension=0, tiled=True)
    for axis in reversed(axes):
        chunk = lax.all_gather(chunk, axis, axis=0, tiled=True, to="invarying")
    return chunk


def hierarchical_allreduce(x, orders, axis_names: Sequence[str]):
    """lax.psum(x, axis_names), computed chunk by chunk in the planned orders. Call inside
    jax.shard_map. x: this device's array, any shape and dtype; orders: static (C, A) ints,
    row c the order of mesh axes (indices into axis_names) chunk c Reduce-Scatters through.
    x is flattened and zero-padded to C·n elements, n a multiple of Π axis sizes."""
    orders = check_orders(orders, len(axis_names))
    flat = jnp.ravel(x)
    if flat.size == 0:
        return x
    n_chunks = orders.shape[0]
    group = math.prod(lax.axis_size(name) for name in axis_names)
    chunk_len = -(-flat.size // (n_chunks * group)) * group
    chunks = jnp.pad(flat, (0, n_chunks * chunk_len - flat.size)).reshape(n_chunks, chunk_len)
    summed = [chunk_allreduce(chunks[c], [axis_names[a] for a in order]) for c, order in enumerate(orders)]
    return jnp.concatenate(summed)[: flat.size].reshape(x.shape)


def allreduce_tree(tree, orders, axis_names: Sequence[str]):
    """hierarchical_allreduce of every leaf of a pytree (e.g. a stage's gradients) as one
    collective over their concatenation (leaves promote to a common dtype, then back)."""
    flat, unravel = ravel_pytree(tree)
    return unravel(hierarchical_allreduce(flat, orders, axis_names))


def planned_orders(
    policy: str, network: Network, replicas: int, total_bytes: float, chunks: int, *, learned_orders=None
) -> np.ndarray:
    """(chunks, A) int32 orders over the mesh axes of ``stage_mesh`` for `replicas` units on
    `network`: the policy (PLANNED_POLICIES) applied to one All-Reduce of total_bytes (bytes) in
    `chunks` chunks on the network those units span (``used_network``: used dimensions at their
    used sizes). "learned" asks `learned_orders(network, total_bytes, chunks)` for the
    (≥ chunks, D) orders of a trained collective policy (the caller loads the policy;
    the executor only receives orders)."""
    if policy not in PLANNED_POLICIES:
        raise ConfigError("policy", "", f"unknown policy {policy!r}; expected one of {PLANNED_POLICIES}")
    if policy == "learned" and learned_orders is None:
        raise ConfigError("checkpoint", "", "the learned policy needs a collective policy checkpoint")
    if not isinstance(chunks, Integral) or not 1 <= chunks <= MAX_CHUNKS:
        raise ConfigError("chunks", "", f"must be an integer between 1 and {MAX_CHUNKS}, got {chunks!r}")
    chunks = int(chunks)
    net = used_network(network, replicas)
    n_axes = len(net.dimensions)
    if n_axes == 1:
        return np.zeros((chunks, 1), np.int32)  # one axis: every policy's only order
    if policy == "learned":
        orders = learned_orders(net, total_bytes, chunks)
    else:
        orders = policy_orders(policy, net, total_bytes, chunks)
    return dims_to_axes(np.asarray(orders)[:chunks], n_axes)


def dims_to_axes(orders: np.ndarray, n_axes: int) -> np.ndarray:
    """Orders over the padded dimensions of a used network (C, D) -> (C, A) orders over
    mesh axes: padding dimensions (≥ A) dropped; used dimension j is mesh axis j."""
    return np.array([[d for d in row if d < n_axes] for row in orders.tolist()], np.int32)
