"""Numbers past float32 and counts that overflow.

Every numeric input has one range (hps.config.ranges), checked where it enters: out of range is
exit status 2 naming the file (or flag), the field and the range, before anything is allocated.
At the ends of those ranges every figure of the placement models (jnp float32, numpy float64) and
of the collective simulator is finite and equals the float64 plain-Python references, and no
output shows inf or NaN: a non-finite figure is a typed error, an infeasible plan's cost null.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps import errors
from hps.cli.common import to_json
from hps.collective.model.network import steps_per_phase_codes
from hps.config.loaders import load_catalog, load_network, load_workload
from hps.config.types import ALGORITHM_CODE, ALGORITHMS, Job, stage_spans, steps_per_phase
from hps.costmodel.schedule import REASONS, build_params, evaluate_schedules
from hps.costmodel.schedule.plan import schedule_plan
from hps.costmodel.schedule.provisioning import build_instance
from hps.errors import ConfigError
from hps.reference import collective as reference_collective
from hps.reference import placement as reference
from hps.report.tables import format_table
from tests.helpers import evaluated, run_cli_output

REPO = Path(__file__).resolve().parents[2]
SMALL_CATALOG = (REPO / "topologies" / "catalogs" / "small.toml").read_text()
NETWORK = (REPO / "topologies" / "networks" / "3d-switch-8x8x8.toml").read_text()
NUMBERS = ("flops", "mem_bytes", "io_bytes", "act_bytes", "dense_param_bytes", "sparse_param_bytes")


def layer_toml(name: str, kind: str, *values: float) -> str:
    """One [[layer]] with the six per-sample numbers `values`."""
    return f"[[layer]]\nname = '{name}'\nkind = '{kind}'\n" + "".join(f"{k} = {v!r}\n" for k, v in zip(NUMBERS, values))


def dimension_toml(size: int, bandwidth: float, latency: float, algorithm: str, table="dimension") -> str:
    body = f"size = {size}\nbandwidth_GiBps = {bandwidth!r}\nlatency_ns = {latency!r}\nalgorithm = '{algorithm}'\n"
    return f"[[{table}]]\n{body}"


def resource_toml(name: str, peak, efficiency, bandwidth, memory, price, max_units, dims) -> str:
    """One [[resource]]: every bandwidth `bandwidth` GiB/s; dims (size, GiB/s, ns, algorithm) tuples."""
    head = f"[[resource]]\nname = '{name}'\nkind = 'gpu'\npeak_TFLOPs = {peak!r}\n"
    head += f"efficiency_dense = {efficiency!r}\nefficiency_sparse = {efficiency!r}\n"
    head += "".join(f"{key} = {bandwidth!r}\n" for key in ("mem_bw_GiBps", "io_bw_GiBps", "nic_bw_GiBps"))
    head += f"memory_GiB = {memory!r}\nprice_per_hour = {price!r}\nmax_units = {max_units}\n"
    return head + "".join(dimension_toml(*d, table="resource.dimension") for d in dims)


# 2^30 NPUs; 65,536 units fill the first dimension and 4 NPUs of the second
LARGEST_NETWORK = [(16384, 1e-9, 1e12, "ring"), (65536, 1e-9, 1e12, "halving_doubling")]
FASTEST_NETWORK = [(16384, 1e6, 0.0, "halving_doubling"), (65536, 1e6, 0.0, "switch")]
MAX = (1e21, 1e18, 1e18, 1e18, 1e18, 1e18)
CORNERS = {
    # every input at the end that makes figures largest: slowest units, dearest, most data, the
    # most units on the largest network (and one unit alone), the largest batch and sample count
    "largest": (
        resource_toml("one", 1e-6, 1e-4, 1e-9, 1e9, 1e9, 1, [(1, 1e-9, 1e12, "ring")])
        + resource_toml("wide", 1e-6, 1e-4, 1e-9, 1e9, 1e9, 65536, LARGEST_NETWORK),
        layer_toml("a", "dense", *MAX) + layer_toml("b", "sparse", *MAX) + layer_toml("c", "dense", *MAX),
        dict(batch=1e12, throughput=1e15, samples=1e16, chunks=1),
        [[0, 0, 0], [1, 1, 1], [0, 1, 0]],
    ),
    # every input at the end that makes figures smallest: one FLOP or byte, the fastest units,
    # the cheapest, one sample; the second stage only moves a one-byte boundary
    "smallest": (
        resource_toml("fast", 1e6, 1.0, 1e6, 1e-6, 1e-6, 65536, FASTEST_NETWORK),
        layer_toml("a", "dense", 1.0, 0.0, 0.0, 1.0, 1.0, 1.0) + layer_toml("b", "sparse", 0.0, 0, 0, 0, 0, 0),
        dict(batch=1.0, throughput=1e-6, samples=1.0, chunks=1),
        [[0, 0]],
    ),
    # the costliest feasible plan: the dearest units, 65,500 of them just meeting the lowest floor,
    # the most samples (cost = units · price · N / R / 3600)
    "costliest": (
        resource_toml("dear", 1e-6, 1.0, 1e-9, 1e9, 1e9, 65536, LARGEST_NETWORK),
        layer_toml("a", "dense", 6.55e16, 0.0, 0.0, 0.0, 0.0, 0.0),
        dict(batch=1e12, throughput=1e-6, samples=1e16, chunks=1),
        [[0]],
    ),
}


def corner_files(tmp_path: Path, corner: str) -> tuple[str, str, dict]:
    """(catalogue file, workload file, job values) of a corner of the ranges."""
    resources, layers, job, _ = CORNERS[corner]
    catalog, workload = tmp_path / "catalog.toml", tmp_path / "workload.toml"
    catalog.write_text(f"name = '{corner}'\n" + resources)
    workload.write_text(f"name = '{corner}'\n" + layers)
    return str(catalog), str(workload), job


def close(got: float, want: float, rel: float = 1e-5) -> bool:
    """Finite and within `rel` of the reference (inf only where the reference is inf)."""
    if math.isinf(want):
        return math.isinf(got)
    return math.isfinite(got) and abs(got - want) <= rel * abs(want)


# ---------------------------------------------------------------- out-of-range inputs


def job_flags(batch="1024", throughput="1000", samples="1e8") -> list[str]:
    return ["--batch", batch, "--throughput", throughput, "--samples", samples]


WORKLOAD = "name = 'w'\n[defaults]\nbatch = 8.0\nthroughput = 1.0\nsamples = 1.0\n" + layer_toml(
    "a", "dense", 1.0, 1.0, 0.0, 1.0, 1.0, 0.0
)
TYPE_LATENCY = "resource[0].dimension[0].latency_ns"
TWO_HUGE = "name = 'n'\n" + dimension_toml(65536, 1.0, 1.0, "ring") * 2
TOO_LARGE = {  # id: (file kind, text, replaced, replacement, field, range words)
    "flops": ("workload", WORKLOAD, "flops = 1.0", "1e308", "layer[0].flops", "between 1 and 1e+21 FLOP"),
    "batch": ("workload", WORKLOAD, "batch = 8.0", "1e308", "defaults.batch", "between 1 and 1e+12"),
    "price": ("catalog", SMALL_CATALOG, "price_per_hour = 2.0", "1e308", "resource[0].price_per_hour", "1e+09"),
    "type-latency": ("catalog", SMALL_CATALOG, "latency_ns = 10000.0", "1e308", TYPE_LATENCY, "1e+12 ns"),
    "latency": ("network", NETWORK, "latency_ns = 1.0 ", "1e308 ", "dimension[0].latency_ns", "between 0 and 1e+12 ns"),
    "tiny-bandwidth": ("network", NETWORK, "bandwidth_GiBps = 50.0", "1e-300", "dimension[0].bandwidth_GiBps", "1e-09"),
    "huge-bandwidth": ("network", NETWORK, "bandwidth_GiBps = 50.0", "1e308", "dimension[0].bandwidth_GiBps", "1e+06"),
    "1e9-npus": ("network", NETWORK, "size = 8", "1000000000", "dimension[0].size", "between 1 and 65536 NPUs"),
    "65537-npus": ("network", NETWORK, "size = 8", "65537", "dimension[0].size", "between 1 and 65536 NPUs"),
    "2^32-npus": ("network", TWO_HUGE, "", "", "dimension", "at most 1,073,741,824 NPUs in all"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(TOO_LARGE))
def test_an_out_of_range_file_value_exits_2_naming_file_field_and_range(case, tmp_path, capsys):
    kind, text, old, new, field, words = TOO_LARGE[case]
    path = tmp_path / f"{kind}.toml"
    path.write_text(text.replace(old, f"{old.split('=')[0]}= {new}", 1) if old else text)
    argv = {
        "workload": ["evaluate", "--catalog", "small", "--workload", str(path), "--schedule", "cpu", "--json"],
        "catalog": ["evaluate", "--catalog", str(path), "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"],
        "network": ["collective", "--network", str(path), "--chunks", "4", "--json"],
    }[kind]
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{path}: {field}: must " in err and words in err, err
    if case == "2^32-npus":
        assert "(the product of the sizes), got 65,536 x 65,536 = 4,294,967,296" in err


@pytest.mark.parametrize("count", [10**7, 10**9, 10**20])
def test_huge_max_units_and_dimension_sizes_are_refused_at_load(count, tmp_path, capsys):
    """Refused by the loaders themselves, before any model array exists, naming the field and limit."""
    path = tmp_path / "huge.toml"
    path.write_text("name = 'huge'\n" + resource_toml("x", 1.0, 0.5, 1.0, 1.0, 1.0, count, LARGEST_NETWORK))
    with pytest.raises(ConfigError, match=f"resource\\[0\\].max_units: must be between 1 and 65536 units, got {count}"):
        load_catalog(path)
    path.write_text("name = 'huge'\n" + resource_toml("x", 1.0, 0.5, 1.0, 1.0, 1.0, 1, [(count, 1.0, 1.0, "ring")]))
    with pytest.raises(ConfigError, match=f"dimension\\[0\\].size: must be between 1 and 65536 NPUs, got {count}"):
        load_catalog(path)
    code, _, err = run_cli_output(
        ["evaluate", "--catalog", str(path), "--workload", "mlp", "--schedule", "x,x,x,x"], capsys
    )
    assert code == 2 and "resource[0].dimension[0].size: must be between 1 and 65536 NPUs" in err
    path.write_text("name = 'huge'\n" + dimension_toml(count, 1.0, 1.0, "halving_doubling"))
    with pytest.raises(ConfigError, match=f"dimension\\[0\\].size: must be between 1 and 65536 NPUs, got {count}"):
        load_network(path)


MLP = ["evaluate", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"]
WIDE_TABLE = ["--workload", "ctr-dnn", *"--set rows=1e12 --set dim=1048576 --schedule".split(), ",".join(["cpu"] * 7)]
FLAGS = [  # (argv, flag, range words)
    ([*MLP, *job_flags(batch="1e308")], "--batch", "between 1 and 1e+12 samples"),
    ([*MLP, *job_flags(throughput="1e300")], "--throughput", "between 1e-06 and 1e+15 samples/s"),
    ([*MLP, *job_flags(samples="1e300")], "--samples", "between 1 and 1e+16 samples"),
    ([*MLP, "--micro-batches", "1e300"], "--micro-batches", "between 1 and 1e+12 micro-batches, or inf"),
    (["search", "--workload", "mlp", *job_flags(batch="1e308"), "--method", "single"], "--batch", "1e+12"),
    (["collective", "--size", "1e40"], "--size", "between 1 and 1e+18 bytes"),
    (["collective", "--iteration", "mlp", "--batch-per-npu", "1e30"], "--batch-per-npu", "between 1 and 1e+06"),
    (["evaluate", *WIDE_TABLE], "--set", "sparse_param_bytes: must be 0, or between 1 and 1e+18 bytes"),
]


@pytest.mark.parametrize("argv, flag, words", FLAGS, ids=[f"{a[0]} {f}" for a, f, _ in FLAGS])
def test_an_out_of_range_flag_exits_2_naming_the_flag_and_range(argv, flag, words, capsys):
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert flag in err and "must be" in err and words in err, err


def test_a_workload_that_takes_no_time_is_refused(tmp_path, capsys):
    """Every layer 0 FLOP, 0 memory and 0 io bytes: no stage takes time, throughput would be inf."""
    path = tmp_path / "idle.toml"
    path.write_text("name = 'idle'\n" + layer_toml("a", "dense", 0.0, 0.0, 0.0, 4.0, 4.0, 0.0))
    code, out, err = run_cli_output(["evaluate", "--workload", str(path), *job_flags(), "--schedule", "cpu"], capsys)
    assert code == 2 and out == "" and f"{path}: layer: every layer has 0 flops, mem_bytes, io_bytes" in err


# ---------------------------------------------------------------- no inf or NaN in any output


def test_the_json_writer_and_tables_refuse_inf_and_nan_naming_the_figure():
    with pytest.raises(errors.NonFiniteResult, match=r"stages\[1\]\.time is not a finite number \(inf\)"):
        to_json({"cost": None, "stages": [{"time": 1.0}, {"time": math.inf}]})
    with pytest.raises(errors.NonFiniteResult, match=r"table row 2: busy_s is not a finite number \(nan\)"):
        format_table(["dim", "busy_s"], [["dim 1", 1.0], ["dim 2", math.nan]])
    assert json.loads(to_json({"cost": None, "time": [2.5]}, "x")) == {"cost": None, "time": [2.5]}


def test_a_non_finite_figure_from_the_model_exits_2_and_writes_no_output(monkeypatch, tmp_path, capsys):
    """A figure the model should never give (inf from in-range inputs) is a typed error naming it:
    no traceback, nothing printed, no chart written."""
    from hps.studies import collectives as studies

    single = studies.single_allreduce

    def broken(*args, **kwargs):
        payload, result = single(*args, **kwargs)
        return {**payload, "time": math.inf}, result

    monkeypatch.setattr(studies, "single_allreduce", broken)
    for extra in (["--json"], [], ["--plot", str(tmp_path / "g.png")]):
        code, out, err = run_cli_output(["collective", "--chunks", "4", *extra], capsys)
        assert code == 2 and out == "" and "Traceback" not in err
        assert "hps collective: error: the All-Reduce's result: time is not a finite number (inf)" in err
    assert list(tmp_path.iterdir()) == []
    import hps.report.placement as placement_report

    score = placement_report.evaluate_plan
    monkeypatch.setattr(
        placement_report, "evaluate_plan", lambda *a: dataclasses.replace(score(*a), throughput=math.nan)
    )
    code, out, err = run_cli_output(["evaluate", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"], capsys)
    assert code == 2 and out == "" and "error: the plan's report: throughput is not a finite number (nan)" in err


def test_a_one_npu_network_reports_zero_time_and_busy_share(tmp_path, capsys):
    """Nothing moves: time and ideal 0 s, utilization 1 (nothing to wait for), busy share 0."""
    path = tmp_path / "one.toml"
    path.write_text("name = 'one'\n" + dimension_toml(1, 5.0, 1.0, "ring"))
    code, out, _ = run_cli_output(["collective", "--network", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out) == {
        "time": 0.0,
        "ideal_time": 0.0,
        "utilization": 1.0,
        "busy": [0.0],
        "orders": [[0]] * 64,
    }
    code, out, _ = run_cli_output(["collective", "--network", str(path)], capsys)
    assert code == 0 and "dim 1      1     5          0       0\n" in out and "utilization 100.0%" in out


# ---------------------------------------------------------------- the ends of the ranges


def assert_plan_equals_reference(got: dict, want: dict):
    """One plan's figures (numpy, CLI JSON or jnp, as a dict) against the reference's."""
    assert (got["feasible"], got.get("reason_code", got["reason"]) or "feasible") == (want["feasible"], want["reason"])
    for key in ("throughput", "dollars_per_hour"):
        assert close(got[key], want[key]), (key, got[key], want[key])
    assert close(math.inf if got["cost"] is None else got["cost"], want["cost"])
    for stage, reference_stage in zip(got["stages"], want["stages"], strict=True):
        assert stage["replicas"] == reference_stage["replicas"]
        assert close(stage["time"], reference_stage["time"]), (stage, reference_stage)


def jnp_plans(workload, catalog, job, schedules) -> list[dict]:
    """The float32 jnp model's score of each schedule, as evaluate_plan's keys."""
    result = jax.jit(evaluate_schedules)(build_params(workload, catalog, job), jnp.asarray(schedules, jnp.int32))
    plans = []
    for n, schedule in enumerate(schedules):
        ends = [last for _, last, _ in stage_spans(schedule)]
        plans.append(
            {
                "feasible": bool(result.feasible[n]),
                "reason": REASONS[int(result.reason[n])],
                "throughput": float(result.throughput[n]),
                "dollars_per_hour": float(result.dollars_per_hour[n]),
                "cost": float(result.cost[n]) if bool(result.feasible[n]) else None,
                "stages": [
                    {"replicas": int(result.replicas[n, e]), "time": float(result.stage_time[n, e])} for e in ends
                ],
            }
        )
    return plans


@pytest.mark.parametrize("corner", list(CORNERS))
def test_placement_models_at_the_ends_of_the_ranges_equal_the_reference(corner, tmp_path, capsys):
    """The loaders accept every end; the jnp (float32) and numpy (float64) models and `hps
    evaluate --json` give finite figures equal to the reference's to 1e-5 (an infeasible cost: null)."""
    catalog_path, workload_path, values = corner_files(tmp_path, corner)
    workload, catalog, job = load_workload(workload_path), load_catalog(catalog_path), Job(**values)
    schedules = CORNERS[corner][3]
    wanted = [reference.evaluate(workload, catalog, job, schedule) for schedule in schedules]
    inst = build_instance(workload, catalog, job)
    for schedule, want, got in zip(schedules, wanted, jnp_plans(workload, catalog, job, schedules)):
        assert_plan_equals_reference(got, want)
        assert_plan_equals_reference(evaluated(inst, schedule_plan(schedule)), want)
    flags = [f"--{key}={value!r}" for key, value in values.items()]
    names = ",".join(catalog.names[t] for t in schedules[-1])
    argv = ["evaluate", "--catalog", catalog_path, "--workload", workload_path, *flags, "--schedule", names, "--json"]
    code, out, err = run_cli_output(argv, capsys)
    assert code == 0, err
    assert_plan_equals_reference(json.loads(out), wanted[-1])
    code, out, err = run_cli_output(argv[:-1], capsys)
    assert code == 0 and not re.search(r"\b(inf|nan)\b", out, re.IGNORECASE), out
    assert ("cost        $" if wanted[-1]["feasible"] else "INFEASIBLE: memory") in out
    assert {"largest": False, "smallest": True, "costliest": True}[corner] == wanted[-1]["feasible"]


def test_the_general_model_at_the_ends_of_the_ranges_equals_the_reference(tmp_path):
    """The bubble at its largest (one micro-batch) and sharded state, largest-corner numbers."""
    catalog_path, workload_path, values = corner_files(tmp_path, "largest")
    workload, catalog = load_workload(workload_path), load_catalog(catalog_path)
    job = Job(**values, micro_batches=1.0, state_sharding="auto")
    plan = ((0, 0, 0), (1, 1, 1), (2, 2, 0))
    got = evaluated(build_instance(workload, catalog, job), plan)
    assert_plan_equals_reference(got, reference.evaluate_plan(workload, catalog, job, plan))


def test_step_counts_at_the_largest_dimension_equal_the_python_rule():
    """Exact up to MAX_DIMENSION_SIZE: halving-doubling ⌈log2 P⌉ is 16 at 65,536 NPUs, ring P − 1."""
    sizes = [1, 2, 3, 32767, 32768, 32769, 65535, 65536]
    for algorithm in ALGORITHMS:
        codes = jnp.full((len(sizes),), ALGORITHM_CODE[algorithm], jnp.int32)
        got = np.asarray(steps_per_phase_codes(codes, jnp.asarray(sizes, jnp.int32)))
        assert got.tolist() == [steps_per_phase(algorithm, size) for size in sizes]
    assert steps_per_phase("halving_doubling", 65536) == 16 and steps_per_phase("ring", 65536) == 65535


def test_the_collective_generator_draws_no_network_past_the_npu_limit():
    """4 dimensions of up to 65,536 NPUs would overflow int32 NPU counts; 2^30 is the most."""
    from hps.collective.env.generator import NetworkSplit

    assert NetworkSplit("limit", max_dims=2, max_size=32768).max_size ** 2 == 2**30
    with pytest.raises(ValueError, match="max_size \\*\\* max_dims must be at most 1,073,741,824 NPUs"):
        NetworkSplit("past", max_dims=4, max_size=65536)


@pytest.mark.parametrize("themis", [False, True], ids=["baseline", "themis"])
def test_allreduce_terms_with_the_most_units_and_chunks_equal_the_reference(themis, tmp_path):
    """allreduce(W, k) = W·alpha + beta of the jnp model (float32) and the numpy model's fluid loads
    (float64) at 65,536 units of a 2^30-NPU network in 256 chunks, W = 1 B and 1e18 B·4,096."""
    from hps.collective.model.loads import fluid_loads
    from hps.costmodel.schedule.allreduce import allreduce_coefficients as jnp_coefficients
    from hps.costmodel.schedule.provisioning import used_sizes

    catalog_path, _, _ = corner_files(tmp_path, "costliest")
    resource = load_catalog(catalog_path).resources[0]
    dims = resource.network.dimensions
    sizes, bandwidth = jnp.asarray([d.size for d in dims]), jnp.asarray([d.bandwidth for d in dims], jnp.float32)
    latency, codes = (
        jnp.asarray([d.latency for d in dims], jnp.float32),
        jnp.asarray([ALGORITHM_CODE[d.algorithm] for d in dims]),
    )
    units = np.array([2, 3, 16384, 16385, 65535, 65536])
    one = lambda k: jnp_coefficients(sizes, bandwidth, latency, codes, k, jnp.int32(256), jnp.asarray(themis))  # noqa: E731
    alpha, beta = jax.jit(jax.vmap(one))(jnp.asarray(units, jnp.int32))
    used = used_sizes(tuple(int(s) for s in sizes), units)
    loads = fluid_loads(used, np.broadcast_to([d.bandwidth for d in dims], used.shape), 1.0, 256, themis)
    policy = "themis" if themis else "baseline"
    for i, k in enumerate(units):
        for dense in (1.0, 4096e18):
            want = reference.allreduce(resource, dense, int(k), policy, 256)
            steps = sum(2 * steps_per_phase(d.algorithm, int(p)) * d.latency for d, p in zip(dims, used[i]))
            assert close(float(alpha[i]) * dense + float(beta[i]), want), (k, dense)
            assert close(dense * float(np.max(loads[i])) + steps, want), (k, dense)
    assert used[-1].tolist() == [16384, 4] and reference.used_sizes(dims, 65536) == [16384, 4]


COLLECTIVES = {  # name: (dimensions (size, GiB/s, ns, algorithm), bytes)
    "largest": ([(65536, 1e-9, 1e12, "ring"), (16384, 1e6, 0.0, "halving_doubling")], 1e18),
    # the least bytes `hps collective` takes for 256 chunks: one per chunk
    "smallest": ([(32, 1e6 / (1 + d / 7), 0.0, a) for d, a in enumerate(ALGORITHMS + ALGORITHMS[:2])], 256.0),
    "mixed": ([(65536, 1e6, 1e12, "halving_doubling"), (16384, 1e-9, 0.0, "ring")], 256.0),
}


@pytest.mark.parametrize("policy", ["baseline", "themis"])
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_collectives_at_the_ends_of_the_ranges_equal_the_reference(name, policy, tmp_path, capsys):
    """`hps collective --json` with 256 chunks on 2^30-NPU networks (the slowest and fastest
    dimensions, 1 B and 1e18 B): time, ideal time, utilization and busy time per dimension equal
    the float64 reference's to 1e-5, and the orders are the reference Themis greedy's."""
    dims, size = COLLECTIVES[name]
    path = tmp_path / "network.toml"
    path.write_text(f"name = '{name}'\n" + "".join(dimension_toml(*d) for d in dims))
    argv = ["collective", "--network", str(path), "--size", repr(size), "--chunks", "256", "--policy", policy]
    code, out, err = run_cli_output([*argv, "--intra", "fifo", "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    network = load_network(path)
    if policy == "themis":
        orders = reference_collective.themis_orders(network.dimensions, size, 256)
    else:
        orders = [list(range(len(dims)))] * 256
    assert got["orders"] == orders
    want = reference_collective.allreduce(network.dimensions, size, 256, orders, scf=False)
    ideal = reference_collective.ideal_time(network.dimensions, size)
    assert close(got["time"], want["time"]) and close(got["ideal_time"], ideal)
    assert close(got["utilization"], ideal / want["time"]) and 0 < got["utilization"] <= 1
    assert all(close(b, w) for b, w in zip(got["busy"], want["busy"], strict=True))
