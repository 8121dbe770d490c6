"""Padded jnp pytrees of one placement instance (workload × catalogue × job).

Shapes: L layers, T resource types, D network dimensions (4, or 6 where a type's network has
more than 4), K replica counts (k = 1..K).
Padding: layers and types carry masks; padded network dimensions have size 1 (they drop out).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.collective.model.network import dims_bucket, network_arrays
from hps.config.limits import DENSE_MODEL_BYTES
from hps.config.types import LAYER_NUMBERS, Catalog, Job, Network, Workload
from hps.config.validation import validate_job
from hps.errors import ConfigError, InstanceTooLarge


@struct.dataclass
class PlacementParams:
    """One instance. Per-layer arrays (L,) are per sample: FLOP, bytes. Per-type arrays (T,):
    FLOP/s, bytes/s, bytes, $/unit-hour. Network arrays (T, D). Job scalars: batch (samples
    per iteration), throughput floor (samples/s), samples to train."""

    layer_mask: jnp.ndarray
    layer_sparse: jnp.ndarray
    flops: jnp.ndarray
    mem_bytes: jnp.ndarray
    io_bytes: jnp.ndarray
    act_bytes: jnp.ndarray
    dense_param_bytes: jnp.ndarray
    sparse_param_bytes: jnp.ndarray
    measured_time: jnp.ndarray  # (L, T) seconds per sample
    measured_mask: jnp.ndarray  # (L, T) bool
    type_mask: jnp.ndarray
    peak_flops: jnp.ndarray
    efficiency_dense: jnp.ndarray
    efficiency_sparse: jnp.ndarray
    mem_bw: jnp.ndarray
    io_bw: jnp.ndarray
    nic_bw: jnp.ndarray
    memory: jnp.ndarray
    price_per_hour: jnp.ndarray
    max_units: jnp.ndarray  # (T,) int32
    net_size: jnp.ndarray  # (T, D) int32
    net_bandwidth: jnp.ndarray  # (T, D) bytes/s
    net_latency: jnp.ndarray  # (T, D) seconds per step
    net_algorithm: jnp.ndarray  # (T, D) int32, index into ALGORITHMS
    unit_grid: jnp.ndarray  # (K,) float32, 1..K; its length fixes K
    batch: jnp.ndarray
    throughput: jnp.ndarray
    samples: jnp.ndarray
    use_themis: jnp.ndarray  # bool scalar
    chunks: jnp.ndarray  # int32 scalar
    micro_batches: jnp.ndarray  # float32 scalar, inf: no pipeline bubble
    shard: jnp.ndarray  # bool scalar: a stage may shard its state (state_sharding "auto")

    @property
    def max_layers(self) -> int:
        return self.layer_mask.shape[-1]

    @property
    def max_types(self) -> int:
        return self.type_mask.shape[-1]

    @property
    def max_replicas(self) -> int:
        return self.unit_grid.shape[-1]


def _pad(values, length, fill=0.0, dtype=np.float32):
    out = np.full((length,), fill, dtype=dtype)
    out[: len(values)] = values
    return out


def _layer_arrays(workload: Workload, catalog: Catalog, max_layers: int, max_types: int):
    layers = workload.layers
    measured = np.zeros((max_layers, max_types), np.float32)
    measured_mask = np.zeros((max_layers, max_types), bool)
    for i, layer in enumerate(layers):
        for type_name, seconds in layer.measured_time.items():
            if type_name in catalog.names:
                measured[i, catalog.index(type_name)] = seconds
                measured_mask[i, catalog.index(type_name)] = True
    field = lambda name: _pad([getattr(l, name) for l in layers], max_layers)  # noqa: E731
    return dict(
        layer_mask=_pad([True] * len(layers), max_layers, False, bool),
        layer_sparse=_pad([l.kind == "sparse" for l in layers], max_layers, False, bool),
        **{name: field(name) for name in LAYER_NUMBERS},
        measured_time=measured,
        measured_mask=measured_mask,
    )


TYPE_FIELDS = (
    "peak_flops",
    "efficiency_dense",
    "efficiency_sparse",
    "mem_bw",
    "io_bw",
    "nic_bw",
    "memory",
    "price_per_hour",
)
"""A resource type's figures carried as per-type arrays (T,), in ResourceType's order."""


def _type_arrays(catalog: Catalog, max_types: int):
    res = catalog.resources
    field = lambda name: _pad([getattr(r, name) for r in res], max_types, 1.0)  # noqa: E731
    width = max(dims_bucket(len(r.network.dimensions)) for r in res)  # every type's network padded alike
    padding = network_arrays(Network("padding", ()), width)  # a padded type's network: every dimension padded
    rows = [network_arrays(r.network, width) for r in res] + [padding] * (max_types - len(res))
    net = {key: np.stack([row[key] for row in rows]) for key in padding}
    return dict(
        type_mask=_pad([True] * len(res), max_types, False, bool),
        **{name: field(name) for name in TYPE_FIELDS},
        max_units=_pad([r.max_units for r in res], max_types, 0, np.int32),
        net_size=net["size"],
        net_bandwidth=net["bandwidth"],
        net_latency=net["latency"],
        net_algorithm=net["algorithm"],
    )


def check_dense_size(layers: int, types: int, replicas: int) -> None:
    """InstanceTooLarge when the jnp model's segment table (L·L·T·K float32 numbers, several
    of them, and the L³ layer-membership tensor) would pass DENSE_MODEL_BYTES."""
    needed = 4 * (layers**3 + 6 * layers * layers * types * replicas)
    if needed > DENSE_MODEL_BYTES:
        raise InstanceTooLarge(
            f"the jnp placement model of {layers} layers x {types} types x {replicas} units per type needs about "
            f"{needed / 2**30:,.1f} GiB (limit {DENSE_MODEL_BYTES / 2**30:g} GiB); the exact solver "
            "(hps search --method exact) and hps evaluate work at this size"
        )


def dense_size_fits(layers: int, types: int, replicas: int) -> bool:
    """Whether the jnp model's segment table of these sizes fits DENSE_MODEL_BYTES
    (`check_dense_size` would not raise)."""
    try:
        check_dense_size(layers, types, replicas)
    except InstanceTooLarge:
        return False
    return True


def build_params(
    workload: Workload,
    catalog: Catalog,
    job: Job,
    *,
    max_layers: int | None = None,
    max_types: int | None = None,
    max_replicas: int | None = None,
    scan_replicas: bool = True,
    dense_model: bool = True,
) -> PlacementParams:
    """Pad one instance to (max_layers, max_types, max_replicas); defaults fit it exactly.
    scan_replicas False: no replica grid (K = 0), for searches given a segment table built
    elsewhere (`hps.costmodel.schedule.numpy_table`); the jnp model's own provisioning then
    refuses these params rather than scan nothing. dense_model False: for users that never
    build the segment table (the placement env provisions one stage at a time), so its size
    is not checked."""
    validate_job(job)
    max_layers = max_layers or len(workload.layers)
    max_types = max_types or len(catalog.resources)
    max_replicas = (max_replicas or max(r.max_units for r in catalog.resources)) if scan_replicas else 0
    if len(workload.layers) > max_layers or len(catalog.resources) > max_types:
        raise ConfigError(workload.name, "layer", "instance larger than the padded shape")
    if scan_replicas and max(r.max_units for r in catalog.resources) > max_replicas:
        raise ConfigError(catalog.name, "max_units", f"above the padded replica count {max_replicas}")
    if scan_replicas and dense_model:
        check_dense_size(max_layers, max_types, max_replicas)
    arrays = _layer_arrays(workload, catalog, max_layers, max_types)
    arrays.update(_type_arrays(catalog, max_types))
    arrays = {k: jnp.asarray(v) for k, v in arrays.items()}
    return PlacementParams(
        **arrays,
        unit_grid=jnp.arange(1, max_replicas + 1, dtype=jnp.float32),
        batch=jnp.float32(job.batch),
        throughput=jnp.float32(job.throughput),
        samples=jnp.float32(job.samples),
        use_themis=jnp.asarray(job.collective == "themis"),
        chunks=jnp.int32(job.chunks),
        micro_batches=jnp.float32(job.micro_batches),
        shard=jnp.asarray(job.state_sharding == "auto"),
    )
