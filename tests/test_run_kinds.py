"""The experiment kinds that were scripts (placement policy evaluation, collective policy study,
executor calibration) run through `hps run` on tiny configs: their figures in results.json, the
table, a PNG and report.md, resumed per item; `hps run --help` lists every registered kind."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from hps.cli.main import main
from hps.cli.run import KIND_DESCRIPTIONS
from hps.errors import ConfigError
from hps.studies import placement_policy, run_experiment
from hps.studies.collective_policy import CollectivePolicyConfig
from hps.studies.executor_calibration import ExecutorCalibrationConfig
from hps.studies.loader import shipped_kinds
from hps.studies.placement_policy import PlacementPolicyConfig

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_help_table_names_every_registered_kind_and_its_module(capsys):
    # Other tests register kinds of their own (from test modules or experiment files run in this
    # process); the help table is about the kinds hps ships.
    shipped = {cls.__name__: cls.__module__ for cls in shipped_kinds() if cls.__module__.startswith("hps.")}
    assert shipped == {name: module for name, (module, _) in KIND_DESCRIPTIONS.items()}
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for name, (_, description) in KIND_DESCRIPTIONS.items():
        assert name in text and description in text


# ---------------------------------------------------------------- placement policy evaluation


def _fake_small(policy, params, *, count, samples):
    """compare_with_optimum's Comparison, every ratio 1.25 (worst: NaN, as with no feasible plan)."""
    from hps.placement.agent.evaluation import Comparison

    values = {}
    for f in dataclasses.fields(Comparison):
        values[f.name] = 1.25 if f.type in ("float", float) else count
    values["worst_sampled_ratio"] = float("nan")
    return Comparison(**values)


def _fake_large(policy, params, *, count, samples):
    names = ("policy", "policy_refined", "genetic", "genetic_equal", "single", "climb")
    out = {"instances": count, "samples": samples}
    out |= {"optimum_feasible": count, "exact_seconds": 0.01}
    for name in names:
        out[f"{name}_feasible"] = count
        out[f"{name}_vs_single"] = 1.0 if name == "single" else 0.9
        out[f"{name}_vs_optimum"] = 1.1
    return out


@pytest.fixture
def fake_placement_evaluation(monkeypatch):
    seen = []

    def load_policy(folder):
        seen.append(folder)
        return "policy", "params", {"step": 40, "train": {"algorithm": "ppo" if "ppo" in str(folder) else "reinforce"}}

    monkeypatch.setattr("hps.placement.agent.checkpoint.load_policy", load_policy)
    monkeypatch.setattr("hps.placement.agent.evaluation.compare_with_optimum", _fake_small)
    monkeypatch.setattr("hps.placement.agent.evaluation.compare_on_large", _fake_large)
    return seen


def test_placement_policy_evaluates_each_checkpoint_on_both_splits(tmp_path, fake_placement_evaluation):
    main_dir, ppo_dir = tmp_path / "placement-policy", tmp_path / "placement-ppo"
    main_dir.mkdir()
    ppo_dir.mkdir()
    config = PlacementPolicyConfig(name="pp", checkpoint=str(main_dir), also=(str(ppo_dir),), small=3, large=2)
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == [
        "placement-policy-small",
        "placement-policy-large",
        "placement-ppo-small",
        "placement-ppo-large",
    ]
    results = ran["results"]["results"]
    # the script's document: the checkpoint's figures at the top, the others under "also"
    assert results["checkpoint"] == str(main_dir) and results["algorithm"] == "reinforce"
    assert results["checkpoint_step"] == 40 and results["small"]["sampled_ratio"] == 1.25
    assert results["small"]["worst_sampled_ratio"] is None  # NaN: no JSON NaN
    assert results["large"]["genetic_vs_single"] == 0.9
    assert list(results["also"]) == [str(ppo_dir)] and results["also"][str(ppo_dir)]["algorithm"] == "ppo"
    assert ran["headers"][1] == "placement-policy small: cost/optimum" and len(ran["headers"]) == 9
    assert ran["rows"][0][:3] == ["policy: best of samples + greedy", "1.250", "3/3"]
    out = tmp_path / "out"
    assert (out / "policy_evaluation.png").read_bytes()[:8] == PNG
    assert f"`{ppo_dir}` (ppo, update 40)" in (out / "report.md").read_text()
    assert fake_placement_evaluation == [str(main_dir)] * 2 + [str(ppo_dir)] * 2
    resumed = run_experiment(config, out, progress=False)
    assert resumed["computed"] == [] and resumed["results"] == ran["results"]


def test_placement_policy_large_zero_and_training_items(tmp_path, fake_placement_evaluation):
    folder = tmp_path / "policy"
    folder.mkdir()
    ran = run_experiment(
        PlacementPolicyConfig(name="pp", checkpoint=str(folder), large=0), tmp_path / "o", progress=False
    )
    assert ran["computed"] == ["policy-small"] and ran["results"]["results"]["large"] == {}
    assert len(ran["headers"]) == 3
    trained = PlacementPolicyConfig(name="pp", checkpoint=str(tmp_path / "fresh"), train_minutes=1.0)
    assert [key for key, _ in placement_policy.items(trained)] == ["train-policy", "fresh-small", "fresh-large"]


def test_placement_policy_missing_checkpoint_fails_before_any_file(tmp_path, capsys):
    experiment = tmp_path / "pp.py"
    experiment.write_text(
        "from hps.studies.placement_policy import PlacementPolicyConfig\n"
        f"def config():\n    return PlacementPolicyConfig(name='pp', checkpoint={str(tmp_path / 'none')!r})\n"
    )
    assert main(["run", str(experiment), "--out", str(tmp_path / "results")]) == 2
    assert "no such checkpoint folder" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
    with pytest.raises(ValueError, match="also"):
        PlacementPolicyConfig(name="pp", checkpoint="a", also=("a",))


# ---------------------------------------------------------------- collective policy study


def tiny_collective(tmp_path, **changes) -> CollectivePolicyConfig:
    fields = dict(
        name="cp",
        chunks=1,
        envs=16,
        hidden=8,
        heldout=4,
        suite=((2.0**26, (4, 8)),),
        networks=("3d-torus-4x4x4",),
        policy_dir=str(tmp_path / "policy"),
    )
    return CollectivePolicyConfig(**(fields | changes))


def test_collective_policy_trains_saves_and_compares_with_themis(tmp_path):
    config = tiny_collective(tmp_path)
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == ["train", "heldout", "suite-64MiB-c4+8"]
    results = ran["results"]["results"]
    assert results["step"] == 10 and len(results["chunk_utilization"]) == 1
    assert results["compile_s"] > 0 and results["updates_per_s"] > 0
    assert results["spec"]["hidden"] == 8 and results["spec"]["training"]["num_envs"] == 16
    assert set(results["heldout"]) == {"mean", "wins", "losses"}
    for evaluation in (results["heldout"], *results["suite"]):
        assert set(evaluation["mean"]) == {"learned", "themis", "baseline", "best-fixed"}
        assert all(0 < u <= 1 + 1e-6 for u in evaluation["mean"].values())
        assert evaluation["mean"]["best-fixed"] >= evaluation["mean"]["baseline"] - 1e-9
    (suite,) = results["suite"]
    assert [row["name"] for row in suite["rows"]] == ["3d-torus-4x4x4/64MiB/4", "3d-torus-4x4x4/64MiB/8"]
    assert [row[0] for row in ran["rows"]][:4] == ["learned", "themis", "baseline", "best-fixed"]
    assert (tmp_path / "policy" / "checkpoints" / "10").is_dir()
    assert (tmp_path / "out" / "collective_policy.png").read_bytes()[:8] == PNG
    assert "### suite 64 MiB, 4+8 chunks" in (tmp_path / "out" / "report.md").read_text()

    # a lost evaluation item is recomputed from the saved policy, to the same figures
    (tmp_path / "out" / "items" / "heldout.json").unlink()
    resumed = run_experiment(config, tmp_path / "out", progress=False)
    assert resumed["computed"] == ["heldout"] and resumed["results"] == ran["results"]

    # another config cannot reuse (or overwrite) the saved policy
    with pytest.raises(ConfigError, match="another config"):
        run_experiment(tiny_collective(tmp_path, hidden=16), tmp_path / "other", progress=False)
    assert not (tmp_path / "other").exists()


def test_collective_policy_config_is_checked():
    with pytest.raises(ValueError, match="suite"):
        CollectivePolicyConfig(suite=((2.0**26, (1025,)),))
    with pytest.raises(ValueError, match="envs"):
        CollectivePolicyConfig(envs=0)


# ---------------------------------------------------------------- executor calibration


def test_executor_calibration_profiles_then_executes_on_both_tables(tmp_path):
    config = ExecutorCalibrationConfig(name="ec", batches=(256,), runs=1, repeats=1)
    ran = run_experiment(config, tmp_path / "ec", progress=False)
    results = ran["results"]["results"]
    rows = results["rows"]
    assert [(r["batch"], r["table"], r["run"]) for r in rows] == [(256, "roofline", 0), (256, "profiled", 0)]
    for row in rows:
        assert row["stages"] == ["cpu", "t4"]
        for measured, predicted, error in zip(row["measured_ms"], row["predicted_ms"], row["errors"]):
            assert measured > 0 and predicted > 0
            assert error == pytest.approx(measured / predicted - 1)
    profile = results["profiles"]["256"]
    assert set(profile) == {"cpu", "t4"} and all(len(v) == 6 and min(v) > 0 for v in profile.values())
    assert rows[0]["predicted_ms"] != rows[1]["predicted_ms"]  # the profiled table predicts otherwise
    assert all(math.isfinite(e) for errors in results["mean_abs_error"].values() for e in errors)
    assert ran["headers"][3:6] == ["cpu ms", "cpu predicted ms", "cpu error"]
    assert (tmp_path / "ec" / "calibration.png").read_bytes()[:8] == PNG
    assert json.loads((tmp_path / "ec" / "items" / "b256.json").read_text())["result"]["micro_batch"] == 128


def test_executor_calibration_needs_the_devices_it_names(tmp_path):
    config = ExecutorCalibrationConfig(name="ec", batches=(256,), devices="cpu=0-3,t4=4-63")
    with pytest.raises(ConfigError):
        run_experiment(config, tmp_path / "ec", progress=False)
    assert not (tmp_path / "ec").exists()
    with pytest.raises(ConfigError, match="schedule|type"):
        run_experiment(dataclasses.replace(config, devices="cpu=0-3,t4=4-7", schedule=("cpu",)), tmp_path / "ec")


# ---------------------------------------------------------------- profile check


@pytest.mark.slow  # 46 s on a loaded 2-core machine: profiling compiles each layer at two sizes
def test_profile_check_predicts_with_and_without_a_profile_and_executes(tmp_path):
    from hps.studies.profile_check import ProfileCheckConfig

    config = ProfileCheckConfig(
        name="pc", widths=(64,), layers=1, seq_len=8, batch=8, micro_batches=2, replicas=2, repeats=1, sizes=(1,)
    )
    ran = run_experiment(config, tmp_path / "pc", progress=False)
    (item,) = ran["results"]["results"]["items"].values()
    assert item["width"] == 64 and item["per_device_micro_batch"] == 2 and item["time_source"] == "measured"
    assert item["measured_ms"] > 0 and item["roofline_ms"] > 0 and item["profiled_ms"] > 0
    assert item["profiled_error"] == pytest.approx(item["measured_ms"] / item["profiled_ms"] - 1)
    assert item["roofline_ms"] < item["profiled_ms"]  # an h200's roofline is far faster than a host CPU
    with pytest.raises(ValueError, match="batch"):
        ProfileCheckConfig(batch=10, micro_batches=2, replicas=2)
    with pytest.raises(ValueError, match="sizes"):
        ProfileCheckConfig(sizes=(1, 2))
