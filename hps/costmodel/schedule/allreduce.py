"""The stage synchronisation term allreduce_t(W, k) of the placement model (docs/placement-model.md).

k replicas fill the type's network dimension 1 first; the fluid time of the job's collective
policy is max_d load_d + Σ_d 2·steps_d·a_d. Orders do not depend on W, so
allreduce_t(W, k) = W·alpha[t, k] + beta[t, k] for W > 0: one (T, K) table serves every stage.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.collective.model.network import steps_per_phase_codes
from hps.collective.model.themis import collective_orders


def used_sizes(sizes, replicas):
    """P'_d = min(P_d, ⌈k / Π_{e<d} P'_e⌉): sizes (D,) int, replicas k int -> (D,) int32."""
    used = []
    filled = jnp.int32(1)
    for d in range(sizes.shape[0]):
        need = (replicas + filled - 1) // filled
        p = jnp.minimum(sizes[d], need)
        used.append(p)
        filled = filled * p
    return jnp.stack(used).astype(jnp.int32)


def allreduce_coefficients(sizes, bandwidths, latencies, algorithms, replicas, chunks, use_themis):
    """(alpha s/byte, beta s) of one network (D,) arrays for `replicas` k units."""
    used = used_sizes(sizes, replicas)
    _, loads = collective_orders(used, bandwidths, jnp.float32(1.0), chunks, use_themis)
    alpha = jnp.max(loads)
    beta = jnp.sum(2.0 * steps_per_phase_codes(algorithms, used) * latencies)
    return alpha, beta


def allreduce_table(params):
    """(alpha, beta), each (T, K): allreduce_t(W, k) = W·alpha[t, k−1] + beta[t, k−1]."""
    replicas = jnp.arange(1, params.max_replicas + 1, dtype=jnp.int32)

    def per_type(size, bandwidth, latency, algorithm):
        per_k = lambda k: allreduce_coefficients(  # noqa: E731
            size, bandwidth, latency, algorithm, k, params.chunks, params.use_themis
        )
        return jax.vmap(per_k)(replicas)

    return jax.vmap(per_type)(params.net_size, params.net_bandwidth, params.net_latency, params.net_algorithm)
