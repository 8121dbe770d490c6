"""`hps bench placement --json` carries its documented keys and measures both sides in one run."""

from hps.bench import placement


def test_bench_placement_reports_both_sides_and_their_ratio():
    result = placement.run(schedules_per_call=4096, min_seconds=0.05)
    assert {"jax_per_s", "reference_per_s", "speedup", "compile_s"} <= result.keys()
    assert result["speedup"] == result["jax_per_s"] / result["reference_per_s"]
    assert result["jax_per_s"] > result["reference_per_s"] > 0
    assert result["layers"] == 16 and result["types"] == 4
    assert 0 < result["exhaustive_4pow10_s"] < 30


def test_bench_exact_times_the_solver_and_proves_each_point():
    from hps.bench import exact

    result = exact.run(layer_grid=(6,), type_grid=(2, 3))
    points = result["by_layers"] + result["by_types"]
    assert [(p["layers"], p["types"]) for p in points] == [(6, 16), (256, 2), (256, 3)]
    assert all(p["solve_s"] > 0 and p["gap"] == 0.0 and p["stages"] >= 1 and p["refused"] is None for p in points)


def test_bench_exact_reports_a_size_past_memory_as_refused():
    from hps.bench import exact

    (point,) = exact.run(layer_grid=(20_000,), type_grid=())["by_layers"]
    assert point["solve_s"] is None and "20000 layers x 16 types" in point["refused"]


def test_the_exact_solver_names_a_table_too_large_for_memory():
    import pytest

    from hps.costmodel.schedule.provisioning import build_instance
    from hps.errors import InstanceTooLarge
    from hps.methods.exact_schedule import solve_exact

    workload, catalog, job = exact_instance(20_000, 8)
    with pytest.raises(InstanceTooLarge, match="20000 layers x 8 types"):
        solve_exact(build_instance(workload, catalog, job))


def exact_instance(layers, types):
    from hps.bench.exact import synthetic_instance

    return synthetic_instance(layers, types)


def test_bench_rl_measures_every_loop_on_a_small_setting_and_names_the_large_one():
    """Each figure is a positive env-step rate of the setting asked for; the large setting is the
    256-layer, 16-type one the docs report."""
    import math

    from hps.bench.rl import LARGE, Setting, measure

    assert (LARGE.layers, LARGE.types) == (256, 16)
    result = measure(setting=Setting(num_envs=128, layers=6, types=3, repeats=1), updates_per_chunk=1)
    assert (result["num_envs"], result["layers"], result["types"]) == (128, 6, 3)
    for key in ("env", "rollout", "rollout_distinct", "train"):
        rate = result[f"{key}_steps_per_s"]
        assert math.isfinite(rate) and rate > 0, key
    assert result["compile_s"] > 0


def test_bench_parallel_proves_small_points_and_agrees_with_the_solver(capsys):
    """`hps bench parallel --json`: each point's cost is what solve_parallel finds on the same
    instance with every layer of a block kept together; gap 0 at 16 layers."""
    import json

    from hps.bench.exact import parallel_point
    from tests.helpers import run_cli_output

    code, text, _ = run_cli_output(["bench", "parallel", "--parallel-layers", "16", "--limit", "20", "--json"], capsys)
    assert code == 0
    (point,) = json.loads(text)["points"]
    assert point["refused"] is None and point["gap"] == 0 and point["stages"] >= 1
    again = parallel_point(16, 16, block=8, seconds=20)
    assert again["cost"] == point["cost"] and again["stages"] == point["stages"]
    coarse = parallel_point(16, 16, block=16, seconds=20)  # fewer cuts: never cheaper
    assert coarse["cost"] >= point["cost"] * (1 - 1e-12)


def test_a_batch_is_one_call_on_an_accelerator_and_parts_of_at_most_128_on_cpu():
    from hps.collective.model.batching import CPU_PART, batch_parts

    assert batch_parts(16_384, accelerator=True) == [(0, 16_384)]
    parts = batch_parts(1_000, accelerator=False)
    assert parts[0][0] == 0 and parts[-1][1] >= 1_000 and len(parts) == 8
    assert all(lo == hi_before for (_, hi_before), (lo, _) in zip(parts, parts[1:]))  # contiguous, in order
    assert {hi - lo for lo, hi in parts} == {125}  # one length: one compile
    assert batch_parts(300, accelerator=False) == [(0, 100), (100, 200), (200, 300)]
    assert batch_parts(257, accelerator=False)[-1] == (172, 258) and CPU_PART == 128  # the last part is padded
    assert batch_parts(0, accelerator=False) == []


def test_batched_simulation_equals_one_vmapped_call_whichever_way_it_is_cut():
    """The parts joined in order give the completion times of the whole batch in one call."""
    import jax
    import numpy as np

    from hps.bench.collective import random_networks
    from hps.collective.model.batching import prepared_call
    from hps.collective.model.network import network_batch
    from hps.collective.model.orders import baseline_orders
    from hps.collective.model.simulator import simulate_allreduce

    batch = network_batch(random_networks(301, seed=3, dims=2), max_dims=2)  # 3 parts of 101, the last padded
    orders = jax.vmap(lambda n: baseline_orders(n, 8))(batch)
    simulate = jax.jit(jax.vmap(lambda n, o: simulate_allreduce(n, 2.0**26, 8, o, True, max_chunks=8).time))
    whole = np.asarray(simulate(batch, orders))
    on_cpu = prepared_call(simulate, (batch, orders), accelerator=False)()
    as_one = prepared_call(simulate, (batch, orders), accelerator=True)()
    assert on_cpu.shape == (301,) and np.array_equal(on_cpu, whole) and np.array_equal(as_one, whole)


def test_networks_without_their_size_one_dimensions_complete_at_the_same_times():
    """network.phase_dims drops the dimensions of size 1 and renumbers the orders: the
    simulation of the result equals the whole network's (SCF and FIFO), up to the float32
    rounding of the phase durations, which XLA computes at another width."""
    import jax
    import numpy as np

    from hps.bench.collective import network_orders
    from hps.collective.model.network import network_params, phase_dims
    from hps.collective.model.simulator import simulate_allreduce
    from hps.config.types import ALGORITHMS, Dimension, Network

    rng = np.random.default_rng(7)
    nets = []
    for i in range(24):
        sizes = [int(rng.choice([1, 1, 2, 3, 4, 8])) for _ in range(int(rng.integers(2, 5)))]
        sizes[int(rng.integers(len(sizes)))] = int(rng.integers(2, 9))  # at least one phase
        dims = tuple(
            Dimension(s, float(rng.uniform(1, 100)) * 2**30, float(rng.uniform(0, 5e-6)), str(rng.choice(ALGORITHMS)))
            for s in sizes
        )
        nets.append(Network(f"n{i}", dims))
    assert sum(1 for n in nets for d in n.dimensions if d.size == 1) > 10
    orders = network_orders(nets, 8, 2.0**26)
    for scf in (True, False):
        for net, rows in zip(nets, orders):
            compact, kept = phase_dims(net, rows)
            n_dims = len(compact.dimensions)
            assert n_dims == sum(d.size > 1 for d in net.dimensions) and kept.shape == (8, n_dims)
            whole = simulate_allreduce(network_params(net, len(net.dimensions)), 2.0**26, 8, rows, scf, max_chunks=8)
            part = simulate_allreduce(network_params(compact, n_dims), 2.0**26, 8, kept, scf, max_chunks=8)
            got, want = float(jax.device_get(part.time)), float(jax.device_get(whole.time))
            assert want > 0 and abs(got - want) <= 1e-6 * want


def test_several_batches_run_at_once_give_each_batch_its_results():
    """prepared_calls submits every part of every batch together and returns them per batch."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from hps.collective.model.batching import prepared_calls

    fn = jax.jit(jax.vmap(lambda x, y: x * 2.0 + y.sum()))
    batches = [(np.arange(n, dtype=np.float32), np.ones((n, k), np.float32)) for n, k in ((300, 2), (5, 3), (129, 1))]
    for accelerator in (False, True):
        got = prepared_calls(fn, batches, accelerator=accelerator, costs=[2.0, 3.0, 1.0])()
        for (x, y), result in zip(batches, got):
            np.testing.assert_array_equal(result, np.asarray(fn(jnp.asarray(x), jnp.asarray(y))))


def test_hps_bench_collective_times_both_sides_on_the_same_networks(capsys, monkeypatch):
    """--networks reaches the bench (here at 8 chunks instead of 64, to compile faster), which
    names the device and the load and checks both sides' completion times agree."""
    import functools
    import json

    from hps.bench import collective
    from tests.helpers import run_cli_output

    monkeypatch.setattr(collective, "run", functools.partial(collective.run, chunks=8))
    code, text, _ = run_cli_output(["bench", "collective", "--networks", "12", "--seconds", "0.05", "--json"], capsys)
    assert code == 0
    result = json.loads(text)
    assert result["networks"] == 12 and result["chunks"] == 8
    assert result["speedup"] == result["jax_per_s"] / result["reference_per_s"]
    assert result["jax_per_s"] > 0 and result["reference_per_s"] > 0 and result["compile_s"] > 0
    assert result["max_rel_diff"] < 1e-4  # both sides simulated the same collectives
    assert result["device"] and result["backend"] == "cpu" and result["one_call_per_group"] is False
    assert result["load_average"] >= 0


def test_a_grid_as_one_batch_per_column_equals_each_network_simulated_alone():
    """studies.utilization_grid (the suite's and the Themis paper's path) against single_allreduce."""
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies import collectives as studies

    networks = [load_network(path) for path in sorted(TOPOLOGIES.glob("networks/3d-*.toml"))[:3]]
    columns = ("baseline+fifo", "themis+scf")
    grid = studies.utilization_grid(networks, [2.0**26], 8, columns)
    for i, network in enumerate(networks):
        for column in columns:
            policy, discipline = column.split("+")
            alone, _ = studies.single_allreduce(network, 2.0**26, 8, policy, discipline == "scf")
            assert abs(grid[column][i, 0] - alone["utilization"]) <= 1e-5 * alone["utilization"], (network.name, column)


def test_the_device_bench_experiment_reports_each_batch_size_with_its_device(tmp_path):
    from hps.studies import run_experiment
    from hps.studies.collective_bench import CollectiveBenchConfig

    config = CollectiveBenchConfig(name="tiny", networks=(6,), chunks=4, seconds=0.05)
    ran = run_experiment(config, tmp_path / "out", progress=False)
    runs = ran["results"]["results"]["runs"]
    assert [r["networks"] for r in runs.values()] == [6] and "| 6 |" in (tmp_path / "out" / "report.md").read_text()
    for r in runs.values():
        assert r["max_rel_diff"] < 1e-4 and r["jax_per_s"] > 0 and r["device"] and r["chunks"] == 4


def test_bench_parallel_certify_times_both_revisions_cold_and_compares_their_costs(capsys):
    """`hps bench parallel-certify --json`: each seed solved once by HEAD (archived) and once by
    this checkout, each in its own process, with the same status and cost."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    from tests.helpers import run_cli_output

    repo = Path(__file__).resolve().parents[1]
    if (
        shutil.which("git") is None
        or subprocess.run(["git", "-C", str(repo), "rev-parse"], capture_output=True).returncode
    ):
        pytest.skip("not a git checkout")
    argv = ["bench", "parallel-certify", "--seeds", "24", "--ref", "HEAD", "--limit", "120", "--json"]
    code, text, _ = run_cli_output(argv, capsys)
    assert code == 0
    result = json.loads(text)
    (row,) = result["rows"]
    assert row["seed"] == 24 and row["same"] and result["equal_costs"]
    for side in ("ref", "this"):
        assert row[side]["status"] == "optimal" and row[side]["wall_s"] > 0 and row[side]["cpu_s"] > 0
    assert result["median_cpu_ratio"] == row["ref"]["cpu_s"] / row["this"]["cpu_s"]
