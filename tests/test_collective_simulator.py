"""The jitted event-driven simulator equals the plain-Python reference (docs/collective-model.md),
and hand-checked cases.

Random cases use continuous random bandwidths and latencies, so two *different* event paths never
end at mathematically equal times; where they do (networks whose dimensions are identical),
float32 and float64 round the tie differently and may legitimately pick different phases.
"""

from __future__ import annotations

import functools
import math
import random
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.collective.model import (
    ideal_time,
    network_batch,
    network_params,
    simulate,
    simulate_allreduce,
    simulator,
    utilization,
)
from hps.collective.model import orders as policies
from hps.collective.model.network import steps_per_phase_codes
from hps.config.types import ALGORITHM_CODE, ALGORITHMS, Dimension, Network, steps_per_phase
from hps.reference import collective as reference
from tests.instances import GiB, assert_matches_reference, padded, random_case, random_network, random_orders

N_CASES = 300
BUCKETS = (16, 128)  # padded chunk counts; a case goes to the smallest that holds it


def bucket(chunks: int) -> int:
    """The smallest padded chunk count in BUCKETS that holds `chunks`."""
    return min(b for b in BUCKETS if chunks <= b)


CASES = [random_case(random.Random(f"collective-{i}")) for i in range(N_CASES)]


def test_random_cases_cover_the_stated_ranges():
    """1–4 dimensions, sizes 1–16 (some 1), every algorithm, 1–128 chunks, 1 KiB–4 GiB."""
    dims = [d for n, _, _ in CASES for d in n.dimensions]
    assert {len(n.dimensions) for n, _, _ in CASES} == {1, 2, 3, 4}
    assert {d.algorithm for d in dims} == set(ALGORITHMS)
    assert min(d.size for d in dims) == 1 and max(d.size for d in dims) == 16
    chunks = [c for _, _, c in CASES]
    assert min(chunks) == 1 and max(chunks) > 100
    sizes = [s for _, s, _ in CASES]
    assert min(sizes) < 1e5 and max(sizes) > GiB


def test_step_counts_in_jnp_equal_the_python_rule():
    """steps_per_phase_codes (jnp, algorithm codes) == steps_per_phase (Python, names), all sizes."""
    sizes = np.concatenate([np.arange(1, 1025), 2 ** np.arange(11, 17), 2 ** np.arange(10, 16) + 1])
    for name in ALGORITHMS:
        codes = np.full(sizes.shape, ALGORITHM_CODE[name], np.int32)
        got = np.asarray(steps_per_phase_codes(jnp.asarray(codes), jnp.asarray(sizes, jnp.int32)))
        assert got.tolist() == [steps_per_phase(name, int(p)) for p in sizes], name


@functools.partial(jax.jit, static_argnames="max_chunks")
def simulate_batch(nets, sizes, counts, orders, scf, max_chunks):
    """vmap of simulate_allreduce over networks, sizes, chunk counts and orders."""
    one = lambda n, s, c, o: simulate_allreduce(n, s, c, o, scf, max_chunks)  # noqa: E731
    return jax.vmap(one)(nets, sizes, counts, orders)


@functools.partial(jax.jit, static_argnames=("policy", "max_chunks"))
def policy_orders_batch(policy, nets, sizes, counts, scf, max_chunks):
    """(N, max_chunks, D) orders of a jnp policy for a batch of networks, sizes, chunk counts."""

    def one(net, size, count):
        if policy == "baseline":
            return policies.baseline_orders(net, max_chunks)
        if policy == "themis":
            return policies.themis_orders(net, size, count, max_chunks)
        if policy == "roundrobin":
            return policies.roundrobin_orders(net, max_chunks)
        return policies.best_fixed_orders(net, size, count, scf, max_chunks)[0]

    return jax.vmap(one)(nets, sizes, counts)


@functools.cache
def jax_results(policy: str, scf: bool):
    """{case index: (orders (C, D) list, SimResult as numpy)} for every random case."""
    rng = random.Random(f"{policy}-{scf}")
    out = {}
    for max_chunks in BUCKETS:
        index = [i for i, (_, _, c) in enumerate(CASES) if bucket(c) == max_chunks]
        nets = network_batch([CASES[i][0] for i in index])
        sizes = jnp.asarray([CASES[i][1] for i in index], jnp.float32)
        counts = jnp.asarray([CASES[i][2] for i in index], jnp.int32)
        if policy == "explicit":
            orders = random_orders(rng, len(index), max_chunks)
        else:
            orders = policy_orders_batch(policy, nets, sizes, counts, scf, max_chunks)
        result = jax.device_get(simulate_batch(nets, sizes, counts, orders, scf, max_chunks))
        orders = np.asarray(orders)
        for k, i in enumerate(index):
            out[i] = (orders[k], jax.tree.map(itemgetter(k), result))
    return out


@functools.cache
def reference_run(case_index: int, orders: tuple, scf: bool):
    network, total, chunks = CASES[case_index]
    return reference.allreduce(padded(network), total, chunks, [list(o) for o in orders], scf)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
@pytest.mark.parametrize("policy", ["baseline", "themis", "roundrobin", "best-fixed", "explicit"])
def test_simulator_equals_reference_on_random_cases(policy, scf):
    """300 random networks × sizes × chunk counts per policy and discipline, one vmapped call each."""
    results = jax_results(policy, scf)
    assert len(results) == N_CASES
    for i, (_, _, chunks) in enumerate(CASES):
        orders, got = results[i]
        want = reference_run(i, tuple(map(tuple, orders[:chunks].tolist())), scf)
        assert_matches_reference(got, want, chunks)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
def test_six_dimension_networks_equal_the_reference(scf):
    """60 random networks of 5–6 dimensions, padded to 6 (their bucket): every jnp policy's
    orders (best-fixed over all 720 orders) simulate as the reference does."""
    cases = [random_case(random.Random(f"six-{i}"), 5, 6) for i in range(60)]
    nets = network_batch([n for n, _, _ in cases])
    assert nets.size.shape == (60, 6)
    sizes = jnp.asarray([s for _, s, _ in cases], jnp.float32)
    counts = jnp.asarray([min(c, 16) for _, _, c in cases], jnp.int32)
    for policy in ("baseline", "themis", "roundrobin", "best-fixed"):
        orders = policy_orders_batch(policy, nets, sizes, counts, scf, 16)
        result = jax.device_get(simulate_batch(nets, sizes, counts, orders, scf, 16))
        for k, (network, total, _) in enumerate(cases):
            chunks = int(counts[k])
            rows = np.asarray(orders[k])[:chunks].tolist()
            want = reference.allreduce(padded(network, 6), total, chunks, rows, scf)
            assert_matches_reference(jax.tree.map(itemgetter(k), result), want, chunks)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
def test_no_policy_beats_the_ideal_bound(scf):
    """T ≥ T_ideal = 2·S·(P−1)/P / Σ B_d on every random case: each NPU moves 2·s·(P−1)/P bytes
    per chunk over all its links together."""
    for i, (network, total, _) in enumerate(CASES):
        bound = float(ideal_time(network_params(network), total))
        assert bound == pytest.approx(reference.ideal_time(network.dimensions, total), rel=1e-6)
        for policy in ("baseline", "themis", "roundrobin", "best-fixed", "explicit"):
            _, got = jax_results(policy, scf)[i]
            assert float(got.time) >= bound * (1 - 1e-6)
            assert float(utilization(network_params(network), total, got.time)) <= 1 + 1e-6


def ring(size, bandwidth, latency):
    return Dimension(size, bandwidth, latency, "ring")


@pytest.mark.parametrize("scf", [False, True])
def test_one_dimension_ring_equals_textbook_allreduce_with_one_chunk(scf):
    """T = 2·(P−1)·(a + S/(P·B)): P−1 Reduce-Scatter steps then P−1 All-Gather steps."""
    p, bandwidth, latency, total = 8, 100 * GiB, 2e-6, 3e8
    net = network_params(Network("ring", (ring(p, bandwidth, latency),)))
    result = simulate_allreduce(net, total, 1, policies.baseline_orders(net), scf)
    assert float(result.time) == pytest.approx(2 * (p - 1) * (latency + total / (p * bandwidth)), rel=1e-6)


@pytest.mark.parametrize("chunks", [1, 4, 64])
@pytest.mark.parametrize("scf", [False, True])
def test_baseline_on_homogeneous_3d_network_equals_bottleneck_closed_form(chunks, scf):
    """Baseline order on three identical dimensions (P = 8, B, a, ring), chunk s = S/C.

    Dimension 1 carries each chunk's largest phases, RS_1 and AG_1, each r = (P−1)·a +
    s·(P−1)/P/B; dimensions 2 and 3 take r_2 = (P−1)·a + (s/P)·(P−1)/P/B and r_3 (s/P²), far
    less. FIFO (and SCF: RS_1's input equals AG_1's output, so the data tie and FIFO decides)
    serves every RS_1 first, back to back from 0 (all ready at 0); meanwhile dimensions 2, 3
    keep up, so chunk c's AG_1 is ready at (c+1)·r + 2·r_2 + 2·r_3 ≤ C·r + c·r when C ≥ 2.
    Hence T = 2·C·r for C ≥ 2: the bottleneck load, with the pipeline fill hidden; and
    T = 2·(r + r_2 + r_3) for C = 1.
    """
    p, bandwidth, latency, total = 8, 50 * GiB, 1e-6, float(GiB)
    net = network_params(Network("h", tuple(ring(p, bandwidth, latency) for _ in range(3))))
    s = total / chunks
    r = [(p - 1) * latency + s / p**k * (p - 1) / p / bandwidth for k in range(3)]
    want = 2 * sum(r) if chunks == 1 else 2 * chunks * r[0]
    result = simulate_allreduce(net, total, chunks, policies.baseline_orders(net), scf)
    assert float(result.time) == pytest.approx(want, rel=1e-5)
    assert float(result.busy[0]) == pytest.approx(2 * chunks * r[0], rel=1e-5)


def _one_decision_at_a_time(table, release, scf):
    """The previous simulator loop, kept as an oracle: C·2D steps, each recomputing every
    dimension's next start time over (C, D) and deciding one phase. -> phase_start (C, 2D) s."""
    n_chunks, n_slots = table.dim.shape
    n_dims = n_slots // 2
    flat = [a.reshape(-1) for a in (table.dim, table.duration, table.data, table.next_slot)]

    def phase_at(chunk, slot):
        index = chunk * n_slots + jnp.minimum(slot, n_slots - 1)
        return jnp.where(slot < n_slots, flat[0][index], -1), flat[1][index], flat[2][index]

    def decide(i, carry):
        (slot, ready, dim_of, duration, data, free), (log_phase, log_start) = carry
        waits = dim_of[:, None] == jnp.arange(n_dims)[None, :]
        t = jnp.maximum(free, jnp.min(jnp.where(waits, ready[:, None], jnp.inf), axis=0))
        dim = jnp.argmin(t)
        start = t[dim]
        valid = jnp.isfinite(start)
        candidate = (dim_of == dim) & (ready <= start)
        smallest = jnp.min(jnp.where(candidate, data, jnp.inf))
        candidate = jnp.where(scf, candidate & (data == smallest), candidate)
        chunk = jnp.argmin(jnp.where(candidate, ready, jnp.inf))
        end = start + duration[chunk]
        started = chunk * n_slots + slot[chunk]
        following = flat[3][started]
        next_dim, next_duration, next_data = phase_at(chunk, following)
        mine = (jnp.arange(n_chunks) == chunk) & valid
        state = (
            jnp.where(mine, following, slot),
            jnp.where(mine, end, ready),
            jnp.where(mine, next_dim, dim_of),
            jnp.where(mine, next_duration, duration),
            jnp.where(mine, next_data, data),
            jnp.where((jnp.arange(n_dims) == dim) & valid, end, free),
        )
        phase = jnp.where(valid, started, n_chunks * n_slots)
        return state, (log_phase.at[i].set(phase), log_start.at[i].set(start))

    first = phase_at(jnp.arange(n_chunks), table.first_slot)
    state = (table.first_slot, release, *first, jnp.zeros((n_dims,), jnp.float32))
    size = n_chunks * n_slots
    log = (jnp.full((size,), size, jnp.int32), jnp.zeros((size,), jnp.float32))
    _, (log_phase, log_start) = jax.lax.fori_loop(0, size, decide, (state, log))
    start = jnp.zeros((size,), jnp.float32).at[log_phase].set(log_start, mode="drop")
    return start.reshape(n_chunks, n_slots)


@pytest.mark.parametrize("scf", [False, True], ids=["fifo", "scf"])
def test_incremental_loop_equals_one_decision_at_a_time(scf):
    """The simulator's loop (earliest ready time per dimension kept incrementally, one
    dimension's row scanned per step) makes exactly the decisions of the previous loop, bit for
    bit, on 400 random cases: equal, two-sized or all-different chunks (ties in phase data),
    masked chunks, release times with ties, explicit random orders."""
    rng = random.Random(f"incremental-{scf}")
    n_cases, n_chunks = 400, 24

    def chunk_sizes():
        distinct = rng.choice([1, 2, n_chunks])
        sizes = [math.exp(rng.uniform(math.log(1e3), math.log(1e9))) for _ in range(distinct)]
        return [rng.choice(sizes) for _ in range(n_chunks)]

    def releases():
        return [rng.choice([0.0, 1e-6 * rng.randint(0, 20), rng.uniform(0, 1e-3)]) for _ in range(n_chunks)]

    nets = network_batch([random_network(rng) for _ in range(n_cases)])
    chunk_bytes = jnp.asarray([chunk_sizes() for _ in range(n_cases)], jnp.float32)
    release = jnp.asarray([releases() for _ in range(n_cases)], jnp.float32)
    mask = jnp.asarray([[c < rng.randint(1, n_chunks) for c in range(n_chunks)] for _ in range(n_cases)])
    orders = random_orders(rng, n_cases, n_chunks)

    @jax.jit
    @jax.vmap
    def both(net, chunk_bytes, release, orders, mask):
        table = simulator.phase_table(net, chunk_bytes, orders, mask)
        release = jnp.where(mask, release, 0.0)
        new = simulator.run_decisions(table, release, jnp.bool_(scf), net.in_flight)
        return new, _one_decision_at_a_time(table, release, scf)

    got, want = jax.device_get(both(nets, chunk_bytes, release, orders, mask))
    np.testing.assert_array_equal(got, want)
    assert (got > 0).sum() > 10 * n_cases  # the cases do schedule phases after time 0


def test_release_times_delay_chunks():
    """A chunk's first phase is ready at its release; shifting every release shifts the timeline."""
    net = network_params(Network("n", (ring(4, 10 * GiB, 1e-6), ring(2, 5 * GiB, 1e-6))))
    n = 8
    orders = policies.baseline_orders(net, n)
    bytes_ = jnp.full((n,), 1e6, jnp.float32)
    mask = jnp.ones((n,), bool)
    at_zero = simulate(net, bytes_, jnp.zeros((n,)), orders, mask, False)
    shifted = simulate(net, bytes_, jnp.full((n,), 0.5), orders, mask, False)
    active = np.asarray(at_zero.phase_dim) >= 0
    moved, original = np.asarray(shifted.phase_start)[active], np.asarray(at_zero.phase_start)[active]
    np.testing.assert_allclose(moved, original + 0.5, rtol=1e-6)
    late = jnp.zeros((n,)).at[3].set(1.0)
    delayed = simulate(net, bytes_, late, orders, mask, False)
    assert float(delayed.phase_start[3, 0]) == pytest.approx(1.0)
    assert float(delayed.chunk_end[3]) == pytest.approx(float(delayed.time))
    assert float(delayed.time) > float(at_zero.time)
    dims = padded(Network("n", (ring(4, 10 * GiB, 1e-6), ring(2, 5 * GiB, 1e-6))))
    want = reference.simulate(dims, [1e6] * n, np.asarray(late).tolist(), np.asarray(orders).tolist(), False)
    assert_matches_reference(jax.device_get(delayed), want, n)


def test_dimensions_of_size_one_take_no_part():
    """(4, 1, 8, 1) behaves exactly like (4, 8): no phase on, and no busy time for, size-1 dims."""
    a, b = ring(4, 80 * GiB, 1e-6), Dimension(8, 20 * GiB, 2e-6, "switch")
    one = Dimension(1, 1 * GiB, 5e-6, "ring")
    with_ones = network_params(Network("w", (a, one, b, one)))
    without = network_params(Network("wo", (a, b)))
    orders = jnp.asarray(np.array([[2, 1, 0, 3], [3, 0, 1, 2]] * 8, np.int32))
    got = simulate_allreduce(with_ones, 1e8, 16, orders, True, 16)
    same = jnp.asarray(np.array([[1, 0, 2, 3], [0, 1, 2, 3]] * 8, np.int32))  # the same active orders
    want = simulate_allreduce(without, 1e8, 16, same, True, 16)
    assert float(got.time) == pytest.approx(float(want.time), rel=1e-6)
    assert float(got.busy[1]) == 0.0 and float(got.busy[3]) == 0.0
    assert not np.isin(np.asarray(got.phase_dim), [1, 3]).any()


def test_simulator_compiles_once_across_networks_and_disciplines():
    """Networks of different sizes, dimension counts and algorithms share one compile (padded
    to D = 4), and so do FIFO and SCF (scf is traced)."""
    traces = []

    def counted(net, chunk_bytes, release, orders, mask, scf):
        traces.append(1)
        return simulate(net, chunk_bytes, release, orders, mask, scf)

    step = jax.jit(counted)
    rng = random.Random(5)
    n = 32
    for k in range(4):
        net = network_params(random_network(rng))
        orders = jnp.asarray(np.array([rng.sample(range(4), 4) for _ in range(n)], np.int32))
        step(net, jnp.full((n,), 1e6), jnp.zeros((n,)), orders, jnp.arange(n) < 5 + k, k % 2 == 0)
    assert len(traces) == 1
