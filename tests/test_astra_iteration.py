"""ASTRA-sim 1.0 workloads end to end: collective kinds and groups on a subset of dimensions in
the simulator equal the plain-Python reference; the iteration's timeline (blocking forward and
input-gradient collectives, weight-gradient collectives overlapping back-propagation) equals the
same timeline run on the reference; the workloads' parallelism maps to the dimensions."""

import dataclasses
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


def test_a_model_parallel_group_takes_the_leading_npus_splitting_the_dimension_it_ends_in():
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies.astra_iteration import groups, split_for_group

    network = load_network(TOPOLOGIES / "networks" / "themis-2d-sw-sw-16x64.toml")
    split, m = split_for_group(network, 4)
    assert [d.size for d in split.dimensions] == [4, 4, 64] and m == 1
    assert split.dimensions[0].bandwidth == split.dimensions[1].bandwidth == network.dimensions[0].bandwidth
    assert split_for_group(network, 16) == (network, 1) and split_for_group(network, 1024)[1] == 2
    with pytest.raises(Exception, match="a group of 24 NPUs does not fit 16x64"):
        split_for_group(network, 24)
    workload = read("MLP_HybridParallel_Data_Model")
    _, model, data = groups(workload, network)
    assert model == (True, False) and data == (False, True)  # model-parallel within a package


def read(name):
    from hps.studies.astra_workload import read_astra_workload

    return read_astra_workload(f"tests/data/astra-sim-1.0/{name}.txt")


def reference_simulation(simulation, networks):
    """simulate(issued, release) for run_timeline on the plain-Python reference, with the same
    orders, kinds and groups as the jnp BatchedSimulation."""
    orders = np.asarray(simulation.orders)
    groups = np.asarray(simulation.group)
    kinds = {v: k for k, v in KIND_CODES.items()}
    kind = [kinds[int(k)] for k in np.asarray(simulation.kind)]
    chunk_bytes = np.asarray(simulation.chunk_bytes, np.float64)
    scf = np.asarray(simulation.scf)

    def simulate(issued, release):
        out = np.zeros((len(networks), simulation.count))
        rows = [c for c in range(len(kind)) if issued[c // simulation.chunks]]
        for i, network in enumerate(networks):
            n = len(network.dimensions)
            result = reference.simulate(
                list(network.dimensions),
                [float(chunk_bytes[c]) for c in rows],
                [float(np.float32(release[i, c // simulation.chunks])) for c in rows],
                [[int(d) for d in orders[i, c] if d < n] for c in rows],
                bool(scf[i]),
                [kind[c] for c in rows],
                [{d for d in range(n) if groups[i, c, d]} for c in rows],
            )
            for c, end in zip(rows, result["chunk_end"]):
                out[i, c // simulation.chunks] = max(out[i, c // simulation.chunks], end)
        return out

    return simulate


@pytest.mark.parametrize("name", ["DLRM_HybridParallel", "MLP_HybridParallel_Data_Model", "Transformer_HybridParallel"])
def test_the_iteration_timeline_on_the_simulator_equals_it_on_the_reference(name):
    """Both policies on two small networks (the Transformer's group of 4 splits the 8-NPU
    dimension of 2x8x2), blocking collectives included, to float32 rounding."""
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies.astra_iteration import BatchedSimulation, run_timeline, schedule

    workload = read(name)
    if name.startswith("Transformer"):  # its first 12 layers keep the reference quick
        workload = dataclasses.replace(workload, layers=workload.layers[:12])
    files = ("3d-astra-2x8x2", "themis-2d-sw-sw-16x64")
    pairs = [(load_network(TOPOLOGIES / "networks" / f"{f}.toml"), p) for f in files for p in ("baseline", "themis")]
    scheduled = [schedule(workload, n, 10.0, 0.26) for n, _ in pairs]
    steps, count = scheduled[0][1], len(scheduled[0][2])
    networks = [s[0] for s in scheduled]
    simulation = BatchedSimulation(networks, [p for _, p in pairs], [s[2] for s in scheduled], 2)
    got = run_timeline(steps, count, len(pairs), simulation)
    expected = run_timeline(steps, count, len(pairs), reference_simulation(simulation, networks))
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-4)
    assert (got[0] >= got[1]).all() and (got[0] >= got[2]).all()  # the iteration ends after both


def test_tiny_end_to_end_run_reports_each_speedup_as_the_iteration_model_gives_it(tmp_path):
    """The experiment's speed-up per network is baseline / Themis iteration time of
    iteration_times on the same workload, network and scales; the figure is drawn."""
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies import run_experiment
    from hps.studies.astra_iteration import iteration_times
    from hps.studies.themis_end_to_end import PAPER_SPEEDUP, ThemisEndToEndConfig

    config = ThemisEndToEndConfig(
        name="tiny", workloads=("DLRM_HybridParallel",), networks=("3d-astra-2x8x2",), comm_scales=(10.0,), chunks=2
    )
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == ["DLRM_HybridParallel-x10"]
    (result,) = ran["results"]["results"]["iterations"].values()
    network = load_network(TOPOLOGIES / "networks" / "3d-astra-2x8x2.toml")
    times = iteration_times(read("DLRM_HybridParallel"), [network], comm_scale=10.0, compute_scale=0.26, chunks=2)
    assert result["speedup"] == pytest.approx([times["iteration"][0, 0] / times["iteration"][0, 1]], rel=1e-9)
    assert result["compute_s"] == pytest.approx(51678 * 0.26e-9)  # the file's compute cycles at 1 ns, scaled
    assert ran["results"]["results"]["paper_speedup"] == PAPER_SPEEDUP
    assert (tmp_path / "out" / "speedup.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_collective_waits_nothing_when_the_network_is_idle():
    """microAllReduce: one weight-gradient All-Reduce after 15 cycles of compute; the iteration is
    that compute plus the All-Reduce alone (single_allreduce of the same size and chunks)."""
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies import collectives as studies
    from hps.studies.astra_iteration import iteration_times

    network = load_network(TOPOLOGIES / "networks" / "3d-astra-2x8x2.toml")
    times = iteration_times(read("microAllReduce"), [network], comm_scale=1.0, compute_scale=1.0, chunks=4)
    for j, (policy, scf) in enumerate((("baseline", False), ("themis", True))):
        alone, _ = studies.single_allreduce(network, 1048576.0, 4, policy, scf)
        assert times["iteration"][0, j] == pytest.approx(15e-9 + alone["time"], rel=1e-5)


def test_a_workload_with_a_parallelism_per_layer_is_refused_end_to_end(tmp_path):
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.errors import ConfigError
    from hps.studies.astra_iteration import schedule
    from hps.studies.astra_workload import read_astra_workload

    path = tmp_path / "custom.txt"
    path.write_text("HYBRID_CUSTOMIZED\n1\nfc -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 5 DATA\n")
    network = load_network(TOPOLOGIES / "networks" / "3d-astra-2x8x2.toml")
    with pytest.raises(ConfigError, match="custom.txt:1.*HYBRID_CUSTOMIZED workloads are not supported"):
        schedule(read_astra_workload(path), network, 1.0, 1.0)
