"""Padded jnp parameters of one multi-dimensional network (docs/collective-model.md, "Network").

Shapes: D dimensions, padded to the least of DIMS_BUCKETS = (4, 6) that holds the network;
padded dimensions have size 1, so they take no part in a collective. A batch of networks is
the same pytree with a leading axis (``network_batch``), so one compiled simulator serves
networks of any sizes, bandwidths, latencies and algorithms within a bucket.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.config.limits import DIMS_BUCKETS, MAX_DIMENSION_SIZE, MAX_DIMS, MAX_IN_FLIGHT
from hps.config.types import ALGORITHM_CODE, ALGORITHMS, Network

_RING = ALGORITHMS.index("ring")
_HALVING_DOUBLING = ALGORITHMS.index("halving_doubling")
_MAX_LOG2 = MAX_DIMENSION_SIZE.bit_length() - 1  # ⌈log2 P⌉ counts the powers 2^0..2^15 below P


@struct.dataclass
class NetworkParams:
    """One network, arrays (D,): size (int32 NPUs, padding 1), bandwidth (float32 bytes/s per
    NPU), latency (float32 seconds per step), algorithm (int32 index into ALGORITHMS), in_flight
    (int32 phases served at once, 1 to MAX_IN_FLIGHT; padding 1). lanes (static, not an array):
    the lanes the simulator keeps per dimension, at least every in_flight (`lane_bucket`; the
    default holds any), so one-lane networks compile the one-lane loop."""

    size: jnp.ndarray
    bandwidth: jnp.ndarray
    latency: jnp.ndarray
    algorithm: jnp.ndarray
    in_flight: jnp.ndarray
    lanes: int = struct.field(pytree_node=False, default=MAX_IN_FLIGHT)


def lane_bucket(in_flight) -> int:
    """The lanes a simulation of networks with these in_flight counts (any shape, concrete) needs:
    1 when every dimension serves one phase at a time (the cheaper compile), else MAX_IN_FLIGHT."""
    return 1 if int(np.max(np.asarray(in_flight))) <= 1 else MAX_IN_FLIGHT


def dims_bucket(count: int) -> int:
    """The padded width of a network of `count` dimensions: the least of DIMS_BUCKETS ≥ count."""
    for width in DIMS_BUCKETS:
        if count <= width:
            return width
    raise ValueError(f"a network has at most {MAX_DIMS} dimensions, got {count}")


def network_arrays(network: Network, max_dims: int | None = None) -> dict[str, np.ndarray]:
    """The padded numpy arrays (max_dims,) of one typed network, keyed like NetworkParams;
    max_dims None: its bucket (`dims_bucket`)."""
    dims = network.dimensions
    max_dims = dims_bucket(len(dims)) if max_dims is None else max_dims
    if len(dims) > max_dims:
        raise ValueError(f"network {network.name!r} has {len(dims)} dimensions, at most {max_dims}")
    arrays = dict(
        size=np.ones((max_dims,), np.int32),
        bandwidth=np.ones((max_dims,), np.float32),
        latency=np.zeros((max_dims,), np.float32),
        algorithm=np.zeros((max_dims,), np.int32),
        in_flight=np.ones((max_dims,), np.int32),
    )
    for d, dim in enumerate(dims):
        arrays["size"][d] = dim.size
        arrays["bandwidth"][d] = dim.bandwidth
        arrays["latency"][d] = dim.latency
        arrays["algorithm"][d] = ALGORITHM_CODE[dim.algorithm]
        arrays["in_flight"][d] = dim.in_flight
    return arrays


def network_params(network: Network, max_dims: int | None = None) -> NetworkParams:
    """NetworkParams of one typed network (hps.config.types.Network), padded to max_dims
    (None: its bucket)."""
    arrays = network_arrays(network, max_dims)
    return NetworkParams(**{k: jnp.asarray(v) for k, v in arrays.items()}, lanes=lane_bucket(arrays["in_flight"]))


def phase_dims(network: Network, orders) -> tuple[Network, np.ndarray]:
    """(the network without its dimensions of size 1, orders (C, D) int renumbered onto it,
    (C, D') for its D' dimensions of size > 1). A dimension of size 1 has no phase, so the
    simulation of the result is the simulation of the network, over 2·D' slots per chunk
    instead of 2·D: the other dimensions keep their relative order, hence every tie-break."""
    keep = [d for d, dim in enumerate(network.dimensions) if dim.size > 1]
    index = np.full(len(network.dimensions), -1, np.int64)
    index[keep] = np.arange(len(keep))
    renumbered = index[np.asarray(orders)]
    kept = renumbered[renumbered >= 0].reshape(renumbered.shape[0], len(keep))
    return Network(network.name, tuple(network.dimensions[d] for d in keep)), kept.astype(np.int32)


def network_batch(networks: Sequence[Network], max_dims: int | None = None) -> NetworkParams:
    """NetworkParams with a leading batch axis (N, max_dims), for vmap over networks; max_dims
    None: the widest bucket among them."""
    if max_dims is None:
        max_dims = max(dims_bucket(len(n.dimensions)) for n in networks)
    per_net = [network_arrays(n, max_dims) for n in networks]
    stacked = {k: np.stack([a[k] for a in per_net]) for k in per_net[0]}
    return NetworkParams(**{k: jnp.asarray(v) for k, v in stacked.items()}, lanes=lane_bucket(stacked["in_flight"]))


def steps_per_phase_codes(algorithm, size):
    """`hps.config.types.steps_per_phase` in jnp, over algorithm codes (ALGORITHM_CODE) rather
    than names: ring P−1, direct 1, switch 1, halving_doubling ⌈log2 P⌉; 0 when P = 1.

    algorithm, size: int arrays of one shape -> float32 of that shape (integer-exact).
    """
    ceil_log2 = jnp.sum(jnp.left_shift(1, jnp.arange(_MAX_LOG2)) < size[..., None], axis=-1)
    steps = jnp.where(algorithm == _RING, size - 1, 1)
    steps = jnp.where(algorithm == _HALVING_DOUBLING, ceil_log2, steps)
    return jnp.where(size > 1, steps, 0).astype(jnp.float32)


def active_dims(net: NetworkParams):
    """(D,) bool: the dimensions that take part in a collective (size > 1)."""
    return net.size > 1


def total_size(net: NetworkParams):
    """P = Π_d P_d, int32 scalar."""
    return jnp.prod(net.size)


def ideal_time(net: NetworkParams, total_bytes):
    """T_ideal = 2·S·(P − 1)/P / Σ_d B_d (s), the sum over dimensions of size > 1; 0 when P = 1."""
    p = total_size(net).astype(jnp.float32)
    bandwidth = jnp.sum(jnp.where(active_dims(net), net.bandwidth, 0.0))
    return jnp.where(p > 1, 2.0 * total_bytes * (p - 1.0) / p / jnp.maximum(bandwidth, 1e-30), 0.0)
