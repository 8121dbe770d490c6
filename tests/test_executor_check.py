"""`hps execute --check` (docs/executor.md): the reference runs on the plan's own backend at
matmul precision "highest", the report names the largest absolute and relative differences and
the parameter, non-finite training never reads "equal", and the zoo's models pass at their own
learning rates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hps.cli.main import main
from hps.executor.reference import parameter_differences
from hps.models.registry import build_model

PODS = str(Path(__file__).parent / "data" / "pods.toml")


def test_differences_name_the_worst_parameter_with_absolute_and_relative_figures():
    want = [{"w": np.array([1.0, 2.0]), "b": np.array([0.5])}, {"k": np.array([[10.0]])}]
    got = [{"w": np.array([1.0, 2.2]), "b": np.array([0.5])}, {"k": np.array([[10.5]])}]
    out = parameter_differences(got, want, ("fc1", "fc2"))
    assert out["max_rel_diff"] == pytest.approx(0.1)  # 0.2 / 2 beats 0.5 / 10
    assert out["worst_parameter"] == "fc1/w"
    assert out["max_abs_diff"] == pytest.approx(0.5)  # fc2's, in absolute terms
    got[1]["k"] = np.array([[np.nan]])
    out = parameter_differences(got, want, ("fc1", "fc2"))
    assert math.isnan(out["max_rel_diff"]) and out["worst_parameter"] == "fc2/k"
    assert not out["max_rel_diff"] <= 1e-5


def test_the_transformers_key_bias_gets_no_gradient_so_noise_cannot_move_it():
    """softmax(q·(k + b)) = softmax(q·k + q·b): q·b is one value per query row, which the softmax
    cancels; the model keeps the bias out of differentiation, so its gradient is exactly 0."""
    model = build_model("transformer-small", seed=0)
    layer = model.layers[1]
    graphdef, state = nnx.split(layer)
    x = model.layers[0](model.sample_batch(jax.random.key(0), 4))

    def loss(state):
        return jnp.sum(nnx.merge(graphdef, state)(x)["h"] ** 2)

    grads = jax.jit(jax.grad(loss))(state)
    assert float(jnp.max(jnp.abs(grads["key"]["bias"][...]))) == 0.0
    assert float(jnp.max(jnp.abs(grads["query"]["bias"][...]))) > 0.0  # the rest do learn


def execute_json(capsys, workload, schedule, *extra):
    argv = ["execute", "--workload", workload, "--catalog", PODS, "--schedule", schedule, "--batch", "16"]
    assert main([*argv, "--devices", "cpu=0-3,gpu=4-7", "--check", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


SMALL_ZOO = [  # every small zoo model, one stage each side of a cut (layer counts from their tables)
    ("mlp", "cpu,cpu,gpu,gpu"),
    ("ctr-dnn-small", "cpu,cpu,gpu,gpu,gpu,gpu"),
    pytest.param("dlrm-small", "cpu,gpu,gpu,gpu,gpu,gpu,gpu,gpu,gpu", marks=pytest.mark.slow),
    pytest.param("matchnet-small", "cpu,cpu,gpu,gpu,gpu,gpu,gpu,gpu", marks=pytest.mark.slow),
    pytest.param("transformer-small", "cpu,cpu,cpu,gpu,gpu,gpu,gpu", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("workload, schedule", SMALL_ZOO)
def test_every_small_zoo_model_passes_the_check_at_its_own_learning_rate(capsys, workload, schedule):
    out = execute_json(capsys, workload, schedule)
    assert out["learning_rate"] == (0.002 if workload.startswith("transformer") else 0.05)
    assert out["matmul_precision"] == "highest"
    assert out["reference_device"] == str(jax.devices()[0])  # the first stage's first device (cpu=0-3)
    assert out["equivalent"] is True and out["max_param_rel_diff"] <= 1e-5, out["worst_parameter"]
    assert all(math.isfinite(loss) for loss in out["losses"])


def test_the_reference_runs_on_the_first_stages_device(capsys):
    out = execute_json(capsys, "mlp", "gpu,gpu,cpu,cpu", "--steps", "2")
    assert out["reference_device"] == str(jax.devices()[4])  # gpu=4-7 holds the first stage


def test_without_check_no_verdict_and_the_default_precision(capsys):
    argv = ["execute", "--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--batch", "16"]
    assert main([*argv, "--steps", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["equivalent"] is None and out["matmul_precision"] == "default"
