"""The LLM-plans experiment in the parallel-plan model: every plan it reports is realizable.

`check_realizable` is written here in plain Python from docs/parallel-plans.md, apart from the
model's code: contiguous stages covering every layer, cuts only where the workload allows, a
micro-batch b dividing the batch, whole samples per replica, tensor-parallel degrees that are
powers of two within the type's scale-up domain, memory per device (recomputed from the docs'
formula) within the type's memory, a catalogue link between adjacent stages on different sites,
pooled caps, and an iteration no shorter than the 1F1B pipeline's (M + S − 1) slots of its
slowest stage. It runs on the committed results of `hps run experiments/llm_plans.py`
(tests/data/llm_plans-results.json) and live on small cases.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import DEFAULT_MEMORY_HEADROOM, Job
from hps.studies import run_experiment
from hps.studies.llm_figures import best_single
from hps.studies.llm_plans import LLMS, LlmPlansConfig, job_at, run_item
from hps.workloads import build_workload

RESULTS = Path(__file__).parent / "data" / "llm_plans-results.json"
BYTES_PER_PARAMETER = {"bf16-adam": (2.0, 2.0, 12.0), "fp32-adam": (4.0, 4.0, 8.0), "fp32-sgd": (4.0, 4.0, 0.0)}
"""(parameters, gradients, optimizer state) bytes per parameter (docs/parallel-plans.md)."""
PNG = b"\x89PNG\r\n\x1a\n"


def expected_memory(workload, job: Job, stage: dict, position: int, count: int, b: int) -> float:
    """Bytes per device of `stage` at `position` of `count` stages, by the docs' formula."""
    layers = workload.layers[stage["first"] : stage["last"] + 1]
    t, d = stage["tp"], stage["dp"]
    m = b // d
    p_bytes, g_bytes, o_bytes = BYTES_PER_PARAMETER[job.precision]
    shard = [d if job.zero >= level else 1 for level in (1, 2, 3)]
    params = [layer.dense_param_bytes / 4.0 for layer in layers]
    states = sum(params) / t * (p_bytes / shard[2] + g_bytes / shard[1] + o_bytes / shard[0])
    gather = max(params) * p_bytes / t if job.zero == 3 and d > 1 else 0.0
    sparse = sum(layer.sparse_param_bytes for layer in layers) / (t * d)
    stash = [layer.act_bytes if layer.stash_bytes is None else layer.stash_bytes for layer in layers]
    if job.recompute == "full":
        first, last = stage["first"], stage["last"]  # a checkpointed block keeps its input
        inputs = [
            workload.layers[i - 1].act_bytes for i in range(max(first, 1), last + 1) if workload.layers[i - 1].cut_after
        ]
        kept, peak = sum(inputs), m * max(stash) / t
    else:
        kept, peak = sum(stash), 0.0
    micro_batches = int(job.batch) // b
    in_flight = min(count - position, micro_batches)
    return states + gather + sparse + in_flight * m * kept / t + peak


def check_realizable(workload, catalog, job: Job, plan: dict) -> None:
    """AssertionError naming what fails when `plan` (a plan record of llm_plans: micro_batch,
    iteration_s, throughput and stages of type, site, first, last, tp, dp, units,
    replica_micro_batch, time_per_microbatch_s, memory_per_device_bytes, memory_limit_bytes)
    cannot run as reported."""
    stages, b = plan["stages"], plan["micro_batch"]
    count, layers = len(stages), len(workload.layers)
    assert count >= 1 and isinstance(b, int) and b >= 1
    assert stages[0]["first"] == 0 and stages[-1]["last"] == layers - 1, "stages cover every layer"
    for before, after in zip(stages, stages[1:]):
        assert after["first"] == before["last"] + 1, f"stages contiguous at layer {after['first']}"
    for s in stages:
        assert s["first"] <= s["last"]
        assert s["last"] == layers - 1 or workload.layers[s["last"]].cut_after, f"no cut allowed after {s['last']}"
    assert int(job.batch) % b == 0, f"b={b} divides the batch {job.batch}"
    micro_batches = int(job.batch) // b
    assert plan["micro_batches"] == micro_batches
    resources = {r.name: r for r in catalog.resources}
    for j, s in enumerate(stages):
        r = resources[s["type"]]
        t, d = s["tp"], s["dp"]
        assert t >= 1 and d >= 1 and s["units"] == t * d
        assert b % d == 0 and s["replica_micro_batch"] == b // d >= 1, f"stage {j}: b/d = {b}/{d}"
        assert t & (t - 1) == 0, f"stage {j}: tp {t} is a power of two"
        domain = r.tp_max or r.network.dimensions[0].size
        assert t <= domain and t <= r.max_units, f"stage {j}: tp {t} within {r.name}'s scale-up domain {domain}"
        assert s["site"] == r.site
        headroom = next(h for h in (job.memory_headroom, r.memory_headroom, DEFAULT_MEMORY_HEADROOM) if h is not None)
        limit = r.memory * (1 - headroom)
        assert s["memory_limit_bytes"] == pytest.approx(limit, rel=1e-12)
        memory = expected_memory(workload, job, s, j, count, b)
        assert s["memory_per_device_bytes"] == pytest.approx(memory, rel=1e-9, abs=0), f"stage {j} memory"
        assert memory <= limit, f"stage {j}: {memory / 2**30:.2f} GiB of {limit / 2**30:.2f} GiB"
    for j, (before, after) in enumerate(zip(stages, stages[1:])):
        if before["site"] != after["site"]:
            assert catalog.link(before["site"], after["site"]) is not None, f"stages {j}, {j + 1}: no link"
    for name, r in resources.items():
        assert sum(s["units"] for s in stages if s["type"] == name) <= r.max_units, f"pooled cap of {name}"
    slowest = max(s["time_per_microbatch_s"] for s in stages)
    assert plan["iteration_s"] >= (micro_batches + count - 1) * slowest * (1 - 1e-12), "the pipeline bubble"
    assert plan["throughput"] == pytest.approx(job.batch / plan["iteration_s"], rel=1e-12)
    assert plan["throughput"] >= job.throughput * (1 - 1e-9), "the floor"
    rate = sum(s["units"] * resources[s["type"]].price_per_hour for s in stages)
    assert plan["dollars_per_hour"] == pytest.approx(rate, rel=1e-9)
    cost = job.samples / job.batch * rate * plan["iteration_s"] / 3600 + plan["egress_dollars"]
    assert plan["cost"] == pytest.approx(cost, rel=1e-9)


def job_of(record: dict) -> Job:
    """The Job of a result's "job" (JSON null for an infinite micro_batches)."""
    values = dict(record)
    if values["micro_batches"] is None:
        values["micro_batches"] = math.inf
    return Job(**values)


def check_point(point: dict) -> None:
    """Every plan of one llm_plans result: the exact solver's and each single-type plan."""
    workload = build_workload(point["workload"])
    catalog = load_catalog(resolve_topology(point["catalog"], "catalogs", "catalog"))
    job = job_of(point["job"])
    assert job.throughput == point["floor"] and point["layers"] == len(workload.layers)
    plan = point["plan"]
    if plan["feasible"]:
        check_realizable(workload, catalog, job, plan)
        assert plan["gap"] is not None and plan["gap"] >= 0 and plan["bound"] <= plan["cost"] * (1 + 1e-9)
    else:  # recorded honestly: no plan, the reason and what was proven
        assert plan["reason"] == "none_found" and plan["cost"] is None and plan["stages"] == []
    assert set(point["single"]) == {r.name for r in catalog.resources}
    for name, single in point["single"].items():
        if single["feasible"]:
            check_realizable(workload, catalog, job, single)
            assert {s["type"] for s in single["stages"]} == {name}
            # every single-type plan is a plan of the whole catalogue, and the solver starts from the best
            assert plan["feasible"] and plan["cost"] <= single["cost"] * (1 + 1e-9)
        else:
            assert single["reason"] == "none_found"


def committed() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_committed_results_hold_every_workload_and_floor():
    document = committed()
    assert document["kind"] == "LlmPlansConfig"
    config = document["config"]
    workloads = document["results"]["workloads"]
    assert sorted(workloads) == sorted(LLMS) == sorted(config["workloads"])
    for points in workloads.values():  # a row with no plan found is kept, not dropped
        assert [p["floor_scale"] for p in points] == sorted(config["floor_scales"])
        for p in points:
            assert p["plan"]["seconds"] is not None and p["plan"]["bound"] is not None


@pytest.mark.parametrize(
    "key",
    [f"{w}+{p['floor_scale']:g}" for w, ps in committed()["results"]["workloads"].items() for p in ps],
)
def test_every_committed_plan_is_realizable(key):
    name, scale = key.split("+")
    (point,) = [p for p in committed()["results"]["workloads"][name] if p["floor_scale"] == float(scale)]
    workload = build_workload(name)
    assert job_of(point["job"]) == job_at(workload, float(scale))  # the job of the workload's defaults
    check_point(point)


def test_the_checker_refuses_what_cannot_run():
    workload = build_workload("transformer-small")
    catalog = load_catalog(resolve_topology("small", "catalogs", "catalog"))
    point = run_item(
        LlmPlansConfig(workloads=("transformer-small",), catalog="small", seconds=10.0), ("transformer-small", 1.0)
    )
    job, plan = job_of(point["job"]), point["plan"]
    check_realizable(workload, catalog, job, plan)
    broken = [
        {**plan, "micro_batch": plan["micro_batch"] + 1000},
        {**plan, "stages": [{**plan["stages"][0], "memory_per_device_bytes": 1.0}, *plan["stages"][1:]]},
        {**plan, "stages": [{**plan["stages"][0], "tp": 3, "units": 3 * plan["stages"][0]["dp"]}, *plan["stages"][1:]]},
        {**plan, "stages": [{**plan["stages"][0], "first": 1}, *plan["stages"][1:]]},
        {**plan, "iteration_s": plan["iteration_s"] / 1000},
    ]
    for bad in broken:
        with pytest.raises(AssertionError):
            check_realizable(workload, catalog, job, bad)


def test_llm_plans_on_a_small_case_runs_through_the_runner_and_draws_its_figures(tmp_path):
    config = LlmPlansConfig(workloads=("transformer-small",), catalog="small", floor_scales=(1.0, 2.0), seconds=10.0)
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == ["transformer-small+floor1x", "transformer-small+floor2x"]
    points = ran["results"]["results"]["workloads"]["transformer-small"]
    assert [p["floor_scale"] for p in points] == [1.0, 2.0]
    for point in points:
        assert point["plan"]["gap"] == 0.0 and point["plan"]["cost"] == pytest.approx(point["plan"]["bound"])
        check_point(point)
        single = best_single(point)
        assert single is not None and single[1]["cost"] >= point["plan"]["cost"] * (1 - 1e-12)
    assert len(ran["rows"]) == 2 and "×" in ran["rows"][0][-2]  # the stages
    assert ran["rows"][0][-1] == "gpu-b: no published BF16 run"  # the MFU beside the best published run
    for figure in ("pareto", "stages"):
        assert (tmp_path / "out" / f"llm_plans-transformer-small-{figure}.png").read_bytes()[:8] == PNG


@pytest.mark.slow
def test_a_live_llm_plan_is_realizable():
    """GPT-3 175B at half its default floor, proven optimal in seconds, and 0.5 s per single-type
    plan (the limits are checked between stage counts and regions, so a busy machine takes a
    little longer)."""
    config = LlmPlansConfig(workloads=("gpt3-175b",), seconds=20.0, single_seconds=0.5)
    point = run_item(config, ("gpt3-175b", 0.5))
    assert point["plan"]["feasible"] or best_single(point) is None
    check_point(point)


def test_a_plan_s_mfu_is_set_beside_the_best_published_run_on_its_main_type_and_says_why_above():
    """The best published MFU per type is each run's model MFU over its predicted / published ratio;
    a plan above it says by how much and whether the clock's held-out errors on the type cover it."""
    from hps.studies.llm_plans import best_published_mfu, mfu_beside_published
    from hps.studies.published_runs import score_run
    from hps.studies.published_table import RUNS

    published = best_published_mfu()
    mfu, key = published[("h100", "bf16")]
    run = next(r for r in RUNS if r.key == key)
    score = score_run(run)
    assert mfu == pytest.approx(score["mfu"] / score["ratio"]) and (run.type, run.compute) == ("h100", "bf16")
    h100 = [r for r in RUNS if (r.type, r.compute) == ("h100", "bf16")]
    assert all(s["mfu"] / s["ratio"] <= mfu + 1e-12 for s in map(score_run, h100))
    assert published[("h100", "fp8")][0] > mfu  # FP8 runs are set apart: their MFU counts the BF16 peak
    stages = [{"type": "h100", "units": 64}, {"type": "b200", "units": 8}]
    below = {"feasible": True, "stages": stages, "mfu": mfu - 0.01, "throughput": 100.0, "throughput_range": [90, 110]}
    assert mfu_beside_published(below, published, "bf16") == f"h100: {mfu:.1%} ({key})"
    covered = {**below, "mfu": mfu + 0.02}  # its range's low end (90/100 of it) is below the best
    assert "above it by 2.0 points (within the clock's held-out errors)" in mfu_beside_published(
        covered, published, "bf16"
    )
    beyond = {**below, "mfu": mfu + 0.2}
    assert "beyond the clock's held-out errors" in mfu_beside_published(beyond, published, "bf16")
    assert mfu_beside_published({**below, "stages": [{"type": "l4", "units": 8}]}, published, "bf16") == (
        "l4: no published BF16 run"
    )
