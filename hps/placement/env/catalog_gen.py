"""Random resource catalogues perturbed around `cloud-2024` (pure, keyed jnp).

Each of the T type slots copies one of cloud-2024's types (cpu, t4, v100, a100) —
the first four slots a random permutation of them, the rest random repeats — then perturbs its figures by
log-uniform factors and finally shuffles the real slots, so type order carries no information.

The network of a type is its base type's network with all bandwidths scaled by one factor and all
latencies by another. Themis orders do not change under a uniform bandwidth scale, so the
All-Reduce table is exact from the base tables: alpha = alpha_base / bandwidth_scale (s/byte),
beta = beta_base · latency_scale (s). That makes thousands of catalogues cost nothing beyond the
four base tables, computed once with `hps.costmodel.schedule.allreduce.allreduce_table`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Job, Layer, Workload
from hps.costmodel.schedule.allreduce import allreduce_table
from hps.costmodel.schedule.params import TYPE_FIELDS, build_params

BASE_CATALOG = "cloud-2024"
CHUNKS = 64  # the default collective chunks; generated jobs use Themis with 64 chunks
PERTURB_LOW, PERTURB_HIGH = 0.5, 2.0  # log-uniform factor range of every perturbed figure
MAX_EFFICIENCY = 0.95


@functools.lru_cache(maxsize=4)
def base_tables(max_replicas: int) -> dict[str, np.ndarray]:
    """cloud-2024's types as numpy arrays (B,) / (B, D), with their All-Reduce tables
    alpha, beta (B, K) for a Themis collective of CHUNKS chunks (K = max_replicas)."""
    catalog = load_catalog(resolve_topology(BASE_CATALOG, "catalogs", "--catalog"))
    layer = Layer("probe", "dense", 1.0, 1.0, 0.0, 1.0, 0.0, 0.0)
    job = Job(batch=1.0, throughput=1.0, samples=1.0, collective="themis", chunks=CHUNKS)
    with jax.ensure_compile_time_eval():  # concrete numbers even when first called under a trace
        params = build_params(Workload("probe", (layer,)), catalog, job, max_replicas=max_replicas)
        alpha, beta = jax.jit(allreduce_table)(params)
    fields = TYPE_FIELDS + ("max_units", "net_size", "net_bandwidth", "net_latency", "net_algorithm")
    tables = {name: np.asarray(getattr(params, name)) for name in fields}
    tables["alpha"], tables["beta"] = np.asarray(alpha), np.asarray(beta)
    return tables


def log_uniform(key, shape, low, high):
    """Samples in [low, high] with uniform log (float32)."""
    return jnp.exp(jax.random.uniform(key, shape, minval=jnp.log(low), maxval=jnp.log(high)))


def base_choice(key, n_types, max_types: int, n_base: int):
    """(max_types,) int32 base type per slot: real slots first, in random order; the first
    min(n_types, n_base) real slots hold distinct bases."""
    k_perm, k_extra, k_shuffle = jax.random.split(key, 3)
    distinct = jax.random.permutation(k_perm, n_base)
    extra = jax.random.randint(k_extra, (max(max_types - n_base, 0),), 0, n_base)
    bases = jnp.concatenate([distinct, extra])[:max_types]
    slot = jnp.arange(max_types)
    sort_key = jnp.where(slot < n_types, jax.random.uniform(k_shuffle, (max_types,)), 2.0 + slot)
    return bases[jnp.argsort(sort_key)].astype(jnp.int32)


def random_catalog(
    key, n_types, max_types: int, max_replicas: int, caps=(0.25, 1.0), memory=(1.0, 1.0)
) -> dict[str, jnp.ndarray]:
    """Fields of PlacementParams for a random catalogue of `n_types` (traced) real types padded
    to `max_types`, plus the exact All-Reduce tables alpha, beta (T, K).

    Per type: price, peak FLOP/s, both efficiencies (capped at 0.95), mem/io/nic bandwidths and
    memory × log-uniform [0.5, 2]; memory × a further log-uniform factor in `memory` (low, high),
    (1, 1) by default; network bandwidths × one and latencies × another such factor; max_units =
    base cap × log-uniform `caps` (low, high) ≤ 1, default [1/4, 1], rounded, at least 1. The
    ranges may be traced. Padded slots carry the fill values of `build_params` (1.0, max_units 0,
    size-1 network dimensions)."""
    tables = base_tables(max_replicas)
    n_base = tables["peak_flops"].shape[0]
    k_base, k_fields, k_net, k_units = jax.random.split(key, 4)
    k_memory = jax.random.fold_in(key, 5)  # a stream of its own: the other draws stay as they were
    base = base_choice(k_base, n_types, max_types, n_base)
    real = jnp.arange(max_types) < n_types
    factors = log_uniform(k_fields, (len(TYPE_FIELDS), max_types), PERTURB_LOW, PERTURB_HIGH)
    out = {}
    for i, name in enumerate(TYPE_FIELDS):
        value = jnp.asarray(tables[name])[base] * factors[i]
        if name.startswith("efficiency"):
            value = jnp.minimum(value, MAX_EFFICIENCY)
        if name == "memory":
            value = value * log_uniform(k_memory, (max_types,), memory[0], memory[1])
        out[name] = jnp.where(real, value, 1.0)
    bw_scale, lat_scale = log_uniform(k_net, (2, max_types), PERTURB_LOW, PERTURB_HIGH)
    cap = jnp.asarray(tables["max_units"])[base].astype(jnp.float32)
    units = jnp.round(cap * log_uniform(k_units, (max_types,), caps[0], caps[1]))
    out["max_units"] = jnp.where(real, jnp.clip(units, 1.0, cap), 0).astype(jnp.int32)
    out["type_mask"] = real
    out.update(_networks(tables, base, real, bw_scale, lat_scale))
    return out


def _networks(tables, base, real, bw_scale, lat_scale) -> dict[str, jnp.ndarray]:
    """Scaled base networks (T, D) and their All-Reduce tables (T, K); padded slots get size-1
    dimensions (no collective)."""
    real_col = real[:, None]
    return dict(
        net_size=jnp.where(real_col, jnp.asarray(tables["net_size"])[base], 1),
        net_bandwidth=jnp.where(real_col, jnp.asarray(tables["net_bandwidth"])[base] * bw_scale[:, None], 1.0),
        net_latency=jnp.where(real_col, jnp.asarray(tables["net_latency"])[base] * lat_scale[:, None], 0.0),
        net_algorithm=jnp.where(real_col, jnp.asarray(tables["net_algorithm"])[base], 0),
        alpha=jnp.where(real_col, jnp.asarray(tables["alpha"])[base] / bw_scale[:, None], 0.0),
        beta=jnp.where(real_col, jnp.asarray(tables["beta"])[base] * lat_scale[:, None], 0.0),
    )
