"""Iteration level (docs/collective-model.md): per-layer gradient All-Reduces of data-parallel training share the
network with each other and overlap the backward pass.

Back-propagation reaches layers in reverse order; as it finishes a layer with dense parameters,
that layer's gradient All-Reduce (dense_param_bytes, in C chunks) is issued. All chunks of all
collectives go through one event-driven simulation, chunk ids in issue order, each released at
its collective's issue time; orders come from the policy per collective (Themis loads start at 0
for every collective). Iteration time = forward + max(backward end, last collective end).

Compute times come from the placement model's per-sample layer time on one resource type, times
the per-NPU batch; a layer's forward is one third of its forward+backward time (the usual 1:2
split of forward and backward FLOPs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.model.network import NetworkParams
from hps.collective.model.orders import policy_orders
from hps.collective.model.simulator import simulate
from hps.config.types import Catalog, Job, ResourceType, Workload
from hps.costmodel.schedule import build_params, layer_time

FORWARD_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class IterationResult:
    """One data-parallel iteration. Times in seconds."""

    policy: str
    forward: float
    backward: float
    comm_end: float  # when the last collective finishes, from the start of backward
    iteration: float
    exposed_comm: float  # max(comm_end − backward, 0): communication not hidden by compute
    collectives: int


def layer_seconds(workload: Workload, resource: ResourceType, batch_per_npu: float) -> np.ndarray:
    """(L,) seconds of forward+backward per layer for batch_per_npu samples on one unit.

    Input io is left out: data loading is prefetched and overlaps the step, as in the Themis
    paper's end-to-end runs, so only the compute/memory roofline counts here."""
    job = Job(batch=batch_per_npu, throughput=1.0, samples=1.0)
    no_io = dataclasses.replace(workload, layers=tuple(dataclasses.replace(l, io_bytes=0.0) for l in workload.layers))
    params = build_params(no_io, Catalog("one", (resource,)), job)
    return np.asarray(layer_time(params))[:, 0].astype(np.float64) * batch_per_npu


def gradient_collectives(workload: Workload, seconds: np.ndarray, dense_only: bool = False):
    """(issue times s from the start of backward, sizes bytes) in issue order, and backward s.

    dense_only: skip sparse layers' gradients (their embedding tables are not all-reduced)."""
    backward = seconds * (1.0 - FORWARD_SHARE)
    issue, size, clock = [], [], 0.0
    for l in reversed(range(len(workload.layers))):
        clock += backward[l]
        layer = workload.layers[l]
        if layer.dense_param_bytes > 0 and not (dense_only and layer.kind == "sparse"):
            issue.append(clock)
            size.append(layer.dense_param_bytes)
    return np.asarray(issue), np.asarray(size), float(backward.sum())


def _chunk_arrays(net: NetworkParams, issue, size, chunks, policy, scf):
    """Concatenated chunk_bytes, release, orders (G·C, ...) of all collectives, in issue order."""
    orders = [np.asarray(policy_orders(policy, net, float(s), chunks, scf=scf, max_chunks=chunks)) for s in size]
    chunk_bytes = np.repeat(size / chunks, chunks).astype(np.float32)
    release = np.repeat(issue, chunks).astype(np.float32)
    return chunk_bytes, release, np.concatenate(orders).astype(np.int32)


def iteration_time(
    net: NetworkParams,
    workload: Workload,
    resource: ResourceType,
    *,
    batch_per_npu: float,
    chunks: int = 16,
    policy: str = "themis",
    scf: bool = True,
    dense_only: bool = False,
) -> IterationResult:
    """Simulate one data-parallel iteration of `workload` on units of `resource` joined by `net`."""
    seconds = layer_seconds(workload, resource, batch_per_npu)
    forward = float(seconds.sum() * FORWARD_SHARE)
    issue, size, backward = gradient_collectives(workload, seconds, dense_only)
    comm_end = 0.0
    if len(size):
        chunk_bytes, release, orders = _chunk_arrays(net, issue, size, chunks, policy, scf)
        mask = np.ones(len(chunk_bytes), bool)
        result = simulate(
            net, jnp.asarray(chunk_bytes), jnp.asarray(release), jnp.asarray(orders), jnp.asarray(mask), scf
        )
        comm_end = float(jax.device_get(result.time))
    iteration = forward + max(backward, comm_end)
    return IterationResult(
        policy=policy,
        forward=forward,
        backward=backward,
        comm_end=comm_end,
        iteration=iteration,
        exposed_comm=max(comm_end - backward, 0.0),  # not iteration − forward − backward: its rounding is no 0
        collectives=len(size),
    )
