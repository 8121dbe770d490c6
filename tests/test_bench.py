"""`hps bench placement --json` carries its documented keys and measures both sides in one run."""

from hps.bench import placement


def test_bench_placement_reports_both_sides_and_their_ratio():
    result = placement.run(schedules_per_call=4096, min_seconds=0.05)
    assert {"jax_per_s", "reference_per_s", "speedup", "compile_s"} <= result.keys()
    assert result["speedup"] == result["jax_per_s"] / result["reference_per_s"]
    assert result["jax_per_s"] > result["reference_per_s"] > 0
    assert result["layers"] == 16 and result["types"] == 4
    assert 0 < result["exhaustive_4pow10_s"] < 30


def test_bench_collective_times_both_sides_on_the_same_networks():
    from hps.bench import collective

    result = collective.run(networks=24, chunks=8, min_seconds=0.05)
    assert {"jax_per_s", "reference_per_s", "speedup", "compile_s"} <= result.keys()
    assert result["speedup"] == result["jax_per_s"] / result["reference_per_s"]
    assert result["networks"] == 24 and result["jax_per_s"] > 0 and result["reference_per_s"] > 0
    assert result["max_rel_diff"] < 1e-4  # both sides simulated the same collectives


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

    from hps.errors import InstanceTooLarge
    from hps.placement.exact import solve_exact
    from hps.placement.model.provisioning import build_instance

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
