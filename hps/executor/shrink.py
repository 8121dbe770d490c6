"""`hps execute --shrink`: a plan's structure on the devices this machine has (docs/executor.md,
"Shrinking a plan").

A plan for hundreds of devices keeps its stages (the same layer spans, in order, each on its own
device group where the devices allow) and runs:

- per stage, tp capped at the stage's share of its pool (the pool's devices / the stages on it),
  then dp capped at the rest of that share, the largest count filling whole network dimensions;
- on a narrower model of the same family: every depth hyperparameter kept (layers, or the
  length of a hidden-width tuple, so the layer table has the same rows), every width cut to the
  family's laptop-sized preset (`<family>-small`; widths of a tuple to WIDTH), attention heads a
  multiple of every stage's tp. A decoder LLM of the zoo, which has no Flax model, runs as the
  zoo's "transformer" at its depth: its rows embedding, attention and FFN of each block, then
  head + loss for the LLM's one head row;
- at a batch of one sample per data-parallel replica in each of at most MAX_MICRO_BATCHES
  micro-batches (the plan's own count where smaller).

`Shrunk.changes` says each of these in words, for the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hps.config.types import ParallelStage
from hps.errors import ConfigError
from hps.executor.mesh import used_dimensions

WIDTH = 32
"""Width of each entry of a tuple width hyperparameter (hidden layers) after shrinking, where
the preset has none (rounded up to a multiple of the stages' tensor degrees)."""

MAX_MICRO_BATCHES = 4
"""Most micro-batches a shrunk step runs (the plan's own count where smaller, at least 2 for
more than one stage)."""

STAND_IN = "transformer"
"""The zoo entry whose Flax model runs a decoder LLM's blocks."""


@dataclass(frozen=True)
class Shrunk:
    """What `--shrink` runs: zoo entry `workload` at `hyperparameters`; `stages` (layer spans of
    that entry's table); `batch` samples per step in micro-batches of `micro_batch`; `changes`:
    one line per thing shrunk."""

    workload: str
    hyperparameters: dict
    stages: tuple[ParallelStage, ...]
    batch: int
    micro_batch: int
    changes: tuple[str, ...]


def capped_degrees(stages, pools: dict[str, list], networks: list) -> list[tuple[int, int]]:
    """(tp, dp) per stage within its share of its pool: the pool's devices over the stages that
    share it (stages of types with one pool share it), tp first, then the largest dp ≤ the plan's
    that fits the rest and fills whole dimensions of the type's network."""
    sharing: dict[tuple, int] = {}
    keys = [tuple(id(d) for d in pools[stage.type]) for stage in stages]
    for key in keys:
        sharing[key] = sharing.get(key, 0) + 1
    degrees = []
    for stage, key, network in zip(stages, keys, networks):
        share = max(1, len(key) // sharing[key])
        tp = min(stage.tp, share)
        dp = next(k for k in range(min(stage.dp, share // tp), 0, -1) if _fills(network, k))  # k = 1 always fills
        degrees.append((tp, dp))
    return degrees


def _fills(network, k: int) -> bool:
    try:
        used_dimensions(network, k)
        return True
    except ConfigError:
        return False


def narrow_hyperparameters(values: dict, depth: tuple[str, ...], preset: dict, tensors) -> dict:
    """`values` (a zoo entry's hyperparameters) with every depth field kept and every width cut (see the
    module docstring); `preset`: the family's laptop-sized hyperparameters ({} where it has none)."""
    t = math.lcm(*tensors)
    narrow = dict(values)
    for name, value in values.items():
        if name in depth and isinstance(value, tuple):  # its length is the depth: keep it, narrow each width
            narrow[name] = tuple(min(_multiple(w, t), _multiple(WIDTH, t)) for w in value)
        elif name not in depth and name in preset:
            narrow[name] = preset[name]
    if "heads" in narrow:  # attention splits its heads over tp
        heads = math.lcm(int(narrow["heads"]), t)
        hidden = _multiple(max(int(narrow["hidden"]), 8 * heads), heads)
        narrow.update(heads=heads, hidden=hidden, ffn=_multiple(max(int(narrow.get("ffn", 0)), 2 * hidden), t))
    return narrow


def _multiple(value: int, of: int) -> int:
    return -(-int(value) // of) * of


def micro_batching(plan_batch: int, plan_micro_batch: int | None, stages: int, dps) -> tuple[int, int]:
    """(batch, micro_batch) of a shrunk step: one sample per replica of every stage in a
    micro-batch (the lcm of the stages' dp), in min(the plan's count, MAX_MICRO_BATCHES)
    micro-batches, at least 2 for more than one stage."""
    planned = plan_batch // plan_micro_batch if plan_micro_batch else MAX_MICRO_BATCHES
    count = max(min(planned, MAX_MICRO_BATCHES), 2 if stages > 1 else 1)
    micro = math.lcm(*dps)
    return count * micro, micro


def changes(name, executed, values, narrow, stages, degrees, batch, shrunk_batch, micro) -> tuple[str, ...]:
    """The report's lines: what was shrunk, from what to what (`values`: the plan's model's
    hyperparameters, `narrow`: those run)."""
    widths = [f"{k} {values[k]} -> {v}" for k, v in narrow.items() if k in values and values[k] != v]
    lines = [f"model: {name} -> {executed}" + (f" ({', '.join(widths)})" if widths else "")]
    for j, (stage, (tp, dp)) in enumerate(zip(stages, degrees)):
        if (tp, dp) != (stage.tp, stage.dp):
            lines.append(f"stage {j}: tp {stage.tp} -> {tp}, dp {stage.dp} -> {dp}")
    lines.append(f"batch: {batch:g} -> {shrunk_batch} samples in micro-batches of {micro}")
    return tuple(lines)


def shrink_plan(name: str, table, stages, batch: float, micro_batch: float | None, pools, networks) -> Shrunk:
    """The Shrunk run of a plan of zoo workload `name` (its layer table `table`) with `stages` on
    device `pools` ({type: [device, ...]}) whose types have `networks` (per stage).
    ConfigError naming the workload when its family has no Flax model and is no decoder LLM."""
    from hps.models.registry import MODELS
    from hps.workloads import ZOO, base_workload, hyperparameters
    from hps.workloads.registry import FACTORIES, PRESETS

    if name not in ZOO:
        raise ConfigError("workload", name, "--shrink needs a zoo workload (its family's narrower model)")
    family = base_workload(name)
    planned = values = hyperparameters(name)
    rows = len(table.layers)
    stand_in = family not in MODELS
    if stand_in:
        is_llm = "layers" in values and "heads" in values and rows == 2 * int(values["layers"]) + 2
        if not is_llm or table.layers[-1].name != "head":
            raise ConfigError("workload", name, "has no Flax model, and --shrink runs only families with one and LLMs")
        values, family = {**hyperparameters(STAND_IN), "layers": int(values["layers"])}, STAND_IN
    degrees = capped_degrees(stages, pools, networks)
    preset = next((dict(p.hyperparameters) for p in PRESETS if p.base == family), {})
    depth = FACTORIES[family].architecture.depth
    narrow = narrow_hyperparameters(values, depth, preset, [t for t, _ in degrees])
    spans = [(s.first, s.last + (1 if stand_in and s.last == rows - 1 else 0)) for s in stages]
    executed = tuple(
        ParallelStage(first, last, s.type, tp, dp) for (first, last), s, (tp, dp) in zip(spans, stages, degrees)
    )
    planned_micro = int(micro_batch) if micro_batch else None
    shrunk_batch, micro = micro_batching(int(batch), planned_micro, len(stages), [dp for _, dp in degrees])
    lines = changes(name, family, planned, narrow, stages, degrees, batch, shrunk_batch, micro)
    return Shrunk(family, narrow, executed, shrunk_batch, micro, lines)
