"""`hps collective` contract (flags and JSON keys), its Gantt chart and its errors."""

from __future__ import annotations

import json

import numpy as np
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


def network_file(tmp_path, dims: int):
    """A network TOML of `dims` 2-NPU ring dimensions of decreasing bandwidth."""
    body = "".join(
        f'\n[[dimension]]\nsize = 2\nbandwidth_GiBps = {200.0 / (d + 1)}\nlatency_ns = 100.0\nalgorithm = "ring"\n'
        for d in range(dims)
    )
    path = tmp_path / f"net{dims}.toml"
    path.write_text(f'name = "net{dims}"\n{body}')
    return str(path)


def test_six_dimension_networks_run_and_seven_are_refused(tmp_path, capsys):
    from hps.collective.model.network import network_params
    from hps.config.loaders import load_network
    from hps.reference import collective as reference

    six = network_file(tmp_path, 6)
    for policy in ("baseline", "themis", "best-fixed"):
        out = run_json(
            capsys, ["collective", "--network", six, "--size", "64MiB", "--chunks", "8", "--policy", policy, "--json"]
        )
        assert len(out["busy"]) == 6 and all(sorted(order) == list(range(6)) for order in out["orders"])
        want = reference.allreduce(list(load_network(six).dimensions), 64 * 2**20, 8, out["orders"], True)
        assert out["time"] == pytest.approx(want["time"], rel=1e-5)
    assert network_params(load_network(six)).size.shape == (6,)
    assert main(["collective", "--network", network_file(tmp_path, 7), "--size", "1MiB"]) == 2
    assert "dimension" in capsys.readouterr().err


def test_the_learned_collective_policy_plans_a_five_dimension_network_file(tmp_path):
    import jax

    from hps.collective.agent.evaluation import learned_orders
    from hps.collective.agent.policy import CollectivePolicyFunctions, CollectivePolicySpec
    from hps.collective.env.generator import collective_instance
    from hps.config.loaders import load_network

    policy = CollectivePolicyFunctions(CollectivePolicySpec(hidden=16))
    instance = collective_instance(load_network(network_file(tmp_path, 5)), 2**20, 4)
    orders = np.asarray(learned_orders(policy, policy.init(jax.random.PRNGKey(0)), instance, 8))
    assert orders.shape == (8, 6) and all(sorted(row) == list(range(6)) for row in orders)
    assert (orders[:, 5] == 5).all()  # the sixth, padded dimension stays last
