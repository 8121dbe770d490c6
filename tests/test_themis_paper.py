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
    from hps.experiments import run_experiment
    from hps.experiments.themis_paper import COLUMNS, PAPER_MEAN, SWEEP_COLUMNS, ThemisPaperConfig

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
