"""All-Reduces from Python: one on a network under a scheduling policy (what `hps collective
--json` prints), and a batched form that simulates many networks in one vmapped call per
dimension count (docs/collective-model.md)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence

import numpy as np

from hps.api.checks import check_choice, check_count, check_positive
from hps.api.loading import load_network
from hps.config.types import Network
from hps.errors import ConfigError

POLICIES = ("baseline", "themis", "roundrobin", "best-fixed", "learned")
"""Scheduling policies: the baseline (every chunk in dimension order), Themis, round-robin, the
best fixed order, and a trained collective policy (with a checkpoint)."""
BATCH_POLICIES = POLICIES[:-1]
INTRA = ("fifo", "scf")
"""Intra-dimension disciplines: first in, first out, or smallest chunk first."""


@dataclasses.dataclass(frozen=True)
class AllReduce:
    """One simulated All-Reduce: time and ideal_time (s), utilization (ideal/time), busy (s per
    dimension, D), orders (the dimension order of each chunk, C lists of D), and timeline: the
    simulator's per-chunk phases (`SimResult`: phase_start, phase_end, phase_dim (C, 2D),
    chunk_end (C,)), None for the batched form."""

    network: str
    size_bytes: float
    chunks: int
    policy: str
    intra: str
    time: float
    ideal_time: float
    utilization: float
    busy: tuple[float, ...]
    orders: tuple[tuple[int, ...], ...]
    timeline: object | None = None

    def to_dict(self) -> dict:
        """The document `hps collective --json` prints: time, ideal_time, utilization, busy, orders."""
        return {
            "time": self.time,
            "ideal_time": self.ideal_time,
            "utilization": self.utilization,
            "busy": list(self.busy),
            "orders": [list(order) for order in self.orders],
        }


def _checked(size_bytes, chunks, policy, intra, policies) -> tuple[float, int]:
    from hps.config.limits import MAX_CHUNKS
    from hps.config.ranges import check_in_range

    size = check_positive(size_bytes, "size_bytes")
    check_in_range(size, "collective_bytes", "size_bytes", "")
    chunks = check_count(chunks, "chunks", 1, MAX_CHUNKS)
    check_choice(policy, policies, "policy")
    check_choice(intra, INTRA, "intra")
    return size, chunks


def allreduce(
    network: str | Network,
    size_bytes: float,
    chunks: int = 64,
    policy: str = "themis",
    intra: str = "scf",
    checkpoint: str | None = None,
) -> AllReduce:
    """One All-Reduce of `size_bytes` bytes in `chunks` equal chunks on `network` (a shipped name,
    a TOML path or a `Network`), ordered by `policy` (see POLICIES; "learned" needs the
    `checkpoint` folder of a trained collective policy), each dimension serving its chunks by
    `intra` (see INTRA)."""
    from hps.studies import collectives as studies

    net = load_network(network, source="network")
    size, chunks = _checked(size_bytes, chunks, policy, intra, POLICIES)
    orders = None
    if policy == "learned":
        if checkpoint is None:
            raise ConfigError("checkpoint", "", "policy 'learned' needs the folder of a trained collective policy")
        from hps.collective.agent.checkpoint import checkpoint_orders

        orders = checkpoint_orders(checkpoint, net, size, chunks)
    payload, result = studies.single_allreduce(net, size, chunks, policy, intra == "scf", orders=orders)
    return AllReduce(
        network=net.name,
        size_bytes=size,
        chunks=chunks,
        policy=policy,
        intra=intra,
        time=payload["time"],
        ideal_time=payload["ideal_time"],
        utilization=payload["utilization"],
        busy=tuple(payload["busy"]),
        orders=tuple(tuple(order) for order in payload["orders"]),
        timeline=result,
    )


def allreduce_batch(
    networks: Sequence[str | Network],
    size_bytes: float,
    chunks: int = 64,
    policy: str = "themis",
    intra: str = "scf",
) -> list[AllReduce]:
    """`allreduce` on each of `networks` (any iterable), in their order, simulated as one jitted, vmapped call per
    number of dimensions (one large call suits an accelerator; compile once per dimension count).
    The results carry no timeline."""
    import jax

    from hps.collective.model.network import ideal_time, network_batch
    from hps.collective.model.orders import policy_orders
    from hps.collective.model.simulator import simulate_allreduce
    from hps.collective.model.themis import padded_chunks

    if isinstance(networks, (str, os.PathLike, Network)) or not isinstance(networks, Iterable):
        raise ConfigError("networks", "", "must be a non-empty sequence of networks (names, paths or Network)")
    networks = tuple(networks)  # any iterable, a generator read once
    if not networks:
        raise ConfigError("networks", "", "must be a non-empty sequence of networks (names, paths or Network)")
    nets = [load_network(n, source=f"networks[{i}]") for i, n in enumerate(networks)]
    size, chunks = _checked(size_bytes, chunks, policy, intra, BATCH_POLICIES)
    rows, scf = padded_chunks(chunks, None), intra == "scf"

    def one(net):
        orders = policy_orders(policy, net, size, chunks, scf=scf, max_chunks=rows)
        result = simulate_allreduce(net, size, chunks, orders, scf, max_chunks=rows)
        return result.time, ideal_time(net, size), result.busy, orders

    out: list[AllReduce | None] = [None] * len(nets)
    by_dims: dict[int, list[int]] = {}
    for i, net in enumerate(nets):
        by_dims.setdefault(len(net.dimensions), []).append(i)
    for dims, where in by_dims.items():
        time, ideal, busy, orders = jax.device_get(jax.jit(jax.vmap(one))(network_batch([nets[i] for i in where])))
        for row, i in enumerate(where):
            t, best = float(time[row]), float(ideal[row])
            real = [[int(d) for d in order if d < dims] for order in np.asarray(orders[row])[:chunks]]
            out[i] = AllReduce(
                network=nets[i].name,
                size_bytes=size,
                chunks=chunks,
                policy=policy,
                intra=intra,
                time=t,
                ideal_time=best,
                utilization=best / t if t > 0 else 1.0,
                busy=tuple(float(b) for b in np.asarray(busy[row])[:dims]),
                orders=tuple(tuple(order) for order in real),
            )
    return out
