"""Themis at the iteration level: end-to-end speed-up of data-parallel training iterations
(per-layer gradient All-Reduces overlapping back-propagation) with Themis + SCF over the baseline
order + FIFO, for ResNet-50, a transformer (BERT-base) and DLRM's dense part over the topology
suite (the Themis paper reports 1.25–1.49x mean). One item per workload × network, each the
study `hps collective --network N --iteration W` prints (`studies.iteration`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hps.config.loaders import load_network
from hps.studies import collectives as studies
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.studies.themis_allreduce import network_paths
from hps.workloads import resolve_workload

PAPER = {"mean_speedup_low": 1.25, "mean_speedup_high": 1.49}


@dataclass(frozen=True, kw_only=True)
class ThemisIterationConfig(ExperimentConfig):
    """workloads: (zoo name or TOML file, samples per NPU) pairs; networks: shipped names or
    files (() = every topologies/networks/*.toml); compute on units of `resource` from
    `catalog`; each layer's gradient All-Reduce in `chunks` chunks; sparse layers' gradients
    (embedding tables) are not all-reduced, so DLRM counts its dense part only."""

    name: str = "themis_iteration"
    workloads: tuple[tuple[str, float], ...] = (("resnet50", 32.0), ("bert-base", 8.0), ("dlrm", 512.0))
    networks: tuple[str, ...] = ()
    catalog: str = "cloud-2024"
    resource: str = "a100"
    chunks: int = 16
    policy: str = "themis"

    AT_LEAST = {"networks": 0}

    def check(self) -> None:
        for i, pair in enumerate(self.workloads):
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], (int, float)) and pair[1] > 0):
                raise ValueError(f"workloads[{i}]: must be (workload, samples per NPU > 0), got {pair!r}")
        if self.chunks > 256:
            raise ValueError(f"chunks: must be an integer in 1..256, got {self.chunks!r}")
        if self.policy not in ("themis", "roundrobin", "best-fixed"):
            raise ValueError(f"policy: must be themis, roundrobin or best-fixed, got {self.policy!r}")


def items(config: ThemisIterationConfig):
    resource = studies.compute_resource(
        config.catalog, config.resource, catalog_flag="catalog", resource_flag="resource"
    )
    networks = [load_network(path) for path in network_paths(config.networks)]
    workloads = [(resolve_workload(spec), batch) for spec, batch in config.workloads]
    return [
        (f"{workload.name}--{network.name}", (workload, batch, network, resource))
        for workload, batch in workloads
        for network in networks
    ]


def run_item(config: ThemisIterationConfig, params) -> dict:
    workload, batch, network, resource = params
    payload = studies.iteration(
        network, workload, resource, batch_per_npu=batch, chunks=config.chunks, policy=config.policy, dense_only=True
    )
    return {key: payload[key] for key in ("workload", "network", "batch_per_npu", "policies", "speedup")}


def summarize(config: ThemisIterationConfig, results: dict[str, dict]) -> Summary:
    workloads = list(dict.fromkeys(r["workload"] for r in results.values()))
    networks = list(dict.fromkeys(r["network"] for r in results.values()))
    speedup = {w: {r["network"]: r["speedup"] for r in results.values() if r["workload"] == w} for w in workloads}
    batch = {r["workload"]: r["batch_per_npu"] for r in results.values()}
    mean = {w: float(np.mean(list(speedup[w].values()))) for w in workloads}
    document = {
        "speedup": speedup,
        "mean_speedup": mean,
        "iterations": results,
        "paper": PAPER,
        "setting": {
            "catalog": config.catalog,
            "resource": config.resource,
            "chunks": config.chunks,
            "policy": f"{config.policy}+scf vs baseline+fifo",
        },
    }
    rows = [[f"{w} ({batch[w]:g})", *(f"{speedup[w][n]:.2f}" for n in networks), f"{mean[w]:.2f}"] for w in workloads]
    headline = (
        f"End-to-end iteration speed-up of {config.policy} + SCF over baseline + FIFO (mean over "
        f"{len(networks)} networks): "
        + ", ".join(f"{w} {mean[w]:.2f}x" for w in workloads)
        + f". The Themis paper reports {PAPER['mean_speedup_low']}–{PAPER['mean_speedup_high']}x mean. "
        f"Compute on {config.resource} ({config.catalog}), per-NPU batch in brackets, {config.chunks} chunks "
        "per gradient All-Reduce, embedding gradients not all-reduced (DLRM's dense part)."
    )

    series = {f"{w} ({batch[w]:g}/NPU)": [speedup[w][n] for n in networks] for w in workloads}
    ylabel, title = (
        "iteration speed-up over baseline",
        f"{config.policy} + SCF vs baseline + FIFO, data-parallel iteration",
    )
    return Summary(
        results=document,
        headers=["workload (batch/NPU)", *networks, "mean"],
        rows=rows,
        figures=[grouped_bars("speedup.png", networks, series, ylabel=ylabel, hline=1.0, title=title)],
        markdown=headline,
        title="Themis iteration speed-up: data-parallel training over the topology suite",
    )


register_experiment_kind(ThemisIterationConfig, items=items, run_item=run_item, summarize=summarize)
