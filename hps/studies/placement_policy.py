"""Placement policy evaluation: a trained placement policy (and further checkpoints, e.g. a
PPO-trained one) on held-out instances (`hps.placement.agent.evaluation`).

- small held-out instances (≤ 10 layers, ≤ 4 types): feasibility and mean cost / the exact
  solver's optimum (exhaustive search checks it) of the best of `samples` sampled plans +
  greedy, of greedy alone, of the best sample refined by stage moves, beside the genetic
  algorithm and the gradient search at the same evaluations and the training teacher
  (`compare_with_optimum`);
- held-out 24–32-layer instances: mean cost / the exact solver's optimum of the policy, its
  refinement, the genetic algorithm at the policy's evaluations and at its default 51,200, the
  teacher and the best single-type plan, with the solver's time (`compare_on_large`).

One item per checkpoint × split, after a training item when train_minutes > 0 (which trains the
default recipe in `checkpoint` when that folder holds none, as the other placement experiments do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.studies.files import json_ready
from hps.studies.placement import DEFAULT_POLICY_DIR, TRAIN_ITEM, ensure_policy


@dataclass(frozen=True, kw_only=True)
class PlacementPolicyConfig(ExperimentConfig):
    """A trained placement policy against the optimum and every search method, on held-out
    instances. `seed` seeds the optional first training only: the held-out instances are fixed."""

    name: str = "placement_policy"
    checkpoint: str = DEFAULT_POLICY_DIR
    """The policy's run folder (`hps train --out`) or its checkpoints/."""
    also: tuple[str, ...] = ()
    """More checkpoints, evaluated alike and keyed by their folder."""
    small: int = 50
    large: int = 20
    """Held-out instances of the small and the large split (large = 0 leaves that split out)."""
    samples: int = 64
    """Sampled plans per instance, besides the greedy one."""
    train_minutes: float = 0.0
    """When > 0 and `checkpoint` holds no policy, train the default recipe there first."""

    AT_LEAST = {"also": 0, "large": 0, "train_minutes": 0.0}

    def check(self) -> None:
        if len({self.checkpoint, *self.also}) != 1 + len(self.also):
            raise ValueError("also: a checkpoint is named twice")


def _check_folder(folder: str, field: str) -> None:
    if not Path(folder).is_dir():
        raise ConfigError("config()", field, f"{folder}: no such checkpoint folder")


def labels(config: PlacementPolicyConfig) -> dict[str, str]:
    """{folder: short label}: the folder's name, else its position when names repeat."""
    folders = [config.checkpoint, *config.also]
    names = [Path(folder).name or "checkpoint" for folder in folders]
    if len(set(names)) < len(names):
        names = [f"{i}-{name}" for i, name in enumerate(names)]
    return dict(zip(folders, names))


def items(config: PlacementPolicyConfig):
    units = []
    if config.train_minutes > 0:
        units.append((TRAIN_ITEM, None))
    else:
        _check_folder(config.checkpoint, "checkpoint")
    for folder in config.also:
        _check_folder(folder, "also")
    splits = ("small", "large") if config.large else ("small",)
    keys = labels(config)
    units += [(f"{keys[folder]}-{split}", (folder, split)) for folder in keys for split in splits]
    return units


def run_item(config: PlacementPolicyConfig, params) -> dict:
    if params is None:
        return ensure_policy(config.checkpoint, config.train_minutes, config.seed)
    from hps.placement.agent.checkpoint import load_policy
    from hps.placement.agent.evaluation import compare_on_large, compare_with_optimum

    folder, split = params
    policy, weights, spec = load_policy(folder)
    if split == "small":
        figures = compare_with_optimum(policy, weights, count=config.small, samples=config.samples).to_dict()
    else:
        figures = compare_on_large(policy, weights, count=config.large, samples=config.samples)
    return {
        "checkpoint": folder,
        "checkpoint_step": spec["step"],
        "algorithm": spec["train"].get("algorithm", "?"),
        "split": split,
        "figures": json_ready(figures),
    }


ROWS = (  # (label, small-split ratio and feasible count, large-split method)
    ("policy: best of samples + greedy", "sampled_ratio", "found_feasible", "policy"),
    ("policy: greedy", "greedy_ratio", "greedy_feasible", None),
    ("policy: refined by stage moves", "refined_ratio", "refined_feasible", "policy_refined"),
    ("genetic, the policy's evaluations", "genetic_ratio", "genetic_feasible", "genetic_equal"),
    ("genetic, the refined policy's evaluations", "genetic_refined_ratio", None, None),
    ("genetic, 51,200 evaluations", None, None, "genetic"),
    ("gradient, the policy's evaluations", "gradient_ratio", "gradient_feasible", None),
    ("teacher (climb from single type)", "climb_ratio", "climb_feasible", "climb"),
    ("best single type", None, None, "single"),
)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def summarize(config: PlacementPolicyConfig, results: dict[str, dict]) -> Summary:
    training = results.pop(TRAIN_ITEM, None)
    evaluated = {}
    for r in results.values():
        entry = evaluated.setdefault(
            r["checkpoint"], {"checkpoint_step": r["checkpoint_step"], "algorithm": r["algorithm"], "large": {}}
        )
        entry[r["split"]] = r["figures"]
    main, *also = evaluated
    document = {"checkpoint": main, **evaluated[main], "also": {f: evaluated[f] for f in also}, "training": training}
    names = labels(config)
    headers, rows = ["method"], []
    for folder in evaluated:
        headers += [f"{names[folder]} small: cost/optimum", "feasible"]
        if config.large:
            headers += [f"{names[folder]} large: cost/optimum", "feasible"]
    for label, ratio, feasible, large in ROWS:
        row = [label]
        for entry in evaluated.values():
            small = entry["small"]
            row += [_fmt(small.get(ratio)), f"{small[feasible]}/{small['with_feasible']}" if feasible else "-"]
            if config.large:
                big = entry["large"]
                row += [
                    _fmt(big.get(f"{large}_vs_optimum")),
                    f"{big[f'{large}_feasible']}/{big['instances']}" if large else "-",
                ]
        rows.append(row)
    lines = []
    for folder, entry in evaluated.items():
        s = entry["small"]
        lines.append(
            f"- `{folder}` ({entry['algorithm']}, update {entry['checkpoint_step']}): {s['instances']} held-out small "
            f"instances, {s['with_feasible']} with a feasible plan; the best sample is within 3 % of the optimum on "
            f"{s['within_3_percent']} (refined: {s['refined_within_3_percent']}), "
            f"worst {_fmt(s['worst_sampled_ratio'])}, median {_fmt(s['median_sampled_ratio'])}; "
            f"{s['evaluations_per_instance']} evaluations per instance, "
            f"refinement {s['refine_evaluations']:.0f} more, the teacher {s['climb_evaluations']:.0f}; "
            f"exact solver {s.get('exact_seconds', float('nan')) * 1e3:.1f} ms per instance (exhaustive search "
            f"agreed on {s.get('exhaustive_agrees', '-')}), "
            f"{entry['large'].get('exact_seconds', float('nan')) * 1e3:.1f} ms on the large ones."
        )
    text = (
        "Cost / the exact solver's optimum, over the instances where the method found a feasible plan: small "
        f"instances (exhaustive search checks the optimum) and large ({config.large} instances of 24-32 layers). "
        f"{config.samples} sampled plans + greedy per instance.\n\n" + "\n".join(lines)
    )

    series = {}
    for folder, entry in evaluated.items():
        series[f"{names[folder]} small / optimum"] = [
            (entry["small"].get(r) or 0.0) if r else 0.0 for _, r, _, _ in ROWS
        ]
        if config.large:
            series[f"{names[folder]} large / optimum"] = [
                (entry["large"].get(f"{m}_vs_optimum") or 0.0) if m else 0.0 for *_, m in ROWS
            ]
    groups = [label for label, *_ in ROWS]
    title = "placement policy on held-out instances"
    figure = grouped_bars("policy_evaluation.png", groups, series, ylabel="mean cost ratio", hline=1.0, title=title)
    return Summary(
        results=document,
        headers=headers,
        rows=rows,
        figures=[figure],
        markdown=text,
        title="Placement policy on held-out instances",
    )


register_experiment_kind(PlacementPolicyConfig, items=items, run_item=run_item, summarize=summarize)
