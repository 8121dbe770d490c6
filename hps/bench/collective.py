"""`hps bench collective`: simulated collectives/s of the jitted, vmapped event-driven simulator
vs the plain-Python reference, on the same 1,024 random networks × 64 chunks, in one run.

Themis orders and SCF on both sides; orders are computed once, outside the timed region, and
given to both. The jnp side simulates each network without its dimensions of size 1 (they have
no phase; `network.phase_dims`) and batches networks by the number D of dimensions left (one
vmapped batch per group, each padded only to its own D): the decision loop runs C·2·D steps, so
padding a 1-D network to 4 dimensions would quadruple its work; a network with none left
completes at 0. How the groups run is hps.collective.model.batching's choice: one device call
per group on an accelerator, on CPU parts of at most 128 networks, every group's parts at once
on one thread per core (the reference, plain Python, uses one core).
Compile time is reported separately and excluded; the device and the load average (the
machine's runnable processes, 1-minute mean) are reported beside the rates.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from hps.bench.timing import compile_seconds, side_by_side, timed_calls
from hps.collective.model.batching import on_accelerator, prepared_calls
from hps.collective.model.network import NetworkParams, network_batch, phase_dims
from hps.collective.model.simulator import simulate_allreduce
from hps.collective.model.themis import collective_orders
from hps.config.machine import cpu_cores, load_average
from hps.config.types import ALGORITHMS, Dimension, Network
from hps.config.validation import GIB
from hps.reference import collective as reference


def random_networks(count: int, seed: int = 0, dims: int | None = None) -> list[Network]:
    """Networks of 1–4 dimensions (all `dims` when given), sizes 1–16, 1–1000 GiB/s, 0–10 µs per
    step, any algorithm."""
    rng = np.random.default_rng(seed)
    networks = []
    for i in range(count):
        n_dims = int(rng.integers(1, 5))
        network_dims = tuple(
            Dimension(
                size=int(rng.integers(1, 17)),
                bandwidth=float(rng.uniform(1, 1000)) * GIB,
                latency=float(rng.uniform(0, 10e-6)),
                algorithm=str(rng.choice(ALGORITHMS)),
            )
            for _ in range(dims or n_dims)
        )
        networks.append(Network(f"random-{i}", network_dims))
    return networks


def batches_by_dims(nets: list[Network]) -> dict[int, tuple[list[int], NetworkParams]]:
    """{D: (indices into nets, NetworkParams padded to D)} grouping networks of D dimensions."""
    groups: dict[int, list[int]] = {}
    for i, net in enumerate(nets):
        groups.setdefault(len(net.dimensions), []).append(i)
    out = {}
    for n_dims, indices in sorted(groups.items()):
        out[n_dims] = (indices, network_batch([nets[i] for i in indices], max_dims=n_dims))
    return out


def network_orders(nets: list[Network], chunks: int, total_bytes: float) -> list[np.ndarray]:
    """Themis's orders (chunks, D) int32 of each network (SCF), computed in one vmapped batch
    per group of equal D."""
    orders_of = jax.jit(jax.vmap(lambda n: collective_orders(n.size, n.bandwidth, total_bytes, chunks, True)[0]))
    orders: list = [None] * len(nets)
    for indices, batch in batches_by_dims(nets).values():
        for i, rows in zip(indices, np.asarray(orders_of(batch)[:, :chunks])):
            orders[i] = rows  # exactly D columns
    return orders


def batched_simulation(nets: list[Network], orders: list[np.ndarray], chunks: int, total_bytes: float, pool):
    """simulate_all() -> (len(nets),) completion times (s) of the jnp side, SCF, the given
    orders: networks without their dimensions of size 1, one vmapped batch per group of equal D
    left, run as batching.prepared_calls decides (CPU parts on `pool`)."""
    simulate = jax.jit(
        jax.vmap(lambda n, o: simulate_allreduce(n, total_bytes, chunks, o, True, max_chunks=chunks).time)
    )
    compact = [
        phase_dims(net, rows) if any(d.size > 1 for d in net.dimensions) else None for net, rows in zip(nets, orders)
    ]
    kept = [i for i, pair in enumerate(compact) if pair is not None]
    grouped = batches_by_dims([compact[i][0] for i in kept])
    by_dims = [(n_dims, [kept[j] for j in indices]) for n_dims, (indices, _) in grouped.items()]
    batches = [
        (params, np.stack([compact[i][1] for i in indices]))
        for (_, indices), (_, params) in zip(by_dims, grouped.values())
    ]
    run_all = prepared_calls(simulate, batches, pool, costs=[float(n_dims) for n_dims, _ in by_dims])

    def simulate_all() -> np.ndarray:
        times = np.zeros(len(nets))
        for (_, indices), group_times in zip(by_dims, run_all()):
            times[indices] = group_times
        return times

    return simulate_all


def machine() -> dict:
    """{"device", "backend", "load_average"}: where the jnp side ran and how loaded the machine
    was (1-minute load average; 0 where the platform has none)."""
    return {"device": str(jax.devices()[0]), "backend": jax.default_backend(), "load_average": load_average()}


def simulator_rate(
    networks: int = 256,
    chunks: int = 64,
    dims: int | None = None,
    total_bytes: float = float(GIB),
    min_seconds: float = 1.0,
) -> dict:
    """{"collectives_per_s", "compile_s", ...} of the jnp side alone on `networks` random
    networks (of `dims` dimensions when given: one group, one compile)."""
    threads = cpu_cores()
    with ThreadPoolExecutor(threads) as pool:
        nets = random_networks(networks, dims=dims)
        simulate_all = batched_simulation(nets, network_orders(nets, chunks, total_bytes), chunks, total_bytes, pool)
        compile_s, seconds = timed_calls(simulate_all, min_seconds=min_seconds)
    return {
        "collectives_per_s": networks / seconds,
        "compile_s": compile_s,
        "networks": networks,
        "chunks": chunks,
        "dims": dims,
        "threads": threads,
    }


def run(networks: int = 1024, chunks: int = 64, total_bytes: float = float(GIB), min_seconds: float = 2.0) -> dict:
    """{"jax_per_s", "reference_per_s", "speedup", "compile_s", ...} (simulated collectives/s)."""
    nets = random_networks(networks)
    threads = cpu_cores()
    pool = ThreadPoolExecutor(threads)
    orders = network_orders(nets, chunks, total_bytes)
    simulate_all = batched_simulation(nets, orders, chunks, total_bytes, pool)
    compile_s = compile_seconds(simulate_all)
    jax_times = simulate_all()
    cases = [(net.dimensions, rows.tolist()) for net, rows in zip(nets, orders)]  # the whole networks

    reference_times: dict[int, float] = {}

    def reference_one(i: int) -> None:
        dims, orders = cases[i]
        reference_times[i] = reference.allreduce(list(dims), total_bytes, chunks, orders, True)["time"]

    jax_per_s, reference_per_s = side_by_side(
        simulate_all, networks, reference_one, range(networks), seconds=2 * min_seconds
    )
    pool.shutdown()
    ran = np.asarray(sorted(reference_times))
    checked = np.asarray([reference_times[i] for i in ran])
    difference = np.abs(jax_times[ran] - checked)
    max_rel_diff = float(np.max(np.where(difference > 0, difference / np.maximum(checked, 1e-30), 0.0)))
    return {
        "jax_per_s": jax_per_s,
        "reference_per_s": reference_per_s,
        "speedup": jax_per_s / reference_per_s,
        "compile_s": compile_s,
        "max_rel_diff": max_rel_diff,  # jnp vs reference completion times on the networks both ran
        "reference_networks": len(ran),
        "networks": networks,
        "chunks": chunks,
        "threads": threads,
        "one_call_per_group": on_accelerator(),
        **machine(),
    }
