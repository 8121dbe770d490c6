"""`hps execute --shrink` (docs/executor.md, "Shrinking a plan"): a plan needing more devices
than this machine has is refused with the count; with --shrink its stages run with tp and dp
capped by the devices, on a narrower model of its family, and still equal single-device
training; the report says what was shrunk."""

from __future__ import annotations

import json
from pathlib import Path

from hps.config.loaders import load_catalog
from hps.config.types import ParallelStage
from hps.executor.shrink import shrink_plan
from hps.workloads import build_workload
from tests.helpers import run_cli_output

PODS = Path(__file__).parent / "data" / "pods.toml"
WIDE_DIMENSION = """  [[resource.dimension]]
  size = 8
  bandwidth_GiBps = 10.0
  latency_ns = 5000.0
  algorithm = "ring"
"""


def wide_catalog(tmp_path) -> Path:
    """pods.toml with a gpu of up to 64 units (an outer network dimension of 8) and tp up to 8."""
    path = tmp_path / "wide.toml"
    path.write_text(PODS.read_text().replace("max_units = 8\n", "max_units = 64\ntp_max = 8\n") + WIDE_DIMENSION)
    return path


def plan_file(tmp_path, workload, stages, batch=256, micro_batch=16) -> Path:
    job = {"batch": batch, "micro_batch": micro_batch, "throughput": 1, "samples": 1e6, "precision": "fp32-sgd"}
    plan = {
        "format": "hps-plan/2",
        "workload": workload,
        "catalog": str(wide_catalog(tmp_path)),
        "job": job | {"zero": 0, "recompute": "none"},
        "stages": [dict(zip(("first", "last", "type", "tp", "dp"), stage)) for stage in stages],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_a_plan_wider_than_the_machine_is_refused_with_its_count_and_runs_shrunk_like_one_device(tmp_path, capsys):
    path = plan_file(tmp_path, "mlp", [(0, 1, "gpu", 4, 4), (2, 3, "gpu", 2, 8)])  # 16 + 16 devices of 8
    code, _, err = run_cli_output(["execute", str(path), "--steps", "2"], capsys)
    assert code == 2 and "tp 4 x dp 4 = 16 devices of gpu" in err and "has 8" in err and "--shrink" in err
    code, out, err = run_cli_output(["execute", str(path), "--steps", "2", "--check", "--shrink", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert [(s["tensor"], s["replicas"]) for s in report["stages"]] == [(4, 1), (2, 2)]  # 4 devices a stage
    assert report["equivalent"] is True and report["max_param_rel_diff"] <= 1e-5
    assert report["shrunk"] == [
        "model: mlp -> mlp (hidden (128, 64) -> (32, 32))",
        "stage 0: tp 4 -> 4, dp 4 -> 1",
        "stage 1: tp 2 -> 2, dp 8 -> 2",
        "batch: 256 -> 8 samples in micro-batches of 2",
    ]
    code, out, _ = run_cli_output(["execute", str(path), "--steps", "1", "--shrink"], capsys)
    assert code == 0 and "shrunk to run here (--shrink):\n  model: mlp -> mlp" in out


def test_stages_that_fit_one_by_one_but_not_together_are_refused_with_the_total(tmp_path, capsys):
    path = plan_file(tmp_path, "mlp", [(0, 1, "gpu", 2, 4), (2, 3, "gpu", 2, 4)])
    code, _, err = run_cli_output(["execute", str(path), "--steps", "1"], capsys)
    assert code == 2 and "its 2 stages on gpu run 16 devices in all" in err and "has 8 for them" in err


def test_a_decoder_llm_shrinks_to_the_transformer_at_its_depth_with_heads_for_every_tp():
    """llama3-8b (no Flax model): 32 blocks kept as the zoo transformer's 32 layers, its one head
    row run as head + loss, tp 8 capped at the 4 devices each of two stages gets on 8."""
    catalog = load_catalog(PODS)
    table = build_workload("llama3-8b")
    stages = (ParallelStage(0, 32, "gpu", 8, 4), ParallelStage(33, 65, "gpu", 8, 4))
    devices = list(range(8))
    network = catalog.resources[catalog.index("gpu")].network
    shrunk = shrink_plan("llama3-8b", table, stages, 512, 32, {"gpu": devices}, [network, network])
    assert shrunk.workload == "transformer" and shrunk.hyperparameters["layers"] == 32
    assert shrunk.hyperparameters["heads"] % 4 == 0 and shrunk.hyperparameters["hidden"] <= 64
    assert [(s.first, s.last, s.tp, s.dp) for s in shrunk.stages] == [(0, 32, 4, 1), (33, 66, 4, 1)]
    assert len(build_workload("transformer", **shrunk.hyperparameters).layers) == 67
    assert shrunk.changes[0].startswith("model: llama3-8b -> transformer (hidden 4096 -> 32, heads 32 -> 4")
    assert (shrunk.batch, shrunk.micro_batch) == (4, 1)
