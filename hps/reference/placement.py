"""Plain-Python reference of the placement cost model (docs/placement-model.md). Slow and obvious on purpose.

Works on the typed configs (hps.config.types) directly, in float64, one schedule at a time,
one k at a time, and computes each stage's All-Reduce from the actual W by running the
Themis greedy in Python.
"""

from __future__ import annotations

import math

from hps.config.types import stage_spans, steps_per_phase
from hps.reference.collective import least_loaded_first, tied

REASONS = ("feasible", "invalid_type", "memory", "throughput", "pooled_cap")


def used_sizes(dimensions, k):
    used, filled = [], 1
    for dim in dimensions:
        p = min(dim.size, math.ceil(k / filled))
        used.append(p)
        filled *= p
    return used


def themis_loads(sizes, bandwidths, total, chunks, themis):
    active = [d for d in range(len(sizes)) if sizes[d] > 1]
    load = {d: 0.0 for d in active}
    chunk = total / chunks
    for _ in range(chunks):
        order = list(active)
        if themis and active:
            ranked = least_loaded_first(active, load)
            lo, hi = ranked[0], ranked[-1]
            gap = 0.0 if tied(load[hi], load[lo]) else load[hi] - load[lo]
            gap_bytes = gap * bandwidths[lo] / ((sizes[lo] - 1) / sizes[lo])
            if not (gap_bytes < chunk / 16 and not tied(gap_bytes, chunk / 16)):
                order = ranked
        s = chunk
        for d in order:
            load[d] += s * (sizes[d] - 1) / sizes[d] / bandwidths[d]
            s = s / sizes[d]
        for d in reversed(order):
            load[d] += s * (sizes[d] - 1) / bandwidths[d]
            s = s * sizes[d]
    return load


def allreduce(resource, dense_bytes, k, policy, chunks):
    if k == 1 or dense_bytes == 0:
        return 0.0
    dims = resource.network.dimensions
    sizes = used_sizes(dims, k)
    bws = [d.bandwidth for d in dims]
    load = themis_loads(sizes, bws, dense_bytes, chunks, policy == "themis")
    latency = sum(2 * steps_per_phase(d.algorithm, p) * d.latency for d, p in zip(dims, sizes))
    return max(load.values(), default=0.0) + latency


def layer_time(layer, resource):
    if resource.name in layer.measured_time:
        return layer.measured_time[resource.name]
    eff = resource.efficiency_sparse if layer.kind == "sparse" else resource.efficiency_dense
    compute = layer.flops / (resource.peak_flops * eff)
    memory = layer.mem_bytes / resource.mem_bw
    return max(compute, memory) + layer.io_bytes / resource.io_bw


def stage_at(layers, resource, first, last, k, job, mode="replicated"):
    """(time s/iteration, memory bytes) of layers first..last on k units of resource, holding
    the parameter and optimizer state replicated or (mode "sharded", k > 1) sharded."""
    seg = layers[first : last + 1]
    a_in = layers[first - 1].act_bytes if first > 0 else 0.0
    a_out = layers[last].act_bytes if last < len(layers) - 1 else 0.0
    dense = sum(l.dense_param_bytes for l in seg)
    compute = job.batch / k * sum(layer_time(l, resource) for l in seg)
    boundary = job.batch / k * 2 * (a_in + a_out) / resource.nic_bw
    sync = allreduce(resource, dense, k, job.collective, job.chunks)
    rest = sum(l.sparse_param_bytes for l in seg) / k + job.batch / k * sum(l.act_bytes for l in seg)
    if mode == "sharded":
        return compute + boundary + 1.5 * sync, 4 * dense / k + max(l.dense_param_bytes for l in seg) + rest
    return compute + boundary + sync, 4 * dense + rest


def bubble(job, stages):
    """The pipeline bubble factor 1 + (S − 1)/M of a plan of `stages` stages (1 when M = inf)."""
    return 1.0 if math.isinf(job.micro_batches) else 1.0 + (stages - 1) / job.micro_batches


def provision(layers, resource, first, last, job, stages=1):
    """(replicas, time, reason, mode) of one stage of a plan of `stages` stages."""
    any_fits = False
    factor = bubble(job, stages)
    modes = ["replicated", "sharded"] if job.state_sharding == "auto" else ["replicated"]
    cap = min(resource.max_units, job.max_stage_replicas)  # each replica runs a whole sample at least
    for k in range(1, cap + 1):
        for mode in modes if k > 1 else ["replicated"]:
            time, memory = stage_at(layers, resource, first, last, k, job, mode)
            if memory <= resource.memory:
                any_fits = True
                if job.batch / (factor * time) >= job.throughput:
                    return k, time, "feasible", mode
    time, _ = stage_at(layers, resource, first, last, cap, job)
    return cap, time, "throughput" if any_fits else "memory", "replicated"


def evaluate(workload, catalog, job, schedule):
    """The plan of a schedule's maximal runs, as `evaluate_plan` scores it."""
    return evaluate_plan(workload, catalog, job, stage_spans(schedule))


def evaluate_plan(workload, catalog, job, plan):
    """dict with feasible, reason, failed_layer, throughput, dollars_per_hour, cost, stages, for
    a plan: (first layer, last layer, type) per stage, in layer order (adjacent ones may share
    a type)."""
    layers = workload.layers
    stages = []
    for first, last, t in plan:
        resource = catalog.resources[t]
        k, time, reason, mode = provision(layers, resource, first, last, job, len(plan))
        stages.append(dict(type=t, first_layer=first, last_layer=last, replicas=k, time=time, reason=reason, mode=mode))
    throughput = job.batch / (bubble(job, len(plan)) * max(s["time"] for s in stages))
    dollars = sum(s["replicas"] * catalog.resources[s["type"]].price_per_hour for s in stages)
    reason, failed = "feasible", -1
    for s in stages:
        if s["reason"] != "feasible":
            reason, failed = s["reason"], s["first_layer"]
            break
    if reason == "feasible":
        for s in stages:
            units = sum(o["replicas"] for o in stages if o["type"] == s["type"])
            if units > catalog.resources[s["type"]].max_units:
                reason, failed = "pooled_cap", s["first_layer"]
                break
    feasible = reason == "feasible"
    cost = dollars * (job.samples / throughput) / 3600 if feasible else math.inf
    return {
        "feasible": feasible,
        "reason": reason,
        "failed_layer": failed,
        "throughput": throughput,
        "dollars_per_hour": dollars,
        "cost": cost,
        "stages": stages,
    }
