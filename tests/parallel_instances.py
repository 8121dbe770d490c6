"""Small random instances of the parallel-plan model, and brute force over every plan of one.

Sizes are chosen so that every constraint binds on some instances: memory (states and
activations), the throughput floor, the pooled caps, the micro-batch divisibility and the links
between sites.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

from hps.config.types import (
    PRECISIONS,
    Catalog,
    Dimension,
    Job,
    Layer,
    Link,
    Network,
    ParallelStage,
    ResourceType,
    Workload,
)
from hps.reference import parallel as reference

GIB = 2.0**30


def random_layer(rng: random.Random, i: int) -> Layer:
    params = rng.choice([0.0, rng.uniform(0.5, 8.0) * GIB])
    layer = Layer(
        name=f"l{i}",
        kind=rng.choice(["dense", "dense", "sparse"]),
        flops=rng.uniform(0.5, 4.0) * 1e12,
        mem_bytes=rng.uniform(0.1, 2.0) * 1e9,
        io_bytes=rng.choice([0.0, rng.uniform(1e5, 1e7)]),
        act_bytes=rng.uniform(1e6, 5e8),
        dense_param_bytes=params,
        sparse_param_bytes=rng.choice([0.0, 0.0, rng.uniform(1.0, 30.0) * GIB]),
        cut_after=rng.random() > 0.2,
        stash_bytes=rng.choice([None, rng.uniform(1e8, 3e9)]),
        tp_comm_bytes=rng.choice([None, rng.uniform(1e6, 1e9)]),
        tp_collectives=rng.choice([1, 2]),
    )
    return with_serial_traffic(with_selective_and_fp8(rng, layer))


def with_serial_traffic(layer: Layer) -> Layer:
    """On about half the layers: part of mem_bytes (up to all of it) moved by kernels of their own,
    in series with the matmuls (standard attention's S x S traffic). Drawn from a generator seeded
    by the layer's numbers, so that the instances' other draws are those of before."""
    sub = random.Random(f"{layer.name} {layer.flops!r} {layer.mem_bytes!r}")
    if sub.random() < 0.5:
        return layer
    return dataclasses.replace(layer, serial_mem_bytes=sub.uniform(0.0, 1.0) * layer.mem_bytes)


def with_selective_and_fp8(rng: random.Random, layer: Layer) -> Layer:
    """On some layers: what selective recomputation drops (up to 40 % of the stash, kept in BF16)
    and redoes, and an FP8 stash that casts part of the rest to one byte."""
    if rng.random() < 0.5:
        return layer
    dropped = rng.uniform(0.0, 0.4) * layer.stash
    kept = layer.stash - dropped
    return dataclasses.replace(
        layer,
        selective_stash_bytes=kept,
        fp8_stash_bytes=dropped + kept * rng.uniform(0.5, 1.0),
        selective_flops=rng.uniform(0.01, 0.3) * layer.flops,
    )


def kernel_constants(rng: random.Random) -> dict:
    """The kernel clock's constants and an FP8 peak on some types (the others: the fallback rule)."""
    fields = {}
    if rng.random() < 0.5:
        fields.update(
            matmul_efficiency_max=rng.uniform(0.4, 0.8),
            matmul_half_work_flop=rng.uniform(0.1, 2.0) * 1e12,
            tp_comm_exposed=rng.uniform(0.0, 1.0),
        )
    if rng.random() < 0.6:
        fields["fp8_peak_flops"] = rng.uniform(100, 1000) * 1e12
        if rng.random() < 0.5:
            fields["fp8_matmul_efficiency_max"] = rng.uniform(0.3, 0.6)
    if rng.random() < 0.3:
        fields["memory_headroom"] = rng.choice([0.0, 0.1, 0.3])
    return fields


def random_resource(rng: random.Random, i: int, site: str) -> ResourceType:
    dims = (
        Dimension(size=rng.choice([2, 4]), bandwidth=rng.uniform(50, 400) * GIB, latency=1e-6, algorithm="ring"),
        Dimension(size=rng.choice([1, 2, 3]), bandwidth=rng.uniform(5, 50) * GIB, latency=5e-6, algorithm="switch"),
    )
    network = Network(name=f"t{i}", dimensions=dims)
    return ResourceType(
        name=f"t{i}",
        kind="gpu",
        peak_flops=rng.uniform(50, 500) * 1e12,
        efficiency_dense=rng.uniform(0.3, 0.6),
        efficiency_sparse=rng.uniform(0.01, 0.2),
        mem_bw=rng.uniform(500, 3000) * GIB,
        io_bw=rng.uniform(0.5, 10) * GIB,
        nic_bw=rng.uniform(5, 50) * GIB,
        memory=rng.choice([16, 40, 80]) * GIB,
        price_per_hour=rng.uniform(1, 10),
        max_units=rng.randint(2, network.total_size),
        network=network,
        site=site,
        tp_max=rng.choice([0, 0, 2]),
        **kernel_constants(rng),
    )


def random_instance(seed: int):
    """(workload, catalog, job) of 2-4 layers, 1-3 types on 1-2 sites, batch 2-12, each schedule
    choice (virtual stages 1-3, FP8, recomputation none/selective/full, headroom) drawn."""
    rng = random.Random(seed)
    layers = tuple(random_layer(rng, i) for i in range(rng.randint(2, 4)))
    sites = ["a", "b"] if rng.random() < 0.5 else ["a"]
    resources = tuple(random_resource(rng, i, rng.choice(sites)) for i in range(rng.randint(1, 3)))
    links = ()
    if len(sites) == 2 and rng.random() < 0.7:
        links = (
            Link(
                sites=("a", "b"),
                bandwidth=rng.uniform(1, 20) * GIB,
                latency=1e-3,
                dollars_per_byte=rng.uniform(0, 0.1) / GIB,
            ),
        )
    catalog = Catalog(name="random", resources=resources, links=links)
    batch = rng.choice([2, 4, 6, 8, 12])
    micro = rng.choice([None, None, rng.choice([d for d in range(1, batch + 1) if batch % d == 0])])
    job = Job(
        batch=float(batch),
        throughput=rng.uniform(0.5, 20.0),
        samples=1e6,
        micro_batch=None if micro is None else float(micro),
        precision=rng.choice(list(PRECISIONS)),
        zero=rng.randint(0, 3),
        recompute=rng.choice(["none", "selective", "full"]),
        virtual_stages=rng.choice([1, 1, 2, 3]),
        fp8=rng.random() < 0.3,
        memory_headroom=rng.choice([None, None, 0.0, 0.2]),
    )
    return Workload(name=f"w{seed}", layers=layers), catalog, job


def every_plan(workload: Workload, catalog: Catalog, b: int):
    """Every plan under micro-batch b: cuts where allowed, a type, t and d per stage."""
    n = len(workload.layers)
    allowed = [i for i in range(n - 1) if workload.layers[i].cut_after]
    for k in range(len(allowed) + 1):
        for cuts in itertools.combinations(allowed, k):
            bounds = [0, *[c + 1 for c in cuts], n]
            spans = [(bounds[j], bounds[j + 1] - 1) for j in range(len(bounds) - 1)]
            options = []
            for _ in spans:
                per = []
                for r in catalog.resources:
                    limit = r.tensor_parallel_limit
                    for t in (1, 2, 4, 8):
                        if t > limit:
                            continue
                        for d in range(1, b + 1):
                            if b % d == 0 and t * d <= r.max_units:
                                per.append((r.name, t, d))
                options.append(per)
            for choice in itertools.product(*options):
                yield tuple(ParallelStage(f, l, name, t, d) for (f, l), (name, t, d) in zip(spans, choice))


def scored_plans(workload: Workload, catalog: Catalog, job: Job) -> list[tuple[dict, tuple, int]]:
    """(reference score, plan, b) of every plan of every micro-batch the job allows."""
    out = []
    batch = int(job.batch)
    choices = [int(job.micro_batch)] if job.micro_batch else [d for d in range(1, batch + 1) if batch % d == 0]
    for b in choices:
        at_b = Job(**{**job.__dict__, "micro_batch": float(b)})
        out += [(reference.evaluate(workload, catalog, at_b, p), p, b) for p in every_plan(workload, catalog, b)]
    return out


def brute_force(workload: Workload, catalog: Catalog, job: Job, scored: list | None = None):
    """(cost, plan, b) of the cheapest feasible plan by the reference evaluator (inf, None, None
    when none is feasible); scored: `scored_plans` of the instance where already computed."""
    best = (math.inf, None, None)
    for score, plan, b in scored if scored is not None else scored_plans(workload, catalog, job):
        if score["feasible"] and score["cost"] < best[0]:
            best = (score["cost"], plan, b)
    return best


def fastest_within(scored: list, budget: float):
    """(throughput, plan, b) of the fastest feasible plan of `scored_plans` (scored without a
    budget) whose units rent for at most `budget` $/hour, as the reference evaluator's budget
    check has it (0, None, None when there is none)."""
    best = (0.0, None, None)
    for score, plan, b in scored:
        if not score["feasible"] or score["dollars_per_hour"] > budget * (1 + 1e-9):
            continue
        if score["throughput"] > best[0]:
            best = (score["throughput"], plan, b)
    return best


def plan_count(workload: Workload, catalog: Catalog, job: Job) -> int:
    """How many plans `brute_force` scores (every micro-batch, cut set and option per stage)."""
    n = len(workload.layers)
    allowed = [i for i in range(n - 1) if workload.layers[i].cut_after]
    batch = int(job.batch)
    choices = [int(job.micro_batch)] if job.micro_batch else [d for d in range(1, batch + 1) if batch % d == 0]
    total = 0
    for b in choices:
        per_stage = sum(
            1
            for r in catalog.resources
            for t in (1, 2, 4, 8)
            if t <= r.tensor_parallel_limit
            for d in range(1, b + 1)
            if b % d == 0 and t * d <= r.max_units
        )
        for k in range(len(allowed) + 1):
            total += math.comb(len(allowed), k) * per_stage ** (k + 1)
    return total
