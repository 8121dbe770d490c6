"""The jnp searches' segment table built by the numpy provisioning, for instances whose jnp
model (a scan over every k up to the largest max_units) would not fit in memory.

Every stage (first, last, type) of a schedule gets the smallest k that meets the floor and fits,
found without scanning k (hps.costmodel.schedule.provisioning); the searches then score batches
of schedules against the table as they do against the jnp one. Layers are padded to the next
of LAYER_BUCKETS and types to the next of TYPE_BUCKETS, so one compile of each search serves
every instance of a bucket.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from hps.config.types import Catalog, Job, Workload
from hps.costmodel.schedule.cost import INVALID_TYPE, SegmentTable
from hps.costmodel.schedule.params import PlacementParams, build_params
from hps.costmodel.schedule.provisioning import build_instance, every_stage, provision
from hps.errors import InstanceTooLarge

LAYER_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TYPE_BUCKETS = (4, 8, 16, 32)
TABLE_BYTES = 2**31
"""The most the table (five float32 columns of L·L·T stages, as the searches gather them) may
take; past it the instance is refused, naming its size."""


def bucket(size: int, buckets: tuple[int, ...]) -> int:
    return next((b for b in buckets if size <= b), size)


def searchable(workload: Workload, catalog: Catalog, job: Job) -> tuple[PlacementParams, SegmentTable]:
    """(params padded to the buckets, without the replica scan; its segment table by numpy).
    InstanceTooLarge when the table would pass TABLE_BYTES."""
    layers, types = bucket(len(workload.layers), LAYER_BUCKETS), bucket(len(catalog.resources), TYPE_BUCKETS)
    needed = 20 * layers * layers * types
    if needed > TABLE_BYTES:
        raise InstanceTooLarge(
            f"the search table of {len(workload.layers)} layers x {len(catalog.resources)} types (padded to "
            f"{layers} x {types}) needs about {needed / 2**30:,.1f} GiB (limit {TABLE_BYTES / 2**30:g} GiB); "
            "the exact solver (hps search --method exact) works at this size"
        )
    params = build_params(workload, catalog, job, max_layers=layers, max_types=types, scan_replicas=False)
    return params, numpy_segment_table(workload, catalog, job, layers, types)


def numpy_segment_table(workload: Workload, catalog: Catalog, job: Job, max_layers: int, max_types: int):
    """SegmentTable (max_layers, max_layers, max_types) of every stage of a schedule, padded
    stages and types INVALID_TYPE."""
    inst = build_instance(workload, catalog, job)
    at = every_stage(inst.num_layers, inst.num_types)
    got = provision(inst, *at, 1)
    replicas = np.ones((max_layers, max_layers, max_types), np.int32)
    seconds = np.ones((max_layers, max_layers, max_types), np.float32)
    reason = np.full((max_layers, max_layers, max_types), INVALID_TYPE, np.int32)
    replicas[at], seconds[at], reason[at] = got.replicas, got.time, got.reason
    return SegmentTable(replicas=jnp.asarray(replicas), time=jnp.asarray(seconds), reason=jnp.asarray(reason))
