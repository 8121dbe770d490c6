"""Plain-Python reference of the parallel-plan model (docs/parallel-plans.md). Slow and obvious on
purpose: float64, one stage at a time, every term written out as the docs state it.

A plan is a list of `ParallelStage(first, last, type, tp, dp)`; the job carries the micro-batch b
(samples per pipeline micro-batch across a stage's replicas), the precision, the ZeRO level,
recompute, the virtual stages v, FP8 and the memory headroom. Each replica of a stage runs
m = b / dp samples of a micro-batch. Layers are timed by the kernel clock or the roofline.
"""

from __future__ import annotations

import math

from hps.config.types import DEFAULT_MEMORY_HEADROOM, PRECISIONS, steps_per_phase
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


def recomputed(layer, recompute):
    """The fraction of the layer's FLOP its recomputation redoes."""
    if recompute == "full":
        return 1 / 3
    if recompute == "selective" and layer.flops > 0:
        return layer.selective_flops / layer.flops
    return 0.0


def serial_recomputed(layer, recompute):
    """The fraction of the layer's serial_mem_bytes its recomputation moves again: the forward
    pass's third under full recomputation, and under selective where the layer recomputes anything."""
    if recompute == "full" or (recompute == "selective" and layer.selective_flops > 0):
        return 1 / 3
    return 0.0


def compute_time(layer, resource, tp, m, rho, fp8, clock):
    """Seconds of the layer's compute on one device: the roofline m·F·(1 + ρ)/(t·peak·e), or the
    kernel clock's (w + w_half)/(peak·e_max)·(1 + ρ) with w = m·F/t for dense layers."""
    sparse = layer.kind == "sparse"
    fp8 = fp8 and not sparse
    peak = resource.fp8_peak_flops if fp8 else resource.peak_flops
    if clock == "roofline" or sparse:
        eff = resource.efficiency_sparse if sparse else resource.efficiency_dense
        peak = resource.peak_flops if sparse else peak
        return m * layer.flops * (1 + rho) / (tp * peak * eff)
    e_max = resource.matmul_efficiency_max if resource.matmul_efficiency_max is not None else resource.efficiency_dense
    if fp8 and resource.fp8_matmul_efficiency_max is not None:
        e_max = resource.fp8_matmul_efficiency_max
    half = resource.matmul_half_work_flop if resource.matmul_half_work_flop is not None else 0.0
    work = m * layer.flops / tp
    return (work + half) / (peak * e_max) * (1 + rho) if work > 0 else 0.0


def layer_time(layer, resource, tp, m, recompute, fp8=False, clock="kernel"):
    """Seconds per micro-batch of m samples on one device of a tp-way group: max(compute, the
    HBM traffic but serial_mem_bytes) + serial_mem_bytes at HBM bandwidth + input reads + the
    exposed tensor-parallel All-Reduces."""
    rho = recomputed(layer, recompute)
    entry = measured_time(layer, resource, tp, m)
    if entry is not None:
        return entry.forward_s * (1 + 3 * rho) + entry.backward_s
    compute = compute_time(layer, resource, tp, m, rho, fp8, clock)
    memory = m * (layer.mem_bytes - layer.serial_mem_bytes) * (1 + rho) / (tp * resource.mem_bw)
    serial = m * layer.serial_mem_bytes * (1 + serial_recomputed(layer, recompute)) / (tp * resource.mem_bw)
    io = m * layer.io_bytes / resource.io_bw
    redone = 1.5 if recompute == "full" else 1.0
    comm = tp_allreduce(resource, m * layer.tp_bytes * redone, tp, layer.tp_collectives * redone)
    exposed = 1.0
    if clock == "kernel" and resource.tp_comm_exposed is not None:
        exposed = resource.tp_comm_exposed
    return max(compute, memory) + serial + io + comm * exposed


def in_flight(position, num_stages, micro_batches, v):
    """Micro-batches of activations the stage holds at its peak: plain 1F1B min(S − p, M);
    interleaved, Megatron-LM's warm-up 2(S − p − 1) + (v − 1)S chunks and one more, at most
    M·v, each 1/v of a micro-batch."""
    if v == 1:
        return min(num_stages - position, micro_batches)
    return min(2 * (num_stages - position - 1) + (v - 1) * num_stages + 1, micro_batches * v) / v


def headroom(job, resource):
    for value in (job.memory_headroom, resource.memory_headroom):
        if value is not None:
            return value
    return DEFAULT_MEMORY_HEADROOM


def dp_network_resource(resource, tp):
    """The type with its first dimension shrunk to the NPUs left for data parallelism beside a
    tp-way group (size P_1 // tp, at least 1)."""
    from dataclasses import replace

    dims = list(resource.network.dimensions)
    dims[0] = replace(dims[0], size=max(1, dims[0].size // tp))
    return replace(resource, network=replace(resource.network, dimensions=tuple(dims)))


def stage(layers, resource, first, last, tp, dp, position, num_stages, job, clock="kernel"):
    """dict of one stage's time per micro-batch, tail, memory per device and units."""
    b, m = job.micro_batch, job.micro_batch // dp
    micro_batches = job.batch // b
    p_bytes, g_bytes, o_bytes = PRECISIONS[job.precision]
    z = job.zero
    seg = layers[first : last + 1]
    fp8 = job.fp8 and resource.fp8_peak_flops is not None
    compute = sum(layer_time(l, resource, tp, m, job.recompute, fp8, clock) for l in seg)
    a_in = layers[first - 1].act_bytes if first > 0 else 0.0
    a_out = layers[last].act_bytes if last < len(layers) - 1 else 0.0
    boundary = m * 2 * (a_in + a_out) / (tp * resource.nic_bw)
    params = sum(l.parameters for l in seg)
    shard = lambda level: dp if z >= level else 1  # noqa: E731
    states = params / tp * (p_bytes / shard(3) + g_bytes / shard(2) + o_bytes / shard(1))
    gathered = max(l.parameters for l in seg) * p_bytes / tp if z >= 3 and dp > 1 else 0.0
    sparse = sum(l.sparse_param_bytes for l in seg) / (tp * dp)
    stash = lambda l: l.fp8_stash if job.fp8 else l.stash  # noqa: E731
    if job.recompute == "full":  # each pipeline unit's input, and one layer's whole stash at a time
        starts_unit = lambda i: i == 0 or layers[i - 1].cut_after  # noqa: E731
        kept = sum(layers[i - 1].act_bytes for i in range(first, last + 1) if i > 0 and starts_unit(i))
        peak = m * max(stash(l) for l in seg) / tp
    elif job.recompute == "selective":
        kept, peak = sum(stash(l) - (l.stash - l.selective_stash) for l in seg), 0.0
    else:
        kept, peak = sum(stash(l) for l in seg), 0.0
    weights = params / tp * 2.0 if job.fp8 else 0.0  # FP8 weight copies and their transposes
    held = in_flight(position, num_stages, micro_batches, job.virtual_stages)
    memory = states + gathered + sparse + weights + held * m * kept / tp + peak
    grad_bytes = params * g_bytes / tp
    sync, gather = 0.0, 0.0
    net = dp_network_resource(resource, tp)
    if dp > 1 and grad_bytes > 0:  # ZeRO-3: a Reduce-Scatter, half an All-Reduce
        sync = replica_allreduce(net, grad_bytes, dp, job.collective, job.chunks) * (0.5 if z >= 3 else 1.0)
    if z >= 3 and dp > 1 and params > 0:  # two All-Gathers of the parameters a micro-batch, prefetched
        gather = replica_allreduce(net, params * p_bytes / tp, dp, job.collective, job.chunks)
    buckets = max(1, math.ceil(grad_bytes / BUCKET_BYTES))
    backward = 2.0 / 3.0 * compute
    exposed = sync if buckets == 1 else max(sync / buckets, sync - backward)
    optimizer = 2 * states / resource.mem_bw
    return dict(
        time=max(compute, gather) + boundary, tail=exposed + optimizer, memory=memory, units=tp * dp, sync=sync,
        optimizer=optimizer,
    )  # fmt: skip


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


def evaluate(workload, catalog, job, plan, clock="kernel"):
    """dict: feasible, reason, iteration_s, throughput, dollars_per_hour, egress_per_iteration,
    cost, stages (per stage: time, tail, memory, units)."""
    layers = workload.layers
    num = len(plan)
    stages, reason = [], "feasible"
    if job.fp8 and any(catalog.resources[catalog.index(s.type)].fp8_peak_flops is None for s in plan):
        reason = "not_allowed"
    for s in plan:
        units = sum(1 for i in range(s.first, s.last + 1) if layers[i].cut_after or i == len(layers) - 1)
        if units < job.virtual_stages and reason == "feasible":
            reason = "virtual_stages"
    for j, s in enumerate(plan):
        resource = catalog.resources[catalog.index(s.type)]
        if job.micro_batch % s.dp:
            return dict(feasible=False, reason="micro_batch", cost=math.inf)
        info = stage(layers, resource, s.first, s.last, s.tp, s.dp, j, num, job, clock)
        if reason == "feasible" and info["memory"] > resource.memory * (1 - headroom(job, resource)):
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
    iteration = (micro_batches + (num - 1) / job.virtual_stages) * slowest + max(s["tail"] for s in stages)
    throughput = job.batch / iteration
    if reason == "feasible" and throughput < job.throughput * (1 - 1e-9):
        reason = "throughput"
    dollars = sum(s.tp * s.dp * catalog.resources[catalog.index(s.type)].price_per_hour for s in plan)
    if reason == "feasible" and job.budget_per_hour is not None and dollars > job.budget_per_hour * (1 + 1e-9):
        reason = "budget"
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
