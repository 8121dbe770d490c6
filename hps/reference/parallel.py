"""Plain-Python reference of the parallel-plan model (docs/parallel-plans.md). Slow and obvious on
purpose: float64, one stage at a time, every term written out as the docs state it.

A plan is a list of `ParallelStage(first, last, type, tp, dp)`; the job carries the micro-batch b
(samples per pipeline micro-batch across a stage's replicas), the precision, the ZeRO level and
recompute. Each replica of a stage runs m = b / dp samples of a micro-batch.
"""

from __future__ import annotations

import math

from hps.config.types import PRECISIONS, steps_per_phase
from hps.reference.placement import allreduce as replica_allreduce

BUCKET_BYTES = 25 * 2**20
"""Gradient bucket of the overlapped data-parallel synchronisation (PyTorch DDP's default 25 MiB)."""


def tp_allreduce(resource, nbytes, tp, collectives):
    """Seconds of `collectives` All-Reduces moving `nbytes` in all across a tp-way group on the
    type's first network dimension."""
    if tp == 1:
        return 0.0
    dim = resource.network.dimensions[0]
    return (
        2 * nbytes * (tp - 1) / tp / dim.bandwidth + collectives * 2 * steps_per_phase(dim.algorithm, tp) * dim.latency
    )


def measured_time(layer, resource, tp, m):
    for entry in layer.measured:
        if entry.type == resource.name and entry.tp == tp and entry.micro_batch == m:
            return entry
    return None


def layer_time(layer, resource, tp, m, recompute):
    """Seconds per micro-batch of m samples on one device of a tp-way group."""
    extra = 1 if recompute == "full" else 0
    entry = measured_time(layer, resource, tp, m)
    if entry is not None:
        return entry.forward_s * (1 + extra) + entry.backward_s
    eff = resource.efficiency_sparse if layer.kind == "sparse" else resource.efficiency_dense
    compute = m * layer.flops * (1 + extra / 3) / (tp * resource.peak_flops * eff)
    memory = m * layer.mem_bytes * (1 + extra / 3) / (tp * resource.mem_bw)
    io = m * layer.io_bytes / resource.io_bw
    comm = tp_allreduce(resource, m * layer.tp_bytes * (1 + extra / 2), tp, layer.tp_collectives * (1 + extra / 2))
    return max(compute, memory) + io + comm


def dp_network_resource(resource, tp):
    """The type with its first dimension shrunk to the NPUs left for data parallelism beside a
    tp-way group (size P_1 // tp, at least 1)."""
    from dataclasses import replace

    dims = list(resource.network.dimensions)
    dims[0] = replace(dims[0], size=max(1, dims[0].size // tp))
    return replace(resource, network=replace(resource.network, dimensions=tuple(dims)))


def stage(layers, resource, first, last, tp, dp, position, num_stages, job):
    """dict of one stage's time per micro-batch, tail, memory per device and units."""
    b, m = job.micro_batch, job.micro_batch // dp
    micro_batches = job.batch // b
    p_bytes, g_bytes, o_bytes = PRECISIONS[job.precision]
    z = job.zero
    seg = layers[first : last + 1]
    compute = sum(layer_time(l, resource, tp, m, job.recompute) for l in seg)
    a_in = layers[first - 1].act_bytes if first > 0 else 0.0
    a_out = layers[last].act_bytes if last < len(layers) - 1 else 0.0
    boundary = m * 2 * (a_in + a_out) / (tp * resource.nic_bw)
    params = sum(l.parameters for l in seg)
    shard = lambda level: dp if z >= level else 1  # noqa: E731
    states = params / tp * (p_bytes / shard(3) + g_bytes / shard(2) + o_bytes / shard(1))
    gathered = max(l.parameters for l in seg) * p_bytes / tp if z >= 3 and dp > 1 else 0.0
    sparse = sum(l.sparse_param_bytes for l in seg) / (tp * dp)
    if job.recompute == "full":
        kept = sum((layers[i - 1].act_bytes if i > 0 else 0.0) for i in range(first, last + 1))
        peak = m * max(l.stash for l in seg) / tp
    else:
        kept, peak = sum(l.stash for l in seg), 0.0
    in_flight = min(num_stages - position, micro_batches)
    memory = states + gathered + sparse + in_flight * m * kept / tp + peak
    grad_bytes = params * g_bytes / tp
    sync = 0.0
    if dp > 1 and grad_bytes > 0:
        net = dp_network_resource(resource, tp)
        sync = replica_allreduce(net, grad_bytes, dp, job.collective, job.chunks) * (1.5 if z >= 3 else 1.0)
    buckets = max(1, math.ceil(grad_bytes / BUCKET_BYTES))
    backward = 2.0 / 3.0 * compute
    exposed = sync if buckets == 1 else max(sync / buckets, sync - backward)
    optimizer = 2 * states / resource.mem_bw
    return dict(
        time=compute + boundary, tail=exposed + optimizer, memory=memory, units=tp * dp, sync=sync, optimizer=optimizer
    )


def link_time(catalog, layers, a, b, job):
    """(seconds per micro-batch, egress dollars per iteration) of the boundary after stage a's
    last layer into stage b on another site; None where no link joins the sites."""
    ra, rb = catalog.resources[catalog.index(a.type)], catalog.resources[catalog.index(b.type)]
    if ra.site == rb.site:
        return 0.0, 0.0
    link = catalog.link(ra.site, rb.site)
    if link is None:
        return None
    nbytes = layers[a.last].act_bytes
    return job.micro_batch * nbytes / link.bandwidth + link.latency, 2 * job.batch * nbytes * link.dollars_per_byte


def evaluate(workload, catalog, job, plan):
    """dict: feasible, reason, iteration_s, throughput, dollars_per_hour, egress_per_iteration,
    cost, stages (per stage: time, tail, memory, units)."""
    layers = workload.layers
    num = len(plan)
    stages, reason = [], "feasible"
    for j, s in enumerate(plan):
        resource = catalog.resources[catalog.index(s.type)]
        if job.micro_batch % s.dp:
            return dict(feasible=False, reason="micro_batch", cost=math.inf)
        info = stage(layers, resource, s.first, s.last, s.tp, s.dp, j, num, job)
        if reason == "feasible" and info["memory"] > resource.memory:
            reason = "memory"
        stages.append(info)
    links, egress = [], 0.0
    for a, b in zip(plan, plan[1:]):
        hop = link_time(catalog, layers, a, b, job)
        if hop is None:
            reason = "no_link" if reason == "feasible" else reason
            continue
        links.append(hop[0])
        egress += hop[1]
    units = {}
    for s in plan:
        units[s.type] = units.get(s.type, 0) + s.tp * s.dp
    if reason == "feasible" and any(n > catalog.resources[catalog.index(t)].max_units for t, n in units.items()):
        reason = "pooled_cap"
    micro_batches = job.batch // job.micro_batch
    slowest = max([s["time"] for s in stages] + links)
    iteration = (micro_batches + num - 1) * slowest + max(s["tail"] for s in stages)
    throughput = job.batch / iteration
    if reason == "feasible" and throughput < job.throughput * (1 - 1e-9):
        reason = "throughput"
    dollars = sum(s.tp * s.dp * catalog.resources[catalog.index(s.type)].price_per_hour for s in plan)
    feasible = reason == "feasible"
    iterations = job.samples / job.batch
    cost = (dollars * iteration / 3600 + egress) * iterations if feasible else math.inf
    return dict(
        feasible=feasible,
        reason=reason,
        iteration_s=iteration,
        throughput=throughput,
        dollars_per_hour=dollars,
        egress_per_iteration=egress,
        cost=cost,
        stages=stages,
    )
