"""`hps collective` contract (flags and JSON keys), its Gantt chart and its errors."""

from __future__ import annotations

import json

import pytest

from hps.cli.main import main

COLLECTIVE_KEYS = {"time", "ideal_time", "utilization", "busy", "orders"}


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_collective_json_has_the_contract_keys_and_one_order_per_chunk(capsys):
    out = run_json(
        capsys,
        [
            "collective",
            "--network",
            "3d-switch-8x8x8",
            "--size",
            "1GiB",
            "--chunks",
            "64",
            "--policy",
            "baseline",
            "--intra",
            "fifo",
            "--json",
        ],
    )
    assert COLLECTIVE_KEYS <= out.keys()
    assert len(out["busy"]) == 3 and len(out["orders"]) == 64
    assert all(order == [0, 1, 2] for order in out["orders"])
    assert out["utilization"] == pytest.approx(out["ideal_time"] / out["time"])
    assert out["utilization"] == pytest.approx(0.38, abs=0.005)


def test_collective_plot_writes_a_png_with_the_baseline_beside_the_policy(tmp_path, capsys):
    path = tmp_path / "gantt.png"
    assert (
        main(["collective", "--network", "3d-astra-2x8x2", "--size", "64MiB", "--chunks", "16", "--plot", str(path)])
        == 0
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(path) in capsys.readouterr().out


def test_collective_iteration_reports_speedup_of_policy_over_baseline(capsys):
    out = run_json(
        capsys,
        ["collective", "--network", "3d-switch-8x8x8", "--iteration", "bert-base", "--batch-per-npu", "8", "--json"],
    )
    base, themis = out["policies"]["baseline"], out["policies"]["themis"]
    assert out["speedup"] == pytest.approx(base["iteration"] / themis["iteration"])
    assert base["iteration"] >= base["forward"] + base["backward"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["collective", "--size", "-3"], "--size"),
        (["collective", "--size", "12 parsecs"], "--size"),
        (["collective", "--network", "no-such-net"], "--network"),
        (["collective", "--policy", "learned"], "learned"),
        (["collective", "--chunks", "0"], "--chunks"),
    ],
)
def test_collective_bad_input_exits_2_with_a_clear_message(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
