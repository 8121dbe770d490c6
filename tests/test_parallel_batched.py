"""The batched JAX scorer of parallel plans (hps/costmodel/parallel/batched.py) against the numpy
`score_plan`, plan by plan: same feasibility and reason, every finite figure within 1e-6."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter

import numpy as np
import pytest

from hps.config.types import Catalog, Link, MeasuredTime, ParallelStage, Workload
from hps.costmodel.clocks.base import clock_named
from hps.costmodel.parallel import batched_params as bp
from hps.costmodel.parallel.batched import REASONS, score_plans
from hps.costmodel.parallel.problem import ParallelProblem, divisors
from hps.costmodel.parallel.score import score_plan
from tests.parallel_instances import random_instance, random_layer, random_resource

INSTANCES, PLANS_EACH, STAGES = 24, 450, 8
RELATIVE = 1e-6
PLAN_FIGURES = ("iteration_s", "bottleneck_s", "throughput", "dollars_per_hour", "egress_dollars", "cost", "mfu")
RANGE_FIGURES = ("throughput_low", "throughput_high")
"""The two ends of score_plan's `throughput_range`."""
STAGE_FIGURES = (
    ("stage_time_s", "time_per_microbatch_s"),
    ("stage_tail_s", "tail_s"),
    ("stage_memory_bytes", "memory_per_device_bytes"),
    ("stage_memory_limit_bytes", "memory_limit_bytes"),
    ("stage_boundary_s", "boundary_s"),
    ("stage_sync_s", "sync_s"),
)


def batched_instance(seed: int) -> ParallelProblem:
    """A random instance of 2-12 layers (`random_layer`: serial traffic, selective and FP8 stashes
    on some) and 1-4 types (`random_resource`: kernel constants, an FP8 peak and a headroom on
    some) on 1 + seed % 3 sites (linked for seed % 4 = 0, some links for 1, none otherwise),
    under either clock, with a layer restriction and measured call costs on some; the job's
    ZeRO level, precision, floor, virtual stages, FP8, recomputation and headroom from
    `random_instance`, its batch up to 48 and its micro-batch open; a budget on every third."""
    rng = random.Random(seed)
    _, _, job = random_instance(seed)
    layers = tuple(random_layer(rng, i) for i in range(rng.randint(2, 12)))
    sites = ["a", "b", "c"][: 1 + seed % 3]
    resources = tuple(random_resource(rng, i, sites[i % len(sites)]) for i in range(rng.randint(len(sites), 4)))
    links = tuple(
        Link((a, c), rng.uniform(1, 20) * 2**30, 1e-3, rng.uniform(0, 0.1) / 2**30)
        for i, a in enumerate(sites)
        for c in sites[i + 1 :]
        if seed % 4 == 0 or (seed % 4 == 1 and rng.random() < 0.5)
    )
    catalog = Catalog("random", resources, links)
    calls = {r.name: rng.uniform(0, 1e-3) for r in resources if rng.random() < 0.3}
    workload = Workload(f"w{seed}", layers, measured_call_s=calls)
    job = dataclasses.replace(job, batch=float(rng.choice([2, 4, 6, 8, 12, 16, 24, 48])), micro_batch=None)
    if seed % 3 == 2:  # a budget a few units' rent wide, drawn apart so the other draws stay as they were
        rent = sum(r.price_per_hour for r in resources) * random.Random(f"budget {seed}").uniform(0.5, 4.0)
        job = dataclasses.replace(job, budget_per_hour=rent)
    clock = clock_named(rng.choice(["kernel", "roofline"]))
    allowed = None
    if rng.random() < 0.3:
        allowed = np.random.default_rng(seed).random((len(layers), len(resources))) < 0.85
    return ParallelProblem(workload, catalog, job, allowed, clock)


def random_plans(problem: ParallelProblem, count: int, seed: int) -> list:
    """`count` random (stages, b): contiguous spans (under v > 1 mostly few enough stages to
    hold v units each), any type (in an FP8 job mostly one with an FP8 peak), t in 1..8 (mostly 1
    or 2), b a divisor of the batch and d of b (half of the stages 1)."""
    rng = random.Random(seed)
    n, names = problem.num_layers, [r.name for r in problem.catalog.resources]
    usable = [r.name for r in problem.catalog.resources if not problem.fp8 or r.fp8_peak_flops is not None]
    out = []
    for _ in range(count):
        most = min(n - 1, STAGES - 1)
        if problem.virtual_stages > 1 and rng.random() < 0.8:
            most = min(most, max(0, int(problem.span_units(0, n - 1)) // problem.virtual_stages - 1))
        cuts = sorted(rng.sample(range(n - 1), rng.randint(0, most)))
        bounds = [0, *[c + 1 for c in cuts], n]
        b = rng.choice(divisors(int(problem.job.batch)))
        pick = lambda: rng.choice(usable if usable and rng.random() < 0.8 else names)  # noqa: E731
        stages = tuple(
            ParallelStage(bounds[j], bounds[j + 1] - 1, pick(), rng.choice([1, 1, 1, 2, 2, 4, 8]),
                          1 if rng.random() < 0.5 else rng.choice(divisors(b)))
            for j in range(len(bounds) - 1)
        )  # fmt: skip
        out.append((stages, b))
    return out


@pytest.fixture(scope="module")
def scored():
    """(problems, plans, numpy scores, JAX scores as numpy): INSTANCES instances of PLANS_EACH
    random plans each, scored in one call (one compile)."""
    problems = [batched_instance(seed) for seed in range(INSTANCES)]
    plans = [random_plans(p, PLANS_EACH, seed) for seed, p in enumerate(problems)]
    bucket = bp.bucket_for(*problems)
    params = bp.stack([bp.plan_params(p, bucket) for p in problems])
    arrays = bp.stack([bp.plans_from_stages(p, ps, STAGES) for p, ps in zip(problems, plans)])
    got = {k: np.asarray(v) for k, v in score_plans(params, arrays).items()}
    expected = [[score_plan(p, stages, b) for stages, b in ps] for p, ps in zip(problems, plans)]
    return problems, plans, expected, got


def close(got: float, expected: float) -> bool:
    """Equal within RELATIVE where finite; the same NaN or infinity otherwise."""
    if not math.isfinite(expected):
        return (math.isnan(got) and math.isnan(expected)) or got == expected
    return abs(got - expected) <= RELATIVE * abs(expected)


def test_jax_scores_equal_score_plan_on_every_random_plan(scored):
    problems, plans, expected, got = scored
    assert len(problems) >= 20 and sum(map(len, plans)) >= 10_000
    wrong, worst = [], 0.0
    for i, per_instance in enumerate(expected):
        for n, score in enumerate(per_instance):
            assert got["well_formed"][i, n]
            if REASONS[got["reason"][i, n]] != score.reason or bool(got["feasible"][i, n]) != score.feasible:
                wrong.append((i, n, "reason", REASONS[got["reason"][i, n]], score.reason))
            assert got["micro_batches"][i, n] == score.micro_batches
            pairs = [(got[k][i, n], getattr(score, k), k) for k in PLAN_FIGURES]
            pairs += [(got[k][i, n], score.throughput_range[e], k) for e, k in enumerate(RANGE_FIGURES)]
            pairs += [(got[k][i, n, j], getattr(s, f), k) for j, s in enumerate(score.stages) for k, f in STAGE_FIGURES]
            for mine, theirs, name in pairs:
                if not close(float(mine), float(theirs)):
                    wrong.append((i, n, name, float(mine), float(theirs)))
                elif math.isfinite(theirs) and theirs != 0:
                    worst = max(worst, abs(mine - theirs) / abs(theirs))
            assert np.all(got["stage_time_s"][i, n, len(score.stages) :] == 0)
    assert not wrong, f"{len(wrong)} mismatches, first {wrong[:5]}"
    assert worst <= RELATIVE


def test_random_plans_meet_every_reason_and_both_clocks(scored):
    problems, _, expected, _ = scored
    reasons = Counter(s.reason for per_instance in expected for s in per_instance)
    assert set(REASONS) <= set(reasons), reasons
    assert {p.clock.name for p in problems} == {"roofline", "kernel"}
    assert {p.job.zero for p in problems} == {0, 1, 2, 3}
    assert {p.job.recompute for p in problems} == {"none", "selective", "full"}
    assert {p.virtual_stages for p in problems} == {1, 2, 3}
    assert any(p.job.memory_headroom is not None for p in problems)
    assert any(r.memory_headroom is not None for p in problems for r in p.catalog.resources)
    assert any(p.allowed is not None for p in problems) and any(p.catalog.links for p in problems)
    assert any(len(p.sites) > 1 and not p.catalog.links for p in problems)
    assert any(p.serial_bytes.any() for p in problems) and any((p.serial_bytes == 0).any() for p in problems)
    peaks = [{r.fp8_peak_flops is not None for r in p.catalog.resources} for p in problems if p.fp8]
    assert {True, False} in peaks  # an FP8 job on types with and without an FP8 peak


@pytest.mark.parametrize("clock", ["roofline", "kernel"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_layer_coefficients_give_the_problems_layer_times(clock, recompute):
    for seed in range(6):
        base = batched_instance(seed)
        job = dataclasses.replace(base.job, recompute=recompute, fp8=seed % 2 == 0)
        problem = ParallelProblem(base.workload, base.catalog, job, clock=clock_named(clock))
        params = bp.plan_params(problem, bp.bucket_for(problem))
        for y in range(problem.num_types):
            for tp in (1, 2, 4, 64):
                for m in (1, 2, 3, 7, 48):
                    expected = problem.layer_times(y, tp, m)
                    np.testing.assert_allclose(bp.layer_times_from(params, y, tp, m), expected, rtol=1e-12)


def test_malformed_plans_are_flagged_not_scored_as_well_formed(scored):
    problem = scored[0][0]
    n, name = problem.num_layers, problem.catalog.resources[0].name
    batch = int(problem.job.batch)
    bad = [
        ((ParallelStage(0, n - 2, name, 1, 1),), 1),  # does not reach the last layer
        ((ParallelStage(0, n - 1, name, 3, 1),), 1),  # t not a power of two
        ((ParallelStage(0, n - 1, name, 1, 1),), batch + 1),  # b does not divide the batch
        ((ParallelStage(0, n - 1, name, 128, 1),), 1),  # t past the levels
    ]
    if batch % 2 == 0:
        bad.append(((ParallelStage(0, n - 1, name, 1, 2),), 1))  # d does not divide b
    good = [((ParallelStage(0, n - 1, name, 1, 1),), 1)]
    bucket = bp.bucket_for(problem)
    out = score_plans(
        bp.stack([bp.plan_params(problem, bucket)]), bp.stack([bp.plans_from_stages(problem, bad + good, 2)])
    )
    assert np.asarray(out["well_formed"])[0].tolist() == [False] * len(bad) + [True]


def test_measured_layer_times_are_refused():
    problem = batched_instance(0)
    layer = dataclasses.replace(problem.workload.layers[0], measured=(MeasuredTime("t0", 1, 1, 1e-3, 2e-3),))
    workload = dataclasses.replace(problem.workload, layers=(layer, *problem.workload.layers[1:]))
    with pytest.raises(ValueError, match="measured"):
        bp.plan_params(ParallelProblem(workload, problem.catalog, problem.job), bp.bucket_for(problem))


def test_an_instance_past_its_bucket_is_refused():
    problem = batched_instance(1)
    with pytest.raises(ValueError, match="past"):
        bp.plan_params(problem, bp.Bucket(layers=1, types=1, divisors=1))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "interleaved-fp8-full-zero3"])
def test_jax_scores_equal_score_plan_at_64_layers_by_8_types(variant):
    """The bench's instance, as it is and under v = 2, FP8 (half the types with an FP8 peak),
    full recomputation, ZeRO-3 and a 10 % headroom."""
    from hps.bench.parallel_score import bench_problem, random_plan_arrays

    problem = bench_problem()
    if variant != "default":
        resources = tuple(
            dataclasses.replace(r, fp8_peak_flops=2 * r.peak_flops if i % 2 else None)
            for i, r in enumerate(problem.catalog.resources)
        )
        job = dataclasses.replace(problem.job, virtual_stages=2, fp8=True, recompute="full", zero=3)
        job = dataclasses.replace(job, memory_headroom=0.1)
        problem = ParallelProblem(problem.workload, dataclasses.replace(problem.catalog, resources=resources), job)
    plans = random_plan_arrays(problem, 2000, STAGES, seed=3)
    params = bp.stack([bp.plan_params(problem, bp.bucket_for(problem))])
    got = {k: np.asarray(v)[0] for k, v in score_plans(params, bp.stack([plans])).items()}
    for n in range(2000):
        stages, b = bp.stages_of(problem, plans, n)
        score = score_plan(problem, stages, b)
        assert REASONS[got["reason"][n]] == score.reason
        for k in PLAN_FIGURES:
            assert close(float(got[k][n]), float(getattr(score, k))), (n, k)
        for e, k in enumerate(RANGE_FIGURES):
            assert close(float(got[k][n]), score.throughput_range[e]), (n, k)


def test_bench_parallel_score_reports_both_sides(capsys, monkeypatch):
    """`hps bench parallel-score --json` (on 4,096 plans a call here): both rates, their ratio,
    the compile time and the load."""
    import functools
    import json

    from hps.bench import parallel_score
    from tests.helpers import run_cli_output

    monkeypatch.setattr(parallel_score, "run", functools.partial(parallel_score.run, plans_per_call=4096))
    code, text, _ = run_cli_output(["bench", "parallel-score", "--seconds", "0.05", "--json"], capsys)
    assert code == 0
    result = json.loads(text)
    assert (result["layers"], result["types"], result["plans_per_call"]) == (64, 8, 4096)
    assert result["speedup"] == result["jax_per_s"] / result["reference_per_s"]
    assert result["jax_per_s"] > 0 and result["reference_per_s"] > 0 and result["compile_s"] > 0
    assert 0 < result["feasible_share"] < 1 and result["load_average"] >= 0
