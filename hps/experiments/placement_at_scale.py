"""Placement at scale: a trained placement policy, zero-shot on generated instances of hundreds
of layers and many types, against the exact solver's proven optimum and the best single-type
plan (`hps.placement.agent.at_scale`). One item per split; a table of mean / p95 / worst cost
over the optimum and the feasible fraction per planner, with the solver's and the policy's time.
"""

from __future__ import annotations

from dataclasses import dataclass

from hps.experiments.base import ExperimentConfig, Summary, register_experiment_kind
from hps.experiments.figures import grouped_bars
from hps.experiments.files import json_ready
from hps.experiments.placement import DEFAULT_POLICY_DIR, TRAIN_ITEM, ensure_policy

LABELS = {"policy": "policy: best of samples + greedy", "policy_greedy": "policy: greedy", "single": "best single type"}


@dataclass(frozen=True, kw_only=True)
class PlacementAtScaleConfig(ExperimentConfig):
    """splits: (min_layers, max_layers, min_types, max_types) each, with `count` instances per
    split; the exact solver gets `seconds` per instance."""

    name: str = "placement_at_scale"
    checkpoint: str = DEFAULT_POLICY_DIR
    splits: tuple[tuple[int, int, int, int], ...] = ((256, 256, 8, 16), (1024, 1024, 8, 16))
    count: int = 10
    samples: int = 64
    seconds: float = 60.0
    train_minutes: float = 0.0
    """When > 0 and `checkpoint` holds no policy, train the default recipe there first."""

    AT_LEAST = {"train_minutes": 0.0}


def _split(bounds, index: int):
    from hps.placement.env import InstanceSplit

    low, high, types_low, types_high = bounds
    return InstanceSplit(
        f"scale-{low}-{high}x{types_low}-{types_high}", low, high, types_low, types_high, salt=500 + index
    )


def items(config: PlacementAtScaleConfig):
    splits = [(_split(bounds, i).name, i) for i, bounds in enumerate(config.splits)]
    return ([(TRAIN_ITEM, None)] if config.train_minutes > 0 else []) + splits


def run_item(config: PlacementAtScaleConfig, params) -> dict:
    if params is None:
        return ensure_policy(config.checkpoint, config.train_minutes, config.seed)
    from hps.placement.agent.at_scale import compare_at_scale
    from hps.placement.agent.checkpoint import load_policy

    policy, weights, spec = load_policy(config.checkpoint)
    split = _split(config.splits[params], params)
    found = compare_at_scale(policy, weights, split, count=config.count, samples=config.samples, seconds=config.seconds)
    return json_ready({"split": split.name, "checkpoint_step": spec["step"], **found})


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


def summarize(config: PlacementAtScaleConfig, results: dict[str, dict]) -> Summary:
    results.pop(TRAIN_ITEM, None)
    headers = ["split", "planner", "mean", "p95", "worst", "feasible"]
    rows, lines, series = [], [], {}
    for r in results.values():
        s = r["summary"]
        for planner, label in LABELS.items():
            figures = s[planner]
            rows.append([r["split"], label, *(_fmt(figures[k]) for k in ("mean", "p95", "worst", "feasible"))])
            series.setdefault(label, []).append(figures["mean"] if figures["mean"] == figures["mean"] else 0.0)
        lines.append(
            f"- {r['split']}: {s['instances']} instances, {s['with_feasible_plan']} with a feasible plan, "
            f"{s['proven_optimal']} proven optimal within {config.seconds:g} s (mean gap of the others "
            f"{s['open_mean_gap']:.3g}); exact solver {s['exact_seconds']:.2f} s per instance, the policy "
            f"{s['policy_seconds'] * 1e3:.0f} ms (checkpoint step {r['checkpoint_step']})."
        )
    text = (
        "Cost / the exact solver's proven optimum over the instances it closed; feasible: the fraction of "
        f"instances with a feasible plan where the planner found one. {config.samples} sampled plans + greedy.\n\n"
        + "\n".join(lines)
    )
    groups = [r["split"] for r in results.values()]
    figure = grouped_bars("at_scale.png", groups, series, ylabel="mean cost / optimum", hline=1.0, title=config.name)
    return Summary(
        results=dict(results), headers=headers, rows=rows, figures=[figure], markdown=text, title="Placement at scale"
    )


register_experiment_kind(PlacementAtScaleConfig, items=items, run_item=run_item, summarize=summarize)
