"""`hps bench parallel-score`: parallel-plan scores per second of the batched JAX scorer
(`hps.costmodel.parallel.batched.score_plans`) against the numpy `score_plan` loop.

Same instance, same plans, one run: 64 synthetic layers on 8 types (`hps.bench.exact`'s
generator and its job, scored by the default kernel clock; the types split over two sites joined
by a priced link), batches of 65,536 random plans of 1-8 stages (contiguous spans, any type, t
in 1..8, b a divisor of the batch up to 256, d a divisor of b). The JAX side scores each batch
in equal parts, one a core, on threads of its own (a jitted call releases the GIL; one compile,
the parts having one shape), the instance's params and the plans already on the device; the
numpy side, plain Python on one core, scores a sample of the same plans one at a time, its
layer-time tables warmed first (as a search that has met every (type, t, m) finds them). Compile
time and the params' build time are reported apart and excluded.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from hps.bench.exact import synthetic_instance
from hps.bench.timing import compile_seconds, side_by_side
from hps.config.machine import cpu_cores, load_average
from hps.config.types import Catalog, Link
from hps.costmodel.parallel import batched_params as bp
from hps.costmodel.parallel.batched import score_plans, to_device
from hps.costmodel.parallel.problem import ParallelProblem, divisors
from hps.costmodel.parallel.score import score_plan

LAYERS, TYPES, STAGES = 64, 8, 8
REFERENCE_SAMPLE = 2000
"""Plans the numpy side cycles through (the first of the batch)."""


def bench_problem(layers: int = LAYERS, types: int = TYPES) -> ParallelProblem:
    """`synthetic_instance(layers, types)` with its types alternating between sites "a" and "b",
    joined by a 10 GiB/s link at $0.02 per GiB."""
    workload, catalog, job = synthetic_instance(layers, types)
    resources = tuple(dataclasses.replace(r, site="ab"[i % 2]) for i, r in enumerate(catalog.resources))
    link = Link(("a", "b"), 10 * 2**30, 1e-3, 0.02 / 2**30)
    return ParallelProblem(workload, Catalog(catalog.name, resources, (link,)), job)


def random_plan_arrays(problem: ParallelProblem, count: int, stages: int, seed: int = 0) -> bp.Plans:
    """`count` random well-formed plans of 1..`stages` stages as Plans (count, stages): cuts
    anywhere, any type, t in 1..8, b a divisor of the batch up to 256, d a divisor of b."""
    rng = np.random.default_rng(seed)
    n = problem.num_layers
    used = rng.integers(1, min(stages, n) + 1, count)
    picks = np.argsort(rng.random((count, n - 1)), axis=1)[:, : stages - 1] + 1
    picks = np.sort(np.where(np.arange(stages - 1) < used[:, None] - 1, picks, n), axis=1)
    bounds = np.concatenate([np.zeros((count, 1), np.int64), picks, np.full((count, 1), n)], axis=1)
    mask = np.arange(stages) < used[:, None]
    first = np.where(mask, bounds[:, :-1], 0)
    last = np.where(mask, bounds[:, 1:] - 1, 0)
    choices = [d for d in divisors(int(problem.job.batch)) if d <= 256]
    b = rng.choice(choices, count)
    dp = np.ones((count, stages), np.int64)
    for value in np.unique(b):
        rows = b == value
        options = np.asarray(divisors(int(value)))
        dp[rows] = options[rng.integers(0, len(options), (rows.sum(), stages))]
    as_int = lambda x: np.where(mask, x, 0).astype(np.int32)  # noqa: E731
    return bp.Plans(
        first=as_int(first),
        last=as_int(last),
        types=as_int(rng.integers(0, problem.num_types, (count, stages))),
        tp=np.where(mask, 2 ** rng.integers(0, 4, (count, stages)), 1).astype(np.int32),
        dp=np.where(mask, dp, 1).astype(np.int32),
        stage_mask=mask,
        micro_batch=b.astype(np.int32),
    )


def split_plans(plans: bp.Plans, parts: int) -> list[bp.Plans]:
    """`plans` (N, S) cut into `parts` equal runs of plans (N a multiple of parts)."""
    fields = [f.name for f in dataclasses.fields(plans)]
    return [bp.Plans(**{k: np.array_split(getattr(plans, k), parts)[i] for k in fields}) for i in range(parts)]


def cpu_seconds(call, repeats: int = 5) -> float:
    """The least CPU seconds (this process, all its threads) of `repeats` calls of `call`."""
    times = []
    for _ in range(repeats):
        began = time.process_time()
        jax.block_until_ready(call())
        times.append(time.process_time() - began)
    return min(times)


def run(plans_per_call: int = 65_536, min_seconds: float = 2.0, seed: int = 0) -> dict:
    """{"jax_per_s", "reference_per_s", "speedup", "jax_per_cpu_s", "compile_s", "params_s",
    "feasible_share", "layers", "types", "stages", "plans_per_call", "threads", "device",
    "load_average"}: plan scores per second, and per CPU-second of this process (a figure that a
    machine shared with other work disturbs less)."""
    problem = bench_problem()
    started = time.perf_counter()
    params = bp.plan_params(problem, bp.bucket_for(problem))
    params_s = time.perf_counter() - started
    plans = random_plan_arrays(problem, plans_per_call, STAGES, seed)
    threads = cpu_cores() if plans_per_call % cpu_cores() == 0 else 1
    device_params = to_device(bp.stack([params]))
    parts = [to_device(bp.stack([part])) for part in split_plans(plans, threads)]
    pool = ThreadPoolExecutor(threads)
    score = lambda part: jax.block_until_ready(score_plans(device_params, part))  # noqa: E731
    call = lambda: list(pool.map(score, parts))  # noqa: E731
    compile_s = compile_seconds(call)
    feasible = float(np.mean(np.concatenate([np.asarray(out["feasible"]).ravel() for out in call()])))
    sample = [bp.stages_of(problem, plans, i) for i in range(min(REFERENCE_SAMPLE, plans_per_call))]
    for stages, b in sample:  # warm the numpy side's layer-time tables
        score_plan(problem, stages, b)
    jax_per_s, reference_per_s = side_by_side(
        call, plans_per_call, lambda item: score_plan(problem, *item), sample, seconds=2 * min_seconds
    )
    cpu_s = cpu_seconds(call)
    pool.shutdown()
    return {
        "jax_per_s": jax_per_s,
        "reference_per_s": reference_per_s,
        "jax_per_cpu_s": plans_per_call / cpu_s,
        "speedup": jax_per_s / reference_per_s,
        "compile_s": compile_s,
        "params_s": params_s,
        "feasible_share": feasible,
        "layers": problem.num_layers,
        "types": problem.num_types,
        "stages": STAGES,
        "plans_per_call": plans_per_call,
        "threads": threads,
        "device": str(jax.devices()[0]),
        "load_average": load_average(),
    }
