"""The LLM-plans figures, per workload: total cost against the throughput floor (the Pareto front
of the exact solver's plans, with its proven bound where the time limit left a gap, and the best
single-type plan), and each floor's plan as a strip of its stages over the layers, coloured by
type and labelled with type, t and d."""

from __future__ import annotations

from hps.io.figures import plt, save_figure
from hps.studies.base import Figure


def pareto_figure(filename: str, workload: str, points: list[dict]) -> Figure:
    """A `Summary.figures` entry: cost against floor for one workload's results (as
    `llm_plans.run_item` returns them)."""
    return filename, lambda path: save_pareto(path, workload, sorted(points, key=lambda p: p["floor"]))


def best_single(point: dict) -> tuple[str, dict] | None:
    """(type, record) of the cheapest single-type plan found, or None."""
    rows = [(name, r) for name, r in point["single"].items() if r["cost"] is not None]
    return min(rows, key=lambda item: item[1]["cost"]) if rows else None


def stages_figure(filename: str, workload: str, points: list[dict]) -> Figure:
    """A `Summary.figures` entry: the stages of each floor's plan."""
    return filename, lambda path: save_stages(path, workload, sorted(points, key=lambda p: p["floor"]))


def save_pareto(path, workload: str, points: list[dict]) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    found = [p for p in points if p["plan"]["cost"] is not None]
    ax.plot(
        [p["floor"] for p in found], [p["plan"]["cost"] for p in found], "o-", label="best plan found (exact solver)"
    )
    bounded = [p for p in points if p["plan"]["bound"] is not None]
    if any(p["plan"]["gap"] != 0 for p in bounded):
        ax.plot(
            [p["floor"] for p in bounded],
            [p["plan"]["bound"] for p in bounded],
            "v--",
            color="grey",
            label="proven lower bound (where the time limit left a gap)",
        )
    singles = [(p["floor"], best_single(p)) for p in points]
    singles = [(f, s) for f, s in singles if s is not None]
    if singles:
        ax.plot(
            [f for f, _ in singles],
            [s[1]["cost"] for _, s in singles],
            "s:",
            mfc="none",
            ms=9,
            label="best single-type plan",
        )
        for f, s in singles:
            ax.annotate(s[0], (f, s[1]["cost"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    for p in points:
        if p["plan"]["cost"] is None:
            ax.axvline(p["floor"], color="red", alpha=0.3, linestyle=":")
            ax.annotate("no plan found", (p["floor"], 0.5), xycoords=("data", "axes fraction"), fontsize=7, rotation=90)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("throughput floor (samples/s)")
    ax.set_ylabel("total cost ($)")
    ax.set_title(f"{workload}: cost of the best plan against the floor", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def save_stages(path, workload: str, points: list[dict]) -> None:
    layers = max(p["layers"] for p in points)
    types = sorted({s["type"] for p in points for s in p["plan"]["stages"]})
    colours = {t: plt.cm.tab20(i % 20) for i, t in enumerate(types)}
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.8 * len(points)))
    for row, p in enumerate(points):
        stages = p["plan"]["stages"]
        if not stages:
            ax.text(layers / 2, row, "no plan found in the time limit", ha="center", va="center", fontsize=8)
        for s in stages:
            span = s["last"] - s["first"] + 1
            ax.barh(row, span, left=s["first"], height=0.7, color=colours[s["type"]], edgecolor="white")
            wide = span >= layers / 12
            label = f"{s['type']}\n{s['tp']}×{s['dp']}" if wide else f"{s['tp']}×{s['dp']}"
            rotation = 0 if span >= layers / 30 else 90
            ax.text(s["first"] + span / 2, row, label, ha="center", va="center", fontsize=5.5, rotation=rotation)
    ax.set_yticks(range(len(points)))
    ax.set_yticklabels([_row_label(p) for p in points], fontsize=8)
    ax.set_ylim(-0.6, len(points) - 0.4)
    ax.set_xlim(0, layers)
    ax.set_xlabel("layer (each stage labelled t×d: tensor × data parallel)")
    ax.set_title(f"{workload}: stages of the best plan at each floor", fontsize=10)
    if types:
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[t]) for t in types]
        ax.legend(handles, types, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    save_figure(fig, path)


def _row_label(point: dict) -> str:
    plan = point["plan"]
    b = f", b={plan['micro_batch']}" if plan.get("micro_batch") else ""
    return f"{point['floor']:,.0f}/s{b}"
