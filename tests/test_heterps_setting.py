"""The HeterPS setting on cloud-2024: sparse recommendation models at their default floors are
cheapest on a CPU + GPU mix (docs/placement-model.md, the workload zoo)."""

from __future__ import annotations

import pytest

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Job
from hps.workloads import build_workload
from tests.helpers import schedule_of, search


def optimum(name):
    workload = build_workload(name)
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "--catalog"))
    d = workload.defaults
    result = search("exhaustive", workload, catalog, Job(d.batch, d.throughput, d.samples))
    kinds = [catalog.resources[t].kind for t in schedule_of(result, catalog)]
    return workload, result, kinds


def test_ctr_dnn_optimum_puts_embedding_on_cpu_and_dense_layers_on_gpu():
    workload, result, kinds = optimum("ctr-dnn")
    assert result.feasible
    for layer, kind in zip(workload.layers, kinds):
        if layer.kind == "sparse":
            assert kind == "cpu", (layer.name, kinds)
        elif layer.dense_param_bytes > 0:
            assert kind == "gpu", (layer.name, kinds)


@pytest.mark.parametrize("name", ["wide-deep", "deepfm", "matchnet"])
def test_sparse_models_mix_cpu_and_gpu_stages_at_default_floor(name):
    _, result, kinds = optimum(name)
    assert result.feasible
    assert {"cpu", "gpu"} <= set(kinds), kinds
