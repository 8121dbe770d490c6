"""The LLM-plans figure: total cost against the throughput floor (the Pareto front of the exact
solver's plans, with its proven bound where the time limit left a gap), and under it each
floor's plan as a strip of its stages coloured by type."""

from __future__ import annotations

from hps.experiments.base import Figure
from hps.report.figures import plt, save_figure


def pareto_figure(filename: str, workload: str, points: list[dict]) -> Figure:
    """A `Summary.figures` entry for one workload's results (as `llm_plans.run_item` returns)."""
    return filename, lambda path: save_pareto(path, workload, sorted(points, key=lambda p: p["floor"]))


def save_pareto(path, workload: str, points: list[dict]) -> None:
    feasible = [p for p in points if p["methods"]["exact"]["cost"] is not None]
    fig, (top, strip) = plt.subplots(2, 1, figsize=(8, 6), gridspec_kw={"height_ratios": [3, 2]})
    floors = [p["floor"] for p in feasible]
    top.plot(floors, [p["methods"]["exact"]["cost"] for p in feasible], "o-", label="best plan (exact solver)")
    bounds = [p["methods"]["exact"]["bound"] for p in feasible]
    if any(b is not None and b < p["methods"]["exact"]["cost"] for b, p in zip(bounds, feasible)):
        top.plot(floors, bounds, "v--", color="grey", label="proven lower bound (gap left by the time limit)")
    top.set_xlabel("throughput floor (samples/s)")
    top.set_ylabel("total cost ($), the objective")
    top.set_title(f"{workload}: cost of the best plan against the floor", fontsize=10)
    top.legend(fontsize=8)
    types = sorted({s["type"] for p in points for s in p["stages"]})
    colours = {t: plt.cm.tab20(i % 20) for i, t in enumerate(types)}
    for row, p in enumerate(points):
        for s in p["stages"]:
            span = s["last_layer"] - s["first_layer"] + 1
            strip.barh(row, span, left=s["first_layer"], color=colours[s["type"]], edgecolor="white")
    strip.set_yticks(range(len(points)))
    strip.set_yticklabels([f"{p['floor']:,.0f}/s" for p in points], fontsize=8)
    strip.set_xlabel("layer")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[t]) for t in types]
    strip.legend(handles, types, fontsize=7, ncol=min(len(types), 6), loc="upper center", bbox_to_anchor=(0.5, -0.3))
    fig.tight_layout()
    save_figure(fig, path)
