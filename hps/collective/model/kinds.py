"""Collectives other than the All-Reduce, and collectives over a subset of the dimensions, in
the event-driven simulator (docs/collective-model.md, "Collective kinds").

Every chunk carries a kind and the dimensions its group spans. A dimension outside the group
counts as size 1 for that chunk (it takes no part, as a padded dimension), so a model-parallel
collective over the first dimension and a data-parallel one over the others share one
simulation and one network. Per kind, on each group dimension d of size P_d in the chunk's
order, with s the data the phase enters with (bytes), B'_d one lane's bandwidth and a_d the
latency per step:

- ALL_REDUCE: Reduce-Scatter s·(P−1)/P/B' (s ← s/P), then All-Gather back in reverse, s·(P−1)/B'.
- REDUCE_SCATTER: the All-Reduce's Reduce-Scatter half alone (chunk bytes: its input).
- ALL_GATHER: the All-Reduce's All-Gather half alone (chunk bytes: its output).
- ALL_TO_ALL: one exchange per dimension, each of the whole chunk: s·(P−1)/P/B', s unchanged
  (every NPU keeps 1/P of what it holds and sends the rest, dimension by dimension).

Each phase adds steps_d·a_d. Shapes as in hps.collective.model.simulator: C chunks, D dims.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.collective.model.network import NetworkParams
from hps.collective.model.simulator import phase_table, run_decisions

ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL = 0, 1, 2, 3
KIND_CODES = {"ALLREDUCE": ALL_REDUCE, "REDUCESCATTER": REDUCE_SCATTER, "ALLGATHER": ALL_GATHER, "ALLTOALL": ALL_TO_ALL}
"""ASTRA-sim 1.0's collective names -> kind codes."""


def kind_table(net: NetworkParams, chunk_bytes, orders, chunk_mask, kind, group):
    """PhaseTable (C, 2D) of chunks of any kind. chunk_bytes (C,) bytes; orders (C, D) int32;
    chunk_mask (C,) bool; kind (C,) int32 (KIND_CODES); group (C, D) bool, the dimensions each
    chunk's collective spans."""
    halves = (kind != ALL_GATHER, (kind == ALL_REDUCE) | (kind == ALL_GATHER))
    return phase_table(net, chunk_bytes, orders, chunk_mask, (group, *halves, kind == ALL_TO_ALL))


@jax.jit
def chunk_ends(net: NetworkParams, chunk_bytes, release, orders, chunk_mask, kind, group, scf):
    """(C,) s: when each chunk's last phase ends (its release when it has none; 0 if padded), all
    chunks simulated together on `net` (arguments as kind_table; release (C,) s; scf traced)."""
    chunk_mask = chunk_mask.astype(bool)
    table = kind_table(
        net, chunk_bytes.astype(jnp.float32), orders.astype(jnp.int32), chunk_mask, kind.astype(jnp.int32), group
    )
    release = jnp.where(chunk_mask, release, 0.0).astype(jnp.float32)
    start = run_decisions(table, release, jnp.asarray(scf).astype(bool), net.in_flight, net.lanes)
    active = table.dim >= 0
    end = jnp.max(jnp.where(active, start + table.duration, 0.0), axis=1)
    return jnp.where(jnp.any(active, axis=1), end, release)
