"""Uniform plans (one type, t and d for every stage, blocks split evenly), the space Megatron-LM,
MaxText and torchtitan launch: the planner against brute force over that space by the plain-Python
reference, and its premium over the exact optimum."""

from __future__ import annotations

import dataclasses
import math

import pytest

from hps.config.types import ParallelStage
from hps.contract.types import Budget
from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.problem import Problem
from hps.methods.registry import run
from hps.methods.uniform import uniform_stages
from hps.reference import parallel as reference
from tests.parallel_instances import random_instance


def brute_uniform(workload, catalog, job) -> float:
    """The cheapest feasible uniform plan by the reference evaluator (inf: none)."""
    problem = ParallelProblem(workload, catalog, job)
    best = math.inf
    for b in problem.micro_batch_choices():
        at_b = dataclasses.replace(job, micro_batch=float(b))
        for count in range(1, len(workload.layers) + 1):
            spans = uniform_stages(problem, count)
            if spans is None:
                continue
            for r in catalog.resources:
                for t in (1, 2, 4, 8):
                    for d in range(1, b + 1):
                        if t > r.tensor_parallel_limit or b % d or count * t * d > r.max_units:
                            continue
                        plan = tuple(ParallelStage(s, e, r.name, t, d) for s, e in spans)
                        score = reference.evaluate(workload, catalog, at_b, plan)
                        if score["feasible"]:
                            best = min(best, score["cost"])
    return best


def test_the_uniform_planner_equals_brute_force_over_uniform_plans_and_never_beats_the_optimum():
    checked = 0
    for seed in range(40):
        workload, catalog, job = random_instance(seed)
        problem = Problem(workload, catalog, job, model="parallel")
        found = run("uniform", problem, Budget())
        want = brute_uniform(workload, catalog, job)
        if math.isinf(want):
            assert found.plan is None, seed
            continue
        assert found.cost == pytest.approx(want, rel=1e-9), seed
        assert found.cost >= run("exact", problem, Budget()).cost * (1 - 1e-9), seed
        assert math.isnan(found.bound) and found.status == "feasible"
        checked += 1
    assert checked >= 10


def test_blocks_split_evenly_with_the_embedding_first_and_the_head_last():
    from hps.workloads import build_workload

    workload = build_workload("transformer-small")  # embedding, 2 x (attention, ffn), head, loss
    problem = ParallelProblem(workload, _catalog(), _job())
    assert uniform_stages(problem, 1) == [(0, 6)]
    assert uniform_stages(problem, 2) == [(0, 2), (3, 6)]
    assert uniform_stages(problem, 3) is None


def _catalog():
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    return load_catalog(resolve_topology("small", "catalogs", "--catalog"))


def _job():
    from hps.config.types import Job

    return Job(batch=64, throughput=1.0, samples=1e6, micro_batch=8.0)


def test_search_for_a_framework_plans_its_uniform_space_reports_the_premium_and_exports(tmp_path, capsys):
    """`hps search --framework megatron` plans only what Megatron-LM launches (GPU types), reports
    the premium over the exact optimum, and its plan file exports to Megatron-LM's flags."""
    import json

    from hps.cli.main import main

    out = tmp_path / "p.json"
    argv = ["search", "--workload", "llama3-8b", "--catalog", "cloud-2026", "--framework", "megatron"]
    assert main([*argv, "--seconds", "20", "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert "note" not in captured.err
    stages = document["stages"]
    assert len({(s["type"], s["tp"], s["dp"]) for s in stages}) == 1 and stages[0]["type"] in ("h100", "h200", "b200")
    exact, uniform = document["results"]
    assert exact["method"] == "exact" and uniform["method"] == "uniform"
    assert document["premium"] == pytest.approx(uniform["cost"] / exact["cost"] - 1, rel=1e-9)
    assert document["premium"] >= 0
    assert main(["export", str(out), "--to", "megatron", "--json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["devices"] == sum(s["tp"] * s["dp"] for s in stages)
