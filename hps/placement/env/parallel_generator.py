"""Generated hard instances of the parallel-plan model: decoder language models of 64 to 1,024
rows on 8 to 16 priced types drawn from a real catalogue, with tight pooled caps and a floor near
what the caps can reach.

One instance is drawn from one integer seed (numpy's `default_rng((salt, seed))`), so a split is
its salt and its ranges, and a held-out split differs from the training split in its salt and,
where its ranges do, in its sizes:

- workload: a `DecoderLM` of (rows − 2)/2 blocks (an embedding row, an attention and an FFN row a
  block, a head row), hidden 2,048–8,192 in heads of 128, grouped-query (8 KV heads) or full
  attention, a SwiGLU FFN of 3.5·hidden or a GELU one of 4·hidden, 2,048–8,192 tokens, one of
  three published vocabularies; the zoo's rows (`hps.workloads.llm`: bf16 activations,
  FlashAttention, and Megatron-LM's dropout in the GELU family only);
- catalogue: types of the base catalogue (cloud-2026 by default), each with its list price
  times a log-uniform factor in [0.8, 1.25]; where the split asks for more types than the base
  has, or at random, a type also appears as a second pool of the same hardware and site (reserved
  or spot capacity) at 0.5–0.9 of its price and a small cap; every cap is drawn log-uniform
  between 8 devices and the type's own cap;
- job: batch 256–2,048 sequences, `bf16-adam`, ZeRO 1, the micro-batch left to the solver (a
  micro-batch count of 8–32 only orders its search); the floor is `reach` times the best single type's throughput bound
  (`single_type_reach`, about twice what plans reach), `reach` drawn in the split's range.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hps.config.types import Catalog, Job, Workload
from hps.costmodel.parallel.problem import ParallelProblem
from hps.workloads.llm import DecoderLM, Llama3

HIDDEN = (2048, 3072, 4096, 5120, 6144, 8192)
"""Model widths drawn (heads of 128 values)."""
SEQUENCE = (2048, 4096, 8192)
VOCABULARY = (32_000, 50_257, 128_256)
"""Llama 2, GPT-2/3 and Llama 3 vocabularies."""
BATCH = (256, 512, 1024, 2048)
MICRO_BATCHES = (8, 16, 32)
PRICE_SPREAD = (0.8, 1.25)
"""Each type's list price is multiplied by a factor log-uniform in this range."""
POOL_DISCOUNT = (0.5, 0.9)
"""A second pool of a type (reserved or spot capacity) costs this fraction of its price."""
LEAST_CAP = 8
"""The smallest pooled cap drawn (devices)."""


@dataclasses.dataclass(frozen=True)
class Split:
    """A family of generated instances: `rows` and `types` inclusive ranges, `reach` the floor's
    range as a multiple of the best single type's throughput bound, `salt` the seeds' stream."""

    name: str
    rows: tuple[int, int]
    types: tuple[int, int]
    reach: tuple[float, float]
    salt: int


TRAIN = Split("train", rows=(64, 192), types=(8, 12), reach=(0.2, 0.65), salt=0)
HELD_OUT = Split("held-out", rows=(64, 256), types=(8, 16), reach=(0.2, 0.65), salt=1)
"""Other seeds than `TRAIN`, and sizes past it: up to 256 rows and 16 types."""
HELD_OUT_1024 = Split("held-out-1024", rows=(960, 1024), types=(8, 16), reach=(0.2, 0.65), salt=2)
SPLITS = {split.name: split for split in (TRAIN, HELD_OUT, HELD_OUT_1024)}


@dataclasses.dataclass(frozen=True)
class Instance:
    """One generated instance: its split and seed, the typed configs and `reach` (the floor over
    the best single type's throughput bound)."""

    split: str
    seed: int
    workload: Workload
    catalog: Catalog
    job: Job
    reach: float

    @property
    def problem(self) -> ParallelProblem:
        return ParallelProblem(self.workload, self.catalog, self.job)


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def random_workload(rng: np.random.Generator, rows: int) -> Workload:
    """A decoder LM of `rows` rows (rounded down to an even count, at least 4): Llama-3-like
    (`Llama3`: SwiGLU, untied head, rotary positions, no dropout) or GPT-like (`DecoderLM`: GELU,
    tied head, Megatron-LM's dropout)."""
    hidden = int(rng.choice(HIDDEN))
    heads = hidden // 128
    gated = bool(rng.random() < 0.5)
    family = Llama3 if gated else DecoderLM
    shape = family(
        layers=max(1, (rows - 2) // 2),
        hidden=hidden,
        heads=heads,
        kv_heads=8 if rng.random() < 0.5 else heads,
        ffn=int(3.5 * hidden) if gated else 4 * hidden,
        seq_len=int(rng.choice(SEQUENCE)),
        vocab=int(rng.choice(VOCABULARY)),
    )
    layers = shape.table()
    name = f"lm-{len(layers)}r-h{hidden}-s{shape.seq_len}"
    return Workload(name, layers, None, shape.describe(layers))


def random_catalog(rng: np.random.Generator, base: Catalog, count: int) -> Catalog:
    """`count` types of `base`: distinct types (at random, at least two), then second pools of
    them, each re-priced and capped as the module says."""
    resources = base.resources
    distinct = int(rng.integers(max(2, count - len(resources)), min(count, len(resources)) + 1))
    types = []
    for i in sorted(rng.choice(len(resources), size=distinct, replace=False)):
        r = resources[i]
        price = r.price_per_hour * _log_uniform(rng, *PRICE_SPREAD)
        cap = int(_log_uniform(rng, min(LEAST_CAP, r.max_units), r.max_units))
        types.append(dataclasses.replace(r, price_per_hour=price, max_units=cap))
    pools = []
    for i in rng.choice(distinct, size=count - distinct, replace=count - distinct > distinct):
        r = types[int(i)]
        copy = sum(p.name.startswith(f"{r.name}-pool") for p in pools) + 2
        cap = int(_log_uniform(rng, min(LEAST_CAP, r.max_units), max(LEAST_CAP, r.max_units / 4)))
        price = r.price_per_hour * rng.uniform(*POOL_DISCOUNT)
        pools.append(dataclasses.replace(r, name=f"{r.name}-pool{copy}", price_per_hour=price, max_units=cap))
    return dataclasses.replace(base, name=f"{base.name}-drawn", resources=tuple(types + pools))


def single_type_reach(problem: ParallelProblem) -> np.ndarray:
    """(T,) an upper bound on the samples/s each type reaches alone: its cap U over W, the least
    device-seconds a sample needs on it (the sum over layers of `least_unit_seconds`). Each stage
    runs at most t·d/W_stage samples/s (`WorkBound`), so U devices run at most U/W. Bubbles,
    memory and transfers are not counted: plans reach about half of it. 0 where a layer cannot
    run on the type."""
    seconds = problem.least_unit_seconds().sum(axis=0)
    caps = np.array([r.max_units for r in problem.catalog.resources], np.float64)
    usable = np.isfinite(seconds) & (seconds > 0)
    return np.where(usable, caps / np.where(usable, seconds, 1.0), 0.0)


def generate(split: Split, seed: int, base: Catalog) -> Instance:
    """Instance `seed` of `split`, its types drawn from `base`."""
    rng = np.random.default_rng((split.salt, seed))
    rows = int(rng.integers(split.rows[0], split.rows[1] + 1))
    workload = random_workload(rng, rows)
    catalog = random_catalog(rng, base, int(rng.integers(split.types[0], split.types[1] + 1)))
    batch = float(rng.choice(BATCH))
    job = Job(
        batch=batch,
        throughput=1.0,
        samples=1e8,
        micro_batches=float(rng.choice(MICRO_BATCHES)),
        state_sharding="auto",
        precision="bf16-adam",
        zero=1,
    )
    reach = float(rng.uniform(*split.reach))
    best = float(single_type_reach(ParallelProblem(workload, catalog, job)).max())
    job = dataclasses.replace(job, throughput=reach * best)
    return Instance(split.name, seed, workload, catalog, job, reach)
