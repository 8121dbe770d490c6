"""Genetic algorithm, jitted and vectorised over its population, `lax.scan` over generations.

Each generation scores the whole population (so evaluations = population × generations exactly),
keeps the best ever, and breeds the next population: the `elites` best unchanged, the rest from
tournament-selected parents by two-point (or uniform) crossover, per-gene mutation, and a segment
mutation that paints a random run of layers with one type (stages are runs, so this merges and
splits stages in one move). Ranking is `hps.search.scoring`'s: feasible by cost, infeasible by the
graded penalty, so a population that starts infeasible can climb out. The initial population holds
every single-type plan; the rest is uniform random.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp

from hps.placement.model import SegmentTable
from hps.placement.params import PlacementParams
from hps.search.random import random_schedules
from hps.search.result import SearchResult
from hps.search.scoring import batch_best, merge, nothing, order, prepare, prepare_table, real_sizes, score, to_result

POPULATION = 256
GENERATIONS = 100
TOURNAMENT = 3
ELITES = 4
SEGMENT_RATE = 0.3
CROSSOVERS = ("two_point", "uniform")


def _run_mask(key, n_rows: int, n_layers, max_layers: int) -> jnp.ndarray:
    """(n_rows, max_layers) bool: a random run lo ≤ l < hi of the real layers per row."""
    ends = jax.random.randint(key, (2, n_rows, 1), 0, n_layers + 1)
    lo, hi = jnp.minimum(ends[0], ends[1]), jnp.maximum(ends[0], ends[1])
    layer = jnp.arange(max_layers)
    return (lo <= layer) & (layer < hi)


def _initial_population(key, params: PlacementParams, population: int, n_types) -> jnp.ndarray:
    """Every real single-type plan first, uniform random schedules after."""
    pop = random_schedules(key, n_types, (population, params.max_layers))
    rows = min(population, params.max_types)
    types = jnp.arange(rows, dtype=jnp.int32)[:, None]
    singles = jnp.where(types < n_types, types, pop[:rows])
    return pop.at[:rows].set(singles)


def _breed(key, pop, position, n_layers, n_types, mutation_rate, segment_rate, *, tournament, elites, crossover):
    """Children (population − elites, L) from tournament-selected parents."""
    population, max_layers = pop.shape
    n_children = population - elites
    k_select, k_cross, k_gene, k_type, k_seg, k_seg_on, k_seg_type = jax.random.split(key, 7)
    contenders = jax.random.randint(k_select, (2, n_children, tournament), 0, population)
    pick = jnp.argmin(position[contenders], axis=-1)
    winners = jnp.take_along_axis(contenders, pick[..., None], axis=-1)[..., 0]
    mothers, fathers = pop[winners[0]], pop[winners[1]]
    if crossover == "two_point":
        from_father = _run_mask(k_cross, n_children, n_layers, max_layers)
    else:
        from_father = jax.random.bernoulli(k_cross, 0.5, mothers.shape)
    children = jnp.where(from_father, fathers, mothers)
    mutate = jax.random.bernoulli(k_gene, mutation_rate, children.shape)
    children = jnp.where(mutate, random_schedules(k_type, n_types, children.shape), children)
    painted = _run_mask(k_seg, n_children, n_layers, max_layers)
    painted &= jax.random.bernoulli(k_seg_on, segment_rate, (n_children, 1))
    paint = random_schedules(k_seg_type, n_types, (n_children, 1))
    return jnp.where(painted, paint, children)


@functools.lru_cache(maxsize=None)
def _evolver(population: int, generations: int, tournament: int, elites: int, crossover: str):
    """A jitted GA of fixed population and generation count (one compile per configuration)."""
    breed = functools.partial(_breed, tournament=tournament, elites=elites, crossover=crossover)

    @jax.jit
    def evolve(table: SegmentTable, params: PlacementParams, key, n_layers, n_types, mutation_rate, segment_rate):
        real = jnp.arange(params.max_layers) < n_layers
        init_key, key = jax.random.split(key)
        pop = jnp.where(real, _initial_population(init_key, params, population, n_types), 0)

        def generation(carry, gen_key):
            pop, best = carry
            scored = score(table, params, pop)
            best = merge(best, batch_best(scored))
            ranked = order(scored)
            position = jnp.zeros((population,), jnp.int32).at[ranked].set(jnp.arange(population, dtype=jnp.int32))
            children = breed(gen_key, pop, position, n_layers, n_types, mutation_rate, segment_rate)
            next_pop = jnp.concatenate([pop[ranked[:elites]], children], axis=0)
            return (jnp.where(real, next_pop, 0), best), None

        (_, best), _ = jax.lax.scan(generation, (pop, nothing(params.max_layers)), jax.random.split(key, generations))
        return best

    return evolve


def genetic(
    params: PlacementParams,
    *,
    key=None,
    budget: int | None = None,
    population: int = POPULATION,
    generations: int = GENERATIONS,
    mutation_rate: float | None = None,
    segment_rate: float = SEGMENT_RATE,
    tournament: int = TOURNAMENT,
    elites: int = ELITES,
    crossover: str = "two_point",
    table: SegmentTable | None = None,
    warmup: bool = False,
) -> SearchResult:
    """Best schedule of a GA run. budget (optional) sets generations = max(1, budget // population);
    evaluations = population × generations. mutation_rate defaults to 1 / real layers (per gene);
    segment_rate is the chance per child of painting a random run of layers with one type."""
    started = time.perf_counter()
    if crossover not in CROSSOVERS:
        raise ValueError(f"crossover must be one of {CROSSOVERS}, got {crossover!r}")
    if not 0 <= elites < population or tournament < 1:
        raise ValueError(f"need 0 ≤ elites < population and tournament ≥ 1, got {elites}, {population}, {tournament}")
    if budget is not None:
        generations = max(1, int(budget) // population)
    key = jax.random.key(0) if key is None else key
    n_layers, n_types = real_sizes(params)
    mutation_rate = 1.0 / max(n_layers, 1) if mutation_rate is None else mutation_rate
    args = (key, jnp.int32(n_layers), jnp.int32(n_types), jnp.float32(mutation_rate), jnp.float32(segment_rate))
    evolve = _evolver(population, generations, tournament, elites, crossover)
    make_table = prepare_table(params, warmup=warmup)
    search = prepare(evolve, params, *args, warmup=warmup)
    if warmup:
        started = time.perf_counter()
    table = make_table(params) if table is None else table
    return to_result("genetic", search(table, params, *args), n_layers, population * generations, started)
