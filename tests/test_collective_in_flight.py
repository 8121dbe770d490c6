"""Several phases in flight per dimension (``in_flight``, docs/collective-model.md): each of a
dimension's lanes serves one phase at a time with the bandwidth B/in_flight and the full step
latency. The jitted simulator equals the plain-Python reference on random cases, a hand-computed
case gives the closed form, and a network file carries the option (default 1, range checked)."""

from __future__ import annotations

import dataclasses
import random
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.collective.model import network_batch, network_params, simulate, simulate_allreduce
from hps.collective.model import orders as policies
from hps.collective.model.network import lane_bucket
from hps.config.limits import MAX_IN_FLIGHT
from hps.config.loaders import load_network
from hps.config.types import Dimension, Network
from hps.errors import ConfigError
from hps.reference import collective as reference
from tests.instances import GiB, assert_matches_reference, padded, random_case, random_orders

MAX_CHUNKS = 32


def with_lanes(rng: random.Random, network: Network) -> Network:
    """The network with 1 to MAX_IN_FLIGHT lanes drawn per dimension."""
    dims = tuple(dataclasses.replace(d, in_flight=rng.randint(1, MAX_IN_FLIGHT)) for d in network.dimensions)
    return dataclasses.replace(network, dimensions=dims)


def lane_cases(count: int, seed: str):
    """(network with lanes, total bytes, chunks ≤ MAX_CHUNKS) random cases."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        network, total, chunks = random_case(random.Random(f"{seed}-{i}"))
        cases.append((with_lanes(rng, network), total, min(chunks, MAX_CHUNKS)))
    return cases


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
@pytest.mark.parametrize("policy", ["baseline", "themis", "explicit"])
def test_lanes_equal_the_reference_on_random_cases(policy, scf):
    """120 random networks with 1–8 lanes per dimension, chunks of distinct random sizes released
    at distinct random times (so no two event paths end at mathematically equal times; equal
    chunks on parallel lanes would make such ties, which float32 and float64 may break apart):
    every phase's dimension, start and end, the completion time and the held time per dimension
    as the reference has them, to 1e-5."""
    cases = lane_cases(120, f"lanes-{policy}-{scf}")
    assert len({d.in_flight for n, _, _ in cases for d in n.dimensions}) == MAX_IN_FLIGHT
    rng = np.random.default_rng(list(f"lanes-{policy}-{scf}".encode()))  # the same draws every run
    nets = network_batch([n for n, _, _ in cases], max_dims=4)
    sizes = jnp.asarray([s for _, s, _ in cases], jnp.float32)
    counts = jnp.asarray([c for _, _, c in cases], jnp.int32)
    mask = jnp.arange(MAX_CHUNKS)[None, :] < counts[:, None]
    chunk_bytes = (sizes / counts)[:, None] * rng.uniform(0.5, 1.5, (len(cases), MAX_CHUNKS)).astype(np.float32)
    release = rng.uniform(0.0, 1e-4, (len(cases), MAX_CHUNKS)).astype(np.float32)
    if policy == "explicit":
        orders = random_orders(random.Random(policy), len(cases), MAX_CHUNKS)
    elif policy == "themis":
        orders = jax.vmap(lambda n, s, c: policies.themis_orders(n, s, c, MAX_CHUNKS))(nets, sizes, counts)
    else:
        orders = jax.vmap(lambda n: policies.baseline_orders(n, MAX_CHUNKS))(nets)
    run = jax.jit(jax.vmap(lambda n, b, r, o, m: simulate(n, b, r, o, m, scf)))
    result = jax.device_get(run(nets, chunk_bytes, release, orders, mask))
    chunk_bytes, release = np.asarray(chunk_bytes), np.asarray(release)
    for k, (network, _, chunks) in enumerate(cases):
        rows = np.asarray(orders[k])[:chunks].tolist()
        want = reference.simulate(
            padded(network), chunk_bytes[k, :chunks].tolist(), release[k, :chunks].tolist(), rows, scf
        )
        assert_matches_reference(jax.tree.map(itemgetter(k), result), want, chunks)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
def test_two_lanes_overlap_the_latency_of_two_chunks(scf):
    """One ring of P = 2, two chunks of s bytes. One lane: the four phases of x = a + s/(2B) run
    one after another, T = 4a + 2s/B. Two lanes of B/2: both chunks run side by side, each phase
    a + (s/2)/(B/2), T = 2a + 2s/B: the latency counted once per chunk pair, the bandwidth time
    the same. Either way the dimension is held throughout: busy = durations / lanes = T."""
    a, bandwidth, s = 3e-6, 50 * GiB, 4e6
    times = {}
    for lanes in (1, 2):
        net = network_params(Network("ring", (Dimension(2, bandwidth, a, "ring", in_flight=lanes),)))
        result = simulate_allreduce(net, 2 * s, 2, policies.baseline_orders(net), scf)
        times[lanes] = float(result.time)
        assert float(result.busy[0]) == pytest.approx(times[lanes], rel=1e-6)  # held throughout
    assert times[1] == pytest.approx(4 * a + 2 * s / bandwidth, rel=1e-6)
    assert times[2] == pytest.approx(2 * a + 2 * s / bandwidth, rel=1e-6)


def test_one_lane_is_the_default_and_changes_nothing():
    """A dimension without in_flight has one lane; the simulation equals the one of in_flight = 1
    written out, bit for bit."""
    network, total, chunks = random_case(random.Random("default-lane"), 3, 4)
    explicit = dataclasses.replace(
        network, dimensions=tuple(dataclasses.replace(d, in_flight=1) for d in network.dimensions)
    )
    assert network == explicit
    net = network_params(network)
    assert net.in_flight.tolist() == [1] * net.size.shape[0]
    result = simulate_allreduce(net, total, min(chunks, 64), policies.baseline_orders(net), True)
    want = reference.allreduce(padded(network), total, min(chunks, 64), [list(range(4))] * 64, True)
    assert float(result.time) == pytest.approx(want["time"], rel=1e-5)


NETWORK = """name = "lanes"
[[dimension]]
size = 8
bandwidth_GiBps = 100
latency_ns = 700
algorithm = "switch"
{extra}
"""


@pytest.mark.parametrize(("extra", "lanes"), [("", 1), ("in_flight = 4", 4), (f"in_flight = {MAX_IN_FLIGHT}", 8)])
def test_network_file_carries_in_flight(tmp_path, extra, lanes):
    path = tmp_path / "net.toml"
    path.write_text(NETWORK.format(extra=extra))
    assert load_network(path).dimensions[0].in_flight == lanes


@pytest.mark.parametrize("value", ["0", str(MAX_IN_FLIGHT + 1), "2.5", "1e308"])
def test_network_file_refuses_in_flight_out_of_range(tmp_path, value):
    path = tmp_path / "net.toml"
    path.write_text(NETWORK.format(extra=f"in_flight = {value}"))
    with pytest.raises(ConfigError) as caught:
        load_network(path)
    assert str(path) in str(caught.value) and "in_flight" in str(caught.value)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
def test_one_lane_compile_equals_the_full_one_on_one_lane_networks(scf):
    """Networks that serve one phase at a time get one lane kept per dimension (the cheaper
    compile), and simulating them so equals simulating them with MAX_IN_FLIGHT kept, bit for bit;
    networks with more lanes get MAX_IN_FLIGHT."""
    cases = [random_case(random.Random(f"one-lane-{i}")) for i in range(40)]
    nets = network_batch([n for n, _, _ in cases], max_dims=4)
    assert nets.lanes == 1 and lane_bucket(nets.in_flight) == 1
    assert lane_bucket([1, 2, 1]) == MAX_IN_FLIGHT
    assert network_batch([n for n, _, _ in lane_cases(8, "many-lanes")]).lanes == MAX_IN_FLIGHT
    sizes = jnp.asarray([s for _, s, _ in cases], jnp.float32)
    counts = jnp.asarray([min(c, MAX_CHUNKS) for _, _, c in cases], jnp.int32)
    orders = jax.vmap(lambda n, s, c: policies.themis_orders(n, s, c, MAX_CHUNKS))(nets, sizes, counts)

    def run(lanes):
        one = lambda n, s, c, o: simulate_allreduce(n, s, c, o, scf, MAX_CHUNKS)  # noqa: E731
        return jax.device_get(jax.jit(jax.vmap(one))(nets.replace(lanes=lanes), sizes, counts, orders))

    few, full = run(1), run(MAX_IN_FLIGHT)
    for name in ("time", "busy", "phase_start", "phase_end", "phase_dim", "chunk_end"):
        np.testing.assert_array_equal(getattr(few, name), getattr(full, name), err_msg=name)


def test_a_suite_of_one_lane_and_many_lane_networks_stacks_into_one_batch(tmp_path):
    """suite_instances stacks instances of every network into one batch: a one-lane network
    beside one with in_flight = 4 keeps MAX_IN_FLIGHT lanes for all (one lane count per batch)."""
    from hps.collective.agent.evaluation import suite_instances

    one, four = tmp_path / "one.toml", tmp_path / "four.toml"
    one.write_text(NETWORK.format(extra=""))
    four.write_text(NETWORK.format(extra="in_flight = 4"))
    names, batch = suite_instances([one, four], [2.0**20], [4])
    assert len(names) == 2 and batch.net.lanes == MAX_IN_FLIGHT
    assert batch.net.in_flight[:, 0].tolist() == [1, 4]
