"""Ready-made collective studies for the CLI and experiments: one collective under a policy,
every policy over a topology suite, and a data-parallel iteration (baseline vs a policy)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.model.batching import run_batched
from hps.collective.model.network import ideal_time, network_batch, network_params
from hps.collective.model.orders import baseline_orders, best_fixed_orders, policy_orders, roundrobin_orders
from hps.collective.model.simulator import simulate_allreduce, utilization
from hps.collective.model.themis import collective_orders
from hps.config.limits import chunks_bucket
from hps.config.loaders import load_catalog, load_network
from hps.config.paths import resolve_topology
from hps.config.types import Network, ResourceType, Workload
from hps.errors import ConfigError
from hps.studies.iteration import iteration_time

SUITE_POLICIES = (
    ("baseline", False),
    ("baseline", True),
    ("themis", False),
    ("themis", True),
    ("roundrobin", True),
    ("best-fixed", True),
)


def single_allreduce(network: Network, total_bytes: float, chunks: int, policy: str, scf: bool, orders=None):
    """({"time", "ideal_time", "utilization", "busy", "orders"}, SimResult) of one All-Reduce.

    total_bytes in bytes, 1 ≤ chunks ≤ MAX_CHUNKS. orders: (≥ chunks, 4) padded orders to use
    instead of the named policy's (e.g. a learned policy's). The simulation runs over
    chunks_bucket(chunks) padded chunks (256 up to 256 chunks, 1,024 up to 1,024). The payload
    lists the real dimensions only (0-based), one list per chunk."""
    net = network_params(network)
    if orders is None:
        orders = policy_orders(policy, network, total_bytes, chunks, scf=scf)
    rows = chunks_bucket(chunks)
    orders = np.asarray(orders)[:rows]  # rows past the chunk count are never read
    if orders.shape[0] < rows:
        orders = np.pad(orders, ((0, rows - orders.shape[0]), (0, 0)), mode="edge")
    result = jax.device_get(simulate_allreduce(net, total_bytes, chunks, orders, scf, max_chunks=rows))
    n_dims = len(network.dimensions)
    real_orders = [[int(d) for d in row if d < n_dims] for row in np.asarray(orders)[:chunks]]
    per_chunk = ("phase_start", "phase_end", "phase_dim", "chunk_end")
    chunk_result = result.replace(**{name: getattr(result, name)[:chunks] for name in per_chunk})
    payload = {
        "time": float(result.time),
        "ideal_time": float(ideal_time(net, total_bytes)),
        "utilization": float(utilization(net, total_bytes, result.time)),
        "busy": [float(b) for b in np.asarray(result.busy)[:n_dims]],
        "orders": real_orders,
    }
    return payload, chunk_result


def suite(paths, total_bytes: float, chunks: int) -> dict:
    """Utilization of every (policy, discipline) of SUITE_POLICIES on each network file, all
    networks of a dimension count as one batch per column (utilization_grid)."""
    networks = [load_network(path) for path in paths]
    columns = [f"{p}+{'scf' if s else 'fifo'}" for p, s in SUITE_POLICIES]
    grid = utilization_grid(networks, [total_bytes], chunks, columns)
    rows = [
        {"network": network.name, **{c: float(grid[c][i, 0]) for c in columns}} for i, network in enumerate(networks)
    ]
    mean = {c: float(np.mean([r[c] for r in rows])) for c in columns}
    return {"size": total_bytes, "chunks": chunks, "columns": columns, "networks": rows, "mean": mean}


def utilization_grid(
    networks: Sequence[Network], sizes_bytes: Sequence[float], chunks: int, columns: Sequence[str]
) -> dict[str, np.ndarray]:
    """{column: (len(networks), len(sizes_bytes)) utilization T_ideal / T} of one All-Reduce of
    each size (bytes) in `chunks` chunks on each network, for columns "POLICY+DISCIPLINE"
    (POLICY: baseline, themis, roundrobin, best-fixed; DISCIPLINE: fifo, scf). One jitted call,
    vmapped over networks and sizes, per column and number of dimensions, run as
    batching.run_batched decides (one device call on an accelerator, parts on CPU threads); the
    chunk arrays have exactly `chunks` rows (1 ≤ chunks ≤ MAX_CHUNKS), so the jit cache serves
    every size, latency and bandwidth of a shape."""
    sizes = jnp.asarray(sizes_bytes, jnp.float32)
    groups: dict[int, list[int]] = {}
    for i, network in enumerate(networks):
        groups.setdefault(len(network.dimensions), []).append(i)
    out = {column: np.zeros((len(networks), len(sizes_bytes))) for column in columns}
    for n_dims, where in groups.items():
        batch = network_batch([networks[i] for i in where], max_dims=n_dims)
        for column in columns:
            policy, discipline = column.split("+")
            call = partial(_utilization_grid, sizes=sizes, scf=jnp.asarray(discipline == "scf"), policy=policy)
            grid = run_batched(partial(call, chunks=int(chunks)), batch)
            out[column][where] = np.asarray(grid, np.float64)
    return out


@partial(jax.jit, static_argnames=("policy", "chunks"))
def _utilization_grid(nets, sizes, scf, policy: str, chunks: int):
    """(networks, sizes) utilization of `policy` under discipline scf (traced bool)."""

    def one(net, size):
        if policy == "baseline":
            orders = baseline_orders(net, chunks)
        elif policy == "themis":
            orders = collective_orders(net.size, net.bandwidth, size, chunks, True, chunks)[0]
        elif policy == "roundrobin":
            orders = roundrobin_orders(net, chunks)
        elif policy == "best-fixed":
            orders = best_fixed_orders(net, size, chunks, scf, chunks)[0]
        else:
            raise ValueError(f"unknown policy {policy!r}")
        time = simulate_allreduce(net, size, chunks, orders, scf, max_chunks=chunks).time
        return utilization(net, size, time)

    return jax.vmap(lambda net: jax.vmap(lambda size: one(net, size))(sizes))(nets)


def compute_resource(
    catalog: str, resource: str, *, catalog_flag: str = "--catalog", resource_flag: str = "--resource"
) -> ResourceType:
    """The resource type named `resource` in the catalogue `catalog` (a shipped name or a file):
    the type whose units compute a data-parallel iteration. ConfigError names the flag."""
    loaded = load_catalog(resolve_topology(catalog, "catalogs", catalog_flag))
    if resource not in loaded.names:
        raise ConfigError(
            resource_flag, "resource", f"unknown type {resource!r}; {loaded.name} has {', '.join(loaded.names)}"
        )
    return loaded.resources[loaded.index(resource)]


def iteration(
    network: Network,
    workload: Workload,
    resource: ResourceType,
    *,
    batch_per_npu: float,
    chunks: int,
    policy: str,
    dense_only: bool,
) -> dict:
    """Iteration times (s) of data-parallel `workload` under the baseline and under `policy`."""
    net = network_params(network)
    results = {
        name: iteration_time(
            net,
            workload,
            resource,
            batch_per_npu=batch_per_npu,
            chunks=chunks,
            policy=name,
            scf=name != "baseline",
            dense_only=dense_only,
        )
        for name in dict.fromkeys(("baseline", policy))
    }
    base, other = results["baseline"], results[policy]
    return {
        "workload": workload.name,
        "network": network.name,
        "resource": resource.name,
        "batch_per_npu": batch_per_npu,
        "policies": {name: vars(r) for name, r in results.items()},
        "speedup": base.iteration / other.iteration if other.iteration > 0 else 1.0,  # 0 s both: no work
    }
