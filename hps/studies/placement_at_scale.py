"""Placement at scale: a trained placement policy, zero-shot on generated instances of hundreds
of layers and many types, against the exact solver's proven optimum and the best single-type
plan (`hps.studies.at_scale`). One item per split; a table of mean / p95 / worst cost
over the optimum and the feasible fraction per planner, with the solver's and the policy's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.studies.files import json_ready
from hps.studies.placement import DEFAULT_POLICY_DIR, TRAIN_ITEM, ensure_policy

TRAIN_SPLITS = {"train": "TRAIN", "hard-train": "HARD_TRAIN"}
"""train_split -> the InstanceSplit of hps.placement.env.generator it names."""

LABELS = {
    "policy": "policy: best of samples + greedy",
    "policy_greedy": "policy: greedy",
    "policy_refined": "policy, refined by stage moves",
    "single": "best single type",
    "greedy": "greedy search",
    "random": "random search",
    "genetic": "genetic algorithm",
    "gradient": "gradient search",
    "climb": "hill climb from the best single type",
}


@dataclass(frozen=True, kw_only=True)
class PlacementAtScaleConfig(ExperimentConfig):
    """splits: (min_layers, max_layers, min_types, max_types) each, with `count` instances per
    split; hard: draw them with HARD_KNOBS (tight pooled caps, smaller memories, floors near
    the single types' reach); the exact solver gets `seconds` per instance; budget: the
    searches' evaluations (None: their defaults). The searches run where the segment table
    fits (about a hundred layers)."""

    name: str = "placement_at_scale"
    checkpoint: str = DEFAULT_POLICY_DIR
    splits: tuple[tuple[int, int, int, int], ...] = ((256, 256, 8, 16), (1024, 1024, 8, 16))
    count: int = 10
    samples: int = 64
    seconds: float = 60.0
    hard: bool = False
    budget: int | None = None
    train_minutes: float = 0.0
    """When > 0 and `checkpoint` holds no policy, train the default recipe there first."""
    train_split: str = "train"
    """The split that training plays: "train" (the recipe's) or "hard-train" (HARD_TRAIN)."""
    train_demonstrations: int = 0
    """Instances the teacher labels for that training (0: the recipe's)."""

    AT_LEAST = {"train_minutes": 0.0, "train_demonstrations": 0}

    def check(self) -> None:
        if self.train_split not in TRAIN_SPLITS:
            raise ValueError(f"train_split: must be one of {', '.join(TRAIN_SPLITS)}, got {self.train_split!r}")


def _split(bounds, index: int, hard: bool = False):
    from hps.placement.env import InstanceSplit
    from hps.placement.env.generator import HARD_KNOBS

    low, high, types_low, types_high = bounds
    name = f"{'hard' if hard else 'scale'}-{low}-{high}x{types_low}-{types_high}"
    knobs = HARD_KNOBS if hard else {}
    return InstanceSplit(name, low, high, types_low, types_high, **knobs, salt=(700 if hard else 500) + index)


def items(config: PlacementAtScaleConfig):
    splits = [(_split(bounds, i, config.hard).name, i) for i, bounds in enumerate(config.splits)]
    return ([(TRAIN_ITEM, None)] if config.train_minutes > 0 else []) + splits


def run_item(config: PlacementAtScaleConfig, params) -> dict:
    if params is None:
        from hps.placement.env import generator

        split = getattr(generator, TRAIN_SPLITS[config.train_split])
        labels = config.train_demonstrations or None
        return ensure_policy(config.checkpoint, config.train_minutes, config.seed, split=split, demonstrations=labels)
    from hps.placement.agent.checkpoint import load_policy
    from hps.studies.at_scale import compare_at_scale

    policy, weights, spec = load_policy(config.checkpoint)
    split = _split(config.splits[params], params, config.hard)
    found = compare_at_scale(
        policy, weights, split, count=config.count, samples=config.samples, seconds=config.seconds, budget=config.budget
    )
    return json_ready({"split": split.name, "checkpoint_step": spec["step"], **found})


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


def summarize(config: PlacementAtScaleConfig, results: dict[str, dict]) -> Summary:
    results.pop(TRAIN_ITEM, None)
    headers = ["split", "planner", "mean", "p95", "worst", "feasible", "seconds (median)"]
    rows, lines, series = [], [], {}
    for r in results.values():
        s = r["summary"]
        for planner, label in LABELS.items():
            figures = s.get(planner)
            if figures is None:  # did not run at this size
                continue
            row = [_fmt(figures[k]) for k in ("mean", "p95", "worst", "feasible")]
            rows.append([r["split"], label, *row, _fmt(figures.get("seconds"))])
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
    for planner, label in LABELS.items():  # one bar per split and planner that ran anywhere; 0 where absent
        means = [r["summary"].get(planner, {}).get("mean") for r in results.values()]
        means = [math.nan if m is None else m for m in means]  # results.json writes NaN as null
        if any(m == m for m in means):
            series[label] = [m if m == m else 0.0 for m in means]
    figure = grouped_bars("at_scale.png", groups, series, ylabel="mean cost / optimum", hline=1.0, title=config.name)
    return Summary(
        results=dict(results), headers=headers, rows=rows, figures=[figure], markdown=text, title="Placement at scale"
    )


register_experiment_kind(PlacementAtScaleConfig, items=items, run_item=run_item, summarize=summarize)
