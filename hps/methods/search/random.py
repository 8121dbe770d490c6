"""Random search: `budget` schedules drawn uniformly over the real types, scored in jitted batches."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError
from hps.methods.search.batches import best_over_batches
from hps.methods.search.scoring import SearchCall, compile_and_run, real_sizes, search_method

DEFAULT_BUDGET = 51_200  # = the genetic default, population × generations
BATCH_SIZE = 2**12


def uniform_below(bits, n) -> jnp.ndarray:
    """int32 in 0..n−1 (n may be traced) from uniform uint32 bits; the modulo bias, below
    n / 2^32, does not matter here. Plain bits compile much faster than `jax.random.randint`."""
    return (bits % jnp.asarray(n).astype(jnp.uint32)).astype(jnp.int32)


def random_schedules(key, n_types, shape: tuple[int, int]) -> jnp.ndarray:
    """(N, L) int32 types drawn uniformly from 0..n_types−1 (n_types may be traced)."""
    return uniform_below(jax.random.bits(key, shape, jnp.uint32), n_types)


@functools.cache
def _sampler(batch_size: int):
    """A jitted random search in batches of `batch_size` (one compile per size)."""

    @jax.jit
    def sample(table: SegmentTable, params: PlacementParams, key, n_types, budget):
        def make_batch(batch, index):
            return random_schedules(jax.random.fold_in(key, batch), n_types, (batch_size, params.max_layers))

        return best_over_batches(table, params, make_batch, batch_size, budget)

    return sample


@search_method
def random_search(params: PlacementParams, call: SearchCall, *, batch_size: int = BATCH_SIZE):
    """The best of `budget` (default 51,200) uniform random schedules; evaluations = budget."""
    budget = DEFAULT_BUDGET if call.budget is None else int(call.budget)
    if budget < 1:
        raise ConfigError("evaluations", "", f"random search needs at least 1 evaluation, got {budget}")
    n_layers, n_types = real_sizes(params)
    size = min(batch_size, max(256, 1 << (budget - 1).bit_length()))
    args = (call.key, jnp.int32(n_types), jnp.int32(budget))
    return compile_and_run("random", _sampler(size), params, args, call, n_layers, budget)
