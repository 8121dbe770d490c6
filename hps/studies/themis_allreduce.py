"""Themis All-Reduce study: bandwidth utilization (T_ideal / T) of every collective policy over
the topology suite, and Themis + SCF's speed-up over the baseline order (the Themis paper
reports 1.72x mean, 2.70x max). One item per network; each runs `studies.suite` on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hps.collective.model.network import ideal_time, network_params
from hps.config.loaders import load_network
from hps.config.paths import TOPOLOGIES, resolve_topology
from hps.studies import collectives as studies
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars

PAPER = {"mean_speedup": 1.72, "max_speedup": 2.70}
BASELINE, THEMIS = "baseline+fifo", "themis+scf"


@dataclass(frozen=True, kw_only=True)
class ThemisAllReduceConfig(ExperimentConfig):
    """networks: shipped names or TOML files (() = every topologies/networks/*.toml); one
    All-Reduce of size_bytes in `chunks` chunks on each. checkpoint: a trained collective
    policy's run folder (`hps train --kind collective`), which adds a "learned+scf" column;
    with train_minutes > 0 the default collective policy is trained there first when the
    folder holds none."""

    name: str = "themis_allreduce"
    networks: tuple[str, ...] = ()
    size_bytes: float = 2.0**30
    chunks: int = 64
    checkpoint: str | None = None
    train_minutes: float = 0.0

    AT_LEAST = {"networks": 0, "train_minutes": 0.0}

    def check(self) -> None:
        if self.chunks > 256:
            raise ValueError(f"chunks: must be an integer in 1..256, got {self.chunks!r}")


def network_paths(specs: tuple[str, ...]) -> list[Path]:
    """Files of the networks named (shipped names or files); () -> the whole shipped suite."""
    if not specs:
        return sorted(TOPOLOGIES.glob("networks/*.toml"))
    return [resolve_topology(spec, "networks", "networks") for spec in specs]


TRAIN_ITEM = "train-policy"


def items(config: ThemisAllReduceConfig):
    networks = [(load_network(path).name, path) for path in network_paths(config.networks)]
    if config.checkpoint and config.train_minutes > 0:
        return [(TRAIN_ITEM, None), *networks]
    if config.checkpoint:
        from hps.rl.checkpoint import checkpoint_folder

        checkpoint_folder(config.checkpoint)  # a missing folder fails before any work
    return networks


def train_policy(config: ThemisAllReduceConfig) -> dict:
    """The default collective policy (as `hps train --kind collective`) in config.checkpoint."""
    from hps.collective.agent.train import CollectiveTrainConfig
    from hps.config.limits import UNBOUNDED_CHUNKS
    from hps.studies.placement import ensure_trained

    train = CollectiveTrainConfig(num_chunks=UNBOUNDED_CHUNKS, seed=config.seed)
    return ensure_trained(config.checkpoint, train, config.train_minutes)


def run_item(config: ThemisAllReduceConfig, path) -> dict:
    if path is None:
        return train_policy(config)
    network = load_network(path)
    suite = studies.suite([path], config.size_bytes, config.chunks)
    columns = list(suite["columns"])
    utilization = {column: suite["networks"][0][column] for column in columns}
    if config.checkpoint:
        from hps.collective.agent.checkpoint import checkpoint_orders

        orders = checkpoint_orders(config.checkpoint, network, config.size_bytes, config.chunks)
        payload, _ = studies.single_allreduce(network, config.size_bytes, config.chunks, "learned", True, orders=orders)
        utilization["learned+scf"] = payload["utilization"]
        columns.append("learned+scf")
    return {
        "columns": columns,
        "dimensions": [d.size for d in network.dimensions],
        "ideal_time": float(ideal_time(network_params(network), config.size_bytes)),
        "utilization": utilization,
    }


def summarize(config: ThemisAllReduceConfig, results: dict[str, dict]) -> Summary:
    training = results.pop(TRAIN_ITEM, None)
    columns = next(iter(results.values()))["columns"]
    speedup = {name: r["utilization"][THEMIS] / r["utilization"][BASELINE] for name, r in results.items()}
    mean = {c: float(np.mean([r["utilization"][c] for r in results.values()])) for c in columns}
    document = {
        "size_bytes": config.size_bytes,
        "chunks": config.chunks,
        "columns": columns,
        "networks": results,
        "mean_utilization": mean,
        "themis_speedup": {
            "per_network": speedup,
            "mean": float(np.mean(list(speedup.values()))),
            "max": max(speedup.values()),
            "min": min(speedup.values()),
        },
        "paper": PAPER,
        "training": training,
    }
    rows = [
        [name, *(f"{r['utilization'][c]:.1%}" for c in columns), f"{speedup[name]:.2f}x"] for name, r in results.items()
    ]
    rows.append(["mean", *(f"{mean[c]:.1%}" for c in columns), f"{document['themis_speedup']['mean']:.2f}x"])
    headline = (
        f"Themis + SCF over baseline + FIFO: {document['themis_speedup']['mean']:.2f}x mean, "
        f"{document['themis_speedup']['max']:.2f}x max over {len(results)} networks "
        f"(the Themis paper: {PAPER['mean_speedup']}x mean, {PAPER['max_speedup']}x max). "
        f"Utilization = T_ideal / T, T_ideal = 2·S·(P−1)/P / Σ_d B_d; "
        f"All-Reduce of {config.size_bytes:,.0f} bytes in {config.chunks} chunks."
    )

    figure = grouped_bars(
        "utilization.png",
        list(results),
        {c: [r["utilization"][c] for r in results.values()] for c in columns},
        ylabel="utilization T_ideal / T",
        hline=1.0,
        title=f"All-Reduce utilization per policy ({config.size_bytes / 2**30:g} GiB, {config.chunks} chunks)",
    )
    return Summary(
        results=document,
        headers=["network", *columns, "themis_speedup"],
        rows=rows,
        figures=[figure],
        markdown=headline,
        title="Themis All-Reduce: bandwidth utilization over the topology suite",
    )


register_experiment_kind(ThemisAllReduceConfig, items=items, run_item=run_item, summarize=summarize)
