"""Plain helpers shared by several test modules: the tiny training run, parameter equality and
CLI JSON calls. A plain module, not a test module: fixtures live in conftest.py."""

from __future__ import annotations

import ast
import json

import jax
import numpy as np

from hps.cli.main import main
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

# The tiny placement training run: 5 chunks of 2 updates over 64 environments.
TINY_SPLIT = InstanceSplit("ckpt-tiny", 4, 6, 2, 3, salt=31)
TINY = TrainConfig(
    split=TINY_SPLIT, num_envs=64, updates_per_chunk=2, num_chunks=5, seed=7, policy=PolicySpec(hidden=16)
)

# TINY as an experiment file (conftest.py's `experiment` fixture writes it).
EXPERIMENT = """
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

CONFIG = TrainConfig(split=InstanceSplit("ckpt-tiny", 4, 6, 2, 3, salt=31), num_envs=64, updates_per_chunk=2,
                     num_chunks=5, seed=7, policy=PolicySpec(hidden=16))
"""

# A small CTR-DNN job on the `small` catalogue, as CLI flags.
SMALL = ["--catalog", "small", "--workload", "ctr-dnn", "--batch", "1024", "--throughput", "1000", "--samples", "1e8"]


def assert_same_params(a, b):
    flat_a, flat_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(flat_a) == len(flat_b)
    for x, y in zip(flat_a, flat_b):
        np.testing.assert_array_equal(x, y)


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def run_cli_output(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `hps ARGV` in-process; argparse's own errors exit too."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def called_name(node: ast.Call) -> str:
    """`f`, `a.f` or `a.b.f` of a call (the attribute chain of its function, names only)."""
    parts, func = [], node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    parts.append(func.id if isinstance(func, ast.Name) else "?")
    return ".".join(reversed(parts))
