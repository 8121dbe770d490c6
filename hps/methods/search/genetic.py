"""Genetic algorithm, jitted and vectorised over its population, `lax.scan` over generations.

Each generation scores the whole population (so evaluations = population × generations exactly),
keeps the best ever, and breeds the next population: the `elites` best unchanged, the rest from
tournament-selected parents by two-point (or uniform) crossover, per-gene mutation, and a segment
mutation that paints a random run of layers with one type (stages are runs, so this merges and
splits stages in one move). Ranking is `hps.methods.search.scoring`'s: feasible by cost, infeasible by the
graded penalty, so a population that starts infeasible can climb out. The initial population holds
every single-type plan; the rest is uniform random.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError
from hps.methods.search.random import random_schedules, uniform_below
from hps.methods.search.scoring import (
    SearchCall,
    batch_best,
    compile_and_run,
    merge,
    nothing,
    order,
    real_sizes,
    score,
    search_method,
)

POPULATION = 1024
GENERATIONS = 50
TOURNAMENT = 3
ELITES = 4
SEGMENT_RATE = 0.5
CROSSOVERS = ("two_point", "uniform")


def _chance(bits, probability) -> jnp.ndarray:
    """True with the given probability, from uniform uint32 bits (24-bit resolution)."""
    return (bits >> 8).astype(jnp.float32) * 2.0**-24 < probability


def _run_mask(bits, n_layers, max_layers: int) -> jnp.ndarray:
    """(rows, max_layers) bool from bits (rows, 2): a random run lo ≤ l < hi of the real layers."""
    ends = uniform_below(bits, n_layers + 1)
    lo, hi = jnp.min(ends, axis=1, keepdims=True), jnp.max(ends, axis=1, keepdims=True)
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
    """Children (population − elites, L) from tournament-selected parents. All randomness comes
    from one draw of uint32 bits: one generator call compiles much faster than eight."""
    population, max_layers = pop.shape
    n_children = population - elites
    widths = (2 * tournament, 2, max_layers, max_layers, max_layers, 2, 1, 1)
    bits = jax.random.bits(key, (n_children, sum(widths)), jnp.uint32)
    cuts = [sum(widths[:i]) for i in range(len(widths) + 1)]
    select, cross, cross_uniform, gene, gene_type, seg, seg_on, seg_type = (
        bits[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])
    )
    contenders = uniform_below(select, population).reshape(n_children, 2, tournament)
    pick = jnp.argmin(position[contenders], axis=-1)
    winners = jnp.take_along_axis(contenders, pick[..., None], axis=-1)[..., 0]
    mothers, fathers = pop[winners[:, 0]], pop[winners[:, 1]]
    if crossover == "two_point":
        from_father = _run_mask(cross, n_layers, max_layers)
    else:
        from_father = _chance(cross_uniform, 0.5)
    children = jnp.where(from_father, fathers, mothers)
    children = jnp.where(_chance(gene, mutation_rate), uniform_below(gene_type, n_types), children)
    painted = _run_mask(seg, n_layers, max_layers) & _chance(seg_on, segment_rate)
    return jnp.where(painted, uniform_below(seg_type, n_types), children)


@functools.cache
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
            places = jnp.arange(population, dtype=jnp.int32)
            position = jnp.zeros((population,), jnp.int32).at[ranked].set(places)
            children = breed(gen_key, pop, position, n_layers, n_types, mutation_rate, segment_rate)
            next_pop = jnp.concatenate([pop[ranked[:elites]], children], axis=0)
            return (jnp.where(real, next_pop, 0), best), None

        start = (pop, nothing(params.max_layers))
        (_, best), _ = jax.lax.scan(generation, start, jax.random.split(key, generations))
        return best

    return evolve


@search_method
def genetic(
    params: PlacementParams,
    call: SearchCall,
    *,
    population: int = POPULATION,
    mutation_rate: float | None = None,
    generations: int = GENERATIONS,
    segment_rate: float = SEGMENT_RATE,
    tournament: int = TOURNAMENT,
    elites: int = ELITES,
    crossover: str = "two_point",
):
    """Best schedule of a GA run; evaluations = population × generations. budget (optional) sets
    generations = budget // population (below one population: one generation of `budget`
    individuals), so evaluations ≤ budget. mutation_rate (per gene) defaults to 1 / real layers;
    segment_rate is the chance per child of painting a random run of layers with one type."""
    budget = call.budget
    if crossover not in CROSSOVERS:
        raise ValueError(f"crossover must be one of {CROSSOVERS}, got {crossover!r}")
    if budget is not None:
        if budget < 1:
            problem = f"the genetic search needs at least 1 evaluation, got {budget}"
            raise ConfigError("evaluations", "", problem)
        population = min(population, int(budget))
        elites = min(elites, population - 1)
        generations = int(budget) // population
    if not 0 <= elites < population or tournament < 1 or generations < 1:
        raise ValueError(
            f"need 0 ≤ elites < population, tournament ≥ 1 and generations ≥ 1, "
            f"got {elites}, {population}, {tournament}, {generations}"
        )
    n_layers, n_types = real_sizes(params)
    mutation_rate = 1.0 / max(n_layers, 1) if mutation_rate is None else mutation_rate
    rates = (jnp.float32(mutation_rate), jnp.float32(segment_rate))
    args = (call.key, jnp.int32(n_layers), jnp.int32(n_types), *rates)
    evolve = _evolver(population, generations, tournament, elites, crossover)
    return compile_and_run("genetic", evolve, params, args, call, n_layers, population * generations)
