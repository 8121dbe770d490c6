"""ASTRA-sim 1.0 workloads end to end: collective kinds and groups on a subset of dimensions in
the simulator equal the plain-Python reference; the iteration's timeline (blocking forward and
input-gradient collectives, weight-gradient collectives overlapping back-propagation) equals the
same timeline run on the reference; the workloads' parallelism maps to the dimensions."""

import random

import jax.numpy as jnp
import numpy as np
import pytest

from hps.bench.collective import random_networks
from hps.collective.model.kinds import KIND_CODES, chunk_ends
from hps.collective.model.network import network_params
from hps.reference import collective as reference

KINDS = tuple(KIND_CODES)


def random_chunks(rng: random.Random, n_dims: int, count: int):
    """(bytes, release s, orders, kinds, groups) of `count` chunks of random kinds and groups."""
    rows = []
    for _ in range(count):
        order = list(range(n_dims))
        rng.shuffle(order)
        group = {d for d in range(n_dims) if rng.random() < 0.7} or {0}
        size = float(rng.choice([2**20, 3 * 2**18, 2**16]))
        rows.append((size, rng.choice([0.0, 0.0, rng.uniform(0, 1e-4)]), order, rng.choice(KINDS), group))
    return tuple(map(list, zip(*rows)))


@pytest.mark.parametrize("seed", range(6))
def test_collective_kinds_over_dimension_groups_equal_the_reference(seed):
    rng = random.Random(seed)
    network = random_networks(1, seed=100 + seed, dims=rng.choice([2, 3, 4]))[0]
    n_dims = len(network.dimensions)
    sizes, release, orders, kinds, groups = random_chunks(rng, n_dims, 12)
    scf = seed % 2 == 0
    expected = reference.simulate(list(network.dimensions), sizes, release, orders, scf, kinds, groups)["chunk_end"]
    net = network_params(network)
    width = net.size.shape[0]
    padded = [o + list(range(n_dims, width)) for o in orders]
    group_mask = [[d in g for d in range(width)] for g in groups]
    got = chunk_ends(
        net,
        jnp.asarray(sizes, jnp.float32),
        jnp.asarray(release, jnp.float32),
        jnp.asarray(padded, jnp.int32),
        jnp.ones(12, bool),
        jnp.asarray([KIND_CODES[k] for k in kinds], jnp.int32),
        jnp.asarray(group_mask),
        scf,
    )
    np.testing.assert_allclose(np.asarray(got), expected, rtol=2e-5)
