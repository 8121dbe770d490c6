"""Inter-dimension policies (docs/collective-model.md): Themis equals the reference greedy,
round-robin rotates, best-fixed is the best permutation, explicit lists are validated, and the
acceptance figures on the 8×8×8 switch network and the 2×8×2 ASTRA-sim sample.
"""

from __future__ import annotations

import itertools
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps import ConfigError
from hps.collective.model import (
    network_batch,
    network_params,
    policy_orders,
    simulate_allreduce,
    themis_orders,
    utilization,
)
from hps.collective.model import orders as policies
from hps.config import load_network
from hps.config.paths import TOPOLOGIES
from hps.config.types import Dimension, Network
from hps.reference import collective as reference
from tests.instances import GiB, padded, random_case

SWITCH_8X8X8 = TOPOLOGIES / "networks" / "3d-switch-8x8x8.toml"


def active_order(order, network: Network):
    """The dimensions of size > 1 in the order `order` visits them."""
    return [int(d) for d in order if d < len(network.dimensions) and network.dimensions[d].size > 1]


def test_themis_orders_equal_reference_greedy_on_random_networks():
    """400 random networks, sizes and chunk counts, one vmapped call; orders equal exactly.

    Bandwidths are continuous random numbers, so two dimensions' loads are never mathematically
    equal after the first chunk. (Where they are, as on identical dimensions, the float32 greedy
    and the float64 reference each round the tie their own way and may sort it differently.)
    """
    cases = [random_case(random.Random(f"themis-{i}")) for i in range(400)]
    nets = network_batch([n for n, _, _ in cases])
    sizes = jnp.asarray([s for _, s, _ in cases], jnp.float32)
    counts = jnp.asarray([c for _, _, c in cases], jnp.int32)
    got = np.asarray(jax.jit(jax.vmap(lambda n, s, c: themis_orders(n, s, c, 128)))(nets, sizes, counts))
    for k, (network, total, chunks) in enumerate(cases):
        want = reference.themis_orders(list(network.dimensions), total, chunks)
        assert [active_order(o, network) for o in got[k, :chunks]] == want, k


def two_dims(bandwidth_ratio):
    """P = 2 on both dimensions, B_2 = ratio · B_1. After chunk 1 (baseline order) the loads are
    s/B_1 on dimension 1 and s/(2·B_2) on dimension 2, so with B_2 < B_1/2 dimension 2 is the
    least loaded and gap_bytes = (s/B_1 − s/(2·B_2))·B_2 / (1/2) = s·(2·ratio − 1)."""
    b1 = 100 * GiB
    return Network("two", (Dimension(2, b1, 0.0, "ring"), Dimension(2, bandwidth_ratio * b1, 0.0, "ring")))


def test_themis_falls_back_to_baseline_order_when_gap_below_chunk_over_16():
    """gap_bytes = 0.9 · chunk/16 < chunk/16: the second chunk keeps the baseline order."""
    network = two_dims((1 + 0.9 / 16) / 2)
    orders = np.asarray(themis_orders(network_params(network), 1e6, 2, 2))
    assert orders[1, :2].tolist() == [0, 1]
    assert reference.themis_orders(list(network.dimensions), 1e6, 2) == [[0, 1], [0, 1]]


def test_themis_puts_least_loaded_dimension_first_when_gap_reaches_chunk_over_16():
    """gap_bytes = 1.1 · chunk/16: the second chunk starts on the less loaded dimension 2."""
    network = two_dims((1 + 1.1 / 16) / 2)
    orders = np.asarray(themis_orders(network_params(network), 1e6, 2, 2))
    assert orders[1, :2].tolist() == [1, 0]
    assert reference.themis_orders(list(network.dimensions), 1e6, 2) == [[0, 1], [1, 0]]


def test_themis_loads_reset_per_collective_and_first_chunk_is_baseline():
    """Every collective starts from zero loads: the first chunk (all loads 0) takes 0..D−1, and
    the same call twice gives the same orders."""
    net = network_params(load_network(SWITCH_8X8X8))
    first = np.asarray(policy_orders("themis", net, GiB, 64))
    again = np.asarray(policy_orders("themis", net, GiB, 64))
    assert first[0].tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(first, again)


def test_roundrobin_rotates_the_starting_dimension_among_active_dimensions():
    """Sizes (4, 1, 8, 2): active dimensions 0, 2, 3 rotate by chunk; dimension 1 comes last."""
    net = network_params(Network("rr", tuple(Dimension(p, GiB, 0.0, "ring") for p in (4, 1, 8, 2))))
    orders = np.asarray(policy_orders("roundrobin", net, GiB, 5, max_chunks=5))
    assert orders.tolist() == [[0, 2, 3, 1], [2, 3, 0, 1], [3, 0, 2, 1], [0, 2, 3, 1], [2, 3, 0, 1]]


@pytest.mark.parametrize("scf", [False, True])
def test_best_fixed_is_no_worse_than_every_fixed_permutation_and_the_baseline(scf):
    """The reference simulation of each of the D! permutations, on random small cases."""
    for k in range(6):
        network, total, chunks = random_case(random.Random(f"best-{k}"))
        chunks = min(chunks, 16)
        net = network_params(network)
        orders, perm = policies.best_fixed_orders(net, total, chunks, scf, 16)
        assert (np.asarray(orders) == np.asarray(perm)).all()
        dims = padded(network)
        times = {
            p: reference.allreduce(dims, total, chunks, [list(p)] * chunks, scf)["time"]
            for p in itertools.permutations(range(4))
        }
        best = reference.allreduce(dims, total, chunks, [np.asarray(perm).tolist()] * chunks, scf)["time"]
        assert best <= min(times.values()) * (1 + 1e-5)
        assert best <= times[(0, 1, 2, 3)] * (1 + 1e-5)
        got = simulate_allreduce(net, total, chunks, orders, scf, 16)
        assert float(got.time) == pytest.approx(best, rel=1e-5)


def test_explicit_orders_one_for_all_or_one_per_chunk():
    network = Network("e", (Dimension(2, GiB, 0.0, "ring"), Dimension(4, GiB, 0.0, "ring")))
    one = np.asarray(policy_orders("explicit", network, GiB, 3, orders=[1, 0], max_chunks=4))
    assert one.tolist() == [[1, 0, 2, 3]] * 4
    per = np.asarray(policy_orders("explicit", network, GiB, 2, orders=[[1, 0], [0, 1]], max_chunks=4))
    assert per[:2].tolist() == [[1, 0, 2, 3], [0, 1, 2, 3]]


@pytest.mark.parametrize(
    "orders, field",
    [
        ([0, 0], "orders[0]"),
        ([0, 1, 2], "orders[0]"),
        ([[0, 1], [1, 2], [1, 0]], "orders[1]"),
        ([[0, 1]] * 2, "orders"),
        ([], "orders"),
        ([0.0, 1.0], "orders[0]"),
        ("01", "orders"),
    ],
)
def test_explicit_orders_are_validated(orders, field):
    """Each order must be a permutation of 0..D−1; one order, or one per chunk (here 3)."""
    network = Network("e", (Dimension(2, GiB, 0.0, "ring"), Dimension(4, GiB, 0.0, "ring")))
    with pytest.raises(ConfigError) as error:
        policy_orders("explicit", network, GiB, 3, orders=orders)
    assert error.value.field == field


def test_unknown_and_learned_policies_raise_config_error():
    network = load_network(SWITCH_8X8X8)
    with pytest.raises(ConfigError, match="unknown policy 'fastest'"):
        policy_orders("fastest", network, GiB, 64)
    with pytest.raises(ConfigError, match="learned"):
        policy_orders("learned", network, GiB, 64)
    with pytest.raises(ConfigError, match="chunks"):
        policy_orders("baseline", network, GiB, 0)


def utilizations(net, total=float(GiB), chunks=64):
    """{(policy, scf): utilization} of one All-Reduce."""
    out = {}
    for policy, scf in itertools.product(("baseline", "themis"), (False, True)):
        result = simulate_allreduce(net, total, chunks, policy_orders(policy, net, total, chunks), scf)
        out[policy, scf] = float(utilization(net, total, result.time))
    return out


def test_acceptance_8x8x8_switch_network():
    """1 GiB in 64 chunks on 8×8×8 (50 GiB/s, 1 ns, halving-doubling). Baseline loads dimension 1
    with 2·S·(7/8)/B: utilization (511/512)/3 / (7/8) ≈ 38 %. Themis with SCF ≥ 95 % and beats
    Themis with FIFO."""
    u = utilizations(network_params(load_network(SWITCH_8X8X8)))
    assert u["baseline", False] == pytest.approx((511 / 512) / 3 / (7 / 8), abs=0.002)
    assert u["themis", True] >= 0.95
    assert u["themis", True] > u["themis", False]


def test_acceptance_2x8x2_astra_sample_themis_does_not_lose_to_baseline():
    """topologies/networks/3d-astra-2x8x2.toml: 500/175/12.5 GiB/s; its latencies and algorithms
    (ring 500 ns, ring 500 ns, switch 2 µs) are modelling choices. 1 GiB in 64 chunks."""
    u = utilizations(network_params(load_network(TOPOLOGIES / "networks" / "3d-astra-2x8x2.toml")))
    for scf in (False, True):
        assert u["themis", scf] >= u["baseline", scf] * (1 - 1e-6)


def exact_themis_orders(dims, total_bytes, n_chunks):
    """Themis's greedy in exact rational arithmetic (fractions), no tolerance anywhere."""
    from fractions import Fraction

    active = [d for d in range(len(dims)) if dims[d].size > 1]
    load = {d: Fraction(0) for d in active}
    chunk = Fraction(total_bytes) / n_chunks
    orders = []
    for _ in range(n_chunks):
        order = sorted(active, key=lambda d: (load[d], d))
        lo, hi = order[0], order[-1]
        p_lo = dims[lo].size
        gap_bytes = (load[hi] - load[lo]) * Fraction(dims[lo].bandwidth) / Fraction(p_lo - 1, p_lo)
        if gap_bytes < chunk / 16:
            order = list(active)
        s = chunk
        for d in order:
            load[d] += s * Fraction(dims[d].size - 1, dims[d].size) / Fraction(dims[d].bandwidth)
            s /= dims[d].size
        for d in reversed(order):
            load[d] += s * (dims[d].size - 1) / Fraction(dims[d].bandwidth)
            s *= dims[d].size
        orders.append(order)
    return orders


@pytest.mark.parametrize(
    "name, chunks", [("3d-switch-8x8x8", 64), ("3d-astra-2x8x2", 3), ("3d-astra-2x8x2", 17), ("3d-torus-4x4x4", 64)]
)
def test_themis_breaks_mathematically_exact_load_ties_like_exact_arithmetic(name, chunks):
    """Identical dimensions reach equal loads by float sums in different orders; the greedy
    must still act on the exact loads (float32 rounding must not pick the order)."""
    from hps.config.loaders import load_network
    from hps.config.paths import resolve_topology

    network = load_network(resolve_topology(name, "networks", "--network"))
    n_dims = len(network.dimensions)
    got = np.asarray(themis_orders(network_params(network), float(GiB), chunks, 256))[:chunks, :n_dims]
    assert got.tolist() == exact_themis_orders(list(network.dimensions), GiB, chunks)
