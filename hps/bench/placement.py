"""`hps bench placement`: evaluations/s of the jitted batched cost model vs the Python reference.

Same instance, same schedules, one run: a 16-layer CTR-DNN variant on cloud-2024 (4 types),
65,536 random schedules per call. The jnp figure is the evaluator as every search calls it: the
instance's segment table (every stage provisioned) built once, then batches of schedules scored
against it (`evaluate_with_table`); the table's build time is reported beside it, and so is the
rate when every call builds the table again (`evaluate_schedules`). The reference scores each
schedule from scratch. Compile time is reported separately and excluded.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hps.bench.timing import compile_seconds, side_by_side, timed_calls
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Job
from hps.costmodel.schedule import build_params, evaluate_schedules, evaluate_with_table
from hps.costmodel.schedule.cost import segment_table
from hps.reference import placement as reference
from hps.workloads import build_workload

BENCH_HIDDEN = (1024, 1024, 512, 512, 512, 256, 256, 256, 128, 128, 64, 32)  # 16 layers in all
EXHAUSTIVE_HIDDEN = (1024, 512, 512, 256, 128, 64)  # 10 layers: 4^10 schedules on cloud-2024


def bench_instance(hidden=BENCH_HIDDEN):
    """(workload, catalog, job) of the benchmark: CTR-DNN with `hidden` MLP widths on cloud-2024."""
    workload = build_workload("ctr-dnn", hidden=hidden)
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "--catalog"))
    defaults = workload.defaults
    return workload, catalog, Job(defaults.batch, defaults.throughput, defaults.samples)


def run(schedules_per_call: int = 65_536, min_seconds: float = 2.0, seed: int = 0) -> dict:
    """{"jax_per_s", "reference_per_s", "speedup", "compile_s", "table_ms",
    "jax_table_each_call_per_s", ...} (evaluations per second)."""
    workload, catalog, job = bench_instance()
    params = build_params(workload, catalog, job)
    rng = np.random.default_rng(seed)
    schedules = rng.integers(0, len(catalog.resources), (schedules_per_call, len(workload.layers)), np.int32)
    build = jax.jit(segment_table)
    evaluate = jax.jit(evaluate_with_table)
    device_schedules = jnp.asarray(schedules)
    table = build(params)
    compile_s = compile_seconds(evaluate, table, params, device_schedules)
    table_s = timed_calls(build, params, repeats=5, fastest=True)[1]
    whole = jax.jit(evaluate_schedules)
    compile_s += compile_seconds(whole, params, device_schedules)
    each_call_s = timed_calls(whole, params, device_schedules, repeats=5, fastest=True)[1]
    as_lists = schedules[:2000].tolist()
    jax_per_s, reference_per_s = side_by_side(
        lambda: evaluate(table, params, device_schedules),
        schedules_per_call,
        lambda s: reference.evaluate(workload, catalog, job, s),
        as_lists,
        seconds=2 * min_seconds,
    )
    return {
        "jax_per_s": jax_per_s,
        "exhaustive_4pow10_s": exhaustive_seconds(),
        "reference_per_s": reference_per_s,
        "speedup": jax_per_s / reference_per_s,
        "compile_s": compile_s,
        "table_ms": table_s * 1e3,
        "jax_table_each_call_per_s": schedules_per_call / each_call_s,
        "layers": len(workload.layers),
        "types": len(catalog.resources),
        "schedules_per_call": schedules_per_call,
        "device": str(jax.devices()[0]),
    }


def exhaustive_seconds() -> float:
    """Wall seconds of an exhaustive search over 4^10 schedules, compile excluded (warm-up)."""
    from hps.contract.types import Budget
    from hps.methods.problem import Problem
    from hps.methods.registry import run

    workload, catalog, job = bench_instance(EXHAUSTIVE_HIDDEN)
    return run("exhaustive", Problem(workload, catalog, job, model="schedule"), Budget()).seconds
