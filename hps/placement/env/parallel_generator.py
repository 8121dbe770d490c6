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

The mixing splits draw instances whose every feasible plan mixes two hardware or more (a second
pool of a type is the same hardware):

- caps: each type's cap is R·W_y·s_y devices, W_y the least device-seconds a sample needs on it
  (`single_type_reach`'s), R set so that the fastest type gets 8–32 devices, s_y log-uniform in
  [0.5, 1.5], within 8 and the least of 32 and the listed cap (a second pool: 1/4–1/2 of its
  type's); so each type alone reaches about as much as another, and none reaches much;
- job: the micro-batch fixed at batch / micro-batch count (the search of every divisor takes the
  exact solver past its limit on these instances);
- floor: the exact dual's certified bound on what each hardware reaches alone
  (`hps.methods.exact_parallel.hardware_reach`: an upper bound on every one-hardware plan) gives S, the best
  of them; a plan that lays each type at most once (`mixed_witness`) reaches W; where W ≥ 1.05·S
  the floor is S + reach·(W − S), else the instance is drawn again from the same stream. So no
  one-hardware plan meets the floor, and the witness, which mixes, does.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hps.config.types import Catalog, Job, Workload
from hps.contract.types import Plan
from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.hardware_reach import HardwareReach, hardware_of, hardware_reach
from hps.methods.mixed_witness import mixed_witness
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
FASTEST_CAP = (8, 32)
"""Mixing splits: the fastest type's cap before its spread (devices)."""
CAP_SPREAD = (0.5, 1.5)
"""Mixing splits: each type's cap is the fastest type's reach in its devices times this factor."""
MOST_CAP = 32
"""Mixing splits: the largest cap drawn (devices)."""
POOL_SHARE = (0.25, 0.5)
"""Mixing splits: a second pool's cap as a share of its type's."""
LEAST_GAIN = 1.05
"""Mixing splits: the witness must reach this multiple of the best hardware alone."""
HARDWARE_SECONDS = 60.0
"""Mixing splits: each hardware's dual solve within this (past it its bound is looser, and the
instance depends on the machine's speed)."""
ATTEMPTS = 16
"""Mixing splits: draws per seed before giving up."""


@dataclasses.dataclass(frozen=True)
class Split:
    """A family of generated instances: `rows` and `types` inclusive ranges, `reach` the floor's
    range as a multiple of the best single type's throughput bound (`mixing`: its place between
    the best hardware alone and a mixed plan, 0 to 1), `salt` the seeds' stream."""

    name: str
    rows: tuple[int, int]
    types: tuple[int, int]
    reach: tuple[float, float]
    salt: int
    mixing: bool = False


TRAIN = Split("train", rows=(64, 192), types=(8, 12), reach=(0.2, 0.65), salt=0)
HELD_OUT = Split("held-out", rows=(64, 256), types=(8, 16), reach=(0.2, 0.65), salt=1)
"""Other seeds than `TRAIN`, and sizes past it: up to 256 rows and 16 types."""
HELD_OUT_1024 = Split("held-out-1024", rows=(960, 1024), types=(8, 16), reach=(0.2, 0.65), salt=2)
MIXING_TRAIN = Split("mixing-train", rows=(24, 64), types=(4, 8), reach=(0.05, 0.3), salt=10, mixing=True)
MIXING_HELD_OUT = Split("mixing-held-out", rows=(24, 80), types=(4, 10), reach=(0.05, 0.3), salt=11, mixing=True)
"""Other seeds than `MIXING_TRAIN`, and sizes past it: up to 80 rows and 10 types."""
MIXING_HELD_OUT_LARGE = Split(
    "mixing-held-out-large", rows=(96, 160), types=(8, 14), reach=(0.05, 0.3), salt=12, mixing=True
)
"""Past the held-out sizes: 96–160 rows and 8–14 types."""
SPLITS = {
    split.name: split
    for split in (TRAIN, HELD_OUT, HELD_OUT_1024, MIXING_TRAIN, MIXING_HELD_OUT, MIXING_HELD_OUT_LARGE)
}


@dataclasses.dataclass(frozen=True)
class Instance:
    """One generated instance: its split and seed, the typed configs and `reach` (the floor over
    the best single type's throughput bound; mixing splits: its place between the best hardware
    alone and the witness)."""

    split: str
    seed: int
    workload: Workload
    catalog: Catalog
    job: Job
    reach: float
    hardware: tuple[HardwareReach, ...] = ()
    """Mixing splits: each hardware alone, as the floor was set from it."""
    witness: Plan | None = None
    """Mixing splits: a mixed plan that meets the floor."""
    witness_throughput: float = 0.0
    """Mixing splits: the witness's samples/s."""

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


def random_job(rng: np.random.Generator) -> Job:
    """Batch, micro-batch count (the micro-batch left open) and the module's fixed choices; the
    floor 1 sample/s, to be set."""
    return Job(
        batch=float(rng.choice(BATCH)),
        throughput=1.0,
        samples=1e8,
        micro_batches=float(rng.choice(MICRO_BATCHES)),
        state_sharding="auto",
        precision="bf16-adam",
        zero=1,
    )


def balanced_catalog(rng: np.random.Generator, base: Catalog, count: int, workload: Workload, job: Job) -> Catalog:
    """`random_catalog`'s types and prices, re-capped so that each type alone reaches about as
    much as another (the mixing splits' rule in the module's docstring)."""
    drawn = random_catalog(rng, base, count)
    seconds = ParallelProblem(workload, drawn, job).least_unit_seconds().sum(axis=0)  # (T,) device-s a sample
    runs = np.isfinite(seconds) & (seconds > 0)
    fastest = float(seconds[runs].min()) if runs.any() else 1.0
    per_second = _log_uniform(rng, *FASTEST_CAP) / fastest  # devices per (sample/s) of device-seconds
    listed = {r.name: r.max_units for r in base.resources}
    caps: dict[str, int] = {}
    resources = []
    for y, r in enumerate(drawn.resources):  # the types first, then their second pools
        own = hardware_of(r.name)
        if own == r.name:
            want = per_second * seconds[y] * _log_uniform(rng, *CAP_SPREAD) if runs[y] else LEAST_CAP
        else:
            want = caps[own] * rng.uniform(*POOL_SHARE)
        caps[r.name] = int(min(max(want, LEAST_CAP), MOST_CAP, listed[own]))
        resources.append(dataclasses.replace(r, max_units=caps[r.name]))
    return dataclasses.replace(drawn, resources=tuple(resources))


def witness_orders(problem: ParallelProblem, alone: tuple[HardwareReach, ...]) -> list[tuple[int, ...]]:
    """Per site, its types by what their hardware reaches alone, most first, and least first."""
    reach = {h.hardware: h.bound for h in alone}
    sites: dict[str, list[int]] = {}
    for y, r in enumerate(problem.catalog.resources):
        sites.setdefault(r.site, []).append(y)
    orders = []
    for members in sites.values():
        ranked = sorted(members, key=lambda y: -reach[hardware_of(problem.catalog.resources[y].name)])
        orders += [tuple(ranked), tuple(ranked[::-1])]
    return orders


def generate(split: Split, seed: int, base: Catalog) -> Instance:
    """Instance `seed` of `split`, its types drawn from `base`. Mixing splits run the exact dual
    once per hardware (seconds each) and may draw several times (`generate_mixing`)."""
    rng = np.random.default_rng((split.salt, seed))
    if split.mixing:
        return generate_mixing(split, seed, base, rng)
    rows = int(rng.integers(split.rows[0], split.rows[1] + 1))
    workload = random_workload(rng, rows)
    catalog = random_catalog(rng, base, int(rng.integers(split.types[0], split.types[1] + 1)))
    job = random_job(rng)
    reach = float(rng.uniform(*split.reach))
    best = float(single_type_reach(ParallelProblem(workload, catalog, job)).max())
    job = dataclasses.replace(job, throughput=reach * best)
    return Instance(split.name, seed, workload, catalog, job, reach)


class NoMixedInstance(ValueError):
    """No draw of a mixing split's seed had a mixed plan well past every hardware alone."""


def generate_mixing(split: Split, seed: int, base: Catalog, rng: np.random.Generator) -> Instance:
    """A mixing split's instance: draws from `rng` until the witness reaches LEAST_GAIN times the
    best hardware's bound (at most ATTEMPTS draws; NoMixedInstance past them)."""
    for _ in range(ATTEMPTS):
        workload = random_workload(rng, int(rng.integers(split.rows[0], split.rows[1] + 1)))
        job = random_job(rng)
        job = dataclasses.replace(job, micro_batch=float(job.batch // job.micro_batches))
        catalog = balanced_catalog(rng, base, int(rng.integers(split.types[0], split.types[1] + 1)), workload, job)
        reach = float(rng.uniform(*split.reach))
        problem = ParallelProblem(workload, catalog, job)
        alone = hardware_reach(problem, seconds=HARDWARE_SECONDS)
        most = max(h.bound for h in alone)
        witness, reached = mixed_witness(problem, witness_orders(problem, alone))
        if witness is None or not reached >= most * LEAST_GAIN:
            continue
        job = dataclasses.replace(job, throughput=most + reach * (reached - most))
        return Instance(split.name, seed, workload, catalog, job, reach, alone, witness, reached)
    raise NoMixedInstance(f"{split.name} seed {seed}: no draw of {ATTEMPTS} reached {LEAST_GAIN} x its best hardware")
