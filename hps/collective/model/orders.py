"""Inter-dimension policies (docs/collective-model.md): the order (C, D) in which each chunk of one
All-Reduce of S bytes Reduce-Scatters through the dimensions (All-Gather runs the reverse).

The jnp policies (``baseline_orders``, ``themis_orders``, ``roundrobin_orders``,
``best_fixed_orders``) are pure, jit- and vmap-able over networks, sizes and chunk counts, and
return (max_chunks, D) int32 orders (rows ≥ C unused). max_chunks is static; where a policy is
given the chunk count C and no max_chunks, it pads to the chunk bucket of C
(``hps.config.limits.chunks_bucket``: 256 rows up to 256 chunks, 1,024 up to 1,024; 256 for a
traced C, see ``padded_chunks``), so the common case keeps its 256-row arrays. The baseline
and round-robin orders, which take no chunk count, have 256 rows unless told otherwise.
``explicit_orders`` validates a user's lists in Python; ``policy_orders`` dispatches by name
for the CLI and experiments.
"""

from __future__ import annotations

import itertools
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.model.network import (
    NetworkParams,
    dims_bucket,
    ideal_time,
    network_params,
)
from hps.collective.model.simulator import simulate_allreduce
from hps.collective.model.themis import collective_orders, padded_chunks
from hps.config.limits import CHUNK_BUCKETS, MAX_CHUNKS
from hps.config.types import Network
from hps.errors import ConfigError

ORDER_POLICIES = ("baseline", "themis", "roundrobin", "best-fixed", "explicit", "learned")  # chunk-order policies


@cache
def permutations(dims: int) -> np.ndarray:
    """(dims!, dims) int32: every order of `dims` dimensions, in lexicographic order."""
    return np.array(list(itertools.permutations(range(dims))), np.int32)


def baseline_orders(net: NetworkParams, max_chunks: int = CHUNK_BUCKETS[0]):
    """π = 0..D−1 for every chunk: (max_chunks, D) int32 (max_chunks static; pass
    chunks_bucket(C) for an All-Reduce of more than 256 chunks)."""
    n_dims = net.size.shape[-1]
    return jnp.tile(jnp.arange(n_dims, dtype=jnp.int32), (max_chunks, 1))


def themis_orders(net: NetworkParams, total_bytes, n_chunks, max_chunks: int | None = None):
    """Themis's greedy (hps.collective.model.themis), loads reset for this collective of
    total_bytes (bytes) in n_chunks chunks: (max_chunks, D) int32; max_chunks static (None:
    `padded_chunks` of n_chunks, its chunk bucket)."""
    return _themis_orders(net, total_bytes, n_chunks, padded_chunks(n_chunks, max_chunks))


@partial(jax.jit, static_argnames="max_chunks")
def _themis_orders(net: NetworkParams, total_bytes, n_chunks, max_chunks: int):
    """themis_orders with a resolved static max_chunks."""
    return collective_orders(net.size, net.bandwidth, total_bytes, n_chunks, True, max_chunks)[0]


def roundrobin_orders(net: NetworkParams, max_chunks: int = CHUNK_BUCKETS[0]):
    """Chunk c uses the dimensions of size > 1 in index order rotated by c mod n_active
    (starting at the (c mod n_active)-th), then the size-1 dimensions: (max_chunks, D) int32
    (max_chunks static; pass chunks_bucket(C) for more than 256 chunks)."""
    n_dims = net.size.shape[-1]
    index = jnp.arange(n_dims)
    active = net.size > 1
    n_active = jnp.maximum(jnp.sum(active), 1)
    ranked = jnp.argsort(jnp.where(active, index, n_dims + index)).astype(jnp.int32)  # active first
    chunk = jnp.arange(max_chunks)[:, None]
    rotated = ranked[(index[None, :] + chunk) % n_active]
    return jnp.where(index[None, :] < n_active, rotated, ranked[None, :]).astype(jnp.int32)


def permutation_times(net: NetworkParams, total_bytes, n_chunks, scf, max_chunks: int | None = None):
    """(D!,) s: the completion time when every chunk uses permutation k of permutations(D), for
    an All-Reduce of total_bytes (bytes) in n_chunks ≤ max_chunks chunks (static; None:
    `padded_chunks` of n_chunks)."""
    return _permutation_times(net, total_bytes, n_chunks, scf, padded_chunks(n_chunks, max_chunks))


@partial(jax.jit, static_argnames="max_chunks")
def _permutation_times(net: NetworkParams, total_bytes, n_chunks, scf, max_chunks: int):
    """permutation_times with a resolved static max_chunks."""

    def one(perm):
        orders = jnp.tile(perm, (max_chunks, 1))
        return simulate_allreduce(net, total_bytes, n_chunks, orders, scf, max_chunks).time

    return jax.vmap(one)(jnp.asarray(permutations(net.size.shape[-1])))


def best_fixed_orders(net: NetworkParams, total_bytes, n_chunks, scf, max_chunks: int | None = None):
    """The single permutation that minimises the simulated completion time when every chunk
    uses it (all D! enumerated; ties: the first in lexicographic order, so the baseline wins
    ties). max_chunks static (None: `padded_chunks` of n_chunks). Returns (orders
    (max_chunks, D) int32, permutation (D,) int32)."""
    max_chunks = padded_chunks(n_chunks, max_chunks)
    times = permutation_times(net, total_bytes, n_chunks, scf, max_chunks)
    perm = jnp.asarray(permutations(net.size.shape[-1]))[jnp.argmin(times)]
    return jnp.tile(perm, (max_chunks, 1)), perm


def ideal(net: NetworkParams, total_bytes):
    """The T_ideal bound (s) every policy is compared with."""
    return ideal_time(net, total_bytes)


def explicit_orders(orders, n_dims, n_chunks, max_chunks: int | None = None, source="orders"):
    """Validate a user's order lists -> (max_chunks, D) int32 (numpy), D = dims_bucket(n_dims);
    max_chunks None: chunks_bucket(n_chunks), n_chunks ≤ MAX_CHUNKS.

    orders: one permutation of 0..n_dims−1 for every chunk (n_chunks lists), or one list used by
    all chunks. Dimensions ≥ n_dims (padding) follow in index order. Wrong input raises
    ConfigError naming the field (``orders`` or ``orders[i]``).
    """
    if not isinstance(orders, (list, tuple)) or not orders:
        raise ConfigError(source, "orders", f"must be a non-empty list of orders, got {orders!r}")
    if not isinstance(orders[0], (list, tuple)):
        orders = [orders]
    if len(orders) not in (1, n_chunks):
        problem = f"needs 1 or {n_chunks} orders (one per chunk), got {len(orders)}"
        raise ConfigError(source, "orders", problem)
    limit = MAX_CHUNKS if max_chunks is None else max_chunks
    if n_chunks > limit:
        raise ConfigError(source, "chunks", f"must be at most {limit}, got {n_chunks}")
    max_chunks = padded_chunks(n_chunks, max_chunks)
    rows = []
    for i, order in enumerate(orders):
        ok = isinstance(order, (list, tuple)) and all(type(d) is int for d in order)
        if not ok or sorted(order) != list(range(n_dims)):
            raise ConfigError(source, f"orders[{i}]", f"must be a permutation of 0..{n_dims - 1}, got {order!r}")
        rows.append(list(order) + list(range(n_dims, dims_bucket(n_dims))))
    out = np.tile(np.asarray(rows[0], np.int32), (max_chunks, 1))
    out[: len(rows)] = np.asarray(rows, np.int32)
    return out


def _as_params(net) -> tuple[NetworkParams, int]:
    """(NetworkParams, number of real dimensions) of a typed Network or NetworkParams."""
    if isinstance(net, Network):
        return network_params(net), len(net.dimensions)
    return net, int(net.size.shape[-1])


def policy_orders(policy: str, net, total_bytes, n_chunks, *, orders=None, scf=True, max_chunks: int | None = None):
    """Orders (max_chunks, D) int32 of a named policy for one All-Reduce of total_bytes (bytes)
    in n_chunks chunks, 1 ≤ n_chunks ≤ max_chunks (None: MAX_CHUNKS, and the orders have
    chunks_bucket(n_chunks) rows: 256 up to 256 chunks, 1,024 up to 1,024). net:
    hps.config.types.Network, or NetworkParams (then explicit orders cover all D padded
    dimensions). policy: "baseline", "themis", "roundrobin", "best-fixed" (scf: the discipline
    it is chosen under) or "explicit" (with `orders`); anything else raises ConfigError."""
    params, n_dims = _as_params(net)
    limit = MAX_CHUNKS if max_chunks is None else max_chunks
    if not 1 <= int(n_chunks) <= limit:
        raise ConfigError("chunks", "", f"must be between 1 and {limit}, got {n_chunks}")
    max_chunks = padded_chunks(int(n_chunks), max_chunks)
    if policy == "baseline":
        return baseline_orders(params, max_chunks)
    if policy == "themis":
        return themis_orders(params, total_bytes, n_chunks, max_chunks)
    if policy == "roundrobin":
        return roundrobin_orders(params, max_chunks)
    if policy == "best-fixed":
        return best_fixed_orders(params, total_bytes, n_chunks, scf, max_chunks)[0]
    if policy == "explicit":
        if orders is None:
            raise ConfigError("orders", "", "the explicit policy needs a list of orders")
        return jnp.asarray(explicit_orders(orders, n_dims, int(n_chunks), max_chunks))
    if policy == "learned":
        raise ConfigError(
            "policy",
            "",
            "'learned' orders come from a trained collective policy: give --checkpoint DIR "
            "(hps train --kind collective)",
        )
    raise ConfigError("policy", "", f"unknown policy {policy!r}; expected one of {ORDER_POLICIES}")
