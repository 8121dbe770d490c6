"""The arrays the jnp searches score schedules with, each estimated before it is built."""

from __future__ import annotations

from hps.config.types import Catalog, Job, Workload


def search_arrays(workload: Workload, catalog: Catalog, job: Job):
    """(params, segment table or None) of the jnp searches: the jnp model (its own scan over every
    unit count) where its arrays fit memory, else the numpy segment table padded to size buckets;
    InstanceTooLarge naming the estimate when neither fits (`hps.contract.memory`)."""
    from hps.contract.memory import jnp_model_bytes, numpy_table_bytes, refuse_past_memory
    from hps.costmodel.schedule import build_params
    from hps.costmodel.schedule.numpy_table import LAYER_BUCKETS, TYPE_BUCKETS, bucket, searchable
    from hps.errors import InstanceTooLarge

    layers, types = len(workload.layers), len(catalog.resources)
    units = max(r.max_units for r in catalog.resources)
    try:
        what = f"the jnp placement model of {layers} layers x {types} types x {units} units per type"
        refuse_past_memory(what, jnp_model_bytes(layers, types, units))
        return build_params(workload, catalog, job), None
    except InstanceTooLarge:  # the jnp model's replica scan is too large: the numpy table, bucketed
        pass
    padded = bucket(layers, LAYER_BUCKETS), bucket(types, TYPE_BUCKETS)
    what = f"the search table of {layers} layers x {types} types (padded to {padded[0]} x {padded[1]})"
    refuse_past_memory(what, numpy_table_bytes(layers, types, *padded))
    return searchable(workload, catalog, job)
