"""Placement instance generators: keyed, pure, jit- and vmap-able (the env *params*).

`generate_instances(key, count, split)` makes `count` padded instances in one vmapped call:
a random layer table (`workload_gen`), a random catalogue around cloud-2024 (`catalog_gen`), a
job (batch ∈ {1024, 4096, 8192}, Themis with 64 chunks) and a throughput floor drawn log-uniformly
below what the instance reaches, plus the tables every episode reuses (All-Reduce alpha/beta,
per-layer times) and the reference cost: the best feasible single-type plan (+inf if none).

Splits differ in seeds AND sizes: `TRAIN` (4–24 layers) and `HELDOUT` (4–32 layers) fold a
different salt into the key, and `HELDOUT_LARGE` (24–32 layers) tests size generalisation.
`HARD_TRAIN` (16–48 layers) and `HARD_HELDOUT` (64 layers), both of 8–16 types, draw tight
pooled caps, smaller memories and floors near the single types' reach (`HARD_KNOBS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.config.limits import (
    MAX_CATALOG_TYPES,
    MAX_WORKLOAD_LAYERS,
    POLICY_LAYER_BUCKETS,
    POLICY_TYPE_BUCKETS,
    POLICY_TYPES,
    POLICY_UNITS,
    policy_bucket,
)
from hps.config.validation import check_range
from hps.costmodel.schedule.allreduce import allreduce_table
from hps.costmodel.schedule.cost import FEASIBLE, THROUGHPUT, layer_time, provision
from hps.costmodel.schedule.params import PlacementParams
from hps.placement.env.catalog_gen import CHUNKS, log_uniform, random_catalog
from hps.placement.env.workload_gen import random_workload
from hps.rl.env import traced_bounds

BATCHES = (1024.0, 4096.0, 8192.0)
SAMPLES_LOW, SAMPLES_HIGH = 1e8, 1e10
UNREACHABLE_FLOOR = 1e30  # samples/s: provisioning then reports every stage at max_units


@dataclass(frozen=True)
class InstanceSplit:
    """A distribution of placement instances (ranges inclusive)."""

    name: str
    min_layers: int = 4
    max_layers: int = 24
    """Layers of a workload."""
    min_types: int = 2
    max_types: int = POLICY_TYPES
    """Resource types of a catalogue."""
    floor_low: float = 0.02
    floor_high: float = 1.0
    """The throughput floor: a log-uniform fraction in [floor_low, floor_high] of the best
    single-type throughput at full allocation (above 1: floors no single type reaches)."""
    cap_low: float = 0.25
    cap_high: float = 1.0
    """Each type's max_units (its pooled cap, over all its stages): the base type's cap × a
    log-uniform fraction in [cap_low, cap_high] (at most 1)."""
    memory_low: float = 1.0
    memory_high: float = 1.0
    """Each type's memory × a log-uniform factor in [memory_low, memory_high] (below 1: memory
    that forces pipeline cuts)."""
    salt: int = 0
    """Folded into every key, so two splits never share an instance."""

    def __post_init__(self):
        check_range(self, "layers", self.min_layers, self.max_layers, least=4, most=MAX_WORKLOAD_LAYERS)
        check_range(self, "types", self.min_types, self.max_types, least=1, most=MAX_CATALOG_TYPES)
        check_range(self, "floor fractions", self.floor_low, self.floor_high, above=0)
        check_range(self, "cap fractions", self.cap_low, self.cap_high, above=0, most=1.0)
        check_range(self, "memory factors", self.memory_low, self.memory_high, above=0)

    @property
    def padded_layers(self) -> int:
        """L of the split's instances: the least layer bucket that holds max_layers."""
        return policy_bucket(self.max_layers, POLICY_LAYER_BUCKETS)

    @property
    def padded_types(self) -> int:
        """T of the split's instances: the least type bucket that holds max_types."""
        return policy_bucket(self.max_types, POLICY_TYPE_BUCKETS)


@struct.dataclass
class SplitBounds:
    """InstanceSplit's numbers as (traced) arrays."""

    min_layers: jnp.ndarray
    max_layers: jnp.ndarray
    min_types: jnp.ndarray
    max_types: jnp.ndarray
    floor_low: jnp.ndarray
    floor_high: jnp.ndarray
    cap_low: jnp.ndarray
    cap_high: jnp.ndarray
    memory_low: jnp.ndarray
    memory_high: jnp.ndarray
    salt: jnp.ndarray


TRAIN = InstanceSplit("train", 4, 24, salt=0)
HELDOUT = InstanceSplit("heldout", 4, 32, salt=1)
HELDOUT_LARGE = InstanceSplit("heldout-large", 24, 32, salt=2)

HARD_KNOBS = dict(floor_low=0.5, floor_high=1.0, cap_low=0.05, cap_high=0.3, memory_low=0.25, memory_high=1.0)
"""Hard instances: pooled caps of 5–30 % of the base type's, floors of half to all of what the
best single type reaches at its cap, and memory down to a quarter, so that plans must mix
types and cut pipelines."""
HARD_TRAIN = InstanceSplit("hard-train", 16, 48, 8, 16, **HARD_KNOBS, salt=10)
HARD_HELDOUT = InstanceSplit("hard-heldout", 64, 64, 8, 16, **HARD_KNOBS, salt=11)
"""Evaluation only: other seeds and longer workloads than HARD_TRAIN."""


@struct.dataclass
class PlacementInstance:
    """One environment instance. placement: the padded PlacementParams (L layers, T types and
    K = POLICY_UNITS replica counts for generated instances; size buckets of
    hps.config.limits).
    alpha (T, K) s/byte and beta (T, K) s: its All-Reduce table. layer_time (L, T): seconds per
    sample of each layer on each type. reference_cost: $ of the best feasible single-type plan,
    +inf if none. cost_scale: $ the env divides costs by — reference_cost when finite, else the
    cheapest single type's cost at full allocation (a finite stand-in)."""

    placement: PlacementParams
    alpha: jnp.ndarray
    beta: jnp.ndarray
    layer_time: jnp.ndarray
    reference_cost: jnp.ndarray
    cost_scale: jnp.ndarray


def single_type_stages(params: PlacementParams, alpha, beta):
    """Every real layer as one stage on each type: (cost $ to train params.samples, time s per
    iteration, reason), each (T,), by the cost model's `provision` (one stage has no boundary
    activations). O(T·(L + K)), where scoring the T single-type schedules would build (T, L, L)
    tensors."""
    real = params.layer_mask
    time_sum = jnp.sum(jnp.where(real[:, None], layer_time(params), 0.0), axis=0)  # (T,) s/sample
    total = lambda values: jnp.sum(jnp.where(real, values, 0.0))  # noqa: E731
    replicas, time, reason = provision(
        params,
        time_sum,
        0.0,
        total(params.dense_param_bytes),
        total(params.sparse_param_bytes),
        total(params.act_bytes),
        alpha,
        beta,
    )
    cost = replicas.astype(jnp.float32) * params.price_per_hour * (params.samples * time / params.batch) / 3600.0
    return cost, time, reason


def full_allocation(params: PlacementParams, alpha, beta):
    """Per type (T,): throughput (samples/s) and cost ($) of the single-type plan at max_units,
    and whether its memory fits there (so that a floor at or below that throughput is met)."""
    unreachable = params.replace(throughput=jnp.float32(UNREACHABLE_FLOOR))
    cost, time, reason = single_type_stages(unreachable, alpha, beta)
    fits = (reason == THROUGHPUT) & params.type_mask
    return params.batch / time, cost, fits


def reference_cost(params: PlacementParams, alpha, beta) -> jnp.ndarray:
    """$ of the cheapest feasible single-type plan (padded types excluded), +inf when none is
    feasible."""
    cost, _, reason = single_type_stages(params, alpha, beta)
    return jnp.min(jnp.where((reason == FEASIBLE) & params.type_mask, cost, jnp.inf))


def make_instance(params: PlacementParams, alpha=None, beta=None) -> PlacementInstance:
    """The env params of one PlacementParams (e.g. from `build_params`); computes the All-Reduce
    table unless given."""
    if alpha is None:
        alpha, beta = allreduce_table(params)
    reference = reference_cost(params, alpha, beta)
    _, full_cost, fits = full_allocation(params, alpha, beta)
    stand_in = jnp.min(jnp.where(fits, full_cost, jnp.inf))
    stand_in = jnp.where(jnp.isfinite(stand_in), stand_in, jnp.min(jnp.where(params.type_mask, full_cost, jnp.inf)))
    scale = jnp.where(jnp.isfinite(reference), reference, stand_in)
    return PlacementInstance(params, alpha, beta, layer_time(params), reference, scale)


def _floor(key, params, alpha, beta, split: InstanceSplit):
    """Floor R (samples/s) = best single-type throughput at full allocation × log-uniform
    [floor_low, floor_high]; 1e4 samples/s when no type fits in memory."""
    throughput, _, fits = full_allocation(params, alpha, beta)
    reach = jnp.max(jnp.where(fits, throughput, 0.0))
    reach = jnp.where(reach > 0, reach, 1e4)
    return reach * log_uniform(key, (), split.floor_low, split.floor_high)


def generate_instance(key, split: InstanceSplit | SplitBounds = TRAIN, sizes: tuple[int, int] | None = None):
    """One random PlacementInstance of `split`, padded to sizes = (L, T) (default the split's
    own buckets; required when the split's numbers are traced, `SplitBounds`), K = POLICY_UNITS."""
    max_layers, max_types = sizes or (split.padded_layers, split.padded_types)
    key = jax.random.fold_in(key, split.salt)
    k_n, k_t, k_work, k_cat, k_batch, k_samples, k_floor = jax.random.split(key, 7)
    n_layers = jax.random.randint(k_n, (), split.min_layers, split.max_layers + 1)
    n_types = jax.random.randint(k_t, (), split.min_types, split.max_types + 1)
    fields = random_workload(k_work, n_layers, max_layers)
    caps, memory = (split.cap_low, split.cap_high), (split.memory_low, split.memory_high)
    catalog = random_catalog(k_cat, n_types, max_types, POLICY_UNITS, caps=caps, memory=memory)
    alpha, beta = catalog.pop("alpha"), catalog.pop("beta")
    params = PlacementParams(
        **fields,
        **catalog,
        measured_time=jnp.zeros((max_layers, max_types), jnp.float32),
        measured_mask=jnp.zeros((max_layers, max_types), bool),
        unit_grid=jnp.arange(1, POLICY_UNITS + 1, dtype=jnp.float32),
        batch=jnp.asarray(BATCHES, jnp.float32)[jax.random.randint(k_batch, (), 0, len(BATCHES))],
        throughput=jnp.float32(1.0),
        samples=log_uniform(k_samples, (), SAMPLES_LOW, SAMPLES_HIGH),
        use_themis=jnp.asarray(True),
        chunks=jnp.int32(CHUNKS),
        micro_batches=jnp.float32(jnp.inf),
        shard=jnp.asarray(False),
    )
    params = params.replace(throughput=_floor(k_floor, params, alpha, beta, split))
    return make_instance(params, alpha, beta)


COUNT_BUCKETS = (1, 4, 16, 64, 256)
"""Instances per call of the compiled generator: a count is generated in blocks of one of these
sizes, so a size bucket compiles at most five generator programs whatever the counts asked."""
BLOCK_ELEMENTS = 1 << 22
"""Largest instances × L × T of one block: long workloads on big catalogues come in smaller
blocks."""


def generation_block(count: int, sizes: tuple[int, int]) -> int:
    """Instances per generator call for `count` instances padded to sizes = (L, T): the least
    count bucket that holds `count`, at most the largest whose block stays under BLOCK_ELEMENTS."""
    layers, types = sizes
    fitting = [b for b in COUNT_BUCKETS if b == 1 or b * layers * types <= BLOCK_ELEMENTS]
    return next((b for b in fitting if b >= count), fitting[-1])


def generate_instances(key, count: int, split: InstanceSplit = TRAIN) -> PlacementInstance:
    """`count` instances of `split`: every leaf gets a leading (count,) axis. Instance i is
    generated from key i of `jax.random.split(key, count)` alone, so it is the same instance
    whatever the count (floats to float32 rounding: each block size is compiled its own way).
    They come from vmapped blocks of `generation_block` keys, one compiled program per block
    size and size bucket (the split's numbers are traced), concatenated on the host. Under a
    trace (a traced key) one vmapped call."""
    sizes = (split.padded_layers, split.padded_types)
    bounds = traced_bounds(split, SplitBounds)
    if isinstance(key, jax.core.Tracer):
        return _generate_block(jax.random.split(key, count), bounds, sizes)
    block = generation_block(count, sizes)
    blocks = max(-(-count // block), 1)  # count 0: one block, cut to none
    keys = np.asarray(jax.random.split(key, blocks * block))  # key i is the same for any count
    parts = [_generate_block(keys[b * block : (b + 1) * block], bounds, sizes) for b in range(blocks)]
    if blocks == 1 and block == count:
        return parts[0]
    return jax.tree.map(lambda *leaves: jnp.asarray(np.concatenate(leaves)[:count]), *parts)


@partial(jax.jit, static_argnames=("sizes",))
def _generate_block(keys, bounds: SplitBounds, sizes: tuple[int, int]) -> PlacementInstance:
    return jax.vmap(lambda k: generate_instance(k, bounds, sizes))(keys)
