"""`hps profile` writes each layer's forward and backward seconds per micro-batch on one device as
`[[layer.measured]]` entries (tp 1, micro-batch / pool size samples) that the parallel-plan model
finds; a second micro-batch adds entries beside the first."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from hps.cli.main import main
from hps.config.loaders import load_catalog, load_workload
from hps.config.types import Job
from hps.costmodel.parallel.problem import ParallelProblem

PODS = str(Path(__file__).parent / "data" / "pods.toml")
POOLS = {"cpu": 2, "gpu": 4}  # devices per type under --devices cpu=0-1,gpu=2-5


def profile(capsys, workload: str, out: Path, micro_batch: int, devices: str = "cpu=0-1,gpu=2-5") -> dict:
    argv = ["profile", "--workload", workload, "--catalog", PODS, "--devices", devices, "--batch", "64"]
    argv += ["--micro-batch", str(micro_batch), "--repeats", "1", "--out", str(out), "--json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def mlp_profile(tmp_path_factory) -> tuple[Path, dict]:
    """(workload file, JSON report) of one `hps profile` of the mlp at micro-batch 16 on both pools."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("profile") / "mlp-measured.toml"
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-1,gpu=2-5", "--batch", "64"]
    argv += ["--micro-batch", "16", "--repeats", "1", "--out", str(out), "--json"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(argv) == 0
    return out, json.loads(printed.getvalue())


def test_every_layer_has_a_finite_forward_and_backward_per_type(mlp_profile):
    out, report = mlp_profile
    workload = load_workload(out)
    for name, devices in POOLS.items():
        m = 16 // devices
        assert report["measured"][name]["micro_batch"] == m and report["measured"][name]["tp"] == 1
        for i, layer in enumerate(workload.layers):
            (entry,) = [e for e in layer.measured if e.type == name]
            assert (entry.tp, entry.micro_batch) == (1, m)
            for seconds in (entry.forward_s, entry.backward_s):
                assert seconds > 0 and math.isfinite(seconds)
            assert entry.forward_s == pytest.approx(report["measured"][name]["forward_s"][i])
            assert entry.backward_s == pytest.approx(report["measured"][name]["backward_s"][i])
        # the older per-sample table is still written
        assert [layer.measured_time[name] for layer in workload.layers] == pytest.approx(
            report["seconds_per_sample"][name]
        )

    # the parallel-plan model finds the entries: time = forward·(1 + ρ) + backward
    catalog = load_catalog(PODS)
    job = Job(batch=64, throughput=1.0, samples=1e6)
    for recompute, extra in (("none", 0.0), ("full", 1.0)):
        problem = ParallelProblem(workload, catalog, dataclasses.replace(job, recompute=recompute))
        for name, devices in POOLS.items():
            t = catalog.names.index(name)
            times = problem.layer_times(t, 1, 16 // devices)
            for i, layer in enumerate(workload.layers):
                (entry,) = [e for e in layer.measured if e.type == name]
                assert times[i] == entry.forward_s * (1 + extra) + entry.backward_s
    # at a micro-batch nobody measured it keeps the roofline
    roofline = ParallelProblem(workload, catalog, job).layer_times(catalog.names.index("cpu"), 1, 3)
    assert all(t != e.forward_s + e.backward_s for t, layer in zip(roofline, workload.layers) for e in layer.measured)


def test_re_profiling_another_micro_batch_keeps_the_first_entry(tmp_path, capsys):
    first = tmp_path / "first.toml"
    profile(capsys, "mlp", first, 16, "cpu=0-1")
    before = load_workload(first)
    second = tmp_path / "second.toml"
    report = profile(capsys, str(first), second, 8, "cpu=0-1")
    after = load_workload(second)
    for i, (old, new) in enumerate(zip(before.layers, after.layers)):
        assert [(e.type, e.tp, e.micro_batch) for e in new.measured] == [("cpu", 1, 8), ("cpu", 1, 4)]
        assert new.measured[0] == old.measured[0]  # the micro-batch 16 / 2 entry, unchanged
        assert new.measured[1].forward_s == pytest.approx(report["measured"]["cpu"]["forward_s"][i])
    # profiling the same micro-batch again replaces its entry rather than adding one
    third = tmp_path / "third.toml"
    report = profile(capsys, str(second), third, 8, "cpu=0-1")
    again = load_workload(third)
    for i, (old, new) in enumerate(zip(after.layers, again.layers)):
        assert [(e.type, e.micro_batch) for e in new.measured] == [("cpu", 8), ("cpu", 4)]
        assert new.measured[0] == old.measured[0]
        assert new.measured[1].backward_s == pytest.approx(report["measured"]["cpu"]["backward_s"][i])


def test_a_micro_batch_that_does_not_split_over_the_pool_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-3", "--micro-batch", "6"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--micro-batch" in err and "6 samples do not split over the 4 devices of 'cpu'" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_the_text_table_shows_forward_and_backward_per_micro_batch():
    from hps.report.execution import format_profile

    measured = {"cpu": {"tp": 1, "micro_batch": 8, "forward_s": [0.0012, 0.003], "backward_s": [0.0025, 0.004]}}
    text = format_profile(["a", "b"], {"cpu": [1e-4, 2e-4]}, measured)
    assert "cpu fwd ms (m=8)" in text and "cpu bwd ms (m=8)" in text
    assert "1.200" in text and "2.500" in text and "100.000" in text


def test_several_micro_batches_are_measured_and_interpolated_between(tmp_path, capsys):
    """--sizes adds an entry per micro-batch size; between two measured sizes the model's time is the
    straight line through them, outside them the roofline, and a scored plan says which."""
    out = tmp_path / "sizes.toml"
    report = profile_sizes(capsys, out)
    workload = load_workload(out)
    assert [m["micro_batch"] for m in report["measured_by_micro_batch"]["cpu"]] == [2, 16, 8]  # --micro-batch last
    for layer in workload.layers:
        assert sorted(e.micro_batch for e in layer.measured) == [2, 8, 16]
    catalog = load_catalog(PODS)
    problem = ParallelProblem(workload, catalog, Job(batch=64, throughput=1.0, samples=1e6))
    cpu = catalog.names.index("cpu")
    at = {m: problem.layer_times(cpu, 1, m) for m in (2, 5, 8, 12, 16, 32)}
    assert at[5] == pytest.approx(at[2] + (at[8] - at[2]) * 3 / 6)
    assert at[12] == pytest.approx((at[8] + at[16]) / 2)
    sources = {m: problem.measured_times(cpu, 1, m)[1] for m in (2, 5, 32)}
    assert set(sources[2]) == {"measured"} and set(sources[5]) == {"interpolated"} and set(sources[32]) == {"kernel"}
    roofline = ParallelProblem(dataclasses.replace(workload, layers=tuple(
        dataclasses.replace(layer, measured=()) for layer in workload.layers)), catalog, problem.job)  # fmt: skip
    assert at[32] == pytest.approx(roofline.layer_times(cpu, 1, 32))

    from hps.config.types import ParallelStage
    from hps.costmodel.parallel.score import score_plan

    last = len(workload.layers) - 1
    for b, source in ((10, "interpolated"), (64, "kernel")):
        score = score_plan(problem, (ParallelStage(0, last, "cpu", 1, 2),), b)
        assert score.stages[0].time_source == source


def profile_sizes(capsys, out: Path) -> dict:
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-1", "--batch", "64"]
    argv += ["--micro-batch", "16", "--sizes", "4,32", "--repeats", "1", "--out", str(out), "--json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_sizes_that_are_not_positive_integers_are_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-1", "--sizes", "4,x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--sizes" in err and "'x'" in err and "Traceback" not in err


def test_the_call_cost_is_what_a_fused_pair_saves_capped_by_the_cheapest_layer():
    from hps.executor.profile import call_cost

    alone = [(1.0, 2.0), (3.0, 4.0), (0.5, 1.0)]
    # pair 0 saves 1 + 3 - 3.5 = 0.5 s forward (capped at 0.9 x 0.5) and 2 + 4 - 5 = 1 s backward (cap 0.9)
    assert call_cost(alone, {0: (3.5, 5.0)}) == pytest.approx((0.45, 0.9))
    # the median of the pairs' savings: forward 0.2 and 0.4 -> 0.3; backward 0.1 and 0.3 -> 0.2
    assert call_cost(alone, {0: (3.8, 5.9), 1: (3.1, 4.7)}) == pytest.approx((0.3, 0.2))
    # a pair slower than its two layers alone (noise) saves nothing; no pairs, no cost
    assert call_cost(alone, {0: (5.0, 7.0)}) == (0.0, 0.0)
    assert call_cost(alone[:1], {}) == (0.0, 0.0)


def test_the_rounds_after_the_warm_passes_are_the_ones_timed(monkeypatch):
    """A stage whose first WARM_PASSES forwards are slow (as the first calls after a compile are
    on host devices) is timed at its later speed; with fewer warm passes the slow calls would
    make the median. A fake clock advances by what each piece is scripted to cost."""
    from types import SimpleNamespace

    import jax
    import jax.numpy as jnp

    import hps.executor.profile as profile_module
    from hps.executor.measure import WARM_PASSES

    clock = SimpleNamespace(now=0.0, forwards=0)
    monkeypatch.setattr(profile_module, "time", SimpleNamespace(perf_counter=lambda: clock.now))

    def forward(params, x_float, x_other):
        clock.forwards += 1
        clock.now += 100.0 if clock.forwards <= WARM_PASSES else 1.0
        return x_float, {}, x_float

    def backward(residuals, seed):
        clock.now += 2.0
        return residuals, None

    def accumulate(total, grads):
        clock.now += 0.5
        return total

    stage = SimpleNamespace(params=None, batch_sharding=jax.sharding.SingleDeviceSharding(jax.devices()[0]))
    piece = SimpleNamespace(stage=stage, forward=forward, backward=backward, accumulate=accumulate)
    timed = profile_module.measured_layer_passes(piece, [jnp.ones((4, 2))], repeats=3, reads_input=False)
    assert timed == [(1.0, 2.0, 0.5)]
    assert clock.forwards == WARM_PASSES + 3


def test_profile_writes_the_stage_call_cost_and_the_prediction_counts_it_once_per_micro_batch(mlp_profile):
    from hps.config.types import ParallelStage
    from hps.executor.predict import executed_score, stage_predictions
    from hps.methods.problem import Problem

    out, report = mlp_profile
    workload = load_workload(out)
    assert set(workload.measured_call_s) == set(POOLS)
    for name in POOLS:
        call = workload.measured_call_s[name]
        assert call == pytest.approx(report["measured_call_s"][name]) and 0.0 <= call < 1.0
    catalog = load_catalog(PODS)
    job = Job(batch=64, throughput=1.0, samples=1e6)
    last = len(workload.layers) - 1
    without = dataclasses.replace(workload, measured_call_s={})

    def predicted(table, stages, micro):
        return stage_predictions(executed_score(Problem(table, catalog, job, model="parallel"), stages, micro))

    whole = (ParallelStage(0, last, "gpu", 1, 4),)
    for micro in (1, 4):
        (plain,) = predicted(without, whole, micro)
        (counted,) = predicted(workload, whole, micro)
        assert counted.compute - plain.compute == pytest.approx(micro * workload.measured_call_s["gpu"])
    # the layer times are the shares inside a stage: a one-layer stage is its time alone again,
    # at the profiled 64 / 4 micro-batches / 4 replicas = 4 samples a device, once per micro-batch
    split = (ParallelStage(0, 0, "gpu", 1, 4), ParallelStage(1, last, "gpu", 1, 4))
    one = predicted(workload, split, 4)[0]
    entry = next(e for e in workload.layers[0].measured if e.type == "gpu")
    assert entry.micro_batch == 4
    assert one.compute == pytest.approx(4 * (entry.forward_s + entry.backward_s + workload.measured_call_s["gpu"]))


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[measured_call_s]\ncpu = -1.0\n", "measured_call_s.cpu"),
        ('[measured_call_s]\ncpu = "fast"\n', "measured_call_s.cpu"),
        ("measured_call_s = 3\n", "measured_call_s"),
    ],
)
def test_a_bad_call_cost_is_refused_naming_the_file_and_the_field(tmp_path, text, needle):
    from hps.config.loaders import workload_to_toml
    from hps.errors import ConfigError
    from hps.workloads import resolve_workload

    body = workload_to_toml(resolve_workload("mlp"))
    path = tmp_path / "w.toml"
    path.write_text(text + body if text.startswith("measured_call_s =") else body + "\n" + text)
    with pytest.raises(ConfigError) as error:
        load_workload(path)
    assert str(path) in str(error.value) and needle in str(error.value)


def test_tensor_parallel_degrees_are_profiled_as_groups_and_found_by_the_parallel_model(tmp_path, capsys):
    out = tmp_path / "tp.toml"
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-3", "--batch", "64"]
    argv += ["--micro-batch", "16", "--tp", "2", "--repeats", "1", "--out", str(out), "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    # 4 devices: tp 1 runs 4 replicas of 4 samples, tp 2 two groups of 2 devices with 8 samples each
    runs = {(e["tp"], e["micro_batch"]): e for e in report["measured_by_micro_batch"]["cpu"]}
    assert sorted(runs) == [(1, 4), (2, 8)]
    workload = load_workload(out)
    catalog = load_catalog(PODS)
    problem = ParallelProblem(workload, catalog, Job(batch=64, throughput=1.0, samples=1e6))
    cpu = catalog.names.index("cpu")
    times = problem.layer_times(cpu, 2, 8)
    for i, layer in enumerate(workload.layers):
        (entry,) = [e for e in layer.measured if (e.tp, e.micro_batch) == (2, 8)]
        assert entry.forward_s == pytest.approx(runs[2, 8]["forward_s"][i])
        assert times[i] == entry.forward_s + entry.backward_s
    # the schedule model's per-sample times and the call cost come from whole devices (tp 1) only
    assert [layer.measured_time["cpu"] for layer in workload.layers] == pytest.approx(
        report["seconds_per_sample"]["cpu"]
    )
    assert report["measured"]["cpu"]["tp"] == 1


def test_a_degree_that_does_not_split_the_pool_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-3", "--batch", "64", "--tp", "3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--tp" in err and "do not split into groups of 3" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_the_parallel_model_adds_the_call_cost_once_per_stage_and_micro_batch():
    from hps.config.types import ParallelStage
    from hps.costmodel.parallel.score import score_plan
    from hps.workloads import resolve_workload

    workload = resolve_workload("mlp")
    catalog = load_catalog(PODS)
    job = Job(batch=64, throughput=1.0, samples=1e6)
    last = len(workload.layers) - 1
    plan = (ParallelStage(0, 1, "cpu", 1, 2), ParallelStage(2, last, "gpu", 1, 2))
    plain = score_plan(ParallelProblem(workload, catalog, job), plan, 16)
    costly = dataclasses.replace(workload, measured_call_s={"cpu": 0.002, "gpu": 0.0005})
    counted = score_plan(ParallelProblem(costly, catalog, job), plan, 16)
    for before, after, extra in zip(plain.stages, counted.stages, (0.002, 0.0005)):
        assert after.time_per_microbatch_s - before.time_per_microbatch_s == pytest.approx(extra)


def test_the_moves_are_written_and_a_stage_receives_its_input_and_its_output_gradient(mlp_profile):
    from hps.config.types import ParallelStage
    from hps.costmodel.parallel.score import score_plan
    from hps.executor.predict import executed_score, stage_predictions
    from hps.methods.problem import Problem

    out, _ = mlp_profile
    workload = load_workload(out)
    catalog = load_catalog(PODS)
    last = len(workload.layers) - 1
    moves = {}
    for i, layer in enumerate(workload.layers):
        for e in layer.measured:
            if i == 0:  # the first layer's input read belongs to its forward
                assert e.input_move_s is None and e.gradient_move_s is None
            else:
                assert 0 <= e.gradient_move_s and 0 < e.input_move_s < 1
                moves[e.type, i] = (e.input_move_s, e.gradient_move_s)
    # two stages at the profiled 16 samples a micro-batch: 64 / 16 = 4 micro-batches, m = 16 / pool size
    job = Job(batch=64, throughput=1.0, samples=1e6)
    ran = (ParallelStage(0, 1, "cpu", 1, 2), ParallelStage(2, last, "gpu", 1, 4))
    first, second = stage_predictions(executed_score(Problem(workload, catalog, job, model="parallel"), ran, 4))
    assert first.boundary == pytest.approx(4 * moves["cpu", 2][1])  # only its output's gradient comes in
    assert second.boundary == pytest.approx(4 * moves["gpu", 2][0])  # only its input comes in
    # the parallel-plan model charges the same per micro-batch (b = 16: m = 8 on cpu, 4 on gpu)
    plan = (ParallelStage(0, 1, "cpu", 1, 2), ParallelStage(2, last, "gpu", 1, 4))
    problem = ParallelProblem(workload, catalog, job)
    scored = score_plan(problem, plan, 16)
    unmoved = dataclasses.replace(
        workload,
        layers=tuple(
            dataclasses.replace(
                layer,
                measured=tuple(dataclasses.replace(e, input_move_s=None, gradient_move_s=None) for e in layer.measured),
            )
            for layer in workload.layers
        ),
    )
    formula = score_plan(ParallelProblem(unmoved, catalog, job), plan, 16)
    act = workload.layers[1].act_bytes
    nic = {name: catalog.resources[catalog.names.index(name)].nic_bw for name in ("cpu", "gpu")}
    catalogue = (8 * 2 * act / nic["cpu"], 4 * 2 * act / nic["gpu"])  # m·2·(a_in + a_out)/(t·nic_bw)
    received = (moves["cpu", 2][1], moves["gpu", 2][0])
    for stage, before, nic_s, moved in zip(scored.stages, formula.stages, catalogue, received):
        assert stage.time_per_microbatch_s == pytest.approx(before.time_per_microbatch_s - nic_s + moved)


def test_a_bad_move_is_refused_naming_the_file_and_the_field(tmp_path):
    from hps.config.loaders import workload_to_toml
    from hps.errors import ConfigError
    from hps.workloads import resolve_workload

    body = workload_to_toml(resolve_workload("mlp"))
    entry = '[[layer.measured]]\ntype = "cpu"\ntp = 1\nmicro_batch = 4\nforward_s = 0.1\nbackward_s = 0.1\n'
    for extra, needle in (("input_move_s = -1\n", "input_move_s"), ('gradient_move_s = "x"\n', "gradient_move_s")):
        path = tmp_path / "w.toml"
        path.write_text(body + entry + extra)
        with pytest.raises(ConfigError) as error:
            load_workload(path)
        assert str(path) in str(error.value) and needle in str(error.value) and "layer[" in str(error.value)
