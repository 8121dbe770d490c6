"""The what-if sweep's figures: the cost of each point's plan against its throughput floor, one
curve per price scale (a Pareto front per scale: cost never falls as the floor rises), with the
proven optimum marked where the exact solver certified a point; and the most throughput against
the budget."""

from __future__ import annotations

from hps.io.figures import plt, save_figure


def save_sweep(path, title: str, points: list[dict]) -> None:
    """points: the `hps sweep --json` points (floor, price_scale, cost, feasible and, where
    certified, proven_optimum)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    scales = sorted({p["price_scale"] for p in points})
    for scale in scales:
        mine = sorted((p for p in points if p["price_scale"] == scale and p["feasible"]), key=lambda p: p["floor"])
        ax.plot([p["floor"] for p in mine], [p["cost"] for p in mine], "o-", ms=3, label=f"price x{scale:g}")
    proven = [p for p in points if p.get("proven_optimum") is not None]
    if proven:
        ax.plot(
            [p["floor"] for p in proven],
            [p["proven_optimum"] for p in proven],
            "k+",
            ms=9,
            label="proven optimum (exact solver)",
        )
    for p in points:
        if not p["feasible"]:
            ax.plot([p["floor"]], [ax.get_ylim()[1]], "rx", ms=5)
    ax.set_xlabel("throughput floor (samples/s)")
    ax.set_ylabel("total cost ($)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def save_budget_sweep(path, title: str, points: list[dict]) -> None:
    """points: the `hps sweep --maximize throughput --json` points (budget_per_hour, price_scale,
    throughput, feasible, bound): the most throughput against the budget, one curve per price
    scale (it never falls as the budget rises), the proven upper bound dashed where it is above."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for scale in sorted({p["price_scale"] for p in points}):
        mine = sorted((p for p in points if p["price_scale"] == scale), key=lambda p: p["budget_per_hour"])
        found = [p for p in mine if p["feasible"]]
        line = ax.plot([p["budget_per_hour"] for p in found], [p["throughput"] for p in found], "o-", ms=3,
                       label=f"price x{scale:g}")[0]  # fmt: skip
        gapped = [p for p in mine if p["bound"] is not None and p["gap"] not in (0.0, None)]
        if gapped:
            ax.plot([p["budget_per_hour"] for p in gapped], [p["bound"] for p in gapped], "--", color=line.get_color(),
                    lw=1, label=f"price x{scale:g}: proven upper bound")  # fmt: skip
    ax.set_xlabel("budget ($ per hour)")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
