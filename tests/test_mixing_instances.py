"""Generated instances where mixing hardware pays (the mixing splits of
hps.placement.env.parallel_generator) and their certified optima (tests/data/mixing_held_out.json, the
`certified_set` of `hps run experiments/mixing_optima.py`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hps.api.loading import load_catalog
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.hardware_reach import hardware_of, hardware_reach
from hps.methods.exact_parallel.solver import solve_parallel
from hps.placement.env.parallel_generator import LEAST_CAP, MIXING_TRAIN, MOST_CAP, SPLITS, generate
from hps.reference import parallel as reference
from hps.studies.mixing_optima import figures, plan_mix
from tests.parallel_instances import every_plan, random_instance

CERTIFIED = Path(__file__).parent / "data" / "mixing_held_out.json"
SEEDS = (7, 2)
"""Small mixing-train instances (30 and 62 rows), each drawn in 1–2 s."""


@pytest.fixture(scope="module")
def base():
    return load_catalog("cloud-2026")


@pytest.fixture(scope="module")
def instances(base):
    return {seed: generate(MIXING_TRAIN, seed, base) for seed in SEEDS}


@pytest.fixture(scope="module")
def certified():
    return json.loads(CERTIFIED.read_text())


def test_a_mixing_instance_is_its_seed(base, instances):
    instance, again = instances[SEEDS[0]], generate(MIXING_TRAIN, SEEDS[0], base)
    assert instance.workload.layers == again.workload.layers and instance.catalog == again.catalog
    assert instance.job == again.job and instance.witness == again.witness
    assert [(h.hardware, h.bound) for h in instance.hardware] == [(h.hardware, h.bound) for h in again.hardware]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_floor_is_above_what_every_hardware_reaches_alone_and_the_witness_mixes_to_meet_it(base, instances, seed):
    instance = instances[seed]
    floor = instance.job.throughput
    assert instance.hardware and all(h.certified for h in instance.hardware)
    assert {h.hardware for h in instance.hardware} == {hardware_of(n) for n in instance.catalog.names}
    for h in instance.hardware:
        assert h.throughput <= h.bound * (1 + 1e-12) and floor > h.bound
    score = score_plan(instance.problem, instance.witness.stages, instance.witness.micro_batch)
    assert score.feasible and score.throughput == pytest.approx(instance.witness_throughput, rel=1e-12)
    assert len({hardware_of(s.type) for s in instance.witness.stages}) >= 2
    listed = {r.name: r.max_units for r in base.resources}
    for r in instance.catalog.resources:
        assert LEAST_CAP <= r.max_units <= min(MOST_CAP, listed[hardware_of(r.name)])
    assert instance.job.micro_batch == instance.job.batch // instance.job.micro_batches


def test_what_each_type_reaches_alone_is_its_fastest_plan_within_its_cap():
    """The dual with the budget equal to the cap (hardware_reach) against every one-type plan of
    small random instances, scored by the reference evaluator (caps included)."""
    checked = 0
    for seed in range(16):
        workload, catalog, job = random_instance(seed)
        job = dataclasses.replace(job, throughput=1e-9)  # every plan meets the floor
        alone = {h.hardware: h for h in hardware_reach(ParallelProblem(workload, catalog, job))}
        fastest = dict.fromkeys(catalog.names, 0.0)
        choices = [int(job.micro_batch)] if job.micro_batch else range(1, int(job.batch) + 1)
        for b in (b for b in choices if int(job.batch) % b == 0):
            at_b = dataclasses.replace(job, micro_batch=float(b))
            for plan in every_plan(workload, catalog, b):
                if len({stage.type for stage in plan}) == 1:
                    score = reference.evaluate(workload, catalog, at_b, plan)
                    if score["feasible"]:
                        fastest[plan[0].type] = max(fastest[plan[0].type], score["throughput"])
        for name, most in fastest.items():
            assert alone[name].certified
            assert alone[name].throughput == pytest.approx(most, rel=1e-9, abs=1e-12)
            checked += most > 0
    assert checked > 10


def test_the_committed_optima_mix_hardware(certified):
    assert certified["split"] in SPLITS and SPLITS[certified["split"]].mixing
    kept = certified["instances"]
    assert len(kept) >= 10 and all(i["status"] == "optimal" for i in kept)
    for i in kept:
        assert (i["distinct_types"], i["distinct_hardware"]) == plan_mix(i["stages"])
        assert all(i["floor"] > a["bound"] >= a["throughput"] for a in i["alone"])
        assert i["cost"] == pytest.approx(i["bound"], rel=1e-9)
    mixing = sum(i["distinct_hardware"] >= 2 for i in kept) / len(kept)
    assert mixing >= 0.8


def test_the_fastest_committed_optimum_is_certified_again_at_its_cost(base, certified):
    """The committed instance that certified fastest, drawn again and solved as the experiment
    solves it (from the generator's witness)."""
    kept = min(certified["instances"], key=lambda i: i["seconds"])
    assert kept["seconds"] < 10
    instance = generate(SPLITS[certified["split"]], kept["seed"], base)
    assert instance.job.throughput == pytest.approx(kept["floor"], rel=1e-12)
    found = solve_parallel(instance.problem, seconds=60.0, incumbent=instance.witness)
    assert found.status == "optimal"
    assert found.cost == pytest.approx(kept["cost"], rel=1e-9)


def _result(seed, status, seconds, types, hardware):
    stages = [{"type": "x"}] if status in ("optimal", "feasible") else []
    exact = {"status": status, "seconds": seconds, "distinct_types": types, "distinct_hardware": hardware}
    return {"seed": seed, "exact": {**exact, "stages": stages}}


def test_the_figures_by_hand():
    results = [
        _result(0, "optimal", 1.0, 2, 2),
        _result(1, "optimal", 3.0, 2, 1),  # two pools of one hardware: types mix, hardware does not
        _result(2, "optimal", 5.0, 3, 2),
        _result(3, "feasible", 300.0, 2, 2),  # not certified: not counted
        _result(4, "unknown", 300.0, 0, 0),
    ]
    shown = figures(results, 300.0)
    assert (shown["tried"], shown["certified"]) == (5, 3)
    assert shown["statuses"] == {"optimal": 3, "feasible": 1, "unknown": 1}
    assert shown["mixing_hardware"] == pytest.approx(2 / 3) and shown["mixing_types"] == 1.0
    assert shown["median_seconds"] == 3.0 and shown["p90_seconds"] == pytest.approx(4.6)
    assert figures([], 300.0)["mixing_hardware"] is None


def test_hardware_counts_second_pools_as_their_type():
    assert hardware_of("h100-pool2") == hardware_of("h100") == "h100"
    assert plan_mix([{"type": "h100"}, {"type": "h100-pool2"}]) == (2, 1)
    assert plan_mix([{"type": "h100"}, {"type": "b200"}, {"type": "h100-pool3"}]) == (3, 2)
