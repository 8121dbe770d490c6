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
