"""The Themis paper end to end, as its artifact ran it: ASTRA-sim 1.0's workload files
(ResNet-50 data-parallel, the hybrid-parallel Transformer, DLRM, the data+model and the
model-parallel MLP) at the artifact's comm scales (100, 150, 200) and compute scale 0.26 on the
six Table 2 networks, baseline order + FIFO vs Themis + SCF: iteration time and speed-up per
workload, scale and network beside the paper's mean speed-ups (docs/themis-paper.md,
"End to end"). One item per workload and comm scale (hps.studies.astra_iteration)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hps.config.loaders import load_network
from hps.studies.astra_iteration import iteration_times
from hps.studies.astra_workload import read_astra_workload
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import bars_beside_reference
from hps.studies.themis_allreduce import network_paths
from hps.studies.themis_paper import TABLE_2

WORKLOADS = (
    "Resnet50_DataParallel",
    "Transformer_HybridParallel",
    "DLRM_HybridParallel",
    "MLP_HybridParallel_Data_Model",
    "MLP_ModelParallel",
)
PAPER_SPEEDUP = {"Resnet50_DataParallel": 1.49, "Transformer_HybridParallel": 1.25, "DLRM_HybridParallel": 1.30}
"""The paper's mean end-to-end speed-ups (ISCA'22 version) for the workload each file stands for:
ResNet-152 1.49x (the artifact ships ResNet-50), Transformer-1T 1.25x, DLRM 1.30x; none for
the MLPs."""


@dataclass(frozen=True, kw_only=True)
class ThemisEndToEndConfig(ExperimentConfig):
    """workloads: ASTRA-sim 1.0 workload files (names in workload_dir, without .txt, or paths);
    networks: shipped names or files (default: the paper's six); comm_scales: the factors
    applied to every collective's size; compute_scale: the factor applied to compute cycles
    (1 ns each); chunks: the chunks of each collective."""

    name: str = "themis_end_to_end"
    workloads: tuple[str, ...] = WORKLOADS
    workload_dir: str = "tests/data/astra-sim-1.0"
    networks: tuple[str, ...] = TABLE_2
    comm_scales: tuple[float, ...] = (100.0, 150.0, 200.0)
    compute_scale: float = 0.26
    chunks: int = 16

    def check(self) -> None:
        if self.chunks > 256:
            raise ValueError(f"chunks: must be an integer in 1..256, got {self.chunks!r}")


def workload_path(config: ThemisEndToEndConfig, spec: str) -> Path:
    path = Path(spec)
    return path if path.suffix == ".txt" else Path(config.workload_dir) / f"{spec}.txt"


def items(config: ThemisEndToEndConfig):
    paths = [str(path) for path in network_paths(config.networks)]
    out = []
    for spec in config.workloads:
        workload = read_astra_workload(workload_path(config, spec))  # a malformed file fails before any work
        name = Path(workload.source).stem
        out += [
            (f"{name}-x{scale:g}", (str(workload_path(config, spec)), paths, scale)) for scale in config.comm_scales
        ]
    return out


def run_item(config: ThemisEndToEndConfig, params) -> dict:
    source, paths, scale = params
    workload = read_astra_workload(source)
    networks = [load_network(path) for path in paths]
    times = iteration_times(
        workload, networks, comm_scale=scale, compute_scale=config.compute_scale, chunks=config.chunks
    )
    iteration = times["iteration"]
    return {
        "workload": Path(source).stem,
        "parallelism": workload.parallelism,
        "comm_scale": scale,
        "networks": [n.name for n in networks],
        "baseline_s": iteration[:, 0].tolist(),
        "themis_s": iteration[:, 1].tolist(),
        "speedup": (iteration[:, 0] / iteration[:, 1]).tolist(),
        "compute_s": float(times["compute"][0, 0]),
        "critical_path_s": times["critical_path"].tolist(),  # (networks, policies)
        "communication_s": times["communication"].tolist(),
    }


def summarize(config: ThemisEndToEndConfig, results: dict[str, dict]) -> Summary:
    rows_in = list(results.values())
    networks = rows_in[0]["networks"]
    workloads = list(dict.fromkeys(r["workload"] for r in rows_in))
    mean = {w: float(np.mean([np.mean(r["speedup"]) for r in rows_in if r["workload"] == w])) for w in workloads}
    rows = [
        [
            r["workload"],
            f"{r['comm_scale']:g}",
            *(f"{s:.2f}" for s in r["speedup"]),
            f"{np.mean(r['speedup']):.2f}",
            f"{PAPER_SPEEDUP[r['workload']]:.2f}" if r["workload"] in PAPER_SPEEDUP else "",
            f"{r['compute_s'] / np.mean(r['themis_s']):.1%}",
        ]
        for r in rows_in
    ]
    per_network = {
        w: [float(np.mean([r["speedup"][i] for r in rows_in if r["workload"] == w])) for i in range(len(networks))]
        for w in workloads
    }
    figure = bars_beside_reference(
        "speedup.png",
        [*networks, "mean"],
        {w: [*per_network[w], mean[w]] for w in workloads},
        {w: v for w, v in PAPER_SPEEDUP.items() if w in workloads},
        ylabel="iteration speed-up, Themis+SCF over baseline+FIFO",
        title=f"End to end, mean over comm scales {', '.join(f'{s:g}' for s in config.comm_scales)}, "
        f"compute scale {config.compute_scale:g}",
    )
    headline = (
        "Mean iteration speed-up of Themis + SCF over baseline + FIFO over the six networks and comm scales: "
        + ", ".join(
            f"{w} {mean[w]:.2f}x" + (f" (paper {PAPER_SPEEDUP[w]:.2f}x)" if w in PAPER_SPEEDUP else "")
            for w in workloads
        )
        + f". Compute scale {config.compute_scale:g}, {config.chunks} chunks per collective; the last column is "
        "the compute's share of the Themis iteration."
    )
    return Summary(
        results={
            "iterations": results,
            "mean_speedup": mean,
            "paper_speedup": PAPER_SPEEDUP,
            "setting": {"compute_scale": config.compute_scale, "chunks": config.chunks},
        },
        headers=["workload", "comm scale", *networks, "mean", "paper", "compute share"],
        rows=rows,
        figures=[figure],
        markdown=headline,
        title="The Themis paper end to end: ASTRA-sim 1.0 workloads on the Table 2 networks",
    )


register_experiment_kind(ThemisEndToEndConfig, items=items, run_item=run_item, summarize=summarize)
