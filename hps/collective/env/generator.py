"""Random collective instances: a network, a collective size and a chunk count (the
CollectiveEnv *params*). Keyed, pure jnp, jit- and vmap-able.

A network has D ∈ [min_dims, max_dims] real dimensions (the first D of MAX_DIMS = 6 slots; the
rest are size-1 padding), each with a size uniform in [min_size, max_size], a bandwidth
log-uniform in [bandwidth_low, bandwidth_high] GiB/s, a latency uniform in [0, latency_high] s
per step and any algorithm. The collective moves S bytes, log-uniform in [bytes_low,
bytes_high], in C chunks, C log-uniform in [min_chunks, max_chunks + 1) rounded down (every count
in the range occurs, small counts more often). Training batches may stratify C instead
(`stratified_chunks`), which fixes a batch's total number of decisions.

Splits differ in salt AND ranges: `TRAIN_NETWORKS` (2–6 dims, sizes 2–16, 1 MiB–1 GiB) trains;
`HELDOUT_NETWORKS` (3–6 dims, sizes 2–32, 1 MiB–4 GiB, its own salt) is for evaluation only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.collective.model.network import (
    NetworkParams,
    ideal_time,
    network_params,
)
from hps.config.limits import MAX_CHUNKS, MAX_DIMENSION_SIZE, MAX_DIMS, MAX_NETWORK_SIZE
from hps.config.types import ALGORITHMS, Network
from hps.config.validation import GIB, MIB, check_range
from hps.rl.env import traced_bounds


@dataclass(frozen=True)
class NetworkSplit:
    """A distribution of collective instances (inclusive ranges; see the module docstring).
    salt is folded into every key, so two splits never share an instance."""

    name: str
    min_dims: int = 2
    max_dims: int = MAX_DIMS
    min_size: int = 2
    max_size: int = 16
    bandwidth_low_GiBps: float = 1.0
    bandwidth_high_GiBps: float = 1000.0
    latency_high_s: float = 10e-6
    bytes_low: float = float(MIB)
    bytes_high: float = float(GIB)
    min_chunks: int = 4
    max_chunks: int = 64
    salt: int = 0

    def __post_init__(self):
        check_range(self, "dims", self.min_dims, self.max_dims, least=1, most=MAX_DIMS)
        check_range(self, "sizes", self.min_size, self.max_size, least=2, most=MAX_DIMENSION_SIZE)
        if self.max_size**self.max_dims > MAX_NETWORK_SIZE:  # the int32 NPU count of the largest network drawn
            raise ValueError(f"max_size ** max_dims must be at most {MAX_NETWORK_SIZE:,} NPUs: {self}")
        check_range(self, "bandwidths", self.bandwidth_low_GiBps, self.bandwidth_high_GiBps, above=0)
        check_range(self, "latency", 0, self.latency_high_s, least=0)
        check_range(self, "bytes", self.bytes_low, self.bytes_high, above=0)
        check_range(self, "chunks", self.min_chunks, self.max_chunks, least=1, most=MAX_CHUNKS)


@struct.dataclass
class NetworkBounds:
    """NetworkSplit's numbers as (traced) arrays."""

    min_dims: jnp.ndarray
    max_dims: jnp.ndarray
    min_size: jnp.ndarray
    max_size: jnp.ndarray
    bandwidth_low_GiBps: jnp.ndarray
    bandwidth_high_GiBps: jnp.ndarray
    latency_high_s: jnp.ndarray
    bytes_low: jnp.ndarray
    bytes_high: jnp.ndarray
    min_chunks: jnp.ndarray
    max_chunks: jnp.ndarray
    salt: jnp.ndarray


TRAIN_NETWORKS = NetworkSplit("train", salt=0)
HELDOUT_NETWORKS = NetworkSplit("heldout", min_dims=3, max_size=32, bytes_high=4.0 * GIB, salt=1)


@struct.dataclass
class CollectiveInstance:
    """One All-Reduce: net (NetworkParams (D,)), total_bytes S () bytes, n_chunks C () int32,
    ideal () s = T_ideal of S on net."""

    net: NetworkParams
    total_bytes: jnp.ndarray
    n_chunks: jnp.ndarray
    ideal: jnp.ndarray


def collective_instance(net: NetworkParams | Network, total_bytes, n_chunks) -> CollectiveInstance:
    """The env params of one All-Reduce of total_bytes in n_chunks chunks on `net` (a typed
    Network, padded to its dimension bucket, or NetworkParams)."""
    if isinstance(net, Network):
        net = network_params(net)
    total_bytes = jnp.asarray(total_bytes, jnp.float32)
    return CollectiveInstance(net, total_bytes, jnp.asarray(n_chunks, jnp.int32), ideal_time(net, total_bytes))


def uniform_int(u, low, high):
    """Integers uniform in [low, high] from uniforms u in [0, 1) (int32)."""
    return jnp.clip(jnp.floor(low + u * (high - low + 1)), low, high).astype(jnp.int32)


def log_scale(u, low, high):
    """Values in [low, high] with uniform log from uniforms u in [0, 1) (float32)."""
    return jnp.exp(jnp.log(low) + u * (jnp.log(high) - jnp.log(low))).astype(jnp.float32)


def random_network(u, split: NetworkSplit | NetworkBounds = TRAIN_NETWORKS) -> NetworkParams:
    """One random network of `split` from uniforms u (5, MAX_DIMS) in [0, 1) (rows: dimension
    count (first entry), sizes, bandwidths, latencies, algorithms): real dimensions first, size-1
    padding after. One draw of uniforms per instance keeps the generator cheap to compile."""
    n_dims = uniform_int(u[0, 0], split.min_dims, split.max_dims)
    real = jnp.arange(MAX_DIMS) < n_dims
    size = uniform_int(u[1], split.min_size, split.max_size)
    bandwidth = log_scale(u[2], split.bandwidth_low_GiBps, split.bandwidth_high_GiBps) * GIB
    latency = u[3] * split.latency_high_s
    algorithm = uniform_int(u[4], 0, len(ALGORITHMS) - 1)
    return NetworkParams(
        size=jnp.where(real, size, 1).astype(jnp.int32),
        bandwidth=jnp.where(real, bandwidth, 1.0).astype(jnp.float32),
        latency=jnp.where(real, latency, 0.0).astype(jnp.float32),
        algorithm=jnp.where(real, algorithm, 0).astype(jnp.int32),
        in_flight=jnp.ones((MAX_DIMS,), jnp.int32),
        lanes=1,
    )


def draw_chunks(u, split: NetworkSplit | NetworkBounds):
    """C log-uniform in [min_chunks, max_chunks + 1) rounded down (int32), from a uniform u."""
    chunks = jnp.floor(log_scale(u, split.min_chunks, split.max_chunks + 1.0))
    return jnp.clip(chunks, split.min_chunks, split.max_chunks).astype(jnp.int32)


def stratified_chunks(count: int, split: NetworkSplit) -> np.ndarray:
    """(count,) int32 chunk counts at the midpoints of `count` equal-probability strata of the
    split's chunk distribution. Their sum is known before tracing, so a batch drawn with them
    (`generate_collectives(..., stratified=True)`) has a fixed total number of decisions."""
    u = (np.arange(count) + 0.5) / count
    low, high = np.log(split.min_chunks), np.log(split.max_chunks + 1.0)
    chunks = np.floor(np.exp(low + u * (high - low)))
    return np.clip(chunks, split.min_chunks, split.max_chunks).astype(np.int32)


def generate_collective(key, split: NetworkSplit | NetworkBounds = TRAIN_NETWORKS, chunks=None) -> CollectiveInstance:
    """One random instance of `split` (the split's numbers may be traced); `chunks`, when
    given, replaces the drawn chunk count."""
    u = jax.random.uniform(jax.random.fold_in(key, split.salt), (6, MAX_DIMS))
    net = random_network(u[:5], split)
    total_bytes = log_scale(u[5, 0], split.bytes_low, split.bytes_high)
    chunks = draw_chunks(u[5, 1], split) if chunks is None else jnp.asarray(chunks, jnp.int32)
    return collective_instance(net, total_bytes, chunks)


def generate_collectives(
    key, count: int, split: NetworkSplit = TRAIN_NETWORKS, *, stratified: bool = False
) -> CollectiveInstance:
    """`count` instances of `split` in one vmapped call (leading (count,) axis on every leaf).
    stratified: chunk counts are `stratified_chunks(count, split)` in random order (each
    instance's count still follows the split's distribution). Compiles once per count."""
    if not stratified:
        return _generate(key, traced_bounds(split, NetworkBounds), count)
    return _generate_with_chunks(key, traced_bounds(split, NetworkBounds), jnp.asarray(stratified_chunks(count, split)))


@partial(jax.jit, static_argnames=("count",))
def _generate(key, bounds: NetworkBounds, count: int) -> CollectiveInstance:
    return jax.vmap(lambda k: generate_collective(k, bounds))(jax.random.split(key, count))


@jax.jit
def _generate_with_chunks(key, bounds: NetworkBounds, chunks) -> CollectiveInstance:
    key, order_key = jax.random.split(key)
    chunks = jax.random.permutation(order_key, chunks)
    keys = jax.random.split(key, chunks.shape[0])
    return jax.vmap(lambda k, c: generate_collective(k, bounds, c))(keys, chunks)
