"""The experiments' figures: grouped bars (a value per group per series) and log-log lines."""

from __future__ import annotations

import numpy as np

from hps.io.figures import plt, save_figure
from hps.studies.base import Figure


def _finish_bars(path, fig, ax, labels: list[str], ylabel: str, title: str, series: int) -> None:
    """Label a bar chart's groups, axis, title and legend, and save it."""
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=min(series, 4))
    fig.tight_layout()
    save_figure(fig, path)


def save_grouped_bars(
    path, groups: list[str], series: dict[str, list[float]], *, ylabel: str, title: str, hline: float | None = None
) -> None:
    """One cluster of bars per group (x axis), one bar per series in each; `hline` draws a
    dashed reference line (e.g. 1.0 for speed-ups)."""
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(max(8.0, 1.1 * len(groups) + 3), 4.8))
    for i, (label, values) in enumerate(series.items()):
        ax.bar(x + (i - (n - 1) / 2) * width, values, width, label=label)
    if hline is not None:
        ax.axhline(hline, color="black", linestyle="--", linewidth=0.8)
    ax.set_ylim(0, 1.2 * max([hline or 0.0, *(max(v, default=0.0) for v in series.values())]) or None)
    _finish_bars(path, fig, ax, groups, ylabel, title, n)


def grouped_bars(filename: str, groups: list[str], series: dict[str, list[float]], **options) -> Figure:
    """A `Summary.figures` entry: `save_grouped_bars` of `groups` and `series` (options: ylabel,
    title, hline) into `filename`."""
    return filename, lambda path: save_grouped_bars(path, groups, series, **options)


def save_loglog_panels(path, panels: list[tuple[str, str, str, dict[str, tuple[list, list]]]], *, title: str) -> None:
    """One log-log panel per (panel title, x label, y label, {line label: (xs, ys)}), side by side."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.2), squeeze=False)
    for ax, (panel_title, xlabel, ylabel, lines) in zip(axes[0], panels):
        for label, (xs, ys) in lines.items():
            ax.plot(xs, ys, "o-", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        values = [y for _, ys in lines.values() for y in ys]
        if values:  # at least a decade tall, so noise on a flat line does not look like a trend
            ax.set_ylim(min(min(values), max(values) / 10) / 1.3, max(values) * 1.3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title, fontsize=10)
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)


def save_bars_beside_reference(
    path, groups: list[str], series: dict[str, list[float]], reference: dict[str, float], *, ylabel: str, title: str
) -> None:
    """`save_grouped_bars` with one more group, "paper", holding a hatched bar per series that
    has a `reference` value (in that series' colour), and the reference drawn as a dotted line
    across the chart in the same colour."""
    labels = [*groups, "paper"]
    n = max(len(series), 1)
    width = 0.8 / n
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(8.0, 1.1 * len(labels) + 3), 4.8))
    for i, (label, values) in enumerate(series.items()):
        offset = (i - (n - 1) / 2) * width
        bars = ax.bar(x[:-1] + offset, values, width, label=label)
        if label in reference:
            color = bars.patches[0].get_facecolor()
            ax.bar(x[-1] + offset, reference[label], width, color=color, hatch="//", edgecolor="black")
            ax.axhline(reference[label], color=color, linestyle=":", linewidth=1.0)
    ax.set_ylim(0, 1.15 * max([*reference.values(), *(max(v, default=0.0) for v in series.values())]) or None)
    _finish_bars(path, fig, ax, labels, ylabel, title, n)


def bars_beside_reference(filename: str, groups, series, reference, **options) -> Figure:
    """A `Summary.figures` entry: `save_bars_beside_reference` into `filename`."""
    return filename, lambda path: save_bars_beside_reference(path, groups, series, reference, **options)


def save_semilogx_lines(
    path, lines: dict[str, tuple[list, list, str]], *, xlabel: str, ylabel: str, title: str
) -> None:
    """One line per {label: (xs, ys, matplotlib line style)} on a log x axis."""
    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    for label, (xs, ys, style) in lines.items():
        ax.plot(xs, ys, style, label=label)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, path)
