"""The Themis paper's six 1,024-NPU networks (Table 2, as its artifact runs them in ASTRA-sim 1.0)
and the experiment kind that reproduces its All-Reduce figures on them."""

from __future__ import annotations

import math

import pytest

from hps.config.loaders import load_network
from hps.config.paths import TOPOLOGIES
from hps.config.validation import GIB

TABLE_2 = {  # name -> ((size, per-NPU GiB/s = links x link GB/s, algorithm), ...)
    "themis-2d-sw-sw-16x64": ((16, 6 * 25, "halving_doubling"), (64, 1 * 100, "halving_doubling")),
    "themis-3d-sw-sw-sw-homo-16x8x8": (
        (16, 4 * 25, "halving_doubling"),
        (8, 4 * 25, "halving_doubling"),
        (8, 1 * 100, "halving_doubling"),
    ),
    "themis-3d-sw-sw-sw-hetero-16x8x8": (
        (16, 8 * 25, "halving_doubling"),
        (8, 4 * 25, "halving_doubling"),
        (8, 1 * 50, "halving_doubling"),
    ),
    "themis-3d-fc-ring-sw-8x16x8": ((8, 7 * 25, "direct"), (16, 4 * 25, "ring"), (8, 1 * 50, "halving_doubling")),
    "themis-4d-ring-sw-sw-sw-4x4x8x8": (
        (4, 2 * 125, "ring"),
        (4, 8 * 25, "halving_doubling"),
        (8, 4 * 25, "halving_doubling"),
        (8, 1 * 50, "halving_doubling"),
    ),
    "themis-4d-ring-fc-ring-sw-4x8x4x8": (
        (4, 2 * 187.5, "ring"),
        (8, 7 * 25, "direct"),
        (4, 6 * 25, "ring"),
        (8, 1 * 100, "halving_doubling"),
    ),
}


@pytest.mark.parametrize("name", sorted(TABLE_2))
def test_table_2_network_has_1024_npus_and_the_cited_per_npu_bandwidths(name):
    path = TOPOLOGIES / "networks" / f"{name}.toml"
    network = load_network(path)
    assert network.name == name and math.prod(d.size for d in network.dimensions) == 1024
    got = tuple((d.size, d.bandwidth / GIB, d.algorithm) for d in network.dimensions)
    assert got == TABLE_2[name]
    assert all(d.latency == pytest.approx(1e-9) and d.in_flight == 1 for d in network.dimensions)
    assert "links x" in path.read_text() and "--link-bandwidth" in path.read_text()


def test_tiny_themis_paper_run_reports_every_policy_beside_the_paper_and_draws_its_figures(tmp_path):
    from hps.studies import run_experiment
    from hps.studies.themis_paper import COLUMNS, PAPER_MEAN, SWEEP_COLUMNS, ThemisPaperConfig

    config = ThemisPaperConfig(
        name="tiny",
        networks=("themis-2d-sw-sw-16x64",),
        sizes_mib=(100.0,),
        chunks=4,
        latencies_ns=(1.0, 1000.0),
        in_flight=2,
    )
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == ["artifact", "latency-1ns-k1", "latency-1ns-k2", "latency-1000ns-k1", "latency-1000ns-k2"]
    results = ran["results"]["results"]
    assert results["columns"] == list(COLUMNS) and results["paper_mean"] == PAPER_MEAN
    assert set(results["difference_points"]) == set(PAPER_MEAN) and isinstance(results["within_3_points"], bool)
    assert results["themis_speedup"]["max"] >= results["themis_speedup"]["mean"] > 0
    for column in COLUMNS:
        (value,) = results["mean"]["per_size"][column]
        assert 0 < value <= 1 and results["mean"]["overall"][column] == value
    sweep = results["sweep"]["latency-1000ns-k2"]
    assert sweep["in_flight"] == 2 and set(sweep["overall"]) == set(SWEEP_COLUMNS)
    # the sweep at 1 ns with one phase at a time is the files' own setting
    assert results["sweep"]["latency-1ns-k1"]["overall"]["themis+scf"] == results["mean"]["overall"]["themis+scf"]
    out = tmp_path / "out"
    for name in ("fig11-utilization-per-size.png", "utilization-per-network.png", "latency-sweep.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- ASTRA-sim 1.0 workload files

ASTRA = TOPOLOGIES.parent / "tests" / "data" / "astra-sim-1.0"


@pytest.mark.parametrize(
    "name, parallelism, layers",
    [
        ("Resnet50_DataParallel.txt", "DATA", 54),
        ("Transformer_HybridParallel.txt", "HYBRID_TRANSFORMER", 57),
        ("DLRM_HybridParallel.txt", "HYBRID_DLRM", 8),
        ("MLP_HybridParallel_Data_Model.txt", "HYBRID_DATA_MODEL", 6),
        ("MLP_ModelParallel.txt", "MODEL", 6),
        ("microAllReduce.txt", "MICRO", 1),
    ],
)
def test_the_artifacts_astra_sim_workloads_read_as_their_layers(name, parallelism, layers):
    from hps.studies.astra_workload import read_astra_workload

    workload = read_astra_workload(ASTRA / name)
    assert workload.parallelism == parallelism and len(workload.layers) == layers
    if name == "microAllReduce.txt":
        (layer,) = workload.layers
        assert layer.weight_grad.collective == "ALLREDUCE" and layer.weight_grad.size_bytes == 1048576
    if name == "Transformer_HybridParallel.txt":
        assert workload.model_parallel_group == 4 and workload.layers[0].forward.collective == "ALLGATHER"
    if name == "DLRM_HybridParallel.txt":
        assert workload.dlrm_last_bottom_layer == 4 and workload.layers[0].forward.collective == "ALLTOALL"


GOOD_LAYER = "conv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5"


@pytest.mark.parametrize(
    "text, line, problem",
    [
        ("", 1, "the file is empty"),
        ("PIPELINE\n1\n" + GOOD_LAYER, 1, "unknown parallelism 'PIPELINE'"),
        ("HYBRID_DLRM_ENHANCED 1\n1\n" + GOOD_LAYER, 1, "HYBRID_DLRM_ENHANCED is not supported"),
        ("HYBRID_TRANSFORMER 4\n1\n" + GOOD_LAYER, 1, "model_parallel_NPU_group"),
        ("DATA\none\n" + GOOD_LAYER, 2, "number of layers: must be a non-negative integer, got 'one'"),
        ("DATA\n2\n" + GOOD_LAYER, 3, "announces 2 layers, the file has 1"),
        ("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576", 3, "12 fields, got 11"),
        ("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 BROADCAST 1048576 5", 3, "weight-gradient collective: unknown kind"),
        ("DATA\n1\nconv1 -1 5 NONE 0 -5 NONE 0 5 ALLREDUCE 1048576 5", 3, "input-gradient compute cycles"),
        ("DATA\n2\n" + GOOD_LAYER + "\n\n" + GOOD_LAYER, 4, "an empty line"),
    ],
)
def test_a_malformed_or_unsupported_astra_sim_line_is_refused_with_file_and_line(tmp_path, text, line, problem):
    from hps.errors import ConfigError
    from hps.studies.astra_workload import read_astra_workload

    path = tmp_path / "workload.txt"
    path.write_text(text)
    with pytest.raises(ConfigError) as refused:
        read_astra_workload(path)
    assert str(refused.value).startswith(f"{path}:{line}: ") and problem in str(refused.value)


def test_the_learned_table_gives_each_network_and_size_beside_themis_with_its_loss():
    from hps.studies.themis_paper import LEARNED, learned_table

    artifact = {
        "networks": ["a", "b"],
        "sizes_bytes": [100 * 2**20, 2**30],
        "utilization": {LEARNED: [[0.9, 0.95], [0.5, 0.6]], "themis+scf": [[0.95, 0.95], [0.5, 0.7]]},
    }
    text = learned_table(artifact)
    assert "Learned (zero-shot, trained on random networks) 73.75%, Themis + SCF 77.50%." in text
    assert "| a | 90.0% / 95.0% (-5.0) | 95.0% / 95.0% (+0.0) |" in text
    assert "| b | 50.0% / 50.0% (+0.0) | 60.0% / 70.0% (-10.0) |" in text
