"""The what-if sweep's figure: the cost of each point's plan against its throughput floor, one
curve per price scale (a Pareto front per scale: cost never falls as the floor rises), with the
proven optimum marked where the exact solver certified a point."""

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
