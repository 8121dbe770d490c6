"""`hps bench collective`: simulated collectives/s of the jitted, vmapped event-driven simulator
vs the plain-Python reference, on the same 1,024 random networks × 64 chunks, in one run.

Themis orders and SCF on both sides; orders are computed once, outside the timed region, and
given to both. The jnp side batches networks by their number of dimensions (one vmapped batch
per group, each padded only to its own D): the decision loop runs C·2·D steps, so padding a
1-D network to 4 dimensions would quadruple its work. How each group runs is
hps.collective.model.batching's choice: one device call on an accelerator, parts of at most
128 networks on one thread per core on CPU (the reference, plain Python, uses one core).
Compile time is reported separately and excluded; the device and the load average (the
machine's runnable processes, 1-minute mean) are reported beside the rates.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from hps.bench.timing import compile_seconds, side_by_side, timed_calls
from hps.collective.model.batching import on_accelerator, prepared_call
from hps.collective.model.network import NetworkParams, network_batch
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


def batched_simulation(nets: list[Network], chunks: int, total_bytes: float, pool: ThreadPoolExecutor):
    """(by_dims, groups [(NetworkParams, orders)], simulate_all) of the jnp side: Themis orders
    and SCF, one vmapped batch per group of equal D, run as batching.prepared_call decides
    (CPU parts on `pool`); simulate_all() -> completion times per group, (group size,) s each."""
    orders_of = jax.jit(jax.vmap(lambda n: collective_orders(n.size, n.bandwidth, total_bytes, chunks, True)[0]))
    simulate = jax.jit(
        jax.vmap(lambda n, o: simulate_allreduce(n, total_bytes, chunks, o, True, max_chunks=chunks).time)
    )
    by_dims = list(batches_by_dims(nets).values())
    groups = [(batch, orders_of(batch)[:, :chunks]) for _, batch in by_dims]
    calls = [prepared_call(simulate, group, pool) for group in groups]

    def simulate_all() -> list:
        return [call() for call in calls]

    return by_dims, groups, simulate_all


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
        _, _, simulate_all = batched_simulation(random_networks(networks, dims=dims), chunks, total_bytes, pool)
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
    by_dims, groups, simulate_all = batched_simulation(nets, chunks, total_bytes, pool)
    compile_s = compile_seconds(simulate_all)
    jax_times = np.zeros(networks)
    for (indices, _), times in zip(by_dims, simulate_all()):
        jax_times[indices] = times
    cases: list = [None] * networks
    for (indices, _), (_, group_orders) in zip(by_dims, groups):
        for i, rows in zip(indices, np.asarray(group_orders).tolist()):
            cases[i] = (nets[i].dimensions, rows)  # group orders have exactly D columns

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
