"""Random instances for the model-vs-reference tests (plain Python, seeded): placement
instances (workload, catalogue, job) and All-Reduce cases (network, bytes, chunks), with the
random chunk orders and the simulator-vs-reference check the collective tests share.

A plain helper module, not a test module: fixtures live in conftest.py."""

from __future__ import annotations

import math
import random

import jax.numpy as jnp
import numpy as np
import pytest

from hps.config.types import (
    ALGORITHMS,
    Catalog,
    Dimension,
    Job,
    Layer,
    Network,
    ResourceType,
    Workload,
)

GiB = 2.0**30


def random_type_network(rng: random.Random, name: str) -> Network:
    """A resource type's 1–3-dimensional network."""
    dims = []
    for _ in range(rng.randint(1, 3)):
        dims.append(
            Dimension(
                size=rng.choice([1, 2, 3, 4, 8]),
                bandwidth=rng.uniform(1, 300) * GiB,
                latency=rng.uniform(0, 10e-6),
                algorithm=rng.choice(ALGORITHMS),
            )
        )
    return Network(name, tuple(dims))


def random_resource(rng: random.Random, name: str) -> ResourceType:
    network = random_type_network(rng, name)
    return ResourceType(
        name=name,
        kind=rng.choice(["cpu", "gpu"]),
        peak_flops=rng.uniform(1, 300) * 1e12,
        efficiency_dense=rng.uniform(0.05, 0.6),
        efficiency_sparse=rng.uniform(0.005, 0.3),
        mem_bw=rng.uniform(50, 2000) * GiB,
        io_bw=rng.uniform(0.1, 4) * GiB,
        nic_bw=rng.uniform(1, 50) * GiB,
        memory=rng.uniform(8, 512) * GiB,
        price_per_hour=rng.uniform(0.2, 5.0),
        max_units=rng.randint(1, network.total_size),
        network=network,
    )


def random_layer(rng: random.Random, index: int) -> Layer:
    sparse = rng.random() < 0.3
    return Layer(
        name=f"l{index}",
        kind="sparse" if sparse else "dense",
        flops=rng.uniform(1e3, 1e8),
        mem_bytes=rng.uniform(1e3, 1e6),
        io_bytes=rng.choice([0.0, rng.uniform(1e2, 1e4)]),
        act_bytes=rng.uniform(1e2, 1e5),
        dense_param_bytes=0.0 if sparse else rng.choice([0.0, rng.uniform(1e4, 5e8)]),
        sparse_param_bytes=rng.uniform(1, 400) * GiB if sparse else 0.0,
    )


def random_instance(rng: random.Random, n_layers=None, n_types=None):
    """(workload, catalog, job) with a floor drawn so that some schedules fail on throughput."""
    n_layers = n_layers or rng.randint(1, 8)
    n_types = n_types or rng.randint(1, 4)
    workload = Workload("random", tuple(random_layer(rng, i) for i in range(n_layers)))
    catalog = Catalog("random", tuple(random_resource(rng, f"t{i}") for i in range(n_types)))
    job = Job(
        batch=float(rng.choice([256, 1024, 4096, 8192])),
        throughput=10 ** rng.uniform(2, 6),
        samples=10 ** rng.uniform(6, 10),
        collective=rng.choice(["baseline", "themis"]),
        chunks=rng.choice([1, 4, 16, 64]),
    )
    return workload, catalog, job


PAD = Dimension(1, 1.0, 0.0, "ring")


def random_network(rng: random.Random, min_dims: int = 1, max_dims: int = 4) -> Network:
    """min_dims–max_dims dimensions, sizes 1–16, 1–1000 GiB/s, 0–10 µs per step, every algorithm."""
    dims = []
    for _ in range(rng.randint(min_dims, max_dims)):
        size, bandwidth, latency = rng.randint(1, 16), rng.uniform(1, 1000) * GiB, rng.uniform(0, 10e-6)
        dims.append(Dimension(size, bandwidth, latency, rng.choice(ALGORITHMS)))
    return Network("random", tuple(dims))


def random_case(rng: random.Random, min_dims: int = 1, max_dims: int = 4):
    """(network, total bytes 1 KiB–4 GiB, chunks 1–128), both log-uniform."""
    total = math.exp(rng.uniform(math.log(1024), math.log(4 * GiB)))
    chunks = int(round(math.exp(rng.uniform(0, math.log(128)))))
    return random_network(rng, min_dims, max_dims), total, chunks


def padded(network: Network, width: int = 4) -> list[Dimension]:
    """The network's dimensions padded to `width` with size-1 rings."""
    return list(network.dimensions) + [PAD] * (width - len(network.dimensions))


def random_orders(rng: random.Random, n_cases: int, max_chunks: int):
    """(N, max_chunks, D) explicit random permutations, one per chunk."""
    rows = [[rng.sample(range(4), 4) for _ in range(max_chunks)] for _ in range(n_cases)]
    return jnp.asarray(np.array(rows, np.int32))


def assert_matches_reference(got, want, chunks):
    """Completion time and busy per dimension to 1e-5 relative; every phase's dimension exactly
    and its start and end to 1e-5 of the completion time."""
    scale = max(want["time"], 1e-30)
    assert float(got.time) == pytest.approx(want["time"], rel=1e-5, abs=1e-30)
    np.testing.assert_allclose(np.asarray(got.busy), want["busy"], rtol=1e-5, atol=1e-30)
    slots = {(c, s) for c in range(chunks) for s in range(got.phase_dim.shape[1]) if got.phase_dim[c, s] >= 0}
    assert slots == set(want["start"])
    assert (np.asarray(got.phase_dim)[chunks:] == -1).all()  # padded chunks take no part
    for (c, s), start in want["start"].items():
        assert int(got.phase_dim[c, s]) == want["dim"][c, s]
        assert abs(float(got.phase_start[c, s]) - start) <= 1e-5 * scale, (c, s)
        assert abs(float(got.phase_end[c, s]) - want["end"][c, s]) <= 1e-5 * scale, (c, s)
    chunk_end = np.asarray(got.chunk_end[:chunks])
    np.testing.assert_allclose(chunk_end, want["chunk_end"], rtol=1e-5, atol=1e-5 * scale)
