"""Learning curves of a training run (metrics.jsonl records) as a PNG."""

from __future__ import annotations

from hps.io.figures import plt, save_figure

QUALITY = {  # metric -> label, for the lower panel (those a run records)
    "cost_ratio": "cost / reference (training)",
    "feasible": "feasible fraction (training)",
    "utilization": "utilization (training)",
    "eval_cost_ratio": "cost / reference (held-out, greedy)",
    "eval_feasible": "feasible fraction (held-out, greedy)",
    "eval_utilization": "utilization (held-out, greedy)",
    "eval_themis_utilization": "Themis utilization (held-out)",
}


def save_learning_curve(records: list[dict], path, title: str = "") -> None:
    """Two panels over updates: the mean episode reward of training samples, and every quality
    metric the records carry (training means per chunk; held-out figures where evaluated)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot([r["step"] for r in records], [r["reward"] for r in records], label="training (sampled)")
    top.set_ylabel("mean episode reward")
    top.legend(loc="lower right")
    for name, label in QUALITY.items():
        rows = [r for r in records if name in r]
        if rows:
            style = "o-" if name.startswith("eval_") else "-"
            bottom.plot([r["step"] for r in rows], [r[name] for r in rows], style, label=label)
    bottom.set_yscale("log")  # cost ratios start far above 1; fractions and ratios near 1 stay readable
    bottom.set_xlabel("updates")
    bottom.legend(loc="best", fontsize=8)
    fig.suptitle(title or "training", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)
