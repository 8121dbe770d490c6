"""Exhaustive search: every one of the T^L schedules, decoded from its index in jitted batches."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import SearchSpaceTooLarge
from hps.methods.search.batches import best_over_batches
from hps.methods.search.scoring import SearchCall, compile_and_run, real_sizes, search_method

DEFAULT_LIMIT = 2**24
MAX_LIMIT = 2**30  # schedule indices are int32
BATCH_SIZE = 2**16
MIN_BATCH_SIZE = 2**10


def decode(index, n_layers, n_types, max_layers: int) -> jnp.ndarray:
    """Schedule indices (B,) int32 -> (B, max_layers) int32 base-n_types digits, layer 0 least
    significant; layers from n_layers on are 0."""
    layer = jnp.arange(max_layers, dtype=jnp.int32)
    real = layer < n_layers
    place = jnp.where(real, jnp.power(jnp.int32(n_types), jnp.where(real, layer, 0)), 1)
    digits = (index[:, None] // place[None, :]) % n_types
    return jnp.where(real[None, :], digits, 0).astype(jnp.int32)


@functools.cache
def _enumerator(batch_size: int):
    """A jitted search over all schedules in batches of `batch_size` (one compile per size)."""

    @jax.jit
    def enumerate_all(table: SegmentTable, params: PlacementParams, n_layers, n_types, total):
        def make_batch(batch, index):
            return decode(index, n_layers, n_types, params.max_layers)

        return best_over_batches(table, params, make_batch, batch_size, total)

    return enumerate_all


def search_space(params: PlacementParams) -> int:
    """|T|^L of the real types and layers."""
    n_layers, n_types = real_sizes(params)
    return n_types**n_layers


@search_method
def exhaustive(params: PlacementParams, call: SearchCall, *, limit=DEFAULT_LIMIT, batch_size=BATCH_SIZE):
    """The true optimum over all T^L schedules; evaluations = T^L. Raises SearchSpaceTooLarge
    when T^L > limit (budget, when given, is taken as the limit; either is capped at 2^30, as
    schedule indices are int32). key is unused."""
    limit = min(int(limit if call.budget is None else call.budget), MAX_LIMIT)
    n_layers, n_types = real_sizes(params)
    total = n_types**n_layers
    if total > limit:
        raise SearchSpaceTooLarge(
            f"exhaustive search over |T|^L = {n_types}^{n_layers} = {total:,} schedules is above the "
            f"limit of {limit:,}; use --method genetic (or random) for an instance this large"
        )
    size = min(batch_size, max(MIN_BATCH_SIZE, 1 << (total - 1).bit_length()))
    args = (jnp.int32(n_layers), jnp.int32(n_types), jnp.int32(total))
    return compile_and_run("exhaustive", _enumerator(size), params, args, call, n_layers, total)
