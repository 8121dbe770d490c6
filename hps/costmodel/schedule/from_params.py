"""The numpy Instance (hps.costmodel.schedule.provisioning) of a padded PlacementParams, so that the
exact solver can take generated instances (the placement env's, drawn as jnp arrays) as well
as workload and catalogue files.

The real layers and types (the masks) are kept; per-sample layer times and the All-Reduce
table (alpha, beta per type and unit count) are taken as given, float32 values widened to
float64, so the solver optimises the very numbers the jnp model scores.
"""

from __future__ import annotations

import numpy as np

from hps.config.types import ALGORITHMS, Catalog, Dimension, Job, Layer, Network, ResourceType, Workload
from hps.costmodel.schedule.params import TYPE_FIELDS
from hps.costmodel.schedule.provisioning import Instance, suffix_min


def _f64(x) -> np.ndarray:
    return np.asarray(x, np.float64)


def _regions(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(T, K) int64: for each k, the last k with the same (alpha, beta) as k (1-based)."""
    same_as_next = np.concatenate(
        [(alpha[:, 1:] == alpha[:, :-1]) & (beta[:, 1:] == beta[:, :-1]), np.zeros((len(alpha), 1), bool)], 1
    )
    k = np.arange(1, alpha.shape[1] + 1)
    ends = np.where(same_as_next, alpha.shape[1] + 1, k)  # k ends its run where the next differs
    return np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1]


def _network(params, t: int) -> Network:
    size, bandwidth, latency, algorithm = (np.asarray(getattr(params, f"net_{n}"))[t] for n in NET_FIELDS)
    dims = tuple(
        Dimension(int(p), float(b), float(a), ALGORITHMS[int(g)])
        for p, b, a, g in zip(size, bandwidth, latency, algorithm)
        if p > 1
    )
    return Network(f"type{t}", dims or (Dimension(1, 1.0, 0.0, "ring"),))


NET_FIELDS = ("size", "bandwidth", "latency", "algorithm")


def generated_instance(instance) -> Instance:
    """The Instance of one unbatched placement-env instance (a `PlacementInstance` on the host:
    its padded params, All-Reduce table and layer times)."""
    return instance_from_params(instance.placement, instance.alpha, instance.beta, instance.layer_time)


def instance_from_params(params, alpha, beta, layer_time) -> Instance:
    """The Instance of one unbatched PlacementParams with its All-Reduce table alpha, beta
    (T, K: s/byte and s at k = 1..K) and layer times (L, T) s/sample, real layers and types
    only. Layers and types are named l0.. and t0.., the job has the params' scalars."""
    layers, types = int(np.sum(params.layer_mask)), int(np.sum(params.type_mask))
    per_layer = {n: _f64(getattr(params, n))[:layers] for n in LAYER_FIELDS}
    workload = Workload(
        "generated",
        tuple(
            Layer(
                f"l{i}",
                "sparse" if bool(np.asarray(params.layer_sparse)[i]) else "dense",
                *(float(per_layer[n][i]) for n in LAYER_FIELDS),
            )
            for i in range(layers)
        ),
    )
    per_type = {n: _f64(getattr(params, n))[:types] for n in TYPE_FIELDS}
    units = np.asarray(params.max_units)[:types].astype(np.int64)
    resources = tuple(
        ResourceType(f"t{t}", "gpu", *(float(per_type[n][t]) for n in TYPE_FIELDS), int(units[t]), _network(params, t))
        for t in range(types)
    )
    micro = float(params.micro_batches)
    job = Job(
        float(params.batch),
        float(params.throughput),
        float(params.samples),
        collective="themis" if bool(params.use_themis) else "baseline",
        chunks=int(params.chunks),
        micro_batches=micro,
        state_sharding="auto" if bool(params.shard) else "none",
    )
    alpha, beta = _f64(alpha)[:types], _f64(beta)[:types]
    prefix = lambda values: np.concatenate([np.zeros((1, *values.shape[1:])), np.cumsum(values, axis=0)])  # noqa: E731
    return Instance(
        workload=workload,
        catalog=Catalog("generated", resources),
        job=job,
        time_prefix=prefix(_f64(layer_time)[:layers, :types]),
        dense_prefix=prefix(per_layer["dense_param_bytes"]),
        sparse_prefix=prefix(per_layer["sparse_param_bytes"]),
        act_prefix=prefix(per_layer["act_bytes"]),
        dense=per_layer["dense_param_bytes"],
        act=per_layer["act_bytes"],
        nic_bw=per_type["nic_bw"],
        memory=per_type["memory"],
        price=per_type["price_per_hour"],
        max_units=units,
        alpha=alpha,
        beta=beta,
        alpha_lb=suffix_min(alpha),
        beta_lb=suffix_min(beta),
        region_end=_regions(alpha, beta),
    )


LAYER_FIELDS = ("flops", "mem_bytes", "io_bytes", "act_bytes", "dense_param_bytes", "sparse_param_bytes")
