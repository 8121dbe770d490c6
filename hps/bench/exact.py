"""The exact solver's time against problem size: synthetic layers on synthetic types.

Each point is one instance: `layers` dense layers (per-sample FLOPs, bytes and parameters drawn
log-uniformly, seeded) on `types` GPU-like types of 65,536 units each, every type on a
3-dimensional network (an 8-NPU switch, 64-node ring, 128-pod halving-doubling), at a job
whose floor needs several units per stage. Times are wall seconds of `solve_exact` alone
(building the instance's arrays, a few ms, is reported apart).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from hps.config.types import Catalog, Dimension, Job, Layer, Network, ResourceType, Workload
from hps.costmodel.schedule.provisioning import build_instance
from hps.errors import InstanceTooLarge
from hps.methods.exact_schedule import solve_exact

GIB = 2.0**30
UNITS = 65_536
LAYER_GRID = (64, 256, 1024, 4096)
TYPE_GRID = (4, 8, 16, 32)
BASE_TYPES, BASE_LAYERS = 16, 256


def synthetic_instance(layers: int, types: int, seed: int = 0) -> tuple[Workload, Catalog, Job]:
    """(workload, catalog, job) of `layers` dense layers on `types` types of UNITS units."""
    rng = np.random.default_rng(seed)
    log = lambda low, high, size=None: np.exp(rng.uniform(np.log(low), np.log(high), size))  # noqa: E731
    network = Network(
        "bench", (Dimension(8, 300 * GIB, 1e-6, "switch"), Dimension(64, 25 * GIB, 5e-6, "ring"),
                  Dimension(128, 12 * GIB, 1e-5, "halving_doubling"))
    )  # fmt: skip
    resources = tuple(
        ResourceType(
            f"t{i}",
            "gpu",
            log(1e13, 1e15),
            rng.uniform(0.2, 0.6),
            rng.uniform(0.01, 0.2),
            log(100, 3000) * GIB,
            log(0.1, 4) * GIB,
            log(5, 50) * GIB,
            log(16, 192) * GIB,
            log(0.5, 10),
            UNITS,
            network,
        )  # fmt: skip
        for i in range(types)
    )
    flops, mem, act, params = (log(lo, hi, layers) for lo, hi in ((1e6, 1e9), (1e4, 1e7), (1e3, 1e5), (1e5, 1e8)))
    table = tuple(
        Layer(f"l{i}", "dense", float(flops[i]), float(mem[i]), 0.0, float(act[i]), float(params[i]), 0.0)
        for i in range(layers)
    )
    return Workload("bench", table), Catalog("bench", resources), Job(batch=4096.0, throughput=2e4, samples=1e9)


def time_point(layers: int, types: int) -> dict:
    """{"layers", "types", "build_s", "solve_s", "stages", "gap", "refused"} of one instance;
    refused: None, or why the solver would not take it (its stage table is past memory), and
    then solve_s, stages and gap are None."""
    workload, catalog, job = synthetic_instance(layers, types)
    started = time.perf_counter()
    inst = build_instance(workload, catalog, job)
    built = time.perf_counter()
    try:
        result = solve_exact(inst)
    except InstanceTooLarge as error:
        refused = {"solve_s": None, "stages": None, "gap": None, "refused": str(error)}
        return {"layers": layers, "types": types, "build_s": built - started, **refused}
    return {
        "refused": None,
        "layers": layers,
        "types": types,
        "build_s": built - started,
        "solve_s": result.seconds,
        "stages": len(result.plan.stages) if result.plan else None,
        "gap": result.gap,
    }


def run(layer_grid=LAYER_GRID, type_grid=TYPE_GRID, on_point=None) -> dict:
    """{"by_layers": [...] at BASE_TYPES types, "by_types": [...] at BASE_LAYERS layers}; each
    entry as `time_point`, reported to on_point(entry) as it finishes."""
    out = {"by_layers": [], "by_types": []}
    for key, points in (
        ("by_layers", [(n, BASE_TYPES) for n in layer_grid]),
        ("by_types", [(BASE_LAYERS, t) for t in type_grid]),
    ):
        for layers, types in points:
            entry = time_point(layers, types)
            out[key].append(entry)
            if on_point is not None:
                on_point(entry)
    return out


def parallel_point(layers: int, types: int, block: int = 8, micro_batch: int = 16, seconds: float = 60.0) -> dict:
    """The parallel-plan solver on `synthetic_instance(layers, types)` with stage cuts allowed
    every `block` layers, t in {1, 2, 4, 8} (the types' 8-unit first dimension) and a fixed
    micro-batch: {"layers", "types", "block", "build_s", "solve_s", "stages", "cost", "gap",
    "refused"} (refused: why the stage table was not built, else None)."""
    from hps.config.types import Job
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.methods.exact_parallel.solver import solve_parallel

    workload, catalog, job = synthetic_instance(layers, types)
    cut = tuple(dataclasses.replace(l, cut_after=(i + 1) % block == 0) for i, l in enumerate(workload.layers))
    workload = dataclasses.replace(workload, layers=cut)
    job = Job(job.batch, job.throughput, job.samples, micro_batch=float(micro_batch))
    started = time.perf_counter()
    problem = ParallelProblem(workload, catalog, job)
    built = time.perf_counter()
    out = {"layers": layers, "types": types, "block": block, "build_s": built - started}
    try:
        result = solve_parallel(problem, seconds=seconds)
    except InstanceTooLarge as error:
        return {**out, "solve_s": None, "stages": None, "cost": None, "gap": None, "refused": str(error)}
    return {
        **out,
        "solve_s": result.seconds,
        "stages": len(result.plan.stages) if result.plan else None,
        "cost": result.score.cost if result.score else None,
        "gap": result.gap,
        "refused": None,
    }
