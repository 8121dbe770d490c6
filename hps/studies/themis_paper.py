"""The Themis paper's All-Reduce figures on its own networks (ISCA'22, Table 2; Fig. 11): mean
bandwidth utilization T_ideal / T of every collective policy on the six 1,024-NPU networks of
topologies/networks/themis-*.toml at 100 MB, 250 MB, 500 MB and 1 GB in 64 chunks, at the
artifact's 1 ns per link, beside the paper's means; and a latency sweep (every step at 1 ns to
10 µs) with one phase at a time per dimension and with `in_flight` phases. Sizes are in MiB
(2^20 bytes), as ASTRA-sim 1.0 reads the artifact's "MB" (docs/themis-paper.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hps.config.limits import MAX_IN_FLIGHT
from hps.config.loaders import load_network
from hps.config.types import Network
from hps.studies import collectives as studies
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import bars_beside_reference, save_semilogx_lines
from hps.studies.themis_allreduce import TRAIN_ITEM, network_paths, train_policy

TABLE_2 = (
    "themis-2d-sw-sw-16x64",
    "themis-3d-sw-sw-sw-homo-16x8x8",
    "themis-3d-sw-sw-sw-hetero-16x8x8",
    "themis-3d-fc-ring-sw-8x16x8",
    "themis-4d-ring-sw-sw-sw-4x4x8x8",
    "themis-4d-ring-fc-ring-sw-4x8x4x8",
)
PAPER_MEAN = {"baseline+fifo": 0.5631, "themis+fifo": 0.8767, "themis+scf": 0.9514}
"""The paper's mean utilization over these networks and 100 MB–1 GB (ISCA'22 version)."""
PAPER_SPEEDUP = {"mean": 1.72, "max": 2.70}
"""The paper's All-Reduce speed-up of Themis over the baseline, mean and max."""
ACCEPT_POINTS = 3.0
COLUMNS = ("baseline+fifo", "themis+fifo", "themis+scf", "roundrobin+scf", "best-fixed+scf")
SWEEP_COLUMNS = COLUMNS[:4]
LEARNED = "learned+scf"
MIB = 2**20
ARTIFACT = "artifact"


@dataclass(frozen=True, kw_only=True)
class ThemisPaperConfig(ExperimentConfig):
    """networks: shipped names or TOML files (default: the paper's six). sizes_mib: All-Reduce
    sizes in MiB. latencies_ns: the sweep's latency per step, set on every dimension; in_flight:
    the phases per dimension of the sweep's second setting (the first is 1). checkpoint: a
    trained collective policy's run folder, which adds a "learned+scf" column at the files'
    latency (none by default); with train_minutes > 0 the default collective policy (trained on
    random networks, as `hps train --kind collective`) is trained there first when the folder
    holds none."""

    name: str = "themis_paper"
    networks: tuple[str, ...] = TABLE_2
    sizes_mib: tuple[float, ...] = (100.0, 250.0, 500.0, 1024.0)
    chunks: int = 64
    latencies_ns: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0, 10000.0)
    in_flight: int = 4
    checkpoint: str | None = None
    train_minutes: float = 0.0

    AT_LEAST = {"latencies_ns": 0, "train_minutes": 0.0}

    def check(self) -> None:
        if self.chunks > 256:
            raise ValueError(f"chunks: must be an integer in 1..256, got {self.chunks!r}")
        if not 1 <= self.in_flight <= MAX_IN_FLIGHT:
            raise ValueError(f"in_flight: must be an integer in 1..{MAX_IN_FLIGHT}, got {self.in_flight!r}")
        if any(latency > 1e9 for latency in self.latencies_ns):
            raise ValueError(f"latencies_ns: must be at most 1e9 ns, got {self.latencies_ns!r}")


def sweep_key(latency_ns: float, in_flight: int) -> str:
    return f"latency-{latency_ns:g}ns-k{in_flight}"


def items(config: ThemisPaperConfig):
    paths = [str(path) for path in network_paths(config.networks)]
    training = [(TRAIN_ITEM, None)] if config.checkpoint and config.train_minutes > 0 else []
    if config.checkpoint and not training:
        from hps.rl.checkpoint import checkpoint_folder

        checkpoint_folder(config.checkpoint)  # a missing folder fails before any work
    lanes = dict.fromkeys((1, config.in_flight))
    sweep = [(sweep_key(lat, k), (paths, lat, k)) for lat in config.latencies_ns for k in lanes]
    return [*training, (ARTIFACT, (paths, None, 1)), *sweep]


def with_latency(network: Network, latency_ns: float, in_flight: int) -> Network:
    """`network` with every dimension at latency_ns per step and in_flight phases at once."""
    dims = tuple(dataclasses.replace(d, latency=latency_ns * 1e-9, in_flight=in_flight) for d in network.dimensions)
    return Network(network.name, dims)


def run_item(config: ThemisPaperConfig, params) -> dict:
    if params is None:
        return train_policy(config)
    paths, latency_ns, in_flight = params
    networks = [load_network(path) for path in paths]
    if latency_ns is not None:
        networks = [with_latency(network, latency_ns, in_flight) for network in networks]
    sizes = [mib * MIB for mib in config.sizes_mib]
    columns = list(COLUMNS if latency_ns is None else SWEEP_COLUMNS)
    grid = {
        column: values.tolist()
        for column, values in studies.utilization_grid(networks, sizes, config.chunks, columns).items()
    }
    if latency_ns is None and config.checkpoint:
        grid[LEARNED] = learned_grid(config, networks, sizes)
        columns.append(LEARNED)
    return {
        "networks": [network.name for network in networks],
        "sizes_bytes": sizes,
        "latency_ns": latency_ns,
        "in_flight": in_flight,
        "columns": columns,
        "utilization": grid,
    }


def learned_grid(config: ThemisPaperConfig, networks: list[Network], sizes: list[float]) -> list[list[float]]:
    """(networks, sizes) utilization of the checkpoint's orders under SCF."""
    from hps.collective.agent.checkpoint import checkpoint_orders

    rows = []
    for network in networks:
        row = []
        for size in sizes:
            orders = checkpoint_orders(config.checkpoint, network, size, config.chunks)
            payload, _ = studies.single_allreduce(network, size, config.chunks, "learned", True, orders=orders)
            row.append(payload["utilization"])
        rows.append(row)
    return rows


def size_label(size_bytes: float) -> str:
    mib = size_bytes / MIB
    return f"{mib / 1024:g} GB" if mib >= 1024 else f"{mib:g} MB"


def means(result: dict) -> dict:
    """{"per_size": {column: [mean over networks per size]}, "per_network": {column: [mean over
    sizes per network]}, "overall": {column: mean of all}}."""
    grids = {c: np.asarray(result["utilization"][c]) for c in result["columns"]}
    return {
        "per_size": {c: g.mean(axis=0).tolist() for c, g in grids.items()},
        "per_network": {c: g.mean(axis=1).tolist() for c, g in grids.items()},
        "overall": {c: float(g.mean()) for c, g in grids.items()},
    }


def learned_table(artifact: dict) -> str:
    """Markdown: the learned policy's utilization beside Themis + SCF per network and size, and
    its difference in points (negative: a loss)."""
    sizes = [size_label(s) for s in artifact["sizes_bytes"]]
    learned, themis = (np.asarray(artifact["utilization"][c]) for c in (LEARNED, "themis+scf"))
    head = "| network | " + " | ".join(f"{s} learned / themis+scf (points)" for s in sizes) + " |"
    body = [
        f"| {name} | "
        + " | ".join(
            f"{learned[i, j]:.1%} / {themis[i, j]:.1%} ({100 * (learned[i, j] - themis[i, j]):+.1f})"
            for j in range(len(sizes))
        )
        + " |"
        for i, name in enumerate(artifact["networks"])
    ]
    mean = f"Learned (zero-shot, trained on random networks) {learned.mean():.2%}, Themis + SCF {themis.mean():.2%}."
    return "\n".join([mean, "", head, "|---|" + "---|" * len(sizes), *body])


def summarize(config: ThemisPaperConfig, results: dict[str, dict]) -> Summary:
    training = results.pop(TRAIN_ITEM, None)
    artifact = results[ARTIFACT]
    columns, stats = artifact["columns"], means(artifact)
    sizes = [size_label(s) for s in artifact["sizes_bytes"]]
    gaps = {c: 100 * (stats["overall"][c] - PAPER_MEAN[c]) for c in PAPER_MEAN if c in columns}
    accepted = all(abs(gap) <= ACCEPT_POINTS for gap in gaps.values())
    speedup = np.asarray(artifact["utilization"]["themis+scf"]) / np.asarray(artifact["utilization"]["baseline+fifo"])
    sweep = {
        key: {"latency_ns": r["latency_ns"], "in_flight": r["in_flight"], **means(r)}
        for key, r in results.items()
        if key != ARTIFACT
    }
    document = {
        "networks": artifact["networks"],
        "sizes_bytes": artifact["sizes_bytes"],
        "chunks": config.chunks,
        "columns": columns,
        "utilization": artifact["utilization"],
        "mean": stats,
        "paper_mean": PAPER_MEAN,
        "difference_points": gaps,
        "within_3_points": accepted,
        "themis_speedup": {"mean": float(speedup.mean()), "max": float(speedup.max()), "paper": PAPER_SPEEDUP},
        "sweep": sweep,
        "training": training,
    }
    rows = [
        [
            c,
            *(f"{v:.1%}" for v in stats["per_size"][c]),
            f"{stats['overall'][c]:.2%}",
            f"{PAPER_MEAN[c]:.2%}" if c in PAPER_MEAN else "",
            f"{gaps[c]:+.2f}" if c in gaps else "",
        ]
        for c in columns
    ]
    figures = [
        bars_beside_reference(
            "fig11-utilization-per-size.png",
            [*sizes, "mean"],
            {c: [*stats["per_size"][c], stats["overall"][c]] for c in columns},
            PAPER_MEAN,
            ylabel="mean utilization T_ideal / T",
            title=f"Mean All-Reduce utilization, {len(artifact['networks'])} networks, {config.chunks} chunks",
        ),
        bars_beside_reference(
            "utilization-per-network.png",
            [*artifact["networks"], "mean"],
            {c: [*stats["per_network"][c], stats["overall"][c]] for c in columns},
            PAPER_MEAN,
            ylabel="utilization T_ideal / T (mean over sizes)",
            title="All-Reduce utilization per network, mean over " + ", ".join(sizes),
        ),
    ]
    if sweep:
        figures.append(
            (
                "latency-sweep.png",
                lambda path: save_semilogx_lines(
                    path,
                    sweep_lines(sweep),
                    xlabel="latency per step (ns)",
                    ylabel="mean utilization",
                    title=f"Mean utilization vs latency per step (1 and {config.in_flight} phases in flight)",
                ),
            )
        )
    headline = (
        f"Mean utilization over {len(artifact['networks'])} networks × {len(sizes)} sizes, {config.chunks} chunks: "
        + ", ".join(f"{c} {stats['overall'][c]:.2%} (paper {PAPER_MEAN[c]:.2%}, {gaps[c]:+.2f} points)" for c in gaps)
        + f". Within {ACCEPT_POINTS:g} points of the paper: {'yes' if accepted else 'no'}. "
        + f"Themis + SCF over baseline + FIFO: {speedup.mean():.2f}x mean, {speedup.max():.2f}x max "
        + f"(paper {PAPER_SPEEDUP['mean']}x, {PAPER_SPEEDUP['max']}x)."
    )
    return Summary(
        results=document,
        headers=["policy", *sizes, "mean", "paper", "points"],
        rows=rows,
        figures=figures,
        markdown=headline
        + "\n\n"
        + network_table(artifact, stats)
        + "\n\n"
        + (learned_table(artifact) + "\n\n" if LEARNED in columns else "")
        + sweep_table(sweep, columns=SWEEP_COLUMNS),
        title="The Themis paper's All-Reduce utilization on its Table 2 networks",
    )


def sweep_lines(sweep: dict) -> dict:
    """{label: (latencies, mean utilizations, style)} per column and in_flight setting."""
    lines = {}
    for k in sorted({s["in_flight"] for s in sweep.values()}):
        runs = sorted((s for s in sweep.values() if s["in_flight"] == k), key=lambda s: s["latency_ns"])
        for i, c in enumerate(SWEEP_COLUMNS):
            style = f"C{i}" + ("o-" if k == 1 else "s--")  # one colour per policy, one style per setting
            lines[f"{c}, in_flight {k}"] = ([s["latency_ns"] for s in runs], [s["overall"][c] for s in runs], style)
    return lines


def network_table(artifact: dict, stats: dict) -> str:
    columns = artifact["columns"]
    head = "| network | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns)
    body = [
        f"| {name} | " + " | ".join(f"{stats['per_network'][c][i]:.1%}" for c in columns) + " |"
        for i, name in enumerate(artifact["networks"])
    ]
    return "\n".join([head, *body])


def sweep_table(sweep: dict, columns) -> str:
    if not sweep:
        return ""
    head = "| latency per step | in_flight | " + " | ".join(columns) + " |\n|---|---|" + "---|" * len(columns)
    body = [
        f"| {s['latency_ns']:g} ns | {s['in_flight']} | " + " | ".join(f"{s['overall'][c]:.1%}" for c in columns) + " |"
        for s in sorted(sweep.values(), key=lambda s: (s["in_flight"], s["latency_ns"]))
    ]
    return "\n".join([head, *body])


register_experiment_kind(ThemisPaperConfig, items=items, run_item=run_item, summarize=summarize)
