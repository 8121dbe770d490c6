"""The placement policy against the exact optimum past its training size (hps.studies.at_scale)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.env import InstanceSplit
from hps.studies.at_scale import PLANNERS, compare_at_scale, summarize

WIDE = InstanceSplit("at-scale-test", 40, 48, 7, 9, salt=5)


def test_no_planner_beats_the_proven_optimum_and_best_of_includes_greedy():
    policy = PolicyFunctions(PolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(0))
    found = compare_at_scale(policy, params, WIDE, count=2, samples=8, seconds=30.0, budget=64)
    rows, summary = found["rows"], found["summary"]
    assert summary["instances"] == 2 and summary["proven_optimal"] >= 1
    assert set(PLANNERS) <= set(summary)  # 48 layers at 16 types: the segment table fits, every planner ran
    for row in rows:
        assert 40 <= row["layers"] <= 48 and 7 <= row["types"] <= 9
        assert row["policy"] <= row["policy_greedy"] * (1 + 1e-9)
        assert row["policy_refined"] <= row["policy"] * (1 + 1e-5)  # stage moves only improve
        assert row["climb"] <= row["single"] * (1 + 1e-5)  # the climb starts at the best single type
        if math.isfinite(row["exact"]) and row["exact_gap"] == 0.0:
            for name in PLANNERS:  # float32 jnp figures, float64 numpy ones
                assert row[name] >= row["exact"] * (1 - 1e-5), name
    for name in PLANNERS:
        if summary[name]["feasible"] > 0:
            assert summary[name]["mean"] >= 1 - 1e-5 and summary[name]["worst"] >= summary[name]["mean"]
            timed = name not in ("policy_greedy", "single")  # the greedy plan is one of the policy's, single is free
            assert summary[name]["seconds"] > 0 if timed else math.isnan(summary[name]["seconds"])


def test_past_the_segment_table_both_climbs_run_in_numpy(monkeypatch):
    monkeypatch.setattr("hps.studies.at_scale.dense_fits", lambda placement: False)
    policy = PolicyFunctions(PolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(0))
    found = compare_at_scale(policy, params, WIDE, count=1, samples=8, seconds=30.0)
    (row,) = found["rows"]
    assert not any(name in row for name in ("greedy", "random", "genetic", "gradient"))
    assert row["policy_refined"] <= row["policy"] * (1 + 1e-9) and row["climb"] <= row["single"] * (1 + 1e-9)
    assert math.isfinite(row["climb"]) and row["climb_seconds"] > 0 and row["policy_refined_seconds"] > 0
    if math.isfinite(row["exact"]) and row["exact_gap"] == 0.0:
        assert min(row["policy_refined"], row["climb"]) >= row["exact"] * (1 - 1e-9)


def test_summary_by_hand():
    rows = [
        dict(
            exact=10.0,
            exact_gap=0.0,
            exact_seconds=1.0,
            policy_seconds=0.1,
            policy=11.0,
            policy_greedy=12.0,
            single=20.0,
        ),
        dict(
            exact=5.0,
            exact_gap=0.0,
            exact_seconds=3.0,
            policy_seconds=0.3,
            policy=5.0,
            policy_greedy=math.inf,
            single=5.0,
        ),
        dict(
            exact=8.0, exact_gap=0.5, exact_seconds=60.0, policy_seconds=0.2, policy=9.0, policy_greedy=9.0, single=9.0
        ),
        dict(
            exact=math.inf,
            exact_gap=0.0,
            exact_seconds=2.0,
            policy_seconds=0.2,
            policy=math.inf,
            policy_greedy=math.inf,
            single=math.inf,
        ),
    ]
    s = summarize(rows)
    assert (s["instances"], s["with_feasible_plan"], s["proven_optimal"]) == (4, 3, 2)
    assert s["open_mean_gap"] == 0.5 and s["exact_seconds"] == pytest.approx(66.0 / 4)
    assert s["policy"]["mean"] == pytest.approx((1.1 + 1.0) / 2) and s["policy"]["worst"] == pytest.approx(1.1)
    assert s["policy"]["p95"] == pytest.approx(np.percentile([1.1, 1.0], 95))
    assert s["policy_greedy"]["mean"] == pytest.approx(1.2) and s["policy_greedy"]["feasible"] == pytest.approx(2 / 3)
    assert s["single"]["mean"] == pytest.approx(1.5) and s["single"]["feasible"] == 1.0
    assert s["policy"]["seconds"] == pytest.approx(0.2)  # the median
    assert "genetic" not in s and "climb" not in s  # planners that did not run are left out


def test_hps_run_of_the_at_scale_kind_tables_every_planner_per_split(tmp_path, monkeypatch):
    """The experiment kind on one small split with an untrained policy (load_policy stubbed to
    it): one table row per planner, figures equal to the item's own summary, the report written."""
    from hps.studies import run_experiment
    from hps.studies.placement_at_scale import PlacementAtScaleConfig

    policy = PolicyFunctions(PolicySpec(hidden=16))
    stub = (policy, policy.init(jax.random.PRNGKey(1)), {"step": 0})
    monkeypatch.setattr("hps.placement.agent.checkpoint.load_policy", lambda folder: stub)
    # samples and budget as the first test's on the same (64, 16) padding: its compiled planners serve this one too
    config = PlacementAtScaleConfig(
        name="s", checkpoint=str(tmp_path), splits=((40, 44, 7, 8),), count=2, samples=8, budget=64
    )
    ran = run_experiment(config, tmp_path / "out", progress=False)
    assert ran["computed"] == ["scale-40-44x7-8"]
    (item,) = ran["results"]["results"].values()
    planners = [row[1] for row in ran["rows"]]
    assert planners[:3] == ["policy: best of samples + greedy", "policy: greedy", "policy, refined by stage moves"]
    assert len(planners) == len(PLANNERS) and "genetic algorithm" in planners
    mean = item["summary"]["single"]["mean"]
    assert ran["rows"][3][2] == ("-" if mean is None else f"{mean:.3f}")
    assert "proven optimal within 60 s" in (tmp_path / "out" / "report.md").read_text()
    again = run_experiment(config, tmp_path / "out", progress=False)  # from results.json, NaN read back as null
    assert again["computed"] == [] and again["rows"] == ran["rows"]


def test_at_scale_training_split_is_named_and_reaches_the_trainer(tmp_path, monkeypatch):
    """train_split picks the split the policy trains on (an unknown one is refused, naming the
    field), and it and train_demonstrations reach the training config."""
    from hps.placement.env.generator import HARD_TRAIN
    from hps.studies import placement as placement_experiments
    from hps.studies.placement_at_scale import PlacementAtScaleConfig, run_item

    with pytest.raises(ValueError, match="train_split"):
        PlacementAtScaleConfig(name="s", train_split="hard")
    seen = {}
    monkeypatch.setattr(placement_experiments, "ensure_trained", lambda folder, cfg, minutes: seen.update(cfg=cfg))
    config = PlacementAtScaleConfig(
        name="s", checkpoint=str(tmp_path), train_minutes=1.0, train_split="hard-train", train_demonstrations=64
    )
    run_item(config, None)
    assert seen["cfg"].split == HARD_TRAIN and seen["cfg"].demonstrations == 64
