"""Per-dimension Gantt charts of a simulated collective: one lane per dimension, one bar per
phase, coloured by chunk, so the idle gaps a policy leaves are visible."""

from __future__ import annotations

import numpy as np

from hps.config.types import Network
from hps.io.figures import plt, save_figure


def _lanes(ax, result, network: Network, title: str, time_scale: float) -> None:
    dims = network.dimensions
    dim = np.asarray(result.phase_dim)
    start = np.asarray(result.phase_start) * time_scale
    end = np.asarray(result.phase_end) * time_scale
    n_chunks = dim.shape[0]
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, max(n_chunks, 2)))
    for chunk in range(n_chunks):
        for slot in range(dim.shape[1]):
            d = dim[chunk, slot]
            if d < 0:
                continue
            ax.broken_barh(
                [(start[chunk, slot], end[chunk, slot] - start[chunk, slot])],
                (d - 0.4, 0.8),
                facecolors=colours[chunk],
                edgecolor="none",
            )
    ax.set_yticks(range(len(dims)))
    ax.set_yticklabels([f"dim {d + 1}: {x.size} x {x.bandwidth / 2**30:g} GiB/s" for d, x in enumerate(dims)])
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)


def save_gantt(path: str, network: Network, panels: list[tuple[str, object]], total_bytes: float) -> None:
    """Write a PNG with one panel per (title, SimResult), stacked, on a shared time axis (µs)."""
    scale = 1e6
    horizon = max(float(np.max(np.asarray(r.phase_end))) for _, r in panels) * scale
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(11, 1.2 + 1.1 * len(network.dimensions) * len(panels)), sharex=True, squeeze=False
    )
    for ax, (title, result) in zip(axes[:, 0], panels):
        _lanes(ax, result, network, title, scale)
        ax.set_xlim(0, horizon * 1.01)
    axes[-1, 0].set_xlabel("time (µs)   —   bar colour: chunk id (dark = first)")
    fig.suptitle(f"{network.name}: All-Reduce of {total_bytes / 2**20:g} MiB", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)
