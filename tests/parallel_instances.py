"""Small random instances of the parallel-plan model, and brute force over every plan of one.

Sizes are chosen so that every constraint binds on some instances: memory (states and
activations), the throughput floor, the pooled caps, the micro-batch divisibility and the links
between sites.
"""

from __future__ import annotations

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
    return Layer(
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
    )


def random_instance(seed: int):
    """(workload, catalog, job) of 2-4 layers, 1-3 types on 1-2 sites, batch 2-12."""
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
        recompute=rng.choice(["none", "full"]),
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


def brute_force(workload: Workload, catalog: Catalog, job: Job):
    """(cost, plan, b) of the cheapest feasible plan by the reference evaluator (inf, None, None
    when none is feasible)."""
    best = (math.inf, None, None)
    choices = (
        [int(job.micro_batch)]
        if job.micro_batch
        else [d for d in range(1, int(job.batch) + 1) if int(job.batch) % d == 0]
    )
    for b in choices:
        at_b = Job(**{**job.__dict__, "micro_batch": float(b)})
        for plan in every_plan(workload, catalog, b):
            score = reference.evaluate(workload, catalog, at_b, plan)
            if score["feasible"] and score["cost"] < best[0]:
                best = (score["cost"], plan, b)
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
