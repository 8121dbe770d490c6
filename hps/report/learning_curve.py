"""Learning curves of a training run (metrics.jsonl records) as a PNG."""

from __future__ import annotations

from hps.report.figures import plt, save_figure


def save_learning_curve(records: list[dict], path, title: str = "") -> None:
    """Two panels over updates: mean episode reward (training samples, and greedy evaluation on
    the held-out pool where measured), and the mean cost / reference cost of feasible plans
    with the feasible fraction."""
    steps = [r["step"] for r in records]
    evaluated = [r for r in records if "eval_reward" in r]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(steps, [r["reward"] for r in records], label="training (sampled)")
    if evaluated:
        top.plot([r["step"] for r in evaluated], [r["eval_reward"] for r in evaluated], "o-", label="held-out (greedy)")
    top.set_ylabel("mean episode reward")
    top.legend(loc="lower right")
    bottom.plot(steps, [r["cost_ratio"] for r in records], label="cost / reference (training)")
    if evaluated:
        bottom.plot([r["step"] for r in evaluated], [r["eval_cost_ratio"] for r in evaluated], "o-",
                    label="cost / reference (held-out)")  # fmt: skip
    bottom.plot(steps, [r["feasible"] for r in records], "--", label="feasible fraction (training)")
    bottom.set_xlabel("updates")
    bottom.legend(loc="upper right")
    fig.suptitle(title or "training", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path)
